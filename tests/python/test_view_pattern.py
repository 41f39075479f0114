"""A plain MPI-IO program that writes a file through a view and reads it back after reopening
it. advise's access pattern is of the whole run, the adaptive mode's of each phase (an open to
its close); the step from the last write to the first read of the reopened file made advise
call both programs "random" (backward), where the adaptive mode saw a strided (interleaved
blocks: gaps between a rank's calls) or a sequential write phase. A stream of transfers now
starts again at each open of the file, as a phase does."""

import json

import pytest
from conftest import run_mpi

from iotune import insights, trace_insights
from iotune import profile as prof


@pytest.mark.parametrize(("view", "pattern"), [("interleaved", "strided"),
                                               ("contiguous", "sequential")])  # fmt: skip
def test_reading_a_file_back_is_not_a_step_backwards(tmp_path, test_prog, libiotune, view,
                                                     pattern):  # fmt: skip
    env = {"IOTUNE_PROFILE": str(tmp_path / "p.json"), "IOTUNE_MODE": "adaptive",
           "IOTUNE_TRACE": "1"}  # fmt: skip
    run_mpi(2, [test_prog("view_probe"), "v.dat", view], env=env, cwd=tmp_path,
            preload=libiotune, timeout=120)  # fmt: skip
    data = json.loads((tmp_path / "p.json").read_text())
    phases = data["adaptive"]["phases"]
    assert [(x["file"], x["insights"]["io_mix"]) for x in phases] == [
        ("v.dat", "write"), ("v.dat", "read")]  # fmt: skip
    assert phases[0]["insights"]["access_pattern"] == pattern
    traces = trace_insights.load_traces(tmp_path / "p.json")
    (g,) = insights.from_profile(prof.load(tmp_path / "p.json"), traces, layouts={})
    assert g.values["interface"] == "mpiio"
    assert g.values["backward_fraction"] == 0, g.values
    assert g.values["access_pattern"] == pattern


def _trace(events):
    sigs = [
        {"layer": "mpiio", "func": "MPI_File_open", "file": "f", "step": None},
        {"layer": "mpiio", "func": "MPI_File_write_at_all", "file": "f", "size": 100, "step": 0},
        {"layer": "mpiio", "func": "MPI_File_write_at_all", "file": "f", "size": 100,
         "step": 100},
        {"layer": "mpiio", "func": "MPI_File_read_at_all", "file": "f", "size": 100,
         "step": -200},
    ]  # fmt: skip
    return {"rank": 0, "signatures": sigs, "events": [[i, n] for i, n in events]}


def test_streams_start_again_at_each_open():
    # open, write at 0, 100, 200, reopen, read at 0: the read is no step backwards
    calls = trace_insights.trace_calls(_trace([(0, 1), (1, 1), (2, 2), (0, 1), (3, 1)]))
    transfers = [c for c in calls if trace_insights.is_transfer(c.layer, c.func)]
    assert [(c.offset, c.opening) for c in transfers] == [(0, 1), (100, 1), (0, 2)]
    assert trace_insights.locality(transfers)["backward_fraction"] == 0
    # without the reopen the same read goes backwards: 1 of 3 steps
    calls = trace_insights.trace_calls(_trace([(0, 1), (1, 1), (2, 2), (3, 1)]))
    transfers = [c for c in calls if trace_insights.is_transfer(c.layer, c.func)]
    assert trace_insights.locality(transfers)["backward_fraction"] == 1 / 3
