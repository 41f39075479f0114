"""The default strategy's local search, its early stop (--min-gain), the race of the leaders
and the count of every application run (issue 25)."""

import random
from pathlib import Path

import optuna
import pytest

from iotune import race, space
from iotune.final_runs import RunCounter, measure_once
from iotune.race import race_leaders
from iotune.search import get_strategy, local, loop, warmstart
from iotune.study import search_runs
from iotune.trial import Outcome
from iotune.tune_config import TuneConfig

SPACE = space.parse(
    {
        "params": {
            "cb_buffer_size": {"values": ["1M", "4M", "16M", "64M"], "default": "16M"},
            "romio_cb_write": {"values": ["automatic", "disable"], "default": "automatic"},
            "fill_time": {"values": ["ifset", "never"], "default": "ifset"},
        },
        "guesses": [{"name": "no fill", "settings": {"fill_time": "never"}}],
    }
)


def separable(settings):
    """1.0 s at the defaults; fill_time=never halves it, cb_buffer_size=4M takes 20 % off."""
    t = 1.0
    if settings.get("fill_time") == "never":
        t *= 0.5
    if settings.get("cb_buffer_size") == "4194304":
        t *= 0.8
    return t


def deterministic(settings, cap):
    v = separable(settings)
    return Outcome("ok", v, "kernel", v)


def new_study(seed=0):
    s = get_strategy("local")
    study = optuna.create_study(sampler=s.sampler(seed, len(SPACE.guesses)))
    warmstart.enqueue(study, SPACE, s.warm_start)
    return study


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_no_gain_streak_counts_trials_since_the_last_gain_of_min_gain():
    assert local.no_gain_streak([1.0], 0.05, False) == 0
    assert local.no_gain_streak([1.0, 0.99, 0.98, None], 0.05, False) == 3  # 1-2 %: no gain
    assert local.no_gain_streak([1.0, 0.99, 0.5, 0.7], 0.05, False) == 1  # 2x at the 3rd
    assert local.no_gain_streak([1.0, 2.0], 0.05, True) == 0  # maximised: more is better
    assert local.gain(0.5, 1.0, False) == pytest.approx(1.0)


def test_local_search_walks_to_the_best_and_stops_at_the_local_optimum():
    study = new_study()
    loop.run(study, SPACE, deterministic, budget=30, neighbours=True, min_gain=0.05)
    inc = loop.incumbent(study, False)
    assert inc.settings == {"fill_time": "never", "cb_buffer_size": "4194304"}
    assert inc.median == pytest.approx(0.4)
    why = study.user_attrs[local.STOPPED]
    assert why.startswith("local optimum"), why
    # every one-parameter change of the best was measured, and nothing is left queued
    assert not local.neighbours(study, SPACE, inc.settings, list(SPACE.distributions()))
    assert all(t.state.name != "WAITING" for t in study.trials)
    assert len(study.trials) < 16  # the space has 16 configurations: it stopped before them all
    origins = [t.user_attrs.get("origin", "") for t in study.trials]
    assert origins[:2] == ["defaults", "guess: no fill"]
    assert any(o.startswith(local.NEIGHBOUR) for o in origins)


def test_without_min_gain_the_search_uses_its_budget_and_leaves_nothing_queued():
    study = new_study()
    loop.run(study, SPACE, deterministic, budget=9, neighbours=True, min_gain=None)
    assert loop.used(study) == 9 and local.STOPPED not in study.user_attrs
    assert all(t.state.name != "WAITING" for t in study.trials)


def test_no_progress_stops_a_flat_search():
    rng = random.Random(1)

    def flat(settings, cap):  # no setting changes anything: 1 s +- 1 %
        v = 1.0 + rng.uniform(-0.01, 0.01)
        return Outcome("ok", v, "kernel", v)

    study = new_study()
    loop.run(study, SPACE, flat, budget=30, neighbours=True, min_gain=0.05, patience=4)
    why = study.user_attrs[local.STOPPED]
    assert why.startswith(("no progress", "local optimum")), why
    assert loop.used(study) <= 6  # the baseline, the guess, 4 trials without a 5 % gain


def test_a_stopped_study_continued_stops_again_at_once():
    study = new_study()
    loop.run(study, SPACE, deterministic, budget=30, neighbours=True, min_gain=0.05)
    n = len(study.trials)
    loop.run(study, SPACE, deterministic, budget=30, neighbours=True, min_gain=0.05)
    assert len(study.trials) == n


def _cfg(tmp_path: Path, **kw) -> TuneConfig:
    return TuneConfig(app=["x"], out=tmp_path, space=SPACE, strategy="local", **kw)


def _study_with(measured: dict[str, list[float]]):
    study = optuna.create_study()
    for key, values in measured.items():
        settings = dict(kv.split("=") for kv in key.split(";")) if key != "(defaults)" else {}
        for v in values:
            study.add_trial(
                optuna.trial.create_trial(
                    params={},
                    distributions={},
                    value=v,
                    user_attrs={"key": key, "settings": settings, "status": "ok", "wall_s": v},
                )
            )
    return study


def test_the_race_drops_the_defaults_when_a_leader_is_faster_in_every_run(tmp_path):
    study = _study_with({"(defaults)": [1.0], "fill_time=never": [0.5], "romio_cb_write=disable":
                         [0.6]})  # fmt: skip
    times = {"(defaults)": 1.0, "fill_time=never": 0.5, "romio_cb_write=disable": 0.9}
    calls = []

    def evaluate(settings, cap):
        key = space.config_key(settings)
        calls.append(key)
        return Outcome("ok", times[key], "kernel", times[key])

    res = race_leaders(_cfg(tmp_path), study, evaluate, random.Random(0))
    assert res["best_settings"] == {"fill_time": "never"}
    assert res["left"] == {"(defaults)": 2, "romio_cb_write=disable": 2}
    assert res["rounds"] == 2 and len(calls) == 6  # 3 contenders, 2 rounds: no third round


def _noisy(times: dict[str, float], wobble: list[float]):
    """An evaluate whose n-th run of a configuration takes its time x wobble[n % len]."""
    seen: dict[str, int] = {}

    def evaluate(settings, cap):
        key = space.config_key(settings)
        n = seen[key] = seen.get(key, -1) + 1
        v = times[key] * wobble[n % len(wobble)]
        return Outcome("ok", v, "kernel", v)

    return evaluate


def test_the_race_keeps_the_defaults_when_nothing_leaves_them_behind(tmp_path):
    study = _study_with({"(defaults)": [1.0], "fill_time=never": [0.8]})  # a lucky run
    evaluate = _noisy({"(defaults)": 1.0, "fill_time=never": 0.98}, [1.0, 0.93, 1.06])
    res = race_leaders(_cfg(tmp_path), study, evaluate, random.Random(0))
    assert res["best_settings"] == {} and res["left"] == {}  # keep the defaults: no verification
    assert res["rounds"] == 2  # the choice is the defaults after round 2: no third round


def test_without_the_early_keep_the_race_runs_its_third_round(tmp_path, monkeypatch):
    from iotune import race

    monkeypatch.setattr(race, "RACE_EARLY_KEEP", False)
    study = _study_with({"(defaults)": [1.0], "fill_time=never": [0.8]})
    evaluate = _noisy({"(defaults)": 1.0, "fill_time=never": 0.98}, [1.0, 0.93, 1.06])
    res = race_leaders(_cfg(tmp_path), study, evaluate, random.Random(0))
    assert res["best_settings"] == {} and res["rounds"] == 3


def test_a_noisy_race_that_keeps_the_defaults_in_sends_a_real_gain_to_the_verification(
    tmp_path,
):
    """A 1.6x gain at a CV of about 35 %: three rounds leave nobody behind, but the defaults'
    median is beaten by far more than min_gain, so the candidate goes to the verification (the
    demo kept its defaults against such a gain when the defaults' staying in decided)."""
    study = _study_with({"(defaults)": [1.0], "fill_time=never": [0.62]})
    # each run of one wobbles so that neither is slower in every fresh run than the other
    evaluate = _noisy({"(defaults)": 1.0, "fill_time=never": 0.62}, [0.55, 1.0, 1.7])
    res = race_leaders(_cfg(tmp_path), study, evaluate, random.Random(0))
    assert res["left"] == {} and res["rounds"] == 3
    assert res["best_settings"] == {"fill_time": "never"}


def test_the_race_prefers_fewer_settings_within_min_gain(tmp_path):
    both, one = "cb_buffer_size=1048576;fill_time=never", "fill_time=never"
    study = _study_with({"(defaults)": [1.0], both: [0.49], one: [0.5]})
    times = {"(defaults)": 1.0, both: 0.49, one: 0.5}
    wobble = [1.0, 0.96, 1.03]
    res = race_leaders(_cfg(tmp_path), study, _noisy(times, wobble), random.Random(0))
    assert res["left"] == {"(defaults)": 2}
    assert res["best_settings"] == {"fill_time": "never"}  # 2 % slower, one setting fewer
    res = race_leaders(_cfg(tmp_path, min_gain=0.01), study, _noisy(times, wobble),
                       random.Random(0))  # fmt: skip
    assert res["best_settings"] == {"cb_buffer_size": "1048576", "fill_time": "never"}


def test_the_run_counter_counts_phases_and_warm_ups():
    counter = RunCounter(deterministic)
    counter.phase = "verification"
    measure_once(counter, {}, 2)
    assert counter.runs == {"warm-up": 2, "verification": 1}


def test_search_runs_counts_what_ran_not_what_was_refused():
    study = optuna.create_study()
    for status, state in (("ok", "COMPLETE"), ("forbidden", "PRUNED"), ("capped", "PRUNED"),
                          ("failed", "FAIL")):  # fmt: skip
        study.add_trial(
            optuna.trial.create_trial(
                params={},
                distributions={},
                value=1.0 if state == "COMPLETE" else None,
                state=getattr(optuna.trial.TrialState, state),
                user_attrs={"status": status},
            )
        )
    assert search_runs(study) == 3


def test_a_race_started_from_the_search_runs_lets_a_contender_leave_after_one_round(
    tmp_path, monkeypatch
):
    """With RACE_REUSE, the search's runs count: a leader faster than the defaults in the
    baseline and in one fresh run each sends the defaults out after the first round."""

    monkeypatch.setattr(race, "RACE_REUSE", True)
    study = _study_with({"(defaults)": [1.0], "fill_time=never": [0.5]})
    times = {"(defaults)": 1.0, "fill_time=never": 0.5}
    res = race_leaders(_cfg(tmp_path), study, _noisy(times, [1.0]), random.Random(0))
    assert res["left"] == {"(defaults)": 1} and res["rounds"] == 1
    assert res["reused"] == {"(defaults)": 1, "fill_time=never": 1}
    assert res["best_settings"] == {"fill_time": "never"}
    monkeypatch.setattr(race, "RACE_REUSE", False)  # fresh runs only: a second round
    res = race_leaders(_cfg(tmp_path), study, _noisy(times, [1.0]), random.Random(0))
    assert res["left"] == {"(defaults)": 2} and res["rounds"] == 2 and res["reused"] == {}


def _pairs_of(ratio: float, wobble: list[float]):
    """An evaluate: the defaults take 1.0 s, the tuned settings 1/ratio s, each run x wobble."""
    times = {"(defaults)": 1.0, "fill_time=never": 1.0 / ratio}
    return _noisy(times, wobble)


@pytest.mark.parametrize("ratio", [1.0, 1.01])
def test_a_verification_stops_once_its_gain_lies_below_min_gain(tmp_path, ratio):
    """No gain (or 1 %) at a 2 % noise: the interval lies below 5 % after a few pairs, and the
    local strategy's verification stops there (keep the defaults) instead of running on to
    the futility bound; without min_gain it runs on."""
    from iotune.pairs import FUTILITY_PAIRS, verify

    wobble = [1.0, 1.02, 0.98, 1.01, 0.99]
    stopped = verify(_cfg(tmp_path), {"fill_time": "never"}, _pairs_of(ratio, wobble), False,
                     random.Random(1), too_small=0.05)  # fmt: skip
    assert not stopped["improved"] and stopped["below_min_gain"]
    assert FUTILITY_PAIRS <= stopped["pairs"] < 8
    assert "below a gain of 5% (--min-gain)" in stopped["verdict"]
    full = verify(_cfg(tmp_path), {"fill_time": "never"}, _pairs_of(ratio, wobble), False,
                  random.Random(1))  # fmt: skip
    assert not full["below_min_gain"] and full["pairs"] > stopped["pairs"]


def test_a_real_gain_is_not_stopped_by_the_min_gain_futility(tmp_path):
    """A 1.5x gain at a 30 % noise: the interval never lies below 5 %; the test decides."""
    from iotune.pairs import verify

    wobble = [1.0, 1.3, 0.75, 1.1, 0.85, 1.2]
    res = verify(_cfg(tmp_path), {"fill_time": "never"}, _pairs_of(1.5, wobble), False,
                 random.Random(2), too_small=0.05)  # fmt: skip
    assert res["improved"] and not res["below_min_gain"]


COMPONENT_SPACE = space.parse(
    {
        "params": {
            "io": {"values": ["ompio", "romio321"], "default": "ompio"},
            "fcoll": {"values": ["dynamic", "two_phase"]},
            "io_ompio_bytes_per_agg": {"values": ["1M", "32M"], "default": "32M"},
            "romio_cb_write": {"values": ["automatic", "disable"], "default": "automatic"},
        }
    }
)


def test_neighbours_change_only_what_the_centres_mpiio_component_reads():
    """Under ROMIO (io=romio321) OMPIO's parameters are never read, under OMPIO ROMIO's hints:
    changing them alone measures the centre again (the OMPIO landscape, bench/README.md)."""
    sp = COMPONENT_SPACE
    study = optuna.create_study()
    names = list(sp.distributions())
    under_romio = {n for n, _ in local.neighbours(study, sp, {"io": "romio321"}, names)}
    assert under_romio == {"io", "romio_cb_write"}
    under_ompio = {n for n, _ in local.neighbours(study, sp, {}, names)}
    assert under_ompio == {"io", "fcoll", "io_ompio_bytes_per_agg"}
    # a space without the component searched: every parameter is a neighbour (as before)
    plain = space.parse(
        {
            "params": {
                "fcoll": {"values": ["dynamic", "two_phase"]},
                "romio_cb_write": {"values": ["automatic", "disable"], "default": "automatic"},
            }
        }
    )
    found = {n for n, _ in local.neighbours(study, plain, {}, list(plain.distributions()))}
    assert found == {"fcoll", "romio_cb_write"}
