"""The MPI tools of the MPI the iotune runtime was built with, for the benches.

On a machine with both MPICHs and Open MPI, plain `mpiexec`/`mpicc` are whichever the system
chose (Open MPI's on Debian), not necessarily those of the runtime's MPI: a bench that ran the
MPICH-built runtime under Open MPI's mpiexec failed at once. The runtime's build records its
MPI's tools (iotune-mpi.json: mpiexec, mpicc, the flags), as `iotune tune` uses them
(iotune.launch.default_launcher); a bench takes them from here.
"""

from __future__ import annotations

import functools
import shutil

from iotune import paths


@functools.cache
def runtime_build() -> paths.Build:
    """The build of the runtime the benches use ($IOTUNE_LIB's family, else the default)."""
    return paths.find_build(paths.library_family(paths.find_library()))


def mpiexec(nprocs: int | None = None) -> list[str]:
    """The runtime's MPI launcher with its flags, e.g. [/usr/bin/mpiexec.mpich, -n, 2]."""
    return runtime_build().launcher(nprocs)


def mpicc() -> str:
    """The runtime's MPI compiler wrapper (mpicc.<family> when the build did not record it)."""
    build = runtime_build()
    return build.mpi.get("mpicc") or shutil.which(f"mpicc.{build.family}") or "mpicc"


def hdf5_pkg() -> str:
    """The pkg-config module of the parallel HDF5 built on the runtime's MPI (Debian's names)."""
    return f"hdf5-{runtime_build().family}"


def env_flags(name: str, value: str) -> list[str]:
    """The launcher's flags that set one variable in every rank (MPICH's Hydra: -genv NAME VALUE;
    Open MPI: -x NAME=VALUE)."""
    if runtime_build().family == "openmpi":
        return ["-x", f"{name}={value}"]
    return ["-genv", name, value]
