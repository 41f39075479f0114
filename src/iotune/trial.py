"""One trial: write a control file, launch the application with the runtime preloaded, stop
it on time-out or cap, read what it measured, clean up.

By default the application runs where the user runs `iotune tune`, as the command would run in
their shell: relative paths mean what they mean there, and its files land there. The trial's
own files (control file, profile) go to a private directory under `workdir`. When trials need
directories of their own (concurrent workers, or on request: `isolate`), the application runs
in a scratch directory under `workdir` that is deleted afterwards, and its command must have
been made independent of the directory first (resolve_command). The process runs in a session
of its own: a time-out or cap kills the whole group (mpiexec, its proxies and the ranks).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotune import controlfile, interrupt, launch, objective
from iotune.search import inert

LAUNCHERS = ("mpiexec", "srun", "none")
STATUSES = ("ok", "failed", "crashed", "timeout", "capped", "forbidden", "interrupted")
CONFIG_NAME = "iotune-config.xml"
PROFILE_NAME = "iotune-profile.json"
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
_TAIL = 2000
SIGNAL_GRACE_S = 1.0  # how long a run ended by SIGTERM waits for this tuner's own
SCRATCH_PREFIX = "trial-"
_HOST = socket.gethostname().replace("-", "_")


def launch_command(launcher: str | None, nprocs: int | None, app: Sequence[str]) -> list[str]:
    """The full command: see launch.launch_command (mpiexec, srun, none, or a template)."""
    return launch.launch_command(launcher, nprocs, app)


def resolve_command(command: Sequence[str], cwd: Path) -> list[str]:
    """The command with every argument that names an existing file or directory relative to
    cwd (the program included) made absolute, so that it runs the same from another directory.
    A bare program name (no slash) is left to PATH, as the shell would."""
    out = []
    for i, arg in enumerate(command):
        bare_program = i == 0 and "/" not in arg
        if arg and not arg.startswith("-") and not os.path.isabs(arg) and not bare_program:
            if (cwd / arg).exists():
                arg = str((cwd / arg).resolve())
        out.append(arg)
    return out


def clean_stale(workdir: Path) -> int:
    """Removes the scratch directories that tuners killed on this host left behind (a tuner
    stopped by SIGKILL cannot clean up); returns how many. Others' directories stay."""
    n = 0
    if not workdir.is_dir():
        return 0
    for d in workdir.iterdir():
        parts = d.name[len(SCRATCH_PREFIX) :].split("-")
        if not d.name.startswith(SCRATCH_PREFIX) or len(parts) < 3 or parts[0] != _HOST:
            continue
        if parts[1].isdigit() and not _pid_alive(int(parts[1])):
            shutil.rmtree(d, ignore_errors=True)
            n += 1
    return n


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def drop_caches() -> bool:
    """Flushes dirty pages and drops the page cache (root only). True when it worked."""
    try:
        os.sync()
        DROP_CACHES.write_text("3\n")
        return True
    except OSError:
        return False


@dataclass
class TrialOptions:
    """How every trial of a study runs."""

    command: list[str]  # the full launch command (see launch_command)
    workdir: Path  # the trials' private (and, isolated, scratch) directories are made in here
    cwd: Path | None = None  # where the application runs (None: this process's directory)
    isolate: bool = False  # run in a scratch directory of its own (command made absolute)
    objective: str = "auto"
    timeout: float = 600.0
    sync: bool = False  # IOTUNE_SYNC=1: flush files to the device before close
    drop_caches: bool = False  # before each trial (for read trials)
    lib: Path | None = None  # libiotune.so (None: iotune.paths.find_library())
    preload: bool = True
    extra_env: dict[str, str] = field(default_factory=dict)
    keep: bool = False  # keep scratch directories (debugging)


@dataclass
class Outcome:
    """What one trial gave. value is None unless status is ok."""

    status: str
    value: float | None = None
    # value: the objective; wall_s: launch to exit of the launched process
    source: str | None = None
    wall_s: float = 0.0
    returncode: int | None = None
    message: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    traits: dict[str, Any] = field(default_factory=dict)  # what the profile says (search/inert)
    # the end of a failed run's standard output: many programs print their errors there
    stdout: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _read_tail(f: Any) -> str:
    f.seek(0)
    data = f.read()
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return text


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group, SIGKILL after 3 s (mpiexec forwards TERM to the ranks)."""
    launch.stop(proc, signal.SIGTERM, group=True, grace=3.0)


def _wait_exit(proc: subprocess.Popen, deadline: float) -> float | None:
    """Waits for proc to exit; returns the monotonic time of its exit, or None at the deadline.
    The exit wakes this at once through a pidfd (no polling interval to quantise the time);
    where there is none, waitpid in a short loop is the fallback."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None if proc.poll() is None else time.monotonic()
                ready, _, _ = select.select([fd], [], [], left)
                if ready:
                    end = time.monotonic()
                    proc.wait()
                    return end
        finally:
            os.close(fd)
    while proc.poll() is None:
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.001)
    return time.monotonic()


def run_trial(
    settings: Mapping[str, str], opts: TrialOptions, cap_s: float | None = None
) -> Outcome:
    """Runs one trial with the given control-file settings ({} = the stack's defaults).

    cap_s: stop the run once its wall time passes this (adaptive capping): status "capped".
    A non-zero exit is "failed", death by a signal "crashed", the time-out "timeout"; a run that
    exits 0 but yields no objective is "failed" too. Never raises for the application's sake;
    KeyboardInterrupt (and iotune.interrupt's Interrupted: SIGTERM) stops the run's process
    group, cleans up and is re-raised.
    """
    opts.workdir.mkdir(parents=True, exist_ok=True)
    # absolute: the application runs inside it, and the profile path must not be relative
    scratch = Path(
        tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{_HOST}-{os.getpid()}-", dir=opts.workdir)
    ).resolve()
    try:
        return _run_in(scratch, settings, opts, cap_s)
    finally:
        if not opts.keep:
            shutil.rmtree(scratch, ignore_errors=True)


def _launch_traits(profile: Path) -> dict[str, Any]:
    """What a failed run's profile says of its launch ("ranks", "mpi"); {} without one."""
    try:
        prof = objective.read_profile(profile)
    except ValueError:
        return {}
    traits = inert.traits(prof) if prof else {}
    return {k: traits[k] for k in ("ranks", "mpi") if k in traits}


def _run_in(
    scratch: Path, settings: Mapping[str, str], opts: TrialOptions, cap_s: float | None
) -> Outcome:
    # Open MPI's MCA parameters go to the environment, the rest to the runtime's control file
    runtime_settings, mca = launch.split_mca(settings)
    config = controlfile.write(scratch / CONFIG_NAME, runtime_settings)
    profile = scratch / PROFILE_NAME
    extra = {"IOTUNE_PROFILE": str(profile), **mca, **opts.extra_env}
    if opts.sync:
        extra["IOTUNE_SYNC"] = "1"
    if opts.preload:
        env = launch.runtime_env(config, lib=opts.lib, extra=extra, command=opts.command)
    else:
        env = {**os.environ, "IOTUNE_CONFIG": str(config), **extra}
        env.update(launch.root_permission(opts.command, env))
    if opts.drop_caches and not drop_caches():
        opts.drop_caches = False  # not permitted here: say so once, through the message
        drop_note = "cannot drop caches (not root?): read trials may hit the page cache; "
    else:
        drop_note = ""
    limit = opts.timeout if cap_s is None else min(opts.timeout, cap_s)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                opts.command,
                cwd=scratch if opts.isolate else (opts.cwd or Path.cwd()),
                env=env,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as e:
            return Outcome("failed", message=f"cannot launch {opts.command[0]}: {e.strerror}")
        stopped = None
        try:
            end = _wait_exit(proc, start + limit)
            if end is None:
                stopped = "capped" if cap_s is not None and cap_s < opts.timeout else "timeout"
                _stop(proc)
                end = time.monotonic()
        finally:
            if proc.returncode is None:  # interrupted (Ctrl-C, SIGTERM) or failed: stop it too
                _stop(proc)
        wall = end - start
        stdout = _read_tail(out)
        stderr = _read_tail(err)
    tail = drop_note + stderr[-_TAIL:]
    if stopped == "capped":
        message = f"stopped after {wall:.2f} s (cap {cap_s:.2f} s)"
        return Outcome("capped", wall_s=wall, message=message)
    if stopped == "timeout":
        return Outcome("timeout", wall_s=wall, message=f"no exit within {opts.timeout:g} s")
    code = launch.exit_status(proc.returncode)
    if code - 128 in interrupt.SIGNALS and interrupt.active():
        # ended by SIGTERM/SIGINT/SIGHUP (srun reports its tasks' as 143): when a batch
        # system stopped the job, this tuner's own signal follows; the trial is then
        # interrupted (run again on resume), not the application's crash
        interrupt.await_own(SIGNAL_GRACE_S)
    status = "crashed" if proc.returncode < 0 or code > 128 else "failed"
    if code != 0:  # what its profile says of the launch, for the message (launchcheck)
        return Outcome(status, wall_s=wall, returncode=code, message=tail, stdout=stdout[-_TAIL:],
                       traits=_launch_traits(profile))  # fmt: skip
    try:
        prof = objective.read_profile(profile)
    except ValueError as e:
        return Outcome("failed", wall_s=wall, returncode=0, message=str(e))
    m = objective.Measurement(wall, prof, objective.parse_results(stdout.splitlines()))
    try:
        value, source = objective.value(m, opts.objective)
    except objective.NoObjective as e:
        return Outcome("failed", wall_s=wall, returncode=0, message=f"{e}; {tail}")
    metrics: dict[str, Any] = {"wall_s": wall}
    for key, v in (
        ("profile_io_s", m.profile_time),
        ("profile_bytes", m.profile_bytes),
        ("kernel_s", m.kernel_time),
        ("kernel_bytes", m.kernel_bytes),
    ):
        if v is not None:
            metrics[key] = v
    for direction in ("read", "written"):
        n = m.moved(direction)
        if n is not None:
            metrics[f"bytes_{direction}"] = n
    traits = inert.traits(prof)
    foreign = [ln for ln in stderr.splitlines() if launch.FOREIGN_RUNTIME in ln]
    if foreign:  # a runtime of the other MPI family: it applied nothing (iotune.launchcheck)
        traits["runtime_foreign"] = foreign[0].strip()[-500:]
    return Outcome("ok", value, source, wall, 0, drop_note.strip(), metrics, traits)
