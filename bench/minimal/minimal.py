"""Does the minimal recommendation keep the gain? A real `iotune tune` study of a kernel
(the whole pipeline: search, leaders, sequential verification, settings removed one at a time),
then the stack's defaults, the study's full best configuration and its best.xml (the minimal
set) measured in interleaved rounds, each measured run after a discarded warm-up.

  .venv/bin/python bench/minimal/minimal.py --kernel vorpalio [--trials 30] [--rounds 12]

Raw data: bench/minimal/minimal-<kernel>.json (the study's summary and every measured run);
table: bench/minimal/minimal.md (one row per kernel, appended/replaced).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)


def tune(kernel: str, trials: int, out: Path, seed: int, extra: list[str]) -> dict:
    cmd = [sys.executable, "-m", "iotune.tune_cli", "--kernel", kernel, "--trials", str(trials),
           "--out", str(out), "--study", f"minimal-{kernel}", "--seed", str(seed),
           "--no-progress", "--warmup", "1", *extra]  # fmt: skip
    print("+", shlex.join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=out.parent)
    return json.loads((out / "summary.json").read_text())


def measure(kernel: str, variants: dict, rounds: int, seed: int) -> list[dict]:
    from iotune import paths, trial
    from iotune.tune_cli import KERNEL_ARGS

    app = [str(paths.find_kernel(kernel)), *KERNEL_ARGS[kernel]]
    rng = random.Random(seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="minimal-") as tmp:
        opts = trial.TrialOptions(
            command=[*mpitools.mpiexec(2), *app],
            workdir=Path(tmp),
            objective="auto",
            timeout=300,
            lib=paths.find_library(),
            isolate=True,
        )
        for r in range(rounds):
            order = list(variants)
            rng.shuffle(order)
            row = {"round": r, "order": order}
            for name in order:
                trial.run_trial(variants[name], opts)  # warm-up, discarded
                o = trial.run_trial(variants[name], opts)
                row[name] = o.value if o.ok else None
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", required=True, choices=["vorpalio", "gcrmio"])
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE, help="folder of data and table (this one)")
    ap.add_argument("--tune-args", default="", help="more options for iotune tune, one string "
                    "(default: none; e.g. '--verify-pairs 5' for a quick check)")  # fmt: skip
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="minimal-study-") as tmp:
        summary = tune(args.kernel, args.trials, Path(tmp) / "out", args.seed,
                       shlex.split(args.tune_args))  # fmt: skip
    full = summary["best_settings"]
    minimal = summary["recommended"]
    variants = {"default": {}, "full": full, "minimal": minimal}
    rows = measure(args.kernel, variants, args.rounds, args.seed)

    def med(name):
        return statistics.median(r[name] for r in rows if r[name] is not None)

    speed_full = med("default") / med("full")
    speed_min = med("default") / med("minimal") if minimal else 1.0
    res = {
        "kernel": args.kernel,
        "command": shlex.join([sys.executable, *sys.argv]),
        "machine": platform.platform(),
        "host": platform.node(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        # the study's own headline (iotune.verdict: best.xml's speedup, interval, pairs won)
        "study": {
            k: summary.get(k)
            for k in ("verdict", "headline", "best_settings", "minimal", "recommended")
        },  # fmt: skip
        "variants": variants,
        "rounds": rows,
        "median_s": {n: med(n) for n in variants if any(r[n] is not None for r in rows)},
        "speedup_full": speed_full,
        "speedup_minimal": speed_min,
        "kept_share": speed_min / speed_full if speed_full else None,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"minimal-{args.kernel}.json").write_text(json.dumps(res, indent=1) + "\n")
    line = (
        f"| {args.kernel} | {len(full)}: {', '.join(f'{k}={v}' for k, v in sorted(full.items()))}"
        f" | {len(minimal)}: {', '.join(f'{k}={v}' for k, v in sorted(minimal.items()))} | "
        f"{speed_full:.2f}x | {speed_min:.2f}x | {100 * res['kept_share']:.0f} % |"
    )
    table = args.out / "minimal.md"
    head = [
        "| kernel | full best (settings) | best.xml (minimal) | full speedup | minimal speedup "
        "| kept |",
        "|---|---|---|---|---|---|",
    ]
    old = table.read_text().splitlines()[2:] if table.exists() else []
    old = [x for x in old if not x.startswith(f"| {args.kernel} |")]
    table.write_text("\n".join(head + old + [line]) + "\n")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
