"""fill_time=never (H5Pset_fill_time(H5D_FILL_TIME_NEVER)) never changes the data a file holds:
the runtime applies it only where the elements an application never writes read back as the
default fill value anyway (runtime/src/apply/fill_guard.c), and otherwise withdraws it with one
line saying why, whether a control file, rule IOT-1 or a knowledge base asked for it.

tests/c/fill_guard_probe.c writes half of a chunked dataset (or all of it), reads it back into
a buffer of 0x5A bytes and counts the unwritten elements that do not read back 0: measured
without the guard, serial HDF5 (chunks allocated as they are written) left the reader's
buffer as it was, and space freed by a deletion or a shrink, or held by a file opened with a
persistent free-space strategy, read back the old dataset's values (h5diff: 100,000 to 200,000
differences). A checkpoint writer (a new file, every element written, in parallel) keeps it."""

import json
import shutil
import subprocess

import pytest
from conftest import run_mpi

N = "100000"  # chunks of 100,000 doubles, 2 per rank


def _config(tmp, extra=""):
    cfg = tmp / "never.xml"
    cfg.write_text(
        '<?xml version="1.0"?>\n<Parameters>\n  <High_Level_IO_Library>\n'
        f"    <serial_files>true</serial_files>{extra}\n"
        "    <fill_time>never</fill_time>\n  </High_Level_IO_Library>\n</Parameters>\n"
    )
    return cfg


def _probe(tmp, prog, mode, driver, nprocs, **kw):
    tmp.mkdir(exist_ok=True)
    r = run_mpi(nprocs, [prog, mode, driver, N, tmp / "f.h5"], cwd=tmp, timeout=120, **kw)
    return json.loads(r.stdout.splitlines()[-1]), r


def _same_file(a, b):
    assert shutil.which("h5diff"), "h5diff missing"
    r = subprocess.run(["h5diff", a / "f.h5", b / "f.h5"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


WITHDRAWN = {
    "serial": "fill_time=never NOT applied: serial HDF5 allocates the dataset's storage as it is "
    "written, and elements never written would read back as whatever the reader's buffer held; "
    "it applies with allocation at creation: alloc_time=early",
    "freed": "fill_time=never NOT applied: space may have been freed in the file (an object "
    "deleted, a dataset shrunk, a filtered dataset made), which HDF5 hands out again with its "
    "old bytes; it applies only to the datasets made in a new file before such a call",
    "opened": "fill_time=never NOT applied: the file was opened, not created in this run: space "
    "HDF5 allocates in it may hold old bytes; it applies only in a file created in this run",
}


@pytest.mark.parametrize(
    "mode,driver,nprocs,extra,why",
    [
        ("partial", "sec2", 1, "", "serial"),
        ("partial", "sec2", 1, "<alloc_time>early</alloc_time>", None),
        ("partial", "mpio", 2, "", None),
        ("reused", "mpio", 2, "", "freed"),
        ("reused", "sec2", 1, "<alloc_time>early</alloc_time>", "freed"),
        ("shrunk", "mpio", 2, "", "freed"),
        # deletions through another name of the file or another file (an outside tester:
        # 4086 elements of the deleted dataset read back in the new one)
        ("twice", "sec2", 1, "<alloc_time>early</alloc_time>", "freed"),
        ("mounted", "mpio", 2, "", "freed"),
        ("mounted", "sec2", 1, "<alloc_time>early</alloc_time>", "freed"),
        ("reopened", "mpio", 2, "", "opened"),
        # a filtered chunk rewritten larger: HDF5 frees the old one by itself (not seen to
        # reach the new dataset here; left out all the same, as HDF5 may hand it out)
        ("rewritten", "mpio", 2, "", "freed"),
        ("full", "mpio", 2, "", None),
    ],
)
def test_fill_time_never_applies_only_where_the_data_stay_the_same(
    tmp_path, test_prog, libiotune, mode, driver, nprocs, extra, why
):
    prog = test_prog("fill_guard_probe")
    plain, _ = _probe(tmp_path / "plain", prog, mode, driver, nprocs)
    assert plain == {"fill_time": "ifset", "unwritten_not_fill": 0, "written_wrong": 0}
    cfg = _config(tmp_path, extra)
    tuned, r = _probe(tmp_path / "tuned", prog, mode, driver, nprocs, preload=libiotune,
                      config=cfg, verbose=True)  # fmt: skip
    # the elements never written read back as the fill value, the written ones as written
    assert (tuned["unwritten_not_fill"], tuned["written_wrong"]) == (0, 0), (tuned, r.stderr)
    _same_file(tmp_path / "plain", tmp_path / "tuned")
    # read back from the dataset's creation list: applied where safe, else left out and said
    assert tuned["fill_time"] == ("ifset" if why else "never"), r.stderr
    said = [x.split("iotune:")[-1].strip() for x in r.stderr.splitlines() if "NOT applied" in x]
    if why:
        # the line names the file and the dataset (the verbose H5Dcreate line before it did)
        where = f"{tmp_path / 'tuned' / 'f.h5'}:/data"
        assert said == [f"{where}: {WITHDRAWN[why]} [never.xml:5]"], r.stderr
    else:
        assert said == [], r.stderr


def test_fill_time_never_left_out_names_the_dataset_escaped_in_the_log_and_the_profile(
    tmp_path, test_prog, libiotune
):
    """The line that says fill_time=never was left out names the file and the dataset, the
    dataset's path escaped as every name the runtime shows (a line break in it forged a line),
    and the file's profile record keeps the same line: a file where one dataset got it and
    another did not says which."""
    prog = test_prog("fill_guard_probe")
    prof = tmp_path / "p.json"
    r = run_mpi(1, [prog, "partial", "sec2", "1000", tmp_path / "f.h5", "da\nta"], cwd=tmp_path,
                preload=libiotune, config=_config(tmp_path), verbose=True,
                env={"IOTUNE_PROFILE": str(prof)})  # fmt: skip
    line = f"{tmp_path / 'f.h5'}:/da\\nta: {WITHDRAWN['serial']} [never.xml:5]"
    said = [x.split("iotune:", 1)[-1].strip() for x in r.stderr.splitlines() if "NOT applied" in x]
    assert said == [line], r.stderr
    files = json.loads(prof.read_text())["files"]  # Open MPI's helper files too
    (record,) = [f for f in files if f["name"].endswith("f.h5")]
    assert line in record["hdf5_notes"], record


def test_a_file_where_fill_time_never_reached_one_dataset_of_two_says_so(
    tmp_path, test_prog, libiotune
):
    """The file's `applied` lists fill_time=never when one of its datasets got it, and the
    summary said applied for the whole file: /old got it, /data (made after /old's deletion)
    did not. The profile counts the datasets it reached and the summary names the other. With
    chunk_size applied to /data as well, its read-back said fill_time NOT in effect a second
    time (one note is enough)."""
    from iotune import profile as prof

    prof_path = tmp_path / "p.json"
    env = {"IOTUNE_PROFILE": str(prof_path)}
    _probe(tmp_path / "tuned", test_prog("fill_guard_probe"), "reused", "mpio", 2,
           preload=libiotune, config=_config(tmp_path, "<chunk_size>4096</chunk_size>"),
           env=env)  # fmt: skip
    p = prof.load(prof_path)
    (record,) = [f for f in p.data["files"] if f["name"].endswith("f.h5")]
    assert record["applied"]["hdf5"] == {"fill_time": "never", "chunk_size": "4096"}
    assert record["dataset_settings"] == {"fill_time": {"reached": 1, "of": 2},
                                          "chunk_size": {"reached": 2, "of": 2}}  # fmt: skip
    notes = [n for n in record["hdf5_notes"] if "fill_time" in n]
    assert notes == [f"{tmp_path / 'tuned' / 'f.h5'}:/data: {WITHDRAWN['freed']} [never.xml:5]"]
    text = prof.summary(p, files=True)
    why = WITHDRAWN["freed"].removeprefix("fill_time=never NOT applied: ")
    assert f"fill_time=never (applied to 1 of 2 datasets; not to /data ({why}))" in text, text


def test_the_applications_own_fill_time_alloc_is_kept_where_fill_time_never_is_left_out(
    tmp_path, test_prog, libiotune
):
    """A contiguous dataset with the application's own fill_time=alloc made after a deletion
    (2 ranks): HDF5 writes the fill value over the space it takes, so its unwritten elements
    read zeros without iotune; with fill_time=never given (applied to /old, left out of /data)
    they read zeros too and the files are the same (h5diff): the runtime keeps the
    application's alloc there, not HDF5's default (ifset: the deleted values read back)."""
    prog = test_prog("fill_guard_probe")
    plain, _ = _probe(tmp_path / "plain", prog, "ownalloc", "mpio", 2)
    assert plain == {"fill_time": "alloc", "unwritten_not_fill": 0, "written_wrong": 0}
    tuned, r = _probe(tmp_path / "tuned", prog, "ownalloc", "mpio", 2, preload=libiotune,
                      config=_config(tmp_path), verbose=True)  # fmt: skip
    assert tuned == plain, r.stderr
    _same_file(tmp_path / "plain", tmp_path / "tuned")
    assert f"/data: {WITHDRAWN['freed']} [never.xml:5]" in r.stderr
    # and it did reach /old, made before the deletion: the setting was given
    assert "f.h5:/old: hdf5 dataset creation:\niotune:   fill_time=never [" in r.stderr


def test_fill_time_never_left_out_of_many_datasets_is_noted_once_and_counted(
    tmp_path, test_prog, libiotune
):
    """fill_time=never left out of /data and /data2 (both made after a deletion, for the same
    reason): the file's notes name the first only, so that a file of many datasets leaves
    room for its other notes (bounded), and the counts say how many it missed."""
    from iotune import profile as prof

    prof_path = tmp_path / "p.json"
    env = {"IOTUNE_PROFILE": str(prof_path)}
    _, r = _probe(tmp_path / "tuned", test_prog("fill_guard_probe"), "reused2", "mpio", 2,
                  preload=libiotune, config=_config(tmp_path), env=env, verbose=True)  # fmt: skip
    said = [x for x in r.stderr.splitlines() if "NOT applied" in x]
    assert [x.split(": fill_time")[0].rsplit(":", 1)[-1] for x in said] == ["/data", "/data2"]
    p = prof.load(prof_path)
    (record,) = [f for f in p.data["files"] if f["name"].endswith("f.h5")]
    assert record["dataset_settings"] == {"fill_time": {"reached": 1, "of": 3}}
    notes = [n for n in record["hdf5_notes"] if "fill_time" in n]
    assert notes == [f"{tmp_path / 'tuned' / 'f.h5'}:/data: {WITHDRAWN['freed']} [never.xml:5]"]
    why = WITHDRAWN["freed"].removeprefix("fill_time=never NOT applied: ")
    said = f"fill_time=never (applied to 1 of 3 datasets; not to /data ({why}), and 1 more)"
    assert said in prof.summary(p, files=True)
