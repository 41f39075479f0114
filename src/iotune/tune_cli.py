"""The `iotune tune` subcommand (registered into iotune.cli by register(subparsers))."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

# built-in kernels and the arguments `--kernel NAME` runs them with (~0.3-1 s on 2 ranks here)
KERNEL_ARGS = {
    "gcrmio": ["--cells", "65536"],
    "vorpalio": ["--block", "160,160,100"],
    "vpicio": ["--particles", "1M"],
    "haccio": [],
    "iorio": [],
}
# The demonstration study. This machine is shared and noisy (shared/LAB-NOTES.md), so the demo
# verifies more carefully than the defaults: 8 rounds, each measured run after a discarded one.
DEMO = {"kernel": "gcrmio", "trials": 30, "verify_pairs": 8, "warmup": 1}

USAGE = """iotune tune [options] -- APP [ARG...]
       iotune tune [options] --kernel NAME
       iotune tune --demo"""

EPILOG = """examples:
  iotune tune --demo
      a real 30-trial study of the GCRM-IO kernel (2 ranks) ending in a report
  iotune tune --space local --trials 40 -n 2 -- ./my_app input.cfg
  iotune tune --strategy genetic --space sc13-lustre --launcher srun -n 512 \\
      --storage journal:/scratch/me/study.log --study vpic -- ./vpicio
      (start the same command in several SLURM jobs to share the study; add --search-only
       to all but one)
  iotune tune --study vpic --storage journal:/scratch/me/study.log --finish-only
      re-measure, verify and write the report of an existing study"""


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "tune",
        help="search for the fastest settings of an application (the study ends in a report)",
        description="Search the I/O settings of an application: a baseline run with the "
        "defaults, a search (model-based by default, or H5Evolve's genetic algorithm), the "
        "leading settings re-measured, default vs tuned measured interleaved with a "
        "significance test, and a report (best.xml, trials.csv, report.html). Studies are "
        "saved as they go: the same command continues an interrupted study.",
        usage=USAGE,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = p.add_argument_group("what to tune")
    what.add_argument(
        "--kernel",
        metavar="NAME",
        help="a built-in kernel ("
        + ", ".join(KERNEL_ARGS)
        + ") with built-in arguments, instead of APP",
    )
    what.add_argument(
        "--demo",
        action="store_true",
        help="the demonstration study: GCRM-IO kernel, space local, 30 trials",
    )
    what.add_argument(
        "--space",
        default="local",
        help="preset (local, sc13-lustre, gpfs) or a TOML file (default: local)",
    )
    what.add_argument("--show-space", action="store_true", help="print the space and exit")
    what.add_argument("command", nargs=argparse.REMAINDER, help="-- APP [ARG...]")

    how = p.add_argument_group("search")
    how.add_argument(
        "--strategy",
        default="default",
        choices=["default", "genetic", "random"],
        help="default: TPE warm-started with rules, capped; genetic: H5Evolve's "
        "GA (population 15, 40 generations, 15%% mutation); random",
    )
    how.add_argument("--trials", type=int, help="trials in the study (default: 30; genetic 600)")
    how.add_argument(
        "--objective",
        default="auto",
        choices=["auto", "io-time", "bandwidth", "wall", "kernel"],
        help="auto: profile's io.time_s, else the kernel's IOTUNE_RESULT time, else wall time",
    )
    how.add_argument(
        "--cap",
        type=float,
        metavar="FACTOR",
        help="stop a trial at FACTOR x the incumbent's time (default 2; 0 = off; off for genetic)",
    )
    how.add_argument(
        "--confirm",
        type=int,
        metavar="K",
        help="during the search, re-measure a configuration that takes the lead until it has "
        "K measurements (default 0: the leaders are re-measured at the end)",
    )
    how.add_argument("--seed", type=int)

    noise = p.add_argument_group("noise and verification")
    noise.add_argument("--leaders", type=int, default=3, help="leading settings re-measured")
    noise.add_argument("--repeat", type=int, default=3, help="re-measurements of each leader")
    noise.add_argument(
        "--verify-pairs",
        type=int,
        help="interleaved default/tuned rounds at the end (default 5; --demo 8)",
    )
    noise.add_argument(
        "--warmup",
        type=int,
        help="discarded runs before each measured run of the final phases (default 0; --demo 1)",
    )
    noise.add_argument(
        "--no-partial",
        action="store_true",
        help="skip partial tuning (each layer's tuned settings alone)",
    )

    run = p.add_argument_group("running trials")
    run.add_argument(
        "--launcher",
        choices=["mpiexec", "srun", "none"],
        help="how each trial starts the application: mpiexec -n N (default), srun -n N, or "
        "none (the command after -- is launched as it is; chosen by itself when it starts "
        "with mpiexec, mpirun or srun)",
    )
    run.add_argument("-n", "--nprocs", type=int, default=2, help="MPI ranks (default 2)")
    run.add_argument("--timeout", type=float, default=600.0, help="seconds per trial")
    run.add_argument(
        "--workdir",
        type=Path,
        help="where the trials' scratch directories go (default OUT/scratch): "
        "put it on the file system being tuned",
    )
    run.add_argument(
        "--sync",
        action="store_true",
        help="IOTUNE_SYNC=1: the runtime flushes files to the device before close",
    )
    run.add_argument(
        "--drop-caches",
        action="store_true",
        help="drop the page cache before each trial (root; for read trials)",
    )
    run.add_argument("--keep-scratch", action="store_true", help="keep scratch dirs (debug)")
    run.add_argument(
        "--no-preload",
        action="store_true",
        help="do not preload libiotune.so (the application applies IOTUNE_CONFIG "
        "itself; used by tests)",
    )

    store = p.add_argument_group("study and results")
    store.add_argument("--study", help="study name (default: the output directory's name)")
    store.add_argument(
        "--storage",
        help="sqlite:///PATH (default OUT/study.db), journal:PATH "
        "(shared file system), or postgresql://...",
    )
    store.add_argument("--out", type=Path, help="output directory (default iotune-results/<study>)")
    store.add_argument(
        "--search-only",
        action="store_true",
        help="only run search trials (extra workers of a shared study)",
    )
    store.add_argument(
        "--finish-only",
        action="store_true",
        help="no search: re-measure, verify and report an existing study",
    )
    store.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_tune)
    return p


def _error(message: str) -> int:
    print(f"iotune tune: {message}", file=sys.stderr)
    return 2


def _app(args: argparse.Namespace) -> list[str] | None:
    from iotune import paths

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if args.kernel:
        if command:
            raise ValueError("give either --kernel or a command after --, not both")
        return [str(paths.find_kernel(args.kernel)), *KERNEL_ARGS.get(args.kernel, [])]
    return command or None


LAUNCHER_PROGRAMS = ("mpiexec", "mpirun", "srun", "aprun", "jsrun", "mpiexec.hydra")


def _launcher(chosen: str | None, app: list[str] | None) -> str:
    """The launcher: as chosen, else none when the command starts with a launcher of its own
    (iotune tune -- mpiexec -n 64 ./app), else mpiexec."""
    if chosen:
        return chosen
    if app and Path(app[0]).name in LAUNCHER_PROGRAMS:
        return "none"
    return "mpiexec"


def cmd_tune(args: argparse.Namespace) -> int:
    from iotune import paths, space, study
    from iotune.storage import redact

    if args.demo:
        args.kernel = args.kernel or DEMO["kernel"]
        args.trials = args.trials or DEMO["trials"]
        args.verify_pairs = args.verify_pairs or DEMO["verify_pairs"]
        args.warmup = DEMO["warmup"] if args.warmup is None else args.warmup
        args.study = args.study or time.strftime("demo-%Y%m%d-%H%M%S")
        args.out = args.out or Path("iotune-results") / "demo"
    try:
        sp = space.load(args.space)
    except space.SpaceError as e:
        return _error(str(e))
    if args.show_space:
        print("\n".join(space.describe(sp)))
        return 0
    try:
        app = _app(args)
    except (ValueError, paths.NotFound) as e:
        return _error(str(e))
    if app is None and not args.finish_only:
        return _error("give the application after -- (or --kernel NAME, or --demo)")
    args.verify_pairs = 5 if args.verify_pairs is None else args.verify_pairs
    args.warmup = 0 if args.warmup is None else args.warmup
    if args.verify_pairs < 1:
        return _error("--verify-pairs must be at least 1")
    name = args.study or (Path(app[0]).name if app else None)
    if name is None:
        return _error("--finish-only needs --study")
    out = args.out or Path("iotune-results") / name
    cfg = study.TuneConfig(
        app=app or [],
        out=out,
        space=sp,
        strategy=args.strategy,
        trials=args.trials,
        objective=args.objective,
        launcher=_launcher(args.launcher, app),
        nprocs=args.nprocs,
        timeout=args.timeout,
        cap=args.cap,
        confirm=args.confirm,
        leaders=args.leaders,
        repeat=args.repeat,
        verify_pairs=args.verify_pairs,
        warmup=args.warmup,
        partial=not args.no_partial,
        study_name=name,
        storage=args.storage,
        workdir=args.workdir,
        sync=args.sync,
        drop_caches=args.drop_caches,
        seed=args.seed,
        keep_scratch=args.keep_scratch,
        preload=not args.no_preload,
    )
    out.mkdir(parents=True, exist_ok=True)
    previous = signal.signal(signal.SIGTERM, _terminate)  # e.g. a SLURM job reaching its end
    try:
        return _run(cfg, args)
    except study.StudyError as e:
        return _error(str(e))
    except KeyboardInterrupt:
        print(
            f"\niotune tune: interrupted; run the same command again to continue the study "
            f"{cfg.name!r} ({redact(study.storage_url(cfg))})",
            file=sys.stderr,
        )
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminate(signum, frame):
    """SIGTERM ends the study like Ctrl-C: the running trial is stopped and cleaned up."""
    raise KeyboardInterrupt


def _run(cfg, args: argparse.Namespace) -> int:
    from iotune import paths, storage, study, trial

    s, created = study.open_study(cfg, adopt=args.finish_only)
    if args.finish_only and created:
        return _error(f"no study {cfg.name!r} in {storage.redact(study.storage_url(cfg))}")
    stale = study.recover_stale(s)
    trial.clean_stale(study.trial_options(cfg).workdir)
    say = print
    say(
        f"iotune tune: study {cfg.name!r} ({'new' if created else 'continued'}), "
        f"space {cfg.space.name} ({len(cfg.space.dims)} parameters), strategy {cfg.strategy}, "
        f"{cfg.budget} trials, objective {cfg.objective}"
    )
    if stale:
        say(f"iotune tune: {stale} trial(s) of a stopped run marked as interrupted")
    command = trial.launch_command(cfg.launcher, cfg.nprocs, cfg.app)
    say(f"iotune tune: each trial runs: {' '.join(command)}")
    opts = study.trial_options(cfg)
    if opts.preload:
        try:
            opts.lib = paths.find_library()
        except paths.NotFound as e:
            return _error(str(e))

    def evaluate(settings, cap):
        return trial.run_trial(settings, opts, cap)

    if not args.finish_only:
        _search(cfg, s, evaluate, not args.no_progress)
        inert = s.user_attrs.get("inert", {})
        if inert:
            reasons = sorted(set(inert.values()))
            for why in reasons:
                names = ", ".join(sorted(k for k, v in inert.items() if v == why))
                say(f"iotune tune: not searched ({why}): {names}")
    if args.search_only:
        say("iotune tune: search done (--search-only: no verification or report)")
        return 0
    summary = study.finish(cfg, s, evaluate, log=lambda m: say(f"iotune tune: {m}"))
    say(f"iotune tune: {summary['verdict']}")
    say(
        f"iotune tune: report {cfg.out / 'report.html'}; best settings {cfg.out / 'best.xml'}; "
        f"all trials {cfg.out / 'trials.csv'}"
    )
    return 0


def _search(cfg, s, evaluate, progress: bool) -> None:
    from iotune import objective
    from iotune.search import loop
    from iotune.study import search

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=cfg.budget,
            initial=min(loop.used(s), cfg.budget),
            unit="trial",
            desc="tuning",
            dynamic_ncols=True,
        )
    unit = objective.unit(cfg.objective)

    def on_trial(p: loop.Progress) -> None:
        if bar is None:
            return
        bar.n = min(p.done, p.budget)
        best = f"{p.best:.4g} {unit}" if p.best is not None else "-"
        bar.set_postfix_str(f"best {best}, last {p.status}", refresh=False)
        bar.refresh()

    try:
        search(cfg, s, evaluate, on_trial)
    finally:
        if bar is not None:
            bar.close()


def main(argv: list[str] | None = None) -> int:
    """`python -m iotune.tune_cli ...` works like `iotune tune ...`."""
    parser = argparse.ArgumentParser(prog="iotune")
    sub = parser.add_subparsers(dest="cmd")
    register(sub)
    args = parser.parse_args(["tune", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
