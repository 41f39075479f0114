"""Helper for the advise tests: run a kernel with capture and trace on, return its profile."""

import json
import os
from pathlib import Path

from conftest import run_mpi


def profile_kernel(tmp_path: Path, kernel_path: Path, args, libiotune: Path, nprocs: int = 2,
                   trace: bool = True, name: str = "profile.json") -> Path:  # fmt: skip
    """Runs `mpiexec -n N kernel args` in tmp_path with the runtime preloaded; the profile path."""
    out = tmp_path / name
    env = {"IOTUNE_PROFILE": str(out), "IOTUNE_SESSION": f"test-{os.getpid()}-{name}"}
    if trace:
        env["IOTUNE_TRACE"] = "1"
    run_mpi(nprocs, [kernel_path, *args], env=env, cwd=tmp_path, preload=libiotune, timeout=120)
    assert json.loads(out.read_text())["schema"] == "iotune-profile"
    return out
