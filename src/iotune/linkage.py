"""Can the runtime reach an application's HDF5 calls? Not when HDF5 is linked statically (the
default of `h5pcc` on some systems): the program then defines H5Fcreate itself instead of
importing it from a shared libhdf5, and no preloaded library can interpose. MPI-IO settings
still reach such a program (MPI stays a shared library)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

PROBE = "H5Fcreate"


def _which(program: str) -> Path | None:
    if "/" in program:
        p = Path(program)
        return p if p.is_file() else None
    found = shutil.which(program)
    return Path(found) if found else None


def static_hdf5(program: str) -> bool:
    """True when the program's ELF file defines H5Fcreate (HDF5 linked in statically);
    False when it imports it, has no HDF5, or cannot be read (scripts, no `nm`)."""
    path = _which(program)
    nm = shutil.which("nm")
    if path is None or nm is None:
        return False
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return False
        out = subprocess.run(
            [nm, "-D", "--defined-only", str(path)], capture_output=True, text=True, timeout=30
        ).stdout
        out += subprocess.run(
            [nm, "--defined-only", str(path)], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.split()[-1].split("@")[0] == PROBE for line in out.splitlines() if line)
