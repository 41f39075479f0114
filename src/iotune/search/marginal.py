"""Each setting's marginal effect, read from the search's own trials: which settings a
recommendation lacks that the search's data say help (study.finish tries adding them).

The search's winner is one configuration among many measured once each; whether it holds a
setting that carries a smaller gain of its own (beside the one that carries most of it) depends
on what that search happened to sample. The trials already run say more than the winner: among
the trials that hold every setting of the recommendation so far (the stratum, so that the main
gain does not confound the comparison), those with a setting against those without it (the
parameter at its default). A setting is a candidate when that comparison is clear: its median
is better by at least the smallest gain worth recommending and an exact one-sided rank-sum
(Mann-Whitney) test on those trials is at LEVEL or below. The search's runs were chosen by a
model and are single runs each, so this only ranks candidates: each is then measured in
interleaved pairs (reduction.additions) and kept only if that measurement shows a gain.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MIN_SIDE = 3  # trials with and without a setting, at least (3 against 3 can reach p = 0.05)
LEVEL = 0.05  # one-sided level of the rank-sum test at which an effect counts as clear
MAX_ADD = 2  # candidates measured at most (the clearest first)
TIES_EXACT = 24  # with tied values, the exact rank-sum p up to this many values
SCREEN_LEVEL = 0.25  # carrying(): the level at which an effect singles a setting out; only a
# proposal, tested in pairs (a wrong one costs that test; a search's winner is often in most
# trials, leaving few without it: fill_time=never at p 0.07 in 17 against 5)
SCREEN_KEEP: int | None = 1  # carrying() keeps at most this many settings, the clearest
# (None: all that stand out). One: the same verdicts in fewer runs in the replay (a winner's
# weaker effects at p <= 0.25 were mostly noise, and each kept one is then tested alone)


@dataclass(frozen=True)
class Effect:
    """A setting's marginal effect in the stratum: ratio > 1 means the trials with it were
    better (the median without over the median with; inverted for a maximised objective)."""

    name: str
    value: str
    ratio: float
    p: float
    n_with: int
    n_without: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "setting": f"{self.name}={self.value}",
            "ratio": self.ratio,
            "p": self.p,
            "trials_with": self.n_with,
            "trials_without": self.n_without,
        }


@functools.lru_cache(maxsize=4096)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """counts[u]: how many of the C(m+n, m) orderings of m and n values give Mann-Whitney's U
    (pairs won by the first sample) = u, without ties."""
    if m == 0 or n == 0:
        return (1,)
    # the largest value is from the first sample (it wins its n pairs: the rest's counts
    # shifted by n) or from the second (it wins nothing for the first sample)
    a, b = _u_counts(m - 1, n), _u_counts(m, n - 1)
    out = [0] * (m * n + 1)
    for u, c in enumerate(b):
        out[u] += c
    for u, c in enumerate(a):
        out[u + n] += c
    return tuple(out)


def rank_sum_p(better: Sequence[float], worse: Sequence[float]) -> float:
    """Exact one-sided p that the values of `better` tend to be larger than those of `worse`:
    the share of the ways to split the pooled values into samples of these sizes whose
    Mann-Whitney statistic (a tie counted as half a pair) is at least the observed one. Without
    ties (the usual case for measured times) by the counts of _u_counts; with ties, exactly
    over the mid-ranks up to TIES_EXACT values, beyond by the normal approximation with the
    tie correction."""
    m, n = len(better), len(worse)
    if not m or not n:
        return 1.0
    pooled = sorted([*better, *worse])
    twice = {}  # value -> twice its mid-rank (an integer)
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1] == pooled[i]:
            j += 1
        twice[pooled[i]] = (i + 1) + (j + 1)
        i = j + 1
    observed = sum(twice[x] for x in better)  # twice the first sample's rank sum
    if len(twice) == len(pooled):  # no ties: U = rank sum - m(m+1)/2
        counts = _u_counts(m, n)
        u = (observed - m * (m + 1)) // 2
        return sum(counts[u:]) / sum(counts)
    if len(pooled) <= TIES_EXACT:
        return _tied_p([twice[x] for x in pooled], m, observed)
    big_n = len(pooled)
    ties = sum(t**3 - t for t in Counter(pooled).values())
    var = m * n / 12.0 * ((big_n + 1) - ties / (big_n * (big_n - 1)))
    if var <= 0:
        return 1.0
    z = (observed / 2.0 - m * (big_n + 1) / 2.0 - 0.5) / math.sqrt(var)  # continuity corrected
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def _tied_p(weights: Sequence[int], m: int, observed: int) -> float:
    """P(the sum of m of the weights, drawn without replacement, >= observed): by counting."""
    ways: list[dict[int, int]] = [{0: 1}] + [{} for _ in range(m)]
    for w in weights:
        for k in range(m, 0, -1):
            into = ways[k]
            for total, c in ways[k - 1].items():
                into[total + w] = into.get(total + w, 0) + c
    return sum(c for total, c in ways[m].items() if total >= observed) / sum(ways[m].values())


def holding(rows: Iterable[Mapping[str, Any]], within: Mapping[str, str]) -> list[Any]:
    """The trials (settings, value) that hold every setting of `within` (the stratum)."""
    return [
        (dict(r["settings"]), float(r["value"]))
        for r in rows
        if all(r["settings"].get(k) == v for k, v in within.items())
    ]


def stratum_for(rows: Iterable[Mapping[str, Any]], base: Mapping[str, str]) -> dict[str, str]:
    """What the comparison is read within: the trials holding every setting of base, or every
    trial ({}) when fewer than 2 * MIN_SIDE hold them all (e.g. base is a whole winner of many
    settings, kept because its reduction failed: only the winner's own trials hold it)."""
    return dict(base) if len(holding(rows, base)) >= 2 * MIN_SIDE else {}


def effects(
    rows: Iterable[Mapping[str, Any]],
    base: Mapping[str, str],
    maximize: bool,
    names: Collection[str] | None = None,
    within: Mapping[str, str] | None = None,
) -> list[Effect]:
    """Every setting (a parameter in `names`, or any, not in `base`, at a value some trial of
    the stratum held) with at least MIN_SIDE trials of the stratum on each side; the stratum:
    the trials holding every setting of `within` (default: base); rows: the search's
    successful trials ({settings, value}, noise.measured). Most favourable first."""
    stratum = holding(rows, base if within is None else within)
    seen = sorted({(k, v) for s, _ in stratum for k, v in s.items()
                   if k not in base and (names is None or k in names)})  # fmt: skip
    out = []
    for name, value in seen:
        with_ = [x for s, x in stratum if s.get(name) == value]
        without = [x for s, x in stratum if name not in s]
        if len(with_) < MIN_SIDE or len(without) < MIN_SIDE:
            continue
        mw, mo = statistics.median(with_), statistics.median(without)
        num, den = (mw, mo) if maximize else (mo, mw)  # how many times better with it
        ratio = num / den if den > 0 else float("inf")
        sign = 1.0 if maximize else -1.0  # larger is better after the sign
        p = rank_sum_p([sign * x for x in with_], [sign * x for x in without])
        out.append(Effect(name, value, ratio, p, len(with_), len(without)))
    return sorted(out, key=lambda e: (e.p, -e.ratio, e.name, e.value))


def favourable(
    rows: Iterable[Mapping[str, Any]],
    base: Mapping[str, str],
    maximize: bool,
    min_gain: float,
    names: Collection[str] | None = None,
    exclude: Collection[tuple[str, str]] = (),
    within: Mapping[str, str] | None = None,
) -> list[Effect]:
    """The settings with a clear favourable marginal effect (effects'): better by at least
    min_gain (0.05: 5 %) in median and at LEVEL by the rank-sum test; not those in exclude
    ((name, value) pairs already measured: e.g. removed by the reduction). Clearest first."""
    return [
        e
        for e in effects(rows, base, maximize, names, within)
        if e.p <= LEVEL and e.ratio >= 1.0 + max(min_gain, 0.0) and (e.name, e.value) not in exclude
    ]


def carrying(
    rows: Iterable[Mapping[str, Any]],
    winner: Mapping[str, str],
    maximize: bool,
    min_gain: float,
) -> dict[str, str]:
    """The settings of `winner` whose marginal effect over every trial of the search stands out
    (better by at least min_gain in median, rank-sum at SCREEN_LEVEL), the clearest first, at
    most SCREEN_KEEP of them: those the search's data say carry the gain. The reduction tests
    the rest together against the winner before testing each setting alone (reduction.minimal):
    an empty result, or all of `winner`, screens nothing."""
    found = [
        e
        for e in effects(rows, {}, maximize, set(winner), within={})
        if winner.get(e.name) == e.value
        and e.p <= SCREEN_LEVEL
        and e.ratio >= 1.0 + max(min_gain, 0.0)
    ]
    return {e.name: e.value for e in found[:SCREEN_KEEP]}


def runner_up(
    rows: Iterable[Mapping[str, Any]],
    winner: Mapping[str, str],
    core: Mapping[str, str],
    maximize: bool,
    min_gain: float,
) -> tuple[str, str] | None:
    """The setting of `winner` outside `core` whose marginal effect is the clearest among
    those better by at least min_gain in median (at any p), or None: the one the screen also
    tests alone (reduction._screen), so that a second gain of its own is not lost in the test of
    all the others together (a setting there that costs time hides it). Read among the trials
    that hold `core` when enough do (stratum_for: a setting that only helps beside the kept
    one, such as ROMIO's hints beside io=romio321 under Open MPI, shows there), else over
    every trial."""
    rows = list(rows)
    within = stratum_for(rows, core)
    for e in effects(rows, {}, maximize, set(winner) - set(core), within=within):
        if winner.get(e.name) == e.value and e.ratio >= 1.0 + max(min_gain, 0.0):
            return e.name, e.value
    return None
