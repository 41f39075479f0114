#!/usr/bin/env python3
"""Instructions per intercepted call, counted by valgrind's callgrind (repeatable, unlike time).

For each mode of bench/callcost/c/callcost (posix: pwrite+pread of 4 KiB; hdf5: small H5Dwrite
through
HDF5, MPI-IO and POSIX) and each variant (plain, preloaded with an empty control file, capture,
trace, and the adaptive mode: capture with IOTUNE_MODE=adaptive, which also follows each
MPI-IO call's offsets to learn its phase's access pattern), the program runs twice under
callgrind with N1 and N2 calls; the slope
(I(N2) - I(N1)) / (calls2 - calls1) is the user-space instructions per call, free of start-up
and shut-down costs. Kernel (system call) work is not counted: it is the same in every variant.

usage: bench/callcost/callcost.py [--out FILE.json] [--modes hdf5read] [--lib LIBIOTUNE.so]
                                  [--variants plain,capture,adaptive]
(takes a few minutes: valgrind is slow)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("IOTUNE_BUILD_DIR", REPO / "build"))
LIB = BUILD / "runtime" / "libiotune.so"
PROG = BUILD / "bench" / "c" / "callcost"
# mode: (N1, N2, calls per N)
MODES = {"posix": (2000, 6000, 2), "hdf5": (500, 1500, 1)}
# hdf5read: H5Dread of 32 KiB; hdf5read1m: of 1 MiB (the trace checks its memory's residency)
ALL_MODES = {**MODES, "hdf5read": (500, 1500, 1), "hdf5read1m": (200, 600, 1)}
VARIANTS = ("plain", "preload", "capture", "trace", "adaptive")
# --smoke (CI: does the bench run?): few calls, two variants; no number of it means anything
SMOKE_MODES = {"posix": (20, 60, 2)}
SMOKE_VARIANTS = ("plain", "preload")


def instructions(mode: str, n: int, variant: str, tmp: Path) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IOTUNE_", "LD_PRELOAD"))}
    if variant != "plain":
        env["LD_PRELOAD"] = str(LIB)
        env["IOTUNE_CONFIG"] = str(tmp / "empty.xml")
    if variant in ("capture", "trace", "adaptive"):
        env["IOTUNE_PROFILE"] = str(tmp / "profile.json")
    if variant == "adaptive":
        env["IOTUNE_MODE"] = "adaptive"
    if variant == "trace":
        env["IOTUNE_TRACE"] = "1"
    return callgrind_total([str(PROG), mode, str(n), str(tmp / "data")], env)


def callgrind_total(argv: list[str], env: dict, cwd: Path | None = None, timeout=1200) -> int:
    """The user-space instructions callgrind counts for one run of argv (exits on failure)."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv]
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or not found:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "bench" / "callcost" / "callcost.json"))
    ap.add_argument("--smoke", action="store_true", help="few calls, two variants (CI)")
    ap.add_argument(
        "--modes", help="comma-separated (default: posix,hdf5; also hdf5read, hdf5read1m)"
    )
    ap.add_argument("--lib", help="this libiotune.so instead of the build's (PROG stays)")
    ap.add_argument("--variants", help=f"comma-separated (default: {','.join(VARIANTS)})")
    args = ap.parse_args()
    modes, variants = (SMOKE_MODES, SMOKE_VARIANTS) if args.smoke else (MODES, VARIANTS)
    if args.modes:
        modes = {m: ALL_MODES[m] for m in args.modes.split(",")}
    if args.variants:
        variants = tuple(args.variants.split(","))
        if "plain" not in variants or not set(variants) <= set(VARIANTS):
            sys.exit(f"--variants: plain and any of {', '.join(VARIANTS[1:])}")
    if args.lib:
        global LIB
        LIB = Path(args.lib)
    per_call: dict[str, dict[str, float]] = {}
    raw: dict[str, dict[str, list[int]]] = {}
    with tempfile.TemporaryDirectory(prefix="iotune-callcost-") as tmp:
        tmpdir = Path(tmp)
        (tmpdir / "empty.xml").write_text("<Parameters/>\n")
        for mode, (n1, n2, k) in modes.items():
            per_call[mode], raw[mode] = {}, {}
            for variant in variants:
                i1 = instructions(mode, n1, variant, tmpdir)
                i2 = instructions(mode, n2, variant, tmpdir)
                raw[mode][variant] = [i1, i2]
                per_call[mode][variant] = (i2 - i1) / ((n2 - n1) * k)
                print(f"{mode} {variant}: {per_call[mode][variant]:.1f} instructions per call",
                      file=sys.stderr)  # fmt: skip
    record = {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores "
        f"{platform.platform()}",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join(sys.argv),
        "modes": {m: {"n1": a, "n2": b, "calls_per_n": k} for m, (a, b, k) in modes.items()},
        "instructions_total": raw,
        "instructions_per_call": per_call,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print("| call | plain | preloaded, empty control file | capture | trace | adaptive |")
    print("|---|---|---|---|---|---|")
    for mode in modes:
        c = per_call[mode]
        extra = {v: f"+{c[v] - c['plain']:.0f}" if v in c else "-" for v in VARIANTS}
        print(f"| {mode} | {c['plain']:.0f} | {extra['preload']} | {extra['capture']} "
              f"| {extra['trace']} | {extra['adaptive']} |")  # fmt: skip
    print(f"\n(user-space instructions per call; raw numbers: {args.out})")


if __name__ == "__main__":
    main()
