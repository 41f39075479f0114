"""Tuned on the skeleton, applied to the original: as good as tuned on the original?

1. Profile the original (a kernel) with trace on, derive the descriptor, build the skeleton.
2. `iotune tune --trials N` on the skeleton, and the same on the original.
3. Run the original with the defaults, with the skeleton's best.xml and with the original's
   best.xml, interleaved in shuffled rounds, each measured run after a discarded warm-up run;
   the I/O time is the profile's io.time_s. Speedup = median default / median tuned.

    .venv/bin/python bench/skel_tune/skel_tune.py --trials 15 --repeats 9
"""

from __future__ import annotations

import argparse
import json
import os
import random
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
sys.path.insert(0, str(REPO / "bench" / "skel_fidelity"))

from skel_fidelity import clean, profiled_io_time, provenance, save  # noqa: E402

from iotune import paths  # noqa: E402
from iotune.skel import descriptor as dmod  # noqa: E402
from iotune.skel import from_profile as fp  # noqa: E402
from iotune.skel import generate as gen  # noqa: E402
from iotune.skel import run as runmod  # noqa: E402

IOTUNE = str(Path(sys.executable).parent / "iotune")


def tune(argv: list[str], out: Path, trials: int, seed: int, pairs: int) -> Path:
    # iotune keeps the defaults unless tuned beats them significantly over `pairs` rounds
    cmd = [IOTUNE, "tune", "--trials", str(trials), "--seed", str(seed), "--out", str(out),
           "--verify-pairs", str(pairs), "--warmup", "1", "--no-partial", "--", *argv]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    (out.parent / f"{out.name}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not (out / "best.xml").exists():
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return out / "best.xml"


def with_config(argv: list[str], cwd: Path, lib: Path, config: Path | None) -> float:
    if config is None:
        os.environ.pop("IOTUNE_CONFIG", None)
    else:
        os.environ["IOTUNE_CONFIG"] = str(config)
    try:
        return profiled_io_time_keep_config(argv, cwd, lib)
    finally:
        os.environ.pop("IOTUNE_CONFIG", None)


def profiled_io_time_keep_config(argv: list[str], cwd: Path, lib: Path) -> float:
    prof = cwd / "profile.json"
    if prof.exists():
        prof.unlink()
    env = dict(os.environ, LD_PRELOAD=str(lib), IOTUNE_PROFILE=str(prof),
               IOTUNE_SESSION=f"bench-{time.time_ns():x}")  # fmt: skip
    cmd = [*mpitools.mpiexec(2), *map(str, argv)]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr}")
    with open(prof) as fh:
        return float(json.load(fh)["io"]["time_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="gcrmio")
    ap.add_argument("--args", default="--cells 65536 --levels 25 --chunk-cells 4096")
    ap.add_argument("--trials", type=int, default=15)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--verify-pairs", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(REPO / "bench/skel_tune/skel_tune.json"))
    ap.add_argument("--workdir")
    a = ap.parse_args()
    lib = paths.find_library()
    work = Path(a.workdir or tempfile.mkdtemp(prefix="skel-tune-"))
    work.mkdir(parents=True, exist_ok=True)
    orig_argv = [str(paths.find_kernel(a.kernel)), *a.args.split()]
    orig = work / "orig"
    orig.mkdir(exist_ok=True)
    profiled_io_time(orig_argv, orig, lib, trace=True)
    desc = fp.from_profile(str(orig / "profile.json"), str(orig))
    text = fp.to_yaml(desc, "profile.json")
    (work / "skel.yaml").write_text(text)
    gen.generate(dmod.parse_text(text, "skel.yaml"), str(work / "src"), "skel.yaml")
    skeleton = runmod.build(str(work / "src"))
    clean(orig)
    t0 = time.time()
    best_skel = tune(
        [skeleton, "--timing", "/dev/null"], work / "tune-skel", a.trials, a.seed, a.verify_pairs
    )
    t_skel = time.time() - t0
    t0 = time.time()
    best_orig = tune(orig_argv, work / "tune-orig", a.trials, a.seed, a.verify_pairs)
    t_orig = time.time() - t0
    print(f"tuned: skeleton {t_skel:.0f} s, original {t_orig:.0f} s", flush=True)
    for name, best in (("skeleton", best_skel), ("original", best_orig)):
        print(f"best.xml tuned on the {name}:\n{best.read_text()}", flush=True)
    configs = {"default": None, "tuned-on-skeleton": best_skel, "tuned-on-original": best_orig}
    raw: dict[str, list[float]] = {k: [] for k in configs}
    rng = random.Random(a.seed)
    for rnd in range(a.repeats):
        order = list(configs)
        rng.shuffle(order)
        for k in order:
            with_config(orig_argv, orig, lib, configs[k])  # warm-up, discarded
            clean(orig)
            raw[k].append(with_config(orig_argv, orig, lib, configs[k]))
            clean(orig)
        print(f"round {rnd + 1}/{a.repeats}", flush=True)
    med = {k: statistics.median(v) for k, v in raw.items()}
    print(f"\n{'original run with':<20} {'median s':>9} {'min s':>8} {'max s':>8} {'speedup':>8}")
    for k, v in raw.items():
        print(f"{k:<20} {med[k]:>9.4f} {min(v):>8.4f} {max(v):>8.4f} "
              f"{med['default'] / med[k]:>8.2f}")  # fmt: skip
    result = {
        **provenance(),
        "kernel": a.kernel, "args": a.args, "trials": a.trials,
        "tune_seconds": {"skeleton": t_skel, "original": t_orig},
        "best_xml": {"skeleton": best_skel.read_text(), "original": best_orig.read_text()},
        "raw": raw, "median": med,
        "speedup": {k: med["default"] / med[k] for k in raw},
    }  # fmt: skip
    save(result, Path(a.out), None if a.workdir else work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
