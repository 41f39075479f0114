"""How `iotune advise`'s time grows with the files of a profile (issue 23: it was quadratic,
60,000 files 20 s, 10^6 never ended; acceptance: 10^6 files in under a minute).

For each size and file naming (tests/python/many_files.py: a file per process, several
checkpoint series, names without numbers: every file its own group) a profile is written, then
`python -m iotune advise PROFILE -o - --json > /dev/null` is timed (wall clock, peak memory from
wait4), once per size, with the load average before each run.

  .venv/bin/python bench/advise_scale/advise_scale.py [--sizes 1000,10000,100000,1000000]
  [--namings ...]

Raw data: bench/advise_scale/advise_scale.json (machine, command, every run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GEN = HERE.parents[1] / "tests" / "python"
sys.path.insert(0, str(GEN))

import many_files  # noqa: E402  (the generator the tests use)


def run(profile: Path) -> dict:
    cmd = [sys.executable, "-m", "iotune", "advise", str(profile), "-o", "-", "--json"]
    load = os.getloadavg()
    t = time.perf_counter()
    with open(os.devnull, "w") as null:
        proc = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read()
    wall = time.perf_counter() - t
    return {"command": " ".join(cmd[1:]), "exit": os.waitstatus_to_exitcode(status),
            "wall_s": round(wall, 3), "user_s": round(usage.ru_utime, 3),
            "sys_s": round(usage.ru_stime, 3),
            "max_rss_mib": round(usage.ru_maxrss / 1024, 1), "load_before": load,
            "stderr": err[-300:]}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--namings", default=",".join(many_files.NAMINGS))
    ap.add_argument("--out", default=str(HERE / "advise_scale.json"))
    args = ap.parse_args()
    machine = {"host": platform.node(), "machine": platform.machine(), "cpus": os.cpu_count(),
               "python": platform.python_version(), "system": platform.platform()}  # fmt: skip
    try:
        with open("/proc/cpuinfo") as f:
            machine["cpu"] = next(ln.split(":", 1)[1].strip() for ln in f if "model name" in ln)
    except (OSError, StopIteration):
        pass
    runs = []
    with tempfile.TemporaryDirectory(prefix="advise-scale-") as tmp:
        for naming in args.namings.split(","):
            for n in map(int, args.sizes.split(",")):
                profile = Path(tmp) / f"{naming}-{n}.json"
                gen = f"import many_files; many_files.write({str(profile)!r}, {n}, {naming!r})"
                # in a child: this process stays small (the timed run is forked from it, and
                # its peak memory counts what it inherited)
                subprocess.run([sys.executable, "-c", gen], check=True,
                               env={**os.environ, "PYTHONPATH": str(GEN)})  # fmt: skip
                size = profile.stat().st_size
                r = {"naming": naming, "files": n, "profile_bytes": size, **run(profile)}
                print(json.dumps({k: r[k] for k in ("naming", "files", "exit", "wall_s",
                                                    "user_s", "sys_s", "max_rss_mib",
                                                    "load_before")}),
                      flush=True)  # fmt: skip
                runs.append(r)
                profile.unlink()
    out = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine,
           "script": "bench/advise_scale/advise_scale.py " + " ".join(sys.argv[1:]),
           "runs": runs}  # fmt: skip
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
