"""`iotune profile` says when the profile is of a program the command started (a tool run
through system()), because the command's own program was killed and wrote none (an outside
tester's program: 39 KiB written, then h5dump through system(), then SIGSEGV; the summary
showed h5dump's 24 bytes as the run's I/O)."""

import shutil
import subprocess
import sys

import pytest

from iotune import profile_cli


def test_a_killed_program_whose_child_wrote_the_profile_is_said(tmp_path):
    app = tmp_path / "solver"
    shutil.copy("/bin/true", app)  # an executable (ELF), as the application is
    said = profile_cli._written_by_another([str(app), "in.deck"], {"program": "h5dump"}, 139)
    assert said and "of h5dump" in said and str(app) in said and "139" in said
    # an interpreter killed: its own profile would name the interpreter, not h5dump
    assert profile_cli._written_by_another([sys.executable, "x.py"], {"program": "h5dump"}, 139)
    launched = ["mpiexec.mpich", "-n", "2", str(app)]
    assert profile_cli._written_by_another(launched, {"program": "h5dump"}, 139)


def test_nothing_is_said_when_the_profile_can_be_the_programs_own(tmp_path):
    app = tmp_path / "solver"
    shutil.copy("/bin/true", app)
    other = {"program": "h5dump"}
    assert profile_cli._written_by_another([str(app)], other, 0) is None  # ended normally
    assert profile_cli._written_by_another([str(app)], other, 1) is None  # exited, not killed
    assert profile_cli._written_by_another([str(app)], {"program": str(app)}, 139) is None
    assert profile_cli._written_by_another([str(app)], {"program": "solver"}, 139) is None
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n./solver\n")
    script.chmod(0o755)  # a script: its interpreter and children are the program's run
    assert profile_cli._written_by_another([str(script)], other, 139) is None
    assert profile_cli._written_by_another([str(app)], {}, 139) is None


def test_the_warning_comes_from_a_real_run(tmp_path, libiotune):
    """A program killed by a signal after its child wrote a profile: the CLI says so."""
    if shutil.which("h5ls") is None or shutil.which("gcc") is None:
        pytest.skip("needs h5ls and gcc")
    src = tmp_path / "die.c"
    src.write_text(
        "#include <signal.h>\n#include <stdlib.h>\n#include <stdio.h>\n"
        'int main(int c, char **v) { FILE *f = fopen(v[1], "w"); fputs("data", f); fclose(f);\n'
        '  char cmd[512]; snprintf(cmd, sizeof cmd, "h5ls %s > /dev/null 2>&1", v[2]);\n'
        "  if (system(cmd) < 0) return 1; raise(SIGSEGV); return 0; }\n"
    )
    prog = tmp_path / "die"
    subprocess.run(["gcc", "-o", prog, src], check=True)
    h5 = tmp_path / "x.h5"
    import h5py  # the venv's (built against MPICH's HDF5)

    with h5py.File(h5, "w") as f:
        f["v"] = list(range(100))
    proc = subprocess.run(
        [sys.executable, "-m", "iotune", "profile", "-o", tmp_path / "p.json", "--",
         prog, tmp_path / "out.dat", h5],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 139, proc.stderr
    assert (tmp_path / "p.json").exists(), proc.stderr  # h5ls's: it read an HDF5 file
    assert "this profile is of h5ls, a program the command started" in proc.stderr, proc.stderr
