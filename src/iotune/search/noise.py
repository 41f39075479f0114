"""Living with noise: estimates per configuration from repeated measurements, the leading
candidates, interleaved schedules, and an exact paired test of "tuned beats default".

On a shared machine single runs mean little (shared/LAB-NOTES.md: CV of 30-70 %), so every
decision here uses medians of repeated, interleaved runs.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ConfigStats:
    """All successful measurements of one configuration."""

    key: str
    settings: dict[str, str]
    values: list[float] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    trials: list[int] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)


def group(rows: Iterable[Mapping[str, Any]]) -> dict[str, ConfigStats]:
    """Groups measurements {key, settings, value, wall_s, number} by configuration."""
    out: dict[str, ConfigStats] = {}
    for r in rows:
        s = out.setdefault(r["key"], ConfigStats(r["key"], dict(r["settings"])))
        s.values.append(float(r["value"]))
        s.walls.append(float(r["wall_s"]))
        s.trials.append(int(r.get("number", -1)))
    return out


def better(maximize: bool) -> Callable[[float, float], bool]:
    return (lambda a, b: a > b) if maximize else (lambda a, b: a < b)


def ranked(stats: Mapping[str, ConfigStats], maximize: bool) -> list[ConfigStats]:
    """Configurations from best to worst median (more measurements first among equals)."""
    sign = -1.0 if maximize else 1.0
    return sorted(stats.values(), key=lambda s: (sign * s.median, -len(s.values)))


def summary(values: Sequence[float]) -> dict[str, float]:
    """median, min, max, quartiles and coefficient of variation of some measurements."""
    v = sorted(values)
    n = len(v)
    if n == 0:
        return {"n": 0}
    q = statistics.quantiles(v, n=4, method="inclusive") if n > 1 else [v[0]] * 3
    mean = statistics.fmean(v)
    cv = statistics.pstdev(v) / mean if n > 1 and mean > 0 else 0.0
    return {
        "n": n,
        "median": statistics.median(v),
        "min": v[0],
        "max": v[-1],
        "q1": q[0],
        "q3": q[2],
        "cv": cv,
    }


def interleaved(variants: Sequence[str], rounds: int, rng: random.Random) -> list[str]:
    """A schedule running each variant once per round, in a fresh random order each round."""
    out: list[str] = []
    for _ in range(rounds):
        order = list(variants)
        rng.shuffle(order)
        out += order
    return out


def paired_test(
    base: Sequence[float], tuned: Sequence[float], maximize: bool, rng: random.Random | None = None
) -> float:
    """One-sided p-value that `tuned` beats `base` (pairs measured side by side).

    An exact sign-flip permutation test on the log ratios of the pairs: under the null
    hypothesis each pair's ratio is as likely inverted, so every assignment of signs is equally
    likely; p is the share of assignments whose mean log ratio is at least the observed one.
    Exact up to 16 pairs (2^16 assignments), 20000 random assignments beyond.
    """
    if len(base) != len(tuned) or not base:
        raise ValueError("paired_test needs two equally long, non-empty lists")
    d = [
        math.log(b / t) if not maximize else math.log(t / b)
        for b, t in zip(base, tuned, strict=True)
    ]
    observed = sum(d)
    n = len(d)
    eps = 1e-12 * max(1.0, abs(observed))
    if n <= 16:
        signs: Iterable[Sequence[int]] = itertools.product((1, -1), repeat=n)
        total = 2**n
    else:
        rng = rng or random.Random(0)
        total = 20000
        signs = ([rng.choice((1, -1)) for _ in range(n)] for _ in range(total))
    hits = sum(1 for s in signs if sum(x * y for x, y in zip(s, d, strict=True)) >= observed - eps)
    return hits / total


def measured(study: Any) -> list[dict[str, Any]]:
    """The successful trials of a study as measurement rows (for noise.group)."""
    from optuna.trial import TrialState

    rows = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        rows.append(
            {
                "key": t.user_attrs.get("key", ""),
                "settings": t.user_attrs.get("settings", {}),
                "value": t.value,
                "wall_s": t.user_attrs.get("wall_s", 0.0),
                "number": t.number,
            }
        )
    return rows
