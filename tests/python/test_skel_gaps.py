"""The time an application spends between its I/O calls inside a step (issue 22: skeletons of
h5perf, PnetCDF and netCDF-4 programs, which check, pack or book-keep between their calls,
were faster than the programs): `from-profile` records it per write entry (`gap_s`), the
skeleton spends it after each call (CPU work over the data just transferred by default,
`--gaps sleep|off`), and its I/O is unchanged."""

from pathlib import Path

import pytest
from test_skel import (
    HDF5_PC,
    MPICC,
    _profile,
    _profiled,
    assert_same_bytes,
    build_hdf5_program,
    h5dump_structure,
    needs_cc,
)

from iotune.skel import decomposition as dec
from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp
from iotune.skel import generate as gen
from iotune.skel import run as runmod

GAP_S = 0.005  # tests/data/skel_gaps.c's work after each call (GAP_MS)


@pytest.fixture(scope="module")
def gaps_program(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_gaps")


def _data_entries(desc: dict) -> list[dict]:
    (f,) = [f for f in desc["files"] if f["name"] == "gaps.h5"]
    return [w for w in f["writes"] if "start" in w]


@needs_cc
def test_the_time_between_calls_is_described_and_spent(gaps_program, libiotune, tmp_path):
    orig, prof = _profiled(tmp_path, [gaps_program], libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    entries = _data_entries(desc)
    assert [(w.get("read", False), w.get("repeat")) for w in entries] == [(False, 8), (True, 8)]
    for w in entries:  # the program's 5 ms after each call (loose: a loaded machine)
        assert GAP_S * 0.9 <= w.get("gap_s", 0) <= 100 * GAP_S, entries
    text = fp.to_yaml(desc, "profile.json")
    d = dmod.parse_text(text, "skel.yaml")
    assert [w.gap_s for w in d.files[0].writes if w.start] == [w["gap_s"] for w in entries]
    gen.generate(d, str(tmp_path / "src"), "skel.yaml", pkg=HDF5_PC, cc=MPICC)
    source = (tmp_path / "src" / "skeleton.c").read_text()
    assert source.count("skel_gap(f, ") == 2 and "skel_gaps_default(s, SKEL_GAPS_BUSY)" in source
    skeleton = Path(runmod.build(str(tmp_path / "src")))
    for mode in ("busy", "sleep"):
        out = tmp_path / mode
        out.mkdir()
        got = _profile(out, [skeleton, "--gaps", mode], libiotune)
        # the same I/O: the file's structure and the bytes at every layer
        assert h5dump_structure(out / "gaps.h5") == h5dump_structure(orig / "gaps.h5")
        assert_same_bytes(prof, got, "gaps.h5", mode)
        # and the skeleton's own calls are as far apart (it waits at least that long)
        again = _data_entries(fp.from_profile(str(got), str(out)))
        for w, x in zip(entries, again, strict=True):
            assert x.get("gap_s", 0) >= 0.9 * w["gap_s"], (mode, again, entries)


def test_a_run_of_writes_keeps_its_typical_gap():
    """Writes differing by a stride become one entry whatever their gaps; the run's gap is the
    median of its writes' (the last one's, before another kind of call, may be longer)."""
    writes = [{"offset": 8 * i, "size": 8, "gap_s": g} for i, g in enumerate([0.001] * 4 + [0.5])]
    (w,) = dec.compress(writes)
    assert (w["repeat"], w["stride"], w["gap_s"]) == (5, 8, 0.001)
    (w,) = dec.compress([{"offset": 8 * i, "size": 8} for i in range(3)])
    assert "gap_s" not in w  # back to back: nothing to spend


def test_gaps_are_validated_and_optional():
    base = "skel: 1\nfiles:\n  - {name: r.dat, api: posix, writes: [{offset: 0, size: 8"

    def gap(text: str) -> float:
        return dmod.parse_text(base + text + "}]}\n", "d.yaml").files[0].writes[0].gap_s

    assert (gap(""), gap(", gap_s: 0.25")) == (0.0, 0.25)
    for bad in ("-1", "1.0e9", ".nan", "'0.1'", "true"):
        with pytest.raises(dmod.DescriptorError, match="gap_s"):
            gap(f", gap_s: {bad}")
    d = dmod.parse_text(base + "}]}\n", "d.yaml")
    assert "skel_gap(f" not in gen.skeleton_c(d, "d.yaml")  # no field: as before
    assert "SKEL_GAPS_OFF" in gen.skeleton_c(d, "d.yaml", gaps="off")
    with pytest.raises(ValueError):
        gen.skeleton_c(d, "d.yaml", gaps="spin")


def test_gaps_per_rank_and_only_after_calls_every_rank_makes():
    """A raw file: rank 0 writes a header alone, then both ranks write twice (collective),
    working after each write (rank 0 2 ms, rank 1 4 ms) before a sync. The writes' gap is the
    ranks' median; the header's (maybe a wait for rank 0 in an MPI call the trace does not
    show) is left out."""
    from iotune.skel.from_profile import Builder
    from iotune.skel.ops import Op

    def op(t0, t1, offset, func="MPI_File_write_at_all"):
        kind = "sync" if func == "MPI_File_sync" else "write"
        return Op(kind, func, "raw.dat", "mpiio", None, None, None, None, offset, 8,
                  func.endswith("_all"), t0, t1)  # fmt: skip

    def rank(r, work):
        calls = [op(0.0, 0.001, 0, "MPI_File_write_at")] if r == 0 else []
        for i, t in enumerate((0.05, 0.06)):
            calls.append(op(t, t + 0.001, 8 + 16 * i + 8 * r))
            calls.append(op(t + 0.001 + work, t + 0.002 + work, 0, "MPI_File_sync"))
        return calls

    b = Builder({"ranks": 2}, [], None)
    b.ranks = 2
    writes = b._writes("raw.dat", "mpiio", [rank(0, 0.002), rank(1, 0.004)], [])
    data = [w for w in writes if "size" in w]
    assert [w.get("when") for w in data][:1] == ["rank == 0"] and "gap_s" not in data[0], data
    assert [round(w["gap_s"], 6) for w in data[1:]] == [0.003], data
