"""Local search around the incumbent, and when a search should stop (issue 25 items 3-4).

After the warm start (the defaults, the rule-based and knowledge-base guesses, their
combination), the default strategy measures the one-parameter neighbours of the incumbent:
the configurations that change one searched setting of the best configuration found so far.
A neighbour never changes a parameter that the incumbent's MPI-IO component does not read
(Open MPI's OMPIO parameters when it runs ROMIO, io=romio321; ROMIO's hints under OMPIO).
Their order: the parameters of which only one value was measured so far first (what the
guesses did not probe is the largest unknown), then those whose values made the largest
measured difference (the spread of the per-value medians over every measured trial, in log
time), then the space's order. When the incumbent changes, its own neighbours come next. Once
every neighbour of the incumbent has been measured, the search stops (below); with stopping
off (`--min-gain 0`) the model (TPE) proposes the trials from there on.

Stopping early (`--min-gain`, default 5 %): the search ends before its budget when the rest of
the space cannot plausibly beat the incumbent by the smallest gain worth recommending, which
is taken to mean either of

- *local optimum*: every one-parameter change of the incumbent has been measured and none beat
  it (else it would be the incumbent): what is left are combinations of changes that each
  failed alone;
- *no progress*: the last `patience` trials did not beat the fastest run so far by min_gain
  (the fastest single run: an optimistic reference, so a lucky run ends the search sooner).

Both are judged only once nothing is queued (the warm start's guesses always run).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from iotune import mpifamily
from iotune.space import Space, config_key

MIN_GAIN = 0.05  # the smallest gain worth recommending: 5 % (--min-gain)
UNTRIED_FIRST = True  # parameters with one value measured come before the others
PATIENCE = 6  # trials without a gain of min_gain before the search stops
STOPPED = "stopped"  # study user attribute: why the search ended
NEIGHBOUR = "neighbour: "  # origin of a local-search trial: NEIGHBOUR + the parameter changed


def gain(new: float, old: float, maximize: bool) -> float:
    """How much better `new` is than `old`, as a fraction (0.05: 5 % better); times: old/new."""
    if new <= 0 or old <= 0:
        return 0.0
    return new / old - 1.0 if maximize else old / new - 1.0


def _ran(study: Any) -> list[Any]:
    """The trials that ran (or are queued or running), in order."""
    return sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)


def tried_keys(study: Any) -> set[str]:
    """Keys of every configuration measured, queued, running or refused (forbidden)."""
    return {t.user_attrs.get("key", "") for t in study.get_trials(deepcopy=False)}


def importance(study: Any, names: list[str]) -> dict[str, float]:
    """Per parameter: the spread (max - min) of the log medians of its values over the
    successful trials (0 when fewer than two of its values were measured)."""
    from optuna.trial import TrialState

    by: dict[str, dict[str, list[float]]] = {n: defaultdict(list) for n in names}
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.value is None or t.value <= 0:
            continue
        for n in names:
            if n in t.params:
                by[n][str(t.params[n])].append(math.log(t.value))
    out = {}
    for n, vals in by.items():
        meds = [statistics.median(v) for v in vals.values() if v]
        if len(meds) > 1:
            out[n] = max(meds) - min(meds)
        else:  # only one value measured: nothing known of it yet
            out[n] = math.inf if UNTRIED_FIRST else 0.0
    return out


def neighbours(
    study: Any, space: Space, settings: Mapping[str, str], searched: list[str]
) -> list[tuple[str, dict[str, str]]]:
    """The not yet tried one-parameter neighbours of `settings` (parameter, settings), the
    parameters that mattered most so far first."""
    centre = space.config_from_trial_params(space.trial_params_for(settings))
    tried = tried_keys(study)
    weight = importance(study, searched)
    order = sorted(searched, key=lambda n: (-weight.get(n, 0.0), space.names().index(n)))
    # a parameter that the centre's MPI-IO component never reads (OMPIO's under io=romio321,
    # ROMIO's hints under io=ompio) changes nothing there: such a neighbour would only measure
    # the centre again and crown its luckiest run
    io = centre.get("io") if "io" in space.names() else None
    out = []
    for name in order:
        if io is not None and mpifamily.unread_under(name, io):
            continue
        d = space.dim(name)
        for value in d.values:
            if value == centre.get(name):
                continue
            config = {**centre, name: value}
            if space.forbidden(config) is not None:
                continue
            s = space.settings_of(config)
            if config_key(s) in tried:
                continue
            out.append((name, s))
    return out


def propose(study: Any, space: Space, settings: Mapping[str, str], searched: list[str]) -> bool:
    """Queues the next untried neighbour of `settings` (True), or nothing (False: a trial is
    already queued, or every neighbour was measured)."""
    from optuna.trial import TrialState

    if study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        return False
    found = neighbours(study, space, settings, searched)
    if not found:
        return False
    name, chosen = found[0]
    study.enqueue_trial(
        space.trial_params_for(chosen),
        user_attrs={"origin": NEIGHBOUR + name, "key": config_key(chosen)},
        skip_if_exists=False,
    )
    return True


def no_gain_streak(values: list[float | None], min_gain: float, maximize: bool) -> int:
    """Trials since the last one that beat the fastest run before it by min_gain (None: a
    trial without a value, e.g. failed or capped; never a gain)."""
    best: float | None = None
    streak = 0
    for v in values:
        if v is not None and best is not None and gain(v, best, maximize) >= min_gain:
            streak = 0
        elif best is not None:
            streak += 1
        if v is not None and (best is None or gain(v, best, maximize) > 0):
            best = v
    return streak


def why_stop(
    study: Any,
    space: Space,
    around: Mapping[str, str] | None,
    searched: list[str],
    min_gain: float,
    maximize: bool,
    patience: int = PATIENCE,
) -> str | None:
    """Why the search should end now (see the module's text), or None. `around`: the local
    search's centre, the incumbent's settings (None: no local search: only "no progress")."""
    from optuna.trial import TrialState

    if study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        return None
    if study.user_attrs.get("guesses pending") or not _stats(study):
        return None
    pct = f"{min_gain:.0%}"
    if around is not None and not neighbours(study, space, around, searched):
        return (
            f"local optimum: no setting changed alone from the best found "
            f"({config_key(around)}) beat it by {pct} or more"
        )
    ran = [t for t in _ran(study) if t.user_attrs.get("status") not in (None, "forbidden")]
    values = [t.value if t.state == TrialState.COMPLETE else None for t in ran]
    streak = no_gain_streak(values, min_gain, maximize)
    if streak >= patience:
        return f"no progress: the last {streak} trials did not beat the fastest run by {pct}"
    return None


def _stats(study: Any) -> dict[str, float]:
    from iotune.search import noise

    return {k: s.median for k, s in noise.group(noise.measured(study)).items()}
