#!/usr/bin/env python3
"""Whole `iotune tune` studies with default options, the code before a change and after it, one
study of each per case and round, their order alternating (issue 25: "reaches the same
verdicts as before with fewer runs, counted in the study's summary").

Each version is a source tree (`--before SRC`, `--after SRC`: a `src/` holding the iotune
package, e.g. a `git worktree` of the earlier commit); both run the runtime libraries and
kernels installed in this Python environment (paths.py), so only the tuner differs. Every
study runs in a scratch directory of its own with `--hold-freed-memory --no-kb` (no study sees
another's), under whatever lock the caller holds. Per study: the verdict (summary.json's
headline: best.xml, speedup, interval, pairs), the application runs by phase, the reduction's
screen, the wall time, `uptime` before and after.

  PYTHONPATH=src flock /work/wt/measure.lock .venv/bin/python bench/screen_real/screen_real.py \\
      --before /work/wt/before/src --after src --rounds 1 --out bench/screen_real/screen_real.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("IOTUNE_CORPUS_DIR", Path.home() / ".cache/iotune/corpus"))

# name -> the arguments after `iotune tune` (default options but the two every study here takes)
CASES = {
    "gcrmio-demo": ["--demo"],
    "haccio": ["--kernel", "haccio"],
    "h5perf-phdf5-chunked-i8": [
        "--",
        "mpiexec.mpich",
        *f"-n 2 {CORPUS}/h5perf-phdf5-chunked/pio_perf -A phdf5 -C -c -e 4M -x 1M -X 1M -B 1M "
        "-d 2 -i 8 -p 2 -P 2 -D v".split(),
    ],
    "pnetcdf-transpose": [  # Open MPI's: its runtime, Open MPI's launcher
        *"--mpi openmpi -- mpiexec.openmpi --oversubscribe".split(),
        *f"-n 2 {CORPUS}/pnetcdf-transpose/transpose -q -l 64 transpose.nc".split(),
    ],
}
COMMON = ["--hold-freed-memory", "--no-kb"]
PHASES = ("search", "re-measure", "verification", "reduction", "addition")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def one_study(case: str, version: str, src: Path, work: Path) -> dict:
    """One study of `case` with the tuner of `src`, in a scratch directory under work."""
    d = Path(tempfile.mkdtemp(prefix=f"{case}-{version}-", dir=work))
    out = d / "study"
    env = dict(os.environ, PYTHONPATH=str(src))  # the runtimes: this environment's (paths.py)
    if os.geteuid() == 0:  # Open MPI refuses root without these
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    argv = [sys.executable, "-m", "iotune", "tune", *COMMON, "--out", str(out), *CASES[case]]
    rec: dict = {"case": case, "version": version, "src": str(src), "argv": shlex.join(argv)}
    rec["uptime_before"] = uptime()
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=d, env=env, capture_output=True, text=True)
    rec["seconds"] = round(time.monotonic() - t0, 1)
    rec["uptime_after"] = uptime()
    rec["exit"] = proc.returncode
    rec["console_tail"] = proc.stdout.splitlines()[-25:] + proc.stderr.splitlines()[-10:]
    summary_file = out / "summary.json"
    if summary_file.exists():
        s = json.loads(summary_file.read_text())
        head = s.get("headline") or {}
        rec.update(
            runs=s.get("runs"),
            verdict=s.get("verdict"),
            best_xml=s.get("recommended") or {},
            speedup=head.get("speedup"),
            interval=[head.get("low"), head.get("high")],
            pairs=head.get("pairs"),
            winner=s.get("best_settings"),
            screen=(s.get("minimal") or {}).get("screen"),
            cv=((s.get("host_noise") or {}).get("defaults_spread") or {}).get("cv"),
        )
    return rec


def _screen_cell(sc: dict | None) -> str:
    """What the reduction's screen did (summary.json's minimal.screen), in a few words."""
    if not sc:
        return "-"
    out = f"kept {','.join(sc['kept'])}: the winner {sc['cost']:.2f}x in {sc['pairs']} pairs"
    second = sc.get("second")
    if second:
        out += f"; without {second['setting']} {second['cost']:.2f}x" + (
            " (needed)" if second["kept"] else ""
        )
    then = sc.get("then")
    if then:
        out += f"; vs {','.join(then['kept'])} {then['cost']:.2f}x in {then['pairs']} pairs"
    return out + (": others removed" if sc["removed"] else ": one at a time")


def table(records: list[dict]) -> str:
    lines = [
        "| case | round | version | s | best.xml | speedup [interval] | pairs | runs (search / "
        "re-measure / verification / reduction / addition) | screen |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        runs = r.get("runs") or {}
        phases = " / ".join(str(runs.get(k, 0)) for k in PHASES)
        best = ", ".join(f"{k}={v}" for k, v in (r.get("best_xml") or {}).items()) or "defaults"
        lo, hi = r.get("interval") or [None, None]
        sp = f"{r['speedup']:.2f}x [{lo:.2f}-{hi:.2f}]" if r.get("speedup") and lo and hi else "-"
        screen = _screen_cell(r.get("screen"))
        lines.append(
            f"| {r['case']} | {r['round']} | {r['version']} | {r['seconds']} | {best} | {sp} | "
            f"{r.get('pairs', '-')} | {runs.get('total', '-')} ({phases}) | {screen} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="src/ of the earlier tuner")
    ap.add_argument("--after", type=Path, default=REPO / "src", help="src/ of the changed one")
    ap.add_argument("--cases", default=",".join(CASES), help="default: %(default)s")
    ap.add_argument("--rounds", type=int, default=1, help="studies of each version per case")
    ap.add_argument("--work", type=Path, default=Path("/tmp/screen-real"))
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("screen_real.json"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    records: list[dict] = []
    meta = {"command": shlex.join([sys.executable, *sys.argv]), "started": time.ctime()}
    for rnd in range(args.rounds):
        for i, case in enumerate(args.cases.split(",")):
            order = [("before", args.before), ("after", args.after)]
            if (rnd + i) % 2:
                order.reverse()
            for version, src in order:
                rec = one_study(case, version, src.resolve(), args.work)
                rec["round"] = rnd + 1
                records.append(rec)
                print(table([rec]).splitlines()[-1], flush=True)
                args.out.write_text(json.dumps({"meta": meta, "studies": records}, indent=1))
    meta["ended"] = time.ctime()
    args.out.write_text(json.dumps({"meta": meta, "studies": records}, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(table(records) + "\n")
    print(table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
