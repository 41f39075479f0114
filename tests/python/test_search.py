"""Strategies (the genetic preset is H5Evolve's), noise statistics, capping and the loop."""

import math
import random

import optuna
import pytest

from iotune import space
from iotune.search import get_strategy, loop, noise, strategies, warmstart
from iotune.search.capping import Capping
from iotune.trial import Outcome

SPACE = space.parse(
    {
        "params": {
            "cb_buffer_size": {"ladder": ["1M", "64M"], "default": "16M"},
            "romio_cb_write": {
                "values": ["automatic", "enable", "disable"],
                "default": "automatic",
            },
            "fill_time": {"values": ["ifset", "alloc", "never"], "default": "ifset"},
        },
        "constraints": [{"forbid": {"fill_time": "alloc", "romio_cb_write": "enable"}}],
        "guesses": [{"name": "no fill", "settings": {"fill_time": "never"}}],
    }
)


def landscape(settings):
    """A deterministic objective: 1.0 s at the defaults, best 0.25 s."""
    t = 1.0
    if settings.get("fill_time") == "never":
        t *= 0.5
    cb = int(settings.get("cb_buffer_size", 16 << 20))
    return t * (0.5 + 0.1 * abs(math.log2(cb / (2 << 20))))


def fake_eval(settings, cap):
    if settings.get("romio_cb_write") == "enable":
        return Outcome("crashed", wall_s=0.1)
    v = landscape(settings)
    if cap is not None and v > cap:
        return Outcome("capped", wall_s=cap)
    return Outcome("ok", v, "kernel", v)


def new_study(strategy, seed=0, guesses=True):
    s = get_strategy(strategy)
    study = optuna.create_study(sampler=s.sampler(seed, len(SPACE.guesses)))
    warmstart.enqueue(study, SPACE, guesses and s.warm_start)
    return study


def test_genetic_preset_is_h5evolve():
    g = get_strategy("genetic")
    assert (strategies.GA_POPULATION, strategies.GA_GENERATIONS) == (15, 40)
    assert g.budget == 600 and not g.warm_start and not g.capping
    sampler = g.sampler(seed=1)
    assert isinstance(sampler, optuna.samplers.NSGAIISampler)
    assert sampler.population_size == 15
    child = sampler._child_generation_strategy
    assert child._mutation_prob == pytest.approx(0.15)
    assert child._crossover_prob == pytest.approx(0.9)
    # elitism: the survivors of a generation are the best of parents and children
    elite = sampler._elite_population_selection_strategy
    assert elite._population_size == 15


def test_genetic_runs_generations_and_keeps_the_elite():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = new_study("genetic", seed=3)
    loop.run(study, SPACE, fake_eval, budget=60)
    gens = {t.system_attrs.get("NSGAIISampler:generation") for t in study.trials}
    assert {0, 1, 2} <= gens  # 15 successes per generation move the population on
    assert loop.incumbent(study, False).median <= 0.3


def test_default_strategy_starts_from_defaults_and_guesses_and_finds_the_best():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = new_study("tpe", seed=0)
    loop.run(study, SPACE, fake_eval, budget=30, capping=Capping(2.0, 0.0))
    first = study.trials[0]
    assert first.user_attrs["origin"] == "defaults" and first.user_attrs["settings"] == {}
    assert study.trials[1].user_attrs["settings"] == {"fill_time": "never"}
    inc = loop.incumbent(study, False)
    assert inc.median <= 0.3  # the defaults take 0.8 s, the best 0.25 s
    states = {t.user_attrs["status"]: t.state.name for t in study.trials}
    # failures are never fast: crashed trials are FAIL, forbidden ones PRUNED
    assert states.get("crashed", "FAIL") == "FAIL"
    assert states.get("forbidden", "PRUNED") == "PRUNED"
    assert len(study.trials) == 30


def test_failures_never_become_the_incumbent():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    warmstart.enqueue(study, SPACE, False)

    def evaluate(settings, cap):
        if settings:
            return Outcome(random.choice(["failed", "crashed", "timeout"]), wall_s=0.0)
        return Outcome("ok", 5.0, "wall", 5.0)

    loop.run(study, SPACE, evaluate, budget=15)
    inc = loop.incumbent(study, False)
    assert inc.settings == {} and inc.median == 5.0


def test_capping_rule():
    c = Capping(2.0, 1.0)
    assert c.cap(None) is None
    assert c.cap(0.2) == pytest.approx(1.2)  # the grace dominates for short runs
    assert c.cap(10.0) == pytest.approx(20.0)
    assert Capping(0).cap(3.0) is None
    assert Capping.bound(1.0, 2.0, 6.0, maximize=False) == pytest.approx(3.0)
    assert Capping.bound(300.0, 2.0, 6.0, maximize=True) == pytest.approx(100.0)


def test_capped_trials_are_stopped_with_a_bound():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    study.enqueue_trial(SPACE.trial_params_for({}), user_attrs={"origin": "defaults"})
    study.enqueue_trial(SPACE.trial_params_for({"fill_time": "never"}))

    def evaluate(settings, cap):
        if settings:
            assert cap == pytest.approx(2.0)
            return Outcome("capped", wall_s=cap)
        return Outcome("ok", 1.0, "wall", 1.0)

    loop.run(study, SPACE, evaluate, budget=2, capping=Capping(2.0, 0.5))
    t = study.trials[1]
    assert t.state.name == "PRUNED" and t.user_attrs["status"] == "capped"
    assert t.intermediate_values[0] == pytest.approx(2.0)


def test_paired_test_is_exact():
    base = [1.0, 1.1, 0.9, 1.2, 1.0]
    faster = [b / 2 for b in base]
    assert noise.paired_test(base, faster, maximize=False) == pytest.approx(1 / 32)
    assert noise.paired_test(base, base, maximize=False) == pytest.approx(1.0)
    assert noise.paired_test(faster, base, maximize=False) == pytest.approx(1.0)
    assert noise.paired_test([100.0] * 5, [200.0] * 5, maximize=True) == pytest.approx(1 / 32)
    mixed = [b * f for b, f in zip(base, [0.5, 0.5, 0.5, 0.5, 1.5], strict=True)]
    assert 1 / 32 < noise.paired_test(base, mixed, maximize=False) < 0.5


def test_summary_and_interleaving():
    s = noise.summary([3.0, 1.0, 2.0, 10.0])
    assert (s["median"], s["min"], s["max"], s["n"]) == (2.5, 1.0, 10.0, 4)
    order = noise.interleaved(["a", "b", "c"], 4, random.Random(0))
    assert len(order) == 12
    for r in range(4):
        assert sorted(order[3 * r : 3 * r + 3]) == ["a", "b", "c"]
    assert order[:3] != order[3:6] or order[3:6] != order[6:9]  # shuffled per round


def test_guesses_that_helped_are_combined_once():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sp = space.parse(
        {
            "params": {
                "cb_buffer_size": {"values": ["1M", "16M"], "default": "16M"},
                "fill_time": {"values": ["ifset", "never"], "default": "ifset"},
                "romio_cb_write": {"values": ["automatic", "disable"], "default": "automatic"},
            },
            "guesses": [
                {"name": "a", "settings": {"fill_time": "never"}},
                {"name": "b", "settings": {"cb_buffer_size": "1M"}},
                {"name": "c", "settings": {"romio_cb_write": "disable"}},
            ],
        }
    )

    def evaluate(settings, cap):
        t = 1.0
        t *= 0.5 if settings.get("fill_time") == "never" else 1.0
        t *= 0.8 if settings.get("cb_buffer_size") == "1048576" else 1.0
        t *= 1.5 if settings.get("romio_cb_write") == "disable" else 1.0
        return Outcome("ok", t, "kernel", t)

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    warmstart.enqueue(study, sp, True)
    loop.run(study, sp, evaluate, budget=8, combine=True)
    origins = [t.user_attrs["origin"] if "origin" in t.user_attrs else "" for t in study.trials]
    assert origins[:5] == ["defaults", "guess: a", "guess: b", "guess: c", "combined guesses"]
    assert study.trials[4].user_attrs["settings"] == {
        "fill_time": "never",
        "cb_buffer_size": "1048576",
    }
    assert study.trials[4].value == pytest.approx(0.4)
    assert origins.count("combined guesses") == 1


def test_confirm_re_measures_a_new_leader():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    warmstart.enqueue(study, SPACE, True)  # defaults, then the guess fill_time=never
    loop.run(study, SPACE, fake_eval, budget=6, confirm=3)
    keys = [t.user_attrs["key"] for t in study.trials]
    origins = [t.user_attrs.get("origin") for t in study.trials]
    # each leader measured once is queued again (first-come, first-served) until it has 3 runs
    # or loses the lead: the defaults lead after trial 0, the guess after trial 1
    assert keys[:5] == ["(defaults)", "fill_time=never", "(defaults)"] + ["fill_time=never"] * 2
    assert origins[2:5] == ["re-measure"] * 3
    assert origins[5] is None  # then the search goes on
    assert loop.incumbent(study, False).key == "fill_time=never"


READ_WRITE_SPACE = space.parse(
    {
        "params": {
            "cb_buffer_size": {"values": ["1M", "16M"], "default": "16M"},
            "fill_time": {"values": ["ifset", "never"], "default": "ifset"},
            "romio_cb_read": {"values": ["automatic", "disable"], "default": "automatic"},
            "ind_rd_buffer_size": {"values": ["1M", "4M"], "default": "4M"},
        },
        "guesses": [
            {"name": "no fill", "settings": {"fill_time": "never"}},
            {"name": "no cb reads", "settings": {"romio_cb_read": "disable"}},
            {"name": "both", "settings": {"romio_cb_read": "disable", "cb_buffer_size": "1M"}},
        ],
    }
)


def writer(settings, cap):
    """A write-only application: its profile says it read nothing."""
    t = 0.5 if settings.get("fill_time") == "never" else 1.0
    metrics = {"bytes_read": 0, "bytes_written": 1 << 20}
    return Outcome("ok", t, "profile", t, metrics=metrics)


def test_a_run_that_reads_nothing_is_not_tuned_for_reads():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = get_strategy("local")
    # H5Evolve searches everything
    assert s.leave_out_inert and not get_strategy("genetic").leave_out_inert
    study = optuna.create_study(sampler=s.sampler(0, 3))
    warmstart.enqueue(study, READ_WRITE_SPACE, True)
    loop.run(study, READ_WRITE_SPACE, writer, budget=12, combine=True, leave_out_inert=True)
    read_only = {"romio_cb_read", "ind_rd_buffer_size"}
    assert set(study.user_attrs[loop.INERT]) == read_only
    # the guesses lose their read settings: one is then empty (dropped), one keeps the rest
    origins = [t.user_attrs.get("origin", "search") for t in study.trials]
    # the label says what of the guess ran (an outside tester: it named what did not)
    both = "guess: both (without romio_cb_read: not searched)"
    assert origins[:3] == ["defaults", "guess: no fill", both]
    assert study.trials[2].user_attrs["settings"] == {"cb_buffer_size": "1048576"}
    for t in study.trials[1:]:
        assert not read_only & set(t.params), t.params
        assert not read_only & set(t.user_attrs["settings"])
    assert loop.incumbent(study, False).settings == {"fill_time": "never"}


def test_without_byte_counts_or_pruning_everything_is_searched():
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def no_bytes(settings, cap):
        return Outcome("ok", 1.0, "wall", 1.0)

    for evaluate, prune in ((no_bytes, True), (writer, False)):
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
        warmstart.enqueue(study, READ_WRITE_SPACE, True)
        loop.run(study, READ_WRITE_SPACE, evaluate, budget=6, leave_out_inert=prune)
        assert loop.INERT not in study.user_attrs
        origins = [t.user_attrs.get("origin") for t in study.trials[:4]]
        assert origins == ["defaults", "guess: no fill", "guess: no cb reads", "guess: both"]


def test_guesses_still_queued_when_the_baseline_worker_died():
    """The baseline finished but its worker died before queueing the guesses: the next
    worker queues them (pruned by what the baseline showed)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    warmstart.enqueue(study, READ_WRITE_SPACE, True)
    t = study.ask(fixed_distributions=READ_WRITE_SPACE.distributions())
    t.set_user_attr("settings", {})
    t.set_user_attr("metrics", {"bytes_read": 0, "bytes_written": 10})
    study.tell(t, 1.0)
    assert study.user_attrs[warmstart.PENDING]
    loop.run(study, READ_WRITE_SPACE, writer, budget=3, leave_out_inert=True)
    origins = [t.user_attrs.get("origin") for t in study.trials]
    assert origins == [
        "defaults",
        "guess: no fill",
        "guess: both (without romio_cb_read: not searched)",
    ]


def test_a_signal_after_the_run_but_before_its_tell_leaves_no_trial_running():
    """SIGTERM (a batch system's scancel) can arrive once the run has ended but before its
    result is told (e.g. the job step was killed first): the trial still ends FAIL,
    interrupted, to be run again, never RUNNING (CI: test_slurm's scancel under load)."""
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    warmstart.enqueue(study, SPACE, False)

    def check_baseline(outcome):  # runs between the baseline's run and its tell
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        loop.run(study, SPACE, fake_eval, budget=4, check_baseline=check_baseline)
    (t,) = study.trials
    assert t.state == TrialState.FAIL, t.state
    assert t.user_attrs["status"] == "interrupted" and t.user_attrs[loop.SIGNALLED]


def test_a_killed_worker_of_this_host_has_its_trial_failed_by_the_next_one():
    """A worker SIGKILLed before it could record its trial (a batch system's KillWait over on
    a loaded host) leaves it RUNNING: another worker of the same host fails it as interrupted
    at once, without waiting for its heartbeat to stop."""
    import socket
    import subprocess
    import sys

    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    killed = study.ask()
    killed.set_user_attr("worker", f"{socket.gethostname()}:{dead}")
    loop.run(study, SPACE, fake_eval, budget=4)
    t = study.trials[killed.number]
    assert t.state == TrialState.FAIL and t.user_attrs["status"] == "interrupted", t
    assert not [t for t in study.trials if t.state == TrialState.RUNNING]


def test_a_forbidden_trial_says_what_forbids_it():
    """An outside tester's trials.csv: a PRUNED, forbidden trial with an empty message."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sp = space.parse(
        {
            "params": {
                "cb_buffer_size": {"values": ["1M", "16M"], "default": "16M"},
                "fill_time": {"values": ["ifset", "never"], "default": "ifset"},
            },
            "constraints": [{"forbid": {"cb_buffer_size": ["1M"], "fill_time": ["never"]}}],
        }
    )
    study = optuna.create_study(sampler=optuna.samplers.BruteForceSampler(seed=0))
    study.enqueue_trial(sp.trial_params_for({"cb_buffer_size": "1M", "fill_time": "never"}))
    loop.run(study, sp, fake_eval, budget=1)
    (t,) = study.trials
    assert t.user_attrs["status"] == "forbidden" and t.state.name == "PRUNED"
    assert t.user_attrs["message"] == (
        "not run: the space forbids cb_buffer_size in {1048576} and fill_time in {never}"
    )
