"""The I/O time of a profile includes the work HDF5 does in an object's close on the
application's behalf (tester realapps2, finding 1): with a chunk cache larger than the chunks,
a compressed dataset's H5Dwrite only fills the cache and its close compresses and writes every
chunk. Left out, that time made a large chunk cache look 3-4x faster while the program got
slower. Each check compares times of one run (the program's own clock around its calls against
the runtime's), with wide margins."""

import os
import subprocess
import sys

import pytest

from iotune import profile as prof

RAW = 4 * 64**3 * 4  # close_probe: 4 chunks of 64^3 floats


def run_probe(argv, tmp_path, libiotune):
    out = tmp_path / "p.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.update(LD_PRELOAD=str(libiotune), IOTUNE_PROFILE=str(out))
    run = subprocess.run([str(a) for a in argv], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120, check=True)  # fmt: skip
    words = run.stdout.split()
    times = dict(zip(words[::2], map(float, words[1::2]), strict=True))
    return prof.load(out), times["close_s"], times["region_s"]


@pytest.mark.parametrize("mode", ["dclose", "decref", "oclose", "late"])
def test_the_writes_of_a_close_are_io_time(mode, test_prog, libiotune, tmp_path):
    """dclose: H5Dclose; decref: H5Idec_ref (h5py); oclose: a dataset opened with H5Oopen,
    which the runtime does not follow, closed with H5Oclose; late: H5Fclose first, the file's
    flush then happens in H5Dclose."""
    p, close_s, region_s = run_probe([test_prog("close_probe"), "c.h5", mode], tmp_path, libiotune)
    (f,) = [f for f in p.files if f["name"] == "c.h5"]
    assert f["hdf5"]["bytes_written"] == RAW
    assert 0 < f["posix"]["bytes_written"] < RAW  # compressed chunks, written by the close
    # the close is the file's HDF5 time, write time as it wrote what H5Dwrite left in the
    # cache, and the run's I/O time (without it both were about a quarter of the close alone)
    h = f["hdf5"]
    assert h["write_time_s"] >= 0.7 * close_s, (h, close_s)
    assert h["write_time_s"] + h["meta_time_s"] >= 0.8 * close_s, (h, close_s)
    assert f["time_s"]["max"] >= 0.8 * close_s, (f["time_s"], close_s)
    assert p.io_time >= 0.8 * close_s, (p.io_time, close_s)
    # counted once: the POSIX writes inside the close are not added again, so the I/O time
    # cannot exceed the span of the program's calls
    assert p.io_time <= region_s, (p.io_time, region_s)


H5PY_APP = """
import sys, time
import numpy as np, h5py
N = 64
t0 = time.perf_counter()
f = h5py.File("s.h5", "w", rdcc_nbytes=64 << 20)
d = f.create_dataset("u", (4, N, N, N), chunks=(1, N, N, N), dtype="f4", compression="gzip")
for k in range(4):
    d[k] = np.fromfunction(lambda i, j, l: i + j * 0.5 + l * 0.25 + k, (N, N, N), dtype="f4")
t1 = time.perf_counter()
del d  # the last reference: h5py lets go of the dataset with H5Idec_ref
f.close()
t2 = time.perf_counter()
print("close_s %.6f region_s %.6f" % (t2 - t1, t2 - t0))
"""


def test_h5py_releases_count_their_writes(libiotune, tmp_path):
    """The same with h5py, whose datasets are closed by reference count."""
    h5py = pytest.importorskip("h5py")
    if not h5py.h5z.filter_avail(h5py.h5z.FILTER_DEFLATE):
        pytest.skip("this h5py's HDF5 has no deflate filter")
    app = tmp_path / "app.py"
    app.write_text(H5PY_APP)
    p, close_s, region_s = run_probe([sys.executable, app], tmp_path, libiotune)
    (f,) = [f for f in p.files if f["name"] == "s.h5"]
    if not f.get("hdf5", {}).get("file_creates"):
        pytest.skip("this h5py's HDF5 is not the one the runtime interposes (a binary wheel)")
    h = f["hdf5"]
    assert h["write_time_s"] + h["meta_time_s"] >= 0.8 * close_s, (h, close_s)
    assert 0.8 * close_s <= p.io_time <= region_s, (p.io_time, close_s, region_s)
