"""A knowledge-base seed that beats the defaults is measured until it is confirmed, and a
confirmed configuration stays among the leaders re-measured at the end, however lucky
another configuration's single run was."""

import dataclasses

import optuna
from test_search import SPACE

from iotune.kb import seeds
from iotune.search import loop, warmstart
from iotune.space import Guess
from iotune.trial import Outcome

GOOD = {"fill_time": "never"}
BAD = {"cb_buffer_size": "1048576"}


def seeded(*settings):
    kb = [Guess(f"{seeds.PREFIX}entry {i}", s) for i, s in enumerate(settings)]
    return dataclasses.replace(SPACE, guesses=[*kb, *SPACE.guesses])


def evaluate(settings, cap):
    v = 0.5 if settings == GOOD else 2.0 if settings == BAD else 1.0
    return Outcome("ok", v, "kernel", v)


def run(sp, budget):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    warmstart.enqueue(study, sp, True)
    loop.run(study, sp, evaluate, budget=budget)
    return study


def test_a_kb_seed_that_beats_the_defaults_is_measured_until_confirmed():
    assert warmstart.from_kb(warmstart.GUESS + seeds.PREFIX + "entry 1")
    study = run(seeded(GOOD, BAD), 8)
    keys = [t.user_attrs["key"] for t in study.trials]
    origins = [t.user_attrs.get("origin") for t in study.trials]
    assert keys.count("fill_time=never") == 3, "the good seed: measured 3 times"
    assert keys.count("cb_buffer_size=1048576") == 1, "slower than the defaults: once"
    assert origins.count("re-measure: kb seed") == 2
    assert loop.incumbent(study, False).key == "fill_time=never"


def test_rule_based_guesses_are_not_confirmed():
    study = run(SPACE, 6)  # its guess is fill_time=never too, but no knowledge-base seed
    origins = [t.user_attrs.get("origin") for t in study.trials]
    assert "re-measure: kb seed" not in origins


def test_a_confirmed_configuration_stays_among_the_leaders():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    dist = SPACE.distributions()

    def add(settings, value):
        params = SPACE.trial_params_for(settings)
        t = optuna.trial.create_trial(params=params, distributions=dist, value=value,
                                      user_attrs={"settings": settings,
                                                  "key": ";".join(f"{k}={v}" for k, v in
                                                                  sorted(settings.items()))
                                                  or "(defaults)"})  # fmt: skip
        study.add_trial(t)

    for v in (0.50, 0.52, 0.51):
        add(GOOD, v)  # confirmed, median 0.51
    for i, v in enumerate((0.40, 0.45, 0.48)):  # three single lucky runs
        add({"cb_buffer_size": ["1048576", "67108864", "4194304"][i]}, v)
    keys = [s.key for s in loop.leaders(study, 3, False)]
    assert len(keys) == 4 and keys[-1] == "fill_time=never"
    add({"romio_cb_write": "disable"}, 0.6)
    assert [s.key for s in loop.leaders(study, 4, False)][-1] == "fill_time=never"
    assert len(loop.leaders(study, 4, False)) == 4, "already among the 4: not added twice"
