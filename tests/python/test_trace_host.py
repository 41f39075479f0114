"""One trace file per host (schema 5, issue 28): the ranks of a host send their traces to its
leader, which writes them into one file, what ranks repeat stored once; iotune.trace expands
it back to each rank's trace exactly. Each run writes both forms (IOTUNE_TRACE_FILES=both),
so the expansion is compared with the ranks' own files of the same run."""

import gzip
import json

import pytest

from iotune import trace as iotrace

SAME_EXCEPT = {"version", "host", "host_index"}  # what only a host's file says


def run(mpirun, lib, ranks, argv, tmp_path, level="1", files="both"):
    env = {"IOTUNE_PROFILE": str(tmp_path / "p.json"), "IOTUNE_TRACE": level,
           "IOTUNE_TRACE_FILES": files}  # fmt: skip
    return mpirun(ranks, argv, cwd=tmp_path, env=env, preload=lib)


def host_file(tmp_path):
    return json.loads(gzip.decompress((tmp_path / "p.json.trace" / "host-0.json.gz").read_bytes()))


def assert_expands_exactly(tmp_path, ranks):
    d = tmp_path / "p.json.trace"
    assert sorted(p.name for p in d.iterdir()) == ["host-0.json.gz"] + [
        f"rank-{r}.json.gz" for r in range(ranks)]  # fmt: skip
    merged = iotrace.read_all(d / "host-0.json.gz")
    assert [t["rank"] for t in merged] == list(range(ranks))
    for t in merged:
        own = iotrace.read(d / f"rank-{t['rank']}.json.gz")
        assert own["version"] == 4 and t["version"] == 5 and t["host_index"] == 0
        assert {k: v for k, v in t.items() if k not in SAME_EXCEPT} == {
            k: v for k, v in own.items() if k != "version"}  # fmt: skip


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_shared_file_regular_pattern_is_one_shape(mpirun, kernel, libiotune, tmp_path, ranks):
    """vpicio: every rank writes its slice of one shared file, offsets rank x slice: one shape,
    and no rank but the first needs its own steps."""
    run(mpirun, libiotune, ranks, [kernel("vpicio"), "--particles", 1000, "--steps", 3], tmp_path)
    assert_expands_exactly(tmp_path, ranks)
    doc = host_file(tmp_path)
    assert doc["version"] == 5 and doc["ranks"] == ranks and len(doc["shapes"]) == 1
    assert [m["shape"] for m in doc["members"]] == [0] * ranks
    assert not any("step" in m or "files" in m for m in doc["members"])
    slopes = set(doc["shapes"][0]["step_per_rank"])
    assert slopes - {0}, "the H5Dwrite offsets' first steps grow with the rank"


def test_files_of_their_own_per_rank_share_a_shape(mpirun, test_prog, libiotune, tmp_path):
    """trace_probe twofiles: each rank its own two files (PATH.<rank>.a, .b), the same calls:
    one shape; each rank's file names its own."""
    run(
        mpirun,
        libiotune,
        3,
        [test_prog("trace_probe"), "twofiles", tmp_path / "d", 50],
        tmp_path,
        "all",
    )
    assert_expands_exactly(tmp_path, 3)
    doc = host_file(tmp_path)
    assert len(doc["shapes"]) == 1 and all("files" in m for m in doc["members"][1:])
    assert not any("step" in m for m in doc["members"])
    for r, t in enumerate(iotrace.load(tmp_path / "p.json")):
        assert {s["file"].rsplit("/", 1)[-1] for s in t["signatures"] if s["file"]} == {
            f"d.{r}.a", f"d.{r}.b"}  # fmt: skip


def test_irregular_streams_are_kept_per_rank(mpirun, test_prog, libiotune, tmp_path):
    """trace_probe random: sizes and offsets from a generator seeded by the rank: nothing in
    common, a shape per rank, every call still exact."""
    run(
        mpirun,
        libiotune,
        2,
        [test_prog("trace_probe"), "random", tmp_path / "d", 300],
        tmp_path,
        "all",
    )
    assert_expands_exactly(tmp_path, 2)
    assert len(host_file(tmp_path)["shapes"]) == 2


def test_by_default_only_the_hosts_file_is_written(mpirun, kernel, libiotune, tmp_path):
    d = tmp_path / "p.json.trace"
    d.mkdir()
    (d / "rank-1.json.gz").write_bytes(b"a previous run's")
    (d / "host-3.json.gz").write_bytes(b"a previous run's")
    proc = run(mpirun, libiotune, 2, [kernel("vpicio"), "--particles", 500], tmp_path, files="host")
    assert sorted(p.name for p in d.iterdir()) == ["host-0.json.gz"] and not proc.stderr
    assert [t["rank"] for t in iotrace.load(tmp_path / "p.json")] == [0, 1]


def test_a_host_file_that_cannot_be_written_falls_back_to_rank_files(mpirun, kernel, libiotune,
                                                                    tmp_path):  # fmt: skip
    d = tmp_path / "p.json.trace"
    (d / "host-0.json.gz").mkdir(parents=True)  # the leader cannot open it
    proc = run(mpirun, libiotune, 2, [kernel("vpicio"), "--particles", 500], tmp_path, files="host")
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "2 of 2 ranks could not go into their host's file" in lines[0]
    assert sorted(p.name for p in d.iterdir()) == ["host-0.json.gz", "rank-0.json.gz",
                                                   "rank-1.json.gz"]  # fmt: skip
    assert [t["version"] for t in iotrace.load(tmp_path / "p.json")] == [4, 4]


def test_rank_files_on_request(mpirun, kernel, libiotune, tmp_path):
    run(mpirun, libiotune, 2, [kernel("vpicio"), "--particles", 500], tmp_path, files="rank")
    d = tmp_path / "p.json.trace"
    assert sorted(p.name for p in d.iterdir()) == ["rank-0.json.gz", "rank-1.json.gz"]
