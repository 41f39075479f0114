"""Performance capture: profile numbers checked exactly against what programs know they did."""

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import launcher

from iotune import profile as prof
from iotune import trace as iotrace

FLOAT = INT = 4
SRC = Path(__file__).resolve().parents[2] / "src"


def cli_env(libiotune):
    """The environment of an `iotune` subprocess: this tree's package, whatever the cwd."""
    env = dict(os.environ, IOTUNE_LIB=str(libiotune))
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


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
    assert h["chunked_datasets"] == 0  # VPIC-IO's datasets are contiguous
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


def test_chunked_datasets_are_counted_and_decide_the_chunk_cache(mpirun, kernel, libiotune,
                                                                   tmp_path):  # fmt: skip
    """The profile counts the creates and opens of chunked datasets (the layout in force, so
    chunking a control file adds counts too): a search without chunking leaves the chunk cache
    out for an application whose datasets are all contiguous (IOR, h5bench, VPIC-IO)."""
    from iotune import space
    from iotune.search import inert

    toml = tmp_path / "s.toml"
    toml.write_text('name = "cache"\n[params.chunk_cache_bytes]\nladder = ["1M", "64M"]\n'
                    'default = "1M"\n')  # fmt: skip
    sp = space.load(str(toml))
    runs = {
        "contiguous": ([kernel("vpicio"), "--particles", 1024, "--steps", 1], None),
        "chunked": ([kernel("gcrmio"), "--cells", 64, "--levels", 5, "--chunk-cells", 32], None),
        "tuned": ([kernel("vpicio"), "--particles", 1024, "--steps", 1], "<chunk_size>4KiB"
                  "</chunk_size>"),
    }  # fmt: skip
    left_out = {}
    for name, (argv, setting) in runs.items():
        d = tmp_path / name
        d.mkdir()
        config = None
        if setting:
            config = d / "c.xml"
            config.write_text(f"<Parameters><High_Level_IO_Library>{setting}"
                              "</High_Level_IO_Library></Parameters>")  # fmt: skip
        p, _ = run_profiled(mpirun, 2, argv, d, libiotune=libiotune, config=config)
        h = p.files[0]["hdf5"]
        datasets = h["dataset_creates"] + h["dataset_opens"]
        assert datasets > 0
        assert h["chunked_datasets"] == (0 if name == "contiguous" else datasets), (name, h)
        traits = inert.traits(p.data)
        left_out[name] = inert.inert(sp, {"bytes_written": 1}, traits).get("chunk_cache_bytes")
    assert left_out == {"contiguous": inert.NO_CHUNKED, "chunked": None, "tuned": None}


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
    assert [t.name for t in traces] == ["host-0.json.gz"]  # one file per host (schema 5)
    for tr in iotrace.read_all(traces[0]):
        sigs, events = tr["signatures"], tr["events"]
        writes = [i for i, s in enumerate(sigs) if s["func"] == "H5Dwrite"]
        assert {sigs[i]["size"] for i in writes} == {particles * 4}
        assert sum(e[1] for e in events if e[0] in writes) == 8 * steps
        assert {s["layer"] for s in sigs} == {"hdf5"}  # the application's own calls


def test_h5fflush_is_an_hdf5_call(mpirun, kernel, libiotune, tmp_path):
    """H5Fflush (IOR-style --fsync, h5bench) writes HDF5's metadata through MPI-IO: the trace
    of the application's calls has the flush, not MPI-IO writes of its own, and the time is
    the HDF5 layer's."""
    argv = [kernel("iorio"), "--api", "hdf5", "--block", "16K", "--transfer", "4K",
            "--segments", "2", "--fsync"]  # fmt: skip
    p, _ = run_profiled(mpirun, 2, argv, tmp_path, libiotune=libiotune,
                        env={"IOTUNE_TRACE": "1"})  # fmt: skip
    for tr in iotrace.load(tmp_path / "profile.json"):
        sigs = tr["signatures"]
        assert "H5Fflush" in [s["func"] for s in sigs if s["layer"] == "hdf5"], tr["rank"]
        assert {s["layer"] for s in sigs} == {"hdf5"}, [(s["layer"], s["func"]) for s in sigs]
    assert p.files[0]["hdf5"]["meta_time_s"] > 0


def test_trace_of_every_layer_is_run_length_encoded(mpirun, test_prog, libiotune, tmp_path):
    p, _ = run_profiled(
        mpirun,
        1,
        [test_prog("posix_probe"), "d.dat", 50, 4096, "--mpi"],
        tmp_path,
        libiotune=libiotune,
        env={"IOTUNE_TRACE": "all"},
    )
    tr = trace_of(tmp_path, name="profile.json")
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
    env = cli_env(libiotune)
    cmd = [sys.executable, "-m", "iotune", "profile", "--files", "--out", str(out), "--",
           *launcher(), "2", str(kernel("vpicio")), "--particles", "4096"]  # fmt: skip
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "file vpicio.h5  (" in run.stdout
    assert "16 writes (16 coll)" in run.stdout  # 8 datasets x 2 ranks, collective
    show = subprocess.run(
        [sys.executable, "-m", "iotune", "show", "--files", str(out)],
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


# ----------------------------------------------------------------------------- audit fixes


def run_plain(argv, tmp_path, *, libiotune, env=None, out="p.json", timeout=120):
    """A program without a launcher, preloaded, with IOTUNE_PROFILE=tmp_path/out."""
    full = dict(os.environ, LD_PRELOAD=str(libiotune), IOTUNE_PROFILE=str(tmp_path / out))
    for key in ("IOTUNE_TRACE", "IOTUNE_SESSION", "IOTUNE_CONFIG"):
        full.pop(key, None)
    full.update(env or {})
    return subprocess.run(
        [str(a) for a in argv], cwd=tmp_path, env=full, capture_output=True, text=True,
        timeout=timeout, check=True,
    )  # fmt: skip


def counters(f, layer):
    return {k: v for k, v in f[layer].items() if not k.endswith("_s")}


def trace_of(tmp_path, rank=0, name="p.json"):
    return iotrace.load(tmp_path / name)[rank]


@pytest.mark.parametrize("trace", ["0", "1"])
def test_threads_sharing_a_descriptor_lose_no_update(trace, test_prog, libiotune, tmp_path):
    n = 20000
    run_plain([test_prog("capture_probe"), "threads", tmp_path / "t.dat", n], tmp_path,
              libiotune=libiotune, env={"IOTUNE_TRACE": trace})  # fmt: skip
    (f,) = prof.load(tmp_path / "p.json").files
    x = f["posix"]
    assert (x["writes"], x["bytes_written"]) == (4 * n, 4 * n * 64)
    assert x["sizes"]["0-100"] == 4 * n
    if trace == "1":
        tr = trace_of(tmp_path)
        pwrites = {i for i, s in enumerate(tr["signatures"]) if s["func"] == "pwrite"}
        assert sum(e[1] for e in tr["events"] if e[0] in pwrites) == 4 * n


def test_trace_cost_does_not_grow_with_distinct_signatures(test_prog, libiotune, tmp_path):
    # random offsets make one signature per call: a linear search made this quadratic
    argv = [test_prog("capture_probe"), "random", tmp_path / "r.dat", 50000]
    plain = json.loads(run_plain(argv, tmp_path, libiotune=libiotune).stdout)["seconds"]
    traced = run_plain(argv, tmp_path, libiotune=libiotune, env={"IOTUNE_TRACE": "1"})
    assert json.loads(traced.stdout)["seconds"] < 2 * plain + 1.0
    tr = trace_of(tmp_path)
    assert tr["truncated"] is False and tr["dropped_calls"] == 0
    assert len(tr["signatures"]) > 45000  # random 8-byte offsets rarely repeat a step


def test_trace_memory_is_bounded_and_truncation_said(test_prog, libiotune, tmp_path):
    argv = [test_prog("capture_probe"), "random", tmp_path / "r.dat", 20000]
    run = run_plain(argv, tmp_path, libiotune=libiotune,
                    env={"IOTUNE_TRACE": "1", "IOTUNE_TRACE_LIMIT": "1000"})  # fmt: skip
    tr = trace_of(tmp_path)
    assert tr["truncated"] is True and tr["limits"] == {"runs": 1000, "signatures": 1000}
    assert len(tr["runs"]) <= 1000 and len(tr["signatures"]) <= 1000
    assert sum(e[1] for e in tr["events"]) + tr["dropped_calls"] == 20002  # open, close
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and "truncated" in lines[0], run.stderr
    assert prof.load(tmp_path / "p.json").files[0]["posix"]["writes"] == 20000  # counters whole


def iotune_cli(args, cwd, libiotune, timeout=120):
    env = cli_env(libiotune)
    for key in ("IOTUNE_TRACE", "IOTUNE_SESSION", "IOTUNE_PROFILE", "LD_PRELOAD"):
        env.pop(key, None)
    return subprocess.run([sys.executable, "-m", "iotune", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


def test_a_shell_around_the_job_does_not_replace_its_profile(kernel, libiotune, tmp_path):
    # the shell itself writes to log.txt (a builtin's redirection) and ends after the job
    mpiexec = shlex.join([*launcher(), "2"])
    job = f"{mpiexec} {kernel('vpicio')} --particles 1024 > log.txt; echo done >> log.txt"
    run = iotune_cli(["profile", "--out", "p.json", "--", "bash", "-c", job], tmp_path, libiotune)
    assert run.returncode == 0, run.stderr
    p = prof.load(tmp_path / "p.json")
    assert p.data["mpi"] is True and p.ranks == 2
    assert [f["name"] for f in p.files] == ["vpicio.h5"]


def test_timeout_around_the_job_leaves_the_ranks_traces(kernel, libiotune, tmp_path):
    argv = ["profile", "--trace", "--out", "p.json", "--", "timeout", "60", *launcher(),
            "2", kernel("vpicio"), "--particles", "1024"]  # fmt: skip
    run = iotune_cli(argv, tmp_path, libiotune)
    assert run.returncode == 0, run.stderr
    p = prof.load(tmp_path / "p.json")
    for rank in (0, 1):
        tr = trace_of(tmp_path, rank)
        assert tr["ranks"] == 2 and tr["session"] == p.data["session"]
        assert sum(s["func"] == "H5Dwrite" for s in tr["signatures"]) == 8


def test_processes_of_one_run_keep_the_best_profile(test_prog, libiotune, tmp_path):
    probe = test_prog("posix_probe")
    tree = f"{probe} big 100 4096; {probe} small 2 4096; true"  # the small one ends last
    run_plain(["bash", "-c", tree], tmp_path, libiotune=libiotune, env={"IOTUNE_SESSION": "s1"})
    p = prof.load(tmp_path / "p.json")
    assert p.data["session"] == "s1" and [f["name"] for f in p.files] == ["big"]
    # a later run (another session) replaces it even with fewer bytes
    run_plain([probe, "small", 2, 4096], tmp_path, libiotune=libiotune,
              env={"IOTUNE_SESSION": "s2"})  # fmt: skip
    assert [f["name"] for f in prof.load(tmp_path / "p.json").files] == ["small"]


def test_an_mpi_job_beats_the_processes_beside_it(mpirun, test_prog, libiotune, tmp_path):
    probe = test_prog("posix_probe")
    env = {"IOTUNE_PROFILE": str(tmp_path / "p.json"), "IOTUNE_SESSION": "s1"}
    mpirun(1, [probe, "job", 2, 1024, "--mpi"], cwd=tmp_path, preload=libiotune, env=env)
    run_plain([probe, "bigger", 50, 4096], tmp_path, libiotune=libiotune, env=env)
    p = prof.load(tmp_path / "p.json")
    assert p.data["mpi"] is True and [f["name"] for f in p.files] == ["job.0"]


def test_a_process_without_files_writes_over_nothing(test_prog, libiotune, tmp_path):
    run_plain([test_prog("capture_probe"), "seeks", tmp_path / "s.dat"], tmp_path,
              libiotune=libiotune, env={"IOTUNE_TRACE": "1"})  # fmt: skip
    before = (tmp_path / "p.json").read_bytes(), trace_of(tmp_path)
    run_plain(["true"], tmp_path, libiotune=libiotune, env={"IOTUNE_TRACE": "1"})  # new session
    assert ((tmp_path / "p.json").read_bytes(), trace_of(tmp_path)) == before


def test_trace_has_what_a_grammar_and_a_skeleton_need(mpirun, kernel, libiotune, tmp_path):
    steps = 2
    run_profiled(mpirun, 2, [kernel("vpicio"), "--particles", 1024, "--steps", steps], tmp_path,
                 libiotune=libiotune, env={"IOTUNE_TRACE": "1"})  # fmt: skip
    p = prof.load(tmp_path / "profile.json")
    for rank in (0, 1):
        tr = trace_of(tmp_path, rank, "profile.json")
        assert tr["schema"] == "iotune-trace" and tr["version"] == 5 and tr["rank"] == rank
        names = {d["name"] for d in tr["datasets"]}
        assert names == {f"/Step#{s}/{v}" for s in range(steps)
                         for v in ("x", "y", "z", "px", "py", "pz", "id1", "id2")}  # fmt: skip
        assert {d["dims"][0] for d in tr["datasets"]} == {2048}
        writes = [s for s in tr["signatures"] if s["func"] == "H5Dwrite"]
        assert len(writes) == 8 * steps and len({s["dataset"] for s in writes}) == 8 * steps
        assert {s["dims"][0] for s in writes} == {1024} and {s["mode"] for s in writes} == {1}
        # each rank's slab starts at rank * 1024 elements of 4 bytes: the first step says so
        assert writes[0]["step"] == rank * 1024 * 4
        assert all(s["step"] is None for s in tr["signatures"] if s["func"] != "H5Dwrite")
        events = tr["events"]
        assert all(len(e) == 5 for e in events)
        starts = [e[2] for e in events]
        assert starts == sorted(starts) and 0 <= starts[0] and starts[-1] <= p.wall_time
        assert all(e[3] >= 0 and e[4] >= e[3] - 1e-9 for e in events)


def test_trace_of_every_layer_has_offsets_modes_seeks_and_syncs(mpirun, test_prog, libiotune,
                                                                 tmp_path):  # fmt: skip
    run_plain([test_prog("capture_probe"), "seeks", tmp_path / "s.dat"], tmp_path,
              libiotune=libiotune, env={"IOTUNE_TRACE": "all"})  # fmt: skip
    sigs = trace_of(tmp_path)["signatures"]
    funcs = [s["func"] for s in sigs]
    assert funcs == ["open", "write", "write", "lseek", "read", "fsync", "close"]
    opened, first, then, seek, read = sigs[:5]
    assert opened["mode"] & os.O_CREAT and opened["step"] is None
    assert (first["size"], first["step"], then["step"]) == (512, 0, 512)  # at 0, then 512 apart
    assert (seek["step"], seek["mode"], read["step"]) == (-1536, os.SEEK_SET, 0)
    assert [e[1] for e in trace_of(tmp_path)["events"]] == [1, 1, 3, 1, 1, 1, 1]
    run_profiled(mpirun, 2, [test_prog("capture_probe"), "mpiio", "m.dat"], tmp_path,
                 libiotune=libiotune, env={"IOTUNE_TRACE": "all"})  # fmt: skip
    tr = trace_of(tmp_path, 1, "profile.json")
    by_func = {s["func"]: s for s in tr["signatures"] if s["layer"] == "mpiio"}
    assert by_func["MPI_File_iwrite_at"]["step"] == 1000  # rank 1's first block: 1000 bytes in
    assert by_func["MPI_File_write_at_all"]["step"] == 2000  # two ranks of 1000 per call
    assert by_func["MPI_File_write_all_begin"]["step"] == 2000  # file pointer, in bytes
    assert by_func["MPI_File_open"]["mode"] == 9  # MPI_MODE_CREATE | MPI_MODE_RDWR (MPICH)
    assert {"MPI_File_sync", "MPI_File_set_view", "MPI_File_write_all_end"} <= set(by_func)


def test_data_files_with_so_in_their_name_are_followed(mpirun, kernel, test_prog, libiotune,
                                                       tmp_path):  # fmt: skip
    p, _ = run_profiled(mpirun, 1, [kernel("vpicio"), "--particles", 1024, "--file",
                                    "run.sol.h5"], tmp_path, libiotune=libiotune)  # fmt: skip
    assert [f["name"] for f in p.files] == ["run.sol.h5"]
    run_plain([test_prog("capture_probe"), "sofile", tmp_path / "libdata.so.h5"], tmp_path,
              libiotune=libiotune)  # fmt: skip
    (f,) = prof.load(tmp_path / "p.json").files
    assert f["posix"]["bytes_read"] == 256  # opened read-only, and still not a library


@pytest.mark.parametrize(
    "mode,layer,expect",
    [
        ("dup", "posix", {"opens": 1, "dups": 3, "closes": 4, "writes": 4, "bytes_written": 400}),
        ("vector", "posix", {"writes": 2, "bytes_written": 400, "reads": 2, "bytes_read": 250}),
        ("openat", "posix", {"opens": 4, "closes": 4, "writes": 4, "bytes_written": 40}),
        ("stdio", "stdio", {"opens": 2, "closes": 2, "writes": 3, "bytes_written": 3000,
                            "reads": 1, "bytes_read": 3000}),
    ],
)  # fmt: skip
def test_more_posix_and_stdio_calls_are_captured(mode, layer, expect, test_prog, libiotune,
                                                 tmp_path):  # fmt: skip
    run_plain([test_prog("capture_probe"), mode, tmp_path / "f.dat"], tmp_path,
              libiotune=libiotune)  # fmt: skip
    p = prof.load(tmp_path / "p.json")
    (f,) = p.files
    got = counters(f, layer)
    assert {k: got[k] for k in expect} == expect
    assert p.bytes_written == expect["bytes_written"]


@pytest.mark.parametrize("nprocs", [1, 2])
def test_nonblocking_split_and_large_count_mpiio_calls(nprocs, mpirun, test_prog, libiotune,
                                                       tmp_path):  # fmt: skip
    p, _ = run_profiled(mpirun, nprocs, [test_prog("capture_probe"), "mpiio", "m.dat"], tmp_path,
                        libiotune=libiotune)  # fmt: skip
    (f,) = p.files
    m = f["mpiio"]
    assert (m["independent_writes"], m["collective_writes"]) == (5 * nprocs, 9 * nprocs)
    assert m["bytes_written"] == 14 * 1000 * nprocs
    assert (m["syncs"], m["set_views"]) == (nprocs, nprocs)
    # each rank asks twice for 64 KiB just before the end and gets 200 bytes
    assert (m["independent_reads"], m["bytes_read"]) == (2 * nprocs, 2 * 200 * nprocs)


def test_a_file_never_closed_ends_at_the_finish(test_prog, libiotune, tmp_path):
    run_plain([test_prog("capture_probe"), "noclose", tmp_path / "n.dat"], tmp_path,
              libiotune=libiotune)  # fmt: skip
    p = prof.load(tmp_path / "p.json")
    phase = p.files[0]["phase"]
    assert phase["end_s"] >= phase["start_s"] + 0.19 and phase["end_s"] <= p.wall_time + 1e-6


def test_ranks_share_one_clock(test_prog, libiotune, tmp_path):
    # rank 1 starts 0.7 s after rank 0; both open their file right after MPI_Init
    probe = test_prog("capture_probe")
    env = dict(os.environ, LD_PRELOAD=str(libiotune), IOTUNE_PROFILE=str(tmp_path / "p.json"))
    cmd = [*launcher(), "1", probe, "clock", "c", ":", "-n", "1", "sh", "-c",
           f"sleep 0.7; exec {probe} clock c"]  # fmt: skip
    subprocess.run(cmd, cwd=tmp_path, env=env, check=True, timeout=60, capture_output=True)
    p = prof.load(tmp_path / "p.json")
    starts = {f["name"]: f["phase"]["start_s"] for f in p.files}
    assert set(starts) == {"c.0", "c.1"}
    assert abs(starts["c.0"] - starts["c.1"]) < 0.2
    assert min(starts.values()) >= 0.6  # the job started when rank 0 did


def test_a_job_without_mpi_finalize_leaves_rank_0s_profile(mpirun, test_prog, libiotune,
                                                           tmp_path):  # fmt: skip
    proc = mpirun(2, [test_prog("capture_probe"), "nofinalize", "n"], cwd=tmp_path,
                  preload=libiotune, env={"IOTUNE_PROFILE": str(tmp_path / "p.json")},
                  check=False)  # fmt: skip
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("iotune:")]
    assert len(lines) == 1 and "MPI_Finalize was not called" in lines[0], proc.stderr
    p = prof.load(tmp_path / "p.json")
    assert p.data["reduced"] is False and p.data["mpi"] is True and p.ranks == 1
    assert [f["name"] for f in p.files] == ["n.0"] and p.bytes_written == 1000
    assert "partial" in prof.summary(p)


def test_profile_command_checks_its_output_before_running(libiotune, tmp_path):
    (tmp_path / "dir").mkdir()
    marker = tmp_path / "ran"
    for out, says in [("dir", "is a directory"), ("no/such/p.json", "there is no directory")]:
        run = iotune_cli(["profile", "--out", out, "--", "touch", marker], tmp_path, libiotune)
        assert run.returncode == 2 and "Traceback" not in run.stderr
        assert run.stderr.count("\n") == 1 and says in run.stderr, run.stderr
        assert not marker.exists()
    ro = tmp_path / "ro.json"
    ro.write_text("{}")
    ro.chmod(0o444)
    run = iotune_cli(["profile", "--out", ro, "--", "touch", marker], tmp_path, libiotune)
    assert run.returncode == 2 and "read-only" in run.stderr and ro.read_text() == "{}"
    assert not marker.exists()


def test_the_runtime_respects_a_read_only_profile(test_prog, libiotune, tmp_path):
    ro = tmp_path / "p.json"
    ro.write_text("{}")
    ro.chmod(0o444)
    run = run_plain([test_prog("capture_probe"), "seeks", tmp_path / "s.dat"], tmp_path,
                    libiotune=libiotune)  # fmt: skip
    assert ro.read_text() == "{}"
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and "read-only" in lines[0], run.stderr


def test_trace_problems_are_said_once_per_job(mpirun, kernel, libiotune, tmp_path):
    (tmp_path / "p.json.trace").write_text("a file where the trace directory goes")
    env = {"IOTUNE_PROFILE": str(tmp_path / "p.json"), "IOTUNE_TRACE": "1"}
    proc = mpirun(2, [kernel("vpicio"), "--particles", 1024], cwd=tmp_path, preload=libiotune,
                  env=env)  # fmt: skip
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "cannot write the trace of 2 of 2 ranks" in lines[0], proc.stderr
    assert prof.load(tmp_path / "p.json").ranks == 2
    proc = mpirun(2, [kernel("vpicio"), "--particles", 1024], cwd=tmp_path, preload=libiotune,
                  env={"IOTUNE_TRACE": "1"})  # fmt: skip
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "IOTUNE_TRACE needs IOTUNE_PROFILE" in lines[0], proc.stderr


def test_stale_rank_traces_of_a_larger_run_are_removed(mpirun, kernel, libiotune, tmp_path):
    traces = tmp_path / "p.json.trace"
    traces.mkdir()
    for r in range(4):
        (traces / f"rank-{r}.json").write_text("{}")
    mpirun(2, [kernel("vpicio"), "--particles", 1024], cwd=tmp_path, preload=libiotune,
           env={"IOTUNE_PROFILE": str(tmp_path / "p.json"), "IOTUNE_TRACE": "1"})  # fmt: skip
    # schema 2's names (an older runtime's) go, and ranks' files when a host's file has them
    assert sorted(t.name for t in traces.iterdir()) == ["host-0.json.gz"]
    for r in range(4, 6):
        (traces / f"rank-{r}.json.gz").write_text("{}")
    run = iotune_cli(["profile", "--out", "p.json", "--", "true"], tmp_path, libiotune)
    assert run.returncode == 1 and not list(traces.iterdir())  # the CLI clears them first


def test_show_tolerates_absent_optional_keys(tmp_path):
    p = {"schema": "iotune-profile", "version": 1, "ranks": 1, "wall_s": 1.0,
         "io": {"time_s": 0.5, "bytes_written": 10, "bytes_read": 0},
         "layers": {"posix": {"writes": 1, "bytes_written": 10}}, "config": {},
         "files": [{"name": "a", "posix": {"bytes_written": 10, "write_time_s": 0.5}}]}  # fmt: skip
    path = tmp_path / "old.json"
    path.write_text(json.dumps(p))
    text = prof.summary(prof.load(path), files=True)
    assert "file a  (unknown, 1 ranks)" in text and "1 writes" in text


def test_files_beyond_the_limits_are_said_once(test_prog, libiotune, tmp_path):
    run = run_plain([test_prog("capture_probe"), "longname", tmp_path], tmp_path,
                    libiotune=libiotune)  # fmt: skip
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and "too long to follow" in lines[0], run.stderr
    run = run_plain([test_prog("capture_probe"), "many", tmp_path / "m", 4100], tmp_path,
                    libiotune=libiotune, out="q.json")  # fmt: skip
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and "more than 4096 files" in lines[0], run.stderr
    assert len(prof.load(tmp_path / "q.json").files) == 4096


def test_profile_counters_are_those_of_the_counter_table(mpirun, kernel, libiotune, tmp_path):
    """The runtime's JSON names come from data/counters.tsv (generated header), as do
    profile.COUNTERS: a layer object holds exactly the table's keys for that layer."""
    p, _ = run_profiled(
        mpirun, 1, [kernel("vpicio"), "--particles", 1024, "--steps", 1, "--read"], tmp_path,
        libiotune=libiotune,
    )  # fmt: skip
    assert tuple(p.data["layers"]) == prof.LAYERS
    for layer in prof.LAYERS:
        assert set(p.layer(layer)) == set(prof.COUNTERS[layer]), layer
    f = p.files[0]
    for layer in ("hdf5", "mpiio", "posix"):
        assert set(f[layer]) == set(prof.COUNTERS[layer]), layer


def test_profile_doc_lists_the_counter_table():
    """docs/profile.md names each layer's counters: the same set as the table."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "profile.md").read_text()
    for layer in prof.LAYERS:
        line = next(ln for ln in doc.splitlines() if ln.startswith(f"| `{layer}` | `"))
        listed = line.split("|")[2].strip().strip("`").split()
        assert set(listed) == set(prof.COUNTERS[layer]), layer


@pytest.mark.parametrize(
    ("mode", "profile", "said"),
    [("adaptiv", True, "IOTUNE_MODE=adaptiv: not a mode of iotune"),
     ("adaptive", False, "IOTUNE_MODE=adaptive: the adaptive mode needs IOTUNE_PROFILE")],
)  # fmt: skip
def test_a_mode_that_cannot_act_is_said_once_per_job(
    mpirun, kernel, libiotune, tmp_path, mode, profile, said
):
    """A typo in IOTUNE_MODE, or the adaptive mode without a profile, did nothing and said
    nothing (an outside tester); now one line for the job, and the run is as without it."""
    env = {"IOTUNE_MODE": mode, **({"IOTUNE_PROFILE": str(tmp_path / "p.json")} if profile else {})}
    proc = mpirun(2, [kernel("vpicio"), "--particles", 1024], cwd=tmp_path, preload=libiotune,
                  env=env)  # fmt: skip
    lines = proc.stderr.splitlines()
    assert proc.returncode == 0 and len(lines) == 1 and said in lines[0], proc.stderr
    if profile:
        assert "adaptive" not in json.loads((tmp_path / "p.json").read_text())
