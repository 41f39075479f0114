"""The HDF5 library's side of the registry (src/iotune/data/h5versions.tsv), shared with the
runtime (tools/gen_params.py): every HDF5 parameter has a row, defaults per release, and a
recommendation equal to the default of the HDF5 it runs with is dropped."""

import subprocess
import sys

import pytest
from conftest import REPO

from iotune import h5versions, params


def test_every_hdf5_parameter_has_a_row_and_only_those():
    rows = h5versions.table()
    assert set(rows) == {p.name for p in params.by_layer("hdf5")}


def test_defaults_change_with_the_release():
    assert h5versions.default_for("chunk_cache_bytes", (1, 10, 8)) == "1048576"
    assert h5versions.default_for("chunk_cache_bytes", (2, 0, 0)) == "8388608"
    assert h5versions.default_for("chunk_cache_slots", (1, 14, 6)) == "521"
    assert h5versions.default_for("chunk_cache_slots", (2, 0, 0)) == "8191"
    assert h5versions.default_for("libver_low", (2, 0, 0)) == "v18"
    assert h5versions.default_for("page_buffer_size", (1, 10, 0)) is None  # not there yet
    assert h5versions.default_for("cb_nodes", (2, 0, 0)) is None


def test_a_recommendation_equal_to_the_default_is_dropped():
    rec = {"chunk_cache_bytes": "8M", "chunk_cache_slots": "521", "cb_nodes": "2"}
    kept, dropped = h5versions.drop_defaults(rec, (2, 0, 0))
    assert kept == {"chunk_cache_slots": "521", "cb_nodes": "2"}
    assert dropped == ["chunk_cache_bytes=8M is HDF5 2.0.0's own default: left out"]
    kept, dropped = h5versions.drop_defaults(rec, (1, 10, 8))
    assert kept == {"chunk_cache_bytes": "8M", "cb_nodes": "2"} and len(dropped) == 1


def test_what_a_library_lacks_is_said():
    s = h5versions.support("page_buffer_size")
    assert "needs HDF5 1.10.1" in s.lacks((1, 10, 0))
    assert "parallel build" in s.lacks((1, 10, 8), parallel_build=True)
    assert s.lacks((2, 0, 0)) is None
    assert "MPI-IO" in h5versions.support("mdc_image").lacks((2, 0, 0), mpio=True)


@pytest.mark.parametrize(
    "row, message",
    [
        ("alignment\t1.6.0\tany\t1.6.0=1,1\nalignment\t1.6.0\tany\t-", "repeated"),
        ("nosuch\t1.6.0\tany\t-", "unknown"),
        ("alignment\t1.6.0\tsomewhere\t-", "bad builds"),
        ("alignment\t1.6\tany\t2.0.0=1,1 1.8.0=1,1", "not ascending"),
        ("alignment\t1.6.0\tany\t1.8.0=-3", "alignment"),
        ("alignment\tone\tany\t-", "not an HDF5 version"),
    ],
)
def test_a_bad_table_is_refused_with_its_row(tmp_path, row, message):
    path = tmp_path / "h5versions.tsv"
    path.write_text("name\tsince\tbuilds\tdefaults\n" + row + "\n")
    with pytest.raises(ValueError, match=message):
        h5versions.read_versions(path)


def test_the_runtime_reads_the_same_table(tmp_path):
    out = tmp_path / "params_gen.h"
    tsv = REPO / "src" / "iotune" / "data" / "params.tsv"
    subprocess.run([sys.executable, REPO / "tools" / "gen_params.py", tsv, out], check=True,
                   timeout=60)  # fmt: skip
    text = out.read_text()
    assert (
        '"chunk_cache_bytes"' in text
        and '10800u, IOT_BUILDS_ANY, "1.8.0=1048576 2.0.0=8388608"' in text
    )
    assert '"page_buffer_size"' in text and "11001u, IOT_BUILDS_SERIAL" in text
    assert '"cb_nodes"' in text and "0u, IOT_BUILDS_ANY, NULL" in text
    # the parameters the adaptive mode never applies by itself, MCA rows included (online column)
    offline = text[text.index("iot_params_offline[]") :]
    assert '{"transfer_mode", "collective needs every rank' in offline
    assert '{"io", "an Open MPI MCA parameter' in offline and '"cb_nodes"' not in offline


def test_check_list_shows_the_release_and_defaults():
    proc = subprocess.run([sys.executable, "-m", "iotune", "check", "--list"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("chunk_cache_slots "))
    assert "1.8.0+; default 521, 8191 from 2.0.0" in row
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("page_buffer_size "))
    assert "1.10.1+ serial builds" in row
