"""An outside tester's programs (tests/data/skel_tester.c): a program that only reads a file it
did not write, a shared file pointer moved by MPI_File_seek_shared, an HDF5 file opened and
closed at every step, anonymous groups and datasets (H5Gcreate_anon, H5Dcreate_anon, H5Olink)."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_mpi
from test_skel import _profile, build_hdf5_program, needs_cc

from iotune.skel import from_profile as fp


@pytest.fixture(scope="module")
def tester(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_tester")


@needs_cc
def test_a_program_that_only_reads_is_refused_in_one_line_naming_the_profile(
    tester, libiotune, tmp_path
):
    orig = tmp_path / "orig"
    orig.mkdir()
    run_mpi(2, [tester, "make", "in"], cwd=orig, timeout=120)  # its input, made untraced
    prof = _profile(orig, [tester, "read", "in"], libiotune)
    with pytest.raises(fp.FromProfileError) as e:
        fp.from_profile(str(prof), str(orig))
    msg = str(e.value)
    assert msg.startswith(f"{prof}: no skeleton") and "in.h5" in msg and "\n" not in msg, msg
    cli = subprocess.run(
        [sys.executable, "-m", "iotune", "skel", "from-profile", str(prof), "-o",
         str(tmp_path / "s.yaml")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 1 and cli.stderr.count("\n") == 1, cli.stderr
    assert str(prof) in cli.stderr and "s.yaml" not in cli.stderr, cli.stderr
    assert not (tmp_path / "s.yaml").exists()
