"""The HDF5 idioms of h5py programs, from C (tests/c/h5idioms.c; test_h5py.py has the same from
h5py itself): a dataset created without a name and linked after (h5py's f["a"] = data) gets the
file-wide creation settings, is counted, and a dataset rule it missed is said; an H5Oopen with a
link access list (Debian's h5py 3.7) gets the chunk cache and keeps the list's own properties; a
create refused with the settings leaves no file behind, so an exclusive create's retry works.
2 ranks, MPI-IO driver."""

import gzip
import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_mpi

# the control file both the C and the h5py idiom tests apply
CONFIG = (Path(__file__).parents[1] / "data" / "h5py_idioms.xml").read_text()


def _dump(path, name):
    r = subprocess.run(["h5dump", "-p", "-H", "-d", name, str(path)], capture_output=True,
                       text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory, test_prog, libiotune):
    """The anon and lapl steps without the runtime (base) and with it and CONFIG (tuned)."""
    prog = test_prog("h5idioms")
    where = tmp_path_factory.mktemp("idioms")
    (where / "c.xml").write_text(CONFIG)
    out = {}
    for name, lib in (("base", None), ("tuned", libiotune)):
        d = where / name
        d.mkdir()
        out[name] = [run_mpi(2, [prog, step, "i.h5"], cwd=d, preload=lib,
                             env={"IOTUNE_PROFILE": str(d / f"{step}.json")} if lib else {},
                             config=where / "c.xml" if lib else None)
                     for step in ("anon", "lapl")]  # fmt: skip
    return where, out


def test_anonymous_datasets_get_the_file_wide_creation_settings(runs):
    where, out = runs
    for name in ("/a", "/step_000/b"):
        tuned = _dump(where / "tuned" / "i.h5", name)
        assert "CHUNKED ( 16, 64 )" in tuned and "H5D_FILL_TIME_NEVER" in tuned, tuned
        base = _dump(where / "base" / "i.h5", name)
        assert "CONTIGUOUS" in base and "H5D_FILL_TIME_NEVER" not in base, base
    diff = subprocess.run(["h5diff", where / "base" / "i.h5", where / "tuned" / "i.h5"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert diff.returncode == 0, diff.stdout


def test_anonymous_datasets_are_counted_and_a_missed_dataset_rule_is_said(runs):
    where, out = runs
    p = json.loads((where / "tuned" / "anon.json").read_text())
    f = next(x for x in p["files"] if x["name"] == "i.h5")
    # two 64 x 64 float64 datasets, each written whole by each of the 2 ranks
    assert f["hdf5"]["bytes_written"] == 2 * 2 * 64 * 64 * 8, f["hdf5"]
    assert f["hdf5"]["dataset_creates"] == 2 * 2, f["hdf5"]
    notes = [n for n in f.get("hdf5_notes") or [] if "created without a name" in n]
    assert len(notes) == 1 and notes[0].startswith("/step_000/b: ") and "chunk=8,8 NOT" in notes[0]
    assert "/step_000/b: created without a name" in out["tuned"][0].stderr
    assert out["tuned"][0].stderr.count("created without a name") == 1  # said once, rank 0


def test_an_open_with_a_link_access_list_gets_the_chunk_cache_and_keeps_its_own(runs):
    _, out = runs
    assert out["tuned"][1].stdout.splitlines() == [
        "a: cache 1009 4194304 0.5 nlinks 7",
        "step_000/b: cache 1009 4194304 0.5 nlinks 7",
    ]
    # without the runtime the dataset's access list is HDF5's defaults (nlinks 16): the 7 above
    # is the application's link access property carried into the list the open was given
    assert out["base"][1].stdout.splitlines() == [
        "a: cache 521 1048576 0.75 nlinks 16",
        "step_000/b: cache 521 1048576 0.75 nlinks 16",
    ]


def test_a_refused_exclusive_create_leaves_no_file_and_the_retry_succeeds(tmp_path, test_prog,
                                                                         libiotune):  # fmt: skip
    # IOTUNE_TEST_REFUSE=H5Fcreate (tests only): the create with the control file's settings
    # fails after the driver made the (empty) file, as HDF5 refusing them does
    config = tmp_path / "c.xml"
    config.write_text(CONFIG.replace("<fill_time>never</fill_time>",
                                     "<sieve_buf_size>256K</sieve_buf_size>"))  # fmt: skip
    r = run_mpi(2, [test_prog("h5idioms"), "excl", "x.h5"], cwd=tmp_path, preload=libiotune,
                config=config, env={"IOTUNE_TEST_REFUSE": "H5Fcreate"}, check=False)  # fmt: skip
    assert (r.returncode, r.stdout) == (0, "excl: ok 4095\n"), r.stderr
    assert "exists" not in r.stderr, r.stderr
    # an existing file is never removed: the exclusive create fails as without the runtime
    again = run_mpi(2, [test_prog("h5idioms"), "excl", "x.h5"], cwd=tmp_path,
                    preload=libiotune, config=config, env={"IOTUNE_TEST_REFUSE": "H5Fcreate"},
                    check=False)  # fmt: skip
    assert again.returncode == 1 and again.stdout == "excl: failed 0\n"
    assert (tmp_path / "x.h5").stat().st_size > 0


def test_a_trace_names_anonymous_datasets_and_has_no_nameless_calls(tmp_path, test_prog,
                                                                   libiotune):  # fmt: skip
    from iotune import trace as iotrace

    run_mpi(2, [test_prog("h5idioms"), "anon", "i.h5"], cwd=tmp_path, preload=libiotune,
            env={"IOTUNE_PROFILE": str(tmp_path / "p.json"), "IOTUNE_TRACE": "1"})  # fmt: skip
    tr = iotrace.load(tmp_path / "p.json")[0]
    # traced from the creation under a stand-in path, renamed by the link (docs/profile.md):
    # one entry per dataset (the stand-in's and a copy under the name were two)
    names = ["/a", "/step_000/b"]
    assert [d["name"] for d in tr["datasets"]] == names
    calls = [(s["func"], s["dataset"], s["dims"]) for s in tr["signatures"]
             if s["func"].startswith(("H5D", "H5Olink"))]  # fmt: skip
    # the writes made before the name (h5py writes, then links) are traced on the entry the
    # link renames (they were counted, not traced); the link's call is on it (dims: its index)
    assert [c[:2] for c in calls] == [
        ("H5Dcreate", 0),
        ("H5Dwrite", 0),
        ("H5Olink", 0),
        ("H5Dcreate", 1),
        ("H5Dwrite", 1),
        ("H5Olink", 1),
    ], calls
    assert [c[2] for c in calls if c[0] == "H5Olink"] == [[0], [1]], calls
    raw = json.loads(gzip.decompress((tmp_path / "p.json.trace" / "host-0.json.gz").read_bytes()))
    assert "(anonymous" not in json.dumps(raw), "renamed as the runtime wrote it, no copy"
