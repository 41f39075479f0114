"""Search spaces: presets, TOML parsing, ladders, ties, constraints, Optuna distributions."""

import os

import pytest

from iotune import params, space

HERE = __import__("pathlib").Path(__file__).resolve().parent


def test_presets_load_and_use_registry_values():
    assert {"local", "sc13-lustre", "gpfs"} <= set(space.preset_names())
    for name in space.preset_names():
        sp = space.load(name)
        assert sp.dims, name
        for d in sp.dims:
            for v in d.values:
                if v != space.UNSET:
                    assert params.normalise(d.name, v) == v
            assert d.default in d.values


def test_sc13_preset_matches_table_3():
    sp = space.load("sc13-lustre")
    count = {d.name: len([v for v in d.values if v != space.UNSET]) for d in sp.dims}
    # Table 3: strp_fac 10 values, strp_unt/cb_buf_siz 8, cb_nds 12, align 14, chunk_size 25
    assert count == {
        "striping_factor": 10,
        "striping_unit": 8,
        "cb_nodes": 12,
        "alignment": 14,
        "chunk_size": 25,
    }
    su = sp.dim("striping_unit")
    assert [int(v) for v in su.values if v != space.UNSET] == [2**k << 20 for k in range(8)]
    assert [int(v) for v in sp.dim("striping_factor").values[1:]][::9] == [4, 156]
    assert sp.dim("alignment").values[-1] == "16384,33554432"
    # the collective buffer follows the stripe size
    config = sp.config_from_trial_params({"striping_unit": "8388608"})
    assert config["cb_buffer_size"] == "8388608"


def test_local_preset_covers_the_node_local_knobs():
    names = set(space.load("local").names())
    for n in (
        "romio_cb_write",
        "romio_ds_write",
        "cb_buffer_size",
        "ind_wr_buffer_size",
        "transfer_mode",
        "chunk_size",
        "chunk_cache_bytes",
        "fill_time",
        "alignment",
        "mdc_initial_size",
    ):
        assert n in names


def test_ladder_and_order():
    assert space.ladder(1 << 20, 8 << 20) == [1 << 20, 2 << 20, 4 << 20, 8 << 20]
    assert space.ladder(3, 16) == [4, 8, 16]
    sp = space.parse({"params": {"cb_buffer_size": {"ladder": ["1M", "4M"], "default": "16M"}}})
    d = sp.dim("cb_buffer_size")
    assert d.values == ("1048576", "2097152", "4194304", "16777216")  # default added, in order
    assert d.ordered
    dist = sp.distributions()["cb_buffer_size"]
    assert (dist.low, dist.high) == (0, 3)


def test_unset_added_without_default_and_settings_drop_defaults():
    sp = space.parse(
        {
            "params": {
                "transfer_mode": {"values": ["collective", "independent"]},
                "fill_time": {"values": ["ifset", "never"], "default": "ifset"},
            }
        }
    )
    assert sp.dim("transfer_mode").values[0] == space.UNSET
    assert not sp.dim("transfer_mode").ordered
    config = sp.default_config()
    assert config == {"transfer_mode": space.UNSET, "fill_time": "ifset"}
    assert sp.settings_of(config) == {}
    p = sp.trial_params_for({"fill_time": "never", "transfer_mode": "independent"})
    assert sp.settings_of(sp.config_from_trial_params(p)) == {
        "fill_time": "never",
        "transfer_mode": "independent",
    }


def test_forbid_and_guesses_from_file():
    sp = space.load(HERE / "fake_space.toml")
    assert sp.forbidden({"chunk_cache_bytes": "8388608", "cb_buffer_size": "4194304"})
    assert not sp.forbidden({"chunk_cache_bytes": "8388608", "cb_buffer_size": "1048576"})
    assert sp.guesses[0].settings == {"cb_buffer_size": "1048576"}
    assert sp.size() == 3 * 4 * 2


@pytest.mark.parametrize(
    "data, message",
    [
        ({"params": {"nope": {"values": [1]}}}, "unknown parameter"),
        ({"params": {"cb_nodes": {"values": [0]}}}, "below the minimum"),
        ({"params": {"cb_nodes": {"values": [1], "ladder": [1, 2]}}}, "either values"),
        ({"params": {"fill_time": {"ladder": [1, 2]}}}, "size or int"),
        ({"params": {}}, "nothing to search"),
        (
            {
                "params": {"cb_nodes": {"values": [1, 2]}},
                "constraints": [{"tie": "cb_buffer_size", "to": "striping_unit"}],
            },
            "not a searched",
        ),
        ({"params": {"cb_nodes": {"values": [1, 1]}}}, "repeated"),
        ({"params": {"cb_nodes": {"values": [1]}}, "color": 1}, "unknown key"),
    ],
)
def test_bad_spaces_are_refused(data, message):
    with pytest.raises(space.SpaceError, match=message):
        space.parse(data)


def test_missing_space_file(tmp_path):
    with pytest.raises(space.SpaceError, match="neither a preset"):
        space.load(tmp_path / "none.toml")


def test_space_of_a_huge_integer_fifo_or_folder_says_what_is_wrong(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text("[params.cb_buffer_size]\nvalues = [" + "9" * 5000 + "]\n")
    with pytest.raises(space.SpaceError, match="more than 4300 digits"):
        space.load(big)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(space.SpaceError, match="fifo: cannot read the space: not a regular file"):
        space.load(fifo)
    with pytest.raises(space.SpaceError, match="cannot read the space: a directory"):
        space.load(tmp_path)
