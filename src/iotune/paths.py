"""Where the built pieces are: the runtime library libiotune.so and the kernels.

Each is looked for, in order: an environment variable; the install prefix of this Python
environment (`cmake --install build --prefix .venv` puts them there); the build tree of the
source checkout this package was loaded from ($IOTUNE_BUILD_DIR, else <repo>/build).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

LIB_NAME = "libiotune.so"
_NOT_KERNELS = (".so", ".a", ".cmake", ".txt", ".json", ".xml", ".py", ".sh", ".h5")


class NotFound(FileNotFoundError):
    """A built piece of iotune is missing; str() says where it was looked for and what to do."""


def repo_root() -> Path | None:
    """The source checkout this package was loaded from (src/iotune/..), or None if installed."""
    root = Path(__file__).resolve().parents[2]
    if (root / "CMakeLists.txt").is_file() and (root / "src" / "iotune").is_dir():
        return root
    return None


def build_dir() -> Path | None:
    """The CMake build directory of the checkout: $IOTUNE_BUILD_DIR, else <repo>/build."""
    env = os.environ.get("IOTUNE_BUILD_DIR")
    if env:
        return Path(env)
    root = repo_root()
    return root / "build" if root else None


def _missing(what: str, looked: list[str], hint: str) -> NotFound:
    places = "\n".join(f"  {p}" for p in looked)
    return NotFound(f"{what} not found; looked in:\n{places}\n{hint}")


_BUILD_HINT = "build it first: scripts/install.sh (or cmake -S . -B build && cmake --build build)"


def find_library() -> Path:
    """The path of libiotune.so: $IOTUNE_LIB, {sys.prefix}/lib, or the checkout's build tree."""
    env = os.environ.get("IOTUNE_LIB")
    if env:
        path = Path(env)
        if path.is_file():
            return path.resolve()
        raise NotFound(f"IOTUNE_LIB={env} is not a file")
    candidates = [Path(sys.prefix) / "lib" / LIB_NAME]
    build = build_dir()
    if build is not None:
        candidates.append(build / "runtime" / LIB_NAME)
    for path in candidates:
        if path.is_file():
            return path.resolve()
    raise _missing(LIB_NAME, [str(p) for p in candidates], _BUILD_HINT + ", or set IOTUNE_LIB")


def find_kernels_dir() -> Path:
    """The directory of the built kernels: $IOTUNE_KERNELS_DIR,
    {sys.prefix}/libexec/iotune/kernels, or the checkout's build/kernels."""
    env = os.environ.get("IOTUNE_KERNELS_DIR")
    if env:
        path = Path(env)
        if path.is_dir():
            return path.resolve()
        raise NotFound(f"IOTUNE_KERNELS_DIR={env} is not a directory")
    candidates = [Path(sys.prefix) / "libexec" / "iotune" / "kernels"]
    build = build_dir()
    if build is not None:
        candidates.append(build / "kernels")
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


def list_kernels() -> dict[str, Path]:
    """{name: path} of every built kernel (executables in find_kernels_dir()), sorted by name."""
    return _executables(find_kernels_dir())


def find_kernel(name: str) -> Path:
    """The path of one built kernel, e.g. find_kernel("vpicio")."""
    kernels = list_kernels()
    if name not in kernels:
        known = ", ".join(kernels) or "none"
        raise NotFound(f"no kernel called {name!r} (built kernels: {known})")
    return kernels[name]
