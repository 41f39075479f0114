"""Two studies whose trials would run in the same directory at once (not isolated: the
application runs where `iotune tune` was started) are refused, one message naming the other
(an outside tester: two studies with different --out started in one directory read and
clobbered each other's output files). Isolated trials run in scratch directories of their own."""

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iotune import identity

HERE = Path(__file__).resolve().parent
FAKE = [sys.executable, str(HERE / "fake_app.py")]


def _hold(where, ready, release):
    with identity.trials_alone(where, "first", where / "out-a"):
        ready.set()
        release.wait(30)


def test_a_second_study_in_the_same_directory_is_refused_until_the_first_ends(tmp_path):
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold, args=(tmp_path, ready, release))
    p.start()
    try:
        assert ready.wait(30)
        with pytest.raises(identity.Busy) as e:
            with identity.trials_alone(tmp_path / "." / "", "second", tmp_path / "out-b"):
                pass
        said = str(e.value)
        assert f"process {p.pid}: study 'first', results in {tmp_path / 'out-a'}" in said
        assert f"runs its trials in {tmp_path}" in said and "--isolate" in said
        (tmp_path / "other").mkdir()
        with identity.trials_alone(tmp_path / "other", "second", tmp_path / "out-b"):
            pass  # another directory is not held
    finally:
        release.set()
        p.join(30)
    with identity.trials_alone(tmp_path, "second", tmp_path / "out-b"):
        pass  # free once the first has ended


def _tune(tmp_path, out, *extra, env=None):
    return [sys.executable, "-m", "iotune.tune_cli", "--space", str(HERE / "fake_space.toml"),
            "--launcher", "none", "--no-preload", "--objective", "kernel", "--no-progress",
            "--no-kb", "--cap", "0", "--verify-pairs", "5", "--repeat", "1", "--leaders", "1",
            "--no-partial", "--out", str(out), *extra, "--", *FAKE]  # fmt: skip


def test_tune_refuses_a_study_whose_trials_would_share_the_directory(tmp_path):
    pids = tmp_path / "pids"
    env = {**os.environ, "FAKE_APP_PIDS": str(pids), "FAKE_APP_PAUSE": "30"}
    first = subprocess.Popen(_tune(tmp_path, tmp_path / "a", "--trials", "3"), cwd=tmp_path,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not pids.exists() and time.monotonic() < deadline:  # its baseline runs
            time.sleep(0.05)
        assert pids.exists()
        quick = {**os.environ, "FAKE_APP_PIDS": str(tmp_path / "pids-b")}
        r = subprocess.run(_tune(tmp_path, tmp_path / "b", "--trials", "2"), cwd=tmp_path,
                           env=quick, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"another `iotune tune` (process {first.pid}: study " in r.stderr
        assert f"results in {tmp_path / 'a'}) runs its trials in {tmp_path}" in r.stderr
        assert "Traceback" not in r.stderr
        assert not (tmp_path / "pids-b").exists()  # nothing of it ran
        assert not (tmp_path / "b").exists()  # nor was anything of it left behind
        # isolated, each trial has a scratch directory of its own: not refused
        r = subprocess.run(_tune(tmp_path, tmp_path / "b", "--trials", "2", "--isolate"),
                           cwd=tmp_path, env=quick, capture_output=True, text=True,
                           timeout=300)  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
