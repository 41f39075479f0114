"""Every kernel under `iotune run` with a control file: the settings are applied (verbose log),
read back (MPI_File_get_info in the profile, h5dump for layout), and the data are identical to
a run with defaults."""

import filecmp
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import launcher

CONFIG = """<Parameters>
  <High_Level_IO_Library>
    <alignment>0, 4096</alignment>
    <fill_time>never</fill_time>
    <chunk_cache_bytes>2MiB</chunk_cache_bytes>
  </High_Level_IO_Library>
  <Middleware_Layer>
    <cb_buffer_size>1MiB</cb_buffer_size>
    <romio_ds_write>disable</romio_ds_write>
  </Middleware_Layer>
</Parameters>
"""

# kernel argv (tiny sizes), the files it writes, whether they are HDF5
KERNELS = {
    "vpicio": (["vpicio", "--particles", "2048"], ["vpicio.h5"], True),
    "vorpalio": (["vorpalio", "--block", "8,6,4"], ["vorpalio.h5"], True),
    "gcrmio": (
        ["gcrmio", "--cells", "512", "--levels", "5", "--chunk-cells", "256"],
        ["gcrmio.h5"],
        True,
    ),  # fmt: skip
    "haccio": (["haccio", "--particles", "1000"], ["haccio.dat"], False),
    "iorio-hdf5": (
        ["iorio", "--api", "hdf5", "--block", "64K", "--transfer", "16K"],
        ["iorio.h5"],
        True,
    ),  # fmt: skip
    "iorio-mpiio": (
        ["iorio", "--api", "mpiio", "--block", "64K", "--transfer", "16K"],
        ["iorio.dat"],
        False,
    ),  # fmt: skip
}


def iotune_run(tmp, kernel_path, args, libiotune, config=None, profile=None):
    env = dict(os.environ, IOTUNE_LIB=str(libiotune))
    if profile:
        env["IOTUNE_PROFILE"] = str(profile)
    launch = [*launcher(), "2", str(kernel_path), *args, "--read"]
    if config:
        cmd = [sys.executable, "-m", "iotune", "run", "--config", str(config), "--verbose", "--",
               *launch]  # fmt: skip
    else:
        cmd = launch
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reads = [json.loads(ln.split(" ", 1)[1]) for ln in proc.stdout.splitlines()
             if ln.startswith("IOTUNE_RESULT ") and '"phase":"read"' in ln]  # fmt: skip
    assert reads and all(r["verified"] for r in reads)
    return proc


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_runs_tuned_with_settings_applied_and_data_unchanged(
    name, kernel, libiotune, tmp_path
):
    argv, files, is_hdf5 = KERNELS[name]
    default_dir, tuned_dir = tmp_path / "default", tmp_path / "tuned"
    default_dir.mkdir()
    tuned_dir.mkdir()
    cfg = tmp_path / "tune.xml"
    cfg.write_text(CONFIG)
    iotune_run(default_dir, kernel(argv[0]), argv[1:], libiotune)
    profile = tmp_path / "profile.json"
    proc = iotune_run(tuned_dir, kernel(argv[0]), argv[1:], libiotune, cfg, profile)

    # applied: the runtime's verbose report, once per file from rank 0
    assert "iotune:   cb_buffer_size=1048576 (in effect) [tune.xml:8]" in proc.stderr
    assert "iotune:   romio_ds_write=disable (in effect) [tune.xml:9]" in proc.stderr
    if is_hdf5:
        assert "iotune:   alignment=0,4096 [tune.xml:3]" in proc.stderr
        assert "iotune:   fill_time=never [tune.xml:4]" in proc.stderr
        # the chunk cache, a dataset access property: set on every dataset the read phase opens
        lines = proc.stderr.splitlines()
        reopened = max(i for i, ln in enumerate(lines) if ln.startswith("iotune: H5Fopen "))
        access = [i for i, ln in enumerate(lines[reopened:], reopened)
                  if re.fullmatch(r"iotune: dataset \S+: hdf5 dataset access:", ln)]  # fmt: skip
        assert access, proc.stderr
        for i in access:
            assert lines[i + 1] == "iotune:   chunk_cache_bytes=2097152 [tune.xml:5]"
    # read back: hints in effect as MPI_File_get_info reported them to the capture
    prof = json.loads(profile.read_text())
    written = [f for f in prof["files"] if f["name"] in files]
    assert written, [f["name"] for f in prof["files"]]
    for f in written:
        assert f["hints"]["cb_buffer_size"] == "1048576"
        assert f["hints"]["romio_ds_write"] == "disable"
        if is_hdf5:  # read back: a chunk cache takes effect on chunked datasets only
            applied, notes = f["applied"]["hdf5"], f.get("hdf5_notes", [])
            assert applied["alignment"] == "0,4096"
            # new files, nothing deleted, parallel (early allocation): fill_time=never kept,
            # read back from the datasets' creation lists (runtime/src/apply/fill_guard.c)
            assert applied["fill_time"] == "never", (applied, notes)
            assert applied.get("chunk_cache_bytes") == "2097152" or any(
                "chunk cache settings without effect: the dataset is contiguous" in n for n in notes
            ), (applied, notes)
    for fname in files:
        a, b = default_dir / fname, tuned_dir / fname
        if is_hdf5:
            dump = subprocess.run(["h5dump", "-p", "-H", str(b)], capture_output=True,
                                  text=True, timeout=60).stdout  # fmt: skip
            assert "H5D_FILL_TIME_NEVER" in dump and "H5D_FILL_TIME_IFSET" not in dump
            diff = subprocess.run(["h5diff", str(a), str(b)], capture_output=True, timeout=60)
            assert diff.returncode == 0, diff.stdout
            assert b"not comparable" not in diff.stdout  # h5diff exits 0 for other shapes
        else:
            assert filecmp.cmp(a, b, shallow=False)
