#!/usr/bin/env python3
"""What one setting gains or costs on programs where a rule proposes it: defaults against the
setting, interleaved, per program (e.g. SIO-7 `romio_cb_write=disable` on the sequential
collective shared-file writers: is its severity right?).

    flock LOCK .venv/bin/python bench/agreement/setting_cost.py --setting romio_cb_write=disable \
        --cases haccio,vpicio --rounds 10 --out bench/agreement/setting-cost.json

Cases are agreement.py's (project kernels with its arguments, corpus cases by name). Each
round visits the cases in shuffled order; within a case the two configurations run in shuffled
order, each measured run right after a discarded warm-up, in a folder emptied before it, after
`sync`. Time: the profile's io.time_s (every rank's I/O on every file). Output: every run's
time, per case the median of the pairs' ratios (defaults / setting: above 1 the setting gains)
with min and max, the defaults' median I/O time (what the setting could gain at most), and
the uptime before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import agreement as ag  # noqa: E402


def control(settings: list[str], path: Path) -> Path:
    """A control file of NAME=VALUE settings (the runtime's XML, through iotune's writer)."""
    from iotune import controlfile

    pairs = [s.split("=", 1) for s in settings]
    path.write_text(controlfile.render({k: v for k, v in pairs}))
    return path


def save(a, up: list[str], times: dict, final: bool = False) -> None:
    """The raw times and per case the pairs' ratios, after each round (a stopped run keeps
    them); the last uptime with the final save."""
    now = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    out = {"meta": {"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                    "uptime": [*up, now], "settings": a.setting, "rounds": a.rounds},
           "cases": {}}  # fmt: skip
    for name, tm in times.items():
        ratios = [d / s for d, s in zip(tm["defaults"], tm["setting"], strict=True)]
        if not ratios:
            continue
        out["cases"][name] = {
            "times": tm,
            "ratio_median": statistics.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
            "defaults_median_s": statistics.median(tm["defaults"]),
            "setting_median_s": statistics.median(tm["setting"]),
        }
        c = out["cases"][name]
        if final:
            print(f"{name}: defaults {c['defaults_median_s']:.3f} s, setting "
                  f"{c['setting_median_s']:.3f} s, defaults/setting {c['ratio_median']:.2f} "
                  f"({c['ratio_min']:.2f}-{c['ratio_max']:.2f}, n={len(ratios)})")  # fmt: skip
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    if final:
        print(out["meta"]["uptime"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setting", action="append", required=True, help="NAME=VALUE (repeatable)")
    ap.add_argument("--cases", required=True)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="setting-cost-"))
    wanted = a.cases.split(",")
    cases = [c for c in ag.project_cases(scratch, False) if c.name in wanted]
    cases += [c for c in ag.corpus_cases(ag.corpus.MANIFEST)[0] if c.name in wanted]
    xml = control(a.setting, scratch / "setting.xml")
    up = [subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()]
    times: dict[str, dict[str, list[float]]] = {c.name: {"defaults": [], "setting": []}
                                                for c in cases}  # fmt: skip
    rng = random.Random(a.seed)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout keeps what was measured
    try:
        for _ in range(a.rounds):
            rng.shuffle(cases)
            for case in cases:
                order = ["defaults", "setting"]
                rng.shuffle(order)
                pair = {}
                for which in order:
                    d = scratch / case.name / which
                    d.mkdir(parents=True, exist_ok=True)
                    extra = {"IOTUNE_CONFIG": str(xml)} if which == "setting" else {}
                    pair[which], _ = ag.one_timed(case, case.command(d), d, extra)
                for which, t in pair.items():  # whole pairs only
                    times[case.name][which].append(t)
            save(a, up, times)
    finally:
        save(a, up, times, final=True)
    return 0


if __name__ == "__main__":
    os.environ.pop("IOTUNE_CONFIG", None)
    sys.exit(main())
