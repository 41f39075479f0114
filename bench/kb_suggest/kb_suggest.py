#!/usr/bin/env python3
"""Are remembered settings worth having at another size and rank count?

1. A real study (`iotune tune`) of a kernel at one size on 2 ranks, filed in a fresh knowledge
   base (the study's own last step).
2. `iotune kb suggest -- mpiexec -n 1 KERNEL <another size>`: one profiled run, the nearest
   stored motif's settings written as a control file.
3. The suggestion vs the defaults on that new run (1 rank, other size): interleaved rounds in a
   fresh random order, a discarded warm-up run right before each measured run, the objective
   being the profile's I/O time (what `iotune tune` optimises). Medians, min, max, the ratio of
   medians and a one-sided paired permutation test are reported; every value is kept.

--sync: the study and the comparison flush the files to the device before close (`iotune tune
--sync`). Without it, writes land in the page cache, whose speed on a loaded VM swings 2-8x
from run to run (LAB-NOTES, noise): a setting that halves the bytes written (fill_time=never)
then gains ~1.2x at best, which 12 rounds at a CV of 30 % cannot resolve.

Usage: .venv/bin/python bench/kb_suggest/kb_suggest.py [--kernel gcrmio] [--rounds 12]
       .venv/bin/python bench/kb_suggest/kb_suggest.py --study-ranks 1 --new-ranks 2 \
           --study-args "--cells 65536" --new-args "--cells 49152" --out
           bench/kb_suggest/kb_suggest.json
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
import tempfile
import time
from pathlib import Path

from iotune import controlfile, paths, trial
from iotune.search import noise

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

STUDY_ARGS = {"gcrmio": ["--cells", "65536"], "vorpalio": ["--block", "160,160,100"]}
NEW_ARGS = {"gcrmio": ["--cells", "131072"], "vorpalio": ["--block", "120,120,80"]}


def iotune(*args: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "iotune", *args]
    print("$", " ".join(cmd[2:]), flush=True)
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="gcrmio", choices=sorted(STUDY_ARGS))
    ap.add_argument("--trials", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--study-ranks", type=int, default=2)
    ap.add_argument("--new-ranks", type=int, default=1)
    ap.add_argument("--study-args", help="the kernel's arguments in the study (default: built in)")
    ap.add_argument("--new-args", help="the kernel's arguments in the new run (default: built in)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sync", action="store_true", help="flush files before close (study too)")
    ap.add_argument("--out", type=Path, default=HERE / "kb_suggest.json")
    args = ap.parse_args()
    exe = str(paths.find_kernel(args.kernel))
    work = Path(tempfile.mkdtemp(prefix="kb-suggest-"))
    env = {**os.environ, "IOTUNE_KB": str(work / "kb.sqlite")}
    started, load_before = time.strftime("%Y-%m-%dT%H:%M:%S%z"), os.getloadavg()
    study_args = args.study_args.split() if args.study_args else STUDY_ARGS[args.kernel]
    new_args = args.new_args.split() if args.new_args else NEW_ARGS[args.kernel]
    study_cmd = [*mpitools.mpiexec(args.study_ranks), exe, *study_args]
    p = iotune("tune", "--trials", str(args.trials), "--verify-pairs", "10", "--no-progress",
               "--seed", str(args.seed), "--out", str(work / "study"),
               *(["--sync"] if args.sync else []), "--", *study_cmd, env=env, cwd=work)  # fmt: skip
    print(p.stdout[-3000:], p.stderr[-2000:])
    if p.returncode != 0:
        return 1
    summary = json.loads((work / "study" / "summary.json").read_text())
    new_cmd = [*mpitools.mpiexec(args.new_ranks), exe, *new_args]
    p = iotune("kb", "suggest", "--json", "-o", str(work / "suggested.xml"), "--", *new_cmd,
               env=env, cwd=work)  # fmt: skip
    print(p.stdout, p.stderr)
    suggestion = json.loads(p.stdout)
    settings = suggestion["settings"]
    same = settings == summary["recommended"]
    print(f"suggestion {settings} is the stored recommendation: {same}")
    if settings:
        parsed = controlfile.parse_file(work / "suggested.xml")
        assert {s.name: s.value for s in parsed.settings} == settings
    opts = trial.TrialOptions(command=new_cmd, workdir=work / "scratch", cwd=work,
                              lib=paths.find_library(), sync=args.sync)  # fmt: skip
    rng = random.Random(args.seed)
    values: dict[str, list[float]] = {"default": [], "suggested": []}
    order = []
    variants = {"default": {}, "suggested": settings}
    for r in range(args.rounds):
        got = {}
        for name in rng.sample(list(variants), 2):
            trial.run_trial(variants[name], opts)  # warm-up, discarded
            o = trial.run_trial(variants[name], opts)
            got[name] = o.value if o.ok else None
            order.append(name)
        if all(v is not None for v in got.values()):
            for k, v in got.items():
                values[k].append(v)
        print(f"round {r}: " + ", ".join(f"{k} {v}" for k, v in got.items()), flush=True)
    d, s = values["default"], values["suggested"]
    result = {
        "command": " ".join([sys.executable, *sys.argv]),
        "git": subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "sync": args.sync,
        "started": started,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "study_command": study_cmd,
        "study_recommended": summary["recommended"],
        "study_verdict": summary["verdict"],
        "new_command": new_cmd,
        "suggestion": suggestion,
        "suggestion_is_stored_settings": same,
        "objective": "profile io.time_s (s, lower is better)",
        "order": order,
        "values": values,
        "summary": {k: noise.summary(v) for k, v in values.items()},
        "ratio_of_medians": statistics.median(d) / statistics.median(s) if d and s else None,
        "pair_ratios": [a / b for a, b in zip(d, s, strict=True)],
        "p_suggested_faster": noise.paired_test(d, s, maximize=False) if d else None,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("summary", "ratio_of_medians",
                                              "p_suggested_faster")}, indent=1))  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
