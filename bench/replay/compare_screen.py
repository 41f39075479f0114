#!/usr/bin/env python3
"""Two replays of the same studies (replay.py --studies, the same seeds) side by side, without
and with the reduction's screen (study.SCREEN: the settings of the winner that the search's
trials do not single out removed together after one test; replay.py --no-screen for the
former): per landscape, runs (median, mean; the reduction's mean), the verdicts' true quality
(mean), correct and top-group shares, keep-the-defaults share, distinct verdicts and the
commonest one, and how often the screen acted and removed.

  .venv/bin/python bench/replay/compare_screen.py BEFORE.json AFTER.json [...pairs]
"""

import json
import statistics
import sys
from collections import Counter


def stats(runs: list[dict]) -> dict:
    total = [r["runs"]["total"] for r in runs]
    verdicts = Counter(r["recommended"] for r in runs)
    screened = [r.get("screen") for r in runs if r.get("screen")]
    return {
        "runs median": statistics.median(total),
        "runs mean": round(statistics.mean(total), 1),
        "reduction mean": round(statistics.mean(r["runs"].get("reduction", 0) for r in runs), 1),
        "quality mean": round(statistics.mean(r["quality"] for r in runs), 3),
        "correct": sum(r["correct"] for r in runs),
        "in top group": sum(r["in_top"] for r in runs),
        "keep defaults": sum(r["keep_defaults"] for r in runs),
        "distinct verdicts": len(verdicts),
        "commonest": verdicts.most_common(1)[0],
        "screen acted": len(screened),
        "screen removed": sum(bool(s["removed"]) for s in screened),
    }


def main(files: list[str]) -> int:
    for before, after in zip(files[::2], files[1::2], strict=True):
        b, a = json.load(open(before)), json.load(open(after))
        for name, land in b["landscapes"].items():
            for strategy, s in land["strategies"].items():
                t = a["landscapes"][name]["strategies"][strategy]
                print(f"{name} {strategy}")
                print(f"  without: {stats(s['runs'])}")
                print(f"  with:    {stats(t['runs'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
