"""Where the built pieces are: the runtime library libiotune.so and the kernels, per MPI.

A runtime and its kernels are built for one MPI ABI family (FAMILIES: "mpich", the MPICH ABI of
MPICH, Intel MPI, MVAPICH and Cray MPICH; "openmpi"), and several families live side by side.
Each is looked for, in order: an environment variable ($IOTUNE_LIB, $IOTUNE_KERNELS_DIR: one
build, whatever its family); the build tree $IOTUNE_BUILD_DIR names; the install prefix of
this Python environment (lib/iotune/<family>/, libexec/iotune/<family>/kernels, put there by
`cmake --install`); the build trees of the source checkout this package was loaded from
(<repo>/build and <repo>/build-<family>). Each build says its family in iotune-mpi.json.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

LIB_NAME = "libiotune.so"
MPI_INFO = "iotune-mpi.json"  # written by CMake (cmake/IotuneMPI.cmake)
FAMILIES = ("mpich", "openmpi")  # in order of preference for the default
FAMILY_NAMES = {"mpich": "MPICH", "openmpi": "Open MPI"}
_NOT_KERNELS = (".so", ".a", ".cmake", ".txt", ".json", ".xml", ".py", ".sh", ".h5")


class NotFound(FileNotFoundError):
    """A built piece of iotune is missing; str() says where it was looked for and what to do."""


@dataclass(frozen=True)
class Build:
    """The runtime and kernels built for one MPI family, and that MPI's launcher."""

    family: str
    lib: Path
    kernels: Path | None
    where: str  # "install prefix" or "build tree <dir>"
    mpi: dict = field(default_factory=dict, compare=False)  # iotune-mpi.json

    def launcher(self, nprocs: int | None) -> list[str]:
        """This MPI's own launcher with its flags: [mpiexec.openmpi, --oversubscribe, -n, N]."""
        exe = self.mpi.get("mpiexec") or "mpiexec"
        flag = self.mpi.get("numproc_flag") or "-n"
        n = [flag, str(nprocs)] if nprocs else []
        return [exe, *self.mpi.get("preflags", []), *n]


def repo_root() -> Path | None:
    """The source checkout this package was loaded from (src/iotune/..), or None if installed."""
    root = Path(__file__).resolve().parents[2]
    if (root / "CMakeLists.txt").is_file() and (root / "src" / "iotune").is_dir():
        return root
    return None


def build_dir() -> Path | None:
    """The CMake build directory of the checkout's default MPI: $IOTUNE_BUILD_DIR, else
    <repo>/build."""
    env = os.environ.get("IOTUNE_BUILD_DIR")
    if env:
        return Path(env)
    root = repo_root()
    return root / "build" if root else None


def build_dirs() -> list[Path]:
    """Every build tree to look in: $IOTUNE_BUILD_DIR alone, else <repo>/build and
    <repo>/build-*."""
    first = build_dir()
    if first is None:
        return []
    if os.environ.get("IOTUNE_BUILD_DIR"):
        return [first]
    return [first, *sorted(p for p in first.parent.glob("build-*") if p.is_dir())]


def _read_info(path: Path) -> dict:
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def builds() -> dict[str, Build]:
    """{family: Build} of every runtime found, in the order of FAMILIES: a build tree named by
    $IOTUNE_BUILD_DIR first (asked for by name, it wins over what is installed), then the
    install prefix, then the checkout's build trees."""
    found: dict[str, Build] = {}

    def add_trees() -> None:
        for d in build_dirs():
            info = _read_info(d / MPI_INFO)
            fam = info.get("family")
            lib = d / "runtime" / LIB_NAME
            if fam in FAMILIES and fam not in found and lib.is_file():
                found[fam] = Build(fam, lib.resolve(), d / "kernels", f"build tree {d}", info)

    if os.environ.get("IOTUNE_BUILD_DIR"):
        add_trees()
    prefix = Path(sys.prefix)
    for fam in FAMILIES:
        lib = prefix / "lib" / "iotune" / fam / LIB_NAME
        if lib.is_file() and fam not in found:
            kernels = prefix / "libexec" / "iotune" / fam / "kernels"
            info = _read_info(lib.parent / MPI_INFO)
            found[fam] = Build(fam, lib.resolve(), kernels, "install prefix", info)
    add_trees()
    return {fam: found[fam] for fam in FAMILIES if fam in found}


def default_family(available: dict[str, Build] | None = None) -> str | None:
    """$IOTUNE_MPI when it names a family that is built, else the first built of FAMILIES."""
    available = builds() if available is None else available
    wanted = os.environ.get("IOTUNE_MPI", "")
    if wanted in available:
        return wanted
    return next(iter(available), None)


def _missing(what: str, looked: list[str], hint: str) -> NotFound:
    places = "\n".join(f"  {p}" for p in looked)
    return NotFound(f"{what} not found; looked in:\n{places}\n{hint}")


_BUILD_HINT = "build it first: scripts/install.sh (or cmake -S . -B build && cmake --build build)"


def _lib_places(family: str | None) -> list[str]:
    fams = [family] if family else list(FAMILIES)
    places = [str(Path(sys.prefix) / "lib" / "iotune" / f / LIB_NAME) for f in fams]
    trees = [str(d / "runtime" / LIB_NAME) for d in build_dirs()]
    return trees + places if os.environ.get("IOTUNE_BUILD_DIR") else places + trees


def find_build(family: str | None = None) -> Build:
    """The build of one family (default: default_family()); NotFound says what was looked at."""
    if family is not None and family not in FAMILIES:
        raise NotFound(f"unknown MPI family {family!r} (one of {', '.join(FAMILIES)})")
    available = builds()
    fam = family or default_family(available)
    if fam in available:
        return available[fam]
    what = f"{LIB_NAME} for {FAMILY_NAMES[fam]}" if family else LIB_NAME
    built = ", ".join(available) or "none"
    hint = _BUILD_HINT + f", or set IOTUNE_LIB (built for: {built})"
    if family:
        hint = f"build it with IOTUNE_MPI={family} scripts/install.sh (built for: {built})"
    raise _missing(what, _lib_places(family), hint)


def library_family(lib: str | os.PathLike[str]) -> str | None:
    """The family a libiotune.so was built for: from the iotune-mpi.json beside it (install)
    or of its build tree, else from the tag the library carries (it links no MPI)."""
    lib = Path(lib).resolve()
    for info in (lib.parent / MPI_INFO, lib.parent.parent / MPI_INFO):
        fam = _read_info(info).get("family")
        if fam in FAMILIES:
            return fam
    try:
        tag = re.search(rb"iotune-mpi-family=([a-z]+)\0", lib.read_bytes())
    except OSError:
        return None
    fam = tag.group(1).decode() if tag else None
    return fam if fam in FAMILIES else None


def find_library(family: str | None = None) -> Path:
    """The path of libiotune.so: $IOTUNE_LIB, else the build of family (default: the default
    family) in {sys.prefix}/lib/iotune/<family> or the checkout's build trees."""
    env = os.environ.get("IOTUNE_LIB")
    if env:
        path = Path(env)
        if path.is_file():
            return path.resolve()
        raise NotFound(f"IOTUNE_LIB={env} is not a file")
    return find_build(family).lib


def find_kernels_dir(family: str | None = None) -> Path:
    """The directory of the built kernels: $IOTUNE_KERNELS_DIR, else those of the family's
    build (default family): {sys.prefix}/libexec/iotune/<family>/kernels or build*/kernels."""
    env = os.environ.get("IOTUNE_KERNELS_DIR")
    if env:
        path = Path(env)
        if path.is_dir():
            return path.resolve()
        raise NotFound(f"IOTUNE_KERNELS_DIR={env} is not a directory")
    try:
        build = find_build(family)
    except NotFound:
        build = None
    candidates = [build.kernels] if build and build.kernels else []
    if not candidates:
        fams = [family] if family else list(FAMILIES)
        candidates = [Path(sys.prefix) / "libexec" / "iotune" / f / "kernels" for f in fams]
        candidates += [d / "kernels" for d in build_dirs()]
    for path in candidates:
        if path.is_dir() and _executables(path):
            return path.resolve()
    raise _missing(
        "built kernels",
        [str(p) for p in candidates],
        _BUILD_HINT + ", or set IOTUNE_KERNELS_DIR",
    )


def _executables(directory: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(directory.iterdir()):
        if (
            path.is_file()
            and os.access(path, os.X_OK)
            and not path.name.startswith(".")
            and not path.name.endswith(_NOT_KERNELS)
            and ".so." not in path.name
        ):
            found[path.name] = path.resolve()
    return found


def list_kernels(family: str | None = None) -> dict[str, Path]:
    """{name: path} of every built kernel (executables in find_kernels_dir()), sorted by name."""
    return _executables(find_kernels_dir(family))


def find_kernel(name: str, family: str | None = None) -> Path:
    """The path of one built kernel, e.g. find_kernel("vpicio") (of the default family)."""
    kernels = list_kernels(family)
    if name not in kernels:
        known = ", ".join(kernels) or "none"
        raise NotFound(f"no kernel called {name!r} (built kernels: {known})")
    return kernels[name]
