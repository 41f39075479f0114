#!/usr/bin/env python3
"""The real-application corpus: list, build and run programs nobody on this project wrote.

    python corpus/corpus.py list                 # the cases and whether each is built
    python corpus/corpus.py build [NAME ...]     # build what is missing (cached)
    python corpus/corpus.py command NAME DIR     # the command a run of NAME in DIR is

Tests and benches import it (`sys.path.insert(0, str(REPO / "corpus"))`, `import corpus`):
`load_cases()`, `built(case)`, `command(case, workdir)`, `launcher(case)`, `same_data(case, a, b)`.
The cases are in cases.toml beside this file (its header says what each field means). Built
programs live in the cache, IOTUNE_CORPUS_DIR (default ~/.cache/iotune/corpus), one folder per
case; nothing built or downloaded goes into the repository.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "cases.toml"
FAMILIES = ("mpich", "openmpi")


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    build: str
    family: str
    ranks: int
    argv: tuple[str, ...]
    outputs: tuple[str, ...]
    check: str
    io: str
    about: str
    # added after the first interface (all optional in the manifest):
    layers: tuple[str, ...] = ()  # the layers the program's data goes through: hdf5 mpiio posix
    env: tuple[tuple[str, str], ...] = ()  # the run's environment (run_env gives it as a dict)
    sources: tuple[str, ...] = ()  # more files of the same archive compiled with `source`
    include: tuple[str, ...] = ()  # folders of the archive extracted and put on -I
    cflags: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()  # pkg-config names, {family} replaced (default hdf5-{family})
    headers: tuple[tuple[str, str], ...] = ()  # build glue: generated headers (name, text)
    # known misreadings of iotune on this case: (test, reason) the corpus tests expect to fail
    xfail: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Archive:
    """An upstream source archive: where it is fetched from and its pinned sha256."""

    name: str
    sha256: str
    url: str = ""  # downloaded over http(s) (Debian's source archive)
    pip: str = ""  # or fetched by `pip download` (a PyPI sdist, e.g. "h5py==3.7.0")


LAYERS = ("hdf5", "mpiio", "posix")


def _pairs(value: object, what: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"{what}: a table of strings")
    return tuple(sorted(value.items()))


def load_archives(manifest: Path = MANIFEST) -> dict[str, Archive]:
    with open(manifest, "rb") as f:
        data = tomllib.load(f)
    found = {}
    for name, entry in data.get("archive", {}).items():
        found[name] = Archive(
            name=name, sha256=entry["sha256"], url=entry.get("url", ""), pip=entry.get("pip", "")
        )
        if bool(found[name].url) == bool(found[name].pip):
            raise ValueError(f"{manifest}: archive {name}: give url or pip (one of them)")
    return found


def load_cases(manifest: Path = MANIFEST) -> list[Case]:
    with open(manifest, "rb") as f:
        data = tomllib.load(f)
    cases = []
    for entry in data.get("case", []):
        case = Case(
            name=entry["name"],
            source=entry["source"],
            build=entry["build"],
            family=entry["family"],
            ranks=int(entry.get("ranks", 2)),
            argv=tuple(entry["argv"]),
            outputs=tuple(entry.get("outputs", ())),
            check=entry.get("check", "exit"),
            io=entry.get("io", "write"),
            about=entry.get("about", ""),
            layers=tuple(entry.get("layers", ())),
            env=_pairs(entry.get("env", {}), f"{manifest}: case {entry['name']}: env"),
            sources=tuple(entry.get("sources", ())),
            include=tuple(entry.get("include", ())),
            cflags=tuple(entry.get("cflags", ())),
            libs=tuple(entry.get("libs", ())),
            headers=_pairs(entry.get("headers", {}), f"{manifest}: case {entry['name']}: headers"),
            xfail=_pairs(entry.get("xfail", {}), f"{manifest}: case {entry['name']}: xfail"),
        )
        if case.family not in FAMILIES:
            raise ValueError(f"{manifest}: case {case.name}: family {case.family!r}")
        if set(case.layers) - set(LAYERS):
            raise ValueError(f"{manifest}: case {case.name}: layers {case.layers!r}")
        cases.append(case)
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise ValueError(f"{manifest}: a case name is used twice")
    return cases


def case_named(name: str) -> Case:
    for case in load_cases():
        if case.name == name:
            return case
    raise KeyError(name)


def cache_dir() -> Path:
    return Path(os.environ.get("IOTUNE_CORPUS_DIR") or Path.home() / ".cache/iotune/corpus")


def bin_dir(case: Case) -> Path:
    return cache_dir() / case.name


def _stamp(case: Case) -> Path:
    return bin_dir(case) / ".built"


def _recipe(case: Case) -> str:
    """What the build of `case` depends on: a case whose recipe changed is built again."""
    return repr((case.source, case.build, case.family, case.sources, case.include, case.cflags,
                 case.libs, case.headers)) + "\n"  # fmt: skip


def _failed(case: Case) -> Path:
    return cache_dir() / f".{case.name}.not-built"


def why_not_built(case: Case) -> str:
    """Why `case` is not built: the last build's reason, or that none was tried."""
    try:
        return "not built: " + _failed(case).read_text().strip()
    except OSError:
        return f"not built (python corpus/corpus.py build {case.name}; scripts/install.sh runs it)"


def built(case: Case) -> bool:
    try:
        return _stamp(case).read_text() == _recipe(case)
    except OSError:
        return False


def launcher(case: Case, ranks: int | None = None) -> list[str]:
    """The family's own mpiexec (plain `mpiexec` may be the other family's)."""
    return [f"mpiexec.{case.family}", "-n", str(ranks or case.ranks)]


def run_env(case: Case) -> dict[str, str]:
    """The variables a run of `case` needs besides the caller's environment (e.g.
    HDF5_NOCLEANUP=1, so that h5perf leaves its files for the data check); Open MPI's
    permission to run as root is given when running as root."""
    env = dict(case.env)
    if case.family == "openmpi" and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def command(case: Case, workdir: Path, python: str | None = None) -> list[str]:
    """The program's command (without the launcher) for a run in `workdir` (also its cwd)."""
    subst = {
        "bin": str(bin_dir(case)),
        "workdir": str(workdir),
        "python": python or sys.executable,
    }
    return [arg.format(**subst) for arg in case.argv]


def outputs(case: Case, workdir: Path) -> list[Path]:
    return sorted({p for pattern in case.outputs for p in workdir.glob(pattern)})


def same_data(case: Case, a: Path, b: Path) -> tuple[bool, str]:
    """Do two runs of `case` (in folders a and b) hold the same data? (equal, detail)"""
    if case.check == "exit":
        return True, "the program checks its own data"
    files_a, files_b = outputs(case, a), outputs(case, b)
    names_a = [p.relative_to(a) for p in files_a]
    names_b = [p.relative_to(b) for p in files_b]
    if names_a != names_b:
        return False, f"different files: {names_a} vs {names_b}"
    if not names_a:
        return False, "no output files"
    for name in names_a:
        if case.check == "h5diff":
            cmd = ["h5diff", str(a / name), str(b / name)]
        elif case.check == "cmp":
            cmd = ["cmp", str(a / name), str(b / name)]
        elif case.check == "ncmpidiff":
            cmd = ["ncmpidiff", str(a / name), str(b / name)]
        else:
            raise ValueError(f"case {case.name}: check {case.check!r}")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            return False, f"{case.check} {name}: {(r.stdout + r.stderr).strip()[:300]}"
    return True, f"{case.check} equal on {len(names_a)} file(s)"


# --- building -------------------------------------------------------------------------------


class Unreachable(OSError):
    """An archive could not be downloaded (no network): the case is left unbuilt."""


def archives_dir() -> Path:
    return cache_dir() / "archives"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_archive(archive: Archive) -> Path:
    """The archive in the cache, downloaded first when missing; its sha256 must be the pinned one
    (a mismatch is an error, the file is not kept)."""
    folder = archives_dir()
    folder.mkdir(parents=True, exist_ok=True)
    name = archive.url.rsplit("/", 1)[-1] if archive.url else archive.pip.replace("==", "-")
    for cached in [folder / name, *folder.glob(f"{name}.*")] if archive.pip else [folder / name]:
        if cached.is_file() and _sha256(cached) == archive.sha256:
            return cached
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        if archive.url:
            got = Path(tmp) / name
            try:
                with urllib.request.urlopen(archive.url, timeout=60) as r, open(got, "wb") as f:
                    shutil.copyfileobj(r, f)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                raise Unreachable(f"cannot download {archive.url}: {e}") from None
        else:
            r = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                 ":all:", "--no-build-isolation", "-d", tmp, archive.pip],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            files = list(Path(tmp).iterdir())
            if r.returncode != 0 or len(files) != 1:
                why = (r.stderr.strip().splitlines() or ["no file"])[-1]
                raise Unreachable(f"cannot pip download {archive.pip}: {why}")
            got = files[0]
            name = got.name
        digest = _sha256(got)
        if digest != archive.sha256:
            raise RuntimeError(
                f"{name}: sha256 {digest}, the manifest pins {archive.sha256} (not kept)"
            )
        final = folder / name
        os.replace(got, final)
    return final


def _extract(tarball: Path, members: list[str], dest: Path) -> None:
    """Extract the files and folders `members` (paths below the archive's top folder) into
    dest, keeping their paths; nothing else of the archive."""
    wanted = [m.strip("/") for m in members]
    found = set()
    with tarfile.open(tarball) as tar:
        for info in tar:
            top, _, rel = info.name.partition("/")
            if not rel or not (info.isfile() or info.isdir()):
                continue
            hit = next((w for w in wanted if rel == w or rel.startswith(w + "/")), None)
            if hit is None:
                continue
            found.add(hit)
            info.name = rel
            tar.extract(info, dest, filter="data")
    missing = [w for w in wanted if w not in found]
    if missing:
        raise FileNotFoundError(f"{tarball.name} has no {', '.join(missing)}")


def _source_files(case: Case, dest: Path) -> list[Path]:
    """The case's source files (the main one first) in dest, and its include folders."""
    scheme, _, rest = case.source.partition(":")
    if scheme == "debian-pkg":
        _package, _, path = rest.partition(":")
        src = Path(path)
        if not src.exists():
            raise FileNotFoundError(f"{src} (from Debian's {_package}) is not installed")
        out = dest / src.name.removesuffix(".gz")
        out.write_bytes(
            gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
        )
        return [out]
    if scheme in ("debian-src", "pypi"):
        archive_name, _, path = rest.partition(":")
        archives = load_archives(MANIFEST)
        if archive_name not in archives:
            raise ValueError(f"case {case.name}: no [archive.{archive_name}] in the manifest")
        tarball = fetch_archive(archives[archive_name])
        src_dir = dest / "src"
        _extract(tarball, [path, *case.sources, *case.include], src_dir)
        return [src_dir / p for p in (path, *case.sources)]
    raise ValueError(f"case {case.name}: source scheme {scheme!r} not known to the builder")


def _pkg_flags(name: str) -> list[str]:
    r = subprocess.run(["pkg-config", "--cflags", "--libs", name], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"pkg-config {name}: {r.stderr.strip()}")
    flags = r.stdout.split()
    # Debian's netcdf-mpi.pc names its library folder but not its header folder
    prefix = subprocess.run(
        ["pkg-config", "--variable=prefix", name], capture_output=True, text=True
    ).stdout.strip()
    if prefix and (Path(prefix) / "include").is_dir() and f"-I{prefix}/include" not in flags:
        flags.insert(0, f"-I{prefix}/include")
    return flags


def _hdf5_flags(family: str) -> list[str]:
    return _pkg_flags(f"hdf5-{family}")


def build_case(case: Case) -> None:
    out = bin_dir(case)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if case.build == "mpicc":
        srcs = _source_files(case, out)
        prog = out / srcs[0].stem
        glue = out / "glue"
        glue.mkdir()
        for name, text in case.headers:
            (glue / name).write_text(text)
        includes = [f"-I{glue}", *(f"-I{out / 'src' / d}" for d in case.include)]
        libs = [lib.format(family=case.family) for lib in case.libs or ("hdf5-{family}",)]
        flags = [f for lib in libs for f in _pkg_flags(lib)]
        # dynamically linked against the family's libraries, so the preloaded runtime
        # reaches their calls
        subprocess.run(
            [f"mpicc.{case.family}", "-O2", "-w", *case.cflags, *includes, "-o", str(prog),
             *map(str, srcs), *flags, "-lm"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    elif case.build == "python":
        _source_files(case, out)  # the script(s) run as {bin}/src/<path>
    else:
        raise ValueError(f"case {case.name}: build {case.build!r} not known to the builder")
    _stamp(case).write_text(_recipe(case))


def build(names: list[str] | None = None, force: bool = False) -> dict[str, str]:
    """Build the named cases (all by default) that are not built yet; {name: outcome}."""
    outcome = {}
    unreachable = ""
    for case in load_cases(MANIFEST):
        if names and case.name not in names:
            continue
        if built(case) and not force:
            outcome[case.name] = "cached"
            continue
        try:
            if unreachable and case.source.startswith(("debian-src:", "pypi:")):
                raise Unreachable(unreachable)  # one timeout is enough
            build_case(case)
            outcome[case.name] = "built"
        except Unreachable as e:
            unreachable = str(e)
            outcome[case.name] = f"not built: network unreachable ({e})"
        except subprocess.CalledProcessError as e:
            detail = (e.stderr or "").strip().splitlines()[-3:]
            outcome[case.name] = f"not built: {' '.join(map(str, e.cmd[:1]))} failed: {detail}"
        except (OSError, RuntimeError, ValueError, tarfile.TarError) as e:
            outcome[case.name] = f"not built: {e}"
        why = outcome[case.name].removeprefix("not built: ")
        if outcome[case.name] == "built":
            _failed(case).unlink(missing_ok=True)
        else:
            _failed(case).parent.mkdir(parents=True, exist_ok=True)
            _failed(case).write_text(why + "\n")
    return outcome


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the cases and whether each is built")
    b = sub.add_parser("build", help="build the cases not built yet (default: all)")
    b.add_argument("names", nargs="*")
    b.add_argument("--force", action="store_true", help="rebuild even if built (default: no)")
    c = sub.add_parser("command", help="the command of a run of NAME in DIR")
    c.add_argument("name")
    c.add_argument("dir", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "list":
        for case in load_cases():
            state = "built" if built(case) else "not built"
            print(f"{case.name:24} {case.family:8} {case.io:11} {state:10} {case.about}")
        return 0
    if args.cmd == "build":
        outcome = build(args.names or None, args.force)
        offline = [n for n, w in outcome.items() if w.startswith("not built: network")]
        for name, what in outcome.items():
            if name not in offline:
                print(f"corpus: {name}: {what}")
        if offline:  # one line for all of them
            why = outcome[offline[0]].removeprefix("not built: ")
            print(f"corpus: {why}: not built: {', '.join(offline)}")
        done = sum(built(c) for c in load_cases(MANIFEST))
        print(f"corpus: {done} of {len(load_cases(MANIFEST))} cases built in {cache_dir()}")
        return 0 if all(not w.startswith("not built") for w in outcome.values()) else 1
    case = case_named(args.name)
    print(" ".join([*launcher(case), *command(case, args.dir.resolve())]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
