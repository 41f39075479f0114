"""Shared fixtures: where the build is, and how to run MPI programs (always under a timeout).

BUILD is the build of the default MPI family (build/, or $IOTUNE_BUILD_DIR); every MPI program
runs under that build's own launcher (mpiexec.mpich, mpiexec.openmpi, ...: never whatever
`mpiexec` is on PATH). builds() gives the build of each family (build-<family>/ beside it).
"""

import atexit
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

# A test suite started in the background of a non-interactive shell (`cmd &`) inherits SIGINT
# ignored, and so would every program the tests start: the tests of Ctrl-C would then test
# nothing (or hang). Programs started from here get the default disposition back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("IOTUNE_BUILD_DIR", REPO / "build"))
VECTORS = REPO / "tests" / "vectors"
BENCH = REPO / "bench"
# Open MPI refuses to start as root unless told; harmless for any other MPI.
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
# Finished studies are filed in a knowledge base (docs/kb.md): never the user's, in tests.
if "IOTUNE_KB" not in os.environ:
    _kb_dir = tempfile.mkdtemp(prefix="iotune-test-kb-")
    os.environ["IOTUNE_KB"] = os.path.join(_kb_dir, "kb.sqlite")
    atexit.register(shutil.rmtree, _kb_dir, ignore_errors=True)  # no folder left per test run


def mpi_info(build: Path) -> dict:
    """The build's iotune-mpi.json (family, launcher), {} for a build without one."""
    try:
        return json.loads((build / "iotune-mpi.json").read_text())
    except (OSError, ValueError):
        return {}


def builds() -> dict[str, Path]:
    """{family: build directory} of every MPI built: BUILD and the build-<family>/ beside it."""
    found = {}
    for d in [BUILD, *sorted(BUILD.parent.glob(BUILD.name + "-*"))]:
        family = mpi_info(d).get("family")
        if family and family not in found and (d / "runtime" / "libiotune.so").is_file():
            found[family] = d
    return found


def launcher(build: Path = BUILD) -> list[str]:
    """The launcher of a build's MPI with its flags, up to the rank count: [mpiexec.mpich, -n]."""
    info = mpi_info(build)
    exe = info.get("mpiexec") or shutil.which("mpiexec") or "mpiexec"
    return [exe, *info.get("preflags", []), info.get("numproc_flag") or "-n"]


def need_family(family: str) -> Path:
    """The build directory of an MPI family, or skip the test when that MPI is not built."""
    found = builds()
    if family not in found:
        pytest.skip(f"no build for {family} (scripts/install.sh builds one per MPI found)")
    return found[family]


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
    build=BUILD,
):
    """Run `mpiexec -n N argv...` (the launcher of build's MPI) under a timeout; return the
    CompletedProcess (text).

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
    cmd = [*launcher(build), str(nprocs), *map(str, argv)]
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


def bench_module(name: str):
    """bench/NAME/NAME.py imported as a module, for the tests of the benchmarks' own logic."""
    spec = importlib.util.spec_from_file_location(name, BENCH / name / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
