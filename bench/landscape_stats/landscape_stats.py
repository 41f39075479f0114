#!/usr/bin/env python3
"""How well can a measured landscape (bench/measure_landscape/measure_landscape.py) rank its
configurations?

For each kernel and group of measurement rounds: the runs' spread per configuration (median
CV), the rank correlation (Spearman) of the configurations' medians between groups of rounds,
how many configurations lie within 95 % of the best median, and how many a test cannot tell
from the best (replay.top_group: one-sided Mann-Whitney U, normal approximation with a
continuity correction, p >= 0.05: the best is not significantly faster), and how often each
configuration is the best when every configuration's runs are resampled (bootstrap, 2000
resamples): the winner's curse of taking the argmin of many noisy medians as "the best".

--per-round: each run divided by the median run of its kernel's round first
(replay.round_normalised: the rounds' medians differ by up to 2x with the machine's load).

Any landscape of bench/measure_landscape/ (its kernel column names the program); the output
ends with a Markdown table, one row per kernel (pooled rounds): default and best median, best /
default, how many configurations lie within 95 % of the best, the runs' spread (median and p90
of the configurations' CV) and the rank agreement (Spearman) between each two rounds.

Usage: .venv/bin/python bench/landscape_stats/landscape_stats.py landscape-sync.csv
           landscape-sync-rounds4-6.csv [--per-round]
           [--seeds-from bench/kb_warmstart/kb_warmstart-sync-studied.json] [--out ...json]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "replay"))
LANDSCAPES = (
    HERE.parent / "measure_landscape"
)  # the CSVs of bench/measure_landscape/measure_landscape.py

import replay  # noqa: E402


def ranks(xs: list[float]) -> list[float]:
    """Ranks from 1, ties get their average rank."""
    order = sorted(range(len(xs)), key=xs.__getitem__)
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = ranks(a), ranks(b)
    return statistics.correlation(ra, rb)


def values(land: replay.Landscape) -> dict[str, list[float]]:
    """The successful values of each configuration that counts (see Landscape.truth)."""
    return {
        k: [v for v, _, _ in s if v is not None]
        for k, s in land.samples.items()
        if land.truth[k] != float("inf")
    }


def describe(land: replay.Landscape, boot: int = 2000, seed: int = 1) -> dict:
    vals = values(land)
    best_key = min(land.truth, key=land.truth.get)
    cvs = [statistics.pstdev(v) / statistics.fmean(v) for v in vals.values() if len(v) > 1]
    alike = sorted(replay.top_group(land))
    rng = random.Random(seed)
    wins: dict[str, int] = defaultdict(int)
    for _ in range(boot):
        meds = {k: statistics.median(rng.choices(v, k=len(v))) for k, v in vals.items()}
        wins[min(meds, key=meds.get)] += 1
    top = sorted(wins.items(), key=lambda kv: -kv[1])[:5]
    cvs_sorted = sorted(cvs)
    default_runs = vals.get("(defaults)", [])
    return {
        "configurations": len(land.truth),
        "failed_configurations": sum(v == float("inf") for v in land.truth.values()),
        "runs_per_configuration": statistics.median(len(v) for v in vals.values()),
        "median_cv": statistics.median(cvs),
        "cv_p90": cvs_sorted[int(0.9 * (len(cvs_sorted) - 1))],
        "default_s": land.default,
        "default_cv": (
            statistics.pstdev(default_runs) / statistics.fmean(default_runs)
            if len(default_runs) > 1
            else None
        ),
        "best": best_key,
        "best_s": land.best,
        # best / default: how much of the default's time the best takes (1: nothing to gain)
        "best_over_default": land.best / land.default,
        "default_within_95": land.reached("(defaults)", 0.95),
        "within_95": sum(land.reached(k, 0.95) for k in land.truth),
        "within_90": sum(land.reached(k, 0.90) for k in land.truth),
        "indistinguishable_from_best": len(alike),
        "indistinguishable": alike,
        "bootstrap_best_share": {k: n / boot for k, n in top},
        "bootstrap_distinct_winners": len(wins),
    }


def round_spearman(rows: list[dict]) -> dict[str, float]:
    """Rank agreement of the configurations' values between each two rounds of the rows (the
    configurations measured ok in both): does one round rank them as another does?"""
    by_round: dict[str, dict[str, float]] = defaultdict(dict)
    for r in rows:
        if r["status"] == "ok" and r["value_s"]:
            by_round[r["round"]][r["config"]] = float(r["value_s"])
    names = sorted(by_round, key=int)
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            keys = sorted(set(by_round[a]) & set(by_round[b]))
            if len(keys) > 2:
                out[f"round {a} vs {b}"] = spearman(
                    [by_round[a][x] for x in keys], [by_round[b][x] for x in keys]
                )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "groups",
        nargs="+",
        help="CSV files of bench/measure_landscape/, one group of rounds each (A.csv,B.csv: "
        "the rounds of several files as one group)",
    )
    ap.add_argument("--seeds-from", type=Path, help="a kb_warmstart JSON: judge its KB seeds")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--per-round", action="store_true",
                    help="runs relative to their round median (round_normalised)")  # fmt: skip
    args = ap.parse_args()
    groups = {
        g: [r for f in g.split(",") for r in csv.DictReader(open(LANDSCAPES / f))]
        for g in args.groups
    }
    if args.per_round:
        groups = {g: replay.round_normalised(rows) for g, rows in groups.items()}
    seeds_json = json.loads(args.seeds_from.read_text()) if args.seeds_from else None
    out: dict = {"command": " ".join([sys.executable, *sys.argv]), "per_round": args.per_round,
                 "kernels": {}}  # fmt: skip
    kernels = sorted({r["kernel"] for rows in groups.values() for r in rows})
    for kernel in kernels:
        lands = {g: replay.Landscape([r for r in rows if r["kernel"] == kernel])
                 for g, rows in groups.items()}  # fmt: skip
        pooled = replay.Landscape([r for rows in groups.values() for r in rows
                                   if r["kernel"] == kernel])  # fmt: skip
        k: dict = {g: describe(land) for g, land in lands.items()}
        k["pooled"] = describe(pooled)
        names = list(lands)
        k["spearman_rounds"] = round_spearman(
            [r for rows in groups.values() for r in rows if r["kernel"] == kernel]
        )
        keys = sorted(set.intersection(*(set(values(land)) for land in lands.values())))
        k["spearman"] = {
            f"{a} vs {b}": spearman(
                [lands[a].truth[x] for x in keys], [lands[b].truth[x] for x in keys]
            )  # fmt: skip
            for i, a in enumerate(names)
            for b in names[i + 1 :]
        }
        # each group's best, judged by the other groups and by the pooled estimate
        k["best_of_group_pooled_quality"] = {
            g: pooled.best / pooled.truth[min(land.truth, key=land.truth.get)]
            for g, land in lands.items()
        }
        if seeds_json:
            # the seed filed for this kernel in each knowledge base (others are distractors)
            own = [s for chosen in seeds_json["kernels"][kernel]["seeds"] for s in chosen
                   if s["name"].split("(", 1)[1].startswith(kernel)]  # fmt: skip
            k["kb_seeds"] = [
                {
                    "settings": s["settings"],
                    **{
                        f"quality_{g}": land.best
                        / land.truth.get(land.key(s["settings"]), float("inf"))
                        for g, land in {**lands, "pooled": pooled}.items()
                    },  # fmt: skip
                    "indistinguishable_pooled": pooled.key(s["settings"])
                    in k["pooled"]["indistinguishable"],
                }
                for s in own
            ]
        out["kernels"][kernel] = k
        print(f"== {kernel}")
        for g in [*names, "pooled"]:
            d = k[g]
            share = max(d["bootstrap_best_share"].values())
            print(f"  {g}: {d['configurations']} configurations, default "
                  f"{d['default_s']:.4g} s, best {d['best_s']:.4g} s, best/default "
                  f"{d['best_over_default']:.2f}")  # fmt: skip
            print(f"  {g}: {d['runs_per_configuration']:g} runs/config, median CV "
                  f"{d['median_cv']:.2f}; within 95 %: {d['within_95']}, within 90 %: "
                  f"{d['within_90']}; indistinguishable from the best: "
                  f"{d['indistinguishable_from_best']}; bootstrap: "
                  f"{d['bootstrap_distinct_winners']} different winners, the most frequent "
                  f"wins {share:.0%}")  # fmt: skip
        for pair, rho in k["spearman"].items():
            print(f"  Spearman {pair}: {rho:.2f}")
        if k["spearman_rounds"]:
            rhos = ", ".join(f"{p.removeprefix('round ')} {v:.2f}"
                             for p, v in k["spearman_rounds"].items())  # fmt: skip
            print(f"  Spearman between rounds (pooled): {rhos}")
        for g, q in k["best_of_group_pooled_quality"].items():
            print(f"  best of {g}, pooled quality: {q:.2f}")
        for s in k.get("kb_seeds", []):
            qs = ", ".join(f"{n.removeprefix('quality_')} {v:.2f}" for n, v in s.items()
                           if n.startswith("quality_"))  # fmt: skip
            print(f"  KB seed {s['settings']}: {qs}; indistinguishable (pooled): "
                  f"{s['indistinguishable_pooled']}")  # fmt: skip
    print()
    print(summary_table(out["kernels"]))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


def summary_table(kernels: dict) -> str:
    """One Markdown row per kernel, from its pooled rounds: the landscape's shape at a glance."""
    lines = [
        "| kernel | configurations | runs each | default s | best s | best/default | "
        "within 95 % of the best | median CV of the runs (p90) | Spearman between rounds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kernel, k in kernels.items():
        d = k["pooled"]
        rhos = sorted(k["spearman_rounds"].values())
        rho = f"{min(rhos):.2f}-{max(rhos):.2f}" if rhos else "-"
        lines.append(
            f"| {kernel} | {d['configurations']} | {d['runs_per_configuration']:g} | "
            f"{d['default_s']:.4g} | {d['best_s']:.4g} | {d['best_over_default']:.2f} | "
            f"{d['within_95']} | {d['median_cv']:.2f} ({d['cv_p90']:.2f}) | {rho} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
