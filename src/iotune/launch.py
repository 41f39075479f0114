"""Running an application with the runtime preloaded.

The command is whatever the user launches with (`mpiexec -n 4 ./app args`, `srun ...`, or a
plain program): iotune only adds to its environment
  LD_PRELOAD      libiotune.so, in front of anything already preloaded;
  IOTUNE_CONFIG   the control file, as an absolute path (ranks may run in other directories);
  IOTUNE_VERBOSE  when asked for.
mpiexec (MPICH/Hydra) and srun pass the whole environment on to the ranks.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence


def runtime_env(
    config: str | os.PathLike[str] | None = None,
    *,
    lib: str | os.PathLike[str] | None = None,
    verbose: bool | int = False,
    base: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a run with the runtime preloaded.

    config: the control file (made absolute), or None to leave IOTUNE_CONFIG out;
    lib: libiotune.so (default: paths.find_library()); verbose: sets IOTUNE_VERBOSE (True -> 1,
    or a level); base: the environment to start from (default: os.environ); extra: more
    variables, set last.
    """
    if lib is None:
        from iotune import paths

        lib = paths.find_library()
    env = dict(os.environ if base is None else base)
    lib = os.path.abspath(lib)
    preloaded = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p]
    env["LD_PRELOAD"] = ":".join([lib] + [p for p in preloaded if p != lib])
    env.pop("IOTUNE_CONFIG", None)
    if config is not None:
        env["IOTUNE_CONFIG"] = os.path.abspath(config)
    if verbose:
        env["IOTUNE_VERBOSE"] = "1" if verbose is True else str(int(verbose))
    if extra:
        env.update(extra)
    return env


def exit_status(returncode: int) -> int:
    """A child's return code as a shell would report it (killed by signal N -> 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def run(
    command: Sequence[str],
    config: str | os.PathLike[str] | None = None,
    *,
    lib: str | os.PathLike[str] | None = None,
    verbose: bool | int = False,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
) -> int:
    """Runs command with the runtime preloaded; its standard streams are the caller's.

    Returns its exit status (128 + N when killed by signal N). On timeout the command's whole
    process group is killed and subprocess.TimeoutExpired is raised. Ctrl-C reaches the command
    (same terminal) and this waits for it to end.
    """
    if not command:
        raise ValueError("no command to run")
    full_env = runtime_env(config, lib=lib, verbose=verbose, base=env, extra=extra_env)
    own_group = timeout is not None
    proc = subprocess.Popen(list(command), env=full_env, cwd=cwd, start_new_session=own_group)
    try:
        return exit_status(proc.wait(timeout=timeout))
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise
    except KeyboardInterrupt:
        if own_group:  # not in the terminal's process group: pass the interrupt on
            _signal_group(proc, signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
        raise


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        proc.send_signal(sig)


def _kill_group(proc: subprocess.Popen) -> None:
    _signal_group(proc, signal.SIGKILL)
    proc.wait()


# Launchers and their options that take a value (the rest are flags). A minimal recognition
# for naming studies after the application; richer recognition may replace it.
LAUNCHER_NAMES = ("mpiexec", "mpirun", "srun", "aprun", "jsrun", "orterun", "prun")
_VALUE_OPTIONS = {
    "-n", "-np", "-N", "-c", "-ppn", "-f", "-host", "-hosts", "-hostfile", "--hostfile",
    "-machinefile", "--machinefile", "-wdir", "-env", "-genv", "-x", "--map-by", "--bind-to",
    "--ntasks", "--nodes", "--cpus-per-task", "-p", "--partition", "-t", "--time", "-A",
    "--account", "-a", "-r", "-d", "--mca", "-mca", "--rankfile", "-H", "--host",
}  # fmt: skip
_TWO_VALUE_OPTIONS = {"-env", "-genv", "--mca", "-mca"}


def is_launcher(program: str) -> bool:
    """mpiexec, mpirun and their suffixed forms (mpirun.openmpi, mpiexec.hydra), srun, ..."""
    name = os.path.basename(program)
    return name.split(".")[0] in LAUNCHER_NAMES


def split_launcher(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(launcher with its options, application command) of a command line; the launcher part
    is empty when the command does not start with a launcher. `flux run` counts as one."""
    argv = list(argv)
    if not argv:
        return [], []
    if os.path.basename(argv[0]) == "flux" and len(argv) > 1 and argv[1] in ("run", "submit"):
        start = 2
    elif is_launcher(argv[0]):
        start = 1
    else:
        return [], argv
    i = start
    while i < len(argv) and argv[i].startswith("-"):
        opt = argv[i]
        if opt == "--":
            i += 1
            break
        if "=" not in opt and opt in _VALUE_OPTIONS:
            i += 3 if opt in _TWO_VALUE_OPTIONS else 2
        else:
            i += 1
    return argv[:i], argv[i:]
