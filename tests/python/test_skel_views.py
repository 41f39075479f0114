"""Skeletons of MPI-IO writes through file views as PnetCDF makes them (issue 22): explicit-offset
writes (MPI_File_write_at_all) through a subarray view, and a view of more blocks than the trace
lists one by one. The trace records such a view as runs of blocks, the descriptor keeps the view
with `at` (where in it the write starts) and the runs as [offset, length, count, stride], and
the skeleton's file and its POSIX writes are the original's. Before, such writes were written
as contiguous bytes at the first byte's offset (overlapping, and faster: pnetcdf-transpose's
skeleton took 0.22x of the original's I/O time)."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import BUILD, REPO, mpi_info, run_mpi

from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp
from iotune.skel import generate as gen
from iotune.skel import run as runmod
from iotune.skel import views

MPICC = mpi_info(BUILD).get("mpicc") or "mpicc"
needs_cc = pytest.mark.skipif(not shutil.which(MPICC) or not shutil.which("make"),
                              reason="mpicc, make")  # fmt: skip


def test_position_in_a_view_is_found_from_the_file_offset():
    # two blocks per tile of 100 bytes, 30 bytes of data per tile, displacement 1000
    v = {"disp": 1000, "size": 30, "lb": 0, "extent": 100, "blocks": [[10, 10], [50, 20]]}
    assert views.position(v, 1010) == 0
    assert views.position(v, 1055) == 15
    assert views.position(v, 1210) == 60  # third tile's first block
    assert views.position(v, 1030) is None  # in no block
    runs = {"disp": 0, "size": 512 + 40, "lb": 0, "extent": 10**6,
            "blocks": None, "runs": [[0, 512, 1, 0], [4096, 10, 4, 100]]}  # fmt: skip
    assert views.layout(runs) == [[0, 512], [4096, 10, 4, 100]]
    assert views.position(runs, 4096) == 512 and views.position(runs, 4305) == 541
    assert views.contiguous({"disp": 8, "size": 4, "lb": 0, "extent": 4, "blocks": [[0, 4]]})
    assert not views.contiguous(v)


def test_runs_in_a_descriptor_view_are_read_and_checked():
    text = """\
skel: 1
ranks: 2
files:
  - name: v.dat
    api: mpiio
    writes:
      - offset: 512
        size: 8192
        transfer: collective
        view: {lb: 0, extent: 1048576, at: rank * 4096, blocks: [[rank * 128, 128, 64, 256]]}
"""
    d = dmod.parse_text(text, "v.yaml")
    view = d.files[0].writes[0].view
    assert len(view.blocks[0]) == 4 and view.at is not None
    bad = text.replace("128, 64, 256", "128, 64")
    with pytest.raises(dmod.DescriptorError, match=r"blocks\[0\]"):
        dmod.parse_text(bad, "v.yaml")
    with pytest.raises(dmod.DescriptorError, match="negative"):
        dmod.parse_text(text.replace("at: rank * 4096", "at: rank - 1"), "v.yaml")


def _posix(profile: Path, name: str) -> dict:
    files = json.loads(profile.read_text())["files"]
    (f,) = [f for f in files if f["name"].endswith(name) and "mpiio" in f]
    keys = ("writes", "bytes_written", "first_offset", "last_offset")
    mpiio = {"mpiio_bytes": f["mpiio"]["bytes_written"], "set_views": f["mpiio"]["set_views"]}
    return {k: f["posix"][k] for k in keys} | mpiio


@needs_cc
def test_write_at_through_subarray_views_is_reproduced(libiotune, tmp_path):
    exe = tmp_path / "skel_view_at"
    subprocess.run([MPICC, "-O1", "-o", str(exe), str(REPO / "tests/data/skel_view_at.c")],
                   check=True, timeout=120)  # fmt: skip
    orig = tmp_path / "orig"
    orig.mkdir()
    prof = orig / "profile.json"
    env = {"IOTUNE_PROFILE": str(prof), "IOTUNE_TRACE": "1",
           "IOTUNE_SESSION": f"test-skel-view-at-{os.getpid()}"}  # fmt: skip
    run_mpi(2, [exe, "view_at.dat"], env=env, cwd=orig, preload=libiotune, timeout=120)
    desc = fp.from_profile(str(prof), str(orig))
    (f,) = desc["files"]
    viewed = [w for w in f["writes"] if "view" in w or "by_rank" in w]
    # the last through a contiguous view: kept, so that the skeleton sets it too
    assert len(viewed) == 4, f["writes"]
    ats = [(w.get("view") or w["by_rank"][0]["view"]).get("at") for w in viewed]
    assert ats[0] == 0 and ats[1] not in (0, None) and ats[2] == 0 and ats[3] == "rank * 256"
    first = viewed[0].get("view") or viewed[0]["by_rank"][0]["view"]
    assert any(len(b) == 4 for b in first["blocks"])  # 4,096 blocks: recorded as runs
    d = dmod.parse_text(fp.to_yaml(desc, "profile.json"), "skel.yaml")
    gen.generate(d, str(tmp_path / "src"), "skel.yaml", cc=MPICC)
    skeleton = Path(runmod.build(str(tmp_path / "src")))
    out = tmp_path / "out"
    out.mkdir()
    sprof = tmp_path / "skel.json"
    env = {"IOTUNE_PROFILE": str(sprof), "IOTUNE_SESSION": f"test-skel-view-at-s-{os.getpid()}"}
    run_mpi(2, [skeleton, "--dir", out, "--timing", tmp_path / "t.json"], env=env,
            preload=libiotune, timeout=120)  # fmt: skip
    assert (out / "view_at.dat").stat().st_size == (orig / "view_at.dat").stat().st_size
    assert _posix(sprof, "view_at.dat") == _posix(prof, "view_at.dat")
