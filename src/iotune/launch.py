"""Running an application with the runtime preloaded, and the launchers that start it.

The command is whatever the user launches with (`mpiexec -n 4 ./app args`, `srun ...`, or a
plain program): iotune only adds to its environment
  LD_PRELOAD      libiotune.so, in front of anything already preloaded;
  IOTUNE_CONFIG   the control file, as an absolute path (ranks may run in other directories);
  IOTUNE_CONFIG_NAME  the user's control file, when IOTUNE_CONFIG is iotune's copy of it
                  (without Open MPI's parameters): the runtime's messages name it;
  IOTUNE_VERBOSE  when asked for;
  OMPI_MCA_<name> Open MPI's I/O parameters of the control file (registry target mca), which
                  no MPI_Info can set; only when the runtime is Open MPI's;
  OMPI_ALLOW_RUN_AS_ROOT, OMPI_ALLOW_RUN_AS_ROOT_CONFIRM (Open MPI 4's launcher) and
  PRTE_ALLOW_RUN_AS_ROOT, PRTE_ALLOW_RUN_AS_ROOT_CONFIRM (Open MPI 5's, PRRTE)
                  =1 when root runs Open MPI's launcher (which refuses root otherwise) and has
                  set none of them.
mpiexec/mpirun of MPICH and Open MPI, and srun, pass the whole environment on to the ranks.

split_launcher() (iotune.launchers) tells the launcher at the head of a command (mpirun,
mpiexec and their suffixed names such as mpirun.openmpi or mpiexec.hydra, srun, flux run, aprun,
jsrun, ibrun, with their options) from the application after it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from iotune.launchers import _launcher_kind, is_launcher, split_launcher  # noqa: F401

# ----------------------------------------------------------------------------- launchers


def absolute_program(argv: Sequence[str], cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """The command with a relative path of its launcher and of its application made absolute
    (`./app` -> `/home/me/app`): trials run in scratch directories of their own."""
    launcher, app = split_launcher(argv)
    out = []
    for part in (launcher, app):
        part = list(part)
        if part and "/" in part[0] and not os.path.isabs(part[0]):
            part[0] = os.path.abspath(os.path.join(cwd or os.getcwd(), part[0]))
        out += part
    return out


def launch_command(launcher: str | None, nprocs: int | None, app: Sequence[str], build=None):
    """The full command of a trial.

    launcher: "none" (app is run as it is: it has its own launcher, or is serial); "mpiexec"
    (the mpiexec on PATH) or "srun" (`srun -n N --export=ALL`); a template such as
    "mpirun.openmpi --oversubscribe -n {n}" ({n}: the ranks; without {n}, `-n N` is added);
    None: the launcher of the runtime's MPI (build: a paths.Build; default: the default one).
    """
    if not app:
        raise ValueError("no application command")
    n = ["-n", str(nprocs)] if nprocs else []
    if launcher is None:
        if build is None:
            from iotune import paths

            build = paths.find_build()
        return [*build.launcher(nprocs), *app]
    if not launcher.strip():
        raise ValueError("empty launcher")
    if launcher == "none":
        return list(app)
    if launcher == "mpiexec":
        return [shutil.which("mpiexec") or "mpiexec", *n, *app]
    if launcher == "srun":
        return ["srun", *n, "--export=ALL", *app]
    if "{n}" in launcher:
        return [*shlex.split(launcher.replace("{n}", str(nprocs or 1))), *app]
    return [*shlex.split(launcher), *n, *app]


def default_launcher(build) -> str:
    """The launcher template of a build's MPI, e.g. "/usr/bin/mpiexec.openmpi --oversubscribe
    -n {n}"."""
    return shlex.join(build.launcher(None)) + f" {build.mpi.get('numproc_flag') or '-n'} {{n}}"


# ----------------------------------------------------------------------------- Open MPI's MCA


def mca_variable(name: str) -> str:
    """The environment variable of an Open MPI MCA parameter: fcoll -> OMPI_MCA_fcoll."""
    return f"OMPI_MCA_{name}"


def split_mca(settings: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(settings for the runtime's control file, {OMPI_MCA_name: value}) of a trial's settings."""
    from iotune import params

    runtime, env = {}, {}
    for name, value in settings.items():
        p = params.find(name)
        if p is not None and p.is_mca:
            env[mca_variable(name)] = str(value)
        else:
            runtime[name] = value
    return runtime, env


def ranks_of(command: Sequence[str]) -> int:
    """The rank count a launch command asks for (-n N, -np N, --ntasks N), 1 when it says none."""
    for flag, value in zip(command, command[1:], strict=False):
        if flag in ("-n", "-np", "--np", "--ntasks") and value.isdigit():
            return max(1, int(value))
    return 1


def is_mca_name(name: str | None) -> bool:
    """True when name is an Open MPI MCA parameter of the registry (target mca)."""
    from iotune import params

    p = params.find(name) if name else None
    return p is not None and p.is_mca


def mca_file_problem(s) -> str | None:
    """Why a setting (controlfile.Setting) of an Open MPI parameter narrowed by FileName= is
    ignored (one environment per process: it cannot be per file), else None. Said by `iotune
    run` (mca_settings) and `iotune check`."""
    p = s.param
    if p is None or not p.is_mca or not s.file:
        return None
    return (
        f"<{s.name} FileName=...>: an Open MPI parameter is set for the whole process, not per "
        "file; ignored"
    )


def mca_settings(settings: Iterable, budget=None) -> tuple[dict[str, str], list[str]]:
    """({OMPI_MCA_name: value}, problems) of a parsed control file's settings (Setting objects):
    the last one of each name wins; FileName= cannot narrow them (one environment per process).
    One that costs more than budget (an iotune.costs.Budget) allows is withdrawn, as the
    runtime withdraws the settings it applies itself."""
    from iotune import costs

    env, problems = {}, []
    for s in settings:
        p = s.param
        if p is None or not p.is_mca:
            continue
        costly = costs.judge(s.name, s.value, budget) if budget is not None else None
        if costly:
            problems.append(f"line {s.line}: {costly}" if s.line else costly)
            env.pop(mca_variable(s.name), None)
            continue
        narrowed = mca_file_problem(s)
        if narrowed:
            problems.append(f"line {s.line}: {narrowed}" if s.line else narrowed)
            continue
        env[mca_variable(s.name)] = s.value
    return env, problems


def without_elements(text: str, names: Iterable[str]) -> str:
    """The control file's text with the elements of these names blanked out, every line kept
    where it was (the runtime's messages name lines of the user's file)."""
    for name in set(names):
        pattern = re.compile(rf"<{re.escape(name)}\b[^>]*?(/>|>.*?</{re.escape(name)}\s*>)", re.S)
        text = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return text


def runtime_copy(path: str, names: Iterable[str]) -> str:
    """A private copy of the control file without the named elements, beside the working
    directory (ranks on other nodes must read it; /tmp is per node) or else in the temporary
    directory. The caller removes it."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    try:
        fd, copy = tempfile.mkstemp(prefix=".iotune-config-", suffix=".xml", dir=os.getcwd())
    except OSError:
        fd, copy = tempfile.mkstemp(prefix="iotune-config-", suffix=".xml")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(without_elements(text, names))
    return copy


# Open MPI 4 (ORTE) reads the OMPI_ names; Open MPI 5's launcher is PRRTE's, which reads the
# PRTE_ names. Both are set: each version ignores the other's.
ROOT_VARIABLES = (
    "OMPI_ALLOW_RUN_AS_ROOT",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
    "PRTE_ALLOW_RUN_AS_ROOT",
    "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM",
)


def root_permission(command: Sequence[str], env: Mapping[str, str]) -> dict[str, str]:
    """What Open MPI's launcher needs to start as root: every ROOT_VARIABLES name set to "1"
    when this process is root, command starts with Open MPI's mpirun/mpiexec and env sets none
    of them; else {} (the user's own choice stands)."""
    if os.geteuid() != 0 or any(v in env for v in ROOT_VARIABLES):
        return {}
    if _launcher_kind(command) != ("mpi", 1):
        return {}
    from iotune import mpifamily

    if mpifamily.family_of_launcher(command[0])[0] != "openmpi":
        return {}
    return dict.fromkeys(ROOT_VARIABLES, "1")


# what a runtime preloaded into a program of the other MPI family says (runtime/src/abi.c)
FOREIGN_RUNTIME = "but this libiotune.so was built for"


def say(message: str) -> None:
    """One line from the iotune command (not the runtime) on standard error, what a terminal
    could act on escaped (it may name the user's files and settings)."""
    from iotune.outputs import printable

    print(f"iotune: {printable(message)}", file=sys.stderr)


# ----------------------------------------------------------------------------- running


def runtime_env(
    config: str | os.PathLike[str] | None = None,
    *,
    lib: str | os.PathLike[str] | None = None,
    verbose: bool | int = False,
    base: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    command: Sequence[str] | None = None,
) -> dict[str, str]:
    """The environment of a run with the runtime preloaded.

    config: the control file (made absolute), or None to leave IOTUNE_CONFIG out;
    lib: libiotune.so (default: paths.find_library()); verbose: sets IOTUNE_VERBOSE (True -> 1,
    or a level); base: the environment to start from (default: os.environ); extra: more
    variables, set last; command: what will run, for root_permission().
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
    if command:
        env.update(root_permission(command, env))
    return env


def exit_status(returncode: int) -> int:
    """A child's return code as a shell would report it (killed by signal N -> 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


GRACE_S = 10.0  # seconds a stopped command has to end after the signal, before SIGKILL


def _foreground_terminal() -> bool:
    """True when standard input is the terminal and this process is in its foreground group:
    the command then stays in this process group, so that it can read the terminal and the
    keyboard's signals (Ctrl-C, Ctrl-Z) reach it directly, as they would without iotune."""
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


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

    Returns its exit status (128 + N when killed by signal N). The command runs in a process
    group of its own (unless it shares the terminal in the foreground, see
    _foreground_terminal). On timeout that group is killed and subprocess.TimeoutExpired is
    raised. When this process is interrupted (KeyboardInterrupt, or iotune.interrupt's
    Interrupted for SIGTERM and SIGHUP) or fails while the command runs, the signal is passed on
    to the command's group (Ctrl-C from the terminal has reached it already), the group gets
    GRACE_S seconds to end, then SIGKILL; then the exception goes on.
    """
    if not command:
        raise ValueError("no command to run")
    full_env = runtime_env(
        config, lib=lib, verbose=verbose, base=env, extra=extra_env, command=command
    )
    shared = timeout is None and _foreground_terminal()
    proc = subprocess.Popen(
        list(command),
        env=full_env,
        cwd=cwd,
        start_new_session=timeout is not None,
        process_group=None if shared or timeout is not None else 0,
    )
    done = False
    try:
        status = exit_status(proc.wait(timeout=timeout))
        done = True
        return status
    except subprocess.TimeoutExpired:
        stop(proc, signal.SIGKILL, group=True)
        done = True
        raise
    except KeyboardInterrupt as e:
        sig = getattr(e, "signum", signal.SIGINT)
        # Ctrl-C in a shared foreground group has reached the command already
        stop(proc, None if shared and sig == signal.SIGINT else sig, group=not shared)
        done = True
        raise
    finally:
        if not done:  # any other exception: the command must not outlive this process
            stop(proc, signal.SIGTERM, group=not shared)


def stop(
    proc: subprocess.Popen,
    sig: int | None = signal.SIGTERM,
    *,
    group: bool = True,
    grace: float = GRACE_S,
) -> None:
    """Stops a command this process started: sig (None: none, it was sent already) to its
    process group (group=True: proc leads a group of its own) or else to proc and each of its
    descendants; waits up to grace seconds for proc to exit, then SIGKILL to whatever is left
    (the whole group: ranks that ignored the signal, or still writing)."""
    known = [] if group else descendants(proc.pid)  # orphans lose their parent: note them now
    if sig is not None:
        _send(proc, sig, group, known)
    if sig != signal.SIGKILL:
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    _send(proc, signal.SIGKILL, group, known)
    proc.wait()


def _send(proc: subprocess.Popen, sig: int, group: bool, known: Sequence[int] = ()) -> None:
    if group:
        try:
            os.killpg(proc.pid, sig)
            return
        except ProcessLookupError:  # the group is gone: nothing left to signal
            return
        except PermissionError:
            pass
    pids = [] if proc.returncode is not None else [proc.pid]
    for pid in dict.fromkeys([*pids, *known, *descendants(proc.pid)]):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def descendants(pid: int) -> list[int]:
    """The processes below pid (children, their children, ...), from /proc; [] elsewhere."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # after "pid (comm) "
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def run_captured(
    command: Sequence[str],
    *,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """subprocess.run(command, capture_output=True, stdin=DEVNULL) in a session of its own:
    on timeout (subprocess.TimeoutExpired is raised) its whole process group is killed, and when
    this process is interrupted or fails meanwhile, the group gets the signal (SIGTERM for an
    error), GRACE_S seconds, then SIGKILL; then the exception goes on."""
    proc = subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=None if env is None else dict(env),
        cwd=cwd,
        text=text,
        start_new_session=True,
    )
    with proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc, signal.SIGKILL)
            raise
        except BaseException as e:
            stop(proc, getattr(e, "signum", signal.SIGINT if isinstance(e, KeyboardInterrupt)
                               else signal.SIGTERM))  # fmt: skip
            raise
    return subprocess.CompletedProcess(list(command), proc.returncode, out, err)
