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
import os
import shutil
import subprocess
import sys
import tomllib
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
        )
        if case.family not in FAMILIES:
            raise ValueError(f"{manifest}: case {case.name}: family {case.family!r}")
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


def built(case: Case) -> bool:
    return _stamp(case).exists()


def launcher(case: Case, ranks: int | None = None) -> list[str]:
    """The family's own mpiexec (plain `mpiexec` may be the other family's)."""
    return [f"mpiexec.{case.family}", "-n", str(ranks or case.ranks)]


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


def _source_file(case: Case, dest: Path) -> Path:
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
        return out
    raise ValueError(f"case {case.name}: source scheme {scheme!r} not known to the builder")


def _hdf5_flags(family: str) -> list[str]:
    r = subprocess.run(
        ["pkg-config", "--cflags", "--libs", f"hdf5-{family}"], capture_output=True, text=True
    )
    if r.returncode != 0:
        raise RuntimeError(f"pkg-config hdf5-{family}: {r.stderr.strip()}")
    return r.stdout.split()


def build_case(case: Case) -> None:
    out = bin_dir(case)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if case.build == "mpicc":
        src = _source_file(case, out)
        prog = out / src.stem
        # dynamically linked against the family's parallel HDF5, so the preloaded runtime
        # reaches its calls
        subprocess.run(
            [f"mpicc.{case.family}", "-O2", "-o", str(prog), str(src), *_hdf5_flags(case.family)],
            check=True,
        )
    else:
        raise ValueError(f"case {case.name}: build {case.build!r} not known to the builder")
    _stamp(case).write_text(case.source + "\n")


def build(names: list[str] | None = None, force: bool = False) -> dict[str, str]:
    """Build the named cases (all by default) that are not built yet; {name: outcome}."""
    outcome = {}
    for case in load_cases():
        if names and case.name not in names:
            continue
        if built(case) and not force:
            outcome[case.name] = "cached"
            continue
        try:
            build_case(case)
            outcome[case.name] = "built"
        except (OSError, subprocess.CalledProcessError, RuntimeError, ValueError) as e:
            outcome[case.name] = f"not built: {e}"
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
        for name, what in outcome.items():
            print(f"corpus: {name}: {what}")
        return 0 if all(not w.startswith("not built") for w in outcome.values()) else 1
    case = case_named(args.name)
    print(" ".join([*launcher(case), *command(case, args.dir.resolve())]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
