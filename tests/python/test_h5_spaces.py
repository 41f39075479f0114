"""tune's spaces and the HDF5 library the application runs with (issue 27): a parameter the
library lacks or refuses (h5versions.tsv) is left out after the baseline, whatever the
strategy, and page buffering is tried only with paged files (a constraint). A study on a
parallel HDF5 1.10 never proposes a combination the runtime would have to withdraw."""

import itertools

import optuna
import pytest

from iotune import space
from iotune.search import get_strategy, inert, loop, warmstart
from iotune.trial import Outcome

NEW = {
    "params": {
        "file_space_strategy": {"values": ["fsm_aggr", "page"], "default": "fsm_aggr"},
        "page_buffer_size": {"values": ["0", "1M", "4M"], "default": "0"},
        "libver_low": {"values": ["earliest", "latest"], "default": "earliest"},
        "evict_on_close": {"values": ["false", "true"], "default": "false"},
        "mdc_image": {"values": ["false", "true"], "default": "false"},
        "mpio_chunk_opt": {"values": ["default", "one_io", "multi_io"], "default": "default"},
        "fill_time": {"values": ["ifset", "never"], "default": "ifset"},
    },
    "constraints": [{"forbid": {"page_buffer_size": ["1M", "4M"],
                                "file_space_strategy": ["unset", "fsm_aggr"]}}],
    "guesses": [{"name": "page buffer", "settings": {"page_buffer_size": "1M"}},
                {"name": "paged", "settings": {"file_space_strategy": "page",
                                               "page_buffer_size": "1M"}}],
}  # fmt: skip
PARALLEL_110 = {"hdf5_library": {"version": "1.10.8", "parallel": True}}
SERIAL_20 = {"hdf5_library": {"version": "2.0.0", "parallel": False}}
REFUSED_110 = {"page_buffer_size", "evict_on_close", "mdc_image"}


def traits(lib, drivers):
    return {**lib, "hdf5_drivers": drivers}


def test_what_the_library_refuses_is_left_out_and_why():
    sp = space.parse(NEW)
    out = inert.inert(sp, {}, traits(PARALLEL_110, {"mpio": 1}))
    assert set(out) == REFUSED_110, out
    assert "1.10.8 (parallel build)" in out["page_buffer_size"]
    assert "refuses it for every file" in out["evict_on_close"]
    assert "MPI-IO driver" in out["mdc_image"]
    # HDF5 2.0 serial, a sec2 file: all of them can matter (mpio_chunk_opt: serial files
    # cannot, left out by the serial-file rule of inert parameters, not by the library)
    out = inert.inert(sp, {}, traits(SERIAL_20, {"sec2": 1}))
    assert not set(out) & REFUSED_110, out
    assert inert.library_refuses("page_buffer_size", {"hdf5_library": {"version": "1.10.0"}})
    assert inert.library_refuses("page_buffer_size", {}) is None  # unknown library: kept


def test_page_buffering_only_with_paged_files():
    sp = space.parse(NEW)
    dims = {d.name: d.values for d in sp.dims}
    for strategy, pb in itertools.product(dims["file_space_strategy"], dims["page_buffer_size"]):
        config = {**sp.default_config(), "file_space_strategy": strategy, "page_buffer_size": pb}
        refused = pb in ("1048576", "4194304") and strategy != "page"
        assert (sp.forbidden(config) is not None) == refused, config


@pytest.mark.parametrize("strategy", ["tpe", "local", "genetic", "random"])
def test_a_study_on_parallel_110_never_proposes_a_refused_combination(strategy):
    """Every strategy (those that keep inert parameters too): after the baseline, no trial
    that runs sets page buffering, eviction or the cache image, nor page buffering without a
    paged file."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sp = space.parse(NEW)
    s = get_strategy(strategy)
    study = optuna.create_study(sampler=s.sampler(0, len(sp.guesses)))
    warmstart.enqueue(study, sp, s.warm_start)
    ran = []

    def evaluate(settings, cap):
        ran.append(dict(settings))
        t = 0.5 if settings.get("fill_time") == "never" else 1.0
        return Outcome("ok", t, "profile", t, metrics={"bytes_written": 1, "bytes_read": 1},
                       traits=traits(PARALLEL_110, {"mpio": 1}))  # fmt: skip

    loop.run(study, sp, evaluate, budget=25, leave_out_inert=s.leave_out_inert)
    assert ran[0] == {} and len(ran) > 5  # the baseline, then the search
    for settings in ran[1:]:
        assert not REFUSED_110 & set(settings), settings
    assert REFUSED_110 <= set(study.user_attrs[loop.INERT])


@pytest.mark.parametrize("name", space.preset_names())
def test_no_preset_space_proposes_what_parallel_110_refuses(name):
    """Whatever a preset searches, a study on parallel 1.10.8 with MPI-IO files leaves out
    every parameter the library refuses there (h5versions.tsv), and a preset that searches
    page buffering forbids it without paged files."""
    from iotune import h5versions

    sp = space.load(name)
    out = inert.inert(sp, {}, traits(PARALLEL_110, {"mpio": 1}))
    for d in sp.dims:
        refused = h5versions.support(d.name) and h5versions.support(d.name).lacks(
            (1, 10, 8), parallel_build=True, mpio=True
        )
        assert bool(refused) == (d.name in out and "1.10.8" in out[d.name]), d.name
    if "page_buffer_size" in sp.names():
        on = [v for v in sp.dim("page_buffer_size").values if v not in ("0", space.UNSET)]
        assert on and all(sp.forbidden({**sp.default_config(), "page_buffer_size": v,
                                         "file_space_strategy": "fsm_aggr"})
                          for v in on)  # fmt: skip
