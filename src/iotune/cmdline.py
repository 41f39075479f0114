"""What the commands of `iotune` share: the program's name, error lines and tables, running a
command with one line per failure (run_command), the control file handed to the runtime (a pipe
through a private copy) and the runtime of a command's MPI, the profile's target. Below every
command module (iotune.cli, the */cli.py, tune_cli, adapt, profile_cli), which import it and
never iotune.cli (docs/architecture.md).

Imports of the library happen inside the functions, so that `iotune --help` stays fast.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import stat
import sys
import tempfile
import time
from collections.abc import Sequence

PROG = "iotune"


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    rows = [list(header)] + [list(r) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    lines = []
    for r in rows:
        cells = [c.ljust(w) for c, w in zip(r, widths, strict=False)] + [r[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def error(message: str) -> None:
    from iotune.outputs import printable  # it may name the user's files: escaped

    print(f"{PROG}: {printable(message)}", file=sys.stderr)


def is_pipe(path: str) -> bool:
    """A FIFO, such as the /dev/fd/63 of `--config <(...)`."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


PIPE_WAIT_S = 10.0  # the longest a pipe may keep iotune waiting, in all (not per byte)


def read_pipe(path: str, wait_s: float | None = None) -> bytes:
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


def private_copy(pipe: str, copies: list[str]) -> str:
    """Copies a pipe to a new file only this user can read, in the working directory (rank 0
    may run on another node, and /tmp is per node) or else in the temporary directory; the
    copy's name is added to copies (for the caller to remove) before anything is written. The
    pipe is read first: nothing is left behind when it gives nothing (InputError)."""
    from iotune import interrupt

    data = read_pipe(pipe)
    with interrupt.deferred():  # a signal now would leave a copy nobody knows of
        try:
            fd, copy = tempfile.mkstemp(prefix=".iotune-config-", suffix=".xml", dir=os.getcwd())
        except OSError:
            fd, copy = tempfile.mkstemp(prefix="iotune-config-", suffix=".xml")
        copies.append(copy)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return copy


def control_file_for_runtime(config: str | None, copies: list[str]) -> str | None:
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
        return private_copy(config, copies)
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise InputError(f"{config}: cannot read the control file: {kind}")
    return config


def remove(copies: list[str]) -> None:
    for copy in copies:
        try:
            os.unlink(copy)
        except FileNotFoundError:
            pass


def _say_static_hdf5(command, config, settings) -> None:
    """One line when the control file sets HDF5 and the program has HDF5 linked in statically
    (h5pcc's default): the preloaded runtime cannot reach those calls, so the settings would
    vanish without a word (MPI-IO hints still reach it through the shared MPI)."""
    from iotune import launch, linkage

    hdf5 = sorted({s.name for s in settings if s.layer == "hdf5"})
    _, app = launch.split_launcher(command)
    if hdf5 and app and linkage.static_hdf5(app[0]):
        launch.say(
            f"{config}: HDF5 settings not applied ({', '.join(hdf5)}): {app[0]} has HDF5 linked "
            "in statically, out of the preloaded runtime's reach; build it against a shared "
            "libhdf5 (h5pcc -shlib) to apply them"
        )


def runtime_for(command, config, mpi, verbose, copies):
    """(libiotune.so, control file for the runtime, environment) of a run:
    the runtime of the command's MPI (said on standard error when there was a choice), and
    the control file's Open MPI parameters as OMPI_MCA_* (the runtime gets a copy without
    them, its name added to copies for the caller to remove). None after an error message."""
    from iotune import controlfile, interrupt, launch, mpifamily, paths

    try:
        choice = mpifamily.choose(command, mpi)
    except paths.NotFound as e:
        error(str(e))
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
    _say_static_hdf5(command, config, parsed.settings)
    budget = costs.machine_budget(launch.ranks_of(command))
    env, problems = launch.mca_settings(parsed.settings, budget)
    # an Open MPI parameter with a bad value is said here, with the values accepted: the
    # runtime's copy leaves it out as it leaves out the valid ones (the runtime sets none)
    refused = [e for e in parsed.errors if launch.is_mca_name(e.element)]
    problems = [e.format() for e in refused] + problems  # "line N: <name>: why"
    shown = controlfile.PROBLEMS_SHOWN
    for problem in problems[:shown]:
        launch.say(f"{config}: {problem}")
    if len(problems) > shown:  # the cap the runtime applies to its own messages
        launch.say(f"{config}: {len(problems) - shown} more problems with Open MPI parameters "
                   f"not shown ({len(problems)} in all)")  # fmt: skip
    names = {s.name for s in parsed.settings if s.param is not None and s.param.is_mca}
    names |= {e.element for e in refused if e.element}
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
    # the runtime's messages name the user's file, not the copy (removed after the run)
    return choice.lib, copy, {**env, "IOTUNE_CONFIG_NAME": os.path.abspath(config)}


def command_after_dashes(args: argparse.Namespace, name: str) -> list[str] | None:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        error(f"{name}: give the command to launch after --, e.g. {PROG} {name} -- ./app")
        return None
    return command


def profile_target_problem(out: str, trace: bool) -> str | None:
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


def clear_previous(out: str) -> None:
    """Removes a previous run's profile and traces: never report them as this run's."""
    try:
        os.unlink(out)
    except FileNotFoundError:
        pass
    traces = out + ".trace"
    if os.path.isdir(traces):
        for name in os.listdir(traces):
            if re.fullmatch(r"rank-\d+\.json(\.gz)?|host-\d+\.json\.gz", name):
                os.unlink(os.path.join(traces, name))


def mpi_option(p: argparse.ArgumentParser, help: str) -> None:
    """--mpi, the MPI family whose runtime (or kernels) a command uses: one definition of the
    option and its choices (iotune.paths.FAMILIES) for every command."""
    from iotune.paths import FAMILIES

    p.add_argument("--mpi", choices=list(FAMILIES), help=help)


def summary_options(p: argparse.ArgumentParser) -> None:
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


def run_command(func, args: argparse.Namespace) -> int:
    """Runs one command: a file from outside that cannot be used, an output that cannot be
    written and a signal each give one line and an exit status, not a traceback."""
    from iotune import interrupt
    from iotune.inputs import InputError
    from iotune.outputs import (
        ClosedStdout,
        GuardedStdout,
        OutputError,
        printable_lines,
        silence_stdout,
    )

    # SIGTERM, SIGINT, SIGHUP: what the command started is stopped and its temporary files
    # removed (iotune.launch, iotune.trial, the commands' finally blocks); exit 128 + signal
    original = sys.stdout  # None when started with standard output closed (>&-)
    stdout = original if original is not None else ClosedStdout()
    guard = sys.stdout = GuardedStdout(stdout)
    with interrupt.handlers():
        try:
            status = func(args)
            sys.stdout.flush()  # a full disk behind standard output is said here, not at exit
            return status
        except BrokenPipeError:  # e.g. `iotune check --list | head`
            sys.stderr.close()
            return 1
        except InputError as e:  # a file from outside that cannot be used: one line, its
            print(f"iotune: {printable_lines(str(e))}", file=sys.stderr)  # keys escaped
            return 2
        except OutputError as e:  # an output file that cannot be written: one line
            print(f"iotune: {printable_lines(str(e))}", file=sys.stderr)
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
                sys.stdout = original
