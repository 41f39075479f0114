"""The verdict of a study: how much faster the settings in best.xml are than the defaults,
measured on exactly those settings, with an interval. The one headline every output reads
(the console, report.html, summary.json's "headline", the knowledge base).

`headline(...)` is the only place it is computed. Its numbers come from the interleaved
default/tuned pairs of one verification (pairs.verify) of exactly best.xml's settings:

- speedup: the Hodges-Lehmann estimate of the pairs' log ratios (the median of their Walsh
  averages, exp): the estimate that goes with the signed-rank test the verification uses;
- interval: the exact Hodges-Lehmann (Walsh-average order statistic) interval, each end at the
  sequential design's per-look level (Pocock's). That makes it a repeated confidence interval:
  each end holds with 1 - alpha (95 %) confidence whatever look the test stopped at, the two
  together with 1 - 2 alpha (90 %). Its lower end is above 1.0 exactly when the sequential
  test is significant (no ties), so the interval and the test never disagree. Computed exactly
  by counting: deterministic, no resampling, the standard library only;
- wins of pairs: "faster in k of n pairs", always said beside the interval.

The gain is established when the verification says so and the interval lies above 1.0; when it
is not, best.xml holds no settings (keep the defaults) and the candidate goes to
candidate.xml. The study's full winner, when it holds more settings than best.xml, is reported
only as such (`full_winner`), never as the headline.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from iotune.search import sequential


def plural(n: int, noun: str) -> str:
    """'1 pair', '2 pairs'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


CONFIDENCE = 1 - 2 * sequential.ALPHA  # both ends together (each end 1 - ALPHA)


def log_ratios(default: Sequence[float], tuned: Sequence[float], maximize: bool) -> list[float]:
    """Per pair, log(how many times better tuned was); as the sequential test sees them."""
    return sequential._log_ratios(default, tuned, maximize)


def hodges_lehmann(d: Sequence[float], level: float) -> tuple[float, float | None, float | None]:
    """(estimate, low, high) of the centre of the differences d (log ratios): the median of
    the Walsh averages and the interval whose each end excludes at one-sided level `level`
    (exact signed-rank distribution). An end is None when n pairs cannot reach that level."""
    n = len(d)
    if n == 0:
        raise ValueError("no pairs")
    walsh = sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))
    est = statistics.median(walsh)
    m = len(walsh)
    # the smallest c with P(W+ >= c) <= level: W+ >= c rejects a shift (the test's region)
    c = next((w for w in range(1, m + 1) if sequential.p_value(n, w) <= level), None)
    if c is None:
        return est, None, None
    return est, walsh[m - c], walsh[c - 1]


def _exp(x: float | None) -> float | None:
    return None if x is None else math.exp(x)


def _pairs(verification: Mapping[str, Any]) -> tuple[list[float], list[float]]:
    """(default values, tuned values) of a verification's complete pairs."""
    rounds = [r for r in verification.get("rounds") or []
              if r.get("default") is not None and r.get("tuned") is not None]  # fmt: skip
    return [float(r["default"]) for r in rounds], [float(r["tuned"]) for r in rounds]


def measure(verification: Mapping[str, Any], maximize: bool) -> dict[str, Any]:
    """The numbers of one verification (pairs.verify's result): speedup, interval, wins,
    pairs, level; {"pairs": 0} when it has no pair."""
    default, tuned = _pairs(verification)
    if not default:
        return {"pairs": 0, "wins": 0, "speedup": None, "low": None, "high": None}
    d = log_ratios(default, tuned, maximize)
    design = verification.get("design") or {}
    level = float(design.get("level") or sequential.ALPHA / 2)
    if design.get("early") and len(d) == design["early"]:  # the look where a sweep rejects
        level = float(design.get("early_level") or level)
    est, low, high = hodges_lehmann(d, level)
    return {
        "speedup": math.exp(est),
        "low": _exp(low),
        "high": _exp(high),
        "level": level,
        "confidence": CONFIDENCE,
        "wins": sum(1 for x in d if x > 0),
        "pairs": len(d),
        "p_nominal": verification.get("p_nominal"),
        "significant": bool(verification.get("improved")),
    }


def _n(settings: Mapping[str, Any]) -> str:
    return f"{len(settings)} setting{'s' if len(settings) != 1 else ''}"


def detail(m: Mapping[str, Any]) -> str:
    """ "90% interval 1.18-1.45x; faster in 9 of 9 pairs"."""
    if m.get("low") is None:
        interval = f"no {CONFIDENCE:.0%} interval from {plural(m.get('pairs', 0), 'pair')}"
    else:
        interval = f"{CONFIDENCE:.0%} interval {m['low']:.2f}-{m['high']:.2f}x"
    return f"{interval}; faster in {m.get('wins', 0)} of {plural(m.get('pairs', 0), 'pair')}"


def figure(m: Mapping[str, Any]) -> str:
    """ "1.31x (90% interval 1.18-1.45x; faster in 9 of 9 pairs)"."""
    if not m.get("pairs") or m.get("speedup") is None:
        return "not measured"
    return f"{m['speedup']:.2f}x ({detail(m)})"


def established(m: Mapping[str, Any]) -> bool:
    """The test says the gain is shown and the interval lies above 1.0."""
    return bool(m.get("significant") and m.get("low") is not None and m["low"] > 1.0)


def headline(
    recommended: Mapping[str, str],
    verification: Mapping[str, Any] | None,
    maximize: bool,
    full_winner: Mapping[str, str] | None = None,
    full_verification: Mapping[str, Any] | None = None,
    none_better: str | None = None,
) -> dict[str, Any]:
    """THE verdict of a study. recommended: the settings meant for best.xml ({} when nothing
    was better); verification: pairs.verify's result for exactly those settings (or, when
    nothing is recommended, for the best candidate, which is then described as such);
    full_winner/full_verification: the study's whole winner and its verification, reported as
    "full winner" when it holds other settings than best.xml. none_better: why no candidate
    was measured, when it is not that the defaults were the best measured.

    Returns {"settings" (what best.xml holds), "established", "speedup", "low", "high",
    "confidence", "wins", "pairs", "candidate" (the settings measured when not established),
    "full_winner" (when it differs), "text", and the pairs: "rounds", "pair_ratios",
    "design" (their test's), "summary", "variants"}."""
    ver = dict(verification or {})
    m = measure(ver, maximize) if ver else {"pairs": 0}
    measured = dict((ver.get("variants") or {}).get("tuned") or {})
    if recommended and measured != dict(recommended):
        raise ValueError("the verdict must be measured on exactly the recommended settings")
    ok = bool(recommended) and established(m)
    failed = dict(ver.get("failed") or {})
    # settings under which the application failed while the defaults never did are no
    # candidate either: candidate.xml would offer them to be applied (pairs.verify)
    crashed = bool(measured) and bool(failed.get("tuned")) and not failed.get("default")
    out: dict[str, Any] = {
        "settings": dict(recommended) if ok else {},
        "established": ok,
        **{k: m.get(k) for k in ("speedup", "low", "high", "level", "wins", "pairs")},
        "confidence": CONFIDENCE,
        "p_nominal": m.get("p_nominal"),
        "candidate": {} if ok or crashed else measured,
        "pair_ratios": [
            (t / d if maximize else d / t)
            for d, t in zip(*_pairs(ver), strict=True)
            if d > 0 and t > 0
        ],  # fmt: skip
        "rounds": list(ver.get("rounds") or []),
        "design": dict(ver.get("design") or {}),  # the test of these pairs
        "summary": dict(ver.get("summary") or {}),
        "variants": {"default": {}, "tuned": measured},
    }
    if ok:
        text = (f"best.xml ({_n(recommended)}) is {m['speedup']:.2f}x faster than the defaults "
                f"({detail(m)})")  # fmt: skip
    elif crashed:
        text = (f"no better setting found: the application failed in {failed['tuned']} runs "
                f"with the candidate ({_n(measured)}) and in none with the defaults; best.xml "
                "holds no settings (keep the defaults); no candidate.xml is written")  # fmt: skip
    elif not measured:
        why = none_better or "the stack's defaults were the best measured"
        text = f"no better setting found: {why}; best.xml holds no settings (keep the defaults)"
    else:
        why = (
            "the interval includes 1.0" if m.get("low") is not None and m["low"] <= 1.0
            else "not significant" if m.get("pairs") else "too few successful pairs"
        )  # fmt: skip
        text = (f"no better setting found: the gain is not established (the candidate, "
                f"{_n(measured)}, vs the defaults: {figure(m)}; {why}); best.xml holds no "
                "settings (keep the defaults); the candidate is in candidate.xml")  # fmt: skip
    out["text"] = text
    full = dict(full_winner or {})
    if full and full != measured and full_verification:
        fm = measure(full_verification, maximize)
        out["full_winner"] = {
            "settings": full,
            **{k: fm.get(k) for k in ("speedup", "low", "high", "wins", "pairs")},
            "text": f"full winner ({_n(full)}), not recommended: {figure(fm)}",
        }
    return out
