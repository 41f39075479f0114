"""The launch checked before the first trial (issue 24 item 3): a launcher of one MPI family
starting a program of the other runs N 1-rank jobs on the same files. `iotune tune` stops
before any trial with one message naming the right launcher; the ranks its first run's
profile reports are compared with those asked for; `iotune run` and `iotune profile` warn and
run the command all the same. With the real kernels of both builds."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import builds, launcher

from iotune import launchcheck, mpifamily
from iotune.search import inert

OTHER = {"mpich": "openmpi", "openmpi": "mpich"}
OWN_LAUNCHER = {"mpich": "mpiexec.mpich", "openmpi": "mpiexec.openmpi"}
FLAGS = {"mpich": [], "openmpi": ["--oversubscribe"]}  # 2 ranks on a small machine


def iotune(*args, cwd, env=None, timeout=300):
    full = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    full.update({k: str(v) for k, v in (env or {}).items()})
    for keep in ("IOTUNE_KB", "IOTUNE_BUILD_DIR"):
        if keep in os.environ and keep not in (env or {}):
            full[keep] = os.environ[keep]
    return subprocess.run(
        [sys.executable, "-m", "iotune", *map(str, args)],
        cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def both():
    found = builds()
    if set(found) != {"mpich", "openmpi"}:
        pytest.skip("needs both MPI families built")
    if not all(shutil.which(n) for n in OWN_LAUNCHER.values()):
        pytest.skip("needs mpiexec.mpich and mpiexec.openmpi")
    return found


def kernel_argv(build: Path) -> list[str]:
    return [str(build / "kernels" / "vorpalio"), "--block", "8,6,4", "--steps", "2"]


def tune_lines(proc) -> list[str]:
    return [ln for ln in (proc.stdout + proc.stderr).splitlines() if "wrong launcher" in ln]


@pytest.mark.parametrize("program_mpi", ["mpich", "openmpi"])
def test_tune_stops_before_the_first_trial_when_the_launcher_is_of_the_other_mpi(
    program_mpi, tmp_path
):
    found = both()
    wrong = OTHER[program_mpi]
    argv = [OWN_LAUNCHER[wrong], *FLAGS[wrong], "-n", "2", *kernel_argv(found[program_mpi])]
    proc = iotune("tune", "--trials", 3, "--no-progress", "--out", tmp_path / "out", "--",
                  *argv, cwd=tmp_path, timeout=120)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = tune_lines(proc)  # one message
    assert f"Launch it with {mpifamily.paths.FAMILY_NAMES[program_mpi]}'s" in line
    assert f"{OWN_LAUNCHER[program_mpi]} " in line.split("Launch it with")[1], line
    assert "study" not in proc.stdout  # stopped before the study was opened: no trial ran
    assert not (tmp_path / "vorpalio.h5").exists() and not (tmp_path / "out" / "study.db").exists()


@pytest.mark.parametrize("program_mpi", ["mpich", "openmpi"])
def test_plain_mpiexec_of_the_other_mpi_is_recognised(program_mpi, tmp_path, monkeypatch):
    """`mpiexec` as Debian's alternatives make it: a link to one MPI's launcher."""
    found = both()
    wrong = OTHER[program_mpi]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "mpiexec").symlink_to(shutil.which(OWN_LAUNCHER[wrong]))
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    checked = launchcheck.check(["mpiexec", "-n", "2", *kernel_argv(found[program_mpi])])
    assert checked.problem and "mpiexec is" in checked.problem
    assert f"{OWN_LAUNCHER[program_mpi]} " in checked.problem.split("Launch it with")[1]
    right = ["mpiexec", "-n", "2", *kernel_argv(found[wrong])]  # the program of its own MPI
    assert launchcheck.check(right) == launchcheck.Check()
    proc = iotune("tune", "--trials", 3, "--no-progress", "--out", tmp_path / "out", "--",
                  "mpiexec", "-n", "2", *kernel_argv(found[program_mpi]), cwd=tmp_path,
                  env={"PATH": os.environ["PATH"]}, timeout=120)  # fmt: skip
    assert proc.returncode == 1 and len(tune_lines(proc)) == 1, proc.stdout + proc.stderr


def test_the_launch_to_paste_quotes_a_name_with_terminal_controls(tmp_path):
    """The right launch was shown with a name's controls escaped (\\x1b), a command that
    named another program when pasted: bash's $'...' now, printable and the very name (the
    name elsewhere in the message is still shown escaped)."""
    from iotune.outputs import printable

    found = both()
    program = tmp_path / "vorpal\x1b[2J"
    program.symlink_to(found["mpich"] / "kernels" / "vorpalio")
    checked = launchcheck.check(["mpiexec.openmpi", "-n", "2", str(program)])
    shown = printable(checked.problem)  # as said: the name in the text escaped
    assert "\x1b" not in shown and f"{tmp_path}/vorpal\\x1b[2J loads libmpich" in shown
    fix = shown.split("Launch it with MPICH's mpiexec.mpich: ")[1]
    assert fix == f"mpiexec.mpich -n 2 $'{tmp_path}/vorpal\\x1b[2J'", fix
    r = subprocess.run(["bash", "-c", f"printf '%s|' {fix}"], capture_output=True, text=True)
    assert r.stdout == f"mpiexec.mpich|-n|2|{program}|"


def test_each_launcher_with_its_own_program_passes():
    found = both()
    for fam, build in found.items():
        argv = [OWN_LAUNCHER[fam], *FLAGS[fam], "-n", "2", *kernel_argv(build)]
        assert launchcheck.check(argv) == launchcheck.Check()
    # no launcher, or one that is not an MPI's: nothing to check
    assert launchcheck.check(kernel_argv(found["mpich"])) == launchcheck.Check()
    assert launchcheck.check(["srun", "-n", "2", *kernel_argv(found["mpich"])]).problem is None


def python_of(family: str) -> str:
    """An interpreter whose mpi4py is built on family's MPI, or skip."""
    for python in (sys.executable, "/usr/bin/python3"):
        fam, _ = mpifamily.family_of_python(python)
        if fam == family:
            return python
    pytest.skip(f"no Python here has an mpi4py of {family}")


@pytest.mark.parametrize("program_mpi", ["mpich", "openmpi"])
def test_a_python_program_is_checked_through_its_mpi4py(program_mpi, tmp_path):
    both()
    python = python_of(program_mpi)
    script = tmp_path / "writer.py"
    script.write_text("from mpi4py import MPI\nprint(MPI.COMM_WORLD.size)\n")
    wrong = OTHER[program_mpi]
    argv = [OWN_LAUNCHER[wrong], *FLAGS[wrong], "-n", "2", python, script]
    proc = iotune("tune", "--trials", 3, "--no-progress", "--out", tmp_path / "out", "--",
                  *argv, cwd=tmp_path, timeout=120)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = tune_lines(proc)
    assert "writer.py runs on" in line and "mpi4py loads" in line, line
    assert f"{OWN_LAUNCHER[program_mpi]} " in line.split("Launch it with")[1], line
    right = [OWN_LAUNCHER[program_mpi], "-n", "2", python, str(script)]
    assert launchcheck.check(right).problem is None


def test_a_python_without_mpi4py_is_said_to_be_unchecked(tmp_path):
    """An interpreter whose mpi4py cannot be imported: the check says it cannot tell, once,
    and nothing is stopped."""
    python = tmp_path / "python3"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S "$@"\n')  # no site-packages
    python.chmod(0o755)
    fam, why = mpifamily.family_of_python(python)
    assert fam is None and "no importable mpi4py" in why
    checked = launchcheck.check(["mpiexec.mpich", "-n", "2", str(python), "s.py"])
    assert checked.problem is None and "cannot be checked" in checked.note


def test_ranks_asked_and_the_ranks_check():
    assert launchcheck.ranks_asked(["mpirun", "--oversubscribe", "-np", "3", "a"]) == 3
    assert launchcheck.ranks_asked(["srun", "--ntasks=4", "a"]) == 4
    assert launchcheck.ranks_asked(["mpiexec", "-n4", "a"]) == 4
    assert launchcheck.ranks_asked(["./a", "-n", "2"]) is None  # the program's own option
    cmd = ["mpiexec.openmpi", "-n", "2", "./a"]
    said = launchcheck.ranks_problem(cmd, {"ranks": 1, "mpi": True})
    assert "asks for 2 ranks" in said and "says 1" in said
    assert launchcheck.ranks_problem(cmd, {"ranks": 2, "mpi": True}) is None
    assert launchcheck.ranks_problem(cmd, {"ranks": 1, "mpi": False}) is None  # no MPI at all
    assert launchcheck.ranks_problem(cmd, {}) is None  # no profile: cannot tell
    assert launchcheck.ranks_problem(["./a"], {"ranks": 1, "mpi": True}) is None
    # ranks that exit without MPI_Finalize: rank 0's counters alone, not a wrong launcher
    partial = {"ranks": 1, "mpi": True, "reduced": False}
    assert launchcheck.ranks_problem(cmd, partial) is None
    assert launchcheck.ranks_problem(cmd, inert.traits({**partial, "files": []})) is None


def wrapper(tmp_path: Path, program: Path) -> Path:
    """A shell script that runs the program: its MPI cannot be told before it runs."""
    w = tmp_path / "run.sh"
    w.write_text(f'#!/bin/sh\nexec {program} "$@"\n')
    w.chmod(0o755)
    return w


def test_fewer_ranks_in_the_first_run_than_asked_stop_the_study(tmp_path):
    """The families cannot be told beforehand (a wrapper script), the runtime is the program's
    (--mpi): the baseline's profile says 1 rank where 2 were asked: stopped after it, before
    any search trial; the baseline is failed, so that a corrected rerun runs it again."""
    found = both()
    prog = found["mpich"] / "kernels" / "vorpalio"
    argv = ["mpiexec.openmpi", "--oversubscribe", "-n", "2", wrapper(tmp_path, prog),
            "--block", "8,6,4", "--steps", "2"]  # fmt: skip
    out = tmp_path / "out"
    proc = iotune("tune", "--mpi", "mpich", "--trials", 4, "--no-progress", "--no-kb",
                  "--out", out, "--study", "s", "--", *argv, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "asks for 2 ranks" in proc.stderr and "profile says 1" in proc.stderr, proc.stderr
    import optuna

    study = optuna.load_study(study_name="s", storage=f"sqlite:///{out / 'study.db'}")
    (only,) = study.trials
    assert only.state.name == "FAIL" and only.user_attrs["origin"] == "defaults"


def test_a_runtime_of_the_other_mpi_in_the_first_run_stops_the_study(tmp_path):
    """Through a wrapper the runtime follows the launcher (Open MPI's) into an MPICH program,
    where it applies nothing: said after the baseline, naming --mpi mpich and mpiexec.mpich."""
    found = both()
    prog = found["mpich"] / "kernels" / "vorpalio"
    argv = ["mpiexec.openmpi", "--oversubscribe", "-n", "2", wrapper(tmp_path, prog),
            "--block", "8,6,4", "--steps", "2"]  # fmt: skip
    proc = iotune("tune", "--trials", 4, "--no-progress", "--no-kb", "--out", tmp_path / "o",
                  "--", *argv, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "other MPI family" in proc.stderr and "--mpi mpich" in proc.stderr, proc.stderr
    assert "mpiexec.mpich -n 2" in proc.stderr


def test_run_and_profile_warn_and_run_the_command_all_the_same(tmp_path):
    """`iotune run` is the command as the user wrote it (job scripts rely on its exit status):
    a wrong launcher is said once, before, and the command runs; `profile` says it too."""
    found = both()
    argv = ["mpiexec.openmpi", "--oversubscribe", "-n", "2", *kernel_argv(found["mpich"])]
    proc = iotune("run", "--", *argv, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    warnings = [ln for ln in proc.stderr.splitlines() if "wrong launcher" in ln]
    assert len(warnings) == 1 and "mpiexec.mpich -n 2" in warnings[0]
    assert proc.stdout.count("IOTUNE_RESULT") == 2  # two 1-rank jobs, as warned
    proc = iotune("profile", "--out", tmp_path / "p.json", "--", *argv, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len([ln for ln in proc.stderr.splitlines() if "wrong launcher" in ln]) == 1
    # the ranks check alone (when the families could not be told): the wrapper
    w = wrapper(tmp_path, found["mpich"] / "kernels" / "vorpalio")
    proc = iotune("profile", "--mpi", "mpich", "--out", tmp_path / "q.json", "--",
                  "mpiexec.openmpi", "--oversubscribe", "-n", "2", w, "--block", "8,6,4",
                  cwd=tmp_path, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "asks for 2 ranks" in proc.stderr and "profile says 1" in proc.stderr


@pytest.mark.parametrize("family", ["mpich", "openmpi"])
def test_the_runtime_of_a_python_program_is_that_of_its_mpi4py(family, tmp_path):
    """`iotune tune -- python3 w.py` (no launcher): the runtime, and so the default launcher,
    follow the interpreter's mpi4py, not the default family."""
    both()
    python = python_of(family)
    script = tmp_path / "w.py"
    script.write_text("import h5py\n")
    choice = mpifamily.choose([python, str(script)])
    assert choice.family == family and "mpi4py loads" in choice.reason


def test_a_python_script_without_mpi_is_not_checked(tmp_path):
    both()
    python = python_of("openmpi")
    script = tmp_path / "serial.py"
    script.write_text("print('no parallel library here')\n")
    argv = ["mpiexec.mpich", "-n", "2", python, str(script)]
    assert launchcheck.check(argv, tmp_path) == launchcheck.Check()


def test_copies_of_a_program_without_mpi_are_a_wrong_launch():
    cmd = ["mpiexec.mpich", "-n", "2", "python", "serial.py"]
    said = launchcheck.serial_problem(cmd, {"ranks": 1, "mpi": False})
    assert "never initialised MPI" in said and "started 2 separate copies" in said, said
    assert "--launcher none -n 1" in said
    assert launchcheck.baseline_problem(cmd, {"ranks": 1, "mpi": False}) == said
    assert launchcheck.serial_problem(cmd, {"ranks": 2, "mpi": True}) is None
    assert launchcheck.serial_problem(cmd, {}) is None  # no profile: cannot tell
    assert launchcheck.serial_problem(["mpiexec", "-n", "1", "./a"], {"mpi": False}) is None
    assert launchcheck.serial_problem(["./a"], {"mpi": False}) is None  # no launcher


def test_tune_of_a_serial_program_under_the_default_launcher_stops_after_the_baseline(
    libiotune, test_prog, tmp_path
):
    """iotune tune -- ./serial: the default launcher starts 2 copies (tester realapps2, finding
    4). The baseline's profile says MPI was never initialised: stopped before any search trial,
    naming --launcher none -n 1."""
    out = tmp_path / "out"
    proc = iotune("tune", "--trials", 4, "--no-progress", "--no-kb", "--out", out, "--study",
                  "s", "--", test_prog("posix_probe"), "d.dat", 10, 4096, cwd=tmp_path,
                  env={"IOTUNE_LIB": libiotune})  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "-n 2 " in proc.stdout  # the default launch it said it would make
    assert "never initialised MPI" in proc.stderr and "--launcher none -n 1" in proc.stderr
    assert "nothing was searched" in proc.stderr, proc.stderr
    import optuna

    study = optuna.load_study(study_name="s", storage=f"sqlite:///{out / 'study.db'}")
    (only,) = study.trials
    assert only.state.name == "FAIL" and only.user_attrs["origin"] == "defaults"


def test_profile_warns_of_copies_of_a_serial_program(libiotune, test_prog, tmp_path):
    argv = [*launcher(), "2", test_prog("posix_probe"), "d.dat", 10, 4096]
    proc = iotune("profile", "--out", tmp_path / "p.json", "--", *argv, cwd=tmp_path,
                  env={"IOTUNE_LIB": libiotune})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (said,) = [ln for ln in proc.stderr.splitlines() if "never initialised MPI" in ln]
    assert "started 2 separate copies" in said and "without the launcher" in said, said


# a serial program that fails when another copy of it runs beside it (as h5py's file lock does)
_CLASHES = """
import glob, os, sys, time
open(f"started.{os.getpid()}", "w").close()
deadline = time.time() + 30
while len(glob.glob("started.*")) < 2 and time.time() < deadline:
    time.sleep(0.05)
if len(glob.glob("started.*")) > 1:
    sys.exit("app: unable to lock file out.h5")
"""


def test_a_failed_baseline_of_copies_of_a_serial_program_says_why(libiotune, tmp_path):
    app = tmp_path / "app.py"
    app.write_text(_CLASHES)
    proc = iotune("tune", "--trials", 4, "--no-progress", "--no-kb", "--out", tmp_path / "out",
                  "--", sys.executable, app, cwd=tmp_path,
                  env={"IOTUNE_LIB": libiotune})  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    err = proc.stderr
    assert "failed with the stack's defaults" in err and "unable to lock file" in err, err
    assert "never initialised MPI" in err and "--launcher none -n 1" in err, err
