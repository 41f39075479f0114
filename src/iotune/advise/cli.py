"""The `iotune advise` command (registered by iotune.cli)."""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

PROG = "iotune"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "advise",
        help="advice from a profile or a Darshan log: findings and a control file",
        description="Apply the rule table (SmartIO's rules, rules measured on the kernels, "
        "Drishti-style findings) to a profile (with its trace, when there is one), to a "
        "Darshan log, or to a run of a command profiled first with its trace (-- LAUNCH...). "
        "Prints each finding with its severity, the numbers behind it and its source, and "
        "writes a control file that applies the advice (iotune run --config FILE -- ...).",
        usage=f"{PROG} advise [options] PROFILE.json | LOG.darshan | -- COMMAND [ARG...]",
    )
    _add_options(p)
    p.add_argument(
        "rest",
        nargs=argparse.REMAINDER,
        metavar="PROFILE | -- COMMAND",
        help="a profile (JSON) or Darshan log, or a command to profile after --",
    )
    p.set_defaults(func=cmd_advise)


def _add_options(p: argparse.ArgumentParser) -> None:
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the advice as JSON")
    fmt.add_argument(
        "--html", metavar="FILE", help="also write the advice as an HTML page (default: none)"
    )
    p.add_argument(
        "--control",
        "-o",
        default="iotune-advice.xml",
        metavar="FILE",
        help="where the control file goes (default: iotune-advice.xml; - for none)",
    )
    p.add_argument(
        "--severity",
        choices=("high", "medium", "low"),
        default="medium",
        help="lowest severity whose settings go into the control file (default: medium)",
    )
    p.add_argument(
        "--data-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="where to look for the run's HDF5 files (their dataset layouts); repeatable "
        "(default: none, the paths the run recorded)",
    )
    p.add_argument(
        "--profile-out",
        default="iotune-profile.json",
        metavar="FILE",
        help="with -- COMMAND: where the profile goes (default: iotune-profile.json)",
    )


def _split_command(args: argparse.Namespace) -> list[str]:
    """Sets args.source, or returns the command to profile. Options may follow the PROFILE
    argument (`advise p.json --json`): argparse leaves them in the rest, parsed here."""
    rest = list(args.rest)
    args.source = None
    if rest and rest[0] == "--":
        return rest[1:]
    if rest:
        args.source = rest[0]
        options = argparse.ArgumentParser(prog=f"{PROG} advise")
        _add_options(options)
        options.parse_args(rest[1:], namespace=args)
    return []


def _error(message: str) -> None:
    """One line: what a terminal would act on, or would break the line at, escaped (a damaged
    profile's key may hold a control character)."""
    from iotune.outputs import printable

    print(f"{PROG}: advise: {printable(message)}", file=sys.stderr)


def _profile_first(command: list[str], out: str) -> int:
    """Runs the command with capture and trace on, as `iotune profile --trace` does."""
    from iotune import cmdline, launch, mpifamily, paths

    problem = cmdline.profile_target_problem(out, True)
    if problem:
        _error(problem)
        return 2
    cmdline.clear_previous(out)
    extra = {
        "IOTUNE_PROFILE": out,
        "IOTUNE_SESSION": f"advise-{os.getpid()}-{time.time_ns():x}",
        "IOTUNE_TRACE": "1",
    }
    try:
        # the runtime of the command's MPI, as `iotune profile` and `adapt` choose it (an Open
        # MPI program under the MPICH runtime captured nothing: no profile, no advice)
        lib = mpifamily.choose(command, None).lib
        return launch.run(command, None, lib=lib, extra_env=extra)
    except paths.NotFound as e:
        _error(str(e))
        return 1
    except OSError as e:
        _error(f"cannot run {command[0]}: {e.strerror}")
        return 127


def cmd_advise(args: argparse.Namespace) -> int:
    from iotune import h5versions, inputs, insights, trace_insights
    from iotune import profile as prof
    from iotune.advise import advise, checked, darshan_safe, render
    from iotune.advise import darshan as dlog

    command = _split_command(args)
    status = 0
    if command:
        out = os.path.abspath(args.profile_out)
        status = _profile_first(command, out)
        source = out
        data_dirs = [os.getcwd(), *args.data_dir]
    elif args.source:
        source = args.source
        try:
            data_dirs = [str(Path(source).resolve().parent), *args.data_dir]
        except (OSError, RuntimeError) as e:  # a symlink loop (RuntimeError before 3.13)
            _error(f"{source}: cannot be read: {getattr(e, 'strerror', None) or e}")
            return 1
    else:
        _error("give a profile, a Darshan log, or a command after --")
        return 2
    if not os.path.exists(source):
        _error(f"{source}: no such file" + (" (the command wrote no profile)" if command else ""))
        return status or 1
    if dlog.is_darshan_log(source):
        try:  # validated, then read by a child process (a bad log cannot crash us)
            groups, limits = darshan_safe.read(source)
        except (dlog.DarshanUnavailable, darshan_safe.DarshanLogError) as e:
            _error(str(e))
            return 1
        advice = advise(groups, source, "darshan log", args.severity, limits=limits)
    else:
        try:
            data = inputs.load_json(source, "profile")
            # the parsed profile lives until the groups are made: no collection need walk its
            # 10^7 objects (parsed with the collector off, they would all be young: the first
            # collections after it, during the checks, walked them all)
            gc.freeze()
            p = checked.profile(prof.parse(data, Path(source)), source)
            hdf5 = h5versions.profile_version(data)  # its own defaults are not advice
            if isinstance(data.get("cwd"), str) and data["cwd"]:
                # the application's directory: its files' relative names are relative to it
                data_dirs.insert(0, data["cwd"])
            del data
        except (prof.ProfileError, inputs.InputError) as e:
            _error(str(e))
            return 1
        left_out: list[str] = []
        traces = trace_insights.load_traces(source, left_out)
        why = "no trace (profile with --trace)"
        if left_out and not traces:
            why = "its traces could not be read (said below)"
        try:
            groups = insights.from_profile(p, traces, search_dirs=data_dirs, no_trace=why)
            del p  # the groups hold what advise reads (the profile of 10^6 files: gigabytes)
        except Exception as e:  # noqa: BLE001 (a last resort: one line, not a traceback)
            _error(f"{source}: cannot be analysed: an internal error ({type(e).__name__}: "
                   f"{str(e)[:120]}); please report it with this file")  # fmt: skip
            return 1
        lacking = why if left_out else "the profile has no trace (iotune profile --trace)"
        limits = [] if traces else ["access pattern, transfer-size distribution and whether "
                                    f"datasets were fully written: {lacking}"]  # fmt: skip
        limits += [f"a trace left out: {why}" for why in left_out[:10]]
        if len(left_out) > 10:
            limits.append(f"... and {len(left_out) - 10} more traces left out")
        advice = advise(groups, source, "iotune profile", args.severity, limits=limits,
                        hdf5=hdf5)  # fmt: skip
    control = None
    if advice.settings and args.control != "-":
        from iotune import controlfile

        control = args.control
        if not _write_text(control, controlfile.render(advice.settings), "control file"):
            return 1
    if args.html and not _write_text(args.html, render.as_html(advice), "HTML page"):
        return 1
    if args.json:
        pieces = render.json_pieces(advice)
    else:
        from iotune.outputs import printable_lines

        pieces = iter((printable_lines(render.text(advice, control)),))
    if not _print(pieces):
        return 1
    return status


def _write_text(path: str, text: str, what: str) -> bool:
    """Writes text to path (iotune.outputs.write_output: a file atomically, a stream in place);
    False, said in one message, when it cannot."""
    from iotune.outputs import OutputError, write_output

    try:
        write_output(path, text, what)
        return True
    except OutputError as e:
        _error(str(e))
        return False


def _print(pieces: Iterator[str]) -> bool:
    """Prints the advice (its text in pieces, written in blocks of about a megabyte, and a
    newline); a standard output that cannot take it (a full disk, a closed pipe) gives one
    message, not a traceback at exit."""
    try:
        block: list[str] = []
        size = 0
        for piece in pieces:
            block.append(piece)
            size += len(piece)
            if size >= 1 << 20:
                sys.stdout.write("".join(block))
                block, size = [], 0
        block.append("\n")
        sys.stdout.write("".join(block))
        sys.stdout.flush()
        return True
    except OSError as e:
        try:  # what is still buffered goes nowhere: the flush at exit must not fail again
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        if not isinstance(e, BrokenPipeError):
            _error(f"cannot write the advice to standard output: {e.strerror or e}")
        return False
