#!/usr/bin/env python3
"""Does `iotune advise`'s control file make the kernels faster? Advice vs defaults, measured.

For each case the kernel is first profiled once with its trace (`iotune advise -- ...` at the
same size), the advice's control file is kept, and then the kernel runs with the runtime
preloaded, alternately without a control file (defaults) and with the advice, in a shuffled
order per round, each measured run right after a discarded identical warm-up run (LAB-NOTES'
noise section). Write cases measure the kernel's write phase; read cases write the file once
per round with defaults, drop the page cache (root) and measure a --read-only run.

The kernel's own report (IOTUNE_RESULT, open + io + close between barriers) is the measure.
Per case: median, min and max MB/s of each, the ratio of medians, the median of the paired
per-round ratios, and a paired sign-flip permutation test on the log ratios (exact for up to 16
rounds), two-sided.

Raw rows go to bench/advise_gain/advise_gain.csv (appended as measured), the machine, commands and
the
advice to bench/advise_gain/advise_gain-meta.json, the summary to bench/advise_gain/advise_gain.txt.

Usage: nice -n 10 .venv/bin/python bench/advise_gain/advise_gain.py [--rounds 8] [--cases
vorpal-write,...]
       [--args "vorpal-write=--block 200,200,120"] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iotune import paths, trial

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

# case: (kernel, arguments, phase measured, the knob the lab notes' table names)
CASES = {
    "vorpal-write": ("vorpalio", ["--block", "160,160,100"], "write", "cb_buffer_size"),
    "vorpal-read": ("vorpalio", ["--block", "160,160,100"], "read", "romio_cb_read"),
    "gcrm-write": ("gcrmio", ["--cells", "65536"], "write", "fill_time"),
    "gcrm-read": ("gcrmio", ["--cells", "65536"], "read", "chunk_cache_bytes"),
}
FIELDS = ["case", "round", "order", "config", "mb_s", "total_s", "bytes", "status"]
TIMEOUT = 300


def mpiexec(kernel: Path, args: list[str], cwd: Path, config: Path | None) -> dict | None:
    env = dict(os.environ, LD_PRELOAD=str(paths.find_library()))
    for key in ("IOTUNE_CONFIG", "IOTUNE_PROFILE", "IOTUNE_TRACE", "IOTUNE_VERBOSE"):
        env.pop(key, None)
    if config is not None:
        env["IOTUNE_CONFIG"] = str(config)
    cmd = [*mpitools.mpiexec(2), str(kernel), *args]
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        print(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}", file=sys.stderr)
        return None
    results = [json.loads(ln.split(" ", 1)[1]) for ln in r.stdout.splitlines()
               if ln.startswith("IOTUNE_RESULT ")]  # fmt: skip
    return results[-1] if results else None


def advice_for(case: str, kernel: Path, args: list[str], out: Path) -> tuple[Path, dict]:
    """Profiles the kernel (write and read) with its trace and keeps advise's control file."""
    work = Path(tempfile.mkdtemp(prefix=f"advise-{case}-", dir=out))
    control = out / f"advise_gain-{case}.xml"
    cmd = [sys.executable, "-m", "iotune", "advise", "--json", "-o", str(control),
           "--profile-out", str(work / "profile.json"), "--", *mpitools.mpiexec(2),
           str(kernel), *args, "--read"]  # fmt: skip
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=TIMEOUT, check=True)
    advice = json.loads(r.stdout[r.stdout.index("{\n") :])
    shutil.rmtree(work)
    return control, advice


def sign_flip_p(logs: list[float], samples: int = 20000, seed: int = 1) -> float:
    """Two-sided p-value of a paired sign-flip permutation test on the mean of logs."""
    n = len(logs)
    observed = abs(sum(logs))
    if n <= 16:
        flips = itertools.product((1, -1), repeat=n)
        count = total = 0
        for signs in flips:
            total += 1
            count += abs(sum(s * x for s, x in zip(signs, logs, strict=True))) >= observed - 1e-12
        return count / total
    rng = random.Random(seed)
    count = sum(
        abs(sum(x if rng.random() < 0.5 else -x for x in logs)) >= observed - 1e-12
        for _ in range(samples)
    )
    return (count + 1) / (samples + 1)


def run_case(case: str, rounds: int, out: Path, writer, meta: dict) -> dict:
    name, args, phase, knob = CASES[case]
    kernel = paths.find_kernel(name)
    control, advice = advice_for(case, kernel, args, out)
    settings = {s["name"]: s["value"] for s in advice["control_file"]}
    meta["cases"][case] = {"kernel": name, "args": args, "phase": phase, "knob": knob,
                           "control_file": settings,
                           "findings": [f["code"] for f in advice["findings"]]}  # fmt: skip
    print(f"{case}: advice {settings}", flush=True)
    if not settings:
        return {"case": case, "settings": settings, "note": "no settings advised"}
    work = Path(tempfile.mkdtemp(prefix=f"advise-{case}-", dir=out))
    measured: dict[str, list[float]] = {"default": [], "advice": []}
    pairs: list[tuple[float, float]] = []
    try:
        for rnd in range(rounds):
            order = ["default", "advice"]
            random.shuffle(order)
            this_round = {}
            for position, config_name in enumerate(order):
                config = control if config_name == "advice" else None
                if phase == "write":
                    mpiexec(kernel, args, work, config)  # warm-up, discarded
                    res = mpiexec(kernel, args, work, config)
                else:
                    mpiexec(kernel, args, work, None)  # the file, written with defaults
                    mpiexec(kernel, [*args, "--read-only"], work, config)  # warm-up
                    trial.drop_caches()
                    res = mpiexec(kernel, [*args, "--read-only"], work, config)
                row = {"case": case, "round": rnd, "order": position, "config": config_name,
                       "mb_s": res["mb_s"] if res else "", "total_s": res["total_s"] if res else "",
                       "bytes": res["bytes"] if res else "",
                       "status": "ok" if res else "failed"}  # fmt: skip
                writer.writerow(row)
                if res:
                    measured[config_name].append(res["mb_s"])
                    this_round[config_name] = res["mb_s"]
            if len(this_round) == 2:
                pairs.append((this_round["default"], this_round["advice"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    logs = [math.log(a / d) for d, a in pairs]
    summary = {"case": case, "settings": settings, "rounds": len(pairs)}
    for k, xs in measured.items():
        if xs:
            summary[k] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}
    if pairs:
        summary["ratio_of_medians"] = summary["advice"]["median"] / summary["default"]["median"]
        summary["median_paired_ratio"] = math.exp(statistics.median(logs))
        summary["p_value"] = sign_flip_p(logs)
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument(
        "--args",
        action="append",
        default=[],
        metavar="CASE=ARGS",
        help='other kernel arguments for a case, e.g. "vorpal-write=--block 200,200,120"',
    )
    a = ap.parse_args()
    a.out = a.out.resolve()  # the advise run works in a directory of its own
    for item in a.args:
        case, _, args = item.partition("=")
        name, _, phase, knob = CASES[case]
        CASES[case] = (name, args.split(), phase, knob)
    a.out.mkdir(parents=True, exist_ok=True)
    meta = {"machine": platform.platform(), "host": platform.node(), "cpus": os.cpu_count(),
            "command": " ".join(sys.argv), "rounds": a.rounds,
            "start": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cases": {},
            "drop_caches": trial.drop_caches(),
            "loadavg_start": os.getloadavg()}  # fmt: skip
    results = []
    with open(a.out / "advise_gain.csv", "a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, FIELDS)
        if f.tell() == 0:
            writer.writeheader()
        for case in a.cases.split(","):
            results.append(run_case(case, a.rounds, a.out, writer, meta))
            f.flush()
    meta["end"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    meta["loadavg_end"] = os.getloadavg()  # a shared machine: how busy it was
    meta["results"] = results
    (a.out / "advise_gain-meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    lines = [f"advise_gain: {meta['start']} .. {meta['end']}, {meta['host']}, "
             f"{a.rounds} rounds, command: {meta['command']}",
             "case          knob advised                      default MB/s (min-max)    "
             "advice MB/s (min-max)     ratio  paired  p"]  # fmt: skip
    for r in results:
        if "default" not in r:
            lines.append(f"{r['case']:<13} {r.get('note', 'no data')}")
            continue
        d, v = r["default"], r["advice"]
        knobs = ",".join(f"{k}={x}" for k, x in r["settings"].items())
        lines.append(
            f"{r['case']:<13} {knobs[:33]:<33} {d['median']:8.0f} ({d['min']:.0f}-{d['max']:.0f})"
            f"   {v['median']:8.0f} ({v['min']:.0f}-{v['max']:.0f})   "
            f"{r['ratio_of_medians']:.2f}x  {r['median_paired_ratio']:.2f}x  {r['p_value']:.3f}"
        )
    text = "\n".join(lines) + "\n"
    (a.out / "advise_gain.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
