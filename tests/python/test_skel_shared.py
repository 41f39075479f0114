"""Skeletons of MPI-IO transfers through the shared file pointer (an outside tester's finding):
MPI_File_write_ordered, MPI_File_write_shared and their read counterparts have no offset in the
trace (reading the pointer would take communication), and the skeleton left the writes out and
read at offset 0: its file was the 32-byte header alone where the program's was 760 bytes. The
skeleton now makes the same calls (`shared: true`), so the shared pointer puts its records where
the program's went: the same file size, the same rank at each offset of the ordered records,
and the same MPI-IO calls per rank."""

import re
from pathlib import Path

import pytest
from test_skel import (
    _mpiio_calls,
    _profiled,
    _skeleton,
    build_hdf5_program,
    needs_cc,
    run_skeleton_traced,
)

from iotune.skel import cost
from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp
from iotune.skel import generate as gen

STEPS = 2
ORDERED = (100, 160)  # the program's MPI_File_write_ordered records of ranks 0 and 1
SHARED = (40, 80)  # and its MPI_File_write_shared ones


@pytest.fixture(scope="module")
def shared_program(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_shared")


def _owners(path: Path) -> list[int]:
    """Per byte of the file: 0 where the rank that wrote offset 0 wrote it (rank 0's first
    ordered record overwrote the header), else 1. The program writes rank + 1, a skeleton its
    own pattern per rank: only who wrote where is compared."""
    data = path.read_bytes()
    return [0 if b == data[0] else 1 for b in data]


def _assert_shared_pointer_layout(path: Path) -> None:
    """The layout the shared pointer gives: per step, rank 0's ordered record, rank 1's, then
    both ranks' shared records in either order."""
    owners = _owners(path)
    step = sum(ORDERED) + sum(SHARED)
    assert len(owners) == STEPS * step, (path, len(owners))
    for s in range(STEPS):
        at = s * step
        assert owners[at : at + ORDERED[0]] == [0] * ORDERED[0], (path, s)
        at += ORDERED[0]
        assert owners[at : at + ORDERED[1]] == [1] * ORDERED[1], (path, s)
        at += ORDERED[1]
        mixed = owners[at : at + sum(SHARED)]
        assert (mixed.count(0), mixed.count(1)) == SHARED, (path, s)


@needs_cc
def test_shared_pointer_transfers_are_made_through_the_shared_pointer(
    shared_program, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [shared_program, "s.dat", str(STEPS)], libiotune)
    _assert_shared_pointer_layout(orig / "s.dat")
    desc = fp.from_profile(str(prof), str(orig))
    written, read = desc["files"]
    assert read.get("open") == "existing"
    got = [(w.get("read"), w.get("shared"), w.get("offset"), w.get("size"), w["transfer"])
           for f in (written, read) for w in f["writes"]]  # fmt: skip
    ordered = (True, None, "100 + rank * 60", "collective")
    shared = (True, None, "40 + rank * 40", "independent")
    assert got == [
        (None, None, 0, 32, "independent"),  # rank 0's header, at an explicit offset
        *[(None, *ordered), (None, *shared)] * STEPS,
        *[(True, *ordered), (True, *shared)] * STEPS,
    ], got
    assert not [n for n in desc["notes"] if "offset" in n], desc["notes"]
    out = run_skeleton_traced(_skeleton(desc, tmp_path), tmp_path, libiotune)
    _assert_shared_pointer_layout(out / "s.dat")  # was 32 bytes: the writes were left out
    assert _mpiio_calls(out / "p.json") == _mpiio_calls(prof)


SHARED_DESC = """\
skel: 1
ranks: 2
files:
  - name: log.dat
    api: mpiio
    writes:
      - {shared: true, size: 8 + rank * 8, transfer: collective}
      - {shared: true, size: 4, transfer: independent, repeat: 3}
      - {shared: true, by_rank: {0: {size: 16}, 1: {size: 24}}, transfer: independent}
  - name: log.dat
    api: mpiio
    open: existing
    writes:
      - {read: true, shared: true, size: 8 + rank * 8, transfer: collective}
"""


def test_a_shared_pointer_entry_makes_the_shared_pointer_calls():
    d = dmod.parse_text(SHARED_DESC, "s.yaml")
    assert [w.shared for f in d.files for w in f.writes] == [True] * 4
    source = gen.skeleton_c(d, "s.yaml")
    assert source.count("skel_write_shared(f, nbytes, 1, active);") == 1  # write_ordered
    assert source.count("skel_write_shared(f, nbytes, 0, active);") == 2  # write_shared
    assert source.count("skel_read_shared(f, nbytes, 1, active);") == 1  # read_ordered
    # the bytes moved, written and read: rank 0's 8 + 3 * 4 + 16 + 8, rank 1's 16 + 12 + 24 + 16
    assert cost.estimate(d, 2).total_bytes == (8 + 12 + 16 + 8) + (16 + 12 + 24 + 16)


@pytest.mark.parametrize(
    "old, new, where",
    [
        ("{shared: true, size: 4,", "{shared: true, offset: 0, size: 4,", "writes[1].offset"),
        ("repeat: 3}", "repeat: 3, stride: 4}", "writes[1].stride"),
        ("{shared: true, size: 4,", "{shared: 1, size: 4,", "writes[1].shared"),
        ("{0: {size: 16}", "{0: {size: 16, offset: 8}", "writes[2].by_rank.0"),
        ("api: mpiio\n    writes", "api: posix\n    writes", "writes[0].shared"),
    ],
)
def test_a_bad_shared_pointer_entry_gives_one_message(old, new, where):
    text = SHARED_DESC.replace(old, new, 1)
    assert text != SHARED_DESC
    with pytest.raises(dmod.DescriptorError, match=re.escape(f"files[0].{where}")):
        dmod.parse_text(text, "s.yaml")


def test_shared_writes_of_one_size_in_a_row_are_one_entry_repeated():
    from iotune.skel import decomposition as dec

    w = {"shared": True, "size": 8, "transfer": "independent"}
    assert dec.compress([dict(w), dict(w), dict(w)]) == [dict(w, repeat=3)]


def test_large_count_calls_are_read_as_their_classic_ones():
    """MPICH 4 applications call MPI-4's large-count MPI-IO functions (MPI_File_write_at_all_c,
    ...): they are the same transfers (they were left out); a split collective's _end is no
    transfer of its own (it was read as a read of 0 bytes)."""
    from iotune.skel import trace_calls
    from iotune.skel.ops import ops_of

    def sig(func: str, size: int, step: int | None) -> dict:
        return {"func": func, "layer": "mpiio", "file": "a.dat", "size": size, "step": step,
                "mode": 1}  # fmt: skip

    funcs = [("MPI_File_write_at_all_c", 64, 0), ("MPI_File_write_shared_c", 8, None),
             ("MPI_File_read_all_begin", 64, 0), ("MPI_File_read_all_end", 0, None)]  # fmt: skip
    t = {"signatures": [sig(*f) for f in funcs], "datasets": [],
         "events": [[i, 1, float(i), 0.1, 0.1] for i in range(len(funcs))]}  # fmt: skip
    calls = trace_calls._calls(0, t).calls
    assert [c.func for c in calls] == [
        "MPI_File_write_at_all", "MPI_File_write_shared", "MPI_File_read_all_begin",
        "MPI_File_read_all_end"]  # fmt: skip
    ops = ops_of(trace_calls.Trace(0, [], calls), 1, {})
    assert [(op.kind, op.shared) for op in ops] == [
        ("write", False), ("write", True), ("read", False), ("other", False)]  # fmt: skip
