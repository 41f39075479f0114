"""The MPI-IO chunk transfer choices (mpio_chunk_opt, mpio_collective_opt) on Debian's parallel
HDF5 1.10.8 through h5py: each changes the MPI-IO calls a collective chunked write makes (the
profile's counts), the data stay the same (h5diff); individual_io on a chunked dataset is
refused, said once, and the job ends (HDF5 1.10.8 itself hangs with it)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_mpi

pytest.importorskip("h5py", reason="h5py is not installed: scripts/install.sh builds it")
pytest.importorskip("mpi4py", reason="mpi4py is not installed: scripts/install.sh builds it")

APP = Path(__file__).with_name("h5py_chunks_app.py")


def run(tmp: Path, lib, name: str, setting: str):
    where = tmp / name
    where.mkdir()
    config = where / "c.xml"
    config.write_text(f"<Parameters><High_Level_IO_Library>{setting}</High_Level_IO_Library>"
                      "</Parameters>\n")  # fmt: skip
    proc = run_mpi(2, [sys.executable, APP, "data.h5"], cwd=where, preload=lib, config=config,
                   verbose=True, timeout=300,
                   env={"IOTUNE_PROFILE": str(where / "p.json")})  # fmt: skip
    prof = json.loads((where / "p.json").read_text())
    (f,) = [f for f in prof["files"] if f["name"].endswith("data.h5")]
    return proc, f


def test_chunk_transfer_choices_fire_and_keep_the_data(tmp_path, libiotune):
    _, base = run(tmp_path, libiotune, "base", "")
    _, one = run(tmp_path, libiotune, "one", "<mpio_chunk_opt>one_io</mpio_chunk_opt>")
    _, multi = run(tmp_path, libiotune, "multi", "<mpio_chunk_opt>multi_io</mpio_chunk_opt>")
    calls = {k: (f["mpiio"]["collective_writes"], f["mpiio"]["independent_writes"])
             for k, f in (("base", base), ("one", one), ("multi", multi))}  # fmt: skip
    assert calls["one"] != calls["multi"], calls
    assert one["applied"]["hdf5"] == {"mpio_chunk_opt": "one_io"}
    assert multi["applied"]["hdf5"] == {"mpio_chunk_opt": "multi_io"}
    for name in ("one", "multi"):
        diff = subprocess.run(["h5diff", tmp_path / "base" / "data.h5",
                               tmp_path / name / "data.h5"],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert diff.returncode == 0, diff.stdout


def test_individual_io_is_refused_for_chunked_datasets(tmp_path, libiotune):
    setting = "<mpio_collective_opt>individual_io</mpio_collective_opt>"
    proc, f = run(tmp_path, libiotune, "ind", setting)
    said = "mpio_collective_opt=individual_io NOT applied to chunked datasets"
    assert proc.stderr.count(said) == 1, proc.stderr
    assert "mpio_collective_opt" not in f["applied"]["hdf5"]


def test_chunk_opt_thresholds_fire_and_keep_the_data(tmp_path, libiotune):
    """mpio_chunk_opt_num above the 4 chunks each rank writes turns HDF5's default linked-chunk
    transfer into one per chunk (as multi_io); mpio_chunk_opt_ratio=0 then makes each chunk,
    which one rank of two selects (50 %, under the default 60 %), collective instead of
    independent: each changes the MPI-IO calls, the data stay the same."""
    runs = {"base": "", "one": "<mpio_chunk_opt>one_io</mpio_chunk_opt>",
            "multi": "<mpio_chunk_opt>multi_io</mpio_chunk_opt>",
            "num": "<mpio_chunk_opt_num>64</mpio_chunk_opt_num>",
            "ratio": "<mpio_chunk_opt_num>64</mpio_chunk_opt_num>"
                     "<mpio_chunk_opt_ratio>0</mpio_chunk_opt_ratio>"}  # fmt: skip
    files = {name: run(tmp_path, libiotune, name, setting)[1] for name, setting in runs.items()}
    calls = {k: (f["mpiio"]["collective_writes"], f["mpiio"]["independent_writes"])
             for k, f in files.items()}  # fmt: skip
    assert calls["base"] == calls["one"] != calls["multi"], calls
    assert calls["num"] == calls["multi"], calls
    assert calls["ratio"] != calls["num"], calls
    assert files["num"]["applied"]["hdf5"] == {"mpio_chunk_opt_num": "64"}
    assert files["ratio"]["applied"]["hdf5"] == {"mpio_chunk_opt_num": "64",
                                                 "mpio_chunk_opt_ratio": "0"}  # fmt: skip
    for name in ("num", "ratio"):
        diff = subprocess.run(["h5diff", tmp_path / "base" / "data.h5",
                               tmp_path / name / "data.h5"],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert diff.returncode == 0, diff.stdout
