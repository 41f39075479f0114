#!/usr/bin/env python3
"""What each setting the demo's studies recommended beside fill_time=never gains on its own, on
top of fill_time=never: the demo's kernel (GCRM-IO, `iotune tune --demo`'s arguments) run in
interleaved rounds, each round every arm once in a shuffled order, as a study's trials run
(iotune.trial.run_trial, objective io-time, freed memory held as `--hold-freed-memory` does, not
isolated: every run overwrites the files of the run before it in one directory, as the demo's
trials do; with `--isolate` each writes new files in a scratch directory and the times halve).

The demos' verdicts differ in one setting: most recommend fill_time=never alone, a few add
transfer_mode=independent (bench/README "The full winner's verification past --verify-pairs").
Whether that second setting is a real gain, and how large, decides which verdict is right; this
measures it with far more pairs than a study spends.

  flock /work/wt/measure.lock .venv/bin/python bench/second_gain/second_gain.py --rounds 40
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

BASE = {"fill_time": "never"}
ARMS = {
    "defaults": {},
    "fill_time": BASE,
    "+transfer_mode": {**BASE, "transfer_mode": "independent"},
    "+romio_cb_write": {**BASE, "romio_cb_write": "disable"},
    "+romio_ds_write": {**BASE, "romio_ds_write": "disable"},
}


def measure(rounds: int, seed: int, nprocs: int, isolate: bool) -> dict:
    from iotune import freedmem, paths, trial
    from iotune.tune_cli import KERNEL_ARGS

    app = [str(paths.find_kernel("gcrmio")), *KERNEL_ARGS["gcrmio"]]
    command = [*mpitools.mpiexec(nprocs), *app]
    rng = random.Random(seed)
    rows = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="second-gain-") as tmp, freedmem.hold() as held:
        opts = trial.TrialOptions(command=command, workdir=Path(tmp), cwd=Path(tmp),
                                  objective="io-time", timeout=120, lib=paths.find_library(),
                                  isolate=isolate)  # fmt: skip
        for r in range(rounds):
            order = list(ARMS)
            rng.shuffle(order)
            row: dict = {"round": r, "order": order}
            for arm in order:
                o = trial.run_trial(ARMS[arm], opts)
                row[arm] = o.value if o.ok else None
            rows.append(row)
            print(json.dumps(row), flush=True)
    return {
        "command": shlex.join(command),
        "arms": ARMS,
        "isolate": isolate,
        "hold": held,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "machine": platform.platform(),
        "host": platform.node(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "rounds": rows,
    }


def summarise(data: dict) -> dict:
    """Per arm against fill_time alone (and fill_time against the defaults): the median of the
    rounds' paired ratios, a bootstrap 95 % interval of it, and the rounds it won."""
    rng = random.Random(0)
    out = {}
    for arm in data["arms"]:
        ref = "defaults" if arm == "fill_time" else "fill_time"
        if arm == ref or arm == "defaults":
            continue
        r = [x[ref] / x[arm] for x in data["rounds"] if x.get(ref) and x.get(arm)]
        boot = sorted(statistics.median(rng.choices(r, k=len(r))) for _ in range(4000))
        out[f"{arm} vs {ref}"] = {
            "pairs": len(r),
            "median_ratio": round(statistics.median(r), 3),
            "ci95": [round(boot[100], 3), round(boot[3899], 3)],
            "geo_mean": round(math.exp(statistics.fmean(math.log(x) for x in r)), 3),
            "won": sum(x > 1 for x in r),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=40, help="interleaved rounds (default 40)")
    p.add_argument("--seed", type=int, default=1, help="order of the arms (default 1)")
    p.add_argument("-n", "--nprocs", type=int, default=2, help="ranks (default 2)")
    p.add_argument(
        "--isolate",
        action="store_true",
        help="each run in a scratch directory of its own (default: one directory)",
    )
    p.add_argument("--out", type=Path, default=HERE / "second_gain.json",
                   help="raw rounds and summary (default second_gain.json here)")  # fmt: skip
    args = p.parse_args(argv)
    data = measure(args.rounds, args.seed, args.nprocs, args.isolate)
    data["summary"] = summarise(data)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(data["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
