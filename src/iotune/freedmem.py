"""Keep a VM from handing freed memory back to its host while a study (or a benchmark) runs.

On a VM whose kernel reports free pages to the hypervisor (virtio-balloon free page reporting),
memory freed for more than a moment goes back to the host, and the next program that allocates
it pays a host page fault per page: a run that writes a few hundred MiB into the page cache then
takes 3-7x longer than one that reuses memory freed just before it (bench/README.md, "The page
cache's two modes"). Which speed a run gets depends on how long ago the previous run's memory
was freed, not on the settings being compared: noise, for every comparison.

Some kernels (this project's development VM's) have a parameter for how long freed memory must
stay free before it is reported, `/sys/module/page_reporting/parameters/min_free_ms`. `hold()`
raises it for the duration of a study and restores the old value afterwards, also when the
study fails or is interrupted (SIGTERM, Ctrl-C: iotune.interrupt turns them into an exception,
so the `finally` here runs). Where the parameter does not exist (bare metal, a mainline kernel)
or cannot be written (not root), it changes nothing and the returned record says why.

Several holders at once (two studies, a study beside a benchmark) share one hold: a small state
file under /run/iotune (locked with flock) keeps the value found before the first holder and
the holders' process ids; the last holder to leave restores that value. A holder killed with
SIGKILL cannot restore anything, but the state file still knows the original value: the next
holder restores it when it leaves (holders that no longer exist are dropped).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from iotune import inputs, interrupt

PARAM = Path("/sys/module/page_reporting/parameters/min_free_ms")
HOLD_MS = 300_000  # longer than any gap between two runs; this kernel refuses 600000


def default_state_dir() -> Path:
    """/run/iotune where it can be written (root), else a directory of this user in /tmp."""
    run = Path("/run")
    if os.access(run, os.W_OK):
        return run / "iotune"
    return Path(tempfile.gettempdir()) / f"iotune-{os.getuid()}"


def _alive(pid: object) -> bool:
    """Whether pid names a running process (0, negative, huge and non-integer ids do not:
    os.kill would signal a process group or overflow)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid < 2**31:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def state_path(state_dir: Path, param: Path) -> Path:
    """The state file of the hold of param (one per parameter)."""
    key = hashlib.sha1(str(param.resolve()).encode()).hexdigest()[:12]
    return state_dir / f"hold-{key}.json"


@contextlib.contextmanager
def _locked(state_dir: Path, param: Path) -> Iterator[Path | None]:
    """The state file of param's hold, with its lock held; None when no state can be kept
    (the hold then works for this process alone, as before there were several). The lock file
    goes with the state file when the last holder leaves: a process that locked a file removed
    meanwhile locks the new one instead."""
    state = state_path(state_dir, param)
    lock = state.with_suffix(".lock")
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        while True:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.stat(lock).st_ino == os.fstat(fd).st_ino:
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
    except OSError:
        yield None
        return
    try:
        yield state
        if not state.exists():
            lock.unlink(missing_ok=True)
    finally:
        os.close(fd)


def _load(state: Path | None) -> dict[str, Any]:
    if state is None or not state.exists():
        return {}
    try:
        data = inputs.load_json(state, "freed-memory hold state", max_bytes=1 << 20)
    except inputs.InputError:
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("holders"), list):
        return {}
    data["holders"] = [p for p in data["holders"] if _alive(p)]
    return data


def _save(state: Path | None, data: dict[str, Any]) -> None:
    if state is None:
        return
    if not data.get("holders"):
        state.unlink(missing_ok=True)
        return
    tmp = state.with_suffix(".tmp")
    tmp.write_text(json.dumps(data) + "\n")
    tmp.replace(state)


def number(text: object) -> int | None:
    """A small non-negative decimal number (as sysfs writes them), else None."""
    if isinstance(text, str) and re.fullmatch(r"[0-9]{1,18}", text):
        return int(text)
    return None


def _read(param: Path) -> str:
    return inputs.read_text(param, "page reporting parameter", max_bytes=1 << 16).strip()


def _write(param: Path, value: str) -> None:
    with open(param, "w", encoding="ascii") as f:  # sysfs: one write of the whole value
        f.write(f"{value}\n")


def _enter(param: Path, hold_ms: int, state_dir: Path) -> dict[str, Any]:
    with interrupt.deferred(), _locked(state_dir, param) as state:
        data = _load(state)
        try:
            now = _read(param)
            if number(now) is None:
                return {
                    "held": False,
                    "why": f"{param}: not a number of milliseconds: {now[:40]!r}",
                }
            # a state file left means a hold is in force (its holders alive, or killed before
            # they could restore): the value before it is the one to restore
            was = data["was"] if number(data.get("was")) is not None else now
            if number(now) < hold_ms:
                _write(param, str(hold_ms))
        except (OSError, inputs.InputError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            return {"held": False, "why": f"{param}: {why}"}
        others = len(data.get("holders", []))
        data.update(param=str(param), was=was, holders=[*data.get("holders", []), os.getpid()])
        try:
            _save(state, data)
        except OSError:
            pass  # held for this process alone
    rec: dict[str, Any] = {"held": True, "param": str(param), "was": was, "set": str(hold_ms)}
    if others:
        rec["shared_with"] = others
    return rec


def _leave(param: Path, rec: dict[str, Any], state_dir: Path) -> None:
    with interrupt.deferred(), _locked(state_dir, param) as state:
        data = _load(state)
        holders = list(data.get("holders", []))
        if os.getpid() in holders:
            holders.remove(os.getpid())
        data["holders"] = holders
        if not holders:
            try:
                was = data.get("was")
                _write(param, was if number(was) is not None else rec["was"])
            except OSError:
                return  # the state file keeps the value for the next holder to restore
        try:
            _save(state, data)
        except OSError:
            pass


def repair(param: Path | None = None, state_dir: Path | None = None) -> str | None:
    """Restores a hold whose holders all died without restoring it (killed with SIGKILL);
    returns the value restored, None when there was nothing to repair (or it cannot be)."""
    param = param or PARAM
    state_dir = state_dir or default_state_dir()
    if not state_path(state_dir, param).exists():
        return None
    with interrupt.deferred(), _locked(state_dir, param) as state:
        data = _load(state)
        was = data.get("was")
        if not data or data["holders"] or number(was) is None:
            return None
        try:
            _write(param, was)
        except OSError:
            return None
        _save(state, data)  # no holders: removed
    return was


@contextlib.contextmanager
def hold(
    param: Path | None = None, hold_ms: int = HOLD_MS, state_dir: Path | None = None
) -> Iterator[dict[str, Any]]:
    """Context: freed memory is kept by the VM; yields what was done, for the run's record:
    {"held": True, "param", "was", "set"} (and "shared_with": other holders at the start), or
    {"held": False, "why"} when nothing could be changed."""
    param = param or PARAM
    state_dir = state_dir or default_state_dir()
    rec = _enter(param, hold_ms, state_dir)
    if not rec["held"]:
        yield rec
        return
    try:
        yield rec
    finally:
        _leave(param, rec, state_dir)


def maybe_hold(enabled: bool, **kw: Any) -> contextlib.AbstractContextManager[dict[str, Any]]:
    """hold() when enabled, else a context that records that nothing was held."""
    return hold(**kw) if enabled else contextlib.nullcontext({"held": False, "why": "not asked"})
