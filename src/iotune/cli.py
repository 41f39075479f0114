"""The `iotune` command: parses arguments, calls the library, prints.

Imports of the library happen inside the commands, so that `iotune --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Sequence

from iotune import __version__

PROG = "iotune"


def _table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    rows = [list(header)] + [list(r) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    lines = []
    for r in rows:
        cells = [c.ljust(w) for c, w in zip(r, widths, strict=False)] + [r[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _error(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


# ----------------------------------------------------------------------------- commands


def cmd_check(args: argparse.Namespace) -> int:
    from iotune import controlfile, params

    if args.list:
        rows = list(params.iter_table())
        print(_table(rows, ["name", "layer", "scope", "type", "range or choices", "summary"]))
        return 0
    if args.file is None:
        _error("check: give a control file, or --list")
        return 2
    data = None
    if _is_pipe(args.file):  # `iotune check <(...)`: read it here, the runtime would not
        data = _read_pipe(args.file)
        result = controlfile.parse_text(data, args.file)
    else:
        result = controlfile.parse_file(args.file)
    if args.json:
        import json

        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        for message in result.messages():
            print(message, file=sys.stderr)
        for line in _hints(args.file, data):
            print(line, file=sys.stderr)
        for line in _costly(args.file, result.settings, args.ranks_per_host):
            print(line, file=sys.stderr)
        if result.settings:
            rows = [
                [s.layer, s.name, s.file or "-", s.variable or "-", s.value]
                for s in result.settings
            ]
            print(_table(rows, ["layer", "name", "file", "variable", "value"]))
        elif not result.fatal:
            print("no settings")
        if result.errors:
            what = "nothing applies" if result.fatal else f"{len(result.settings)} settings apply"
            print(f"{len(result.errors)} error(s); {what}", file=sys.stderr)
    return 0 if result.ok else 1


def _costly(path: str, settings, ranks_per_host: int) -> list[str]:
    """Settings that cost more than this machine allows (iotune.costs): the runtime would
    withdraw them. Disk space is judged on the current directory's file system."""
    from iotune import costs

    budget = costs.machine_budget(ranks_per_host, ".")
    out = []
    for s in settings:
        message = costs.judge(s.name, s.value, budget)
        if message:
            where = f"{path}:{s.line}" if s.line else path
            out.append(f"{where}: <{s.name}>: warning: {message} by the runtime on this machine")
    return out


def _hints(path: str, data: bytes | None) -> list[str]:
    """Did-you-mean and wrong-section advice (iotune.suggest)."""
    from iotune import suggest

    if data is None:
        try:
            with open(path, "rb") as f:
                data = f.read(1024 * 1024)
        except OSError:
            return []
    return suggest.hints(data, path)


def _is_pipe(path: str) -> bool:
    """A FIFO or character device, such as the /dev/fd/63 of `--config <(...)`."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def _read_pipe(path: str) -> bytes:
    from iotune import controlfile

    with open(path, "rb") as f:
        return f.read(controlfile.MAX_BYTES + 1)  # one byte more: the runtime says too large


def _private_copy(pipe: str) -> str | None:
    """Copies a pipe to a new file only this user can read, in the working directory (rank 0
    may run on another node, and /tmp is per node) or else in the temporary directory."""
    try:
        fd, copy = tempfile.mkstemp(prefix=".iotune-config-", suffix=".xml", dir=os.getcwd())
    except OSError:
        fd, copy = tempfile.mkstemp(prefix="iotune-config-", suffix=".xml")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_read_pipe(pipe))
    except BaseException as e:
        os.unlink(copy)
        if not isinstance(e, OSError):
            raise
        _error(f"run: cannot read {pipe}: {e.strerror}")
        return None
    return copy


def cmd_run(args: argparse.Namespace) -> int:
    from iotune import launch

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        _error("run: give the command to launch after --, e.g. iotune run --config c.xml -- ./app")
        return 2
    if args.config is not None and not args.config:
        _error("run: --config needs the name of a control file")
        return 2
    # The runtime reads only regular files and is the one that reports the control file's
    # problems (once, also for job scripts without this command). A pipe, which the ranks
    # could not open anyway, goes through a private copy removed afterwards.
    config, copies = args.config, []  # no control file: the preload alone (capture, defaults)
    if config is not None and _is_pipe(config):
        copy = _private_copy(config)
        if copy is None:
            return 1
        config = copy
        copies.append(copy)
    try:
        setup = _runtime_for(command, config, args.mpi, args.verbose)
        if setup is None:
            return 1
        lib, config, extra, copy = setup
        copies += [copy] if copy else []
        return launch.run(command, config, lib=lib, verbose=args.verbose, extra_env=extra)
    except FileNotFoundError as e:
        _error(f"cannot run {command[0]}: {e.strerror}")
        return 127
    except PermissionError as e:
        _error(f"cannot run {command[0]}: {e.strerror}")
        return 126
    except KeyboardInterrupt:
        return 130
    finally:
        for copy in copies:
            os.unlink(copy)


def _runtime_for(command, config, mpi, verbose):
    """(libiotune.so, control file for the runtime, environment, copy to remove) of a run:
    the runtime of the command's MPI (said on standard error when there was a choice), and
    the control file's Open MPI parameters as OMPI_MCA_* (the runtime gets a copy without
    them). None after an error message."""
    from iotune import controlfile, launch, mpifamily, paths

    try:
        choice = mpifamily.choose(command, mpi)
    except paths.NotFound as e:
        _error(str(e))
        return None
    if verbose or (choice.build is not None and len(paths.builds()) > 1):
        launch.say(choice.describe())
    if config is None or _is_pipe(config):  # a pipe is read once: by the runtime
        return choice.lib, config, {}, None
    from iotune import costs

    parsed = controlfile.parse_file(config)
    budget = costs.machine_budget(launch.ranks_of(command))
    env, problems = launch.mca_settings(parsed.settings, budget)
    for problem in problems:
        launch.say(f"{config}: {problem}")
    names = {s.name for s in parsed.settings if s.param is not None and s.param.is_mca}
    if not names:
        return choice.lib, config, {}, None
    if choice.family != "openmpi":
        launch.say(
            f"{config}: Open MPI parameters ({', '.join(sorted(names))}) not applied: the "
            f"runtime is for {paths.FAMILY_NAMES.get(choice.family or '', 'another MPI')}"
        )
        env = {}
    elif verbose:
        launch.say("Open MPI parameters: " + " ".join(f"{k}={v}" for k, v in env.items()))
    copy = launch.runtime_copy(config, names)
    return choice.lib, copy, env, copy


def _command_after_dashes(args: argparse.Namespace, name: str) -> list[str] | None:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        _error(f"{name}: give the command to launch after --, e.g. {PROG} {name} -- ./app")
        return None
    return command


def _profile_target_problem(out: str, trace: bool) -> str | None:
    """Why the profile (and traces) cannot be written to out, or None. Checked before the
    command runs: a long job should not end with nowhere to put its profile."""
    import tempfile

    if os.path.isdir(out):
        return (
            f"--out {out} is a directory: give the profile's file name, e.g. "
            f"{os.path.join(out, 'profile.json')}"
        )
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        return f"cannot write the profile {out}: there is no directory {parent}"
    if os.path.exists(out) and not os.stat(out).st_mode & 0o222:
        return f"{out} is read-only: it is not replaced (make it writable, or give another --out)"
    try:  # os.access says yes to root whatever the permissions: try it
        fd, probe = tempfile.mkstemp(prefix=".iotune-probe-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return f"cannot write the profile {out}: {e.strerror}"
    traces = out + ".trace"
    if trace and os.path.exists(traces) and not os.path.isdir(traces):
        return f"cannot write the traces in {traces}: it is a file, not a directory"
    return None


def _clear_previous(out: str) -> None:
    """Removes a previous run's profile and traces: never report them as this run's."""
    try:
        os.unlink(out)
    except FileNotFoundError:
        pass
    traces = out + ".trace"
    if os.path.isdir(traces):
        for name in os.listdir(traces):
            if re.fullmatch(r"rank-\d+\.json(\.gz)?", name):
                os.unlink(os.path.join(traces, name))


def cmd_profile(args: argparse.Namespace) -> int:
    from iotune import launch
    from iotune import profile as prof

    command = _command_after_dashes(args, "profile")
    if command is None:
        return 2
    out = os.path.abspath(args.out)
    problem = _profile_target_problem(out, args.trace)
    if problem:
        _error(f"profile: {problem}")
        return 2
    try:
        _clear_previous(out)
    except OSError as e:
        _error(f"profile: cannot remove the previous profile or traces: {e}")
        return 1
    # One session per run: the processes of the command tree compare their profiles within it
    # (docs/profile.md), also through shells that do not pass on variables set after they start.
    extra = {"IOTUNE_PROFILE": out, "IOTUNE_SESSION": f"cli-{os.getpid()}-{time.time_ns():x}"}
    if args.trace:
        extra["IOTUNE_TRACE"] = "1"
    setup = _runtime_for(command, args.config, args.mpi, False)
    if setup is None:
        return 1
    lib, config, mca, copy = setup
    try:
        status = launch.run(command, config, lib=lib, extra_env={**mca, **extra})
    except OSError as e:
        _error(f"cannot run {command[0]}: {e.strerror}")
        return 127
    except KeyboardInterrupt:
        return 130
    finally:
        if copy:
            os.unlink(copy)
    try:
        p = prof.load(out)
    except prof.ProfileError as e:
        _error(f"no profile from this run ({e}); did the command finish normally?")
        return status or 1
    print(prof.summary(p, files=args.files, top=args.top))
    print(f"\nprofile saved to {out}" + (f", traces in {out}.trace/" if args.trace else ""))
    return status


def cmd_show(args: argparse.Namespace) -> int:
    from iotune import profile as prof

    try:
        p = prof.load(args.profile)
        if args.json:
            text = json.dumps(p.data, indent=2)
        else:
            text = prof.summary(p, files=args.files, top=args.top)
            if p.data.get("adaptive"):
                text += "\n\n" + _adaptive_section(p)
    except prof.ProfileError as e:
        _error(str(e))
        return 1
    print(text)
    return 0


def _adaptive_section(p) -> str:
    """The adaptive section of a profile, as adapt.format_phases says it; a section that is not
    as the runtime writes it (a profile from outside) is one message naming the file."""
    from iotune import adapt
    from iotune import profile as prof

    try:
        return adapt.format_phases(p.data)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise prof.ProfileError(f"{p.path}: the profile's adaptive section is not as the runtime "
                         f"writes it ({type(e).__name__}: {e})") from None  # fmt: skip


def cmd_lib(args: argparse.Namespace) -> int:
    from iotune import mpifamily, paths

    try:
        if args.all:
            builds = paths.builds()
            if not builds:
                paths.find_build()  # raises NotFound with the places looked at
            rows = [[b.family, str(b.lib), b.where] for b in builds.values()]
            print(_table(rows, ["mpi", "runtime", "from"]))
        elif args.for_command:
            command = list(args.for_command)
            command = command[1:] if command[:1] == ["--"] else command
            choice = mpifamily.choose(command, args.mpi)
            print(choice.lib)
            print(f"{PROG}: {choice.describe()}", file=sys.stderr)
        else:
            print(paths.find_build(args.mpi).lib if args.mpi else paths.find_library())
    except paths.NotFound as e:
        _error(str(e))
        return 1
    return 0


def cmd_kernels(args: argparse.Namespace) -> int:
    from iotune import paths

    try:
        kernels = paths.list_kernels(args.mpi)
    except paths.NotFound as e:
        _error(str(e))
        return 1
    if not kernels:
        _error(f"no kernels in {paths.find_kernels_dir(args.mpi)}")
        return 1
    print(_table([[name, str(path)] for name, path in kernels.items()], ["kernel", "path"]))
    return 0


# ----------------------------------------------------------------------------- parser


def _summary_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--files",
        action="store_true",
        help="list every file with its details: the application's data files first, then the "
        "files it did not ask for (interpreter, shared libraries, /proc, MPI helper files), "
        "marked",
    )
    p.add_argument(
        "--top",
        type=int,
        default=10,
        metavar="N",
        help="data files in the summary's table, slowest first (default 10)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Auto-tuner for the HDF5 / MPI-IO stack of HPC applications.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND")

    p = sub.add_parser(
        "run",
        help="run a command once with the runtime preloaded and a control file",
        description="Run any command (e.g. mpiexec -n 4 ./app, srun ...) with libiotune.so "
        "preloaded and IOTUNE_CONFIG set. The runtime reports each problem of the control file "
        "once and ignores the bad settings; the command runs anyway. A pipe (--config "
        "<(...)) is copied to a temporary file for the ranks. Without --config the runtime is "
        "preloaded alone (no settings; capture with IOTUNE_PROFILE). The exit status is the "
        "command's.",
        usage=f"{PROG} run [--config FILE] [--verbose] [--mpi FAMILY] -- COMMAND [ARG...]",
    )
    p.add_argument(
        "--config", "-c", metavar="FILE", help="control file (XML); default: none, no settings"
    )
    p.add_argument(
        "--verbose", "-v", action="store_true", help="set IOTUNE_VERBOSE: the runtime reports"
    )
    p.add_argument(
        "--mpi",
        choices=["mpich", "openmpi"],
        help="preload the runtime of this MPI family (default: the command's MPI)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="the launch command, after --")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "check",
        help="validate a control file and show what it sets",
        description="Validate a control file: print the settings it means, or every error as "
        "FILE:LINE: <element>: message. Exit status 0 when valid, 1 when there are errors.",
    )
    p.add_argument("file", nargs="?", metavar="FILE", help="control file (XML)")
    p.add_argument("--json", action="store_true", help="print the normalised JSON form")
    p.add_argument("--list", action="store_true", help="list every parameter of the registry")
    p.add_argument(
        "--ranks-per-host",
        type=int,
        default=1,
        metavar="N",
        help="judge the memory settings cost for N ranks sharing this host (default 1)",
    )
    p.set_defaults(func=cmd_check)

    from iotune import tune_cli  # argparse only: importing it is cheap

    tune_cli.register(sub)

    from iotune.skel import cli as skel_cli  # argparse only: importing it is cheap

    skel_cli.register(sub)

    from iotune.advise import cli as advise_cli  # argparse only: importing it is cheap

    advise_cli.register(sub)

    from iotune import adapt  # argparse only: importing it is cheap

    adapt.register(sub, _summary_options)

    from iotune.kb import cli as kb_cli  # argparse only: importing it is cheap

    kb_cli.register(sub)
    kb_cli.register_defaults(sub)

    p = sub.add_parser(
        "profile",
        help="run a command once with capture on and summarise its I/O",
        description="Run any command with libiotune.so preloaded and capture on: every HDF5, "
        "MPI-IO and POSIX call is counted and timed per file and layer; one JSON profile is "
        "written (docs/profile.md) and summarised: totals, layers and the data files that took "
        "the most I/O time. Files the application did not ask for (the interpreter's own, "
        "shared libraries, /proc, MPI helper files) are left out of the summary; --files "
        "lists every file.",
        usage=f"{PROG} profile [--out FILE] [--trace] [--config FILE] [--files] [--top N] "
        "-- COMMAND [ARG...]",
    )
    _summary_options(p)
    p.add_argument(
        "--out",
        "-o",
        default="iotune-profile.json",
        metavar="FILE",
        help="where the profile goes (default: iotune-profile.json)",
    )
    p.add_argument(
        "--trace",
        action="store_true",
        help="also record each rank's call stream (FILE.trace/rank-N.json.gz)",
    )
    p.add_argument("--config", "-c", metavar="FILE", help="control file to apply as well")
    p.add_argument(
        "--mpi",
        choices=["mpich", "openmpi"],
        help="preload the runtime of this MPI family (default: the command's MPI)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="the launch command, after --")
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser(
        "show",
        help="summarise a saved profile",
        description="Print the summary of a profile written by the runtime (IOTUNE_PROFILE).",
    )
    _summary_options(p)
    p.add_argument("profile", metavar="PROFILE.json")
    p.add_argument("--json", action="store_true", help="print the profile itself, indented")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "lib",
        help="print the path of libiotune.so",
        description="Print the path of the runtime library libiotune.so ($IOTUNE_LIB, the "
        "install prefix, or the build tree). A runtime is built per MPI family (mpich: MPICH, "
        "Intel MPI, MVAPICH, Cray MPICH; openmpi): without options, that of the default family "
        "($IOTUNE_MPI, else MPICH when built).",
        usage=f"{PROG} lib [--mpi FAMILY | --all | --for COMMAND...]",
    )
    p.add_argument("--mpi", choices=["mpich", "openmpi"], help="the runtime of this MPI family")
    p.add_argument("--all", action="store_true", help="list the runtime of every MPI built")
    p.add_argument(
        "--for",
        dest="for_command",
        nargs=argparse.REMAINDER,
        metavar="COMMAND",
        help="the runtime that matches this program or launch command (the MPI library the "
        "program loads, else its launcher's MPI); why is said on standard error",
    )
    p.set_defaults(func=cmd_lib)

    p = sub.add_parser(
        "kernels",
        help="list the built I/O kernels",
        description="List the built I/O kernels and their paths ($IOTUNE_KERNELS_DIR, the "
        "install prefix, or the build tree): those built for the default MPI, or --mpi.",
    )
    p.add_argument("--mpi", choices=["mpich", "openmpi"], help="the kernels of this MPI family")
    p.set_defaults(func=cmd_kernels)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.cmd is None:
        parser.print_help()
        return 2
    from iotune.inputs import InputError

    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. `iotune check --list | head`
        sys.stderr.close()
        return 1
    except InputError as e:  # a file from outside that cannot be used: one line, no traceback
        print(f"iotune: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
