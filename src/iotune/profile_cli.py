"""The `iotune profile` command (registered by iotune.cli): runs a command once with capture on
and summarises its I/O. `iotune adapt` runs through it as well."""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from iotune.cmdline import (
    PROG,
    clear_previous,
    command_after_dashes,
    control_file_for_runtime,
    error,
    mpi_option,
    profile_target_problem,
    remove,
    runtime_for,
    summary_options,
)
from iotune.outputs import OutputError, printable, write_output


def cmd_profile(args: argparse.Namespace) -> int:
    command = command_after_dashes(args, "profile")
    if command is None:
        return 2
    given = args.out
    stream = _stream_out(given)
    if stream and args.trace:
        error(f"profile: --trace needs a file for --out, not {printable(given)}: the traces go "
              "in a folder beside the profile")  # fmt: skip
        return 2
    scratch = tempfile.mkdtemp(prefix="iotune-profile-") if stream else None
    # a stream gets the profile once it is read back; a symbolic link stays a link
    out = os.path.join(scratch, "profile.json") if scratch else os.path.realpath(given)
    try:
        return _profile(args, command, out, os.path.abspath(given), stream)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def _stream_out(name: str) -> bool:
    """Is --out a stream the runtime cannot write its profile into by renaming a file over it:
    standard output, one of our descriptors, a FIFO or a character device (/dev/null)?"""
    from iotune.outputs import own_descriptor

    if name == "-" or own_descriptor(name) is not None:
        return True
    try:
        st = os.stat(name)
    except OSError:
        return False
    return not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode))


def _profile(
    args: argparse.Namespace, command: list[str], out: str, shown: str, stream: bool
) -> int:
    """Runs command with the runtime writing its profile to out; shown: --out as given (a
    stream: the profile is copied there once read back)."""
    from iotune import launch
    from iotune import profile as prof

    problem = profile_target_problem(out, args.trace)
    if problem:
        error(f"profile: {problem}")
        return 2
    try:
        clear_previous(out)
    except OSError as e:
        error(f"profile: cannot remove the previous profile or traces: {e}")
        return 1
    # One session per run: the processes of the command tree compare their profiles within it
    # (docs/profile.md), also through shells that do not pass on variables set after they start.
    extra = {"IOTUNE_PROFILE": out, "IOTUNE_SESSION": f"cli-{os.getpid()}-{time.time_ns():x}"}
    if args.trace:
        extra["IOTUNE_TRACE"] = "1"
    copies: list[str] = []
    try:
        config = control_file_for_runtime(args.config, copies)
        setup = runtime_for(command, config, args.mpi, False, copies)
        if setup is None:
            return 1
        lib, config, mca = setup
        status = launch.run(command, config, lib=lib, extra_env={**mca, **extra})
    except OSError as e:
        error(f"cannot run {command[0]}: {e.strerror}")
        return 127
    finally:
        remove(copies)
    try:
        p = prof.load(out)
    except prof.ProfileError as e:
        error(f"no profile from this run ({e}); did the command finish normally?")
        return status or 1
    from iotune import launchcheck
    from iotune.outputs import printable_lines

    wrong = launchcheck.ranks_problem(command, p.data)  # two 1-rank jobs of the wrong mpiexec
    wrong = launchcheck.serial_problem(command, p.data, fix=launchcheck.SERIAL_FIX_RUN) or wrong
    if wrong and not launchcheck.check(command).problem:  # (not said before the run already)
        error(f"profile: warning: {wrong}")
    other = _written_by_another(command, p.data, status)
    if other:
        error(f"profile: warning: {other}")
    if stream:
        try:
            write_output(args.out, Path(out).read_bytes(), "profile")
        except (OSError, OutputError) as e:
            error(str(e))
            return status or 1
    print(printable_lines(prof.summary(p, files=args.files, top=args.top)))
    if not stream:
        print(f"\nprofile saved to {printable(shown)}"
              + (f", traces in {printable(shown)}.trace/" if args.trace else ""))  # fmt: skip
    return status


def _written_by_another(command: list[str], data: dict, status: int) -> str | None:
    """When the command's program (an executable, not a script or a wrapper's interpreter) was
    killed by a signal, it wrote no profile: one of another program it started (a tool run
    through system()) is then what the summary shows, not its I/O."""
    from iotune import launch, mpifamily

    program = data.get("program")
    _, app = launch.split_launcher(command)
    if status < 128 or not app or not isinstance(program, str) or not program:
        return None
    ours = mpifamily.resolve_program(app[0])
    theirs = mpifamily.resolve_program(program)  # argv[0] as the process was started
    try:
        with open(ours or "", "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None  # a script: the program that runs it is its interpreter
        if theirs is not None and os.path.samefile(ours, theirs):
            return None
    except OSError:
        return None
    if theirs is None and os.path.basename(program) == ours.name:
        return None  # not found from here (another directory): the name decides
    return (
        f"this profile is of {os.path.basename(program)}, a program the command started, not of "
        f"{app[0]}, which was killed (status {status}) and so wrote none: its I/O is not in it"
    )


def register(sub: argparse._SubParsersAction) -> None:
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
        "[--mpi FAMILY] -- COMMAND [ARG...]",
    )
    summary_options(p)
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
        help="also record each rank's call stream (FILE.trace/host-I.json.gz, one file per host)",
    )
    p.add_argument(
        "--config", "-c", metavar="FILE", help="control file to apply as well (default: none)"
    )
    mpi_option(p, "preload the runtime of this MPI family (default: the command's MPI)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the launch command, after --")
    p.set_defaults(func=cmd_profile)
