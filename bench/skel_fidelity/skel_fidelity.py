"""Does a skeleton's I/O take as long as the original's?

For each case (every kernel, VORPAL-IO also with --uneven, and the external HDF5 program of
tests/data/skel_ext.c): profile the original once with trace on, derive the descriptor
(`iotune skel from-profile`), generate and build the skeleton; then run original and skeleton
interleaved, in shuffled order, each measured run right after a discarded warm-up run of the
same program, both under libiotune with a profile. The I/O time is the profile's io.time_s
(slowest rank's time inside I/O calls, the tuner's objective) for both. A case passes when
the medians differ by at most 10 %. Also printed, as a diagnostic only (not the criterion):
the ratio of the minima, the run least disturbed by other work on a shared machine. The
machine's load average is recorded before and after.

Noise controls: case sizes 4-16x those of the first runs (bench/README.md); before each
measured run, untimed, `sync` (no run pays for the writeback of another's pages) and with
--drop-caches (root) an empty page cache; with --sync both programs flush their files before
close (IOTUNE_SYNC=1), so the device's time counts too; with --hold-freed-memory (root, on a
VM that reports free pages to its host) freed memory stays in the VM while measuring, so no
run lands on memory the host took back (bench/freed_memory/freed_memory.py). Cases can be split over
several runs (--cases) to keep each locked run short.

    flock /tmp/iotune-bench.lock .venv/bin/python bench/skel_fidelity/skel_fidelity.py --repeats 7 \
        --cases vpicio,vorpalio --out bench/skel_fidelity/skel_fidelity.json
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

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench" / "freed_memory"))

import freed_memory  # noqa: E402

from iotune import paths  # noqa: E402
from iotune.skel import descriptor as dmod  # noqa: E402
from iotune.skel import from_profile as fp  # noqa: E402
from iotune.skel import generate as gen  # noqa: E402
from iotune.skel import run as runmod  # noqa: E402

# Sizes where each case's I/O takes 0.15-0.4 s here in the fast page-cache mode, 1-2 s in the
# slow one (2 ranks): at 15-300 ms the run-to-run spread hid the differences sought.
CASES = {
    "vpicio": ("vpicio", ["--particles", "8M", "--steps", "2"]),
    "vorpalio": ("vorpalio", ["--block", "200,200,160", "--components", "3"]),
    "vorpalio-uneven": ("vorpalio", ["--block", "200,200,160", "--components", "3", "--uneven"]),
    "gcrmio": ("gcrmio", ["--cells", "262144", "--levels", "25", "--chunk-cells", "65536"]),
    "haccio-one-call": ("haccio", ["--particles", "12M"]),
    "haccio-per-var": ("haccio", ["--particles", "12M", "--mode", "mpiio-per-var"]),
    "haccio-posix": ("haccio", ["--particles", "12M", "--mode", "posix"]),
    "iorio-mpiio": ("iorio", ["--api", "mpiio", "--block", "256M", "--transfer", "1M",
                              "--segments", "2"]),
    "iorio-hdf5": ("iorio", ["--api", "hdf5", "--block", "128M", "--transfer", "1M",
                             "--segments", "2", "--mode", "collective"]),
    "external": (None, ["2048", "8192", "1048576", "2"]),
}  # fmt: skip
# --smoke (CI: does the bench run?): tiny sizes, one round; no number of it means anything
SMOKE_CASES = {"vorpalio": ["--block", "20,20,16", "--components", "3"]}


def smoke(a) -> None:
    """Shrinks the run of --smoke: the cases of SMOKE_CASES (unless --cases chose), their tiny
    sizes, one round."""
    for name, args in SMOKE_CASES.items():
        CASES[name] = (CASES[name][0], args)
    if a.cases == ",".join(CASES):
        a.cases = ",".join(SMOKE_CASES)
    a.repeats = 1


def mpiexec(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> None:
    cmd = [*mpitools.mpiexec(2), *map(str, argv)]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr}")


NOISE = {"sync": False, "drop_caches": False}  # the measured runs' noise controls (main)


def settle() -> None:
    """Before a measured run, untimed: what earlier runs left dirty goes to the device (so no
    run pays for another's writeback) and, with --drop-caches, the page cache is emptied."""
    os.sync()
    if NOISE["drop_caches"]:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")


def profiled_io_time(argv: list[str], cwd: Path, lib: Path, trace: bool = False) -> float:
    prof = cwd / "profile.json"
    if prof.exists():
        prof.unlink()
    env = dict(os.environ, LD_PRELOAD=str(lib), IOTUNE_PROFILE=str(prof),
               IOTUNE_SESSION=f"bench-{time.time_ns():x}")  # fmt: skip
    env.pop("IOTUNE_CONFIG", None)
    env.pop("IOTUNE_SYNC", None)
    if trace:
        env["IOTUNE_TRACE"] = "1"
    elif NOISE["sync"]:  # the files flushed before close, timed in close: the device counts
        env["IOTUNE_SYNC"] = "1"
    mpiexec(argv, cwd, env)
    with open(prof) as fh:
        return float(json.load(fh)["io"]["time_s"])


COUNTED = {
    "hdf5": ("dataset_creates", "writes", "collective_writes", "independent_writes",
             "bytes_written"),
    "mpiio": ("set_views", "independent_writes", "collective_writes", "bytes_written"),
    "posix": ("writes", "bytes_written"),
}  # fmt: skip


def call_counts(profile: Path) -> dict[str, int]:
    """What the run did, summed over its data files: the deterministic part of the
    comparison (the skeleton's own timing file is not counted)."""
    with open(profile) as fh:
        files = json.load(fh)["files"]
    out: dict[str, int] = {}
    for f in files:
        if f["name"].endswith(".json"):
            continue
        for layer, keys in COUNTED.items():
            for k in keys:
                out[f"{layer}.{k}"] = out.get(f"{layer}.{k}", 0) + int(f.get(layer, {}).get(k, 0))
    return out


def clean(directory: Path) -> None:
    for p in directory.iterdir():
        if p.name in ("profile.json",) or p.name.endswith(".trace"):
            continue
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def build_external(work: Path) -> Path:
    out = work / "skel_ext"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", mpitools.hdf5_pkg()],
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    src = REPO / "tests/data/skel_ext.c"
    subprocess.run([mpitools.mpicc(), "-O2", "-o", str(out), str(src), *flags],
                   check=True)  # fmt: skip
    return out


COUNTS: dict[str, dict] = {}


def prepare(name: str, kernel: str | None, args: list[str], work: Path, lib: Path, ext: Path):
    exe = str(ext) if kernel is None else str(paths.find_kernel(kernel))
    orig_dir, skel_dir = work / name / "orig", work / name / "skel"
    shutil.rmtree(work / name, ignore_errors=True)  # a previous run's scratch
    orig_dir.mkdir(parents=True)
    skel_dir.mkdir(parents=True)
    profiled_io_time([exe, *args], orig_dir, lib, trace=True)
    desc = fp.from_profile(str(orig_dir / "profile.json"), str(orig_dir))
    text = fp.to_yaml(desc, f"{name}/profile.json")
    (work / name / "skel.yaml").write_text(text)
    d = dmod.parse_text(text, "skel.yaml")
    gen.generate(d, str(work / name / "src"), "skel.yaml")
    skeleton = runmod.build(str(work / name / "src"))
    clean(orig_dir)
    # the calls each program makes, once, at every layer (iotune's counters)
    profiled_io_time([exe, *args], orig_dir, lib)
    counts_orig = call_counts(orig_dir / "profile.json")
    clean(orig_dir)
    profiled_io_time([skeleton], skel_dir, lib)
    counts_skel = call_counts(skel_dir / "profile.json")
    clean(skel_dir)
    differ = {k: (counts_orig.get(k), counts_skel.get(k))
              for k in set(counts_orig) | set(counts_skel)
              if counts_orig.get(k) != counts_skel.get(k)}  # fmt: skip
    COUNTS[name] = {"orig": counts_orig, "skel": counts_skel, "differ": differ}
    return [exe, *args], orig_dir, [skeleton, "--timing", str(skel_dir / "t.json")], skel_dir


def provenance() -> dict:
    """Where a record comes from: the command as run (paths relative to the repository), the
    machine and the date."""
    return {
        "command": " ".join(["python", *sys.argv]).replace(str(REPO) + "/", ""),
        "machine": {"node": platform.node(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }  # fmt: skip


def save(result: dict, out: Path, scratch: Path | None) -> None:
    """Writes a run's record (raw numbers beside the result) and removes its scratch folder
    (None: a --workdir the user chose, kept)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"raw numbers in {out}")
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(names: list[str], setups: dict, repeats: int, seed: int, lib: Path) -> dict:
    """The interleaved rounds: each program's measured I/O times per case."""
    raw: dict[str, dict[str, list[float]]] = {n: {"orig": [], "skel": []} for n in names}
    rng = random.Random(seed)
    # Each round visits the cases in shuffled order; within a case the original and the
    # skeleton run back to back (which first is drawn), so each pair shares the machine's state.
    for rnd in range(repeats):
        cases = list(names)
        rng.shuffle(cases)
        for n in cases:
            o_argv, o_dir, s_argv, s_dir = setups[n]
            pair = [("orig", o_argv, o_dir), ("skel", s_argv, s_dir)]
            rng.shuffle(pair)
            for which, argv, cwd in pair:
                profiled_io_time(argv, cwd, lib)  # warm-up, discarded
                clean(cwd)
                settle()
                raw[n][which].append(profiled_io_time(argv, cwd, lib))
                clean(cwd)
        print(f"round {rnd + 1}/{repeats} done", flush=True)
    return raw


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--out", default=str(REPO / "bench/skel_fidelity/skel_fidelity.json"))
    ap.add_argument("--workdir", help="scratch (default: a temporary directory)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--sync",
        action="store_true",
        help="both programs flush their files before close (IOTUNE_SYNC=1)",
    )
    ap.add_argument(
        "--drop-caches",
        action="store_true",
        help="empty the page cache before each measured run (root only)",
    )
    ap.add_argument(
        "--hold-freed-memory",
        action="store_true",
        help="on a VM that reports free pages to its host, keep freed memory in the VM while "
        "measuring (root; bench/freed_memory/freed_memory.py)",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, one round (CI)")
    a = ap.parse_args()
    if a.smoke:
        smoke(a)
    if a.drop_caches and os.geteuid() != 0:
        ap.error("--drop-caches needs root")
    NOISE.update(sync=a.sync, drop_caches=a.drop_caches)
    lib = paths.find_library()
    work = Path(a.workdir or tempfile.mkdtemp(prefix="skel-fidelity-"))
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    ext = build_external(work)
    names = [c for c in a.cases.split(",") if c]
    setups = {}
    for n in names:
        kernel, args = CASES[n]
        setups[n] = prepare(n, kernel, args, work, lib, ext)
        print(f"prepared {n}", flush=True)
    with freed_memory.maybe_hold(a.hold_freed_memory) as held:
        raw = measure(names, setups, a.repeats, a.seed, lib)
    rows, passed = [], 0
    print(f"\n{'case':<17} {'orig median s':>13} {'skel median s':>13} {'skel/orig':>9} "
          f"{'paired':>7} {'min/min':>7}  within 10%  same calls")  # fmt: skip
    for n in names:
        mo, ms = statistics.median(raw[n]["orig"]), statistics.median(raw[n]["skel"])
        ratio = ms / mo if mo > 0 else float("nan")
        pairs = [s / o for o, s in zip(raw[n]["orig"], raw[n]["skel"], strict=True) if o > 0]
        paired = statistics.median(pairs)  # median of the per-round skel/orig ratios
        lo_o, lo_s = min(raw[n]["orig"]), min(raw[n]["skel"])
        min_ratio = lo_s / lo_o if lo_o > 0 else float("nan")  # diagnostic, not the criterion
        ok = abs(ratio - 1) <= 0.10
        passed += ok
        rows.append({"case": n, "orig_median_s": mo, "skel_median_s": ms, "ratio": ratio,
                     "paired_ratio_median": paired, "min_ratio": min_ratio, "within_10pct": ok,
                     "same_calls": not COUNTS[n]["differ"]})  # fmt: skip
        differ = sorted(COUNTS[n]["differ"])
        print(
            f"{n:<17} {mo:>13.4f} {ms:>13.4f} {ratio:>9.3f} {paired:>7.3f} {min_ratio:>7.3f}  "
            f"{'yes' if ok else 'NO':<10}  {'NO ' + str(differ) if differ else 'yes'}"
        )
    print(f"\n{passed} of {len(names)} cases within 10 %")
    result = {
        **provenance(),
        "repeats": a.repeats,
        "noise_controls": dict(NOISE, sync_before_each_measured_run=True, warm_up_run=True,
                               freed_memory=held),
        "load_average_1_5_15": {"before": load_before, "after": os.getloadavg()},
        "cases": {n: {"argv": CASES[n][1], "kernel": CASES[n][0] or "tests/data/skel_ext.c"}
                  for n in names},
        "rows": rows,
        "raw": raw,
        "call_counts": COUNTS,
        "passed": passed,
    }  # fmt: skip
    save(result, Path(a.out), None if a.workdir else work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
