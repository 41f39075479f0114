"""An outside tester's programs (tests/data/skel_tester.c): programs that read an input they did
not write (only, or then writing an output; HDF5 and MPI-IO), a shared file pointer moved by
MPI_File_seek_shared, an HDF5 file opened and closed at every step, anonymous groups and
datasets (H5Gcreate_anon, H5Dcreate_anon, H5Olink)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_mpi
from test_skel import (
    HDF5_PC,
    MPICC,
    _h5dump_h,
    _profile,
    _profiled,
    _skeleton,
    build_hdf5_program,
    file_bytes,
    h5dump_structure,
    needs_cc,
    run_skeleton_traced,
)

from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp
from iotune.skel import generate as gen
from iotune.skel import run as runmod
from iotune.skel import trace_calls as tc


@pytest.fixture(scope="module")
def tester(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_tester")


def _reads(profile: Path, suffix: str) -> dict[str, int]:
    """layer -> bytes read of the profile's file ending in suffix."""
    return {layer: r for layer, (_, r) in file_bytes(profile, suffix).items()}


def _input_of(tester: Path, tmp_path: Path, mode: str, libiotune: Path) -> tuple[Path, Path]:
    """(directory, profile) of the tester's mode run on its input in.h5 / in.dat, made untraced
    before (`make`)."""
    orig = tmp_path / "orig"
    orig.mkdir()
    run_mpi(2, [tester, "make", "in"], cwd=orig, timeout=120)
    return orig, _profile(orig, [tester, mode, "in"], libiotune)


@needs_cc
def test_a_program_that_only_reads_gets_its_input_made_untimed_and_reads_it(
    tester, libiotune, tmp_path
):
    orig, prof = _input_of(tester, tmp_path, "read", libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    got = [(f["name"], f.get("input"), f.get("open")) for f in desc["files"]]
    assert got == [("in.h5", True, None), ("in.h5", None, "existing")], got
    assert [d["name"] for d in desc["files"][0]["datasets"]] == ["/x"]
    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    assert _reads(out / "p.json", "in.h5") == _reads(prof, "in.h5"), _reads(prof, "in.h5")
    assert _reads(prof, "in.h5")["hdf5"] == 2 * 64 * 8
    timing = json.loads((tmp_path / "t.json").read_text())
    assert timing["bytes"] == 0  # the input's writes are no step's (they were 1024)
    assert all(step[2] < 0.5 for r in timing["per_rank"] for step in r["steps"])
    cli = subprocess.run(
        [sys.executable, "-m", "iotune", "skel", "from-profile", str(prof), "-o",
         str(tmp_path / "s.yaml")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 0 and (tmp_path / "s.yaml").exists(), cli.stderr


@needs_cc
def test_a_program_reading_an_input_and_writing_an_output_reads_an_input_of_its_layout(
    tester, libiotune, tmp_path
):
    orig, prof = _input_of(tester, tmp_path, "transform", libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    names = [(f["name"], f.get("input", False)) for f in desc["files"]]
    assert names == [("in.h5", True), ("in.h5", False), ("in_out.h5", False)], names
    made = [(w["attribute"], w["object"]) for w in desc["files"][0]["writes"] if "attribute" in w]
    assert made == [("create", "/x"), ("write", "/x")]  # the attribute it opened and read
    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    # the input as the application's: a double vector with its attribute and a chunked 2-D
    # int16 dataset with an unlimited dimension (the trace's), and the output
    assert _h5dump_h(out / "in.h5") == _h5dump_h(orig / "in.h5")
    assert h5dump_structure(out / "in.h5") == h5dump_structure(orig / "in.h5")
    assert _h5dump_h(out / "in_out.h5") == _h5dump_h(orig / "in_out.h5")
    assert _reads(out / "p.json", "in.h5") == _reads(prof, "in.h5")
    assert file_bytes(out / "p.json", "in_out.h5") == file_bytes(prof, "in_out.h5")


@needs_cc
def test_a_raw_input_read_through_mpiio_is_made_up_to_its_furthest_read(
    tester, libiotune, tmp_path
):
    orig, prof = _input_of(tester, tmp_path, "rawread", libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    assert [f.get("input") for f in desc["files"]] == [True, None]
    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    assert (out / "in.dat").stat().st_size == (orig / "in.dat").stat().st_size == 1024
    assert _reads(out / "p.json", "in.dat") == _reads(prof, "in.dat")


@needs_cc
def test_an_input_whose_size_the_trace_lacks_is_said_in_one_line(tester, libiotune, tmp_path):
    orig, prof = _input_of(tester, tmp_path, "sharedread", libiotune)
    with pytest.raises(fp.FromProfileError) as e:
        fp.from_profile(str(prof), str(orig))
    msg = str(e.value)
    assert msg.startswith(f"{prof}: no skeleton") and "\n" not in msg, msg
    assert "in.dat" in msg and "shared file pointer" in msg and "size" in msg, msg
    cli = subprocess.run(
        [sys.executable, "-m", "iotune", "skel", "from-profile", str(prof), "-o",
         str(tmp_path / "s.yaml")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 1 and cli.stderr.count("\n") == 1, cli.stderr
    assert str(prof) in cli.stderr and not (tmp_path / "s.yaml").exists()


@needs_cc
def test_a_program_that_only_reads_through_posix_is_refused_in_one_line(
    tester, libiotune, tmp_path
):
    orig, prof = _input_of(tester, tmp_path, "posixread", libiotune)
    with pytest.raises(fp.FromProfileError) as e:
        fp.from_profile(str(prof), str(orig))
    msg = str(e.value)
    assert msg.startswith(f"{prof}: no skeleton") and "in.dat" in msg and "POSIX" in msg, msg
    assert "\n" not in msg


@pytest.mark.parametrize("extra", ["open: existing", "once: true", "when: rank == 0", "input: 1"])
def test_a_bad_input_entry_gives_one_message(extra):
    text = (
        "skel: 1\nranks: 2\nfiles:\n  - name: a.dat\n    api: mpiio\n    input: true\n"
        f"    {extra}\n    writes:\n      - {{offset: 0, size: 8}}\n"
    ).replace("    input: true\n    input: 1", "    input: 1")
    with pytest.raises(dmod.DescriptorError, match=re.escape("files[0].input")):
        dmod.parse_text(text, "s.yaml")


@needs_cc
def test_a_raw_write_sized_by_the_job_size_uses_the_job_size(tmp_path):
    """`size` in a raw write's offset or size is the job's (the generated C declared a local
    `size` for the write's length, and the expressions read it)."""
    text = (
        "skel: 1\nranks: 2\nfiles:\n  - name: a.dat\n    api: mpiio\n    writes:\n"
        "      - {offset: rank * size * 8, size: size * 8, transfer: collective}\n"
    )
    d = dmod.parse_text(text, "s.yaml")
    gen.generate(d, str(tmp_path / "src"), "s.yaml", pkg=HDF5_PC, cc=MPICC)
    skeleton = Path(runmod.build(str(tmp_path / "src")))
    out = tmp_path / "out"
    out.mkdir()
    run_mpi(2, [skeleton, "--dir", out, "--timing", tmp_path / "t.json"], timeout=120)
    assert (out / "a.dat").stat().st_size == 2 * 2 * 8


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


@needs_cc
def test_anonymous_objects_nested_in_an_anonymous_group_land_at_their_path(
    tester, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [tester, "nested", "t", "1", "64"], libiotune)
    _, traces = tc.load_traces(str(prof))
    # one entry per dataset, at its path (the nested ones were at the root: /inner/d, /e, /a)
    want = ["/outer/inner/d", "/outer/inner/e", "/outer/inner/a"]
    assert [[d["name"] for d in tr.datasets] for tr in traces] == [want, want]
    desc = fp.from_profile(str(prof), str(orig))
    f = desc["files"][0]
    assert [d["name"] for d in f["datasets"]] == want
    assert [w["dataset"] for w in f["writes"]] == want
    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    assert _h5dump_h(out / "t.h5") == _h5dump_h(orig / "t.h5")


@needs_cc
def test_a_nested_anonymous_group_is_traced_as_made_without_the_file_at_hand(
    tester, libiotune, tmp_path
):
    """The groups come from the trace (H5Gcreate at the outer group's link), not h5dump."""
    orig, prof = _profiled(tmp_path, [tester, "nested", "t", "1", "64"], libiotune)
    desc = fp.from_profile(str(prof), str(tmp_path / "elsewhere"))
    assert desc["files"][0]["groups"] == ["/outer", "/outer/inner"]


@needs_cc
def test_writes_after_seeks_of_any_whence_land_where_the_programs_did(tester, libiotune, tmp_path):
    """MPI_File_seek with MPI_SEEK_SET, _CUR and _END, without a view and under one with a
    displacement: the traced offsets of the writes that follow are the file's (the pointer's
    byte offset). Without a view they were packed in rank order from the lowest; under the view
    every write landed at its start (the skeleton sets the view again before each write); in
    the file opened again (the default view) they went through the earlier session's view."""
    orig, prof = _profiled(tmp_path, [tester, "seekpos", "t", "1", "64"], libiotune)
    skeleton = _skeleton(fp.from_profile(str(prof), str(orig)), tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)

    def placed(profile: Path) -> list[list[tuple]]:
        return [[(o, s) for f, o, s in calls if "write" in f]
                for calls in _raw_calls(profile, "t.dat")]  # fmt: skip

    want = placed(prof)
    assert want[1] == [(528, 64), (632, 64), (704, 64), (5136, 64), (5240, 64), (5312, 64),
                       (2112, 64)]  # fmt: skip
    assert placed(out / "p.json") == want
    assert (out / "t.dat").stat().st_size == (orig / "t.dat").stat().st_size


@needs_cc
def test_an_input_of_each_step_is_made_for_every_step_before_the_first(tmp_path):
    text = (
        "skel: 1\nranks: 2\nsteps: 3\nfiles:\n"
        "  - name: in_{step}.dat\n    api: mpiio\n    input: true\n"
        "    writes: [{offset: rank * 100, size: 100, transfer: collective}]\n"
        "  - name: in_{step}.dat\n    api: mpiio\n    open: existing\n"
        "    writes: [{offset: rank * 100, size: 100, read: true, transfer: collective}]\n"
    )
    d = dmod.parse_text(text, "s.yaml")
    gen.generate(d, str(tmp_path / "src"), "s.yaml", pkg=HDF5_PC, cc=MPICC)
    skeleton = Path(runmod.build(str(tmp_path / "src")))
    out = tmp_path / "out"
    out.mkdir()
    run_mpi(2, [skeleton, "--dir", out, "--timing", tmp_path / "t.json"], timeout=120)
    assert sorted(p.name for p in out.glob("in_*")) == ["in_0.dat", "in_1.dat", "in_2.dat"]
    assert all(p.stat().st_size == 200 for p in out.glob("in_*"))
    timing = json.loads((tmp_path / "t.json").read_text())
    assert timing["bytes"] == 0 and timing["steps"] == 3


@needs_cc
def test_an_input_of_a_dataset_per_step_has_every_steps_dataset(tmp_path):
    """One input file holding a dataset per step (/s{step}/x) beside one of no step (/c): both
    steps' datasets are made, /c once (the input was made at step 0 only: the reads of /s1/x
    found no dataset)."""
    data = (
        "    datasets:\n"
        "      - {name: '/s{step}/x', type: float64, dims: [8 * size]EX}\n"
        "      - {name: /c, type: int32, dims: [4]EX}\n"
    )
    text = (
        "skel: 1\nranks: 2\nsteps: 2\nfiles:\n"
        "  - name: in.h5\n    input: true\n" + data.replace("EX", "") + "    writes:\n"
        "      - {dataset: '/s{step}/x', start: [rank * 8], count: [8], transfer: collective}\n"
        "      - {dataset: /c, start: [0], count: [4], when: rank == 0, once: true}\n"
        "  - name: in.h5\n    open: existing\n" + data.replace("EX", ", exists: true")
        + "    writes:\n"
        "      - {dataset: '/s{step}/x', start: [rank * 8], count: [8], read: true}\n"
        "      - {dataset: /c, start: [0], count: [4], read: true}\n"
    )  # fmt: skip
    d = dmod.parse_text(text, "s.yaml")
    gen.generate(d, str(tmp_path / "src"), "s.yaml", pkg=HDF5_PC, cc=MPICC)
    skeleton = Path(runmod.build(str(tmp_path / "src")))
    out = tmp_path / "out"
    out.mkdir()
    run_mpi(2, [skeleton, "--dir", out, "--timing", tmp_path / "t.json"], timeout=120)
    dump = "\n".join(_h5dump_h(out / "in.h5"))
    assert all(f'"{x}"' in dump for x in ("s0", "s1", "x", "c")), dump


def _objects(path: Path) -> list[str]:
    """The objects of an HDF5 file: h5ls -r's lines (path and kind, no sizes)."""
    got = subprocess.run(["h5ls", "-r", str(path)], capture_output=True, text=True, check=True)
    return sorted(" ".join(line.split()[:2]) for line in got.stdout.splitlines())


@needs_cc
def test_links_deleted_in_a_reopened_file_are_deleted_in_the_skeleton(tester, libiotune, tmp_path):
    orig, prof = _profiled(tmp_path, [tester, "unlink", "t", "1", "64"], libiotune)
    assert _objects(orig / "t.h5") == ["/ Group", "/a Dataset", "/g Group", "/v Dataset"]
    desc = fp.from_profile(str(prof), str(orig))
    reopened = desc["files"][1]
    deletes = [w["delete"] for w in reopened["writes"] if "delete" in w]
    assert deletes == ["/b", "/g/alias", "/g/c"], reopened["writes"]
    assert [w.get("delete", w.get("dataset")) for w in reopened["writes"]][:3] == deletes
    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    assert _objects(out / "t.h5") == _objects(orig / "t.h5")
    assert _h5dump_h(out / "t.h5") == _h5dump_h(orig / "t.h5")


@pytest.mark.parametrize(
    "entry",
    ["{delete: b}", "{delete: /}", "{delete: 3}", "{delete: /b, when: rank == 0}",
     "{delete: '/s{nope}'}"],
)  # fmt: skip
def test_a_bad_delete_entry_gives_one_message(entry):
    text = f"""skel: 1
name: t
ranks: 2
files:
- name: t.h5
  api: hdf5
  writes:
  - {entry}
"""
    with pytest.raises(dmod.DescriptorError, match=re.escape("files[0].writes[0]")):
        dmod.parse_text(text, "s.yaml")
    good = text.replace(entry, "{delete: '/b{step}'}")
    assert dmod.parse_text(good, "s.yaml").files[0].writes[0].delete == "/b{step}"
    raw = text.replace("api: hdf5", "api: mpiio").replace(entry, "{delete: /b}")
    with pytest.raises(dmod.DescriptorError, match=re.escape("files[0].writes[0].delete")):
        dmod.parse_text(raw, "s.yaml")


@needs_cc
def test_a_dataset_deleted_and_made_again_at_every_step_is_in_the_skeletons_file(tmp_path):
    """A file open over the steps whose dataset is deleted and made again at each step: the
    skeleton makes it anew after each deletion (not its handle of the deleted one kept)."""
    desc = {
        "skel": 1, "name": "relink", "ranks": 2, "steps": 2,
        "files": [{
            "name": "r.h5",
            "datasets": [{"name": "/x", "type": "float64", "dims": [16]}],
            "writes": [{"delete": "/x"},
                       {"dataset": "/x", "start": ["rank * 8"], "count": [8]}],
        }],
    }  # fmt: skip
    skeleton = _skeleton(desc, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    run_mpi(2, [skeleton, "--dir", out], timeout=120)
    assert _objects(out / "r.h5") == ["/ Group", "/x Dataset"]
