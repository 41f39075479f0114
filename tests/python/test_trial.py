"""One trial: launch, objective, failures (crash, exit code, hang), capping, clean-up."""

import json
import os
import sys
import time
from pathlib import Path

import pytest

from iotune import objective, trial

HERE = Path(__file__).resolve().parent
FAKE = [sys.executable, str(HERE / "fake_app.py")]


def opts(tmp_path, launcher="none", **kw):
    command = trial.launch_command(launcher, 2 if launcher != "none" else None, FAKE)
    kw.setdefault("objective", "kernel")
    kw.setdefault("isolate", True)
    return trial.TrialOptions(command, tmp_path / "work", preload=False, **kw)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def test_ok_trial_reads_the_kernel_line_and_leaves_nothing(tmp_path):
    o = opts(tmp_path)
    fast = trial.run_trial({"cb_buffer_size": "1048576"}, o)
    slow = trial.run_trial({}, o)
    assert fast.status == "ok" and fast.source == "kernel"
    assert fast.value == pytest.approx(0.02) and slow.value == pytest.approx(0.06)
    assert fast.wall_s >= 0.02
    assert list((tmp_path / "work").iterdir()) == []  # scratch dirs (with files, subdirs) gone


def test_keep_scratch_keeps_the_files(tmp_path):
    trial.run_trial({}, opts(tmp_path, keep=True))
    (scratch,) = (tmp_path / "work").iterdir()
    assert (scratch / "data.out").is_file() and (scratch / trial.CONFIG_NAME).is_file()


def test_crash_and_exit_code_are_failures(tmp_path):
    crashed = trial.run_trial({"fill_time": "alloc"}, opts(tmp_path))
    assert crashed.status == "crashed" and crashed.value is None
    failed = trial.run_trial({"transfer_mode": "independent"}, opts(tmp_path))
    assert failed.status == "failed" and failed.returncode == 1
    assert "refusing" in failed.message
    assert list((tmp_path / "work").iterdir()) == []


def test_no_objective_is_a_failure(tmp_path):
    o = opts(tmp_path, objective="io-time")  # the fake app writes no profile
    out = trial.run_trial({}, o)
    assert out.status == "failed" and "profile" in out.message


def test_hang_under_mpiexec_times_out_and_kills_every_rank(tmp_path):
    pids = tmp_path / "pids"
    o = opts(tmp_path, launcher="mpiexec", timeout=3, extra_env={"FAKE_APP_PIDS": str(pids)})
    start = time.monotonic()
    out = trial.run_trial({"fill_time": "never"}, o)
    assert out.status == "timeout" and out.value is None
    assert time.monotonic() - start < 20
    ranks = [int(x) for x in pids.read_text().split()]
    assert len(ranks) == 2
    time.sleep(0.5)
    assert not any(alive(p) for p in ranks)
    assert list((tmp_path / "work").iterdir()) == []


def test_cap_stops_a_slow_trial(tmp_path):
    o = opts(tmp_path, extra_env={"SLOW_S": "30"})
    start = time.monotonic()
    out = trial.run_trial({"romio_cb_write": "disable"}, o, cap_s=0.5)
    assert out.status == "capped" and out.value is None
    assert 0.5 <= out.wall_s < 5 and time.monotonic() - start < 10
    fast = trial.run_trial({}, o, cap_s=5)
    assert fast.status == "ok"


def test_missing_program_is_a_failure(tmp_path):
    o = trial.TrialOptions([str(tmp_path / "nope")], tmp_path / "work", preload=False)
    assert trial.run_trial({}, o).status == "failed"


def test_trial_runs_in_the_users_directory_by_default(tmp_path):
    """As the command would run in the user's shell: a relative program works, and its files
    land in the user's directory; only the trial's own files go to the private directory."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "app.py").write_text((HERE / "fake_app.py").read_text())
    o = trial.TrialOptions(
        [sys.executable, "app.py"], tmp_path / "work", cwd=user, preload=False, objective="kernel"
    )
    out = trial.run_trial({}, o)
    assert out.ok, out.message
    assert (user / "data.out").is_file()
    assert list((tmp_path / "work").iterdir()) == []


def test_isolated_trials_resolve_relative_files_first(tmp_path):
    user = tmp_path / "user"
    (user / "bin").mkdir(parents=True)
    (user / "in.cfg").write_text("x")
    cmd = ["mpiexec", "-n", "2", "./bin/app", "in.cfg", "--flag", "out.h5", "/abs"]
    (user / "bin" / "app").write_text("")
    got = trial.resolve_command(cmd, user)
    assert got[:3] == ["mpiexec", "-n", "2"]  # a bare program stays for PATH
    assert got[3] == str(user / "bin" / "app") and got[4] == str(user / "in.cfg")
    assert got[5:] == ["--flag", "out.h5", "/abs"]  # not existing: left alone


def test_wall_time_is_not_polled(tmp_path, monkeypatch):
    """The exit is waited for without a sleep loop (a 0.05 s poll quantised short runs)."""

    def no_sleep(_s):
        raise AssertionError("polled")

    monkeypatch.setattr(time, "sleep", no_sleep)
    out = trial.run_trial({"cb_buffer_size": "1048576"}, opts(tmp_path))
    assert out.ok and out.wall_s >= 0.02


def test_launch_commands():
    assert trial.launch_command("none", 4, ["a", "b"]) == ["a", "b"]
    assert trial.launch_command("srun", 4, ["a"]) == ["srun", "-n", "4", "--export=ALL", "a"]
    cmd = trial.launch_command("mpiexec", 2, ["a"])
    assert cmd[0].endswith("mpiexec") and cmd[1:] == ["-n", "2", "a"]
    # any other launcher is a template: {n} is the ranks, else -n N follows it
    assert trial.launch_command("flux run", 2, ["a"]) == ["flux", "run", "-n", "2", "a"]
    with pytest.raises(ValueError):
        trial.launch_command(" ", 1, ["a"])


def test_objectives_from_profile_kernel_and_wall(tmp_path):
    prof = {
        "schema": "iotune-profile",
        "version": 1,
        "ranks": 2,
        "wall_s": 1.0,
        "layers": {},
        "files": [],
        "config": {},
        "io": {"time_s": 0.5, "bytes_written": 4_000_000, "bytes_read": 0},
    }
    path = tmp_path / "p.json"
    path.write_text(json.dumps(prof))
    lines = [
        "noise",
        'IOTUNE_RESULT {"total_s": 0.25, "bytes": 1000000}',
        'IOTUNE_RESULT {"total_s": 0.75, "bytes": 1000000}',
        "IOTUNE_RESULT {bad",
    ]
    m = objective.Measurement(2.0, objective.read_profile(path), objective.parse_results(lines))
    assert objective.value(m, "auto") == (0.5, "profile")
    assert objective.value(m, "io-time") == (0.5, "profile")
    assert objective.value(m, "kernel") == (1.0, "kernel")
    assert objective.value(m, "wall") == (2.0, "wall")
    assert objective.value(m, "bandwidth") == (pytest.approx(8.0), "profile")
    bare = objective.Measurement(2.0, None, objective.parse_results(lines))
    assert objective.value(bare, "auto") == (1.0, "kernel")
    assert objective.value(bare, "bandwidth") == (pytest.approx(2.0), "kernel")
    with pytest.raises(objective.NoObjective):
        objective.value(bare, "io-time")
    assert objective.value(objective.Measurement(3.0), "auto") == (3.0, "wall")
    assert objective.read_profile(tmp_path / "none.json") is None
    (tmp_path / "other.json").write_text('{"schema": "x"}')
    with pytest.raises(ValueError):
        objective.read_profile(tmp_path / "other.json")
    assert objective.direction("bandwidth") == "maximize"
    assert objective.direction("io-time") == "minimize"


@pytest.mark.skipif(not os.access("/proc/sys/vm/drop_caches", os.W_OK), reason="not root")
def test_drop_caches_as_root():
    assert trial.drop_caches()


def test_one_phase_as_the_objective():
    prof = {
        "ranks": 2,
        "layers": {
            "hdf5": {"writes": 4, "reads": 2, "write_time_s": 3.0, "read_time_s": 1.0},
            "mpiio": {"independent_writes": 8, "write_time_s": 2.5},
        },
    }
    m = objective.Measurement(9.0, prof)
    assert objective.value(m, "write") == (1.5, "profile")  # per rank, outermost layer
    assert objective.value(m, "read") == (0.5, "profile")
    lines = ['IOTUNE_RESULT {"phase": "write", "total_s": 0.3}',
             'IOTUNE_RESULT {"phase": "read", "total_s": 0.2}']  # fmt: skip
    bare = objective.Measurement(9.0, None, objective.parse_results(lines))
    assert objective.value(bare, "read") == (0.2, "kernel")
    writes_only = objective.Measurement(9.0, {"layers": {"posix": {"writes": 1}}})
    with pytest.raises(objective.NoObjective):
        objective.value(writes_only, "read")


@pytest.mark.parametrize("tuner_signalled", [True, False])
def test_an_app_ended_by_sigterm_waits_briefly_for_the_tuners_own(tmp_path, tuner_signalled):
    """scancel signals the application's srun step and the tuner's batch step apart: srun
    can end (143) before the tuner gets its SIGTERM. The trial then ends interrupted (run
    again on resume), not as the application's crash; a SIGTERM of the application alone is
    still its crash, after at most the grace."""
    from iotune import interrupt

    tell = "(sleep 0.2; kill -TERM $PPID) & " if tuner_signalled else ""
    command = ["sh", "-c", f"{tell}kill -TERM $$"]
    o = trial.TrialOptions(command, tmp_path / "work", preload=False, objective="kernel")
    with interrupt.handlers():
        start = time.monotonic()
        if tuner_signalled:
            with pytest.raises(interrupt.Interrupted):
                trial.run_trial({}, o)
        else:
            assert trial.run_trial({}, o).status == "crashed"
        took = time.monotonic() - start
    assert took < trial.SIGNAL_GRACE_S + 0.5
    assert list((tmp_path / "work").iterdir()) == []
