"""The application's runs for its motif signature (--warm-start kb's, before the search, and
the knowledge-base entry's, at the finish) are counted with the study's other runs, as their
own phase (an outside tester: `--warm-start kb`'s profiling run was in neither summary.json's
`runs` nor the console's "application runs" line)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna

from iotune import space, study_kb
from iotune.tune_config import TuneConfig

HERE = Path(__file__).resolve().parent
FAKE = [sys.executable, str(HERE / "fake_app.py")]


def _args(out):
    return [sys.executable, "-m", "iotune.tune_cli", "--space", str(HERE / "fake_space.toml"),
            "--launcher", "none", "--objective", "kernel", "--no-progress", "--verify-pairs",
            "6", "--repeat", "1", "--cap", "0", "--out", str(out), "--study", "k"]  # fmt: skip


def test_the_signature_runs_are_counted_whichever_worker_made_them(tmp_path, libiotune):
    out, pids = tmp_path / "out", tmp_path / "pids"
    env = {**os.environ, "FAKE_APP_PIDS": str(pids), "IOTUNE_LIB": str(libiotune),
           "IOTUNE_KB": str(tmp_path / "kb.sqlite")}  # fmt: skip
    r = subprocess.run([*_args(out), "--trials", "4", "--search-only", "--warm-start", "kb",
                        "--", *FAKE], env=env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    searched = len(pids.read_text().split())
    s = optuna.load_study(study_name="k", storage=f"sqlite:///{out / 'study.db'}")
    trials = sum(t.user_attrs.get("status") != "forbidden" for t in s.get_trials())
    assert searched == trials + 1, (searched, trials)  # every trial that ran, and the profile
    # the finish files the study in the knowledge base: the signature's run again (this
    # process has none), counted too
    r = subprocess.run([*_args(out), "--finish-only"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    runs = json.loads((out / "summary.json").read_text())["runs"]
    assert runs["total"] == len(pids.read_text().split()), runs  # every run the app made
    assert runs["kb profile"] == 2, runs  # the warm start's, kept in the study, and the entry's
    assert runs["total"] == sum(v for k, v in runs.items() if k != "total")
    assert f"application runs: {runs['total']} (search {runs['search']}, kb profile 2" in r.stdout


def test_damaged_records_of_signature_runs_count_nothing(tmp_path):
    s = optuna.create_study()
    for i, v in enumerate([2, "3", True, -1, 1.5, None, {"runs": 4}]):
        s.set_user_attr(f"{study_kb.PROFILE_RUNS}{i}", v)
    assert study_kb.profile_runs(s) == 2
    cfg = TuneConfig(app=["x"], out=tmp_path, space=space.load(HERE / "fake_space.toml"))
    study_kb.keep_runs(s, cfg)  # none made: nothing kept
    assert study_kb.profile_runs(s) == 2
    cfg.profile_runs = 1
    study_kb.keep_runs(s, cfg)
    assert study_kb.profile_runs(s) == 3 and cfg.profile_runs == 0
