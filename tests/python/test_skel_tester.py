"""An outside tester's programs (tests/data/skel_tester.c): a program that only reads a file it
did not write, a shared file pointer moved by MPI_File_seek_shared, an HDF5 file opened and
closed at every step, anonymous groups and datasets (H5Gcreate_anon, H5Dcreate_anon, H5Olink)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_mpi
from test_skel import (
    _h5dump_h,
    _profile,
    _profiled,
    _skeleton,
    build_hdf5_program,
    file_bytes,
    needs_cc,
    run_skeleton_traced,
)

from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp
from iotune.skel import trace_calls as tc


@pytest.fixture(scope="module")
def tester(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_tester")


@needs_cc
def test_a_program_that_only_reads_is_refused_in_one_line_naming_the_profile(
    tester, libiotune, tmp_path
):
    orig = tmp_path / "orig"
    orig.mkdir()
    run_mpi(2, [tester, "make", "in"], cwd=orig, timeout=120)  # its input, made untraced
    prof = _profile(orig, [tester, "read", "in"], libiotune)
    with pytest.raises(fp.FromProfileError) as e:
        fp.from_profile(str(prof), str(orig))
    msg = str(e.value)
    assert msg.startswith(f"{prof}: no skeleton") and "in.h5" in msg and "\n" not in msg, msg
    cli = subprocess.run(
        [sys.executable, "-m", "iotune", "skel", "from-profile", str(prof), "-o",
         str(tmp_path / "s.yaml")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 1 and cli.stderr.count("\n") == 1, cli.stderr
    assert str(prof) in cli.stderr and "s.yaml" not in cli.stderr, cli.stderr
    assert not (tmp_path / "s.yaml").exists()


def _raw_calls(profile: Path, name: str) -> list[list[tuple]]:
    """Per rank, the MPI-IO calls on the file ending in name: (function, offset, size)."""
    _, traces = tc.load_traces(str(profile))
    return [[(c.func, c.offset, c.size) for c in tr.calls
             if c.func.startswith("MPI_File") and (c.file or "").endswith(name)]
            for tr in traces]  # fmt: skip


@needs_cc
def test_a_seek_of_the_shared_file_pointer_is_made_and_transfers_land_after_it(
    tester, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [tester, "seek", "t", "3", "64"], libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    writes = desc["files"][0]["writes"]
    assert desc["steps"] == 3  # a loop: the seek moves by 64 KiB at every step
    assert [w["seek_shared"] for w in writes if "seek_shared" in w] == ["4096 + step * 65536"]
    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    assert (out / "t.dat").stat().st_size == (orig / "t.dat").stat().st_size == 135168 + 2 * 512
    assert (out / "t.dat").read_bytes()[64:4096] == bytes(4096 - 64)  # nothing before the seek
    want, got = _raw_calls(prof, "t.dat"), _raw_calls(out / "p.json", "t.dat")
    assert got == want and ("MPI_File_seek_shared", 69632, 0) in want[1], (got, want)


@pytest.mark.parametrize(
    "entry, where",
    [
        ("{seek_shared: rank * 8}", "writes[0].seek_shared"),  # collective: one offset
        ("{seek_shared: 8, when: rank == 0}", "writes[0]"),
        ("{seek_shared: -1}", "writes[0]"),
    ],
)
def test_a_bad_seek_shared_entry_gives_one_message(entry, where):
    head = "skel: 1\nranks: 2\nfiles:\n  - name: a.dat\n    api: mpiio\n"
    text = f"{head}    writes:\n      - {entry}\n"
    with pytest.raises(dmod.DescriptorError, match=re.escape(f"files[0].{where}")):
        dmod.parse_text(text, "s.yaml")
    hdf5 = text.replace("api: mpiio", "api: hdf5").replace("rank * 8", "8")
    with pytest.raises(dmod.DescriptorError, match=re.escape("files[0].writes[0]")):
        dmod.parse_text(hdf5, "s.yaml")


@needs_cc
def test_anonymous_groups_and_datasets_are_made_where_the_application_linked_them(
    tester, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [tester, "anon", "t", "1", "64"], libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    f = desc["files"][0]
    made = [(d["name"], d.get("anonymous", False)) for d in f["datasets"]]
    want = [("/g/d", False), ("/g/e", False), ("/linked", False), ("/(anonymous 3)", True)]
    assert made == want, made
    assert [w["dataset"] for w in f["writes"]] == [d for d, _ in made]  # none dropped
    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    assert _h5dump_h(out / "t.h5") == _h5dump_h(orig / "t.h5")
    want, got = file_bytes(prof, "t.h5"), file_bytes(out / "p.json", "t.h5")
    assert got["hdf5"] == want["hdf5"] == (2 * 4 * 64 * 8, 0), (got, want)


def _h5_opens(profile: Path, name: str) -> tuple[int, int]:
    """(opens, closes) of the file ending in name at the MPI-IO layer, all ranks."""
    for f in json.loads(profile.read_text())["files"]:
        if f["name"].endswith(name):
            return f["mpiio"]["opens"], f["mpiio"]["closes"]
    return 0, 0


@needs_cc
def test_an_hdf5_file_opened_at_every_step_is_opened_at_every_step_in_a_loop(
    tester, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [tester, "reopen", "t", "3", "64"], libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    assert desc["steps"] == 3
    got = [(f["name"], f.get("once"), f.get("each_step"), f.get("open")) for f in desc["files"]]
    assert got == [("t.h5", True, None, None), ("t.h5", None, True, "existing")], got
    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    assert _h5dump_h(out / "t.h5") == _h5dump_h(orig / "t.h5")  # every step's dataset
    assert _h5_opens(out / "p.json", "t.h5") == _h5_opens(prof, "t.h5") == (8, 8)
