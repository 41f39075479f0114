"""Is the launch right? Checked before a study's first trial, and said by `iotune run`/`profile`.

A launcher of one MPI family starting a program built on the other does not fail: every
process it starts initialises MPI on its own, so `mpiexec.openmpi -n 2 ./mpich_app` runs two
1-rank jobs that write the same files, and a study of it measures nonsense. Two checks:
- before anything runs (check()): the launcher's family (its name, where its links lead, its
  --version: iotune.mpifamily) against the program's (the MPI library it loads; for a Python
  script, the one the interpreter's mpi4py loads);
- after the first run (ranks_problem()): the ranks its profile reports against the ranks the
  command asks for (-n 2 but a profile of 1 rank: the same wrong launch, seen from inside,
  also where the families could not be told beforehand).
A launcher asking for 2 or more ranks of a program that never initialises MPI (serial_problem())
starts as many copies of a serial program, which write the same files at once: said after the
first run, whether it failed (the copies got in each other's way) or not.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iotune import launch, mpifamily, paths
from iotune.outputs import shell_join  # commands to paste: a name's controls as $'\\x1b'

# the options that give the rank count, per launcher kind (-n 2, -np 2, --ntasks=2, -n2)
_RANK_OPTIONS = ("-n", "-np", "--np", "--n", "--ntasks")


@dataclass(frozen=True)
class Check:
    """What the launch check found: a wrong launch (problem: why, and the launcher to use), or
    what could not be checked (note), or neither."""

    problem: str | None = None
    note: str | None = None


def _name(family: str | None) -> str:
    return paths.FAMILY_NAMES.get(family or "", "another MPI")


def right_launcher(family: str, nprocs: int | None) -> list[str]:
    """The launcher of an MPI family with its flags and the rank count, by the name a user
    types (mpiexec.mpich -n 2; mpiexec.openmpi --oversubscribe -n 2 from the build's record)."""
    try:
        words = paths.find_build(family).launcher(nprocs)
    except paths.NotFound:
        exe = next(
            (n for n in (f"mpiexec.{family}", f"mpirun.{family}") if shutil.which(n)),
            f"mpiexec.{family}",
        )
        words = [exe, *(["-n", str(nprocs)] if nprocs else [])]
    exe = os.path.basename(words[0])
    if shutil.which(exe) and Path(shutil.which(exe) or "").resolve() == Path(words[0]).resolve():
        words = [exe, *words[1:]]  # the name on PATH reads better than /usr/bin/...
    return words


def program_family(app: Sequence[str], cwd: str | os.PathLike[str] | None = None):
    """(family, why, note) of the application part of a command: the MPI library its program
    loads; for a Python interpreter, that of its mpi4py; note says why it cannot be told."""
    program = mpifamily.resolve_program(app[0], cwd)
    if program is None:
        return None, "", ""
    fam, lib = mpifamily.family_of_program(program)
    if fam:
        return fam, f"{app[0]} loads {lib} ({_name(fam)})", ""
    if mpifamily.is_python(app[0]) or mpifamily.is_python(program.resolve()):
        fam, why, note = mpifamily.family_of_python_command(app, cwd)
        if note:
            note = f"{note.replace('cannot be checked', 'cannot be checked against the launcher')}"
        return fam, why, note
    return None, "", ""


def check(command: Sequence[str], cwd: str | os.PathLike[str] | None = None) -> Check:
    """The family check of a launch command (an MPI launcher followed by the program)."""
    launcher, app = launch.split_launcher(command)
    if (
        not launcher
        or not app
        or not re.fullmatch(
            r"(mpirun|mpiexec|orterun|prterun)([._-][\w.-]*)?", os.path.basename(launcher[0])
        )
    ):
        return Check()
    fam, why, note = program_family(app, cwd)
    if fam is None:
        return Check(note=note or None)
    lfam, lwhy = mpifamily.family_of_launcher(launcher[0])
    if lfam is None or lfam == fam:
        return Check()
    asked = ranks_asked(command)
    right = right_launcher(fam, asked)
    base = os.path.basename(launcher[0])
    via = re.search(r"\(([^()]*)\)$", lwhy)
    if "--version" in lwhy:
        lwhy = " (its --version says so)"
    elif via and via.group(1) != base:
        lwhy = f" (it resolves to {via.group(1)})"
    else:
        lwhy = ""
    processes = f"each of its {asked} processes" if asked and asked > 1 else "each process"
    return Check(
        problem=(
            f"wrong launcher: {launcher[0]} is {_name(lfam)}'s launcher{lwhy} but {why}: "
            f"{processes} would run as a 1-rank job of its own, all writing the same files. "
            f"Launch it with {_name(fam)}'s {right[0]}: {shell_join([*right, *app])}"
        )
    )


def ranks_asked(command: Sequence[str]) -> int | None:
    """The rank count a launch command asks for (-n N, -np N, --ntasks=N, -nN), None when it
    has no launcher or says none."""
    launcher, _ = launch.split_launcher(command)
    for i, word in enumerate(launcher):
        value = None
        if word in _RANK_OPTIONS and i + 1 < len(launcher):
            value = launcher[i + 1]
        elif "=" in word and word.split("=", 1)[0] in _RANK_OPTIONS:
            value = word.split("=", 1)[1]
        elif re.fullmatch(r"-n\d+", word):
            value = word[2:]
        if value is not None and value.isdigit():
            return int(value)
    return None


def baseline_problem(
    command: Sequence[str], traits: Mapping[str, Any], asked: int | None = None
) -> str | None:
    """Why a study's first run (its traits: trial.Outcome.traits) was not the launch meant: the
    runtime preloaded was of the other MPI family (it applied nothing), copies of a program that
    never initialised MPI ran, or fewer ranks ran than asked for; None when none of these."""
    foreign = traits.get("runtime_foreign")
    if foreign:
        used = foreign.split(launch.FOREIGN_RUNTIME)[0]
        fam = "mpich" if "MPICH" in used else "openmpi" if "Open MPI" in used else None
        if fam is None:
            fix = "give the program's MPI (--mpi FAMILY) and launch it with that MPI's mpiexec"
        else:
            asked = ranks_asked(command) if asked is None else asked
            fix = f"give --mpi {fam} and launch it with {shell_join(right_launcher(fam, asked))}"
        return (
            f"the runtime preloaded is of the other MPI family, so no setting would reach the "
            f"program ({foreign.removeprefix('iotune: ').split(': it applies')[0]}): {fix}"
        )
    return serial_problem(command, traits, asked) or ranks_problem(command, traits, asked)


# what to do about copies of a serial program, said by tune (the default) and by run/profile
SERIAL_FIX_TUNE = (
    "for a serial program give --launcher none -n 1 (a program on another MPI than the "
    "runtime's: give --mpi FAMILY; copies meant to run side by side: start them from a script "
    "of your own, given as the command)"
)
SERIAL_FIX_RUN = (
    "a serial program runs without the launcher (a program on another MPI than the runtime's: "
    "launch it with that MPI's mpiexec)"
)


def serial_problem(
    command: Sequence[str],
    profile_or_traits: Mapping[str, Any],
    asked: int | None = None,
    fix: str = SERIAL_FIX_TUNE,
) -> str | None:
    """Why a run of command under a launcher of 2 or more ranks started copies of a serial
    program: its profile (or trial traits holding "mpi") says MPI was never initialised; fix
    says what to do. None when the launch asks for fewer ranks, or the run wrote no profile."""
    asked = ranks_asked(command) if asked is None else asked
    if not asked or asked < 2 or profile_or_traits.get("mpi") is not False:
        return None
    launcher, _ = launch.split_launcher(command)
    return (
        f"the program never initialised MPI (its profile says so), so {shlex.join(launcher)} "
        f"started {asked} separate copies of it, which write the same files at the same time: "
        f"{fix}"
    )


def ranks_problem(
    command: Sequence[str], profile_or_traits: Mapping[str, Any], asked: int | None = None
) -> str | None:
    """Why a run of command was not the launch asked for, from what its profile says (the
    profile itself, or trial traits holding its "ranks" and "mpi"); None when it was, or when
    it cannot be told (no rank count asked, no profile, a program without MPI)."""
    asked = ranks_asked(command) if asked is None else asked
    ranks = profile_or_traits.get("ranks")
    if not asked or asked < 2 or not profile_or_traits.get("mpi") or not isinstance(ranks, int):
        return None
    if profile_or_traits.get("reduced") is False:  # MPI_Finalize never came: rank 0 wrote
        return None  # its own counters alone, whatever the number of ranks that ran
    if ranks >= asked:
        return None
    launcher, app = launch.split_launcher(command)
    fam, why, _ = program_family(app) if app else (None, "", "")
    cause = (
        f"the launcher is probably of another MPI than the program ({why}): use "
        f"{shell_join([*right_launcher(fam, asked), *app])}"
        if fam
        else "the launcher is probably of another MPI than the program (each process started "
        "as a 1-rank job of its own): launch it with the mpiexec of the MPI it was built with"
    )
    return (
        f"the command asks for {asked} ranks ({shlex.join(launcher)}) but the run's profile "
        f"says {ranks}: {cause}"
    )
