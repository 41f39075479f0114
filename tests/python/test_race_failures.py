"""Runs that fail while the leaders are raced or re-measured count as the verification's do:
a leader under which the application failed there while it never failed with the defaults is
not recommended (an outside tester: a leader that failed in the race was still chosen, its
failure dropped with the run)."""

import random
from pathlib import Path

import optuna
import pytest

from iotune import race, space, verdict
from iotune.kb import match
from iotune.trial import Outcome
from iotune.tune_config import TuneConfig

SPACE = space.parse(
    {
        "params": {
            "cb_buffer_size": {"values": ["1M", "4M", "16M"], "default": "16M"},
            "fill_time": {"values": ["ifset", "never"], "default": "ifset"},
        }
    }
)
FAST, OTHER = "fill_time=never", "cb_buffer_size=4194304"
TIMES = {"(defaults)": 1.0, FAST: 0.5, OTHER: 0.7}


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def _cfg(tmp_path: Path, strategy: str) -> TuneConfig:
    return TuneConfig(app=["x"], out=tmp_path, space=SPACE, strategy=strategy, leaders=2)


def _study():
    study = optuna.create_study()
    for key, v in TIMES.items():
        settings = dict(kv.split("=") for kv in key.split(";")) if key != "(defaults)" else {}
        study.add_trial(
            optuna.trial.create_trial(
                params={}, distributions={}, value=v,
                user_attrs={"key": key, "settings": settings, "status": "ok", "wall_s": v},
            )
        )  # fmt: skip
    return study


def _app(fails: dict[str, set[int]]):
    """TIMES, except that the n-th run (from 1) of a configuration in fails[key] fails."""
    seen: dict[str, int] = {}

    def evaluate(settings, cap):
        key = space.config_key(settings)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] in fails.get(key, set()):
            return Outcome("failed", returncode=1, message="exit 1")
        return Outcome("ok", TIMES[key], "kernel", TIMES[key])

    return evaluate


@pytest.mark.parametrize("strategy", ["local", "tpe"])
def test_a_leader_that_failed_while_the_defaults_did_not_is_not_chosen(tmp_path, strategy):
    cfg = _cfg(tmp_path, strategy)
    measure = race.race_leaders if strategy == "local" else race.remeasure_leaders
    clean = measure(cfg, _study(), _app({}), random.Random(0))
    assert clean["best"] == FAST and clean["failed"] == {}
    got = measure(cfg, _study(), _app({FAST: {2}}), random.Random(0))
    assert got["best"] == OTHER, got  # the next leader, which never failed
    assert got["failed"] == {FAST: 1}
    why = got["not_recommended"][FAST]
    assert why.startswith("the application failed in 1 of ") and "not recommended" in why
    # a study that files it in the knowledge base does not offer it as a runner-up either
    assert FAST not in [space.config_key(r["settings"]) for r in match.runners_up(
        {"leaders": got})]  # fmt: skip


def test_a_leader_that_fails_leaves_the_race_at_once(tmp_path):
    calls = []
    app = _app({FAST: {1}})

    def evaluate(settings, cap):
        calls.append(space.config_key(settings))
        return app(settings, cap)

    got = race.race_leaders(_cfg(tmp_path, "local"), _study(), evaluate, random.Random(0))
    assert calls.count(FAST) == 1 and got["left"][FAST] == 1


@pytest.mark.parametrize("strategy", ["local", "tpe"])
def test_failures_with_the_defaults_too_are_not_blamed_on_the_settings(tmp_path, strategy):
    cfg = _cfg(tmp_path, strategy)
    study = _study()
    if strategy == "tpe":  # the defaults among the leaders re-measured
        cfg = TuneConfig(app=["x"], out=tmp_path, space=SPACE, strategy=strategy, leaders=3)
    measure = race.race_leaders if strategy == "local" else race.remeasure_leaders
    got = measure(cfg, study, _app({FAST: {2}, "(defaults)": {1}}), random.Random(0))
    assert got["best"] == FAST and "not_recommended" not in got
    assert got["failed"] == {FAST: 1, "(defaults)": 1}


def test_every_leader_failing_keeps_the_defaults_and_says_why(tmp_path):
    cfg = _cfg(tmp_path, "tpe")
    got = race.remeasure_leaders(cfg, _study(), _app({FAST: {1}, OTHER: {1}}), random.Random(0))
    assert got["best"] == "(defaults)" and got["best_settings"] == {}
    assert set(got["not_recommended"]) == {FAST, OTHER}
    head = verdict.headline({}, None, False, none_better="the application failed with them")
    assert head["text"].startswith("no better setting found: the application failed with them")


def test_a_reduction_to_a_leader_that_failed_keeps_the_whole_winner(tmp_path):
    from iotune import reduction

    cfg = _cfg(tmp_path, "tpe")
    whole = {"fill_time": "never", "cb_buffer_size": "4194304"}
    reduced = {"settings": {"fill_time": "never"}, "contributions": {}, "removed": {
        "cb_buffer_size": {}}, "runs": 10}  # fmt: skip

    def evaluate(settings, cap):
        raise AssertionError("no check is measured: the reduced set was not to be recommended")

    said = []
    got = reduction.checked_reduction(cfg, whole, reduced, evaluate, False, random.Random(0),
                                      said.append, {FAST: "the application failed in 1 of 3 "
                                                    "runs: not recommended"})  # fmt: skip
    assert got["settings"] == whole and got["rejected"]["settings"] == {"fill_time": "never"}
    assert "the whole verified winner is kept" in said[0]
