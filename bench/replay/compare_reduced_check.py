#!/usr/bin/env python3
"""Two replays of the same studies (replay.py --studies, the same seeds) side by side, before
and after a change of the reduced set's check (--reduced-extra): per landscape, the studies
that recommend tuning (the false wins on a flat landscape), the reduced sets' checks and how
many failed (so that the whole winner was kept), distinct verdicts, runs, and each study whose
best.xml changed with its quality (the best's true time / the verdict's) before and after.

  .venv/bin/python bench/replay/compare_reduced_check.py \\
      bench/replay/studies-reducedcheck-before.json bench/replay/studies-reducedcheck.json
"""

import json
import statistics
import sys
from collections import Counter


def stats(rs: list[dict]) -> dict:
    checks = [r["reduced_check"] for r in rs if r.get("reduced_check")]
    runs = [r["runs"]["total"] for r in rs]
    return {
        "studies": len(rs),
        "tuned": sum(not r["keep_defaults"] for r in rs),
        "reduced checks": len(checks),
        "failed (whole winner kept)": sum(not c["passed"] for c in checks),
        "checks beyond 20 pairs": sum(1 for c in checks if (c["pairs"] or 0) > 20),
        "distinct verdicts": len(Counter(r["recommended"] for r in rs)),
        "most common": Counter(r["recommended"] for r in rs).most_common(1)[0],
        "runs median": statistics.median(runs),
        "runs mean": round(statistics.mean(runs), 1),
        "quality mean": round(statistics.mean(r["quality"] for r in rs), 3),
    }


def main(before: str, after: str) -> int:
    a, b = json.load(open(before)), json.load(open(after))
    for name, land in a["landscapes"].items():
        for strategy, res in land["strategies"].items():
            ra, rb = res["runs"], b["landscapes"][name]["strategies"][strategy]["runs"]
            print(f"{name} {strategy}")
            print("  before:", stats(ra))
            print("  after: ", stats(rb))
            for x, y in zip(ra, rb, strict=True):
                if x["recommended"] != y["recommended"]:
                    print(f"  seed {x['seed']}: {x['recommended']} (quality {x['quality']:.2f}, "
                          f"{x['runs']['total']} runs, check {x['reduced_check']}) -> "
                          f"{y['recommended']} (quality {y['quality']:.2f}, {y['runs']['total']} "
                          f"runs, check {y['reduced_check']})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
