#!/usr/bin/env python3
"""adapt against tune on h5perf with chunked datasets and recurring phases, at a size where each
run's I/O dominates the noise (issue 22: adapt >= 70 % of tune's gain or says why).

The program: the corpus's h5perf (`h5perf-phdf5-chunked-i8`, built by corpus.build() from
bench/agreement/corpus-iterations.toml) with its size options raised (a bench-only variant:
`-e 32M` per process and dataset instead of 4M, so a 128 MiB shared file written and read back
8 times). Variants, each run right after a discarded identical warm-up run, in a shuffled order
per round, freed memory held (--hold-freed-memory):

  base        the runtime preloaded, capture on, no settings (the defaults)
  tuned       the control file of tune's study of the same command (--best)
  adapt       IOTUNE_MODE=adaptive (what `iotune adapt` runs)
  adapt-nocb  adapt with a control file `romio_cb_write=automatic` (ROMIO's default): the
              mode's other rules apply, SIO-7's `romio_cb_write=disable` does not (a parameter
              the control file sets is left to it)
  tuned-cb    tune's settings plus `romio_cb_write=disable` in the control file: SIO-7's cost
              or gain on every phase, not only the optimised ones

Time: the profile's io.time_s (the I/O time the agreement bench and tune compare). Raw JSON
after every run (--out).

Usage: flock /work/wt/measure.lock python bench/adapt_phases/adapt_h5perf.py --best BEST.xml
         --rounds 6 --hold-freed-memory --out bench/adapt_phases/adapt_h5perf-X.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from iotune import adapt as adaptmod
from iotune import controlfile, freedmem, launch, paths

BIN = Path.home() / ".cache/iotune/corpus/h5perf-phdf5-chunked-i8/pio_perf"
TIMEOUT = 300


def utc() -> str:
    return time.strftime("%H:%M:%S", time.gmtime())


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def argv_of(binary: Path, size: str, iters: int) -> list[str]:
    return [str(binary), "-A", "phdf5", "-C", "-c", "-e", size, "-x", "1M", "-X", "1M",
            "-B", "1M", "-d", "2", "-i", str(iters), "-p", "2", "-P", "2", "-D", "v"]  # fmt: skip


def run(argv: list[str], d: Path, config: Path | None, extra: dict) -> dict:
    for p in d.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    prof = d / "p.json"
    cmd = [*paths.find_build("mpich").launcher(2), *argv]
    env = launch.runtime_env(config, lib=paths.find_library("mpich"), command=cmd,
                             extra={"IOTUNE_PROFILE": str(prof), "HDF5_NOCLEANUP": "1",
                                    "IOTUNE_SESSION": f"agh-{time.time_ns():x}",
                                    **extra})  # fmt: skip
    for k in ("IOTUNE_MODE", "IOTUNE_TRACE", "IOTUNE_SYNC"):
        if k not in extra:
            env.pop(k, None)
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    wall = time.monotonic() - t0
    if r.returncode:
        raise RuntimeError(f"exit {r.returncode}: {r.stderr[-400:]}")
    p = json.loads(prof.read_text())
    out = {"io_s": float(p["io"]["time_s"]), "wall_s": round(wall, 3)}
    phases = (p.get("adaptive") or {}).get("phases") or []
    if phases:  # what the mode applied, and whether its guard reverted it (per run)
        out["said"] = adaptmod.applied_per_file(phases)
        out["reverted_at"] = [x["index"] for x in phases if (x.get("guard") or {}).get("reverted")]
        out["phase_s"] = [round(x["elapsed_s"], 4) for x in phases]
    return out


def ratio_stats(num: list[float], den: list[float]) -> dict:
    """Paired ratios den/num per round (speedup of num's variant over den's)."""
    rs = [b / a for a, b in zip(num, den, strict=True) if a and b]
    if not rs:
        return {}
    return {"median": round(statistics.median(rs), 3), "min": round(min(rs), 3),
            "max": round(max(rs), 3), "n": len(rs),
            "of_medians": round(statistics.median(den) / statistics.median(num), 3)}  # fmt: skip


def summarise(times: dict[str, list[float]]) -> dict:
    base = times.get("base") or []
    s: dict = {}
    for v, ts in times.items():
        if not ts:
            continue
        s[v] = {"median_s": round(statistics.median(ts), 4), "min_s": round(min(ts), 4),
                "max_s": round(max(ts), 4), "n": len(ts)}  # fmt: skip
        if v != "base" and base:
            n = min(len(ts), len(base))
            s[v]["speedup"] = ratio_stats(ts[:n], base[:n])
    tuned = s.get("tuned", {}).get("speedup", {}).get("median")
    for v in ("adapt", "adapt-nocb"):
        sp = s.get(v, {}).get("speedup", {}).get("median")
        if tuned and sp and tuned > 1:
            # the agreement bench's definition (agree_calc.adapt_share)
            s[v]["share_of_tuned_gain"] = round((sp - 1) / (tuned - 1), 3)
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--best", type=Path, required=True, help="tune's best.xml")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--size", default="32M")
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--variants", default="base,tuned,adapt,adapt-nocb,tuned-cb")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--binary", type=Path, default=BIN)
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/adapt_h5perf"))
    ap.add_argument("--hold-freed-memory", action="store_true")
    ap.add_argument("--budget-s", type=float, default=660, help="no new round after this")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    best = {s.name: str(s.value) for s in controlfile.parse_file(a.best).settings}
    a.scratch.mkdir(parents=True, exist_ok=True)
    configs = {
        "base": (None, {}),
        "tuned": (controlfile.write(a.scratch / "tuned.xml", best), {}),
        "adapt": (None, {"IOTUNE_MODE": "adaptive"}),
        "adapt-nocb": (
            controlfile.write(a.scratch / "nocb.xml", {"romio_cb_write": "automatic"}),
            {"IOTUNE_MODE": "adaptive"},
        ),  # fmt: skip
        "tuned-cb": (
            controlfile.write(a.scratch / "tuned-cb.xml", {**best, "romio_cb_write": "disable"}),
            {},
        ),  # fmt: skip
    }
    variants = a.variants.split(",")
    argv = argv_of(a.binary, a.size, a.iterations)
    rec: dict = {"meta": {"command": argv, "variants": variants, "best": best,
                          "rounds": a.rounds, "seed": a.seed, "host": platform.node(),
                          "cpus": os.cpu_count(), "start_utc": utc(), "uptime_start": uptime()},
                 "runs": [], "said": {}}  # fmt: skip
    times: dict[str, list[float]] = {v: [] for v in variants}
    rng = random.Random(a.seed)
    t_start = time.monotonic()
    with freedmem.maybe_hold(a.hold_freed_memory) as held:
        rec["meta"]["freed_memory"] = held
        for rnd in range(a.rounds):
            if time.monotonic() - t_start > a.budget_s:
                rec["meta"]["stopped"] = f"budget reached after {rnd} rounds"
                break
            order = list(variants)
            rng.shuffle(order)
            for v in order:
                d = a.scratch / v
                d.mkdir(exist_ok=True)
                cfg, extra = configs[v]
                run(argv, d, cfg, extra)  # warm-up, discarded
                os.sync()
                r = run(argv, d, cfg, extra)
                if "said" in r:
                    rec["said"][v] = r["said"]
                rec["runs"].append({"round": rnd, "variant": v, **r})
                times[v].append(r["io_s"])
                rec["summary"] = summarise(times)
                a.out.write_text(json.dumps(rec, indent=1) + "\n")
            print(f"round {rnd + 1}: " + ", ".join(f"{v} {times[v][-1]:.3f}" for v in variants),
                  flush=True)  # fmt: skip
    rec["meta"]["end_utc"] = time.strftime("%H:%M:%S", time.gmtime())
    rec["meta"]["uptime_end"] = subprocess.run(
        ["uptime"], capture_output=True, text=True
    ).stdout.strip()
    a.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps(rec["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
