#!/usr/bin/env python3
"""The table of bench/README.md's "The early look": early_look.sh's replays side by side, per
landscape and strategy: runs to a verified verdict (median), the verification's runs, correct
verdicts, keep the defaults, verdicts in the top group, for `before`, `early`, `after` and
`verify`.

  python3 bench/replay/early_look_table.py OUTDIR > OUTDIR/early_look.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

GROUPS = ("held", "gcrmio-x2", "vorpalio-x2", "out1", "out2", "ompio")
VARIANTS = ("before", "early", "after", "verify")


def _row(st: dict) -> tuple:
    runs = st["runs_total"]  # [median, 95 % CI low, high]
    runs = runs[0] if isinstance(runs, list) else runs
    ver = st["runs_by_phase_median"].get("verification", 0)
    return runs, ver, st["correct"], st["keep_defaults"], st["correct_top"]


def main() -> None:
    out = Path(sys.argv[1])
    print(
        "| landscape | strategy | runs (median): before / early / after / verify "
        "| verification runs "
        "| correct verdicts | keep the defaults | verdicts in the top group |"
    )
    print("|---|---|---|---|---|---|---|")
    for g in GROUPS:
        data = {v: json.loads((out / f"{g}-{v}.json").read_text()) for v in VARIANTS
                if (out / f"{g}-{v}.json").exists()}  # fmt: skip
        if len(data) < len(VARIANTS):
            continue
        for land in data["before"]["landscapes"]:
            for strat in data["before"]["landscapes"][land]["strategies"]:
                rows = [_row(data[v]["landscapes"][land]["strategies"][strat]) for v in VARIANTS]
                cell = [" / ".join(f"{r[i]:g}" if i < 2 else f"{r[i]:.0%}" for r in rows)
                        for i in range(5)]  # fmt: skip
                print(f"| {land} | {strat} | {' | '.join(cell)} |")


if __name__ == "__main__":
    main()
