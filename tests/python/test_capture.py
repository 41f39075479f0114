"""Performance capture: profile numbers checked exactly against what programs know they did."""

import json
import os
import subprocess
import sys
import time

import pytest

from iotune import profile as prof

FLOAT = INT = 4


def run_profiled(mpirun, nprocs, argv, tmp_path, *, libiotune, env=None, config=None):
    out = tmp_path / "profile.json"
    proc = mpirun(
        nprocs,
        argv,
        cwd=tmp_path,
        preload=libiotune,
        config=config,
        env={"IOTUNE_PROFILE": str(out), **(env or {})},
    )
    return prof.load(out), proc


@pytest.mark.parametrize("nprocs", [1, 2])
@pytest.mark.parametrize("mode", ["collective", "independent"])
def test_vpicio_profile_is_exact(nprocs, mode, mpirun, kernel, libiotune, tmp_path):
    particles, steps = 4096, 2
    p, proc = run_profiled(
        mpirun, nprocs,
        [kernel("vpicio"), "--particles", particles, "--steps", steps, "--mode", mode, "--read"],
        tmp_path, libiotune=libiotune,
    )  # fmt: skip
    data_bytes = particles * nprocs * steps * (6 * FLOAT + 2 * INT)
    assert p.ranks == nprocs and p.data["mpi"] is True
    assert [f["name"] for f in p.files] == ["vpicio.h5"]  # no launcher, no /proc, no libraries
    f = p.files[0]
    h = f["hdf5"]
    assert h["file_creates"] == nprocs and h["file_opens"] == nprocs
    assert h["file_closes"] == 2 * nprocs
    assert h["dataset_creates"] == 8 * steps * nprocs
    assert h["dataset_opens"] == 8 * steps * nprocs
    assert h["writes"] == h["reads"] == 8 * steps * nprocs
    assert h["bytes_written"] == h["bytes_read"] == data_bytes
    coll = mode == "collective"
    assert h["collective_writes"] == (h["writes"] if coll else 0)
    assert h["independent_writes"] == (0 if coll else h["writes"])
    assert p.bytes_written == p.bytes_read == data_bytes
    m, x = f["mpiio"], f["posix"]
    assert m["opens"] == m["closes"] == 2 * nprocs
    assert m["bytes_written"] >= data_bytes  # plus HDF5 metadata
    assert x["bytes_written"] == m["bytes_written"]  # ROMIO's UFS driver: MPI-IO bytes = POSIX
    assert (m["collective_writes"] > 0) == coll
    assert f["fs"] in {"ext4", "tmpfs", "xfs", "btrfs", "overlay", "nfs", "lustre", "gpfs"}
    assert f["hints"]["cb_buffer_size"] == "16777216"
    assert f["ranks"] == nprocs
    assert 0 < f["time_s"]["max"] <= p.io_time + 1e-9
    assert p.io_time <= p.wall_time
    assert f["phase"]["start_s"] < f["phase"]["end_s"] <= p.wall_time
    assert p.config == {"path": None, "digest": None, "settings": []}


def check_posix_file(f, n, size):
    x = f["posix"]
    assert (x["opens"], x["closes"], x["writes"], x["reads"]) == (1, 1, n + 1, n)
    assert (x["seeks"], x["fsyncs"]) == (1, 1)
    assert x["bytes_written"] == (n + 1) * size and x["bytes_read"] == n * size
    assert x["sequential"] == x["consecutive"] == 2 * n - 2
    assert (x["first_offset"], x["last_offset"]) == (0, n * size)
    assert x["sizes"]["1K-10K"] == 2 * n + 1 and sum(x["sizes"].values()) == 2 * n + 1


def test_plain_posix_program_without_mpi_writes_its_profile_at_exit(test_prog, libiotune, tmp_path):
    out = tmp_path / "p.json"
    env = dict(os.environ, LD_PRELOAD=str(libiotune), IOTUNE_PROFILE=str(out))
    subprocess.run(
        [test_prog("posix_probe"), tmp_path / "d.dat", "10", "4096"],
        env=env,
        check=True,
        timeout=60,
    )
    p = prof.load(out)
    assert p.ranks == 1 and p.data["mpi"] is False
    assert len(p.files) == 1
    check_posix_file(p.files[0], 10, 4096)


@pytest.mark.parametrize("nprocs", [1, 2])
def test_plain_posix_program_with_mpi(nprocs, mpirun, test_prog, libiotune, tmp_path):
    p, _ = run_profiled(
        mpirun,
        nprocs,
        [test_prog("posix_probe"), "d.dat", 20, 2048, "--mpi"],
        tmp_path,
        libiotune=libiotune,
    )
    assert sorted(f["name"] for f in p.files) == [f"d.dat.{r}" for r in range(nprocs)]
    for f in p.files:
        assert f["ranks"] == 1
        check_posix_file(f, 20, 2048)
    assert p.layer("posix")["bytes_written"] == nprocs * 21 * 2048


def test_processes_started_by_a_rank_do_not_overwrite_its_profile(
    mpirun, test_prog, libiotune, tmp_path
):
    p, _ = run_profiled(
        mpirun,
        2,
        [test_prog("posix_probe"), "d.dat", 4, 1024, "--mpi", "--spawn"],
        tmp_path,
        libiotune=libiotune,
    )
    child = tmp_path / "d.dat.child"
    for _ in range(100):  # the child writes a second after the ranks have finished
        if child.exists() and child.stat().st_size == 4096:
            break
        time.sleep(0.05)
    time.sleep(0.3)  # and then exits, which is when a profile would be written
    assert child.stat().st_size == 4096
    p = prof.load(tmp_path / "profile.json")
    assert p.data["mpi"] is True and p.ranks == 2
    assert sorted(f["name"] for f in p.files) == ["d.dat.0", "d.dat.1"]


@pytest.mark.parametrize("nprocs", [1, 2])
def test_plain_mpiio_program(nprocs, mpirun, test_prog, libiotune, tmp_path):
    p, _ = run_profiled(
        mpirun, nprocs, [test_prog("mpiio_probe"), "m.dat"], tmp_path, libiotune=libiotune
    )
    (f,) = p.files
    m = f["mpiio"]
    assert (m["opens"], m["closes"]) == (nprocs, nprocs)
    assert (m["collective_writes"], m["collective_reads"]) == (nprocs, nprocs)
    assert (m["independent_writes"], m["independent_reads"]) == (0, 0)
    assert m["bytes_written"] == m["bytes_read"] == nprocs * 65536
    assert "hdf5" not in f
    assert f["hints"]["cb_buffer_size"] == "2097152"  # the application's own hint, read back


def test_profile_carries_its_settings(mpirun, kernel, libiotune, tmp_path):
    cfg = tmp_path / "c.xml"
    cfg.write_text(
        "<Parameters><High_Level_IO_Library><sieve_buf_size>128K</sieve_buf_size>"
        "</High_Level_IO_Library><Middleware_Layer><cb_buffer_size>1M</cb_buffer_size>"
        "<romio_cb_write FileName='other.h5'>disable</romio_cb_write>"
        "</Middleware_Layer></Parameters>"
    )
    p, _ = run_profiled(
        mpirun,
        2,
        [kernel("vpicio"), "--particles", 1024],
        tmp_path,
        libiotune=libiotune,
        config=cfg,
    )
    h = 0xCBF29CE484222325  # FNV-1a 64 of the file's bytes
    for b in cfg.read_bytes():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    assert p.config["digest"] == f"fnv1a64:{h:016x}"
    assert p.config["path"] == str(cfg)
    assert [s["name"] for s in p.config["settings"]] == [
        "sieve_buf_size", "cb_buffer_size", "romio_cb_write"]  # fmt: skip
    (f,) = p.files
    assert f["applied"] == {"hdf5": {"sieve_buf_size": "131072"},
                            "mpiio": {"cb_buffer_size": "1048576"}}  # fmt: skip
    assert f["hints"]["cb_buffer_size"] == "1048576"


@pytest.mark.parametrize("where", ["missing-dir", "directory"])
def test_unwritable_profile_is_reported_once_and_harmless(
    where, mpirun, kernel, libiotune, tmp_path
):
    path = tmp_path / "no" / "such" / "p.json" if where == "missing-dir" else tmp_path
    proc = mpirun(
        2,
        [kernel("vpicio"), "--particles", 1024, "--read"],
        cwd=tmp_path,
        preload=libiotune,
        env={"IOTUNE_PROFILE": str(path)},
    )
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"iotune: IOTUNE_PROFILE={path}: cannot"), (
        proc.stderr
    )
    assert '"verified":true' in proc.stdout


def test_trace_mode_writes_compressed_call_streams(mpirun, kernel, libiotune, tmp_path):
    particles, steps = 2048, 3
    p, _ = run_profiled(
        mpirun, 2, [kernel("vpicio"), "--particles", particles, "--steps", steps], tmp_path,
        libiotune=libiotune, env={"IOTUNE_TRACE": "1"},
    )  # fmt: skip
    traces = sorted((tmp_path / "profile.json.trace").iterdir())
    assert [t.name for t in traces] == ["rank-0.json", "rank-1.json"]
    for t in traces:
        tr = json.loads(t.read_text())
        sigs, events = tr["signatures"], tr["events"]
        writes = [i for i, s in enumerate(sigs) if s["func"] == "H5Dwrite"]
        assert {sigs[i]["size"] for i in writes} == {particles * 4}
        assert sum(e[1] for e in events if e[0] in writes) == 8 * steps
        assert {s["layer"] for s in sigs} == {"hdf5"}  # the application's own calls


def test_trace_of_every_layer_is_run_length_encoded(mpirun, test_prog, libiotune, tmp_path):
    p, _ = run_profiled(
        mpirun,
        1,
        [test_prog("posix_probe"), "d.dat", 50, 4096, "--mpi"],
        tmp_path,
        libiotune=libiotune,
        env={"IOTUNE_TRACE": "all"},
    )
    tr = json.loads((tmp_path / "profile.json.trace" / "rank-0.json").read_text())
    sigs = tr["signatures"]
    runs = [
        (sigs[e[0]]["func"], sigs[e[0]]["size"], sigs[e[0]]["step"], e[1]) for e in tr["events"]
    ]
    # 50 writes of 4 KiB, each 4 KiB after the last: one signature, one event counting 49
    assert ("write", 4096, 4096, 49) in runs
    assert ("read", 4096, 4096, 49) in runs
    assert len(tr["events"]) <= 10


def test_profile_and_show_commands(kernel, libiotune, tmp_path):
    out = tmp_path / "p.json"
    env = dict(os.environ, IOTUNE_LIB=str(libiotune))
    cmd = [sys.executable, "-m", "iotune", "profile", "--out", str(out), "--", "mpiexec", "-n",
           "2", str(kernel("vpicio")), "--particles", "4096"]  # fmt: skip
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "file vpicio.h5  (" in run.stdout
    assert "16 writes (16 coll)" in run.stdout  # 8 datasets x 2 ranks, collective
    show = subprocess.run(
        [sys.executable, "-m", "iotune", "show", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert show.returncode == 0
    assert show.stdout.strip() in run.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "something-else"}')
    show = subprocess.run(
        [sys.executable, "-m", "iotune", "show", str(bad)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert show.returncode == 1 and "not an iotune profile" in show.stderr


def test_profile_module_refuses_newer_versions(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"schema": "iotune-profile", "version": 99}))
    with pytest.raises(prof.ProfileError, match="version 99"):
        prof.load(path)
