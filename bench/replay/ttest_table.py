#!/usr/bin/env python3
"""The comparison table of bench/README.md's "A t-test lane for the verification": whole
studies replayed (replay.py --studies, merged per design with --merge) under the signed-rank
verification and the t-lane designs (--t-lane), side by side per landscape and strategy.

  .venv/bin/python bench/replay/ttest_table.py \
      signed-rank=bench/replay/studies-tlane-signedrank.json \
      "t 4..20=bench/replay/studies-tlane-t4.json" \
      "signed rank + t 3..6=bench/replay/studies-tlane-hybrid.json"
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    runs = {}
    for arg in sys.argv[1:]:
        name, _, path = arg.partition("=")
        runs[name] = json.loads(Path(path).read_text())["landscapes"]
    print("| landscape | strategy | verification | studies | runs to a verified verdict (median "
          "[95 % CI]) | verification runs (median) | correct verdicts | expected correct share "
          "| keep the defaults | something recommended on a flat landscape |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    first = next(iter(runs.values()))
    for land in first:
        for strategy in first[land]["strategies"]:
            for name, r in runs.items():
                st = (r.get(land) or {}).get("strategies", {}).get(strategy)
                if st is None:
                    continue
                t = st["runs_total"]
                flat = land.startswith("flat")
                wrong = f"{1 - st['keep_defaults']:.0%}" if flat else "-"
                print(f"| {land} | {strategy} | {name} | {st['studies']} | {t[0]:g} [{t[1]:g}, "
                      f"{t[2]:g}] | {st['runs_by_phase_median']['verification']:g} | "
                      f"{st['correct']:.0%} | {st.get('correct_expected', 0):.0%} | "
                      f"{st['keep_defaults']:.0%} | {wrong} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
