"""The `iotune` command: parses arguments, calls the library, prints.

Imports of the library happen inside the commands, so that `iotune --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
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
        from iotune.inputs import InputError

        try:
            data = _read_pipe(args.file)
        except InputError as e:  # like a file that cannot be read: an error, status 1
            print(e, file=sys.stderr)
            print("1 error(s); nothing applies", file=sys.stderr)
            return 1
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
    for s, message in costs.file_total(settings, budget):
        where = f"{path}:{s.line}" if s.line else path
        out.append(f"{where}: <{s.name}>: warning: {message} by the runtime on this machine")
    return out


def _hints(path: str, data: bytes | None) -> list[str]:
    """Did-you-mean and wrong-section advice (iotune.suggest)."""
    from iotune import suggest

    if data is None:
        from iotune.inputs import InputError, read_bytes

        try:  # a regular file only, never blocking (parse_file has said what else is wrong)
            data = read_bytes(path, "control file", 1024 * 1024)
        except InputError:
            return []
    return suggest.hints(data, path)


def _is_pipe(path: str) -> bool:
    """A FIFO, such as the /dev/fd/63 of `--config <(...)`."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


PIPE_WAIT_S = 10.0  # the longest a pipe may keep iotune waiting, in all (not per byte)


def _read_pipe(path: str, wait_s: float | None = None) -> bytes:
    """The contents of a pipe (one byte more than a control file may hold: the runtime then
    says it is too large). Opened without blocking: a FIFO nobody writes to, a writer that goes
    silent or one that trickles forever is given up PIPE_WAIT_S seconds after opening (a total
    deadline: a byte now and then does not restart it) with one InputError."""
    from iotune import controlfile
    from iotune.inputs import InputError

    wait_s = PIPE_WAIT_S if wait_s is None else wait_s
    limit = controlfile.MAX_BYTES + 1
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise InputError(f"{path}: cannot read the control file: {e.strerror or e}") from None
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise InputError(f"{path}: cannot read the control file: not a file or a pipe")
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        chunks, size = [], 0
        deadline = time.monotonic() + wait_s
        while size < limit:
            # Linux reports no POLLHUP on a FIFO that never had a writer: this waits for one
            left_ms = max(0.0, deadline - time.monotonic()) * 1000
            if not poller.poll(left_ms) or (size and time.monotonic() > deadline):
                if size:
                    raise InputError(
                        f"{path}: the pipe sent {size} bytes but did not close within {wait_s:g} s"
                    )
                raise InputError(
                    f"{path}: no control file came through this pipe within {wait_s:g} s "
                    "(a FIFO with nobody writing to it?)"
                )
            try:
                chunk = os.read(fd, limit - size)
            except BlockingIOError:
                continue
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError as e:
        raise InputError(f"{path}: cannot read the control file: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _private_copy(pipe: str, copies: list[str]) -> str:
    """Copies a pipe to a new file only this user can read, in the working directory (rank 0
    may run on another node, and /tmp is per node) or else in the temporary directory; the
    copy's name is added to copies (for the caller to remove) before anything is written. The
    pipe is read first: nothing is left behind when it gives nothing (InputError)."""
    from iotune import interrupt

    data = _read_pipe(pipe)
    with interrupt.deferred():  # a signal now would leave a copy nobody knows of
        try:
            fd, copy = tempfile.mkstemp(prefix=".iotune-config-", suffix=".xml", dir=os.getcwd())
        except OSError:
            fd, copy = tempfile.mkstemp(prefix="iotune-config-", suffix=".xml")
        copies.append(copy)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return copy


def _control_file_for_runtime(config: str | None, copies: list[str]) -> str | None:
    """The control file to give the runtime (which reads only regular files): config itself,
    or a private copy of a pipe (`--config <(...)`, which the ranks could not open anyway). A
    directory or device is refused at once (InputError); a missing file is left to the
    runtime, which says so and runs the command without settings."""
    from iotune.inputs import InputError

    if config is None:
        return None
    try:
        mode = os.stat(config).st_mode
    except OSError:
        return config
    if stat.S_ISFIFO(mode):
        return _private_copy(config, copies)
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise InputError(f"{config}: cannot read the control file: {kind}")
    return config


def _remove(copies: list[str]) -> None:
    for copy in copies:
        try:
            os.unlink(copy)
        except FileNotFoundError:
            pass


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
    # problems (once, also for job scripts without this command). A pipe goes through a
    # private copy, removed afterwards whatever happens (an error, Ctrl-C, SIGTERM).
    copies: list[str] = []
    try:
        config = _control_file_for_runtime(args.config, copies)
        setup = _runtime_for(command, config, args.mpi, args.verbose, copies)
        if setup is None:
            return 1
        lib, config, extra = setup
        return launch.run(command, config, lib=lib, verbose=args.verbose, extra_env=extra)
    except FileNotFoundError as e:
        _error(f"cannot run {command[0]}: {e.strerror}")
        return 127
    except PermissionError as e:
        _error(f"cannot run {command[0]}: {e.strerror}")
        return 126
    except OSError as e:  # e.g. no room for the copy of a pipe
        _error(f"run: {e.strerror or e}")
        return 1
    finally:
        _remove(copies)


def _runtime_for(command, config, mpi, verbose, copies):
    """(libiotune.so, control file for the runtime, environment) of a run:
    the runtime of the command's MPI (said on standard error when there was a choice), and
    the control file's Open MPI parameters as OMPI_MCA_* (the runtime gets a copy without
    them, its name added to copies for the caller to remove). None after an error message."""
    from iotune import controlfile, interrupt, launch, mpifamily, paths

    try:
        choice = mpifamily.choose(command, mpi)
    except paths.NotFound as e:
        _error(str(e))
        return None
    if verbose or (choice.build is not None and len(paths.builds()) > 1):
        launch.say(choice.describe())
    from iotune import launchcheck  # a launcher of the other MPI: said, the command still runs

    checked = launchcheck.check(command)
    if checked.problem or (verbose and checked.note):
        launch.say(f"warning: {checked.problem or checked.note}")
    if config is None:
        return choice.lib, config, {}
    from iotune import costs

    parsed = controlfile.parse_file(config)
    budget = costs.machine_budget(launch.ranks_of(command))
    env, problems = launch.mca_settings(parsed.settings, budget)
    for problem in problems:
        launch.say(f"{config}: {problem}")
    names = {s.name for s in parsed.settings if s.param is not None and s.param.is_mca}
    if not names:
        return choice.lib, config, {}
    if choice.family != "openmpi":
        launch.say(
            f"{config}: Open MPI parameters ({', '.join(sorted(names))}) not applied: the "
            f"runtime is for {paths.FAMILY_NAMES.get(choice.family or '', 'another MPI')}"
        )
        env = {}
    elif verbose:
        launch.say("Open MPI parameters: " + " ".join(f"{k}={v}" for k, v in env.items()))
    with interrupt.deferred():  # a signal now would leave a copy nobody knows of
        copy = launch.runtime_copy(config, names)
        copies.append(copy)
    return choice.lib, copy, env


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
    copies: list[str] = []
    try:
        config = _control_file_for_runtime(args.config, copies)
        setup = _runtime_for(command, config, args.mpi, False, copies)
        if setup is None:
            return 1
        lib, config, mca = setup
        status = launch.run(command, config, lib=lib, extra_env={**mca, **extra})
    except OSError as e:
        _error(f"cannot run {command[0]}: {e.strerror}")
        return 127
    finally:
        _remove(copies)
    try:
        p = prof.load(out)
    except prof.ProfileError as e:
        _error(f"no profile from this run ({e}); did the command finish normally?")
        return status or 1
    from iotune import launchcheck
    from iotune.outputs import printable_lines

    wrong = launchcheck.ranks_problem(command, p.data)  # two 1-rank jobs of the wrong mpiexec
    if wrong and not launchcheck.check(command).problem:  # (not said before the run already)
        _error(f"profile: warning: {wrong}")
    print(printable_lines(prof.summary(p, files=args.files, top=args.top)))
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
            from iotune.outputs import printable_lines

            text = printable_lines(text)
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
        "FILE:LINE: <element>: message. Exit status 0 when valid, 1 when there are errors "
        "(also when the file or pipe cannot be read).",
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

    from iotune.compare import cli as compare_cli  # argparse only: importing it is cheap

    compare_cli.register(sub)

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
    p.add_argument(
        "--config", "-c", metavar="FILE", help="control file to apply as well (default: none)"
    )
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
    p.add_argument(
        "--mpi",
        choices=["mpich", "openmpi"],
        help="the runtime of this MPI family (default: $IOTUNE_MPI, else MPICH when built)",
    )
    p.add_argument("--all", action="store_true", help="list the runtime of every MPI built")
    p.add_argument(
        "--for",
        dest="for_command",
        nargs=argparse.REMAINDER,
        metavar="COMMAND",
        help="the runtime that matches this program or launch command (the MPI library the "
        "program loads, else its launcher's MPI); why is said on standard error (default: "
        "none)",
    )
    p.set_defaults(func=cmd_lib)

    p = sub.add_parser(
        "kernels",
        help="list the built I/O kernels",
        description="List the built I/O kernels and their paths ($IOTUNE_KERNELS_DIR, the "
        "install prefix, or the build tree): those built for the default MPI, or --mpi.",
    )
    p.add_argument(
        "--mpi",
        choices=["mpich", "openmpi"],
        help="the kernels of this MPI family (default: $IOTUNE_MPI, else MPICH when built)",
    )
    p.set_defaults(func=cmd_kernels)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.cmd is None:
        parser.print_help()
        return 2
    return run_command(args.func, args)


def run_command(func, args: argparse.Namespace) -> int:
    """Runs one command: a file from outside that cannot be used, an output that cannot be
    written and a signal each give one line and an exit status, not a traceback."""
    from iotune import interrupt
    from iotune.inputs import InputError
    from iotune.outputs import GuardedStdout, OutputError, silence_stdout

    # SIGTERM, SIGINT, SIGHUP: what the command started is stopped and its temporary files
    # removed (iotune.launch, iotune.trial, the commands' finally blocks); exit 128 + signal
    stdout = sys.stdout
    guard = sys.stdout = GuardedStdout(stdout)
    with interrupt.handlers():
        try:
            status = func(args)
            sys.stdout.flush()  # a full disk behind standard output is said here, not at exit
            return status
        except BrokenPipeError:  # e.g. `iotune check --list | head`
            sys.stderr.close()
            return 1
        except InputError as e:  # a file from outside that cannot be used: one line
            print(f"iotune: {e}", file=sys.stderr)
            return 2
        except OutputError as e:  # an output file that cannot be written: one line
            print(f"iotune: {e}", file=sys.stderr)
            return 1
        except OSError as e:
            if not guard.failed:
                raise
            silence_stdout(stdout)
            print(f"iotune: cannot write the output: {e.strerror or e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt as e:
            status = interrupt.exit_status(e)
            print(f"{PROG}: stopped by {interrupt.name(status - 128)}", file=sys.stderr)
            return status
        finally:
            if sys.stdout is guard:
                sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
