#!/usr/bin/env python3
"""Two replays of the same studies (replay.py --studies, the same seeds) side by side, without
and with the reduction's screen (reduction.SCREEN: the settings of the winner that the search's
trials do not single out removed together after one test; replay.py --no-screen for the
former): per landscape, runs (median, mean; the reduction's mean), the verdicts' true quality
(mean), correct and top-group shares, keep-the-defaults share, distinct verdicts and the
commonest one, and how often the screen acted and removed.

  .venv/bin/python bench/replay/compare_screen.py without=BEFORE.json with=AFTER.json ...
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


def main(args: list[str]) -> int:
    """args: LABEL=FILE ...; per landscape and strategy, one line per label that has it."""
    table: dict[str, dict[str, dict]] = {}
    for arg in args:
        label, _, path = arg.partition("=")
        for name, land in json.load(open(path))["landscapes"].items():
            for strategy, s in land["strategies"].items():
                table.setdefault(f"{name} {strategy}", {})[label] = stats(s["runs"])
    for key, rows in table.items():
        print(key)
        for label, st in rows.items():
            print(f"  {label}: {st}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
