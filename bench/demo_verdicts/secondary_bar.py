#!/usr/bin/env python3
"""How often a setting beside the main gain stays in best.xml, by its true contribution: the
reduction's test against 1.0 (before) and against 1 + --min-gain (reduction.SHOWN_MIN_GAIN), on
the pair noise the held demos recorded. No new runs: the noise is resampled from the demos'
own verification pairs (each set of pairs' log ratios about their mean, scaled by
sqrt(n/(n-1))), a true contribution e added; each simulated test runs the study's sequential
design (at least 5 pairs, at most --verify-pairs: the demo's 10 and the default 20) and stops
as the reduction's does (significant, futile or at its cap).

Also lists every setting beside the main one that a held demo's reduction measured in its last
round (its removal cost, pairs, wins) and how often the searches' winners held each.

  .venv/bin/python bench/demo_verdicts/secondary_bar.py --out bench/demo_verdicts/secondary_bar.json
"""

import argparse
import glob
import json
import math
import random
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

from iotune.search import sequential

HERE = Path(__file__).resolve().parent
EFFECTS = (1.0, 1.03, 1.05, 1.08, 1.11, 1.15, 1.2, 1.25, 1.3, 1.4, 1.5, 2.0)
MIN_GAIN = 0.05


def runs_of(files: list[str]) -> list[tuple[str, int, dict]]:
    out = []
    for f in files:
        for i, r in enumerate(json.load(open(f))["runs"]):
            if r.get("summary"):
                out.append((Path(f).stem.removeprefix("demo_verdicts-"), i + 1, r))
    return out


def residuals(runs: list[tuple[str, int, dict]]) -> list[float]:
    """Each recorded set of verification pairs' log ratios about their mean (scaled so that
    their spread is the pairs' own, not shrunk by the mean taken from them)."""
    out = []
    for _, _, r in runs:
        s = r["summary"]
        sets = [s.get("final"), (s.get("minimal") or {}).get("verified"), s.get("headline")]
        seen = set()
        for v in sets:
            rounds = (v or {}).get("rounds") or []
            key = tuple((x["default"], x["tuned"]) for x in rounds)
            if len(rounds) < 3 or key in seen:
                continue
            seen.add(key)
            d = [math.log(x["default"] / x["tuned"]) for x in rounds if x["tuned"] > 0]
            m, k = statistics.fmean(d), math.sqrt(len(d) / (len(d) - 1))
            out.extend((x - m) * k for x in d)
    return out


def simulate(resid: list[float], e: float, max_pairs: int, n: int, seed: int) -> dict:
    """One setting's removal test, n times: keep rates and mean pairs of both bars."""
    design = sequential.design(5, max_pairs)
    rng = random.Random(seed)
    out = {}
    for name, margin in (("vs 1.0", 0.0), (f"vs {1 + MIN_GAIN:g}", MIN_GAIN)):
        kept, pairs = 0, []
        for _ in range(n):
            a, b = [], []  # a: the set without the setting (slower by e), b: the full set
            while True:
                a.append(e * math.exp(rng.choice(resid)))
                b.append(1.0 * (1 + margin))  # the full set handicapped by the margin
                v = sequential.verdict(a, b, design)
                if v.decided:
                    break
            kept += v.significant
            pairs.append(len(a))
        out[name] = {"kept": kept / n, "pairs_mean": round(statistics.fmean(pairs), 2)}
    return out


def recorded(runs: list[tuple[str, int, dict]]) -> dict:
    """The settings beside fill_time=never the reductions measured in their last round, and
    how often the winners held each (setting=value)."""
    last = re.compile(r"settings' contributions: (.*)")
    beside, held = [], Counter()
    for tag, i, r in runs:
        s = r["summary"]
        best = s.get("best_settings") or {}
        for k, v in best.items():
            if k != "fill_time":
                held[f"{k}={v}"] += 1
        lines = [m.group(1) for m in last.finditer(r.get("stdout") or "")]
        contrib = (s.get("minimal") or {}).get("contributions") or {}
        for k, c in contrib.items():
            if k == "fill_time" or best.get("fill_time") != "never":
                continue
            rec = s.get("recommended") or {}
            beside.append({"run": f"{tag} {i}", "setting": f"{k}={rec.get(k, best.get(k))}",
                           "cost": round(c["cost"], 3), "pairs": c.get("pairs"),
                           "wins": c.get("wins"), "rounds": len(lines),
                           "recommended": sorted(s.get("recommended") or {})})  # fmt: skip
    return {"winners": len(runs), "held": dict(held.most_common(12)), "kept_beside": beside}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", default=sorted(glob.glob(str(HERE / "*held*.json"))))
    ap.add_argument("--n", type=int, default=4000, help="simulated tests per effect and cap")
    ap.add_argument("--out", type=Path, default=HERE / "secondary_bar.json")
    args = ap.parse_args()
    runs = runs_of(args.files)
    resid = residuals(runs)
    res = {
        "command": " ".join([sys.executable, *sys.argv]),
        "files": [Path(f).name for f in args.files],
        "demos": len(runs),
        "noise": {
            "pairs": len(resid),
            "sd_log": round(statistics.stdev(resid), 4),
            "mad_log": round(statistics.median(abs(x) for x in resid), 4),
        },  # fmt: skip
        "recorded": recorded(runs),
        "power": {},
    }
    print(f"{len(runs)} held demos, {len(resid)} recorded pairs' residuals: sd of the log ratio "
          f"{res['noise']['sd_log']}, median |residual| {res['noise']['mad_log']}")  # fmt: skip
    print("| true contribution | cap | kept, test vs 1.0 | pairs | kept, vs 1.05 | pairs |")
    print("|---|---|---|---|---|---|")
    for cap in (10, 20):
        for e in EFFECTS:
            s = simulate(resid, e, cap, args.n, seed=int(e * 1000) + cap)
            res["power"][f"{e:g}@{cap}"] = s
            (a, sa), (b, sb) = s.items()
            print(f"| {e:.2f}x | {cap} | {sa['kept']:.1%} | {sa['pairs_mean']} | "
                  f"{sb['kept']:.1%} | {sb['pairs_mean']} |")  # fmt: skip
    for b in res["recorded"]["kept_beside"]:
        print("kept beside fill_time=never:", b)
    print("winners' settings beside fill_time (of", len(runs), "):", res["recorded"]["held"])
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
