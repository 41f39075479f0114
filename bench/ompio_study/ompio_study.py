#!/usr/bin/env python3
"""VORPAL-IO tuned under Open MPI (OMPIO's parameters) beside the same study under MPICH
(ROMIO's hints), then default vs each study's result re-measured, interleaved.

1. Three studies, each `iotune tune --kernel vorpalio --mpi FAMILY --space SPACE`:
   - openmpi: Open MPI, space bench/ompio_study/spaces/ompio-study.toml (the MPI-IO layer: ROMIO's
   write
     hints, and Open MPI's `io` (OMPIO or ROMIO), `fcoll`, `io_ompio_num_aggregators`,
     `io_ompio_bytes_per_agg`);
   - openmpi-ompio: Open MPI, bench/ompio_study/spaces/ompio-only.toml (OMPIO's own parameters, the
     component left at OMPIO): what OMPIO's knobs gain by themselves;
   - mpich: MPICH, bench/ompio_study/spaces/ompio-study.toml (iotune leaves the Open MPI
   parameters out).
   Each study's summary.json, trials.csv and best.xml (and candidate.xml when the study's own
   test found nothing) are copied to bench/ompio_study/results/STUDY/.
2. An interleaved re-measurement: in each round every variant (each MPI's defaults, each
   study's best.xml, and, as STUDY:full, the whole winner the study verified before its
   minimal-recommendation step reduced it, when that differs) runs once in a shuffled order,
   each measured run right after a discarded identical warm-up run. Every run is the user's
   path: `iotune run --mpi FAMILY [--config best.xml] -- LAUNCHER -n 2 KERNEL ARGS`, the
   runtime preloaded in every variant (Open MPI's parameters reach the ranks through the
   environment that `iotune run` sets from the control file). Measured: the objective the
   studies use (the runtime profile's I/O time, io.time_s), and the kernel's own time. Per
   variant, paired with its MPI's default run of the same round: median, min, max, the ratio
   of medians (default / tuned), and a one-sided paired test that tuned beats default (the
   exact sign-flip permutation test of iotune.search.noise on the pairs' log ratios). Raw
   runs: remeasure.json; machine and commands: meta.json; table: remeasure.md.

Usage: nice -n 5 .venv/bin/python bench/ompio_study/ompio_study.py [--trials 24] [--rounds 10]
       .venv/bin/python bench/ompio_study/ompio_study.py --skip-studies   (re-measure the kept
       best.xml)
       .venv/bin/python bench/ompio_study/ompio_study.py --studies openmpi-ompio
           (run one study, then re-measure every kept result)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iotune import controlfile, objective, paths
from iotune.search import noise

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"
# study name: (MPI family, space, the MPI-IO component of the defaults)
STUDIES = {
    "openmpi": ("openmpi", HERE / "spaces" / "ompio-study.toml", "OMPIO"),
    "openmpi-ompio": ("openmpi", HERE / "spaces" / "ompio-only.toml", "OMPIO"),
    "mpich": ("mpich", HERE / "spaces" / "ompio-study.toml", "ROMIO"),
}
KERNEL = "vorpalio"
KERNEL_ARGS = ["--block", "160,160,100"]  # iotune tune's built-in arguments: 123 MB, 2 ranks
KEPT = ("summary.json", "trials.csv", "best.xml", "candidate.xml")
# Open MPI refuses to start as root without these (harmless otherwise)
ROOT_OK = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
IOTUNE = Path(sys.executable).with_name("iotune")


def env() -> dict[str, str]:
    return {**os.environ, **ROOT_OK}


def sh(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        return (out.stdout + out.stderr).strip()
    except OSError:
        return ""


def machine() -> dict:
    return {
        "host": platform.node(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "load_at_start": os.getloadavg(),
        "mpich": sh(["mpichversion"]).splitlines()[:1],
        "openmpi": sh(["ompi_info", "--version"]).splitlines()[:1],
        "fs": sh(["df", "-T", tempfile.gettempdir()]).splitlines()[-1:],
        "git": sh(["git", "-C", str(HERE.parent), "rev-parse", "HEAD"]),
    }


# ----------------------------------------------------------------------------- 1. the studies


def study_command(name: str, args: argparse.Namespace, out: Path) -> list[str]:
    family, space, _ = STUDIES[name]
    return [
        str(IOTUNE),
        "tune",
        "--kernel",
        KERNEL,
        "--mpi",
        family,
        "--space",
        str(space),
        "--trials",
        str(args.trials),
        "--verify-pairs",
        str(args.verify_pairs),
        "--seed",
        str(args.seed),
        "--timeout",
        "120",
        "--study",
        f"ompio-study-{name}",
        "--out",
        str(out),
        "--no-progress",
    ]


def run_study(name: str, args: argparse.Namespace, work: Path) -> dict:
    out = work / f"study-{name}"
    cwd = work / f"cwd-{name}"  # the kernel writes its file where it runs
    cwd.mkdir(parents=True, exist_ok=True)
    cmd = study_command(name, args, out)
    print(f"== study {name}: {shlex.join(cmd)}", flush=True)
    t0 = time.monotonic()
    with open(work / f"study-{name}.log", "w") as log:
        rc = subprocess.run(
            cmd, cwd=cwd, env=env(), stdout=log, stderr=subprocess.STDOUT
        ).returncode
    elapsed = time.monotonic() - t0
    print((work / f"study-{name}.log").read_text()[-3000:], flush=True)
    dest = OUT / name
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in KEPT:
        if (out / name).exists():
            shutil.copy2(out / name, dest / name)
    return {
        "command": shlex.join(cmd),
        "returncode": rc,
        "elapsed_s": round(elapsed, 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# ----------------------------------------------------------------------------- 2. re-measure


def tuned_config(name: str) -> tuple[Path | None, str]:
    """The study's best.xml, or its candidate.xml when best.xml is empty (the study's own test
    found no gain); (None, why) when there is neither."""
    for file in ("best.xml", "candidate.xml"):
        path = OUT / name / file
        if path.exists() and controlfile.parse_file(path).settings:
            return path, file
    return None, "no settings"


def settings_of(path: Path) -> dict[str, str]:
    return {s.name: s.value for s in controlfile.parse_file(path).settings}


def one_run(family: str, config: Path | None, cwd: Path) -> dict:
    build = paths.find_build(family)
    kernel = paths.find_kernel(KERNEL, family)
    prof = cwd / "profile.json"
    prof.unlink(missing_ok=True)
    cmd = [str(IOTUNE), "run", "--mpi", family]
    if config is not None:
        cmd += ["--config", str(config)]
    cmd += ["--", *build.launcher(2), str(kernel), *KERNEL_ARGS]
    start = time.monotonic()
    p = subprocess.run(
        cmd,
        cwd=cwd,
        env={**env(), "IOTUNE_PROFILE": str(prof)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    wall = time.monotonic() - start
    row: dict = {"returncode": p.returncode, "wall_s": round(wall, 4)}
    if p.returncode != 0:
        row["stderr"] = p.stderr[-1500:]
        return row
    m = objective.Measurement(
        wall, objective.read_profile(prof), objective.parse_results(p.stdout.splitlines())
    )
    row["io_time_s"] = m.profile_time
    row["kernel_s"] = m.kernel_time
    for f in cwd.glob("*.h5"):
        f.unlink()
    return row


def stats(values: list[float]) -> dict:
    s = noise.summary(values)
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in s.items()}


def remeasure(args: argparse.Namespace, work: Path) -> dict:
    """Each round runs every variant once, shuffled: the default of each MPI once, and the
    tuned settings of each study; a study's pairs are its tuned run and its MPI's default run
    of the same round."""
    tuned = {}
    for name in STUDIES:
        path, file = tuned_config(name)
        if path is None:
            print(f"{name}: no settings kept: not re-measured", flush=True)
            continue
        tuned[name] = {"mpi": STUDIES[name][0], "file": file, "config": path}
        # the whole winner the study verified, before the minimal step reduced it
        full = json.loads((OUT / name / "summary.json").read_text()).get("best_settings") or {}
        if full and full != settings_of(path):
            config = controlfile.write(work / f"{name}-full.xml", full)
            tuned[f"{name}:full"] = {
                "mpi": STUDIES[name][0],
                "file": "summary.json best_settings (before the minimal step)",
                "config": config,
            }
    families = sorted({t["mpi"] for t in tuned.values()})
    variants = [(f, "default", None) for f in families]
    variants += [(t["mpi"], name, t["config"]) for name, t in tuned.items()]
    rng = random.Random(args.seed)
    cwd = work / "remeasure"
    cwd.mkdir(parents=True, exist_ok=True)
    runs: list[dict] = []
    t0 = time.monotonic()
    for r in range(args.rounds):
        order = variants[:]
        rng.shuffle(order)
        for i, (family, variant, config) in enumerate(order):
            one_run(family, config, cwd)  # the discarded warm-up
            row = one_run(family, config, cwd)
            row.update({"round": r, "order": i, "mpi": family, "variant": variant})
            runs.append(row)
        print(f"round {r + 1}/{args.rounds} done, {time.monotonic() - t0:.0f} s", flush=True)
    results = {}
    for name, t in tuned.items():
        pairs = []
        for r in range(args.rounds):
            got = {
                x["variant"]: x
                for x in runs
                if x["round"] == r and x["mpi"] == t["mpi"] and x.get("io_time_s")
            }
            if "default" in got and name in got:
                pairs.append((got["default"], got[name]))
        out = {
            "mpi": t["mpi"],
            "component": STUDIES[name.split(":")[0]][2],
            "file": t["file"],
            "settings": settings_of(t["config"]),
            "pairs": len(pairs),
            "failed_runs": sum(
                1
                for x in runs
                if x["variant"] in (name, "default")
                and x["mpi"] == t["mpi"]
                and x["returncode"] != 0
            ),
        }
        for metric in ("io_time_s", "kernel_s"):
            base = [a[metric] for a, _ in pairs]
            new = [b[metric] for _, b in pairs]
            if not pairs:
                continue
            out[metric] = {
                "default": stats(base),
                "tuned": stats(new),
                "ratio_of_medians": round(statistics.median(base) / statistics.median(new), 3),
                "pair_ratios": stats([a / b for a, b in zip(base, new, strict=True)]),
                "tuned_won": sum(1 for a, b in zip(base, new, strict=True) if b < a),
                "p_tuned_faster": noise.paired_test(base, new, maximize=False),
                "p_tuned_slower": noise.paired_test(new, base, maximize=False),
            }
        results[name] = out
    return {
        "rounds": args.rounds,
        "warmup": "one discarded identical run before each measured run",
        "test": "one-sided exact sign-flip permutation test on the pairs' log ratios "
        "(iotune.search.noise.paired_test)",
        "elapsed_s": round(time.monotonic() - t0, 1),
        "results": results,
        "runs": runs,
    }


def table(rem: dict) -> str:
    lines = [
        "| study | MPI | I/O component (default) | default median s (min..max) | "
        "tuned median s (min..max) | ratio | p | pairs won | tuned settings |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rem["results"].items():
        m = r.get("io_time_s")
        if not m:
            continue
        settings = ", ".join(f"`{k}={v}`" for k, v in r["settings"].items())
        d, t = m["default"], m["tuned"]
        lines.append(
            f"| {name} | {r['mpi']} | {r['component']} | "
            f"{d['median']:.3f} ({d['min']:.3f}..{d['max']:.3f}) | "
            f"{t['median']:.3f} ({t['min']:.3f}..{t['max']:.3f}) | "
            f"{m['ratio_of_medians']:.2f} | {m['p_tuned_faster']:.3g} | "
            f"{m['tuned_won']}/{r['pairs']} | {r['file']}: {settings} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=24, help="trials per study")
    ap.add_argument("--verify-pairs", type=int, default=10, help="the studies' own test")
    ap.add_argument("--rounds", type=int, default=10, help="rounds of the re-measurement")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--studies",
        default=",".join(STUDIES),
        help=f"the studies to run (of {', '.join(STUDIES)}); the others' kept results are "
        "re-measured as they are",
    )
    ap.add_argument("--skip-studies", action="store_true", help="only re-measure kept results")
    ap.add_argument("--out", type=Path, help="results folder (default: results/ beside this)")
    args = ap.parse_args()
    global OUT
    OUT = args.out or OUT
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    names = [] if args.skip_studies else [n for n in args.studies.split(",") if n]
    unknown = [n for n in names if n not in STUDIES]
    if unknown:
        ap.error(f"unknown studies {unknown}: one of {', '.join(STUDIES)}")
    OUT.mkdir(parents=True, exist_ok=True)
    meta_path = OUT / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta.setdefault("studies", {})
    meta.update(
        {
            "command": shlex.join([sys.executable, *sys.argv]),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": machine(),
            "kernel": [KERNEL, *KERNEL_ARGS],
            "spaces": {n: str(s[1].relative_to(HERE.parents[1])) for n, s in STUDIES.items()},
        }
    )
    work = Path(tempfile.mkdtemp(prefix="iotune-ompio-study-"))
    try:
        for name in names:
            meta["studies"][name] = run_study(name, args, work)
            meta_path.write_text(json.dumps(meta, indent=2) + "\n")
        rem = remeasure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    meta["load_at_end"] = os.getloadavg()
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    (OUT / "remeasure.json").write_text(json.dumps(rem, indent=2) + "\n")
    text = table(rem)
    (OUT / "remeasure.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
