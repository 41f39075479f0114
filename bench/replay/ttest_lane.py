"""A sequential t lane for the verification, for the replay only (issue 25; bench/README.md,
"A t-test lane for the verification"): installed by monkeypatching, never part of iotune.

The lane: at looks FIRST..LAST (LAST 0: --verify-pairs) a one-sided paired t-test on the pairs'
log ratios rejects when p <= LEVEL, beside the signed-rank design at WALPHA (0: no signed-rank
lane). LEVEL comes from ttest_design.py (calibrated by simulation under symmetric nulls). The
headline interval follows the lane that decides: the t interval exp(mean -+ c sd / sqrt(n)) at
LEVEL when its lower end is the higher, else Hodges-Lehmann at the signed-rank level; so its
lower end is above 1.0 exactly when one of the lanes rejects.

  install("4:0:0.0097:0")   # the t-test alone, looks 4..--verify-pairs
  install("3:6:0.0035:0.04")  # signed rank at 0.04 plus a t lane at looks 3..6
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections.abc import Sequence

from iotune import verdict as V
from iotune.search import sequential as SQ

ORIGINAL = {"design": SQ.design, "verdict": SQ.verdict, "measure": V.measure}
LANE: tuple[int, int, float, float] | None = None


def t_sf(t: float, df: int) -> float:
    """One-sided P(T_df >= t), exact for integer df (Abramowitz-Stegun 26.7.3/4)."""
    if t == math.inf:
        return 0.0
    th = math.atan(t / math.sqrt(df))
    s, c = math.sin(th), math.cos(th)
    if df % 2:
        acc, term = 0.0, c
        if df > 1:
            acc = c
            for k in range(3, df - 1, 2):
                term *= c * c * (k - 1) / k
                acc += term
        a = 2 / math.pi * (th + s * acc)
    else:
        acc, term = 1.0, 1.0
        for k in range(2, df - 1, 2):
            term *= c * c * (k - 1) / k
            acc += term
        a = s * acc
    return (1 - a) / 2


def t_stat(d: Sequence[float]) -> tuple[float, float, float]:
    """(t, mean, sd) of d (n >= 2); t is -inf when sd is 0 (never a win)."""
    n = len(d)
    m = sum(d) / n
    sd = math.sqrt(max(sum((x - m) ** 2 for x in d) / (n - 1), 0.0))
    if sd <= 1e-12 * max(abs(m), 1e-300):
        return -math.inf, m, sd
    return m * math.sqrt(n) / sd, m, sd


def t_p(d: Sequence[float]) -> float:
    if len(d) < 2:
        return 1.0
    t = t_stat(d)[0]
    return 1.0 if t == -math.inf else t_sf(t, len(d) - 1)


@functools.lru_cache(maxsize=256)
def t_crit(df: int, level: float) -> float:
    """The c with P(T_df >= c) = level."""
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > level:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_sf(mid, df) > level else (lo, mid)
    return hi


def t_interval(d: Sequence[float], level: float) -> tuple[float, float | None, float | None]:
    """(mean, low, high): mean -+ c sd / sqrt(n), each end at one-sided `level`."""
    if len(d) < 2:
        return (d[0] if d else 0.0), None, None
    t, m, sd = t_stat(d)
    if t == -math.inf:
        return m, None, None
    h = t_crit(len(d) - 1, level) * sd / math.sqrt(len(d))
    return m, m - h, m + h


@dataclasses.dataclass(frozen=True)
class TDesign(SQ.Design):
    t_first: int = 0
    t_last: int = 0
    t_level: float = 0.0


def design(min_pairs=SQ.MIN_PAIRS, max_pairs=SQ.MAX_PAIRS, alpha=SQ.ALPHA, sims=SQ.SIMULATIONS):
    base = ORIGINAL["design"]
    if LANE is None:
        return base(min_pairs, max_pairs, alpha, sims)
    first, last, level, w_alpha = LANE
    # the signed-rank lane as calibrated (ttest_design.py): Pocock's level at every look
    w = SQ._design(min_pairs, max_pairs, w_alpha, sims, 0) if w_alpha > 0 else None
    return TDesign(min_pairs, max_pairs, alpha, w.level if w else 0.0, w.error if w else 0.0,
                   w.error_se if w else 0.0, t_first=first, t_last=last or max_pairs,
                   t_level=level)  # fmt: skip


def verdict(a, b, d, maximize=False):
    """sequential.verdict with the t lane."""
    v = ORIGINAL["verdict"](a, b, d, maximize)
    if not isinstance(d, TDesign):
        return v
    diffs = SQ._log_ratios(a, b, maximize)
    sig = v.significant
    p = v.p_nominal
    if d.t_first <= len(a) <= d.t_last:
        pt = t_p(diffs)
        sig = sig or pt <= d.t_level
        p = min(p, pt)
    futile = v.futile and not sig and len(a) >= d.t_last
    return dataclasses.replace(
        v,
        significant=sig,
        improved=sig and v.speedup > 1.0,
        futile=futile,
        decided=sig or futile or len(a) >= d.max_pairs,
        p_nominal=p,
    )


def measure(verification, maximize):
    """verdict.measure with the t lane's interval when the t lane decides."""
    m = ORIGINAL["measure"](verification, maximize)
    if LANE is None or not m.get("pairs"):
        return m
    first, last, level, w_alpha = LANE
    last = last or int((verification.get("design") or {}).get("max") or SQ.MAX_PAIRS)
    default, tuned = V._pairs(verification)
    d = V.log_ratios(default, tuned, maximize)
    if w_alpha <= 0:  # no signed-rank lane: no Hodges-Lehmann interval
        m.update(low=None, high=None, speedup=math.exp(statistics.median(d)))
    if first <= len(d) <= last:
        tm, lo, hi = t_interval(d, level)
        if lo is not None and (m.get("low") is None or math.exp(lo) > m["low"]):
            m.update(speedup=math.exp(tm), low=math.exp(lo), high=math.exp(hi), level=level)
    return m


def install(spec: str | None) -> None:
    """spec FIRST:LAST:LEVEL:WALPHA, or None/"-" for the signed-rank design alone."""
    global LANE
    LANE = None
    if spec and spec != "-":
        f, la, lv, wa = spec.split(":")
        LANE = (int(f), int(la), float(lv), float(wa))
    SQ.design, SQ.verdict, V.measure = design, verdict, measure
