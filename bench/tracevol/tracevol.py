#!/usr/bin/env python3
"""Trace volume and trace cost per call: this runtime against a baseline build of it.

Sizes: each case runs once per runtime with IOTUNE_TRACE=all; recorded are the bytes of the
`<profile>.trace` directory, the runs (schema 3) or events (schema 2) it holds, the calls it
counts, and the program's own loop time (noisy; for orientation only). Cases: the known call
sequences of tests/c/trace_probe (100,000 small H5Dwrite through HDF5, MPI-IO and POSIX,
to one place and to successive places; 100,000 pwrite in sequence; 100,000 pwrite of random
sizes at random offsets; 2 x 50,000 pwrite alternating between two files) and the iorio
kernel (2 ranks, 4 KiB HDF5 transfers in a seeded random order, written and read back).

Cost: user-space instructions per operation (one H5Dwrite with its inner calls, one pwrite),
counted by valgrind's callgrind as the slope between two runs with N1 and N2 operations
(bench/callcost/callcost.py's method). The slope includes the trace's writing at the end (it grows
with
the calls), so it is the whole cost of a call. How many runs a regular stream breaks into
depends on the timing of the calls, and valgrind's is slow and uneven: each count is the
median of --repeat runs.

usage: bench/tracevol/tracevol.py --baseline LIBIOTUNE.so [--out FILE.json] [--no-cost] [--repeat 3]
                         [--no-sizes] [--cost-modes h5,seq,random]
  (the baseline: the runtime built from another commit, e.g. main, in a separate build tree)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench" / "callcost"))
from callcost import callgrind_total  # noqa: E402

from iotune import trace as iotrace  # noqa: E402

BUILD = Path(os.environ.get("IOTUNE_BUILD_DIR", REPO / "build"))
LIB = BUILD / "runtime" / "libiotune.so"
PROBE = BUILD / "tests" / "c" / "trace_probe"
IORIO = BUILD / "kernels" / "iorio"
DXT_MEASURED = REPO / "bench" / "dxt_size" / "dxt_size.json"  # bench/dxt_size/dxt_size.py's record

# name: (argv, ranks)
CASES = {
    "h5same": ([PROBE, "h5same", "d", "100000"], 1),
    "h5": ([PROBE, "h5", "d", "100000"], 1),
    "seq": ([PROBE, "seq", "d", "100000"], 1),
    "random": ([PROBE, "random", "d", "100000"], 1),
    "twofiles": ([PROBE, "twofiles", "d", "50000"], 1),
    "iorio": (
        [
            IORIO,
            "--api",
            "hdf5",
            "--transfer",
            "4K",
            "--block",
            "4M",
            "--segments",
            "4",
            "--order",
            "random",
            "--read",
            "--cleanup",
        ],
        2,
    ),  # fmt: skip
}
# mode: (N1, N2): N H5Dwrite (each three calls at IOTUNE_TRACE=all) or N pwrite
COST_MODES = {"h5": (500, 1500), "seq": (2000, 6000), "random": (2000, 6000)}


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("IOTUNE_", "LD_PRELOAD"))}


def trace_size(lib: Path, case: str, tmp: Path) -> dict[str, object]:
    argv, ranks = CASES[case]
    work = tmp / f"{case}-{lib.parent.parent.name}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    env = clean_env()
    env.update(IOTUNE_PROFILE=str(work / "p.json"), IOTUNE_TRACE="all",
               IOTUNE_CONFIG=str(tmp / "empty.xml"))  # fmt: skip
    cmd = [str(a) for a in argv]
    if ranks > 1:
        cmd = ["timeout", "300", *mpitools.mpiexec(ranks),
               *mpitools.env_flags("LD_PRELOAD", str(lib)), *cmd]  # fmt: skip
    else:
        env["LD_PRELOAD"] = str(lib)
    out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    tdir = work / "p.json.trace"
    files = sorted(tdir.iterdir())
    traces = iotrace.load(work / "p.json")
    first = re.search(r'"seconds": ([0-9.]+)', out.stdout)
    record = {
        "bytes": sum(f.stat().st_size for f in files),
        "dxt_estimate": dxt_estimate(traces) if traces[0]["version"] == 2 else None,
        "files": [f.name for f in files],
        "records": sum(len(t["runs"]) for t in traces),  # schema 2: its events
        "events": sum(len(t["events"]) for t in traces),
        "calls": sum(e[1] for t in traces for e in t["events"]),
        "version": traces[0]["version"],
        "loop_s": float(first.group(1)) if first else None,
    }
    shutil.rmtree(work, ignore_errors=True)
    return record


def dxt_measured() -> dict[str, int]:
    """Median bytes of the DXT logs Darshan's default build wrote for the same cases
    (bench/dxt_size/dxt_size.py), or {} when that record is absent."""
    try:
        summary = json.loads(DXT_MEASURED.read_text())["summary"]
    except (OSError, ValueError, KeyError):
        return {}
    return {case: s["default"]["median_bytes"] for case, s in summary.items() if "default" in s}


def dxt_estimate(traces: list[dict[str, object]]) -> int:
    """Bytes a Darshan DXT log would give the same POSIX and MPI-IO transfers: DXT keeps one
    32-byte segment (offset, length, start, end) per call, by file and layer, and Darshan's log
    is zlib-compressed. Built from an exact (schema 2, baseline) trace. An estimate only: the
    sizes bench/dxt_size/dxt_size.py measured with a real Darshan build are in dxt_measured()."""
    segments: dict[tuple[str, str], list[bytes]] = {}
    for t in traces:
        offsets: dict[tuple[str, str], int] = {}
        sigs = t["signatures"]
        for sig, count, start, busy, span in t["events"]:
            s = sigs[sig]
            if s["layer"] not in ("posix", "mpiio") or s["step"] is None:
                continue
            key = (s["file"], s["layer"])
            for k in range(count):
                offsets[key] = offsets.get(key, 0) + s["step"]
                if not s["size"] or ("read" not in s["func"] and "write" not in s["func"]):
                    continue
                t0 = start + k * (span - busy / count) / max(1, count - 1)
                seg = struct.pack("<qqdd", offsets[key], s["size"], t0, t0 + busy / count)
                segments.setdefault(key, []).append(seg)
    return len(zlib.compress(b"".join(b"".join(v) for v in segments.values()), 6))


def instructions(lib: Path | None, mode: str, n: int, level: str, tmp: Path) -> int:
    env = clean_env()
    if lib:
        env.update(LD_PRELOAD=str(lib), IOTUNE_CONFIG=str(tmp / "empty.xml"),
                   IOTUNE_PROFILE=str(tmp / "cost.json"), IOTUNE_TRACE=level)  # fmt: skip
    return callgrind_total([str(PROBE), mode, str(tmp / "c"), str(n)], env, tmp, timeout=1800)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="libiotune.so of the version to compare")
    ap.add_argument("--baseline-name", default="baseline", help="what the baseline is")
    ap.add_argument("--out", default=str(REPO / "bench" / "tracevol" / "tracevol.json"))
    ap.add_argument("--no-cost", action="store_true", help="sizes only (no callgrind)")
    ap.add_argument("--repeat", type=int, default=3, help="callgrind runs per count (median)")
    ap.add_argument("--no-sizes", action="store_true", help="cost only (no trace sizes)")
    ap.add_argument("--cost-modes", default=",".join(COST_MODES),
                    help="comma-separated cost modes (default: all)")  # fmt: skip
    args = ap.parse_args()
    modes = {m: COST_MODES[m] for m in args.cost_modes.split(",") if m}
    libs = {"baseline": Path(args.baseline).resolve(), "this": LIB}
    sizes: dict[str, dict[str, object]] = {}
    cost: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="iotune-tracevol-") as tmpname:
        tmp = Path(tmpname)
        (tmp / "empty.xml").write_text("<Parameters/>\n")
        for case in () if args.no_sizes else CASES:
            sizes[case] = {v: trace_size(lib, case, tmp) for v, lib in libs.items()}
            print(f"{case}: {sizes[case]}", file=sys.stderr)
        for mode, (n1, n2) in ({} if args.no_cost else modes).items():
            cost[mode] = {}
            for variant, lib in (("plain", None), *libs.items()):
                for level in ("1", "all") if lib else ("",):
                    raw = [[instructions(lib, mode, n, level, tmp) for _ in range(args.repeat)]
                           for n in (n1, n2)]  # fmt: skip
                    med = [statistics.median(r) for r in raw]
                    per_call = (med[1] - med[0]) / (n2 - n1)
                    cost[mode][f"{variant}/{level}" if lib else variant] = {
                        "instructions": raw, "per_call": per_call}  # fmt: skip
                    print(f"{mode} {variant} {level}: {per_call:.0f} per call", file=sys.stderr)
    record = {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores "
        f"{platform.platform()}",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join(sys.argv),
        "baseline": args.baseline_name,
        "cases": {
            c: {
                "argv": [Path(str(a)).name if i == 0 else str(a) for i, a in enumerate(argv)],
                "ranks": r,
            }
            for c, (argv, r) in CASES.items()
        },  # fmt: skip
        "dxt_measured_bytes": dxt_measured(),
        "sizes": sizes,
        "cost_modes": {m: {"n1": a, "n2": b} for m, (a, b) in COST_MODES.items()},
        "cost": cost,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print("| case | calls | baseline: events, bytes | this: runs, bytes | smaller | DXT est. |")
    print("|---|---|---|---|---|---|")
    for case, s in sizes.items():
        b, t = s["baseline"], s["this"]
        dxt = b["dxt_estimate"]  # None unless the baseline writes trace schema 2
        print(f"| {case} | {t['calls']:,} | {b['records']:,}, {b['bytes']:,} | "
              f"{t['records']:,}, {t['bytes']:,} | {b['bytes'] / t['bytes']:.0f}x | "
              f"{'n/a' if dxt is None else f'{dxt:,}'} |")  # fmt: skip
    if cost:
        print("\n| per call | plain | baseline trace=1 | this trace=1 | baseline all | this all |")
        print("|---|---|---|---|---|---|")
        for mode, c in cost.items():
            p = c["plain"]["per_call"]
            cells = [f"+{c[k]['per_call'] - p:.0f}" for k in
                     ("baseline/1", "this/1", "baseline/all", "this/all")]  # fmt: skip
            print(f"| {mode} | {p:.0f} | " + " | ".join(cells) + " |")
    print(f"\n(raw numbers: {args.out})")


if __name__ == "__main__":
    main()
