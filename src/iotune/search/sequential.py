"""A group-sequential paired test: "is B faster than A?" asked after every pair.

Verification measures A and B side by side in rounds (pairs). Looking after every pair and
stopping at the first p < 0.05 would inflate false wins (with 16 looks a plain test at 0.05
calls an A/A comparison a win several times more often than 5 % of the time). Instead:

- the statistic is Wilcoxon's signed rank on the pairs' log ratios log(A/B): it uses how
  much each pair differs, not only which side won (a sign test threw away a 2x gain's size and
  needed many more pairs), and it assumes nothing about the noise's distribution but its
  symmetry under the null hypothesis, which holds by construction when A and B are the same
  settings (the two runs of a pair are exchangeable);
- under that null hypothesis the signs are fair coin flips independent of the magnitudes, and
  the magnitudes' ranks are a uniformly random order: the joint law of the statistic at every
  look is the same whatever the noise (distribution-free);
- the bound is Pocock's: one nominal level at every look from `min_pairs` to `max_pairs`,
  the largest for which the probability that *any* look crosses it stays at or below `alpha`
  (with two Monte-Carlo standard errors of margin); except at one early look (EARLY_PAIRS),
  where a clean sweep (every pair won: p = 2^-n, the smallest p n pairs can give) is
  significant although 2^-n is above that level. The signed-rank p is discrete: at Pocock's
  level for 5..20 (0.0151) six pairs all won (1/64 = 0.0156) fell just short, so a clear gain
  took 7 pairs. Spending 1/64 at the 6th look lowers the other looks' level only a little
  (5..20: 0.0151 -> 0.0133) and ends a clear gain one pair sooner;
  That probability is distribution-free, so it is computed once by simulating the null law
  (SIMULATIONS sequences, fixed seed; its standard error is reported as `error_se`), and the
  per-look p-values are exact (the signed-rank distribution by counting).

Futility: once B can no longer reach the bound within max_pairs even if it won every remaining
pair by more than any pair so far, the verdict is "no difference shown" at once.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ALPHA = 0.05
MIN_PAIRS = 5
MAX_PAIRS = 20
EARLY_PAIRS = 6  # the look at which a clean sweep is significant (0: plain Pocock bound)
SIMULATIONS = 200_000
SEED = 20261123


@functools.lru_cache(maxsize=128)
def _tail(n: int) -> tuple[float, ...]:
    """tail[w] = P(W+ >= w) for Wilcoxon's signed-rank statistic of n pairs under H0."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    for r in range(1, n + 1):  # subsets of {1..n} by their sum
        for s in range(len(counts) - 1, r - 1, -1):
            counts[s] += counts[s - r]
    total = 2**n
    out, acc = [0.0] * (len(counts) + 1), 0
    for w in range(len(counts) - 1, -1, -1):
        acc += counts[w]
        out[w] = acc / total
    return tuple(out)


def p_value(n: int, w_plus: int) -> float:
    """Exact one-sided p of a signed-rank statistic W+ = w_plus among n pairs."""
    t = _tail(n)
    return t[min(max(w_plus, 0), len(t) - 1)]


def _null_p(min_pairs: int, max_pairs: int, sims: int, early: int) -> tuple[Any, Any, Any]:
    """Per sequence drawn under H0 (`sims` of them): the smallest p over every look, the
    smallest over every look but `early`, and the p at look `early` (1 when not a look)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    mags = rng.random((sims, max_pairs))
    pos = rng.random((sims, max_pairs)) < 0.5
    best, others, at_early = np.ones(sims), np.ones(sims), np.ones(sims)
    for n in range(min_pairs, max_pairs + 1):
        ranks = mags[:, :n].argsort(axis=1).argsort(axis=1) + 1
        w = (ranks * pos[:, :n]).sum(axis=1)
        p = np.asarray(_tail(n))[w]
        best = np.minimum(best, p)
        if n == early:
            at_early = p
        else:
            others = np.minimum(others, p)
    return best, others, at_early


def _largest_level(achievable: list[float], error_at: Any, sims: int, alpha: float) -> tuple:
    """(level, error): the largest achievable level whose simulated error (error_at(level)),
    with two standard errors of margin, stays at or below alpha."""
    level, err = 0.0, error_at(0.0)
    for p in achievable:
        e = error_at(p)
        if e + 2 * math.sqrt(e * (1 - e) / sims) > alpha:  # two standard errors of margin
            break
        level, err = p, e
    return level, err


@dataclass(frozen=True)
class Design:
    """The boundary of one sequential test: reject at look n when the exact p <= level."""

    min_pairs: int
    max_pairs: int
    alpha: float
    level: float  # the nominal one-sided level used at every look but the early one
    error: float  # the simulated overall false-win probability (<= alpha)
    error_se: float  # its Monte-Carlo standard error
    early: int | None = None  # the look at which a clean sweep is significant (EARLY_PAIRS)
    early_level: float = 0.0  # that look's level: 2^-early

    def level_at(self, pairs: int) -> float:
        """The nominal one-sided level of the look after `pairs` pairs."""
        return self.early_level if pairs == self.early else self.level

    def first_possible(self) -> int | None:
        """The fewest pairs that can reject (all won), or None when no look ever can."""
        for n in range(self.min_pairs, self.max_pairs + 1):
            if 0.5**n <= self.level_at(n):
                return n
        return None


def design(
    min_pairs: int = MIN_PAIRS,
    max_pairs: int = MAX_PAIRS,
    alpha: float = ALPHA,
    sims: int = SIMULATIONS,
    early: bool = True,
) -> Design:
    """The boundary for looks min_pairs..max_pairs: Pocock's, with (early) a clean sweep
    significant at the EARLY_PAIRS look where Pocock's level alone would not let it be."""
    return _design(min_pairs, max_pairs, alpha, sims, EARLY_PAIRS if early else 0)


@functools.lru_cache(maxsize=64)
def _design(min_pairs: int, max_pairs: int, alpha: float, sims: int, early: int) -> Design:
    if not 1 <= min_pairs <= max_pairs:
        raise ValueError(f"need 1 <= min pairs <= max pairs, not {min_pairs}, {max_pairs}")
    if min_pairs == max_pairs:  # one look: the plain exact test
        levels = [p for p in _tail(max_pairs) if p <= alpha]
        level = max(levels, default=0.0)
        return Design(min_pairs, max_pairs, alpha, level, level, 0.0)
    import numpy as np

    best, others, at_early = _null_p(min_pairs, max_pairs, sims, early)
    achievable = sorted({p for n in range(min_pairs, max_pairs + 1) for p in _tail(n)})
    level, err = _largest_level(achievable, lambda p: float(np.mean(best <= p)), sims, alpha)
    if min_pairs <= early < max_pairs and 0.5**early > level:
        sweep = at_early <= 0.5**early  # the early look's rejections: clean sweeps only
        later = sorted({p for n in range(min_pairs, max_pairs + 1) if n != early
                        for p in _tail(n)})  # fmt: skip
        lv, e = _largest_level(later, lambda p: float(np.mean(sweep | (others <= p))), sims, alpha)
        if first_later(lv, min_pairs, max_pairs, early) is not None:
            se = math.sqrt(max(e * (1 - e), 1e-12) / sims)
            return Design(min_pairs, max_pairs, alpha, lv, e, se, early, 0.5**early)
    se = math.sqrt(max(err * (1 - err), 1e-12) / sims)
    return Design(min_pairs, max_pairs, alpha, level, err, se)


def first_later(level: float, min_pairs: int, max_pairs: int, early: int) -> int | None:
    """The fewest pairs after the early look that can reject at `level`, if any."""
    return next((n for n in range(max(min_pairs, early + 1), max_pairs + 1)
                 if 0.5**n <= level), None)  # fmt: skip


def _log_ratios(a: Sequence[float], b: Sequence[float], maximize: bool) -> list[float]:
    """Positive when B is better."""
    out = []
    for x, y in zip(a, b, strict=True):
        if x <= 0 or y <= 0:
            out.append(0.0 if x == y else (1.0 if (y > x) == maximize else -1.0))
            continue
        out.append(math.log(y / x) if maximize else math.log(x / y))
    return out


def _w_plus(d: Sequence[float]) -> tuple[int, int]:
    """(W+, n) of the non-zero differences d. Equal magnitudes (never seen in real timings,
    frequent when pairs are resampled) give the lower ranks to B's wins: conservative."""
    nz = sorted(((abs(x), x > 0) for x in d if x != 0), key=lambda t: (t[0], not t[1]))
    return sum(i + 1 for i, (_, pos) in enumerate(nz) if pos), len(nz)


@dataclass
class Verdict:
    """A sequential comparison's state or outcome. improved: significant, and B's median
    beats A's (the test speaks of the typical pair, the speedup of the medians)."""

    decided: bool
    improved: bool
    significant: bool
    futile: bool
    pairs: int
    wins: int  # pairs B won
    speedup: float  # median(A) / median(B) for times (B / A when maximising)
    p_nominal: float  # the exact one-sided p of the pairs so far, as if it were the only look


def verdict(a: Sequence[float], b: Sequence[float], d: Design, maximize: bool = False) -> Verdict:
    """Where the test of "B is better than A" stands after the pairs (a[i], b[i])."""
    import statistics

    diffs = _log_ratios(a, b, maximize)
    w, n = _w_plus(diffs)
    p = p_value(n, w) if n else 1.0
    significant = d.min_pairs <= len(a) <= d.max_pairs and n > 0 and p <= d.level_at(len(a))
    left = d.max_pairs - len(a)
    futile = not significant and all(
        p_value(n + j, w + sum(range(n + 1, n + j + 1))) > d.level_at(len(a) + j)
        for j in range(0, left + 1)
        if len(a) + j >= d.min_pairs
    )
    ma, mb = statistics.median(a), statistics.median(b)
    if maximize:
        speedup = mb / ma if ma > 0 else math.inf
    else:
        speedup = ma / mb if mb > 0 else math.inf
    return Verdict(
        decided=significant or futile or len(a) >= d.max_pairs,
        improved=significant and speedup > 1.0,
        significant=significant,
        futile=futile,
        pairs=len(a),
        wins=sum(1 for x in diffs if x > 0),
        speedup=speedup,
        p_nominal=p,
    )
