"""A plain MPI-IO program that writes a file through a view and reads it back after reopening
it. advise's access pattern is of the whole run, the adaptive mode's of each phase (an open to
its close); the step from the last write to the first read of the reopened file made advise
call both programs "random" (backward), where the adaptive mode saw a strided (interleaved
blocks: gaps between a rank's calls) or a sequential write phase. A stream of transfers now
starts again at each open of the file, as a phase does."""

import json

import pytest
from conftest import BUILD, run_mpi

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


@pytest.mark.parametrize(("split", "pattern"), [("cols", "strided"), ("rows", "sequential")])
def test_a_noncontiguous_file_view_is_a_strided_access(tmp_path, test_prog, libiotune, split,
                                                       pattern):  # fmt: skip
    """An outside tester's program: one MPI_File_write_at_all per rank and file through a
    subarray view. In column blocks each rank's call lands in 256 pieces interleaved with the
    other rank's, yet its byte offset (0) and its single call showed neither gaps nor steps:
    `sequential`, and the adaptive mode applied SIO-7's romio_cb_write=disable, which that
    rule's own text keeps for contiguous pieces. A call through a view whose filetype has holes
    is now a noncontiguous access, in the adaptive mode as from the trace; row blocks (no
    holes: one run of the file per rank) stay sequential."""
    from iotune.kb import signature

    argv = [test_prog("subarray_probe"), split, "3"]
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, argv, cwd=base, timeout=120)
    env = {"IOTUNE_PROFILE": str(tmp_path / "p.json"), "IOTUNE_MODE": "adaptive",
           "IOTUNE_TRACE": "1"}  # fmt: skip
    run_mpi(2, argv, env=env, cwd=tmp_path, preload=libiotune, timeout=120)
    for n in ("grid_000.dat", "grid_001.dat", "grid_002.dat"):
        assert (tmp_path / n).read_bytes() == (base / n).read_bytes(), n
    phases = json.loads((tmp_path / "p.json").read_text())["adaptive"]["phases"]
    learn = phases[0]["insights"]
    assert [x["insights"]["access_pattern"] for x in phases] == [pattern] * 3
    assert learn["noncontiguous_fraction"] == (1 if split == "cols" else 0)
    # the rules: ROMIO's hints (MPICH, the default build; Open MPI's OMPIO has no
    # romio_cb_write to read back, and SIO-7 stays undecided there)
    assert learn["hint_romio_cb_write"] == "automatic" or BUILD.name.endswith("openmpi")
    if learn["hint_romio_cb_write"] is None:
        return
    assert [x["role"] for x in phases] == ["learning", "optimised", "optimised"]
    applied = [(a["name"], a["value"]) for x in phases[1:] for a in x["applied"]]
    if split == "cols":
        assert "SIO-7" not in phases[0]["fired"] and "IOT-3" in phases[0]["fired"]
        assert ("romio_cb_write", "disable") not in applied
    else:
        assert phases[0]["fired"] == ["SIO-7"]
        assert applied == [("romio_cb_write", "disable")] * 2
    # the same from the trace (advise, tune, the knowledge base's motif)
    traces = trace_insights.load_traces(tmp_path / "p.json")
    (g,) = insights.from_profile(prof.load(tmp_path / "p.json"), traces, layouts={})
    assert g.values["access_pattern"] == pattern
    assert signature.motif_of(g)["access_pattern"] == pattern


def test_a_view_s_shape_decides_which_transfers_are_noncontiguous():
    shape = trace_insights.view_shape
    noncontig = trace_insights.noncontiguous_view
    # a column block of a subarray: holes in one filetype
    cols = {"size": 8, "extent": 32, "true_extent": 20, "blocks": [[0, 4], [16, 4]]}
    assert shape(cols) == (True, 8) and noncontig(shape(cols), 8)
    # a row block: one run, its extent the whole array; longer than one filetype: gaps
    rows = {"size": 16, "extent": 32, "true_extent": 16, "blocks": [[16, 16]]}
    assert shape(rows) == (False, 16)
    assert not noncontig(shape(rows), 16) and noncontig(shape(rows), 17)
    # a trace before true_extent: the blocks' (or runs') span
    assert shape({"size": 8, "extent": 32, "blocks": [[0, 4], [16, 4]]}) == (True, 8)
    assert shape({"size": 8, "extent": 8, "blocks": None, "runs": [[0, 2, 4, 2]]}) == (False, 0)
    assert shape({"size": 8, "extent": 32, "blocks": None, "runs": [[0, 2, 4, 8]]}) == (True, 8)
    assert shape({"size": 8, "extent": 32, "blocks": None}) is None
    assert not noncontig(None, 10**9)  # the default view
