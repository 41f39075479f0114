"""Which MPI ABI family a program or a launcher belongs to, and so which runtime to preload.

A runtime built for one family must not be preloaded into a program of the other. The family
of a program is read from the MPI library it loads (the dynamic dependencies `ldd` resolves,
so a library that links MPI counts too); that of a launcher from its name (mpirun.openmpi,
mpiexec.hydra, or where mpirun's symbolic links lead) or, for a plain mpirun/mpiexec, from what
its --version says.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from iotune import paths

# sonames of the MPI libraries: Open MPI's libmpi.so.40 (4.x, 5.x), .20 (2.x, 3.x); the MPICH
# ABI's libmpi.so.12 (MPICH, Intel MPI, MVAPICH) and libmpich*.so (MPICH, Cray MPICH).
_OPENMPI_LIB = re.compile(r"^(libmpi\.so\.(?!12\b)\d+|libopen-(pal|rte)\.so\b)")
_MPICH_LIB = re.compile(r"^(libmpi\.so\.12\b|libmpich[a-z_]*\.so\b|libmpi_intel|libmpifort)")
_OPENMPI_NAME = re.compile(r"openmpi|orterun|prterun|ompi")
_MPICH_NAME = re.compile(r"mpich|hydra|mvapich|intel")


@dataclass(frozen=True)
class Choice:
    """The runtime picked for a command, and why."""

    build: paths.Build | None  # None when IOTUNE_LIB names the library
    lib: Path
    family: str | None
    reason: str

    def describe(self) -> str:
        name = paths.FAMILY_NAMES.get(self.family or "", "unknown MPI")
        return f"runtime for {name} ({self.lib}): {self.reason}"

    def launcher_build(self) -> paths.Build | None:
        """The build whose MPI launches the command: the chosen one; for a library named by
        IOTUNE_LIB, the build of its family when there is one (its own mpiexec, not the one
        on PATH, which may belong to the other MPI)."""
        if self.build is not None or not self.family:
            return self.build
        try:
            return paths.find_build(self.family)
        except paths.NotFound:
            return None


def _family_of_libs(names: Sequence[str]) -> tuple[str | None, str]:
    for name in names:
        if name.startswith("libmpi_cray"):
            return "mpich", name
        if _OPENMPI_LIB.match(name):
            return "openmpi", name
        if _MPICH_LIB.match(name):
            return "mpich", name
    return None, ""


def loaded_libraries(program: str | os.PathLike[str]) -> list[str]:
    """The base names of the shared libraries a program loads (`ldd`), or [] when it cannot
    be read (a script, a static program, no ldd)."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    try:
        out = subprocess.run(
            [ldd, str(program)], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    names = []
    for line in out.splitlines():
        word = line.strip().split(" ", 1)[0]
        if ".so" in word:
            names.append(os.path.basename(word))
    return names


def family_of_program(program: str | os.PathLike[str]) -> tuple[str | None, str]:
    """(family, the MPI library that says so) of a program or shared library, or (None, "")."""
    return _family_of_libs(loaded_libraries(program))


# interpreters whose programs are scripts: their MPI is that of the interpreter's mpi4py
_PYTHON = re.compile(r"(python|pypy)[\d.]*")
# finds mpi4py's MPI extension without loading it (importing mpi4py.MPI would load, and by
# default initialise, the MPI library); the package itself is cheap to import
_MPI4PY_PROBE = (
    "import importlib.util as u\n"
    "try:\n    s = u.find_spec('mpi4py.MPI')\nexcept Exception:\n    s = None\n"
    "print(s.origin if s and s.origin else '')"
)


def is_python(name: str | os.PathLike[str]) -> bool:
    """Whether a program is a Python interpreter (python3, python3.11, pypy3, a venv's python)."""
    return bool(_PYTHON.fullmatch(os.path.basename(str(name))))


def family_of_python(python: str | os.PathLike[str]) -> tuple[str | None, str]:
    """(family, why) of the MPI a Python interpreter's programs use: that of its mpi4py (the MPI
    library its MPI extension loads), or (None, why it cannot be told)."""
    try:
        out = subprocess.run(
            [str(python), "-c", _MPI4PY_PROBE],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
            stdin=subprocess.DEVNULL,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    if not out:
        return None, f"{python} has no importable mpi4py"
    fam, lib = family_of_program(out)
    if fam is None:
        return None, f"the MPI library of {python}'s mpi4py ({out}) is not recognised"
    return fam, f"{os.path.basename(str(python))}'s mpi4py loads {lib}"


# words a Python program that uses MPI holds (itself or through h5py/netCDF4 with MPI)
_MPI_WORDS = re.compile(rb"mpi4py|h5py|netCDF4|\bMPI\b")


def python_script(app: Sequence[str]) -> str | None:
    """The script of a Python command (`python3 -u w.py x` -> w.py), None for -c/-m/stdin."""
    i = 1
    while i < len(app):
        word = app[i]
        if word in ("-c", "-m", "-"):
            return None
        if not word.startswith("-"):
            return word
        i += 2 if word in ("-W", "-X") else 1
    return None


def family_of_python_command(
    app: Sequence[str], cwd: str | os.PathLike[str] | None = None
) -> tuple[str | None, str, str]:
    """(family, why, note) of a Python command (interpreter + script): that of the
    interpreter's mpi4py when the script may use MPI (it names mpi4py, h5py, netCDF4 or MPI);
    (None, "", "") for a script that names none of them; (None, "", note) when it cannot be
    told (no mpi4py)."""
    from iotune.inputs import InputError, read_bytes

    program = resolve_program(app[0], cwd)
    if program is None:
        return None, "", ""
    script = python_script(app)
    if script is not None:
        try:  # bounded, never blocking
            text = read_bytes(Path(cwd or ".") / script, "script", 16 << 20)
        except InputError:
            text = None
        if text is not None and not _MPI_WORDS.search(text):
            return None, "", ""  # no MPI in it: nothing to match
    fam, why = family_of_python(program)
    if fam is None:
        return None, "", f"the MPI of the Python program cannot be checked: {why}"
    name = os.path.basename(script) if script else app[0]
    return fam, f"{name} runs on {paths.FAMILY_NAMES[fam]} ({why})", ""


def resolve_program(name: str, cwd: str | os.PathLike[str] | None = None) -> Path | None:
    """The file a command name runs: a path (relative to cwd), or a name looked up in PATH."""
    if "/" in name:
        path = Path(cwd or ".") / name
        return path if path.is_file() else None
    found = shutil.which(name)
    return Path(found) if found else None


def family_of_launcher(name: str) -> tuple[str | None, str]:
    """(family, why) of an MPI launcher: its name, where its links lead, else its --version."""
    path = resolve_program(name)
    names = [os.path.basename(name)]
    if path is not None:
        names.append(path.resolve().name)
    for n in names:
        if _OPENMPI_NAME.search(n):
            return "openmpi", f"the launcher {name} is Open MPI's ({n})"
        if _MPICH_NAME.search(n):
            return "mpich", f"the launcher {name} is MPICH's ({n})"
    if path is None or not re.fullmatch(r"(mpirun|mpiexec)(\..*)?", os.path.basename(name)):
        return None, ""
    try:
        out = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None, ""
    text = out.stdout + out.stderr
    if re.search(r"Open MPI|OpenRTE|Open RTE", text):
        return "openmpi", f"{name} --version says Open MPI"
    if re.search(r"HYDRA|MPICH|Intel\(R\) MPI|MVAPICH", text):
        return "mpich", f"{name} --version says MPICH"
    return None, ""


def family_of_command(
    command: Sequence[str], cwd: str | os.PathLike[str] | None = None
) -> tuple[str | None, str]:
    """(family, why) of a launch command: the application's MPI library first (the truth for
    the processes the runtime goes into), else the launcher's MPI, else (None, "")."""
    from iotune import launchers

    launcher, app = launchers.split_launcher(command)
    if app:
        program = resolve_program(app[0], cwd)
        if program is not None:
            fam, lib = family_of_program(program)
            if fam:
                return fam, f"{app[0]} loads {lib}"
            if is_python(app[0]) or is_python(program.resolve()):
                fam, why, _ = family_of_python_command(app, cwd)
                if fam:
                    return fam, why
    if launcher:
        return family_of_launcher(launcher[0])
    return None, ""


def choose(
    command: Sequence[str] | None = None,
    family: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Choice:
    """The runtime to preload into command: the family asked for; else $IOTUNE_LIB; else the
    family of the command (its program, else its launcher); else the default family.
    Raises paths.NotFound when that runtime is not built."""
    if family:
        build = paths.find_build(family)
        return Choice(build, build.lib, family, f"asked for (--mpi {family})")
    env = os.environ.get("IOTUNE_LIB")
    if env:
        lib = paths.find_library()
        return Choice(None, lib, paths.library_family(lib), "IOTUNE_LIB is set")
    fam, why = family_of_command(command or [], cwd) if command else (None, "")
    if fam:
        build = paths.find_build(fam)
        return Choice(build, build.lib, fam, why)
    build = paths.find_build()
    available = paths.builds()
    if len(available) == 1:
        reason = "the only runtime built"
    else:
        reason = "the default (no MPI seen in the command)" if command else "the default"
    return Choice(build, build.lib, build.family, reason)


# Open MPI's own settings files for MCA parameters (the user's first: it wins)
MCA_FILES = ("~/.openmpi/mca-params.conf", "/etc/openmpi/openmpi-mca-params.conf")
COMPONENT_NAMES = {"ompio": "OMPIO", "romio": "ROMIO", "romio321": "ROMIO"}


def _component_of(value: str) -> str | None:
    """The component an `io` MCA value selects: "romio321", "ompio" or None (a list that
    leaves the choice to Open MPI's priorities, which put OMPIO first)."""
    v = value.strip()
    exclude = v.startswith("^")
    romio, ompio = "romio" in v, "ompio" in v
    if (not exclude and romio and not ompio) or (exclude and ompio and not romio):
        return "romio321" if exclude else v.split(",")[0]
    if not exclude and ompio and not romio:
        return "ompio"
    return None


def io_component(
    command: Sequence[str] | None, family: str | None, env: Mapping[str, str] | None = None
) -> tuple[str | None, str]:
    """(component, why) of the MPI-IO a launch uses: "romio" for the MPICH family; for Open
    MPI the `io` MCA parameter from the launcher's --mca/-mca/--gmca, else $OMPI_MCA_io, else
    the user's and the system's mca-params.conf, else OMPIO (Open MPI's default); (None, "")
    for an unknown family. The runtime reads the same in force (the profile's
    mpi_library.io_component)."""
    if family == "mpich":
        return "romio", "the MPI-IO of the MPICH family"
    if family != "openmpi":
        return None, ""
    from iotune import launchers

    env = os.environ if env is None else env
    launcher, _ = launchers.split_launcher(command or [])
    for i, word in enumerate(launcher[:-2]):
        if word in ("--mca", "-mca", "--gmca", "-gmca") and launcher[i + 1] == "io":
            found = _component_of(launcher[i + 2])
            if found:
                return found, f"{word} io {launcher[i + 2]} on the launcher's command line"
    if env.get("OMPI_MCA_io"):
        found = _component_of(env["OMPI_MCA_io"])
        if found:
            return found, f"OMPI_MCA_io={env['OMPI_MCA_io']}"
    from iotune.inputs import InputError, read_bytes

    for name in MCA_FILES:
        path = Path(os.path.expanduser(name))
        if not path.exists():
            continue
        try:  # never blocks (a FIFO, a device: refused at once), bounded
            lines = read_bytes(path, "MCA parameter file", 1 << 20).decode(errors="replace")
        except InputError:
            continue  # Open MPI cannot use it either: its default stands
        lines = lines.splitlines()
        for line in lines:
            key, eq, value = line.partition("=")
            if eq and key.strip() == "io" and _component_of(value.split("#")[0]):
                return _component_of(value.split("#")[0]), f"io = {value.strip()} in {path}"
    return "ompio", "Open MPI's default"


def romio_only(name: str) -> bool:
    """An MPI-IO hint that only ROMIO reads (Open MPI's OMPIO ignores it; not CephFS's object
    size, which the runtime sets itself whichever component runs)."""
    from iotune import params
    from iotune.search import inert

    p = params.find(name)
    return p is not None and p.is_hint and name not in inert.ANY_COMPONENT


def ompio_only(name: str) -> bool:
    """An Open MPI parameter that only matters under OMPIO (fcoll, io_ompio_*), or `io`."""
    from iotune import params

    p = params.find(name)
    return p is not None and p.is_mca


def unread_under(name: str, io: str) -> bool:
    """Whether a parameter is never read by the MPI-IO component that the `io` MCA value `io`
    selects (a configuration that searches `io`): under ROMIO (romio321) Open MPI's OMPIO
    parameters (fcoll, io_ompio_*), under OMPIO the ROMIO-only hints. `io` itself is read."""
    component = _component_of(io)
    if name == "io" or component is None:
        return False
    return ompio_only(name) if component.startswith("romio") else romio_only(name)


def unread_in(settings: Mapping[str, str]) -> dict[str, str]:
    """{name: why} for the settings of a configuration that the MPI-IO component its own `io`
    value selects never reads (unread_under): Open MPI's OMPIO parameters beside io=romio321,
    ROMIO-only hints beside io=ompio. They change nothing where they stand, so a study need not
    measure their removal nor recommend them. {} without `io`."""
    io = settings.get("io")
    if io is None:
        return {}
    name = COMPONENT_NAMES.get(_component_of(io) or "", "")
    return {
        k: f"Open MPI's {name}, chosen by io={io}, never reads it"
        for k in settings
        if unread_under(k, io)
    }


def space_for(sp, family: str | None, component: str | None = None):
    """The search space of what the application's MPI and MPI-IO component use: without Open
    MPI's MCA parameters under any other MPI, or under Open MPI with ROMIO chosen at launch;
    without ROMIO-only hints under Open MPI's OMPIO (it never reads them). Guesses lose the
    settings left out (a guess left empty is dropped). The same space when nothing is left
    out."""
    if family != "openmpi" or (component or "").startswith("romio"):
        foreign = ompio_only
    elif component == "ompio":
        foreign = romio_only
    else:
        return sp
    return without(sp, foreign)


def without(sp, foreign):
    """The space without the parameters for which foreign(name) is true."""
    from dataclasses import replace

    from iotune import space as space_mod

    if not any(foreign(d.name) for d in sp.dims):
        return sp
    guesses = []
    for g in sp.guesses:
        kept = {k: v for k, v in g.settings.items() if not foreign(k)}
        if kept:
            guesses.append(space_mod.Guess(g.name, kept))
    return replace(
        sp,
        dims=[d for d in sp.dims if not foreign(d.name)],
        ties=[t for t in sp.ties if not foreign(t.name) and not foreign(t.to)],
        forbids=[f for f in sp.forbids if not any(foreign(n) for n in f.when)],
        guesses=guesses,
    )
