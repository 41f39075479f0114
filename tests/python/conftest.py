"""Shared fixtures: where the build is, and how to run MPI programs (always under a timeout)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("IOTUNE_BUILD_DIR", REPO / "build"))
VECTORS = REPO / "tests" / "vectors"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"{path} is missing: build first (scripts/install.sh or cmake --build build)")
    return path


@pytest.fixture(scope="session")
def build_dir() -> Path:
    return _need(BUILD)


@pytest.fixture(scope="session")
def libiotune(build_dir) -> Path:
    return _need(build_dir / "runtime" / "libiotune.so")


@pytest.fixture(scope="session")
def kernel():
    """kernel("vpicio") -> path of a built kernel executable."""
    return lambda name: _need(BUILD / "kernels" / name)


@pytest.fixture(scope="session")
def test_prog():
    """test_prog("h5probe") -> path of a C test program from tests/c."""
    return lambda name: _need(BUILD / "tests" / "c" / name)


def run_mpi(
    nprocs,
    argv,
    *,
    env=None,
    cwd=None,
    timeout=120,
    check=True,
    preload=None,
    config=None,
    verbose=False,
):
    """Run `mpiexec -n N argv...` under a timeout; return the CompletedProcess (text).

    preload: path of libiotune.so to LD_PRELOAD; config: control file for IOTUNE_CONFIG.
    """
    full_env = dict(os.environ)
    full_env.pop("IOTUNE_CONFIG", None)
    full_env.pop("IOTUNE_VERBOSE", None)
    if preload:
        full_env["LD_PRELOAD"] = str(preload)
    if config:
        full_env["IOTUNE_CONFIG"] = str(config)
    if verbose:
        full_env["IOTUNE_VERBOSE"] = "1"
    full_env.update(env or {})
    cmd = [shutil.which("mpiexec") or "mpiexec", "-n", str(nprocs), *map(str, argv)]
    proc = subprocess.run(
        cmd, env=full_env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


@pytest.fixture
def mpirun():
    return run_mpi


# ---- throw-away servers (tests/python/local_servers.py): skipped only where not installed
PG_PASSWORD = "Pw-4u7-never-shown"  # the tests look for it in every output


@pytest.fixture(scope="session")
def pg_server():
    import local_servers

    try:
        with local_servers.postgres_server(password=PG_PASSWORD, max_connections=60) as server:
            yield server
    except local_servers.Unavailable as e:
        pytest.skip(f"no PostgreSQL here: {e}")


@pytest.fixture(scope="session")
def slurm():
    import local_servers

    try:
        with local_servers.slurm_cluster(cpus=2) as cluster:
            yield cluster
    except local_servers.Unavailable as e:
        pytest.skip(f"no SLURM here: {e}")
