"""Striping that is real (docs/striping.md): the runtime's file-system layer (runtime/src/fs) on
a CephFS that scripts/cephfs.sh starts once per test session, and on the local file system.

An MPICH HDF5 kernel (vpicio, 2 ranks) runs under `iotune run --verbose`; what the file got is
read back from CephFS itself (getfattr ceph.file.layout), from the verbose report and from the
profile's file record ("striping"). The CephFS tests skip, saying why, where the Ceph packages,
root or /dev/fuse are missing, or the cluster does not come up.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BUILD, REPO, launcher

CEPHFS = REPO / "scripts" / "cephfs.sh"
STRIPED = """<?xml version="1.0"?>
<Parameters>
  <Parallel_File_System>
    <striping_factor>3</striping_factor>
    <striping_unit>1048576</striping_unit>
  </Parallel_File_System>
</Parameters>
"""
CEPH_BINARIES = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-fuse", "getfattr")


@pytest.fixture(scope="session")
def cephfs(tmp_path_factory):
    """The mount point of a single-host CephFS, started once for the session, stopped after
    (IOTUNE_CEPHFS_DIR: a cluster's folder already running, used and left running)."""
    given = os.environ.get("IOTUNE_CEPHFS_DIR")
    if given:
        st = subprocess.run(["bash", str(CEPHFS), "status", given], capture_output=True,
                            text=True, timeout=60)  # fmt: skip
        if st.returncode != 0:
            pytest.skip(f"IOTUNE_CEPHFS_DIR={given}: no CephFS running there")
        yield Path(st.stdout.split()[-1])
        return
    missing = [b for b in CEPH_BINARIES if not shutil.which(b)]
    if missing:
        pytest.skip(f"Ceph not installed ({', '.join(missing)}): scripts/install.sh installs it")
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip("CephFS through ceph-fuse needs root and /dev/fuse")
    where = tmp_path_factory.mktemp("cephfs")
    # a saturated machine: start-up waits up to 180 s per step (scripts/cephfs.sh)
    try:
        proc = subprocess.run(
            ["bash", str(CEPHFS), "start", str(where)], capture_output=True, text=True, timeout=400
        )
    except subprocess.TimeoutExpired:
        proc = None
    if proc is None or proc.returncode != 0:
        subprocess.run(["bash", str(CEPHFS), "stop", str(where)], capture_output=True, timeout=60)
        why = "timed out" if proc is None else (proc.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(f"the CephFS did not start: {why}")
    try:
        yield Path(proc.stdout.strip().splitlines()[-1])
    finally:
        subprocess.run(["bash", str(CEPHFS), "stop", str(where)], capture_output=True, timeout=60)


def vpicio(kernel, path: Path, config: Path | None, profile: Path, verbose: bool = True):
    """vpicio on 2 ranks writing path, under `iotune run`; the finished process (text)."""
    env = dict(os.environ, IOTUNE_PROFILE=str(profile), PYTHONPATH=str(REPO / "src"))
    env.setdefault("IOTUNE_LIB", str(BUILD / "runtime" / "libiotune.so"))
    cmd = [sys.executable, "-m", "iotune", "run"]
    cmd += ["--config", str(config)] if config else []
    cmd += ["--verbose"] if verbose else []
    cmd += [
        "--",
        *launcher(),
        "2",
        str(kernel("vpicio")),
        "--particles",
        "96K",
        "--file",
        str(path),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def record(profile: Path, path: Path) -> dict:
    files = json.loads(profile.read_text())["files"]
    found = [f for f in files if f["name"] == str(path)]
    assert found, [f["name"] for f in files]
    return found[0]


def layout(path: Path) -> dict:
    out = subprocess.run(
        ["getfattr", "--only-values", "-n", "ceph.file.layout", str(path)],
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout  # fmt: skip
    return {k: v for k, v in (w.split("=", 1) for w in out.split())}


def control(tmp_path: Path) -> Path:
    c = tmp_path / "striped.xml"
    c.write_text(STRIPED)
    return c


def test_ceph_fuse_is_found_as_ceph(cephfs):
    """statfs says FUSE; the mount's type in /proc/self/mountinfo says it is ceph-fuse."""
    assert os.statvfs(cephfs)  # mounted
    mountinfo = Path("/proc/self/mountinfo").read_text()
    assert f" {cephfs} " in mountinfo and "fuse.ceph-fuse" in mountinfo


def test_cephfs_script_start_twice_and_stop_dead(cephfs, tmp_path):
    """start on a running cluster says so and changes nothing; stop where nothing runs is no
    error; a folder holding other files is refused."""
    again = subprocess.run(["bash", str(CEPHFS), "start", str(cephfs.parent)],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert again.returncode == 0 and "already running" in again.stderr, again.stderr
    assert again.stdout.strip() == str(cephfs)
    dead = subprocess.run(["bash", str(CEPHFS), "stop", str(tmp_path)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert dead.returncode == 0, dead.stderr
    (tmp_path / "mine.txt").write_text("x")
    other = subprocess.run(["bash", str(CEPHFS), "start", str(tmp_path)], capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert other.returncode == 2 and "holds other files" in other.stderr, other.stderr
    assert (tmp_path / "mine.txt").exists()


def test_striping_applied_and_read_back(cephfs, kernel, tmp_path):
    """The acceptance: striping_factor=3, striping_unit=1048576 give the HDF5 file the layout
    stripe_count=3 stripe_unit=1048576, read back from CephFS; verbose and profile say so."""
    d = cephfs / "applied"
    d.mkdir()
    f, profile = d / "a.h5", tmp_path / "p.json"
    proc = vpicio(kernel, f, control(tmp_path), profile)
    got = layout(f)
    assert (got["stripe_count"], got["stripe_unit"]) == ("3", "1048576"), got
    assert f"file system: {f} on ceph: striping striping_factor=3" in proc.stderr, proc.stderr
    assert "applied, layout stripe_unit=1048576 stripe_count=3" in proc.stderr, proc.stderr
    s = record(profile, f)["striping"]
    assert s["outcome"] == "applied", s
    assert s["layout"]["stripe_count"] == 3 and s["layout"]["stripe_unit"] == 1048576, s
    assert s["asked"] == {"striping_factor": 3, "striping_unit": 1048576}, s
    assert record(profile, f)["fs"] == "ceph"
    # ROMIO drops the hints on ceph-fuse: the hint's verdict points to the layout, never "yes"
    effect = record(profile, f)["hint_effect"]["striping_factor"]
    assert effect["in_effect"] == "no" and "layout is set by the runtime" in effect["reason"]


def test_striping_inherited_from_directory(cephfs, kernel, tmp_path):
    """A directory with ceph.dir.layout gives its new files that layout: the runtime reads it
    back and says it is in effect, inherited, without setting anything."""
    d = cephfs / "inherited"
    d.mkdir()
    for key, value in (("stripe_count", "3"), ("stripe_unit", "1048576")):
        subprocess.run(["setfattr", "-n", f"ceph.dir.layout.{key}", "-v", value, str(d)],
                       check=True, timeout=30)  # fmt: skip
    f, profile = d / "a.h5", tmp_path / "p.json"
    vpicio(kernel, f, control(tmp_path), profile)
    assert layout(f)["stripe_count"] == "3"
    s = record(profile, f)["striping"]
    assert s["outcome"] == "in effect" and "inherited from its directory" in s["reason"], s


def test_striping_refused_on_non_empty_file(cephfs, kernel, tmp_path):
    """An existing file with data (HDF5 truncates it only after the open): CephFS cannot lay
    it out; one clear refusal, and the file keeps the default layout."""
    d = cephfs / "refused"
    d.mkdir()
    f, profile = d / "a.h5", tmp_path / "p.json"
    f.write_bytes(b"x" * 4096)
    proc = vpicio(kernel, f, control(tmp_path), profile)
    s = record(profile, f)["striping"]
    assert s["outcome"] == "refused" and "not empty" in s["reason"], s
    assert "striping_factor=3 striping_unit=1048576: refused" in proc.stderr, proc.stderr
    assert layout(f)["stripe_count"] == "1"


def test_data_identical_with_and_without_striping(cephfs, kernel, tmp_path):
    """The same kernel's file with and without the layout: h5diff finds no difference."""
    d = cephfs / "same"
    d.mkdir()
    plain, striped = d / "plain.h5", d / "striped.h5"
    vpicio(kernel, plain, None, tmp_path / "p0.json", verbose=False)
    vpicio(kernel, striped, control(tmp_path), tmp_path / "p1.json", verbose=False)
    assert layout(plain)["stripe_count"] == "1" and layout(striped)["stripe_count"] == "3"
    diff = subprocess.run(["h5diff", str(plain), str(striped)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert diff.returncode == 0, diff.stdout + diff.stderr


def test_no_striping_on_local_file_system(kernel, tmp_path):
    """The same control file on the local file system (ext4, xfs, tmpfs...): the striping is
    not applicable, said in --verbose and the profile, never "in effect"."""
    f, profile = tmp_path / "a.h5", tmp_path / "p.json"
    proc = vpicio(kernel, f, control(tmp_path), profile)
    rec = record(profile, f)
    s = rec["striping"]
    assert s["outcome"] == "not applicable", s
    assert s["reason"] == f"no striping on this file system ({rec['fs']})", s
    assert f"on {rec['fs']}: striping striping_factor=3 striping_unit=1048576: not applicable" in (
        proc.stderr
    ), proc.stderr
    assert "no striping on this file system" in proc.stderr
    for key in ("striping_factor", "striping_unit"):
        assert rec["hint_effect"][key]["in_effect"] == "no", rec["hint_effect"]


@pytest.mark.parametrize(
    "name, fs, kept",
    [
        ("striping_factor", ["ceph"], True),
        ("striping_unit", ["lustre"], True),
        ("striping_factor", ["ext4"], False),
        ("striping_factor", ["gpfs"], False),  # GPFS has no stripe count per file
        ("striping_object_size", ["ceph"], True),
        ("striping_object_size", ["lustre"], False),
        ("IBM_largeblock_io", ["gpfs"], True),
        ("IBM_largeblock_io", ["ceph"], False),
        ("striping_factor", ["ext4", "ceph"], True),  # one file that can stripe is enough
    ],
)
def test_tune_offers_striping_only_where_the_file_system_stripes(name, fs, kept):
    from iotune.search import inert

    why = inert.fs_inert(name, fs)
    assert (why is None) is kept, why
    if not kept:
        assert ", ".join(fs) in why
