"""Skeletons of files opened in ways that move bytes without moving data (issue 22's corpus:
HDF5's ph5example, netCDF-4): an empty HDF5 file made by some ranks only on a communicator of
theirs, a file opened again read-write only to read, datasets opened and not read, a dataset's
fill value (HDF5 writes it at allocation). The skeleton makes the same opens and sets the same
fill value, so that the bytes below HDF5 (superblock, object headers, fill) are the
original's."""

import json
import re
from pathlib import Path

import pytest
from test_skel import (
    HDF5_PC,
    MPICC,
    _profiled,
    _skeleton,
    build_hdf5_program,
    needs_cc,
    run_skeleton_traced,
)

from iotune import trace as iotrace
from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp
from iotune.skel import generate as gen
from iotune.skel.from_profile import Builder, Session


@pytest.fixture(scope="module")
def sessions_program(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_sessions")


def _per_file_layer(profile: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """(file name, layer) -> (bytes written, bytes read) over the run's HDF5 files."""
    out = {}
    for f in json.loads(profile.read_text())["files"]:
        name = f["name"].rsplit("/", 1)[-1]
        if name.endswith(".h5"):
            for layer in ("hdf5", "mpiio", "posix"):
                c = f.get(layer) or {}
                out[(name, layer)] = (c.get("bytes_written", 0), c.get("bytes_read", 0))
    return out


@needs_cc
def test_opens_without_data_are_made_as_the_application_made_them(
    sessions_program, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [sessions_program], libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    files = desc["files"]
    got = [(f["name"], f.get("when"), f.get("open"), f.get("readwrite"), f.get("remove"))
           for f in files]  # fmt: skip
    assert got == [
        ("empty.h5", "rank == 0", None, None, True),  # rank 0 alone, no dataset; deleted
        ("sessions.h5", None, None, None, None),
        ("sessions.h5", None, "existing", True, None),  # H5F_ACC_RDWR, only read
        ("sessions.h5", None, "existing", None, None),  # only datasets opened
        ("scratch.h5", None, None, None, True),  # removed (remove) by the rank that could
    ], files
    for f in files[2:4]:  # both datasets opened, the unread one too
        assert [(d["name"], d.get("exists")) for d in f["datasets"]] == [
            ("/data", True),
            ("/spare", True),
        ]
    # the fill value, traced in the file's type (big-endian), the skeleton's too
    traced = {d["name"]: d["fill"] for d in iotrace.load(str(prof))[0]["datasets"]}
    assert traced == {
        "/data": {"time": "ifset", "value": None},
        "/spare": {"time": "ifset", "value": "fffffff9"},
    }
    made = {d["name"]: d.get("fill_value") for d in files[1]["datasets"]}
    assert made == {"/data": None, "/spare": "fffffff9"}
    assert [d["type"] for d in files[1]["datasets"]] == ["int32", "int32be"]
    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    want, got = _per_file_layer(prof), _per_file_layer(out / "p.json")
    assert set(got) == set(want), (got, want)
    for key, (w, r) in want.items():
        gw, gr = got[key]
        assert abs(gw - w) <= 0.01 * w and abs(gr - r) <= 0.01 * r, (key, got, want)
    assert want[("empty.h5", "posix")][0] > 0  # the empty file's superblock was counted
    # the files the application removed are gone from the skeleton's directory too
    assert sorted(p.name for p in out.glob("*.h5")) == sorted(p.name for p in orig.glob("*.h5"))
    assert sorted(p.name for p in orig.glob("*.h5")) == ["sessions.h5"]


def _session(name: str, opener: str, ops: int) -> Session:
    return Session(name, "hdf5", [object()] * ops, opener, 2)  # type: ignore[list-item]


def test_a_file_only_some_ranks_open_gets_a_slot_of_its_own():
    """Rank 0 makes an empty a.h5 first (alone); then both ranks write a.h5 and b.h5: the
    extra session is matched to no other rank's, and the others pair up."""
    b = Builder({"ranks": 2}, [], None)
    r0 = [_session("a.h5", "H5Fcreate", 0), _session("a.h5", "H5Fcreate", 2),
          _session("b.h5", "H5Fcreate", 1)]  # fmt: skip
    r1 = [_session("a.h5", "H5Fcreate", 2), _session("b.h5", "H5Fcreate", 1)]
    slots = b._align([r0, r1])
    assert slots == [[r0[0], None], [r0[1], r1[0]], [r0[2], r1[1]]]
    # the same files in the same order pair one to one, whatever the sessions hold
    same = b._align([r0[1:], [_session("a.h5", "H5Fcreate", 0), r1[1]]])
    assert [[x is not None for x in s] for s in same] == [[True, True], [True, True]]


DESC = """\
skel: 1
ranks: 2
files:
  - name: a.h5
    when: rank == 0
    remove: true
  - name: b.h5
    datasets: [{name: /d, type: int32, dims: [4]}]
    writes: [{dataset: /d, start: [0], count: [4], when: rank == 0}]
  - name: b.h5
    open: existing
    readwrite: true
    datasets: [{name: /d, type: int32, dims: [4], exists: true}]
    writes: [{dataset: /d, start: [0], count: [4], read: true}]
"""


def test_when_and_readwrite_reach_the_generated_open(tmp_path):
    d = dmod.parse_text(DESC, "s.yaml")
    assert d.files[0].when is not None and d.files[2].readwrite
    gen.generate(d, str(tmp_path), "s.yaml", pkg=HDF5_PC, cc=MPICC)
    code = (tmp_path / "skeleton.c").read_text()
    assert "SKEL_OPEN_SUBSET, (rank == 0LL));" in code
    assert "if (skel_member(f0)) file_0(f0, step, rank, size);" in code
    assert 'skel_remove(s, "a.h5", 0);' in code  # removed after its last close
    reopen = next(ln for ln in code.splitlines() if "skel_open" in ln and "f2 =" in ln)
    assert "SKEL_OPEN_EXISTING" in reopen and "SKEL_OPEN_READONLY" not in reopen


@pytest.mark.parametrize(
    "old, new, where",
    [
        ("  - name: b.h5\n", "  - name: b.h5\n    readwrite: true\n", "needs open: existing"),
        ("    readwrite: true\n", "    readwrite: yes please\n", "files[2].readwrite"),
        ("    when: rank == 0\n", "    when: step == 0\n", "files[0].when: the ranks"),
        ("    when: rank == 0\n", "    when: nope + 1\n", "files[0].when"),
        ("    remove: true\n", "    remove: 1\n", "files[0].remove"),
    ],
)
def test_a_bad_file_when_or_readwrite_gives_one_message(old, new, where):
    with pytest.raises(dmod.DescriptorError, match=re.escape(where)):
        dmod.parse_text(DESC.replace(old, new, 1), "s.yaml")


def test_a_fill_value_reaches_the_generated_dataset_and_a_bad_one_is_refused(tmp_path):
    text = DESC.replace("dims: [4]}]\n    writes: [{dataset: /d, start: [0], count: [4], when",
                        "dims: [4], fill_value: f9ffffff}]\n    writes: [{dataset: /d, start: [0], "
                        "count: [4], when", 1)  # fmt: skip
    d = dmod.parse_text(text, "s.yaml")
    assert d.files[1].datasets[0].fill_value == "f9ffffff"
    gen.generate(d, str(tmp_path), "s.yaml", pkg=HDF5_PC, cc=MPICC)
    assert ', -1, -1, "f9ffffff", -1, -1);' in (tmp_path / "skeleton.c").read_text()
    for bad in ("f9ffff", "f9ffffzz", "12345678901"):
        with pytest.raises(dmod.DescriptorError, match=re.escape("datasets[0].fill_value")):
            dmod.parse_text(text.replace("f9ffffff", bad), "s.yaml")


def test_ranks_that_select_nothing_beside_ranks_that_select_a_box():
    """netCDF-4's test.nc (tst_parallel3): rank 0 appends nothing to an unlimited variable
    (no box in the trace), rank 1 one element: rank 1 keeps its box (its 4 bytes were lost),
    rank 0 an empty selection of the dataset's rank."""
    from iotune.skel import decomposition as dec
    from iotune.skel.ops import Op

    def op(start, count, size):
        return Op("write", "H5Dwrite", "test.nc", "hdf5", "/vertex", None, start, count, None,
                  size, True, 0.0, 0.0)  # fmt: skip

    entry = {"name": "/vertex", "dims": [2, 1]}
    notes: list[str] = []
    ops = [op(None, None, 0), op([1, 0], [1, 1], 4)]
    w = dec.selection([0, 1], ops, (entry, [2, 1]), 2, dec.Blocks(), notes.append)
    assert w == {"by_rank": {0: {"start": [0, 0], "count": [0, 0]},
                             1: {"start": [1, 0], "count": [1, 1]}}}, w  # fmt: skip
    assert notes == []


def test_a_file_some_ranks_write_and_others_only_open_stays_one_session():
    """Rank 0 writes a log of its own first, then a header into a file every rank opens: the
    shared file's sessions (rank 0's with a write, rank 1's without) are one slot, opened
    together, not two files made one after the other."""
    b = Builder({"ranks": 2}, [], None)
    r0 = [_session("log.txt", "open", 1), _session("h.h5", "H5Fcreate", 1)]
    r1 = [_session("h.h5", "H5Fcreate", 0)]
    assert b._align([r0, r1]) == [[r0[0], None], [r0[1], r1[0]]]
