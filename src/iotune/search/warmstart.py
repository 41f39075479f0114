"""Warm start: the stack's default settings first (always: it is the reference every trial and
the final verification compare against), then the space's rule-based guesses."""

from __future__ import annotations

from typing import Any

from iotune.space import Space

BASELINE = "defaults"


def enqueue(study: Any, space: Space, guesses: bool) -> list[str]:
    """Queues the warm-start trials in a new study; returns their names in order."""
    names = [BASELINE]
    study.enqueue_trial(space.trial_params_for({}), user_attrs={"origin": BASELINE})
    if guesses:
        for g in space.guesses:
            study.enqueue_trial(
                space.trial_params_for(g.settings), user_attrs={"origin": f"guess: {g.name}"}
            )
            names.append(g.name)
    return names
