"""Why did some skeletons' I/O take a different time from the original's, with the same calls?

For each case of bench/skel_fidelity/skel_fidelity.py (default: the three that differed
systematically), three
programs run interleaved in shuffled rounds, each measured run after a discarded warm-up: the
original, the skeleton as generated now (its write memory made before the first step,
`skel_prepare_begin/_end`), and the same skeleton without that block (the memory made when a
write first needs it, as skeletons did before: each growth of the buffer touched the new part
and a 64 MiB scrub area between two writes). The time is the profile's io.time_s, as in
skel_fidelity.py. Each program also runs once traced, and the trace gives per rank the time
inside write calls, the window from the first open to the last close, and the time in that
window outside any I/O call (`outside_s`: where the skeleton without the block made its memory).

    flock /tmp/iotune-bench.lock .venv/bin/python bench/skel_prepare_ab/skel_prepare_ab.py
    --repeats 9 \
        --out bench/skel_prepare_ab/skel_prepare_ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench" / "skel_fidelity"))

import skel_fidelity as sf  # noqa: E402

from iotune import paths  # noqa: E402
from iotune.skel import run as runmod  # noqa: E402
from iotune.skel.trace_calls import CLOSES, OPENS, WRITES, load_traces  # noqa: E402

DEFAULT_CASES = "haccio-posix,iorio-mpiio,vorpalio-uneven"
SMOKE_BLOCK = ["--block", "20,20,16"]  # --smoke's VORPAL-IO size
PREPARE = re.compile(r"\n *skel_prepare_begin\(s\);.*?skel_prepare_end\(s\);\n", re.S)


def without_prepare(src: Path, out: Path) -> str:
    """A copy of the generated skeleton without its prepare block, built; its path."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(src, out)
    code = (out / "skeleton.c").read_text()
    stripped = PREPARE.sub("\n", code)
    if stripped == code:
        raise RuntimeError(f"{src}/skeleton.c has no skel_prepare_begin/_end block")
    (out / "skeleton.c").write_text(stripped)
    (out / "skeleton").unlink(missing_ok=True)
    return runmod.build(str(out))


def call_stats(profile: Path) -> list[dict[str, float]]:
    """Per rank: seconds inside write calls, the first-open-to-last-close window, and the part
    of that window outside every traced I/O call."""
    _, traces = load_traces(str(profile))
    out = []
    for tr in traces:
        calls = [c for c in tr.calls if c.file and not c.file.endswith(".json")]
        opens = [c.t0 for c in calls if c.func in OPENS]
        closes = [c.t1 for c in calls if c.func in CLOSES]
        if not opens or not closes:
            out.append({})
            continue
        lo, hi = min(opens), max(closes)
        inside = [(c.t0, c.t1) for c in calls if lo <= c.t0 <= hi]
        busy, end = 0.0, lo
        for a, b in sorted(inside):  # union of call intervals (HDF5 calls nest MPI-IO, POSIX)
            if b > end:
                busy += b - max(a, end)
                end = b
        top = next((c.layer for c in calls if c.func in WRITES), None)  # the program's own calls
        writes = sum(c.t1 - c.t0 for c in calls if c.func in WRITES and c.layer == top)
        out.append({"write_s": writes, "window_s": hi - lo, "outside_s": hi - lo - busy})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--cases", default=DEFAULT_CASES)
    ap.add_argument("--out", default=str(REPO / "bench/skel_prepare_ab/skel_prepare_ab.json"))
    ap.add_argument("--workdir", help="scratch (default: a temporary directory)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--smoke", action="store_true", help="a tiny case, one round (CI)")
    a = ap.parse_args()
    if a.smoke:  # does the bench run? (no number of it means anything)
        sf.CASES["vorpalio-uneven"] = ("vorpalio", [*SMOKE_BLOCK, "--components", "3", "--uneven"])
        a.cases, a.repeats = "vorpalio-uneven", 1
    lib = paths.find_library()
    work = Path(a.workdir or tempfile.mkdtemp(prefix="skel-prepare-ab-"))
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    ext = sf.build_external(work)
    names = [c for c in a.cases.split(",") if c]
    progs: dict[str, dict[str, tuple[list[str], Path]]] = {}
    stats: dict[str, dict[str, list[dict[str, float]]]] = {}
    for n in names:
        kernel, args = sf.CASES[n]
        o_argv, o_dir, s_argv, s_dir = sf.prepare(n, kernel, args, work, lib, ext)
        old = without_prepare(work / n / "src", work / n / "src-noprep")
        old_dir = work / n / "skel-noprep"
        old_dir.mkdir(exist_ok=True)
        old_argv = [old, "--timing", str(old_dir / "t.json")]
        progs[n] = {"orig": (o_argv, o_dir), "skel": (s_argv, s_dir),
                    "skel_noprep": (old_argv, old_dir)}  # fmt: skip
        stats[n] = {}
        for which, (argv, cwd) in progs[n].items():
            sf.profiled_io_time(argv, cwd, lib, trace=True)
            stats[n][which] = call_stats(cwd / "profile.json")
            sf.clean(cwd)
            shutil.rmtree(cwd / "profile.json.trace", ignore_errors=True)
        print(f"prepared {n}: {json.dumps(stats[n])}", flush=True)
    raw = {n: {w: [] for w in progs[n]} for n in names}
    rng = random.Random(a.seed)
    for rnd in range(a.repeats):
        cases = list(names)
        rng.shuffle(cases)
        for n in cases:
            order = list(progs[n])
            rng.shuffle(order)
            for which in order:
                argv, cwd = progs[n][which]
                sf.profiled_io_time(argv, cwd, lib)  # warm-up, discarded
                sf.clean(cwd)
                raw[n][which].append(sf.profiled_io_time(argv, cwd, lib))
                sf.clean(cwd)
        print(f"round {rnd + 1}/{a.repeats} done", flush=True)
    rows = []
    print(f"\n{'case':<17} {'program':<12} {'median s':>9} {'min s':>8} {'/orig med':>9} "
          f"{'/orig min':>9}  outside I/O calls per rank (traced run)")  # fmt: skip
    for n in names:
        mo, lo = statistics.median(raw[n]["orig"]), min(raw[n]["orig"])
        for which in progs[n]:
            m, mn = statistics.median(raw[n][which]), min(raw[n][which])
            outside = [round(s.get("outside_s", float("nan")), 4) for s in stats[n][which]]
            rows.append({"case": n, "program": which, "median_s": m, "min_s": mn,
                         "ratio_median": m / mo, "ratio_min": mn / lo})  # fmt: skip
            print(f"{n:<17} {which:<12} {m:>9.4f} {mn:>8.4f} {m / mo:>9.3f} {mn / lo:>9.3f}  "
                  f"{outside}")  # fmt: skip
    result = {
        **sf.provenance(),
        "repeats": a.repeats,
        "load_average_1_5_15": {"before": load_before, "after": os.getloadavg()},
        "cases": {n: {"argv": sf.CASES[n][1], "kernel": sf.CASES[n][0] or "tests/data/skel_ext.c"}
                  for n in names},
        "traced_call_stats": stats,
        "rows": rows,
        "raw": raw,
    }  # fmt: skip
    sf.save(result, Path(a.out), None if a.workdir else work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
