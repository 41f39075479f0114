"""Settings the winner's own MPI-IO component never reads (mpifamily.unread_in): beside
io=romio321 Open MPI's OMPIO parameters, beside io=ompio ROMIO-only hints. study.finish leaves
them out as not in effect before the reduction, which then measures only what can matter
(PnetCDF's winners under Open MPI held 2-3 OMPIO parameters beside io=romio321, each removed
by a test of its own in every study)."""

import random

import optuna

from iotune import mpifamily, space, study, tune_config
from iotune.search import loop
from iotune.trial import Outcome

optuna.logging.set_verbosity(optuna.logging.WARNING)

SPACE = """
name = "ompio-or-romio"

[params.io]
values = ["ompio", "romio321"]
default = "ompio"

[params.fcoll]
values = ["dynamic", "vulcan"]
default = "dynamic"

[params.io_ompio_num_aggregators]
values = ["1", "2", "4"]
default = "4"

[params.cb_buffer_size]
values = ["1M", "16M"]
default = "16M"
"""
WINNER = {"io": "romio321", "fcoll": "vulcan", "io_ompio_num_aggregators": "2",
          "cb_buffer_size": "1048576"}  # fmt: skip


def test_what_the_component_chosen_never_reads():
    got = mpifamily.unread_in(WINNER)
    assert set(got) == {"fcoll", "io_ompio_num_aggregators"}
    assert "ROMIO" in got["fcoll"] and "io=romio321" in got["fcoll"]
    under_ompio = mpifamily.unread_in({"io": "ompio", "romio_cb_write": "disable",
                                       "cb_buffer_size": "1048576", "fcoll": "vulcan"})  # fmt: skip
    assert set(under_ompio) == {"romio_cb_write"}  # cb_buffer_size: OMPIO reads it too
    assert mpifamily.unread_in({"fcoll": "vulcan", "cb_buffer_size": "1048576"}) == {}
    # CephFS's layout is set by the runtime itself, whichever component runs
    assert mpifamily.unread_in({"io": "ompio", "striping_object_size": "8388608",
                                "striping_unit": "1048576"}) == {}  # fmt: skip


def _time(settings):
    """ROMIO 2x faster; its 1 MiB collective buffer 1.5x more; OMPIO's parameters nothing."""
    t = 1.0
    if settings.get("io") == "romio321":
        t /= 2.0
        if settings.get("cb_buffer_size") == "1048576":
            t /= 1.5
    return t


def _finish(tmp_path, monkeypatch, unread, strategy="tpe"):
    if not unread:
        monkeypatch.setattr(mpifamily, "unread_in", lambda settings: {})
    (tmp_path / "space.toml").write_text(SPACE)
    cfg = tune_config.TuneConfig(app=["x"], out=tmp_path / f"{strategy}-{unread}",
                                 space=space.load(tmp_path / "space.toml"), seed=3,
                                 strategy=strategy, leaders=1, repeat=0, verify_pairs=10,
                                 remember=False)  # fmt: skip
    s = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    s.enqueue_trial(cfg.space.trial_params_for(WINNER))
    rng = random.Random(2)
    ran: list[dict] = []

    def evaluate(settings, cap):
        ran.append(dict(settings))
        t = _time(settings) * rng.lognormvariate(0, 0.03)
        return Outcome("ok", t, "kernel", t)

    loop.run(s, cfg.space, evaluate, budget=1)
    return study.finish(cfg, s, evaluate, log=lambda m: None), ran


def test_the_reduction_measures_only_what_the_component_reads(tmp_path, monkeypatch):
    summary, ran = _finish(tmp_path, monkeypatch, unread=True)
    assert summary["recommended"] == {"io": "romio321", "cb_buffer_size": "1048576"}
    assert set(summary["not_in_effect"]) == {"fcoll", "io_ompio_num_aggregators"}
    assert not set(summary["minimal"]["removed"]) & {"fcoll", "io_ompio_num_aggregators"}
    # best.xml holds neither, and its headline is measured on exactly what it holds
    assert summary["headline"]["settings"] == summary["recommended"]
    assert "fcoll" not in (tmp_path / "tpe-True" / "best.xml").read_text()
    # ... on the full winner's own pairs: what best.xml leaves out was never read there
    assert summary["headline"]["runs_held"] == WINNER
    assert summary["headline"]["pairs"] == summary["final"]["pairs"]
    before, _ = _finish(tmp_path, monkeypatch, unread=False)
    assert before["recommended"] == summary["recommended"]  # the same verdict ...
    assert summary["runs"]["reduction"] < before["runs"]["reduction"]  # ... in fewer runs
    assert summary["runs"]["verification"] == before["runs"]["verification"]
    assert summary["runs"]["total"] < before["runs"]["total"]


def test_a_raced_study_verifies_best_xml_no_more_than_before(tmp_path, monkeypatch):
    """No reduction (local races its leaders): best.xml without the unread settings reuses
    the winner's verification instead of a second one."""
    summary, _ = _finish(tmp_path, monkeypatch, unread=True, strategy="local")
    assert summary["recommended"] == {"io": "romio321", "cb_buffer_size": "1048576"}
    before, _ = _finish(tmp_path, monkeypatch, unread=False, strategy="local")
    assert before["recommended"] == WINNER  # no reduction: the whole winner, unread and all
    assert summary["runs"]["total"] == before["runs"]["total"]
