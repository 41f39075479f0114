#!/usr/bin/env python3
"""Trace size beside Darshan's DXT log of the same run, both measured (not estimated).

Each case of bench/tracevol/tracevol.py (the call sequences of tests/c/trace_probe and the iorio
kernel)
runs --repeat times under each tool, in turn:
- iotune: this tree's runtime with IOTUNE_TRACE=all (every layer: HDF5, MPI-IO, POSIX); the
  bytes of the `<profile>.trace` directory (gzip-compressed runs) and the runs it holds;
- Darshan with DXT on (DXT_ENABLE_IO_TRACE=1; DXT traces POSIX and MPI-IO, not HDF5): the
  bytes of the .darshan log, the DXT segments in it and whether a DXT module says its data is
  incomplete (Darshan caps DXT's memory, by default 2 MiB per DXT module: a longer trace is
  cut), as darshan-dxt-parser --show-incomplete reports them. Several Darshan builds can be
  compared (--darshan NAME=LIBDARSHAN.so, e.g. its default and one configured with
  --with-mod-mem=64 so that no trace is cut).

Darshan is not a dependency of iotune: build its runtime for this measurement only (see
bench/README.md, "Trace size against Darshan DXT, measured").

usage: bench/dxt_size/dxt_size.py --darshan default=/opt/darshan/lib/libdarshan.so \
         --darshan mem64=/opt/darshan64/lib/libdarshan.so \
         --dxt-parser /opt/darshan/bin/darshan-dxt-parser [--repeat 3] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

sys.path.insert(0, str(HERE.parent / "tracevol"))
from tracevol import CASES, LIB, clean_env  # noqa: E402

from iotune import trace as iotrace  # noqa: E402


def run(cmd: list[str], ranks: int, preload: str, env: dict[str, str], cwd: Path) -> str:
    if ranks > 1:
        cmd = ["timeout", "300", *mpitools.mpiexec(ranks),
               *mpitools.env_flags("LD_PRELOAD", preload), *cmd]  # fmt: skip
    else:
        env = {**env, "LD_PRELOAD": preload}
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return out.stdout


def iotune_size(case: str, work: Path) -> dict[str, object]:
    argv, ranks = CASES[case]
    env = clean_env()
    env.update(IOTUNE_PROFILE=str(work / "p.json"), IOTUNE_TRACE="all",
               IOTUNE_CONFIG=str(work.parent / "empty.xml"))  # fmt: skip
    run([str(a) for a in argv], ranks, str(LIB), env, work)
    files = sorted((work / "p.json.trace").iterdir())
    traces = iotrace.load(work / "p.json")
    return {
        "bytes": sum(f.stat().st_size for f in files),
        "runs": sum(len(t["runs"]) for t in traces),
        "version": traces[0]["version"],
    }


def darshan_size(case: str, lib: str, parser: str, work: Path) -> dict[str, object]:
    argv, ranks = CASES[case]
    log = work / "run.darshan"
    env = {k: v for k, v in clean_env().items() if not k.startswith(("DARSHAN_", "DXT_"))}
    env.update(DARSHAN_LOGFILE=str(log), DXT_ENABLE_IO_TRACE="1")
    run([str(a) for a in argv], ranks, lib, env, work)
    text = subprocess.run([parser, "--show-incomplete", str(log)], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    modules = dict(re.findall(r"^# (DXT_\w+) module: (\d+) bytes", text, re.M))
    return {
        "bytes": log.stat().st_size,
        "dxt_module_bytes": {k: int(v) for k, v in modules.items()},
        "segments": {
            "posix": len(re.findall(r"^\s*X_POSIX\s", text, re.M)),
            "mpiio": len(re.findall(r"^\s*X_MPIIO\s", text, re.M)),
        },
        "incomplete": sorted(set(re.findall(r"The (DXT_\w+) module contains incomplete", text))),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--darshan", action="append", required=True, metavar="NAME=LIB",
                    help="a Darshan runtime (libdarshan.so) to measure, by a name")  # fmt: skip
    ap.add_argument("--dxt-parser", required=True, help="darshan-dxt-parser")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--out", type=Path, default=HERE / "dxt_size.json")
    args = ap.parse_args()
    darshans = dict(d.split("=", 1) for d in args.darshan)
    cases = args.cases.split(",")
    raw: dict[str, dict[str, list[dict[str, object]]]] = {c: {} for c in cases}
    started, load = time.strftime("%Y-%m-%dT%H:%M:%S%z"), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="iotune-dxt-") as tmpname:
        tmp = Path(tmpname)
        (tmp / "empty.xml").write_text("<Parameters/>\n")
        for case in cases:
            for r in range(args.repeat):
                tools = [("iotune", None), *darshans.items()]
                for name, lib in tools:  # the tools in turn, each repeat
                    work = tmp / f"{case}-{name}-{r}"
                    work.mkdir()
                    got = (iotune_size(case, work) if lib is None
                           else darshan_size(case, lib, args.dxt_parser, work))  # fmt: skip
                    raw[case].setdefault(name, []).append(got)
                    shutil.rmtree(work, ignore_errors=True)
                    print(f"{case} {name} #{r}: {got}", file=sys.stderr, flush=True)
    summary = {
        c: {
            n: {
                "median_bytes": statistics.median(x["bytes"] for x in rows),
                "min_bytes": min(x["bytes"] for x in rows),
                "max_bytes": max(x["bytes"] for x in rows),
            }  # fmt: skip
            for n, rows in by_tool.items()
        }
        for c, by_tool in raw.items()
    }
    for s in summary.values():
        for n in darshans:
            s[f"iotune/{n}"] = s["iotune"]["median_bytes"] / s[n]["median_bytes"]
    record = {
        "command": " ".join([sys.executable, *sys.argv]),
        "git": subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores "
        f"{platform.platform()}",
        "started": started,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_before": load,
        "load_after": os.getloadavg(),
        "darshan": darshans,
        "cases": {
            c: {
                "argv": [
                    Path(str(a)).name if i == 0 else str(a) for i, a in enumerate(CASES[c][0])
                ],
                "ranks": CASES[c][1],
            }
            for c in cases
        },  # fmt: skip
        "raw": raw,
        "summary": summary,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
