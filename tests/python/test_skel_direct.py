"""Skeletons of direct chunk transfers (H5Dwrite_chunk, H5Dread_chunk: h5py's
write_direct_chunk) and of serial HDF5 files (issue 22): the trace records each chunk's offset,
stored size and filter mask, the descriptor keeps them (`direct: true`, `size`, `filter_mask`)
with the file's driver (`serial: true`) and the dataset's fill and allocation times, and the
skeleton writes chunks of the same stored sizes that read back through the dataset's filters."""

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import BUILD, REPO, mpi_info, run_mpi

from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp
from iotune.skel import generate as gen
from iotune.skel import h5layout
from iotune.skel import run as runmod

HDF5_PC = "hdf5-mpich"
MPICC = mpi_info(BUILD).get("mpicc") or "mpicc"


def _have_toolchain() -> bool:
    import shutil

    if not all(shutil.which(x) for x in (MPICC, "make", "pkg-config", "h5dump")):
        return False
    return subprocess.run(["pkg-config", "--exists", HDF5_PC, "zlib"]).returncode == 0


needs_cc = pytest.mark.skipif(not _have_toolchain(), reason="mpicc, make, h5dump, hdf5, zlib")

DIRECT = """\
skel: 1
name: direct
ranks: 1
files:
  - name: c.h5
    serial: true
    datasets:
      - name: /d
        type: uint16
        dims: [64, 64]
        chunks: [16, 64]
        filters: [shuffle, deflate=4, fletcher32]
        fill_time: alloc
        alloc_time: incr
    writes:
      - {dataset: /d, start: [0, 0], count: [16, 64], direct: true, size: 700}
      - {dataset: /d, start: [16, 0], count: [16, 64], direct: true, size: 2}
      - {dataset: /d, start: [32, 0], count: [16, 64], direct: true, size: 2048, filter_mask: 2}
      - {dataset: /d, start: [0, 0], count: [16, 64], direct: true, size: 700, read: true}
      - {dataset: /d, start: [0, 0], count: [64, 64], read: true, transfer: independent}
"""


def test_direct_writes_are_read_and_checked():
    d = dmod.parse_text(DIRECT, "d.yaml")
    w = d.files[0].writes
    assert [x.direct for x in w] == [True, True, True, True, False]
    assert [x.filter_mask for x in w[:3]] == [0, 0, 2] and d.files[0].serial
    assert (d.files[0].datasets[0].fill_time, d.files[0].datasets[0].alloc_time) == (
        "alloc",
        "incr",
    )
    bad = {
        "size: 700}": ("size: -1}", "chunk size -1 negative"),
        "direct: true, size: 2048": ("size: 2048", "needs direct: true"),  # filter_mask alone
        "chunks: [16, 64]\n": ("\n", "filters need chunks"),
        "fill_time: alloc": ("fill_time: sometimes", "expected one of alloc, never, ifset"),
        "serial: true": ("serial: 1", "expected true or false"),
    }
    for old, (new, message) in bad.items():
        text = DIRECT.replace(old, new, 1)
        with pytest.raises(dmod.DescriptorError, match=re.escape(message)):
            dmod.parse_text(text, "d.yaml")
    not_chunked = DIRECT.replace("        chunks: [16, 64]\n        filters: [shuffle, deflate=4, "
                                 "fletcher32]\n", "")  # fmt: skip
    with pytest.raises(dmod.DescriptorError, match="is not chunked"):
        dmod.parse_text(not_chunked, "d.yaml")
    raw = "skel: 1\nfiles:\n  - {name: r.dat, api: posix, serial: true}\n"
    with pytest.raises(dmod.DescriptorError, match="serial"):
        dmod.parse_text(raw, "d.yaml")


def test_a_version_1_timing_file_has_no_read_part(tmp_path):
    """Timing files of skeletons generated before reads had their part (4 columns) still load:
    their read part is 0 (their reads are in write)."""
    old = tmp_path / "t.json"
    old.write_text('{"schema": "iotune-skel-timing", "version": 1, "skeleton": "x", '
                   '"method": "native", "ranks": 1, "per_rank": [{"rank": 0, '
                   '"steps": [[0.1, 0.0, 0.2, 0.01], [0.1, 0.0, 0.3, 0.01]]}]}')  # fmt: skip
    (totals,) = runmod.per_rank_totals(runmod.load_timing(str(old)))
    assert totals["read"] == 0 and totals["write"] == pytest.approx(0.5)
    assert totals["total"] == pytest.approx(0.72)
    old.write_text(old.read_text().replace("0.01]]", "0.01, 0.0, 1.0]]"))  # 6 columns
    with pytest.raises(runmod.RunError, match="not a skeleton timing file"):
        runmod.load_timing(str(old))


def _stored_sizes(path: Path) -> int:
    """The dataset's stored bytes (h5dump -p: SIZE)."""
    out = subprocess.run(["h5dump", "-H", "-p", str(path)], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    return int(re.search(r"SIZE (\d+)", out).group(1))


@needs_cc
def test_the_skeletons_chunks_have_the_stored_sizes_and_read_back_through_the_filters(tmp_path):
    """Zeros as shuffle, deflate and fletcher32 store them, padded to the recorded size (or
    the whole zlib stream when the size is below it; filters masked are skipped): the
    skeleton's H5Dread_chunk and H5Dread work, h5dump reads the data (checksum right) as zeros,
    and the dataset keeps the fill and allocation times of the descriptor."""
    d = dmod.parse_text(DIRECT, "d.yaml")
    gen.generate(d, str(tmp_path / "src"), "d.yaml", pkg=HDF5_PC, cc=MPICC)
    skeleton = Path(runmod.build(str(tmp_path / "src")))
    out = tmp_path / "out"
    out.mkdir()
    run_mpi(1, [skeleton, "--dir", out, "--timing", tmp_path / "t.json"], timeout=120)
    t = runmod.load_timing(str(tmp_path / "t.json"))
    assert t["version"] == 2 and t["parts"] == list(runmod.PARTS)
    (totals,) = runmod.per_rank_totals(t)
    assert totals["read"] > 0 and totals["write"] > 0  # reads are their own part
    stored = _stored_sizes(out / "c.h5")
    assert 700 + 2048 < stored < 700 + 2048 + 100  # the second: its stream, a few dozen bytes
    layout = h5layout.read(str(out / "c.h5"))["datasets"]["/d"]
    assert (layout["fill_time"], layout["alloc_time"]) == ("alloc", "incr")
    values = subprocess.run(["h5dump", "-d", "/d", "-s", "0,0", "-c", "48,64", str(out / "c.h5")],
                            capture_output=True, text=True)  # fmt: skip
    assert values.returncode == 0, values.stderr
    data = values.stdout.split("DATA {")[1]
    assert set(re.findall(r"\b\d+\b", re.sub(r"\(\d+,\d+\):", "", data))) == {"0"}


@pytest.fixture(scope="module")
def direct_program(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("direct") / "skel_direct"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", HDF5_PC, "zlib"],
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    subprocess.run([MPICC, "-O1", "-o", str(out), str(REPO / "tests/data/skel_direct.c"), *flags],
                   check=True, timeout=120)  # fmt: skip
    return out


@needs_cc
def test_direct_chunk_writes_are_traced_and_made_with_their_stored_sizes(
    direct_program, libiotune, tmp_path
):
    """A program that writes chunks directly into a serial file per rank (sizes differing by
    rank, one chunk with its filter skipped): the skeleton's files have its structure (h5dump
    -H -p, fill and allocation times included) and its stored bytes."""
    orig = tmp_path / "orig"
    orig.mkdir()
    prof = orig / "profile.json"
    env = {"IOTUNE_PROFILE": str(prof), "IOTUNE_TRACE": "1",
           "IOTUNE_SESSION": f"test-skel-direct-{os.getpid()}"}  # fmt: skip
    run_mpi(2, [direct_program], env=env, cwd=orig, preload=libiotune, timeout=120)
    desc = fp.from_profile(str(prof), str(orig))
    (f,) = desc["files"]
    assert f["name"] == "direct_{rank}.h5" and f["serial"] is True
    assert f["datasets"][0]["fill_time"] == "alloc" and "alloc_time" not in f["datasets"][0]
    direct = [w for w in f["writes"] if w.get("direct") and not w.get("read")]
    assert len(direct) == 7  # chunks 0-2 per rank (sizes differ), chunk 3 on both
    assert [w.get("filter_mask", 0) for w in direct].count(1) == 1
    assert any(w.get("direct") and w.get("read") for w in f["writes"])
    text = fp.to_yaml(desc, "profile.json")
    d = dmod.parse_text(text, "skel.yaml")
    gen.generate(d, str(tmp_path / "src"), "skel.yaml", pkg=HDF5_PC, cc=MPICC)
    skeleton = Path(runmod.build(str(tmp_path / "src")))
    out = tmp_path / "out"
    out.mkdir()
    run_mpi(2, [skeleton, "--dir", out, "--timing", tmp_path / "t.json"], timeout=120)
    for r in range(2):
        name = f"direct_{r}.h5"
        assert h5layout.read(str(out / name)) == h5layout.read(str(orig / name)), name
        assert _stored_sizes(out / name) == _stored_sizes(orig / name), name


@needs_cc
def test_extended_datasets_are_extended_by_the_skeleton_before_its_writes(libiotune, tmp_path):
    """tests/data/zero_extend.c (as netCDF-4 appends along an unlimited dimension): datasets
    created empty, then H5Dset_extent and a collective write past the old extent, 3 times. The
    trace has the extents, the descriptor `extent` entries in call order, and the skeleton's
    file has the original's h5dump -H -p (final extents included); without them its first
    write fails (dataspace out of range)."""
    exe = tmp_path / "zero_extend"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", HDF5_PC], capture_output=True,
                           text=True, check=True).stdout.split()  # fmt: skip
    subprocess.run([MPICC, "-O1", "-o", str(exe), str(REPO / "tests/data/zero_extend.c"), *flags],
                   check=True, timeout=120)  # fmt: skip
    orig = tmp_path / "orig"
    orig.mkdir()
    prof = orig / "profile.json"
    env = {"IOTUNE_PROFILE": str(prof), "IOTUNE_TRACE": "1",
           "IOTUNE_SESSION": f"test-skel-extend-{os.getpid()}"}  # fmt: skip
    run_mpi(2, [exe, "zero.h5"], env=env, cwd=orig, preload=libiotune, timeout=120)
    desc = fp.from_profile(str(prof), str(orig))
    writes = desc["files"][0]["writes"]
    extents = [(w["dataset"], w["extent"]) for w in writes if "extent" in w]
    assert extents == [(name, [n, 4][: 1 if name == "/appended" else 2])
                       for n in (1024, 2048, 3072) for name in ("/appended", "/rows")]  # fmt: skip
    rows = [w for w in writes if w.get("dataset") == "/rows" and "start" in w]
    assert [w["start"] for w in rows] == [["rank * 512", 0], ["1024 + rank * 512", 0],
                                          ["2048 + rank * 512", 0]]  # fmt: skip
    d = dmod.parse_text(fp.to_yaml(desc, "profile.json"), "skel.yaml")
    gen.generate(d, str(tmp_path / "src"), "skel.yaml", pkg=HDF5_PC, cc=MPICC)
    skeleton = Path(runmod.build(str(tmp_path / "src")))
    out = tmp_path / "out"
    out.mkdir()
    run_mpi(2, [skeleton, "--dir", out, "--timing", tmp_path / "t.json"], timeout=120)
    assert h5layout.read(str(out / "zero.h5")) == h5layout.read(str(orig / "zero.h5"))
    bad = fp.to_yaml(desc, "p.json").replace("extent: [3072, 4]", "extent: [3072, 5]", 1)
    with pytest.raises(dmod.DescriptorError, match="beyond maxdims"):
        dmod.parse_text(bad, "skel.yaml")
