"""Why does the same run write at two speeds here? A test of one cause: the VM gives freed
memory back to its host (free page reporting), and a run that lands on given-back memory pays
a host page fault per page.

The same kernel run (VPIC-IO, 2 ranks, 512 MiB into the page cache, under libiotune with a
profile; objective the profile's io.time_s) in interleaved rounds, each measured run after a
discarded warm-up, its files removed, `sync` and the page cache dropped (root), then:

  now      the measured run starts at once: it reuses memory freed a moment ago
  pause    5 s pass first: long enough for the VM to report the freed memory to the host
  held     5 s pass, with freed memory held in the VM (bench/freed_memory/freed_memory.py) meanwhile

If the cause is right, `pause` is slow and `now` and `held` are fast. Raw numbers, the
machine, the command and the reporting parameters before and after go to --out.

    flock /tmp/iotune-bench.lock .venv/bin/python bench/memory_modes/memory_modes.py --rounds 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "freed_memory"))
sys.path.insert(0, str(HERE.parent / "skel_fidelity"))
import freed_memory  # noqa: E402
import skel_fidelity as sf  # noqa: E402

from iotune import paths  # noqa: E402

VARIANTS = ("now", "pause", "held")
PAUSE_S = 5.0


def reporting_state() -> dict[str, str]:
    d = freed_memory.PARAM.parent
    if not d.is_dir():
        return {}
    return {p.name: p.read_text().strip() for p in sorted(d.iterdir()) if p.is_file()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--particles", default="8M", help="VPIC-IO's --particles (per rank)")
    ap.add_argument("--out", type=Path, default=HERE / "memory_modes.json")
    a = ap.parse_args()
    lib = paths.find_library()
    argv = [str(paths.find_kernel("vpicio")), "--particles", a.particles, "--steps", "2"]
    sf.NOISE["drop_caches"] = True
    state_before = reporting_state()
    load_before = os.getloadavg()
    raw: dict[str, list[float]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="memory-modes-") as tmp:
        dirs = {v: Path(tmp) / v for v in VARIANTS}
        for d in dirs.values():
            d.mkdir()
        for rnd in range(a.rounds):
            for v in VARIANTS:
                sf.profiled_io_time(argv, dirs[v], lib)  # warm-up, discarded
                sf.clean(dirs[v])
                sf.settle()  # sync, drop the page cache
                with freed_memory.maybe_hold(v == "held"):
                    if v != "now":
                        time.sleep(PAUSE_S)
                    raw[v].append(sf.profiled_io_time(argv, dirs[v], lib))
                sf.clean(dirs[v])
            print(f"round {rnd + 1}/{a.rounds} done", flush=True)
    summary = {
        v: {"median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts)}
        for v, ts in raw.items()
    }
    for v, s in summary.items():
        print(f"{v:<6} median {s['median_s']:.3f} s  range {s['min_s']:.3f}-{s['max_s']:.3f} s")
    record = {
        **sf.provenance(),
        "kernel": argv[1:],
        "pause_s": PAUSE_S,
        "load_average_1_5_15": {"before": load_before, "after": os.getloadavg()},
        "page_reporting": {"before": state_before, "after": reporting_state()},
        "summary": summary,
        "raw": raw,
    }
    sf.save(record, a.out, None)  # None: no scratch of its own to remove
    return 0


if __name__ == "__main__":
    sys.exit(main())
