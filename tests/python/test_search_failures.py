"""A configuration the application failed under in a search trial (while it never failed with
the defaults) is never recommended, however its other trials measured: it is no contender in
the race or the re-measurement, as one that fails there or in the verification (an outside
tester: a setting that crashed the application in one search trial and ran fast in another
was the winner, and best.xml). The reductions after the additions are told these too."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from iotune import race, reduction, space
from iotune.trial import Outcome
from iotune.tune_config import TuneConfig

HERE = Path(__file__).resolve().parent
FAST = "cb_buffer_size=1048576"
# cb_buffer_size=1M: 3x faster than the defaults, but the application fails the 2nd time it
# runs with it (the search measures a new leader again with --confirm); never again after.
# Every other setting costs time: only cb_buffer_size=1M alone beats the defaults
APP = """
import json, os, re, sys, time
settings = {}
path = os.environ.get("IOTUNE_CONFIG")
if path:
    with open(path, encoding="utf-8") as f:
        found = re.findall(r"<(\\w+)>([^<]*)</\\1>", f.read())
        settings = {k: v for k, v in found if k != "Parameters"}
t = 0.06 + 0.04 * sum(1 for k in settings if k != "cb_buffer_size")
if settings.get("cb_buffer_size") == "1048576":
    with open(os.environ["FAST_RUNS"], "a", encoding="utf-8") as f:
        f.write("x")
    with open(os.environ["FAST_RUNS"], encoding="utf-8") as f:
        n = len(f.read())
    if n == 2:
        print("app: failed with the fast buffer", file=sys.stderr)
        sys.exit(3)
    t -= 0.04
time.sleep(t)
print("IOTUNE_RESULT " + json.dumps({"kernel": "fake", "phase": "write", "ranks": 1,
                                      "bytes": 10**6, "total_s": t}))
"""


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_a_configuration_that_failed_in_the_search_is_not_recommended(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(APP)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "iotune.tune_cli", "--space", str(HERE / "fake_space.toml"),
           "--launcher", "none", "--no-preload", "--objective", "kernel", "--no-progress",
           "--no-kb", "--trials", "6", "--confirm", "3", "--verify-pairs", "6", "--repeat", "2",
           "--cap", "0", "--out", str(out), "--study", "s", "--", sys.executable,
           str(app)]  # fmt: skip
    env = {**os.environ, "FAST_RUNS": str(tmp_path / "fast_runs")}
    r = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{out / 'study.db'}")
    trials = [t for t in study.get_trials() if t.user_attrs.get("key") == FAST]
    states = [t.state.name for t in trials]
    assert "FAIL" in states and "COMPLETE" in states, states  # failed once, ran fast too
    summary = json.loads((out / "summary.json").read_text())
    leaders = summary["leaders"]
    assert FAST not in leaders["leaders"] and FAST not in leaders["values"], leaders
    why = leaders["not_recommended"][FAST]
    assert why.startswith("the application failed in 1 of ") and "trials of the search" in why
    assert "cb_buffer_size" not in summary["recommended"], summary["recommended"]
    assert "cb_buffer_size" not in summary["best_settings"]
    assert "cb_buffer_size" not in (out / "best.xml").read_text()
    assert why in r.stdout  # said, so that it cannot go unseen


SPACE = space.parse(
    {
        "params": {
            "cb_buffer_size": {"values": ["1M", "4M", "16M"], "default": "16M"},
            "fill_time": {"values": ["ifset", "never"], "default": "ifset"},
        }
    }
)
NEVER, FOUR = {"fill_time": "never"}, {"cb_buffer_size": "4194304"}


def _trial(settings, value=None, status="ok"):
    key = space.config_key(settings)
    attrs = {"key": key, "settings": dict(settings), "status": status, "wall_s": value or 1.0}
    state = optuna.trial.TrialState.COMPLETE if status == "ok" else optuna.trial.TrialState.FAIL
    return optuna.trial.create_trial(
        params={}, distributions={}, value=value, state=state, user_attrs=attrs
    )


def _study(*trials):
    study = optuna.create_study()
    for t in trials:
        study.add_trial(t)
    return study


def test_search_failures_are_the_applications_and_not_the_defaults():
    none = "(defaults)"
    study = _study(_trial({}, None, "failed"), _trial({}, 1.0), _trial(NEVER, 0.5),
                   _trial(NEVER, None, "crashed"), _trial(FOUR, None, "interrupted"),
                   _trial(FOUR, 0.7))  # fmt: skip
    # a baseline that failed before the defaults ever ran (the study stopped there) is not
    # the settings' fault; a trial a signal stopped is not the application's failure
    assert list(race.search_failures(study)) == ["fill_time=never"]
    assert "1 of 2 trials of the search" in race.search_failures(study)["fill_time=never"]
    study.add_trial(_trial({}, None, "timeout"))  # it fails with the defaults too: not theirs
    assert race.search_failures(study) == {}
    assert none not in race.search_failures(_study(_trial({}, 1.0), _trial({}, None, "failed")))


@pytest.mark.parametrize("strategy", ["local", "tpe"])
def test_a_leader_that_failed_in_the_search_is_no_contender(tmp_path, strategy):
    cfg = TuneConfig(app=["x"], out=tmp_path, space=SPACE, strategy=strategy, leaders=2)
    study = _study(_trial({}, 1.0), _trial(NEVER, 0.5), _trial(NEVER, None, "failed"),
                   _trial(FOUR, 0.7), _trial({"cb_buffer_size": "1048576"}, 0.9))  # fmt: skip
    times = {"(defaults)": 1.0, "fill_time=never": 0.5, "cb_buffer_size=4194304": 0.7,
             "cb_buffer_size=1048576": 0.9}  # fmt: skip
    ran = []

    def evaluate(settings, cap):
        ran.append(space.config_key(settings))
        v = times[space.config_key(settings)]
        return Outcome("ok", v, "kernel", v)

    measure = race.race_leaders if strategy == "local" else race.remeasure_leaders
    got = measure(cfg, study, evaluate, random.Random(0))
    assert "fill_time=never" not in ran and got["best"] == "cb_buffer_size=4194304", got
    assert "trials of the search" in got["not_recommended"]["fill_time=never"]
    assert set(got["leaders"]) >= {"cb_buffer_size=4194304", "cb_buffer_size=1048576"}


def _additions_study():
    """The search's trials: fill_time=never clearly better among those with cb_buffer_size=4M
    (the addition), and fill_time=never alone once failed."""
    trials = [_trial({}, 1.0)]
    for i in range(4):
        trials.append(_trial(FOUR, 0.7 + 0.01 * i))
        trials.append(_trial({**FOUR, **NEVER}, 0.5 + 0.01 * i))
    return _study(*trials, _trial(NEVER, 0.5), _trial(NEVER, None, "failed"))


def _times(settings, n=[0]):  # noqa: B006 (a counter: a little noise per run)
    n[0] += 1
    base = 0.5 if settings.get("fill_time") == "never" else 0.7 if settings else 1.0
    v = base * (1 + 0.01 * (n[0] % 3))
    return Outcome("ok", v, "kernel", v)


def test_the_reduction_after_the_additions_is_told_which_leaders_failed(tmp_path):
    cfg = TuneConfig(app=["x"], out=tmp_path, space=SPACE, strategy="tpe")
    study = _additions_study()
    failing = race.search_failures(study)
    assert list(failing) == ["fill_time=never"]
    # the reduction kept the whole winner (4M): what it left did not beat the defaults
    reduced = {"settings": dict(FOUR), "contributions": {}, "removed": {},
               "rejected": {"settings": {}, "removed": {}}}  # fmt: skip
    said = []
    got = reduction.with_additions(cfg, study, dict(FOUR), reduced, set(), lambda s, c: _times(s),
                                   False, random.Random(0), said.append, failing)  # fmt: skip
    assert got["additions"]["added"] == ["fill_time"]
    assert got["settings"] != NEVER, got  # reduced again to the leader that failed: never
    assert got["settings"] == {**FOUR, **NEVER}
    assert any("a leader that was not recommended" in line for line in said), said


def test_a_set_with_the_additions_that_failed_is_not_recommended(tmp_path):
    cfg = TuneConfig(app=["x"], out=tmp_path, space=SPACE, strategy="tpe")
    study = _additions_study()
    with_it = space.config_key({**FOUR, **NEVER})
    failing = {with_it: f"the application failed in 1 of 5 runs of the race with {with_it}"}
    reduced = {"settings": dict(FOUR), "contributions": {}, "removed": {}}
    said = []
    got = reduction.with_additions(cfg, study, dict(FOUR), reduced, set(), lambda s, c: _times(s),
                                   False, random.Random(0), said.append, failing)  # fmt: skip
    assert got["settings"] == FOUR and got["additions"]["added"] == []
    assert got["additions"]["rejected"]["verdict"] == failing[with_it]


def test_only_a_failed_setting_that_would_have_led_is_said_to_have_led(tmp_path):
    """The verdict's "the defaults were the best measured of the leading settings the application
    did not fail with" counts the leaders only, not a slow setting that failed once."""
    cfg = TuneConfig(app=["x"], out=tmp_path, space=SPACE, strategy="tpe", leaders=2, repeat=1)
    slow = {"cb_buffer_size": "1048576"}
    study = _study(_trial({}, 1.0), _trial(NEVER, 0.5), _trial(NEVER, None, "failed"),
                   _trial(FOUR, 0.7), _trial(slow, 2.0), _trial(slow, None, "crashed"))  # fmt: skip
    got = race.remeasure_leaders(cfg, study, lambda s, c: _times(s), random.Random(0))
    assert set(got["not_recommended"]) == {"fill_time=never", "cb_buffer_size=1048576"}
    assert got["failed_leaders"] == ["fill_time=never"]
