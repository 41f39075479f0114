"""Every application run of a study is counted, also those of a finish that was stopped
half-way (an outside tester: the runs of an interrupted --finish-only, or of a final phase
stopped by SIGTERM, were missing from the next finish's summary.json `runs` and console)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from iotune import final_runs
from iotune.trial import Outcome

HERE = Path(__file__).resolve().parent
FAKE = [sys.executable, str(HERE / "fake_app.py")]


def _args(out):
    return [sys.executable, "-m", "iotune.tune_cli", "--space", str(HERE / "fake_space.toml"),
            "--launcher", "none", "--no-preload", "--objective", "kernel", "--no-progress",
            "--no-kb", "--verify-pairs", "6", "--repeat", "1", "--cap", "0", "--out", str(out),
            "--study", "f"]  # fmt: skip


def _started(pids):
    return len(pids.read_text().split()) if pids.exists() else 0


def test_the_runs_of_a_stopped_finish_are_counted_by_the_next(tmp_path):
    out, pids = tmp_path / "out", tmp_path / "pids"
    env = {**os.environ, "FAKE_APP_PIDS": str(pids), "FAKE_APP_PAUSE": "0.2"}
    r = subprocess.run([*_args(out), "--trials", "5", "--search-only", "--", *FAKE], env=env,
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    searched = _started(pids)  # 4 or 5: a configuration the search proposes again is not rerun
    assert searched in (4, 5), searched
    finish = [*_args(out), "--finish-only"]
    p = subprocess.Popen(finish, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, cwd=tmp_path)  # fmt: skip
    try:
        for line in p.stdout:  # stopped in its verification, after a few pairs' runs
            if "default vs tuned" in line:
                break
        at = _started(pids)
        deadline = time.monotonic() + 60
        while _started(pids) < at + 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 143
    stopped_at = _started(pids)
    assert not (out / "summary.json").exists()
    r = subprocess.run(finish, env=env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    runs = json.loads((out / "summary.json").read_text())["runs"]
    assert runs["total"] == _started(pids), runs  # every run the application made
    assert runs["earlier finishes"] == stopped_at - searched
    assert runs["total"] == sum(v for k, v in runs.items() if k != "total")
    assert f"application runs: {runs['total']} (" in r.stdout
    assert "1 earlier finish (1 stopped before its report)" in r.stdout


def test_a_run_stopped_by_a_signal_is_kept_in_the_study():
    study = optuna.create_study()
    n = {"runs": 0}

    def evaluate(settings, cap):
        n["runs"] += 1
        if n["runs"] == 2:
            return Outcome("failed", returncode=1)
        if n["runs"] == 3:
            raise KeyboardInterrupt  # SIGTERM during the third run
        return Outcome("ok", 1.0, "kernel", 1.0)

    counter, name = final_runs.kept_in(study, evaluate)
    counter.phase = "verification"
    with pytest.raises(KeyboardInterrupt):
        for _ in range(3):
            counter({}, None)
    assert study.user_attrs[name] == {"runs": {"verification": 3},
                                      "failed": {"verification": 1}, "ended": False}  # fmt: skip
    assert final_runs.earlier(study) == {"finishes": 1, "stopped": 1, "runs": 3, "failed": 1}
    again, name2 = final_runs.kept_in(study, evaluate)
    again({}, None)
    final_runs.ended(study, name2, again)
    assert final_runs.earlier(study, but=name2)["runs"] == 3
    assert final_runs.earlier(study) == {"finishes": 2, "stopped": 1, "runs": 4, "failed": 1}


def test_damaged_records_of_earlier_finishes_count_nothing():
    study = optuna.create_study()
    for i, v in enumerate([[3], {"runs": "x"}, {"runs": {"a": -2, "b": True, "c": 2.5}},
                           {"runs": {"verification": 4}, "failed": None}]):  # fmt: skip
        study.set_user_attr(f"{final_runs.FINISH}{i}", v)
    assert final_runs.earlier(study) == {"finishes": 3, "stopped": 3, "runs": 4, "failed": 0}
