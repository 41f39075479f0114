"""A group-sequential paired sign test: "is B faster than A?" asked after every pair.

Verification measures A and B side by side in rounds (pairs). Looking at the data after every
pair and stopping at the first p < 0.05 would inflate false wins (with 20 looks a plain test
at 0.05 calls an A/A comparison a win far more often than 5 % of the time). Instead:

- each pair gives a sign: B won (its time was lower) or lost; ties carry no information and
  are left out, as in the ordinary sign test;
- under the null hypothesis (no difference) signs are fair coin flips whatever the noise's
  distribution, so the number of wins after n pairs is a simple random walk whose law is
  known exactly;
- the bound is Pocock-style: one nominal level for every look, the largest for which the
  exact probability (dynamic programming over that walk) that *any* look from `min_pairs` to
  `max_pairs` crosses its bound stays at or below `alpha`. The overall false-win rate is then
  alpha by construction, not approximately.

A sign test throws away the sizes of the differences, but it needs no assumption about the
noise (on this machine the noise is skewed and heavy-tailed: a single run can take 3x longer),
and its sequential law is exact. Futility: once B can no longer reach the bound within
max_pairs, the verdict is "no difference shown" at once.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

ALPHA = 0.05
MIN_PAIRS = 5
MAX_PAIRS = 20


def _tail(n: int, k: int) -> float:
    """P(Bin(n, 1/2) >= k)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n


def _bounds_at(level: float, max_pairs: int) -> list[int]:
    """bounds[n]: the fewest wins out of n that reject at this nominal level (n+1 if none)."""
    out = [1]
    for n in range(1, max_pairs + 1):
        k = n + 1
        while k > 0 and _tail(n, k - 1) <= level:
            k -= 1
        out.append(k)
    return out


def _crossing(bounds: Sequence[int], min_pairs: int, max_pairs: int) -> float:
    """Exact P(some look n in [min_pairs, max_pairs] has wins >= bounds[n]) under H0."""
    alive = {0: 1.0}  # wins -> probability of having this many and no crossing yet
    crossed = 0.0
    for n in range(1, max_pairs + 1):
        nxt: dict[int, float] = {}
        for w, p in alive.items():
            nxt[w] = nxt.get(w, 0.0) + p / 2
            nxt[w + 1] = nxt.get(w + 1, 0.0) + p / 2
        if n >= min_pairs:
            for w in [w for w in nxt if w >= bounds[n]]:
                crossed += nxt.pop(w)
        alive = nxt
    return crossed


@dataclass(frozen=True)
class Design:
    """The boundary of one sequential test: bounds[n] wins out of n non-tied pairs reject."""

    min_pairs: int
    max_pairs: int
    alpha: float
    level: float  # the nominal one-sided level used at every look
    bounds: tuple[int, ...]
    error: float  # the exact overall false-win probability (<= alpha)

    def first_possible(self) -> int | None:
        """The fewest pairs that can reject (all won), or None when no look ever can."""
        for n in range(self.min_pairs, self.max_pairs + 1):
            if self.bounds[n] <= n:
                return n
        return None


@functools.lru_cache(maxsize=64)
def design(
    min_pairs: int = MIN_PAIRS, max_pairs: int = MAX_PAIRS, alpha: float = ALPHA
) -> Design:
    """The Pocock-style bound: the largest nominal level whose exact overall error <= alpha.
    The achievable levels are the binomial tails, so the search runs over them."""
    if not 1 <= min_pairs <= max_pairs:
        raise ValueError(f"need 1 <= min pairs <= max pairs, not {min_pairs}, {max_pairs}")
    levels = sorted(
        {_tail(n, k) for n in range(1, max_pairs + 1) for k in range(1, n + 1)}, reverse=True
    )
    for level in levels:
        if level > alpha:
            continue
        bounds = _bounds_at(level, max_pairs)
        err = _crossing(bounds, min_pairs, max_pairs)
        if err <= alpha:
            return Design(min_pairs, max_pairs, alpha, level, tuple(bounds), err)
    bounds = tuple(n + 1 for n in range(max_pairs + 1))
    return Design(min_pairs, max_pairs, alpha, 0.0, bounds, 0.0)


@dataclass
class Look:
    """The state of a test after some pairs."""

    pairs: int  # pairs with a result for both
    wins: int  # B faster
    ties: int
    decided: bool
    significant: bool
    futile: bool
    p_nominal: float  # the plain one-sided sign-test p of the pairs so far (for reading)


def look(a: Sequence[float], b: Sequence[float], d: Design, maximize: bool = False) -> Look:
    """Where the test stands after the pairs (a[i], b[i]): is B better than A?"""
    wins = sum(1 for x, y in zip(a, b, strict=True) if (y > x if maximize else y < x))
    ties = sum(1 for x, y in zip(a, b, strict=True) if y == x)
    n = len(a) - ties
    significant = d.min_pairs <= n <= d.max_pairs and wins >= d.bounds[n]
    # futile: even winning every remaining pair could not cross any later bound
    left = d.max_pairs - len(a)
    futile = not significant and all(
        wins + j < d.bounds[n + j] for j in range(0, left + 1) if n + j >= d.min_pairs
    )
    done = significant or futile or len(a) >= d.max_pairs
    return Look(len(a), wins, ties, done, significant, futile, _tail(n, wins) if n else 1.0)


@dataclass
class Verdict:
    """A sequential comparison's outcome: improved only when significant and B's median beats
    A's (the sign test speaks of the typical pair, the speedup of the medians)."""

    decided: bool
    improved: bool
    significant: bool
    futile: bool
    pairs: int
    wins: int
    speedup: float
    p_nominal: float


def verdict(a: Sequence[float], b: Sequence[float], d: Design, maximize: bool = False) -> Verdict:
    import statistics

    state = look(a, b, d, maximize)
    ma, mb = statistics.median(a), statistics.median(b)
    if maximize:
        speedup = mb / ma if ma > 0 else math.inf
    else:
        speedup = ma / mb if mb > 0 else math.inf
    return Verdict(
        state.decided,
        state.significant and speedup > 1.0,
        state.significant,
        state.futile,
        state.pairs,
        state.wins,
        speedup,
        state.p_nominal,
    )
