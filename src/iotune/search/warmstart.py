"""Warm start: the stack's default settings first (always: it is the reference every trial and
the final verification compare against), then the space's rule-based guesses.

The guesses are queued once the baseline has run, so that what it showed about the
application (search/inert.py) can drop the guesses that cannot matter for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from iotune.space import Space, config_key

BASELINE = "defaults"
GUESS = "guess: "  # origin of a guess: GUESS + its name
FROM_KB = "kb: "  # name prefix of a guess from the knowledge base (iotune.kb.seeds)


def from_kb(origin: str) -> bool:
    """Whether a trial of this origin is a knowledge-base seed's."""
    return origin.startswith(GUESS + FROM_KB)


PENDING = "guesses pending"  # study user attribute: the guesses wait for the baseline


def enqueue(study: Any, space: Space, guesses: bool) -> None:
    """Queues the baseline in a new study; the guesses follow it (after_baseline)."""
    study.enqueue_trial(space.trial_params_for({}), user_attrs={"origin": BASELINE})
    if guesses and space.guesses:
        study.set_user_attr(PENDING, True)


def after_baseline(
    study: Any,
    space: Space,
    inert: Mapping[str, str],
    values_out: Mapping[str, Mapping[str, str]] | None = None,
) -> list[str]:
    """Queues the pending guesses, without the settings of inert parameters (a guess left with
    nothing, or with what an earlier guess already tries, is dropped); returns their names.
    Called by the worker whose baseline finished, or on resume if that worker died first."""
    if not study.user_attrs.get(PENDING):
        return []
    names, seen = [], {config_key({})}
    for g in space.guesses:
        settings = {
            k: v
            for k, v in g.settings.items()
            if k not in inert and v not in (values_out or {}).get(k, {})
        }
        key = config_key(space.normalise_settings(settings))
        if key in seen:
            continue
        seen.add(key)
        # the label says what of the guess runs: "no collective buffering on reads, large chunk
        # cache" named a trial that ran the chunk cache alone (an outside tester)
        left = sorted(set(g.settings) - set(settings))
        name = g.name + (f" (without {', '.join(left)}: not searched)" if left else "")
        study.enqueue_trial(space.trial_params_for(settings), user_attrs={"origin": GUESS + name})
        names.append(name)
    study.set_user_attr(PENDING, False)
    return names


COMBINED = "combined guesses"


def combine(study: Any, space: Space, maximize: bool) -> dict[str, str] | None:
    """Once every guess has run: queues one trial that combines the guesses that beat the
    defaults (where two set the same parameter, the better guess's value wins). Returns its
    settings, or None when it is not (yet, or ever) due. Called after each trial; decides once
    per study (the study's user attribute "combined" records the decision)."""
    from optuna.trial import TrialState

    if "combined" in study.user_attrs:
        return None
    trials = study.get_trials(deepcopy=False)
    warm = [t for t in trials if t.user_attrs.get("origin", "").startswith(("guess: ", BASELINE))]
    if len(warm) < 3:  # the defaults and at least two guesses
        return None
    done = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
    if any(t.state not in done for t in warm):
        return None
    base = [t.value for t in warm if t.user_attrs["origin"] == BASELINE and t.value is not None]
    winners = [
        t
        for t in warm
        if t.user_attrs["origin"] != BASELINE
        and t.value is not None
        and base
        and (t.value > base[0] if maximize else t.value < base[0])
    ]
    winners.sort(key=lambda t: t.value, reverse=not maximize)  # worst first: the best wins last
    merged: dict[str, str] = {}
    for t in winners:
        merged.update(t.user_attrs.get("settings", {}))
    if len(winners) < 2 or space.forbidden({**space.default_config(), **merged}):
        study.set_user_attr("combined", {})
        return None
    study.set_user_attr("combined", merged)
    study.enqueue_trial(space.trial_params_for(merged), user_attrs={"origin": COMBINED})
    return merged
