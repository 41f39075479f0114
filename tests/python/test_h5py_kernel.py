"""The h5py + mpi4py kernel gcrmio-h5py (kernels/gcrmio_h5py.py): listed with the built kernels,
writes the very file the C kernel gcrmio writes, verifies its reads, and can be tuned by
`iotune tune -- mpiexec -n 2 python script.py` with the result verified (data unchanged)."""

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BUILD, REPO, launcher, run_mpi

pytest.importorskip(
    "h5py", reason="h5py is not installed: scripts/install.sh builds it (unless IOTUNE_NO_H5PY)"
)
pytest.importorskip("mpi4py", reason="mpi4py is not installed: scripts/install.sh builds it")

from iotune import controlfile, objective  # noqa: E402

SCRIPT = REPO / "kernels" / "gcrmio_h5py.py"
SMALL = ["--cells", "300", "--levels", "5", "--chunk-cells", "70", "--iterations", "2"]


@pytest.fixture(scope="module")
def h5py_kernel() -> Path:
    path = BUILD / "kernels" / "gcrmio-h5py"
    if not path.exists():
        pytest.fail(f"{path} is missing: build first (scripts/install.sh)")
    return path


def results(stdout: str) -> dict[str, dict]:
    return {r["phase"]: r for r in objective.parse_results(stdout.splitlines())}


def h5diff(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["h5diff", str(a), str(b)], capture_output=True, text=True, timeout=60)


def test_listed_by_iotune_kernels(h5py_kernel):
    env = {**os.environ, "IOTUNE_KERNELS_DIR": str(BUILD / "kernels")}
    run = subprocess.run([sys.executable, "-m", "iotune", "kernels"], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0 and "gcrmio-h5py" in run.stdout.split(), run.stdout
    assert h5py_kernel.read_text().startswith("#!") and os.access(h5py_kernel, os.X_OK)


@pytest.mark.parametrize("ranks", [1, 2])
def test_writes_reads_and_verifies(h5py_kernel, tmp_path, ranks):
    run = run_mpi(ranks, [h5py_kernel, *SMALL, "--read"], cwd=tmp_path)
    r = results(run.stdout)
    cells, levels, iterations = 300, 5, 2
    want = cells * ranks * 8 * (8 * levels + 1) * iterations
    assert r["write"]["bytes"] == r["read"]["bytes"] == want
    assert r["write"]["verified"] is None and r["read"]["verified"] is True
    assert r["read"]["kernel"] == "gcrmio-h5py" and r["read"]["ranks"] == ranks
    for key in ("open_s", "io_s", "close_s", "total_s", "mb_s", "steps", "mode", "file"):
        assert key in r["read"], key
    assert run.stdout.count("gcrmio-h5py read: ") == 1 and run.stderr == ""


@pytest.mark.parametrize("mode", ["collective", "independent"])
def test_the_same_file_as_the_c_kernel(kernel, h5py_kernel, tmp_path, mode):
    run_mpi(2, [kernel("gcrmio"), *SMALL, "--mode", mode, "--file", "c.h5"], cwd=tmp_path)
    run_mpi(2, [h5py_kernel, *SMALL, "--mode", mode, "--file", "py.h5"], cwd=tmp_path)
    diff = h5diff(tmp_path / "c.h5", tmp_path / "py.h5")
    assert diff.returncode == 0 and "not comparable" not in diff.stdout, diff.stdout
    dumps = [
        subprocess.run(
            ["h5dump", "-p", "-H", str(tmp_path / n)], capture_output=True, text=True, timeout=60
        ).stdout  # fmt: skip
        for n in ("c.h5", "py.h5")
    ]
    chunks = [[ln.strip() for ln in d.splitlines() if "CHUNKED" in ln] for d in dumps]
    assert chunks[0] == chunks[1] and "CHUNKED ( 210, 5 )" in chunks[0]  # 70 edges x 3


def test_a_wrong_value_fails_verification(h5py_kernel, tmp_path):
    import h5py

    run_mpi(1, [h5py_kernel, *SMALL], cwd=tmp_path)
    with h5py.File(tmp_path / "gcrmio-h5py.h5", "a") as f:
        f["Step#1/vorticity"][7, 3] = -1.0
    run = run_mpi(1, [h5py_kernel, *SMALL, "--read-only"], cwd=tmp_path, check=False)
    assert run.returncode == 3
    assert "/Step#1/vorticity: element 38 (float64) is -1.0" in run.stderr
    assert results(run.stdout)["read"]["verified"] is False


def test_usage(h5py_kernel, tmp_path):
    run = run_mpi(2, [h5py_kernel, "--help"], cwd=tmp_path)
    assert run.stdout.count("usage: gcrmio-h5py") == 1  # rank 0 only
    run = run_mpi(2, [h5py_kernel, "--cells", "12Q"], cwd=tmp_path, check=False)
    assert run.returncode == 2 and run.stderr.count("not a count: '12Q'") == 1
    run = run_mpi(1, [h5py_kernel, "--read-only"], cwd=tmp_path, check=False)
    assert run.returncode == 1 and "gcrmio-h5py: read gcrmio-h5py.h5:" in run.stderr


def test_cleanup_removes_the_file(h5py_kernel, tmp_path):
    run_mpi(2, [h5py_kernel, *SMALL, "--read", "--cleanup"], cwd=tmp_path)
    assert not list(tmp_path.glob("*.h5"))


def test_iotune_tune_of_the_python_script_and_its_result_verified(libiotune, tmp_path):
    """`iotune tune -- mpiexec -n 2 python script.py` end to end, with the interpreter and the
    script given by relative paths as a user types them, then the recommended control file and
    the fastest settings searched applied with `iotune run`: the data equal the defaults'."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.update(IOTUNE_LIB=str(libiotune), PYTHONPATH=str(REPO / "src"))
    shutil.copy(SCRIPT, tmp_path / "gcrmio_h5py.py")
    python = os.path.relpath(sys.executable, tmp_path)  # ../../.venv/bin/python
    args = ["--cells", "2000", "--levels", "5"]
    out = tmp_path / "results"
    tune = [sys.executable, "-m", "iotune", "tune", "--trials", "4", "--verify-pairs", "5",
            "--leaders", "1", "--repeat", "1", "--no-partial", "--timeout", "60", "--out",
            str(out), "--", *launcher(), "2", python, "gcrmio_h5py.py", *args]  # fmt: skip
    run = subprocess.run(tune, cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    with open(out / "trials.csv", newline="") as f:
        trials = list(csv.DictReader(f))
    assert len(trials) >= 4 and all(t["status"] == "ok" for t in trials), trials
    # the fastest searched settings, whether or not they beat the defaults in the end
    params = list(trials[0])[list(trials[0]).index("message") + 1 :]
    fastest = min(
        (t for t in trials if t["config"] != "(defaults)"), key=lambda t: float(t["value"])
    )
    found = {p: fastest[p] for p in params if fastest[p] != "default"}
    assert found
    controlfile.write(tmp_path / "found.xml", found)
    app = [*launcher(), "2", sys.executable, str(SCRIPT), *args]
    for name, config in (("default", None), ("best", out / "best.xml"),
                         ("found", tmp_path / "found.xml")):  # fmt: skip
        where = tmp_path / name
        where.mkdir()
        cmd = [sys.executable, "-m", "iotune", "run", *(["--config", str(config)] if config
               else []), "--", *app]  # fmt: skip
        run = subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True,
                             timeout=120)  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert results(run.stdout)["write"]["bytes"] == 2000 * 2 * 8 * 41
        if config:
            diff = h5diff(tmp_path / "default" / "gcrmio-h5py.h5", where / "gcrmio-h5py.h5")
            assert diff.returncode == 0 and "not comparable" not in diff.stdout, diff.stdout


def test_its_profile_shows_the_data_file_alone(h5py_kernel, libiotune, tmp_path):
    """The interpreter reads the kernel (a script without a .py suffix) and pyvenv.cfg: marked."""
    from iotune import profile as prof

    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.update(IOTUNE_LIB=str(libiotune), PYTHONPATH=str(REPO / "src"))
    cmd = [sys.executable, "-m", "iotune", "profile", "--out", str(tmp_path / "p.json"), "--",
           *launcher(), "2", str(h5py_kernel), *SMALL, "--read"]  # fmt: skip
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    p = prof.load(tmp_path / "p.json")
    assert [f["name"] for f in p.data_files] == ["gcrmio-h5py.h5"]
    assert p.data_files[0]["hdf5_driver"] == "mpio"  # h5py's driver="mpio": parallel HDF5
    assert str(h5py_kernel) in [f["name"] for f in p.system_files]
    summary = run.stdout.split("program ", 1)[1].split("\n", 1)[1]  # after the command line
    assert "1 data file; " in summary and str(h5py_kernel) not in summary
