#!/usr/bin/env python3
"""Measure a real tuning landscape once: every configuration of a grid space, for two kernels,
with repetitions, run through iotune's own trial machinery (mpiexec -n 2, runtime preloaded,
scratch directory per run, removed afterwards).

Order: in each round every (kernel, configuration) pair runs once, in a shuffled order, so that
slow phases of the machine spread over all configurations instead of biasing a few.

Output (appended row by row, so an interrupted run keeps what it measured):
  bench/measure_landscape/landscape.csv        kernel, config, settings, round, status, value_s,
  wall_s, ...
  bench/measure_landscape/landscape-meta.json  machine, command, kernels' arguments, start and end
  time

--sync: every run flushes its files to the device before close (IOTUNE_SYNC=1, `iotune tune
--sync`), so a run's time is not the page cache's mood: GCRM-IO's runs varied by a median CV of
0.5 per configuration without it (bench/README.md, "Knowledge base").

--drop-caches: sync and empty the page cache right before each run (root). On this VM a run
that follows a dropped cache writes at one steady speed; without it the same run lands in a
fast or a 3-10x slower mode depending on what the machine's memory did before (bench/README.md,
"The page cache's two modes"). --hold-freed-memory (root) removes the cause of those modes on
such a VM: freed memory stays in the VM while measuring (bench/freed_memory/freed_memory.py).

Any program (--command): a command template and a grid space file; the CSV's kernel column
then holds --label. The template is split like a shell line; its placeholders:
  {mpiexec}  the launcher of --mpi's build with its flags and -n --nprocs (several words)
  {kernels}  that build's kernels directory      {work}  the measurement's working directory
--setup runs once (same placeholders, defaults, no runtime preloaded) before the rounds, e.g.
to write the file that a read-only landscape reads; --isolate runs each trial in its own
scratch directory (removed afterwards), for programs that write into their working directory.

Usage: nice -n 10 .venv/bin/python bench/measure_landscape/measure_landscape.py [--rounds 4]
           [--out bench/measure_landscape] [--kernels gcrmio] [--sync] [--drop-caches] [--name NAME]
       nice -n 5 .venv/bin/python bench/measure_landscape/measure_landscape.py --name NAME
           --label ior-hdf5 --space bench/measure_landscape/spaces/grid-ior-hdf5.toml
           --command "{mpiexec} /tmp/ior/src/ior -a HDF5 -b 16m -t 1m -w -o t.h5" --isolate
           [--objective auto] [--mpi openmpi] [--setup "..."] [--drop-caches --hold-freed-memory]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import platform
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iotune import interrupt, paths, space, trial

HERE = Path(__file__).resolve().parent
SMOKE_CONFIGS = 3  # --smoke's configurations
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

sys.path.insert(0, str(HERE.parent / "freed_memory"))
import freed_memory  # noqa: E402

KERNELS = {
    # kernel: (arguments, grid space). Sizes chosen for ~0.2-0.6 s runs on the 2-core VM.
    "gcrmio": (["--cells", "65536"], HERE / "spaces" / "grid-gcrmio.toml"),
    "vorpalio": (["--block", "160,160,100"], HERE / "spaces" / "grid-vorpalio.toml"),
}
FIELDS = [
    "kernel",
    "config",
    "settings",
    "round",
    "order",
    "status",
    "value_s",
    "wall_s",
    "source",
    "bytes",
    "bytes_read",
    "bytes_written",
]


def grid(sp: space.Space) -> list[dict[str, str]]:
    """The control-file settings of every allowed configuration of a space."""
    out = []
    for values in itertools.product(*(d.values for d in sp.dims)):
        config = dict(zip(sp.names(), values, strict=True))
        for t in sp.ties:
            config[t.name] = config[t.to]
        if sp.forbidden(config) is None:
            out.append(sp.settings_of(config))
    return out


def machine(build: paths.Build) -> dict:
    def run(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            return ""

    return {
        "host": platform.node(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "mpi": run([build.launcher(None)[0], "--version"]).splitlines()[:2],
        "fs": run(["df", "-T", tempfile.gettempdir()]).splitlines()[-1:],
        "git": run(["git", "-C", str(HERE.parent), "rev-parse", "HEAD"]),
    }


def wait_for_load(max_load: float | None, pause_s: float = 5.0) -> float:
    """Seconds waited until the 1-minute load average is at most max_load (None: no wait)."""
    waited = 0.0
    while max_load is not None and os.getloadavg()[0] > max_load:
        time.sleep(pause_s)
        waited += pause_s
    return waited


def measure(
    jobs: list,
    opts: dict,
    rounds: int,
    first_round: int,
    seed: int,
    csv_path: Path,
    max_load: float | None = None,
) -> float:
    """Every (kernel, configuration) once per round, in a shuffled order; rows appended as
    they come. Before each run, waits while the machine's load is above max_load (returns the
    seconds waited)."""
    waited = 0.0
    rng = random.Random(seed)
    total = len(jobs) * rounds
    done = 0
    t0 = time.monotonic()
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for r in range(rounds):
            order = jobs[:]
            rng.shuffle(order)
            for i, (k, settings) in enumerate(order):
                waited += wait_for_load(max_load)
                o = trial.run_trial(settings, opts[k])
                w.writerow(
                    {
                        "kernel": k,
                        "config": space.config_key(settings),
                        "settings": json.dumps(settings, sort_keys=True),
                        "round": r + first_round,
                        "order": i,
                        "status": o.status,
                        "value_s": "" if o.value is None else f"{o.value:.6f}",
                        "wall_s": f"{o.wall_s:.4f}",
                        "source": o.source or "",
                        "bytes": o.metrics.get("kernel_bytes", ""),
                        "bytes_read": o.metrics.get("bytes_read", ""),
                        "bytes_written": o.metrics.get("bytes_written", ""),
                    }
                )
                f.flush()
                done += 1
                if done % 50 == 0:
                    el = time.monotonic() - t0
                    left = el / done * (total - done)
                    print(f"{done}/{total} runs, {el:.0f} s, ~{left:.0f} s left", flush=True)
    return waited


def expand(template: str, build: paths.Build, nprocs: int, work: Path) -> list[str]:
    """The words of a command template (see the docstring's placeholders)."""
    out: list[str] = []
    for word in shlex.split(template):
        if word == "{mpiexec}":
            out += build.launcher(nprocs)
            continue
        kernels = str(paths.find_kernels_dir(build.family)) if "{kernels}" in word else ""
        out.append(word.replace("{kernels}", kernels).replace("{work}", str(work)))
    return out


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--first-round",
        type=int,
        default=0,
        help="number of the first round (to add rounds to an earlier measurement)",
    )
    ap.add_argument("--name", default="landscape", help="output file names (NAME.csv ...)")
    ap.add_argument("--command", help="a program's command template (instead of --kernels)")
    ap.add_argument("--space", type=Path, help="the grid space file of --command (a path, or a "
                    "file name of spaces/)")  # fmt: skip
    ap.add_argument("--label", help="the kernel column's value for --command")
    ap.add_argument("--setup", help="a command template run once before the rounds")
    ap.add_argument("--objective", help="the trials' objective (kernels: kernel; --command: auto)")
    ap.add_argument("--mpi", choices=["mpich", "openmpi"], help="the MPI family (default: the "
                    "runtime's)")  # fmt: skip
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--isolate", action="store_true", help="each trial in its own scratch dir")
    ap.add_argument("--timeout", type=float, default=120.0, help="one run's limit (s)")
    ap.add_argument("--max-load", type=float, help="before each run, wait while the 1-minute "
                    "load average is above this (a neighbour's burst)")  # fmt: skip
    ap.add_argument("--sync", action="store_true", help="flush files before close (IOTUNE_SYNC)")
    ap.add_argument(
        "--drop-caches",
        action="store_true",
        help="sync and drop the page cache before each run (root; see the docstring)",
    )
    ap.add_argument(
        "--hold-freed-memory",
        action="store_true",
        help="keep freed memory in the VM while measuring (root; bench/freed_memory/)",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="does it run? (CI): GCRM-IO at a tiny size, 3 configurations, one round",
    )
    args = ap.parse_args()
    if args.command and not (args.space and args.label):
        ap.error("--command needs --space and --label")
    if (args.space or args.label or args.setup) and not args.command:
        ap.error("--space, --label and --setup go with --command")
    if args.smoke and not args.command:
        KERNELS["gcrmio"] = (["--cells", "2048"], KERNELS["gcrmio"][1])
        args.kernels = "gcrmio"
    if args.smoke:
        args.rounds = 1
    if args.drop_caches and not trial.drop_caches():
        ap.error("--drop-caches: /proc/sys/vm/drop_caches is not writable here (root only)")
    if args.space and not args.space.exists() and (HERE / "spaces" / args.space).is_file():
        args.space = HERE / "spaces" / args.space  # a name of spaces/
    try:
        build = paths.find_build(args.mpi) if args.mpi else mpitools.runtime_build()
        # the runtime: --mpi's build, else as iotune finds it ($IOTUNE_LIB first)
        lib = build.lib if args.mpi else paths.find_library()
        programs = (
            {args.label: args.space.resolve()}
            if args.command
            else {k: KERNELS[k][1] for k in args.kernels.split(",")}
        )
        spaces = {k: space.load(f) for k, f in programs.items()}
    except KeyError as e:
        ap.error(f"unknown kernel {e} (one of {', '.join(KERNELS)})")
    except (paths.NotFound, space.SpaceError, OSError) as e:
        ap.error(str(e))
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(k, settings) for k, sp in spaces.items() for settings in grid(sp)]
    if args.smoke:
        jobs = jobs[:SMOKE_CONFIGS]
    work = Path(tempfile.mkdtemp(prefix="iotune-landscape-")).resolve()
    if args.command:
        commands = {args.label: expand(args.command, build, args.nprocs, work)}
    else:
        commands = {
            k: [
                *build.launcher(args.nprocs),
                str(paths.find_kernel(k, build.family)),
                *KERNELS[k][0],
            ]
            for k in programs
        }
    objective = args.objective or ("auto" if args.command else "kernel")

    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(HERE))
        except ValueError:
            return str(p)

    meta = {
        "command": shlex.join([sys.executable, *sys.argv]),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "uptime_before": uptime(),
        "machine": machine(build),
        "mpi_family": build.family,
        "runtime": str(lib),
        "launch": f"{' '.join(build.launcher(args.nprocs))} (MPI family {build.family}), "
        f"libiotune.so preloaded, objective = {objective}"
        + (", each run in its own scratch directory" if args.isolate else "")
        + (", IOTUNE_SYNC=1" if args.sync else "")
        + (", page cache dropped before each run" if args.drop_caches else ""),
        "load_before": os.getloadavg(),
        "max_load": args.max_load,
        "kernels": {
            k: {"command": commands[k], "space": rel(f)}
            | ({} if args.command else {"args": KERNELS[k][0]})
            for k, f in programs.items()
        },
        "configurations": len(jobs),
        "rounds": args.rounds,
    }
    csv_path = args.out / f"{args.name}.csv"
    meta_path = args.out / f"{args.name}-meta.json"
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    if args.setup:
        setup = expand(args.setup, build, args.nprocs, work)
        meta["setup"] = setup
        r = subprocess.run(setup, cwd=work, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            shutil.rmtree(work, ignore_errors=True)
            sys.exit(f"measure_landscape: --setup failed (exit {r.returncode}): "
                     f"{(r.stderr or r.stdout)[-500:]}")  # fmt: skip
    opts = {
        k: trial.TrialOptions(
            cmd,
            work,
            cwd=work,
            isolate=args.isolate,
            objective=objective,
            timeout=args.timeout,
            sync=args.sync,
            drop_caches=args.drop_caches,
            lib=lib,
        )
        for k, cmd in commands.items()
    }
    t0 = time.monotonic()
    try:
        # SIGTERM/SIGHUP as Ctrl-C: the running trial's processes stopped, the hold released
        with interrupt.handlers(), freed_memory.maybe_hold(args.hold_freed_memory) as held:
            meta["freed_memory"] = held
            meta["waited_for_load_s"] = measure(
                jobs, opts, args.rounds, args.first_round, args.seed, csv_path, args.max_load
            )
        status = 0
    except KeyboardInterrupt as e:  # the rows measured so far are in the CSV
        meta["interrupted"] = str(e) or "SIGINT"
        status = interrupt.exit_status(e)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    meta["elapsed_s"] = round(time.monotonic() - t0, 1)
    meta["load_after"] = os.getloadavg()
    meta["uptime_after"] = uptime()
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
