"""pip's h5py (HDF5 2.0 bundled inside the wheel, serial, loaded privately by the extension
modules) under the preloaded runtime: a plain sec2 file opted in with serial_files gets its
settings, HDF5 itself reports them in effect, every write and read is counted, the data are
those of the run without the runtime (h5diff).

The wheel's Python is $IOTUNE_H5WHEEL_PYTHON, else .venv-h5wheel/bin/python (made by
scripts/install.sh unless IOTUNE_NO_H5WHEEL); skipped with the reason when neither exists.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

from iotune import h5versions

APP = Path(__file__).with_name("h5py_wheel_app.py")
CONFIG = """<Parameters><High_Level_IO_Library>
<serial_files>true</serial_files>
<alignment>4096,4096</alignment>
<chunk_cache_bytes>4194304</chunk_cache_bytes>
<fill_time>never</fill_time>
<alloc_time>early</alloc_time>
</High_Level_IO_Library></Parameters>
"""
# alloc_time early: serial HDF5 allocates chunks as they are written, and a read of one never
# written then leaves the reader's buffer as it was: fill_time=never alone is withdrawn there
# (runtime/src/apply/fill_guard.c)


NEW = """<Parameters><High_Level_IO_Library>
<serial_files>true</serial_files>
<file_space_strategy>page</file_space_strategy>
<file_space_page_size>8192</file_space_page_size>
<page_buffer_size>65536</page_buffer_size>
<libver_low>v110</libver_low>
<evict_on_close>true</evict_on_close>
<mdc_image>true</mdc_image>
<filter_partial_chunks>false</filter_partial_chunks>
</High_Level_IO_Library></Parameters>
"""


def wheel_python() -> Path:
    py = Path(os.environ.get("IOTUNE_H5WHEEL_PYTHON", REPO / ".venv-h5wheel" / "bin" / "python"))
    if not py.exists():
        pytest.skip(f"no Python with pip's h5py wheel at {py}: scripts/install.sh makes it")
    return py


def run(py: Path, where: Path, lib=None, config=None, extra=None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.pop("LD_PRELOAD", None)
    if lib:
        env.update(LD_PRELOAD=str(lib), IOTUNE_PROFILE=str(where / "profile.json"))
    if config:
        env.update(IOTUNE_CONFIG=str(config), IOTUNE_VERBOSE="1")
    env.update(extra or {})
    p = subprocess.run([str(py), str(APP), "data.h5"], cwd=where, env=env, capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    out["stderr"] = p.stderr
    return out


@pytest.fixture(scope="module")
def wheel():
    py = wheel_python()
    v = subprocess.run([str(py), "-c", "import h5py; print(h5py.version.hdf5_version)"],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    if v.returncode != 0:
        pytest.skip(f"{py} cannot import h5py: {v.stderr.strip()[-200:]}")
    return py, v.stdout.strip()


@pytest.fixture(scope="module")
def base(wheel, tmp_path_factory):
    where = tmp_path_factory.mktemp("wheel-base")
    return where, run(wheel[0], where)


def profile_file(where: Path) -> dict:
    prof = json.loads((where / "profile.json").read_text())
    (f,) = [f for f in prof["files"] if f["name"].endswith("data.h5")]
    return f


def test_serial_files_settings_reach_the_wheels_hdf5(wheel, base, tmp_path, libiotune):
    py, version = wheel
    base_dir, plain = base
    (tmp_path / "c.xml").write_text(CONFIG)
    tuned = run(py, tmp_path, lib=libiotune, config=tmp_path / "c.xml")
    # HDF5 itself says the settings are in effect (without the runtime: its defaults)
    assert plain["seen"]["alignment"] == [1, 1]
    assert tuned["seen"]["alignment"] == [4096, 4096]
    assert tuned["seen"]["chunk_cache"][1] == 4194304 != plain["seen"]["chunk_cache"][1]
    assert (plain["seen"]["fill_time"], tuned["seen"]["fill_time"]) == (2, 1)  # ifset, never
    assert "sec2 driver" in tuned["stderr"] and "no settings applied" not in tuned["stderr"]
    f = profile_file(tmp_path)
    assert f["hdf5_driver"] == "sec2"
    whole = json.loads((tmp_path / "profile.json").read_text())
    assert whole["hdf5_library"] == {"version": version, "parallel": False}
    assert h5versions.profile_version(whole) == h5versions.parse_version(version)
    assert f["applied"]["hdf5"] == {
        "alignment": "4096,4096",
        "fill_time": "never",
        "alloc_time": "early",
        "chunk_cache_bytes": "4194304",
    }
    # every write and read of the program counted, none twice
    assert f["hdf5"]["writes"] == tuned["writes"] == 54
    assert f["hdf5"]["reads"] == tuned["reads"] == 53
    assert f["hdf5"]["bytes_written"] == (2 * 500 * 100 + 10 + 105 + 50 * 4) * 8
    assert tuned["sum"] == plain["sum"]
    diff = subprocess.run(["h5diff", base_dir / "data.h5", tmp_path / "data.h5"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert diff.returncode == 0, diff.stdout
    if version.startswith("2."):  # HDF5 2.0 changed the chunk cache's default
        assert plain["seen"]["chunk_cache"][:2] == [8191, 8388608]


def test_without_serial_files_the_wheels_files_keep_their_own(wheel, base, tmp_path, libiotune):
    (tmp_path / "c.xml").write_text(CONFIG.replace("true", "false"))
    tuned = run(wheel[0], tmp_path, lib=libiotune, config=tmp_path / "c.xml")
    assert tuned["seen"] == base[1]["seen"]
    assert "(sec2 driver): no settings applied" in tuned["stderr"]
    assert profile_file(tmp_path)["hdf5"]["writes"] == 54


def generations():
    """The two HDF5 generations here: pip's wheel (2.0, serial build) and the h5py of the
    test's own Python (scripts/install.sh builds it on Debian's parallel 1.10.8)."""
    return ["wheel", "own"]


@pytest.mark.parametrize("generation", generations())
def test_the_new_parameters_on_both_generations(generation, tmp_path, libiotune):
    """Paged aggregation, page buffering, format bounds, eviction, the cache image and partial
    edge chunks: applied and read back by HDF5 itself where the library takes them; skipped
    once, with the reason, where it does not (a parallel build refuses page buffering and
    eviction for every file); the data are the same as without the runtime."""
    import sys

    if generation == "wheel":
        py = wheel_python()
    else:
        py = Path(sys.executable)
        pytest.importorskip("h5py", reason="no h5py in the test's Python (scripts/install.sh)")
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    plain = run(py, base_dir)
    (tmp_path / "n.xml").write_text(NEW)
    tuned = run(py, tmp_path, lib=libiotune, config=tmp_path / "n.xml")
    version = tuned["seen"]["hdf5"]
    seen = tuned["seen"]
    assert plain["seen"]["fs_strategy"][0] == 0 and plain["seen"]["libver"][0] == 0
    assert seen["fs_strategy"][0] == 1 and seen["fs_page_size"] == 8192  # PAGE
    assert seen["libver"][0] == 2  # v110
    f = profile_file(tmp_path)
    applied = f["applied"]["hdf5"]
    for name, value in [("file_space_strategy", "page"), ("file_space_page_size", "8192"),
                        ("libver_low", "v110"), ("mdc_image", "true"),
                        ("filter_partial_chunks", "false")]:  # fmt: skip
        assert applied.get(name) == value, (name, applied)
    parallel_build = "hdf5_mpich" in subprocess.run(
        [str(py), "-c", "import h5py, glob, os; print(h5py.get_config().mpi and 'hdf5_mpich')"],
        capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    withdrawn = {w["setting"]: w["reason"] for w in f.get("withdrawn", [])}
    if parallel_build:
        assert seen["page_buffer"][0] == 0
        for name in ("page_buffer_size", "evict_on_close"):
            assert "a parallel build of HDF5" in withdrawn[name], withdrawn
            assert tuned["stderr"].count(f"data.h5: {name}: a parallel build") == 1  # once
    else:
        assert seen["page_buffer"][0] == 65536 and applied["page_buffer_size"] == "65536"
        assert not withdrawn, withdrawn
        # eviction: read back on the list the open took (the open file's list leaves it off),
        # and seen by its effect: the 50 datasets closed at once leave the metadata cache
        assert applied["evict_on_close"] == "true", f
        assert not [n for n in f.get("hdf5_notes", []) if "evict_on_close" in n], f
        assert seen["cached_entries"] < plain["seen"]["cached_entries"] / 2, (seen, plain)
    assert f["hdf5"]["writes"] == 54 and f["hdf5"]["reads"] == 53, version
    assert tuned["sum"] == plain["sum"]
    diff = subprocess.run(["h5diff", base_dir / "data.h5", tmp_path / "data.h5"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert diff.returncode == 0, diff.stdout
