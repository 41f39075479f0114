"""A series of preloaded kernel runs at several rank counts on emulated hosts (the scale benches).

`scripts/emuhosts.sh` gives one machine several host names (network and UTS namespaces); a
series starts them once, runs the kernel under the iotune runtime at each size, saves its
raw record after every run (a long series stopped midway keeps what it measured) and takes
the hosts down at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import mpitools

REPO = Path(__file__).resolve().parents[2]
EMU = REPO / "scripts" / "emuhosts.sh"


def launcher(ranks: int, hosts: int) -> list[str]:
    """The runtime's mpiexec on this host, or Hydra over `hosts` emulated hosts."""
    if hosts == 1:
        return mpitools.mpiexec(ranks)
    return [str(EMU), "run", str(hosts), "-n", str(ranks)]


def run_kernel(
    kernel: Path, args: list[str], ranks: int, hosts: int, env: dict[str, str], cwd: str,
    timeout: int,
) -> tuple[subprocess.CompletedProcess, float]:  # fmt: skip
    """One niced run of the kernel with `env` given to every rank; its result and wall time."""
    cmd = launcher(ranks, hosts)
    for k, v in env.items():
        cmd += ["-genv", k, v]
    t0 = time.monotonic()
    r = subprocess.run(["nice", "timeout", str(timeout), *cmd, str(kernel), *args], cwd=cwd,
                       capture_output=True, text=True)  # fmt: skip
    return r, time.monotonic() - t0


@contextlib.contextmanager
def emulated_hosts(hosts_list: list[int]) -> Iterator[list[int]]:
    """The host counts that can run here: the emulated hosts started for the largest, and
    taken down after; only 1 (with one line saying why) where they cannot be made."""
    most = max(hosts_list)
    if most > 1:
        check = subprocess.run([EMU, "check"], capture_output=True, text=True)
        if check.returncode != 0:
            print(f"emulated hosts left out: {check.stdout.strip()}")
            yield [1]
            return
        subprocess.run([EMU, "up", str(most)], check=True)
    try:
        yield hosts_list
    finally:
        if most > 1:
            subprocess.run([EMU, "down", str(most)])


class Series:
    """The raw record of a series: command, kernel, machine, date and its runs, saved whole
    after every run to `out` (a series run in parts keeps the earlier parts' runs)."""

    def __init__(self, out: Path, kernel: list[str], keep_earlier: bool = False) -> None:
        uname = platform.uname()
        self.out = out
        self.runs: list[dict] = []
        if keep_earlier and out.exists():
            self.runs.extend(json.loads(out.read_text()).get("runs", []))
        self.doc = {"command": [sys.executable, *sys.argv], "kernel": kernel,
                    "machine": {"host": uname.node, "system": f"{uname.system} {uname.release}",
                                "cpus": os.cpu_count()},
                    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "runs": self.runs}  # fmt: skip

    def add(self, row: dict) -> None:
        self.runs.append(row)
        self.save()

    def save(self) -> None:
        self.doc["loadavg_at_end"] = os.getloadavg()
        self.out.write_text(json.dumps(self.doc, indent=1) + "\n")
