#!/usr/bin/env python3
"""Measure a real tuning landscape once: every configuration of a grid space, for two kernels,
with repetitions, run through iotune's own trial machinery (mpiexec -n 2, runtime preloaded,
scratch directory per run, removed afterwards).

Order: in each round every (kernel, configuration) pair runs once, in a shuffled order, so that
slow phases of the machine spread over all configurations instead of biasing a few.

Output (appended row by row, so an interrupted run keeps what it measured):
  bench/measure_landscape/landscape.csv        kernel, config, settings, round, status, value_s,
  wall_s, ...
  bench/measure_landscape/landscape-meta.json  machine, command, kernels' arguments, start and end
  time

--sync: every run flushes its files to the device before close (IOTUNE_SYNC=1, `iotune tune
--sync`), so a run's time is not the page cache's mood: GCRM-IO's runs varied by a median CV of
0.5 per configuration without it (bench/README.md, "Knowledge base").

--drop-caches: sync and empty the page cache right before each run (root). On this VM a run
that follows a dropped cache writes at one steady speed; without it the same run lands in a
fast or a 3-10x slower mode depending on what the machine's memory did before (bench/README.md,
"The page cache's two modes"). --hold-freed-memory (root) removes the cause of those modes on
such a VM: freed memory stays in the VM while measuring (bench/freed_memory/freed_memory.py).

Usage: nice -n 10 .venv/bin/python bench/measure_landscape/measure_landscape.py [--rounds 4]
           [--out bench/measure_landscape] [--kernels gcrmio] [--sync] [--drop-caches] [--name NAME]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iotune import paths, space, trial

HERE = Path(__file__).resolve().parent
SMOKE_CONFIGS = 3  # --smoke's configurations
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

sys.path.insert(0, str(HERE.parent / "freed_memory"))
import freed_memory  # noqa: E402

KERNELS = {
    # kernel: (arguments, grid space). Sizes chosen for ~0.2-0.6 s runs on the 2-core VM.
    "gcrmio": (["--cells", "65536"], HERE / "spaces" / "grid-gcrmio.toml"),
    "vorpalio": (["--block", "160,160,100"], HERE / "spaces" / "grid-vorpalio.toml"),
}
FIELDS = [
    "kernel",
    "config",
    "settings",
    "round",
    "order",
    "status",
    "value_s",
    "wall_s",
    "source",
    "bytes",
]


def grid(sp: space.Space) -> list[dict[str, str]]:
    """The control-file settings of every allowed configuration of a space."""
    out = []
    for values in itertools.product(*(d.values for d in sp.dims)):
        config = dict(zip(sp.names(), values, strict=True))
        for t in sp.ties:
            config[t.name] = config[t.to]
        if sp.forbidden(config) is None:
            out.append(sp.settings_of(config))
    return out


def machine() -> dict:
    def run(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            return ""

    return {
        "host": platform.node(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "mpi": run(["mpichversion"]).splitlines()[:1],
        "fs": run(["df", "-T", tempfile.gettempdir()]).splitlines()[-1:],
        "git": run(["git", "-C", str(HERE.parent), "rev-parse", "HEAD"]),
    }


def measure(jobs: list, opts: dict, rounds: int, first_round: int, seed: int, csv_path: Path):
    """Every (kernel, configuration) once per round, in a shuffled order; rows appended as
    they come."""
    rng = random.Random(seed)
    total = len(jobs) * rounds
    done = 0
    t0 = time.monotonic()
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for r in range(rounds):
            order = jobs[:]
            rng.shuffle(order)
            for i, (k, settings) in enumerate(order):
                o = trial.run_trial(settings, opts[k])
                w.writerow(
                    {
                        "kernel": k,
                        "config": space.config_key(settings),
                        "settings": json.dumps(settings, sort_keys=True),
                        "round": r + first_round,
                        "order": i,
                        "status": o.status,
                        "value_s": "" if o.value is None else f"{o.value:.6f}",
                        "wall_s": f"{o.wall_s:.4f}",
                        "source": o.source or "",
                        "bytes": o.metrics.get("kernel_bytes", ""),
                    }
                )
                f.flush()
                done += 1
                if done % 50 == 0:
                    el = time.monotonic() - t0
                    left = el / done * (total - done)
                    print(f"{done}/{total} runs, {el:.0f} s, ~{left:.0f} s left", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--first-round",
        type=int,
        default=0,
        help="number of the first round (to add rounds to an earlier measurement)",
    )
    ap.add_argument("--name", default="landscape", help="output file names (NAME.csv ...)")
    ap.add_argument("--sync", action="store_true", help="flush files before close (IOTUNE_SYNC)")
    ap.add_argument(
        "--drop-caches",
        action="store_true",
        help="sync and drop the page cache before each run (root; see the docstring)",
    )
    ap.add_argument(
        "--hold-freed-memory",
        action="store_true",
        help="keep freed memory in the VM while measuring (root; bench/freed_memory/)",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="does it run? (CI): GCRM-IO at a tiny size, 3 configurations, one round",
    )
    args = ap.parse_args()
    if args.smoke:
        KERNELS["gcrmio"] = (["--cells", "2048"], KERNELS["gcrmio"][1])
        args.kernels, args.rounds = "gcrmio", 1
    if args.drop_caches and not trial.drop_caches():
        ap.error("--drop-caches: /proc/sys/vm/drop_caches is not writable here (root only)")
    args.out.mkdir(parents=True, exist_ok=True)
    kernels = args.kernels.split(",")
    jobs = []
    for k in kernels:
        kargs, space_file = KERNELS[k]
        for settings in grid(space.load(space_file)):
            jobs.append((k, settings))
    if args.smoke:
        jobs = jobs[:SMOKE_CONFIGS]
    meta = {
        "command": " ".join([sys.executable, *sys.argv]),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        "launch": "mpiexec -n 2 (of the runtime's MPI), libiotune.so preloaded, "
        "objective = kernel total_s"
        + (", IOTUNE_SYNC=1" if args.sync else "")
        + (", page cache dropped before each run" if args.drop_caches else ""),
        "load_before": os.getloadavg(),
        "kernels": {
            k: {"args": KERNELS[k][0], "space": str(KERNELS[k][1].relative_to(HERE))}
            for k in kernels
        },
        "configurations": len(jobs),
        "rounds": args.rounds,
    }
    csv_path = args.out / f"{args.name}.csv"
    meta_path = args.out / f"{args.name}-meta.json"
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    work = Path(tempfile.mkdtemp(prefix="iotune-landscape-"))
    opts = {
        k: trial.TrialOptions(
            [*mpitools.mpiexec(2), str(paths.find_kernel(k)), *KERNELS[k][0]],
            work,
            objective="kernel",
            timeout=120,
            sync=args.sync,
            drop_caches=args.drop_caches,
        )
        for k in kernels
    }
    t0 = time.monotonic()
    with freed_memory.maybe_hold(args.hold_freed_memory) as held:
        meta["freed_memory"] = held
        measure(jobs, opts, args.rounds, args.first_round, args.seed, csv_path)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    meta["elapsed_s"] = round(time.monotonic() - t0, 1)
    meta["load_after"] = os.getloadavg()
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    os.rmdir(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
