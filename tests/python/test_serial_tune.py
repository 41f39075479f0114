"""`iotune tune` of serial HDF5 applications (issue 10): the baseline profile shows the data
files opened with the sec2 driver, the study switches `serial_files` on by itself (its HDF5
settings reach such files only then) and searches only what can take effect there."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iotune import controlfile, space
from iotune.search import inert, switches

HERE = Path(__file__).resolve().parent

SERIAL_PROFILE = {
    "reduced": True,
    "layers": {"hdf5": {"file_opens": 1, "dataset_opens": 1, "reads": 9}, "mpiio": {"opens": 0}},
    "files": [
        {"name": "/venv/lib/python3.11/site-packages/h5py/x.h5", "system": "library",
         "hdf5_driver": "core"},
        {"name": "data.h5", "fs": "ext4", "hdf5_driver": "sec2",
         "hdf5": {"reads": 9, "writes": 0}},
    ],
}  # fmt: skip


def test_the_profile_says_which_hdf5_driver_each_data_file_has():
    facts = inert.traits(SERIAL_PROFILE)
    assert facts["hdf5_drivers"] == {"sec2": 1}  # the library's file is not the application's


def test_serial_files_leave_out_what_cannot_take_effect_there():
    sp = space.load("local")
    facts = inert.traits(SERIAL_PROFILE)
    out = inert.inert(sp, {"bytes_read": 10, "bytes_written": 0}, facts)
    assert out["transfer_mode"] == inert.SERIAL_HDF5
    for d in sp.dims:
        if d.param.is_hint:
            assert out[d.name] == inert.SERIAL_NO_MPIIO, d.name
    assert "chunk_cache_bytes" not in out and "sieve_buf_size" not in out
    # a parallel HDF5 file beside it: the collective settings can matter again
    mixed = {**facts, "hdf5_drivers": {"sec2": 1, "mpio": 1}, "mpiio_calls": 2}
    out = inert.inert(sp, {"bytes_read": 10, "bytes_written": 10}, mixed)
    assert "transfer_mode" not in out and "cb_buffer_size" not in out
    # files of the core driver alone get no HDF5 setting at all
    core = {**facts, "hdf5_drivers": {"core": 1}}
    out = inert.inert(sp, {"bytes_read": 10, "bytes_written": 10}, core)
    assert out["chunk_cache_bytes"] == inert.CORE_ONLY


def test_the_switch_goes_on_for_serial_files_and_only_with_hdf5_settings():
    sp = space.load("local")
    facts = inert.traits(SERIAL_PROFILE)
    on = switches.decide(sp, facts, inert.inert(sp, {"bytes_read": 1, "bytes_written": 0}, facts))
    assert on["serial_files"]["value"] == "true" and "sec2" in on["serial_files"]["why"]
    assert switches.apply({"chunk_cache_bytes": "64M"}, on) == {
        "chunk_cache_bytes": "64M", "serial_files": "true"}  # fmt: skip
    assert switches.apply({}, on) == {}  # the defaults stay the defaults
    assert switches.apply({"cb_buffer_size": "1M"}, on) == {"cb_buffer_size": "1M"}
    parallel = {**facts, "hdf5_drivers": {"mpio": 1}}
    assert switches.decide(sp, parallel, {}) == {}
    assert switches.decide(sp, {**facts, "static_hdf5": True}, {}) == {}
    every_hdf5 = {d.name: "x" for d in sp.dims if d.layer == "hdf5"}
    assert switches.decide(sp, facts, every_hdf5) == {}  # nothing for it to serve


# A serial h5py program whose measured time says whether the chunk cache of the control file
# reached its dataset (sec2 file, opened as f["name"]): 1 s with h5py's 1 MiB default, 0.5 s
# with anything else. A study can gain only if its HDF5 settings reach the file.
APP = """
import json, sys, h5py, numpy as np
path = sys.argv[1]
if sys.argv[2:] == ["make"]:
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(4096.0).reshape(64, 64), chunks=(8, 8))
    sys.exit(0)
with h5py.File(path, "r") as f:
    d = f["x"]
    total = float(d[::4, :].sum())
    cache = d.id.get_access_plist().get_chunk_cache()[1]
t = 1.0 if cache == 1024 * 1024 else 0.5
print("IOTUNE_RESULT " + json.dumps({"phase": "read", "bytes": 4096, "total_s": t}))
"""


def test_a_study_of_a_serial_h5py_program_switches_serial_files_on(tmp_path, libiotune):
    pytest.importorskip("h5py")
    app = tmp_path / "serial_app.py"
    app.write_text(APP)
    subprocess.run([sys.executable, app, tmp_path / "data.h5", "make"], check=True, timeout=60)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.update(IOTUNE_LIB=str(libiotune))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "iotune", "tune", "--launcher", "none", "--objective", "kernel",
           "--trials", "4", "--leaders", "1", "--repeat", "1", "--verify-pairs", "8",
           "--no-progress", "--no-kb", "--seed", "0", "--out", out, "--", sys.executable, app,
           tmp_path / "data.h5"]  # fmt: skip
    run = subprocess.run(list(map(str, cmd)), cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "switched on: serial_files=true" in run.stdout, run.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["switched_on"]["serial_files"]["value"] == "true"
    assert summary["not_searched"]["transfer_mode"] == inert.SERIAL_HDF5
    assert summary["not_searched"]["cb_buffer_size"] == inert.SERIAL_NO_MPIIO
    assert summary["final"]["improved"], summary["verdict"]
    best = {s.name: s.value for s in controlfile.parse_file(out / "best.xml").settings}
    assert best.get("serial_files") == "true" and "chunk_cache_bytes" in best, best
    assert "serial_files" in (out / "report.html").read_text()
