"""The profile reduced at MPI_Finalize (issue 28, runtime/src/output/reduce.c): a file several
ranks opened arrives at rank 0 as one reduced record whatever the number of ranks; files of one
rank each are gathered up to a bound, the rest summed and counted; nothing the reduction creates
outlives it (MPICH says "leaked handle" on stderr otherwise)."""

import json

from conftest import run_mpi

from iotune import profile as prof
from iotune.search import inert

GATHER_MAX = 4096  # runtime/src/output/reduce.h, IOT_GATHER_MAX


def run(tmp_path, libiotune, argv, nprocs=2):
    out, stats = tmp_path / "p.json", tmp_path / "stats.json"
    proc = run_mpi(nprocs, argv, cwd=tmp_path, preload=libiotune,
                   env={"IOTUNE_PROFILE": str(out), "IOTUNE_REDUCE_STATS": str(stats)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "leak" not in proc.stderr.lower() and "yaksa" not in proc.stderr, proc.stderr
    return json.loads(out.read_text()), json.loads(stats.read_text()), proc


def test_a_shared_file_is_reduced_not_gathered(tmp_path, libiotune, kernel):
    p, stats, _ = run(tmp_path, libiotune, [kernel("vpicio"), "--particles", 1000, "--steps", 2])
    (f,) = [f for f in p["files"] if f["name"].endswith(".h5")]
    assert f["ranks"] == 2 and f["per_rank"]["ranks"] == [0, 1]
    assert stats["ranks"] == 2 and stats["shared_files"] >= 1 and stats["gathered_records"] == 0
    # rank 0 received one record per shared file, the sketch (1024 words) and 3 ints and 2
    # doubles of small collectives: nothing per rank
    fixed = 8 * 1024 + stats["shared_files"] * stats["record_bytes"]
    assert stats["bytes_to_rank0"] == fixed + 3 * 4 + 2 * 8
    assert prof.Profile(p).ranks == 2


def test_files_of_one_rank_beyond_the_bound_are_summarised_and_counted(
    tmp_path, libiotune, test_prog
):
    """2 ranks x 2100 files of their own and one file both write: 4202 records, 4096 gathered,
    the rest summarised; every byte counted. The shared file is reduced when its name's hash
    is among the job's 1024 smallest (the sketch), else gathered from both ranks and merged."""
    n = 2100
    p, stats, _ = run(
        tmp_path, libiotune, [test_prog("capture_probe"), "manympi", tmp_path / "m", n]
    )
    assert stats["gathered_records"] == GATHER_MAX
    summary = p["files_summarised"]
    reduced = stats["shared_files"]
    assert reduced in (0, 1)
    assert summary["files"] == 2 * (n + 1) - 2 * reduced - GATHER_MAX == stats["summarised_files"]
    assert summary["posix"]["bytes_written"] == summary["files"]
    assert len(p["files"]) == GATHER_MAX - 1 + 2 * reduced
    (shared,) = [f for f in p["files"] if f["name"].endswith("m.shared")]
    assert shared["ranks"] == 2 and shared["posix"]["bytes_written"] == 200
    total = 2 * n + 200
    assert p["io"]["bytes_written"] == total == p["layers"]["posix"]["bytes_written"]
    # iotune show says how many files are summed and not listed
    shown = prof.summary(prof.Profile(p))
    assert f"+ {summary['files']} more files of one rank each, summed" in shown


def test_a_small_run_has_no_summary(tmp_path, libiotune, test_prog):
    p, stats, _ = run(
        tmp_path, libiotune, [test_prog("capture_probe"), "manympi", tmp_path / "m", 3]
    )
    assert "files_summarised" not in p and stats["summarised_files"] == 0
    assert sorted(f["ranks"] for f in p["files"]) == [1] * 6 + [2]


def test_dataset_calls_beyond_the_listed_ranks_are_their_minimum_and_maximum():
    """A file of more ranks than the runtime lists: per_rank holds {"min", "max"}."""

    def profile(writes):
        per_rank = {"listed": False, "hdf5": {"writes": writes, "reads": {"min": 0, "max": 0}}}
        return {"reduced": True, "files": [{"name": "a.h5", "ranks": 300, "per_rank": per_rank}]}

    assert inert.traits(profile({"min": 4, "max": 4}))["same_dataset_calls"] is True
    assert inert.traits(profile({"min": 3, "max": 4}))["same_dataset_calls"] is False
    assert "same_dataset_calls" not in inert.traits(profile({"min": "x", "max": 4}))
