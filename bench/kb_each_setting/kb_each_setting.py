#!/usr/bin/env python3
"""Why did remembered settings not transfer? Each stored setting alone, and all of them, against
the defaults, at the study's scale and at the new one, in interleaved rounds.

For GCRM-IO the knowledge base's entry held `fill_time=never transfer_mode=independent` (found
on 2 ranks, --cells 65536); `kb suggest` gave it to a 1-rank run at --cells 131072, where it
measured 0.97x (bench/README.md, "Knowledge base"). This measures, at both scales, each setting
alone and together, a discarded warm-up before each measured run, variants shuffled in each
round; recorded: the objective (the kernel's time, as `iotune tune` takes it) and the bytes the
kernel wrote. --sync flushes files before close (what `iotune tune --sync` does).

Usage: .venv/bin/python bench/kb_each_setting/kb_each_setting.py [--rounds 5] [--sync] [--out
FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iotune import paths, trial
from iotune.search import noise

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

CASES = {"2 ranks, --cells 65536": (2, ["--cells", "65536"]),
         "1 rank, --cells 131072": (1, ["--cells", "131072"])}  # fmt: skip
VARIANTS = {
    "default": {},
    "fill_time=never": {"fill_time": "never"},
    "transfer_mode=independent": {"transfer_mode": "independent"},
    "both": {"fill_time": "never", "transfer_mode": "independent"},
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sync", action="store_true")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "kb_each_setting.json")
    args = ap.parse_args()
    exe = str(paths.find_kernel("gcrmio"))
    rng = random.Random(args.seed)
    started, load = time.strftime("%Y-%m-%dT%H:%M:%S%z"), os.getloadavg()
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="kb-each-") as tmp:
        for case, (ranks, kargs) in CASES.items():
            cmd = [*mpitools.mpiexec(ranks), exe, *kargs]
            opts = trial.TrialOptions(command=cmd, workdir=Path(tmp) / "s", cwd=Path(tmp),
                                      lib=paths.find_library(), sync=args.sync)  # fmt: skip
            values: dict[str, list] = {v: [] for v in VARIANTS}
            written: dict[str, list] = {v: [] for v in VARIANTS}
            for _ in range(args.rounds):
                for v in rng.sample(list(VARIANTS), len(VARIANTS)):
                    trial.run_trial(VARIANTS[v], opts)  # warm-up, discarded
                    o = trial.run_trial(VARIANTS[v], opts)
                    values[v].append(o.value)
                    written[v].append(o.metrics.get("bytes_written"))
            ok = {v: [x for x in xs if x is not None] for v, xs in values.items()}
            out[case] = {
                "command": cmd,
                "values": values,
                "bytes_written": written,
                "summary": {v: noise.summary(xs) for v, xs in ok.items()},
                "speedup_of_medians": {
                    v: statistics.median(ok["default"]) / statistics.median(xs)
                    for v, xs in ok.items()
                },
            }
            for v in VARIANTS:
                print(f"{case} | {v}: median {statistics.median(ok[v]):.4f} s, speedup "
                      f"{out[case]['speedup_of_medians'][v]:.2f}x, written "
                      f"{written[v][0]}", flush=True)  # fmt: skip
    record = {
        "command": " ".join([sys.executable, *sys.argv]),
        "git": subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "cpus": os.cpu_count(),
        "started": started,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_before": load,
        "load_after": os.getloadavg(),
        "sync": args.sync,
        "objective": "the kernel's total_s (what iotune tune's auto objective takes)",
        "cases": out,
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
