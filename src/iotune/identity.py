"""What a study is about: its application, its default name, and the refusal to mix two
applications' timings in one study or output directory.

A study's default name is the application's program (the program after the launcher and the
launcher's options: `mpiexec -n 4 ./vpicio x` -> `vpicio`) plus a short hash of the whole
command, so two commands never share a study by accident and the same command always finds
its own study again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path

from iotune import launch

MARK = "iotune-study.json"  # in the output directory: which study and command it holds


class OtherCommand(ValueError):
    """A study or output directory made by another command; str() names both."""


def application(command: Sequence[str]) -> list[str]:
    """The application's part of a command (without the launcher and its options)."""
    return launch.split_launcher(command)[1] or list(command)


def command_text(command: Sequence[str]) -> str:
    return shlex.join(command)


# interpreters whose program is a script: the study is named after the script
_INTERPRETER = re.compile(r"(python|pypy|perl|ruby|Rscript|julia|node|bash|sh|dash)[\d.]*")
# Python's options that take the next word as their value (python -W ignore, -X dev)
_VALUE_FLAGS = frozenset({"-W", "-X", "--check-hash-based-pycs"})


def program_name(app: Sequence[str]) -> str:
    """The name a study is known by: the program's (`./vpicio x` -> vpicio); for an
    interpreter, its script's (`python3 -u train.py` -> train.py) or module's (`python3 -m
    pkg.tool` -> pkg.tool); the interpreter's own when it runs code given inline (-c)."""
    if not app:
        return "app"
    program = Path(app[0]).name
    if not _INTERPRETER.fullmatch(program):
        return program
    i = 1
    while i < len(app):
        word = app[i]
        if word in ("-m",) and i + 1 < len(app):
            return app[i + 1]
        if word in ("-c", "-e", "--eval", "-"):
            return program
        if word == "--":
            return Path(app[i + 1]).name if i + 1 < len(app) else program
        if not word.startswith("-"):
            return Path(word).name
        i += 2 if word in _VALUE_FLAGS and program.startswith(("python", "pypy")) else 1
    return program


def default_name(command: Sequence[str]) -> str:
    program = program_name(application(command))
    digest = hashlib.sha256(command_text(command).encode()).hexdigest()[:8]
    return f"{program}-{digest}"


def check_same(what: str, old: str | None, new: str, force: bool) -> None:
    """Refuses (OtherCommand) when `what` was made by the command `old`, not `new`."""
    if old is None or old == new or force:
        return
    raise OtherCommand(
        f"{what} was made by another command:\n  was: {old}\n  now: {new}\n"
        "use another --study / --out, or --allow-other-command to continue it anyway"
    )


def claim_directory(out: Path, study: str, command: str, force: bool) -> None:
    """Records (or checks) which study and command an output directory holds."""
    mark = out / MARK
    if mark.is_file():
        try:
            old = json.loads(mark.read_text())
        except (OSError, ValueError):
            old = {}
        check_same(f"output directory {out}", old.get("command"), command, force)
    out.mkdir(parents=True, exist_ok=True)
    mark.write_text(json.dumps({"study": study, "command": command}, indent=1) + "\n")


LOCK = ".iotune-running.lock"  # in the output directory: held by the run writing its results
# what a run leaves in its output directory before it has run anything (and a trials' scratch
# directory, empty): a refused run removes them from the directories it made (new_directories)
BOOKKEEPING = (LOCK, MARK)


def new_directories(*paths: Path | None) -> list[Path]:
    """The directories that making `paths` would create (each missing one and its missing
    ancestors), deepest first: what a refused run must remove again (unused)."""
    made: list[Path] = []
    for path in paths:
        if path is None:
            continue
        p = Path(path).absolute()
        while not p.exists() and p != p.parent:
            if p not in made:
                made.append(p)
            p = p.parent
    return sorted(made, key=lambda q: len(q.parts), reverse=True)


def remove_unused(made: Sequence[Path]) -> None:
    """Removes the directories a run made (new_directories) when they hold nothing of a study:
    at most its bookkeeping (the lock, no longer held by anyone; the mark) and an empty scratch
    directory. A refused command (the output directory held by another run, a wrong launcher,
    no such study) leaves no new file or directory behind; one that ran anything keeps all."""
    import fcntl
    import os

    for d in made:
        if not d.is_dir() or any(
            e.name not in (*BOOKKEEPING, "scratch") or (e.name == "scratch" and any(e.iterdir()))
            for e in d.iterdir()
        ):
            continue
        lock = d / LOCK
        if lock.exists():
            fd = os.open(lock, os.O_RDWR)
            try:
                try:  # another run that holds it now owns the directory
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                lock.unlink()
            finally:
                os.close(fd)
        with contextlib.suppress(OSError):
            (d / MARK).unlink(missing_ok=True)
            if (d / "scratch").is_dir():
                (d / "scratch").rmdir()
            d.rmdir()


class Busy(RuntimeError):
    """Another `iotune tune` of this process's user is running in the same place."""


@contextlib.contextmanager
def running_alone(out: Path) -> Iterator[None]:
    """Holds the output directory `out` (a study's results) for one `iotune tune` at a time: a
    second run writing the same report (the same command started twice) is refused (Busy)
    instead of measuring under the other's load and overwriting its results. flock: released
    when the holder leaves, or its process ends however it ends."""
    import fcntl
    import os

    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise Busy(
                f"another `iotune tune` (process {other}) is writing its results in {out}: two "
                "at once would measure each other's load and overwrite each other's report; "
                "wait for it, give another --out, or add a worker to its study with "
                "--search-only"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)


def _trials_lock(where: Path) -> Path:
    """The lock of a directory that trials run in (not isolated): in this user's directory of
    the system's temporary files, named by the directory's resolved path (nothing is left in
    the user's directory, where the application's own files are)."""
    import os
    import tempfile

    digest = hashlib.sha256(str(Path(where).resolve()).encode()).hexdigest()[:24]
    base = Path(tempfile.gettempdir()) / f"iotune-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    return base / f"trials-{digest}.lock"


@contextlib.contextmanager
def trials_alone(where: Path, study: str, out: Path) -> Iterator[None]:
    """Holds the directory `where` that a study's trials run in (not isolated: the application
    runs there and its files land there) for that study alone: a second `iotune tune` of this
    user on this host whose trials would run in the same directory (another --out, another
    study) is refused (Busy), since the application's files of one study's trials would be
    overwritten or read by the other's. Isolated trials each have a scratch directory of their
    own and take no such lock. flock: released however the holder ends."""
    import fcntl
    import os

    try:
        fd = os.open(_trials_lock(where), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:  # no temporary directory to lock in (full, read-only, another's): the
        yield  # study runs as it did before there was this hold, rather than not at all
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 4096, 0).decode(errors="replace").strip()
            try:
                held = json.loads(other)
                who = (f"process {held['pid']}: study {held['study']!r}, results in "
                       f"{held['out']}")  # fmt: skip
            except (ValueError, KeyError, TypeError):
                who = f"process {other or '?'}"
            raise Busy(
                f"another `iotune tune` ({who}) runs its trials in {where}: the application's "
                "files of one study's trials would be overwritten or read by the other's; wait "
                "for it, run this study from another directory, or add --isolate (each trial in "
                "a scratch directory of its own)"
            ) from None
        record = {"pid": os.getpid(), "study": study, "out": str(Path(out).resolve())}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        yield
    finally:
        os.close(fd)
