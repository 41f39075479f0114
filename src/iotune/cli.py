"""The `iotune` command: parses arguments, calls the library, prints.

The entry of the package: the commands of their own modules (tune_cli, adapt, profile_cli, the
*/cli.py) register themselves here with register(subparsers); they never import this module,
what they share lives below them in iotune.cmdline (docs/architecture.md). Imports of the
library happen inside the commands, so that `iotune --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence

from iotune import __version__
from iotune.cmdline import (
    PROG,
    control_file_for_runtime,
    error,
    is_pipe,
    mpi_option,
    read_pipe,
    remove,
    run_command,
    runtime_for,
    summary_options,
    table,
)

# ----------------------------------------------------------------------------- commands


def cmd_check(args: argparse.Namespace) -> int:
    from iotune import controlfile, params
    from iotune.outputs import printable, printable_lines

    if args.list:
        from iotune import h5versions

        rows = [(*r[:5], h5versions.describe(r[0]), r[5]) for r in params.iter_table()]
        head = ["name", "layer", "scope", "type", "range or choices", "hdf5", "summary"]
        print(table(rows, head))
        return 0
    if args.file is None:
        error("check: give a control file, or --list")
        return 2
    data = None
    if is_pipe(args.file):  # `iotune check <(...)`: read it here, the runtime would not
        from iotune.inputs import InputError

        try:
            data = read_pipe(args.file)
        except InputError as e:  # like a file that cannot be read: an error, status 1
            print(e, file=sys.stderr)
            print("1 error(s); nothing applies", file=sys.stderr)
            return 1
        result = controlfile.parse_text(data, args.file)
    else:
        result = controlfile.parse_file(args.file)
    if args.json:
        import json

        out = result.to_json()  # the reading shared with the runtime, then what check warns
        out["warnings"] = [
            {"line": o.line, "element": o.element, "message": o.message} for o in result.overrides
        ] + [{"line": s.line, "element": el, "message": m} for s, el, m in _warned(args, result)]
        text = json.dumps(out, indent=2, ensure_ascii=False)
        # JSON escapes C0 controls itself; DEL and the C1 controls too, for a terminal
        print(re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", text))
    else:
        shown = None if args.all else controlfile.PROBLEMS_SHOWN
        warnings = [_warning_line(args.file, *w) for w in _warned(args, result)]
        for lines, what in (
            (result.messages(), "problems"),
            (_hints(args.file, data), "hints"),
            (warnings, "warnings"),
        ):
            for line in capped(lines, shown, what, args.file):
                print(printable(line), file=sys.stderr)
        applying = _applying(result.settings)  # not those `iotune run` ignores
        if applying:
            rows = [[s.layer, s.name, s.file or "-", s.variable or "-", s.value] for s in applying]
            print(printable_lines(table(rows, ["layer", "name", "file", "variable", "value"])))
        elif not result.fatal:
            print("no settings")
        if result.errors:
            what = "nothing applies" if result.fatal else f"{len(applying)} settings apply"
            print(f"{len(result.errors)} error(s); {what}", file=sys.stderr)
    return 0 if result.ok else 1


def capped(lines: list[str], shown: int | None, what: str, path: str) -> list[str]:
    """The first `shown` lines (all when None) and, when more were left out, one line that
    counts them and names `iotune check --all` (as the runtime says it), with the path as a
    command to paste takes it (outputs.shell_word)."""
    from iotune.outputs import shell_word

    if shown is None or len(lines) <= shown:
        return lines
    more = len(lines) - shown
    return lines[:shown] + [
        f"{path}: {more} more {what} not shown ({len(lines)} in all); "
        f"`{PROG} check --all {shell_word(path)}` lists them all"
    ]


def _warned(args: argparse.Namespace, result) -> list[tuple[object, str | None, str]]:
    """(setting, element or None, message) of every warning of `iotune check`, in its text
    and in its --json alike."""
    if result.fatal:
        return []
    return (
        _costly(result.settings, args.ranks_per_host)
        + _process_wide(result.settings)  # as `iotune run` says them
        + _mdc_order(result.settings)
    )


def _warning_line(path: str, s, element: str | None, message: str) -> str:
    """'FILE:LINE: <element>: warning: message' (no element: the message names it)."""
    where = f"{path}:{s.line}" if s.line else path
    shown = f"<{element}>: " if element else ""
    return f"{where}: {shown}warning: {message}"


def _costly(settings, ranks_per_host: int) -> list[tuple[object, str | None, str]]:
    """Settings that cost more than this machine allows (iotune.costs): the runtime would
    withdraw them. Disk space is judged on the current directory's file system."""
    from iotune import costs

    budget = costs.machine_budget(ranks_per_host, ".")
    out = []
    for s in settings:
        message = costs.judge(s.name, s.value, budget)
        if message:
            out.append((s, s.name, f"{message} by the runtime on this machine"))
    for s, message in costs.file_total(settings, budget):
        out.append((s, s.name, f"{message} by the runtime on this machine"))
    return out


def _process_wide(settings) -> list[tuple[object, str | None, str]]:
    """Open MPI parameters narrowed by FileName=: ignored, as `iotune run` says
    (launch.mca_file_problem)."""
    from iotune import launch

    return [(s, None, m) for s in settings if (m := launch.mca_file_problem(s))]


def _applying(settings) -> list:
    """The settings the runtime or `iotune run` applies: not the Open MPI parameters narrowed
    by FileName= (launch.mca_file_problem)."""
    from iotune import launch

    return [s for s in settings if launch.mca_file_problem(s) is None]


def _mdc_order(settings) -> list[tuple[object, str | None, str]]:
    """mdc_min_size above mdc_max_size for the same files: the runtime applies none of the
    metadata cache settings to them (apply_hdf5.c set_mdc). Settings of a FileName pattern are
    judged with those for every file, the pattern's own winning (controlfile.effective)."""
    from iotune import controlfile

    out = []
    patterns = sorted({s.file for s in settings if s.file})
    for pattern in [None, *patterns]:
        chosen = {}
        for s in settings:
            if s.variable is None and s.file in (None, pattern):
                old = chosen.get(s.name)
                if old is None or controlfile.specificity(s) >= controlfile.specificity(old):
                    chosen[s.name] = s
        low, high = chosen.get("mdc_min_size"), chosen.get("mdc_max_size")
        if not low or not high or pattern and pattern not in (low.file, high.file):
            continue
        if int(low.value) > int(high.value):
            at = max((low, high), key=lambda s: s.line or 0)
            lines = f"lines {low.line} and {high.line}" if low.line and high.line else "its lines"
            scope = f" for FileName={pattern}" if pattern else ""
            out.append((at, at.name, (
                f"mdc_min_size={low.value} is above mdc_max_size={high.value} "
                f"({lines}){scope}: the runtime applies none of the metadata cache settings"
            )))  # fmt: skip
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


def cmd_run(args: argparse.Namespace) -> int:
    from iotune import launch

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        error("run: give the command to launch after --, e.g. iotune run --config c.xml -- ./app")
        return 2
    if args.config is not None and not args.config:
        error("run: --config needs the name of a control file")
        return 2
    # The runtime reads only regular files and is the one that reports the control file's
    # problems (once, also for job scripts without this command). A pipe goes through a
    # private copy, removed afterwards whatever happens (an error, Ctrl-C, SIGTERM).
    copies: list[str] = []
    try:
        config = control_file_for_runtime(args.config, copies)
        setup = runtime_for(command, config, args.mpi, args.verbose, copies)
        if setup is None:
            return 1
        lib, config, extra = setup
        return launch.run(command, config, lib=lib, verbose=args.verbose, extra_env=extra)
    except FileNotFoundError as e:
        error(f"cannot run {command[0]}: {e.strerror}")
        return 127
    except PermissionError as e:
        error(f"cannot run {command[0]}: {e.strerror}")
        return 126
    except OSError as e:  # e.g. no room for the copy of a pipe
        error(f"run: {e.strerror or e}")
        return 1
    finally:
        remove(copies)


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
        error(str(e))
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
            print(table(rows, ["mpi", "runtime", "from"]))
        elif args.for_command:
            command = list(args.for_command)
            command = command[1:] if command[:1] == ["--"] else command
            choice = mpifamily.choose(command, args.mpi)
            print(choice.lib)
            print(f"{PROG}: {choice.describe()}", file=sys.stderr)
        else:
            print(paths.find_build(args.mpi).lib if args.mpi else paths.find_library())
    except paths.NotFound as e:
        error(str(e))
        return 1
    return 0


def cmd_kernels(args: argparse.Namespace) -> int:
    from iotune import paths

    try:
        kernels = paths.list_kernels(args.mpi)
    except paths.NotFound as e:
        error(str(e))
        return 1
    if not kernels:
        error(f"no kernels in {paths.find_kernels_dir(args.mpi)}")
        return 1
    print(table([[name, str(path)] for name, path in kernels.items()], ["kernel", "path"]))
    return 0


# ----------------------------------------------------------------------------- parser


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
    mpi_option(p, "preload the runtime of this MPI family (default: the command's MPI)")
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
    p.add_argument(
        "--all",
        action="store_true",
        help="print every problem, hint and warning (by default, past the first few of "
        "each, one line counts the rest)",
    )
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

    adapt.register(sub)

    from iotune.kb import cli as kb_cli  # argparse only: importing it is cheap

    kb_cli.register(sub)
    kb_cli.register_defaults(sub)

    from iotune.compare import cli as compare_cli  # argparse only: importing it is cheap

    compare_cli.register(sub)

    from iotune import profile_cli  # argparse only: importing it is cheap

    profile_cli.register(sub)

    p = sub.add_parser(
        "show",
        help="summarise a saved profile",
        description="Print the summary of a profile written by the runtime (IOTUNE_PROFILE).",
    )
    summary_options(p)
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
    mpi_option(p, "the runtime of this MPI family (default: $IOTUNE_MPI, else MPICH when built)")
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
    mpi_option(p, "the kernels of this MPI family (default: $IOTUNE_MPI, else MPICH when built)")
    p.set_defaults(func=cmd_kernels)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.cmd is None:
        parser.print_help()
        return 2
    return run_command(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
