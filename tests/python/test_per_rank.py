"""Per-rank HDF5 dataset call counts (issue 9): the runtime writes each rank's H5Dwrite and
H5Dread counts per file (`per_rank`, rows of counters.tsv marked per_rank, gathered by rank 0),
and `iotune tune` tries a forced collective transfer only when every rank calls as often:
a collective H5Dwrite that some rank never joins hangs the job."""

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from conftest import REPO, run_mpi

from iotune import profile as prof
from iotune import space
from iotune.search import inert, loop

APP = REPO / "tests" / "python" / "h5py_app.py"


def profiled(tmp_path: Path, argv, libiotune) -> dict:
    out = tmp_path / "p.json"
    run = run_mpi(2, argv, cwd=tmp_path, preload=libiotune, env={"IOTUNE_PROFILE": str(out)})
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text())


def test_the_counter_table_marks_hdf5_writes_and_reads_per_rank():
    assert prof.PER_RANK == {"hdf5": ("writes", "reads")}


def test_each_ranks_dataset_calls_are_in_the_profile(tmp_path, libiotune, kernel):
    p = profiled(tmp_path, [kernel("gcrmio"), "--cells", 256, "--levels", 2], libiotune)
    (f,) = [f for f in p["files"] if f["name"].endswith("gcrmio.h5")]
    assert f["per_rank"] == {"ranks": [0, 1], "hdf5": {"writes": [5, 5], "reads": [0, 0]}}
    assert sum(f["per_rank"]["hdf5"]["writes"]) == f["hdf5"]["writes"]
    assert inert.traits(p)["same_dataset_calls"] is True


def test_unequal_dataset_calls_are_seen(tmp_path, libiotune):
    """h5py_app.py's data scenario appends from rank 0 alone: one more H5Dwrite there."""
    pytest.importorskip("h5py")
    p = profiled(tmp_path, [sys.executable, APP, "data", "--mpio"], libiotune)
    (f,) = [f for f in p["files"] if f["name"].endswith("data.h5")]
    writes = f["per_rank"]["hdf5"]["writes"]
    assert writes[0] == writes[1] + 1, f["per_rank"]
    assert inert.traits(p)["same_dataset_calls"] is False


def test_collective_is_tried_only_with_equal_calls_known():
    sp = space.load("local")

    def counts(writes, reads):
        per_rank = {"ranks": [0, 1], "hdf5": {"writes": writes, "reads": reads}}
        return {"reduced": True, "files": [{"name": "a.h5", "per_rank": per_rank}]}

    equal, unequal_reads = counts([3, 3], [1, 1]), counts([3, 3], [2, 0])
    assert inert.excluded_values(sp, inert.traits(equal)) == {}
    why = inert.excluded_values(sp, inert.traits(unequal_reads))["transfer_mode"]["collective"]
    assert why == inert.COLLECTIVE_UNEQUAL
    partial = {**equal, "reduced": False}  # rank 0's counters alone: cannot tell
    why = inert.excluded_values(sp, inert.traits(partial))["transfer_mode"]["collective"]
    assert why == inert.COLLECTIVE_UNKNOWN


def search_only(tmp_path: Path, libiotune, app: list) -> dict:
    """A two-trial study (baseline and one more) of app under mpiexec -n 2; its user attrs."""
    out = tmp_path / "out"
    env = {"IOTUNE_LIB": str(libiotune)}
    cmd = [sys.executable, "-m", "iotune", "tune", "--trials", "2", "--search-only",
           "--no-progress", "--no-kb", "--seed", "0", "--timeout", "120", "--out", out, "--",
           *app]  # fmt: skip
    run = subprocess.run(list(map(str, cmd)), cwd=tmp_path, capture_output=True, text=True,
                         timeout=600, env={**os.environ, **env})  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    (name,) = optuna.get_all_study_names(f"sqlite:///{out}/study.db")
    return optuna.load_study(study_name=name, storage=f"sqlite:///{out}/study.db").user_attrs


def test_a_study_considers_collective_when_every_rank_writes_as_often(tmp_path, libiotune, kernel):
    attrs = search_only(tmp_path, libiotune, [kernel("gcrmio"), "--cells", 256, "--levels", 2,
                                              "--mode", "independent"])  # fmt: skip
    assert "transfer_mode" not in attrs.get(loop.VALUES_OUT, {}), attrs
    assert "transfer_mode" not in attrs.get(loop.INERT, {}), attrs


def test_a_study_leaves_collective_out_when_ranks_write_unequally(tmp_path, libiotune):
    pytest.importorskip("h5py")
    attrs = search_only(tmp_path, libiotune, [sys.executable, APP, "data", "--mpio"])
    why = attrs[loop.VALUES_OUT]["transfer_mode"]["collective"]
    assert why == inert.COLLECTIVE_UNEQUAL


def test_forced_collective_writes_the_same_data(tmp_path, libiotune, kernel):
    """The setting the study may now try: data h5diff-identical to the application's own
    independent writes."""
    config = tmp_path / "collective.xml"
    config.write_text("<?xml version='1.0'?>\n<Parameters><High_Level_IO_Library>"
                      "<transfer_mode>collective</transfer_mode>"
                      "</High_Level_IO_Library></Parameters>\n")  # fmt: skip
    files = {}
    for name, cfg in (("own", None), ("collective", config)):
        where = tmp_path / name
        where.mkdir()
        run = run_mpi(2, [kernel("gcrmio"), "--cells", 256, "--levels", 2, "--mode",
                          "independent"], cwd=where, preload=libiotune, config=cfg,
                      env={"IOTUNE_PROFILE": str(where / "p.json")})  # fmt: skip
        assert run.returncode == 0, run.stderr
        files[name] = where / "gcrmio.h5"
        p = json.loads((where / "p.json").read_text())
        (f,) = [f for f in p["files"] if f["name"].endswith("gcrmio.h5")]
        files[name + "_coll"] = f["hdf5"]["collective_writes"]
    assert files["own_coll"] == 0 and files["collective_coll"] == 10  # the setting took effect
    diff = subprocess.run(["h5diff", files["own"], files["collective"]], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert diff.returncode == 0 and "not comparable" not in diff.stdout, diff.stdout
