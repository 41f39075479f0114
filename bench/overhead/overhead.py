#!/usr/bin/env python3
"""Overhead of the preloaded runtime, as ratios measured in one run.

Each case is a program run repeated under several variants:
  plain     not preloaded
  preload   libiotune.so preloaded with an empty control file (injection only, nothing to do)
  capture   preloaded with IOTUNE_PROFILE (counters per file and layer)
  trace     capture plus IOTUNE_TRACE=1
Variants run interleaved in a shuffled order each round, each measured run right after a
discarded identical warm-up run (LAB-NOTES.md: the only way to get believable numbers on these
machines). The time compared is the program's own timing of its I/O part (callcost's loop, or a
kernel's open+io+close time of a phase). bench/callcost/callcost.py gives the same per-call costs as
instruction counts, which the noise cannot touch.

usage: bench/overhead/overhead.py [--rounds N] [--out FILE.json] [--cases NAME,...]
Writes the raw numbers as JSON and prints a Markdown table for bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

BUILD = Path(os.environ.get("IOTUNE_BUILD_DIR", REPO / "build"))
LIB = BUILD / "runtime" / "libiotune.so"
KERNELS = BUILD / "kernels"

# name: (ranks, argv, phase to time or None for callcost's JSON line, intercepted calls per
# rank in the timed part). callcost keeps the data in the page cache, so what is timed is the
# calls themselves; the kernels show the overhead on real I/O phases.
CASES = {
    # many small independent H5Dwrite calls: 3 intercepted calls each (HDF5, MPI-IO, POSIX)
    "hdf5-small-writes": (1, ["callcost", "hdf5", "20000", "cc.h5"], None, 20000),
    # 100,000 POSIX writes of 4 KiB (and as many reads)
    "posix-4k-calls": (1, ["callcost", "posix", "100000", "cc.dat"], None, 200000),
    # VPIC-IO: one large collective write per variable
    "vpicio": (2, ["vpicio", "--particles", "4194304", "--cleanup"], "write", 8),
}
VARIANTS = ("plain", "preload", "capture", "trace")


# profile counters that are calls (the rest are bytes, times, offsets and histograms)
CALL_COUNTERS = {
    "hdf5": ("file_creates", "file_opens", "file_closes", "dataset_creates", "dataset_opens",
             "writes", "reads"),
    "mpiio": ("opens", "closes", "syncs", "set_views", "independent_writes",
              "collective_writes", "independent_reads", "collective_reads"),
    "posix": ("opens", "closes", "reads", "writes", "seeks", "fsyncs"),
}  # fmt: skip


def calls_per_rank(profile: Path) -> float:
    """Intercepted calls per rank in a whole run, from its capture profile."""
    p = json.loads(profile.read_text())
    total = sum(p["layers"][layer][k] for layer, keys in CALL_COUNTERS.items() for k in keys)
    return total / p["ranks"]


def run_once(case: str, variant: str, workdir: Path, empty_config: Path) -> float:
    ranks, argv, phase, _ = CASES[case]
    env = dict(os.environ)
    for key in ("LD_PRELOAD", "IOTUNE_CONFIG", "IOTUNE_PROFILE", "IOTUNE_TRACE"):
        env.pop(key, None)
    if variant != "plain":
        env["LD_PRELOAD"] = str(LIB)
        env["IOTUNE_CONFIG"] = str(empty_config)
    if variant in ("capture", "trace"):
        env["IOTUNE_PROFILE"] = str(workdir / "profile.json")
    if variant == "trace":
        env["IOTUNE_TRACE"] = "1"
    prog = BUILD / "bench" / "c" / argv[0] if phase is None else KERNELS / argv[0]
    cmd = [*mpitools.mpiexec(ranks), str(prog), *argv[1:]]
    out = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    for line in out.stdout.splitlines():
        if phase is None and line.startswith("{"):
            return float(json.loads(line)["seconds"])
        if line.startswith("IOTUNE_RESULT "):
            result = json.loads(line[len("IOTUNE_RESULT ") :])
            if result["phase"] == phase:
                return float(result["total_s"])
    sys.exit(f"no {phase} result from {' '.join(cmd)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--out", default=str(REPO / "bench" / "overhead" / "overhead.json"))
    args = ap.parse_args()
    cases = args.cases.split(",")
    rng = random.Random(20261122)
    times: dict[str, dict[str, list[float]]] = {c: {v: [] for v in VARIANTS} for c in cases}
    calls: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="iotune-bench-") as tmp:
        workdir = Path(tmp)
        empty = workdir / "empty.xml"
        empty.write_text("<Parameters/>\n")
        for r in range(args.rounds):
            for case in cases:
                order = list(VARIANTS)
                rng.shuffle(order)
                for variant in order:
                    run_once(case, variant, workdir, empty)  # warm-up, discarded
                    times[case][variant].append(run_once(case, variant, workdir, empty))
                    if variant == "capture":
                        calls[case] = calls_per_rank(workdir / "profile.json")
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    record = {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores "
        f"{platform.platform()}",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join([sys.argv[0], *sys.argv[1:]]),
        "rounds": args.rounds,
        "cases": {
            c: {
                "ranks": CASES[c][0],
                "argv": CASES[c][1],
                "phase": CASES[c][2],
                "calls_per_rank": CASES[c][3],
            }
            for c in cases
        },  # fmt: skip
        "seconds": times,
        "intercepted_calls_per_rank": calls,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print("| case | variant | median s | min s | max s | ratio to plain: median of rounds "
          "(min..max) | extra per call (median) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for case in cases:
        plain = times[case]["plain"]
        base = statistics.median(plain)
        for v in VARIANTS:
            t = times[case][v]
            med = statistics.median(t)
            # each round's variant against the same round's plain run: pairs share the
            # machine's state of the moment, so their ratio is steadier than the medians'
            ratios = [a / b for a, b in zip(t, plain, strict=True)]
            per_call = (med - base) / CASES[case][3] * 1e9
            print(f"| {case} | {v} | {med:.4f} | {min(t):.4f} | {max(t):.4f} | "
                  f"{statistics.median(ratios):.3f} ({min(ratios):.2f}..{max(ratios):.2f}) | "
                  f"{per_call:+.0f} ns |")  # fmt: skip
    _print_bound(cases, times, calls)
    print(f"\nraw numbers: {args.out}")


def _extra_per_call(times, case: str, variant: str) -> float:
    """Median over rounds of (variant - plain) of the same round, per call, in ns."""
    pairs = zip(times[case][variant], times[case]["plain"], strict=True)
    return statistics.median(a - b for a, b in pairs) / CASES[case][3] * 1e9


def _print_bound(cases, times, calls) -> None:
    """A run with few, large calls (a kernel) hides the runtime's cost under the noise: bound
    it instead by its calls times the dearest per-call cost measured on the small-call cases
    (those are all intercepted work and little else). Each variant does all the work of the
    ones before it, so its cost is at least theirs."""
    small = [c for c in cases if CASES[c][2] is None]
    big = [c for c in cases if CASES[c][2] is not None]
    if not small or not big:
        return
    print("\n| case | intercepted calls per rank (whole run) | variant | dearest cost per call "
          "(small-call cases) | bound on the extra time | share of the timed phase |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for case in big:
        base = statistics.median(times[case]["plain"])
        ns = 0.0
        for v in VARIANTS[1:]:
            ns = max([ns] + [_extra_per_call(times, c, v) for c in small])
            bound = ns * calls[case] * 1e-9
            print(f"| {case} | {calls[case]:.0f} | {v} | {ns:.0f} ns | {bound * 1e6:.0f} us | "
                  f"{100 * bound / base:.3f} % |")  # fmt: skip


if __name__ == "__main__":
    main()
