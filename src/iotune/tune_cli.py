"""The `iotune tune` subcommand (registered into iotune.cli by register(subparsers))."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from iotune.cmdline import mpi_option
from iotune.storage import GRACE_BEATS, HEARTBEAT_S

# built-in kernels and the arguments `--kernel NAME` runs them with (~0.3-1 s on 2 ranks here)
KERNEL_ARGS = {
    "gcrmio": ["--cells", "65536"],
    "vorpalio": ["--block", "160,160,100"],
    "vpicio": ["--particles", "1M"],
    "haccio": [],
    "iorio": [],
}
# The demonstration study, kept short: 10 verification pairs (15 while tuned leads) and no
# warm-up runs (the sequential test takes more pairs when the noise needs them; the
# minimal-recommendation step measures every setting's removal, and warm-ups would double it).
DEMO = {"kernel": "gcrmio", "trials": 30, "verify_pairs": 10, "warmup": 0}

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
        "leading settings re-measured, default vs tuned measured in interleaved pairs until a "
        "sequential signed-rank test decides, the winner reduced to the settings that carry its "
        "gain, "
        "and a report (best.xml, trials.csv, report.html). Trials run in the current "
        "directory, as the command would in your shell. Studies are saved as they go: the "
        "same command continues an interrupted study.",
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
        + ") with built-in arguments, instead of APP (default: none, the command after --)",
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
        default="tpe",
        choices=["tpe", "local", "genetic", "random"],
        help="tpe (default): TPE warm-started with the baseline's insights and rule-based "
        "guesses, capped, its whole budget, the winner reduced to the settings that carry the "
        "gain; local: the same guesses, then local search around the best found, stopping "
        "early (--min-gain), the leaders raced at the end (fewer runs, less reliable on a "
        "noisy machine: docs/tune.md); genetic: H5Evolve's GA (population 15, 40 "
        "generations, 15%% mutation); random",
    )
    how.add_argument("--trials", type=int, help="trials in the study (default: 30; genetic 600)")
    how.add_argument(
        "--objective",
        default="auto",
        choices=["auto", "io-time", "write", "read", "bandwidth", "wall", "kernel"],
        help="auto (default): the whole run's I/O time (the profile's io.time_s, else the "
        "kernel's IOTUNE_RESULT time, else wall time); io-time: the profile's only; write, "
        "read: that phase alone; wall: launch to exit; bandwidth; kernel",
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
    how.add_argument(
        "--seed",
        type=int,
        help="seed of the search and of the final phases' order (default: none, a fresh "
        "random seed each run)",
    )
    how.add_argument(
        "--warm-start",
        choices=["kb"],
        help="kb: profile the application once and try the settings of the nearest motifs "
        "stored in the knowledge base first (docs/kb.md); default: none, the space's "
        "rule-based guesses only",
    )

    noise = p.add_argument_group("noise and verification")
    noise.add_argument(
        "--leaders",
        type=int,
        help="leading settings re-measured (default 3; 2 for the default strategy, which races "
        "them against each other and the defaults)",
    )
    noise.add_argument(
        "--repeat", type=int, default=3, help="re-measurements of each leader (default 3)"
    )
    noise.add_argument(
        "--verify-pairs",
        type=int,
        help="default/tuned pairs of the final sequential test: it stops once the difference "
        "is significant or cannot become so, at this many pairs unless tuned leads by "
        "--min-gain, then at half as many again (5 to 50; default 20)",
    )
    noise.add_argument(
        "--warmup",
        type=int,
        help="discarded runs before each measured run of the final phases (default 0, also "
        "for --demo)",
    )
    noise.add_argument(
        "--hold-freed-memory",
        action="store_true",
        help="on a VM that gives freed memory back to its host (free page reporting), keep it "
        "in the VM during the study and restore the setting at its end (root; default: off; "
        'docs/tune.md, "Noise on this machine")',
    )
    noise.add_argument(
        "--min-gain",
        type=float,
        default=5.0,
        metavar="PERCENT",
        help="the smallest gain worth recommending, in percent: the default strategy's search "
        "stops once the rest of the space cannot plausibly beat the best found by it, and a "
        "setting stays in best.xml beside others only when its own contribution is shown to "
        "reach it (docs/tune.md, Stopping early, A second setting; 0: search the whole budget, "
        "keep any measurable contribution; default 5)",
    )
    noise.add_argument(
        "--no-partial",
        action="store_true",
        help="keep every setting of the winner (do not measure which ones carry the gain, nor "
        "add the settings the search's trials favour)",
    )

    run = p.add_argument_group("running trials")
    run.add_argument(
        "--launcher",
        metavar="LAUNCHER",
        help="how each trial starts the application: a template such as "
        '"mpirun.openmpi --oversubscribe -n {n}", srun (srun -n N), mpiexec (the one on PATH), '
        "or none (the command after -- is launched as it is: chosen by itself when it starts "
        "with a launcher, e.g. mpirun.openmpi, mpiexec.hydra, srun, flux run); default: the "
        "launcher of the runtime's MPI",
    )
    mpi_option(run, "the runtime (and kernels) of this MPI family; default: the application's MPI")
    run.add_argument("-n", "--nprocs", type=int, default=2, help="MPI ranks (default 2)")
    run.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds a trial may run before it is stopped and failed (default 600)",
    )
    run.add_argument(
        "--isolate",
        action="store_true",
        help="run each trial in a scratch directory of its own (deleted after it) instead of "
        "the current directory; the program and arguments naming existing files are made "
        "absolute first (implied by --search-only and --workdir)",
    )
    run.add_argument(
        "--workdir",
        type=Path,
        help="where the trials' own files and (isolated) scratch directories go (default "
        "OUT/scratch): put it on the file system being tuned",
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
    store.add_argument(
        "--study",
        type=_study_name,
        help="study name (default: the application's program, after the launcher and its "
        "options, plus a short hash of the whole command: `mpiexec -n 2 ./app x` -> app-1a2b3c4d)",
    )
    store.add_argument(
        "--allow-other-command",
        action="store_true",
        help="continue a study or output directory made by a different command (refused "
        "otherwise: it would mix two applications' timings)",
    )
    store.add_argument(
        "--restart",
        action="store_true",
        help="discard the study's trials and start it again with this run's options (a study "
        'is never continued with other measurement options: docs/tune.md, "Resuming")',
    )
    store.add_argument(
        "--storage",
        help="sqlite:///PATH (default OUT/study.db), journal:PATH "
        "(shared file system), or postgresql://...",
    )
    store.add_argument(
        "-o", "--out", type=Path, help="output directory (default iotune-results/<study>)"
    )
    store.add_argument(
        "--heartbeat",
        type=int,
        default=HEARTBEAT_S,
        metavar="S",
        help=f"seconds between a running trial's heartbeats (default {HEARTBEAT_S}); a trial "
        f"silent for {GRACE_BEATS} of them (its worker killed, its node lost) is failed by the "
        "next worker or finisher; 0: none. Give every worker of a study the same value",
    )
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
    store.add_argument(
        "--kb",
        metavar="PATH|URL",
        help="the knowledge base the finished study is filed in (default $IOTUNE_KB, else the "
        "PostgreSQL server of --storage, else ~/.local/share/iotune/kb.sqlite)",
    )
    store.add_argument(
        "--no-kb", action="store_true", help="do not file the finished study in the knowledge base"
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
        kernel = paths.find_kernel(args.kernel, args.mpi)
        return [str(kernel), *KERNEL_ARGS.get(args.kernel, [])]
    return command or None


def _launcher(chosen: str | None, app: list[str] | None, build=None) -> str:
    """The launcher: as chosen, else none when the command starts with a launcher of its own
    (iotune tune -- mpirun.openmpi -n 64 ./app), else that of the runtime's MPI."""
    from iotune import launch

    if chosen:
        return chosen
    if app and launch.is_launcher(app):
        return "none"
    return launch.default_launcher(build) if build is not None else "mpiexec"


def _component_space(sp, family, template: str, app, nprocs):
    """The space of what the MPI-IO component in force reads (mpifamily.space_for), and the
    component said on the console with what it leaves out."""
    from iotune import launch, mpifamily

    command = launch.launch_command(template, nprocs, app) if app else []
    component, why = mpifamily.io_component(command, family)
    narrowed = mpifamily.space_for(sp, family, component)
    if component:
        left = [n for n in sp.names() if n not in narrowed.names()]
        what = "ROMIO-only hints" if component == "ompio" else "Open MPI's MCA parameters"
        print(
            f"iotune tune: MPI-IO component {mpifamily.COMPONENT_NAMES[component]} ({why})"
            + (f"; not searched, {what}: {', '.join(left)}" if left else "")
        )
    return narrowed


def _study_name(text: str) -> str:
    """A study's name, which also names its directory under --out's parent (iotune-results/
    NAME): one path component, so that it cannot point elsewhere."""
    if not text.strip() or text in (".", "..") or "/" in text or any(c < " " for c in text):
        raise argparse.ArgumentTypeError(
            f"{text!r} cannot name a study: give a non-empty name without '/' or control "
            "characters (it names the study's directory)"
        )
    return text


def cmd_tune(args: argparse.Namespace) -> int:
    from iotune import identity, mpifamily, pairs, paths, space, tune_config
    from iotune.search import sequential

    if args.demo:
        args.kernel = args.kernel or DEMO["kernel"]
        args.trials = args.trials or DEMO["trials"]
        args.verify_pairs = args.verify_pairs or DEMO["verify_pairs"]
        args.warmup = DEMO["warmup"] if args.warmup is None else args.warmup
        args.study = args.study or time.strftime("demo-%Y%m%d-%H%M%S")
        args.out = args.out or Path("iotune-results") / "demo"
        args.allow_other_command = True  # each demo is a study of its own in one directory
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
    if app is None and not args.study:
        return _error("--finish-only needs --study (or the command)")
    if args.restart and (args.finish_only or args.search_only):
        return _error(
            f"--restart with {'--finish-only' if args.finish_only else '--search-only'}: "
            "restart the study once, in a run of its own (workers would discard each other's "
            "trials)"
        )
    try:  # the runtime of the application's MPI, and the parameters that MPI has
        choice = mpifamily.choose(app, args.mpi)
    except paths.NotFound as e:
        if not args.no_preload:
            return _error(str(e))
        choice = None
    template = _launcher(args.launcher, app, choice.launcher_build() if choice else None)
    if choice is not None:
        print(f"iotune tune: {choice.describe()}")
        sp = _component_space(sp, choice.family, template, app, args.nprocs)
    # values that cost more than this machine allows are never proposed (iotune.costs; the
    # runtime would withdraw them): all ranks are counted on this host, disk in the workdir
    from iotune import costs

    sp, dropped = costs.bounded_space(
        sp, costs.machine_budget(args.nprocs, args.workdir or args.out or ".")
    )
    for line in dropped:
        print(f"iotune tune: {line}", file=sys.stderr)
    if not 0 <= args.min_gain < 100 or args.min_gain != args.min_gain:
        return _error(f"--min-gain {args.min_gain:g}: a percentage from 0 to below 100")
    args.verify_pairs = sequential.MAX_PAIRS if args.verify_pairs is None else args.verify_pairs
    args.warmup = 0 if args.warmup is None else args.warmup
    problem = pairs.check_verify_pairs(args.verify_pairs)
    if problem:
        return _error(problem)
    cfg = tune_config.TuneConfig(
        app=app or [],
        out=Path("."),
        space=sp,
        strategy=args.strategy,
        trials=args.trials,
        objective=args.objective,
        launcher=template,
        nprocs=args.nprocs,
        timeout=args.timeout,
        cap=args.cap,
        confirm=args.confirm,
        leaders=args.leaders,
        repeat=args.repeat,
        verify_pairs=args.verify_pairs,
        warmup=args.warmup,
        partial=not args.no_partial,
        min_gain=args.min_gain / 100,
        study_name=args.study,
        storage=args.storage,
        workdir=args.workdir,
        sync=args.sync,
        drop_caches=args.drop_caches,
        seed=args.seed,
        keep_scratch=args.keep_scratch,
        preload=not args.no_preload,
        isolate=args.isolate or args.search_only or args.workdir is not None,
        allow_other_command=args.allow_other_command,
        restart=args.restart,
        search_only=args.search_only,
        finish_only=args.finish_only,
        lib=choice.lib if choice else None,
        kb=args.kb,
        remember=not args.no_kb,
        warm_start_kb=args.warm_start == "kb",
        heartbeat=args.heartbeat,
        hold_freed_memory=args.hold_freed_memory,
    )
    cfg.out = args.out or Path("iotune-results") / cfg.name
    for what, where in (("--out", cfg.out), ("--workdir", cfg.workdir)):
        if where is not None and where.exists() and not where.is_dir():
            return _error(f"{what} {where} is not a directory")
    # a run refused before it ran anything (another holds --out, a wrong launcher, no such
    # study) removes the directories it made: it leaves no new file or directory behind (one
    # that ran anything leaves its study there)
    made = identity.new_directories(cfg.out, cfg.workdir)
    status = 1
    try:
        status = _made(cfg, args)
        return status
    finally:
        if status != 0:
            identity.remove_unused(made)


def _fault_advice(why: str, cfg) -> str:
    """What to do about a storage or output fault (storage.fault's line): a damaged or foreign
    file cannot be continued, a missing directory has nothing saved; room or rights can."""
    low = why.lower()
    if "malformed" in low or "not a database" in low:
        return ("the study storage is damaged or not an SQLite database: give another "
                "--storage (or remove it to start the study anew)")  # fmt: skip
    if "unable to open database file" in low:
        return ("the study storage cannot be opened: check that its directory exists and is "
                "writable, then run the same command again")  # fmt: skip
    return (f"what was saved before stays ({cfg.out}); make room (or make it writable) and run "
            f"the same command again to continue the study {cfg.name!r}")  # fmt: skip


def _made(cfg, args: argparse.Namespace) -> int:
    """cmd_tune once its options are read: the directories made, the study run."""
    from iotune import interrupt, storage, study

    for what, where in (("--out", cfg.out), ("--workdir", cfg.workdir)):
        try:
            if where is not None:
                where.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # no permission, a full or read-only disk
            return _error(f"{what} {where}: cannot make the directory: {e.strerror}")
    # SIGTERM (e.g. a SLURM job reaching its end) ends the study like Ctrl-C: the running trial
    # is stopped and cleaned up (iotune.interrupt's handlers, installed by iotune.cli.main)
    try:
        return _run(cfg, not args.no_progress)
    except study.StudyError as e:
        print(f"iotune tune: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a full disk, a read-only store: one message, the study kept
        why = storage.fault(e, study.storage_url(cfg))
        if why is None:
            raise
        print(f"iotune tune: {why}\niotune tune: {_fault_advice(why, cfg)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        status = interrupt.exit_status(e)
        print(
            f"\niotune tune: stopped by {interrupt.name(status - 128)}; run the same command "
            f"again to continue the study {cfg.name!r} "
            f"({storage.redact(study.storage_url(cfg))})",
            file=sys.stderr,
        )
        return status


def _run(cfg, progress: bool) -> int:
    import contextlib

    from iotune import hostnoise, identity, study

    def say(message: str) -> None:
        print(f"iotune tune: {message}", flush=True)

    study.check_launch(cfg, say)  # a wrong launcher: its one message, before anything else
    alone = contextlib.nullcontext()
    if not cfg.search_only:  # one run at a time writes a study's results
        alone = identity.running_alone(cfg.out)
    shared = contextlib.nullcontext()
    if not cfg.isolate:  # its trials run in the user's directory: one study at a time there
        shared = identity.trials_alone(cfg.cwd, cfg.name, cfg.out)
    # the machine's own noise, said once before the first trial; freed memory held if asked,
    # restored when the study ends, fails or is interrupted
    try:
        with (
            alone,
            shared,
            hostnoise.controlled(
                cfg.nprocs or 1, cfg.hold_freed_memory, cfg.warmup, cfg.drop_caches, say
            ) as cfg.host_noise,
        ):
            return _run_study(cfg, progress, say)
    except identity.Busy as e:
        print(f"iotune tune: {e}", file=sys.stderr)
        return 1


def _run_study(cfg, progress: bool, say) -> int:
    from iotune import hostnoise, objective, study
    from iotune.report import table
    from iotune.search import loop

    bar = None
    if progress and not cfg.finish_only:
        from tqdm import tqdm

        bar = tqdm(total=cfg.budget, unit="trial", desc="tuning", dynamic_ncols=True)
    unit = objective.unit(cfg.objective)

    def on_trial(p: loop.Progress) -> None:
        if bar is None:
            return
        bar.n = min(p.done, p.budget)
        best = f"{p.best:.4g} {unit}" if p.best is not None else "-"
        bar.set_postfix_str(f"best {best}, last {p.status}", refresh=False)
        bar.refresh()

    def log(message: str) -> None:
        if bar is not None and not bar.disable:
            bar.write(f"iotune tune: {message}")
        else:
            say(message)

    try:
        result = study.run(cfg, log, on_trial)
    finally:
        if bar is not None:
            bar.close()
    summary = result.summary
    if summary is None:
        return 0
    say(summary["verdict"])  # the headline, measured on best.xml itself (iotune.verdict)
    full = (summary.get("headline") or {}).get("full_winner")
    if full:
        print(f"  {full['text']}")
    for line in table.settings_lines(summary):
        print(f"  {line}")
    spread = hostnoise.spread_line((summary.get("host_noise") or {}).get("defaults_spread"), unit)
    if spread:
        say(f"noise measured: {spread}")
    files = "best settings " + str(cfg.out / "best.xml")
    if (cfg.out / "candidate.xml").exists() and not summary["recommended"]:
        files = "best candidate (not recommended) " + str(cfg.out / "candidate.xml")
    say(f"report {cfg.out / 'report.html'}; {files}; all trials {cfg.out / 'trials.csv'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m iotune.tune_cli ...` works like `iotune tune ...`."""
    parser = argparse.ArgumentParser(prog="iotune")
    sub = parser.add_subparsers(dest="cmd")
    register(sub)
    args = parser.parse_args(["tune", *(sys.argv[1:] if argv is None else argv)])
    from iotune.cmdline import run_command

    return run_command(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
