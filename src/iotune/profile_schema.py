"""The shape of a profile (docs/profile.md), checked before anything reads it: every key the
readers use has the type they expect, every number is finite and in range. `problem(data)` says
what is wrong first ("files[3].time_s.max is not a number"), or None for a usable profile.

Keys a reader does not use are not checked (a newer runtime may add some); optional keys may be
absent or null. A profile from outside is hostile until this passes: the summary, advise and the
knowledge base then never meet a value of the wrong type.
"""

from __future__ import annotations

import math
from typing import Any

LAYERS = ("hdf5", "mpiio", "posix", "stdio")
MAX_NUMBER = 2**64  # counters are 64-bit in the runtime; anything larger is not a count
MAX_RANKS = 2**31 - 1
HISTOGRAMS = ("sizes",)


class _Bad(Exception):
    """Internal: where and what (turned into problem()'s text)."""


def _number(x: Any, where: str, *, minimum: float | None = None, integer: bool = False) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise _Bad(f"{where} is not a number ({type(x).__name__})")
    if isinstance(x, float) and not math.isfinite(x):
        raise _Bad(f"{where} is not a finite number")
    if integer and not isinstance(x, int):
        raise _Bad(f"{where} is not a whole number ({x!r})")
    if abs(x) > MAX_NUMBER:
        raise _Bad(f"{where} is out of range ({x:.3g})")
    if minimum is not None and x < minimum:
        raise _Bad(f"{where} is below {minimum:g} ({x!r})")


def _type(x: Any, kind: type | tuple[type, ...], where: str, optional: bool = True) -> bool:
    """True when x is present (not None) and of kind; _Bad when of another type."""
    if x is None and optional:
        return False
    if not isinstance(x, kind) or isinstance(x, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _Bad(f"{where} is not {'an' if names[0] in 'aeiou' else 'a'} {names} "
                   f"({type(x).__name__})")  # fmt: skip
    return True


def _counters(c: Any, where: str) -> None:
    """A layer's counters: numbers, and the access-size histogram (an object of numbers)."""
    if not _type(c, dict, where):
        return
    for k, v in c.items():
        if k in HISTOGRAMS:
            _type(v, dict, f"{where}.{k}", optional=False)
            for b, n in v.items():
                _number(n, f"{where}.{k}.{b}")
        else:
            _number(v, f"{where}.{k}")


def _file(f: Any, where: str) -> None:
    _type(f, dict, where, optional=False)
    _type(f.get("name"), str, f"{where}.name", optional=False)
    for key in ("fs", "system"):
        _type(f.get(key), str, f"{where}.{key}")
    if f.get("ranks") is not None:
        _number(f["ranks"], f"{where}.ranks", minimum=0, integer=True)
    if _type(f.get("phase"), dict, f"{where}.phase"):
        for k in ("start_s", "end_s"):
            if k in f["phase"]:
                _number(f["phase"][k], f"{where}.phase.{k}")
    if _type(f.get("time_s"), dict, f"{where}.time_s"):
        for k, v in f["time_s"].items():
            _number(v, f"{where}.time_s.{k}")
    for layer in LAYERS:
        _counters(f.get(layer), f"{where}.{layer}")
    _type(f.get("hints"), dict, f"{where}.hints")
    if _type(f.get("applied"), dict, f"{where}.applied"):
        for layer, settings in f["applied"].items():
            _type(settings, dict, f"{where}.applied.{layer}")


# The fast path: a file of the usual shape (JSON's exact types, finite numbers in range) is
# accepted by _file_ok() without building a key's name for each value; any other file is checked
# again by _file(), which says what is wrong. _file_ok() accepts only what _file() accepts
# (exact types where _file takes subclasses; a NaN or an infinity fails the range comparison).
# It runs once per file of a profile of 10^6 files: building the names cost most of the check.


def _num_ok(x: Any) -> bool:
    t = type(x)
    return (t is int or t is float) and -MAX_NUMBER <= x <= MAX_NUMBER


def _file_ok(f: Any) -> bool:
    if type(f) is not dict:
        return False
    get = f.get
    if type(get("name")) is not str:
        return False
    for key in ("fs", "system"):
        v = get(key)
        if v is not None and type(v) is not str:
            return False
    v = get("ranks")
    if v is not None and not (type(v) is int and 0 <= v <= MAX_NUMBER):
        return False
    v = get("phase")
    if v is not None:
        if type(v) is not dict:
            return False
        for k in ("start_s", "end_s"):
            if k in v and not _num_ok(v[k]):
                return False
    v = get("time_s")
    if v is not None:
        if type(v) is not dict:
            return False
        for x in v.values():
            t = type(x)
            if not ((t is int or t is float) and -MAX_NUMBER <= x <= MAX_NUMBER):
                return False
    low, high = -MAX_NUMBER, MAX_NUMBER
    for layer in LAYERS:  # a layer's counters (inline: 4 calls per file of 10^6 cost a tenth)
        c = get(layer)
        if c is None:
            continue
        if type(c) is not dict:
            return False
        for k, v in c.items():
            t = type(v)
            if (t is int or t is float) and low <= v <= high and k not in HISTOGRAMS:
                continue
            if k not in HISTOGRAMS or t is not dict:
                return False
            for n in v.values():
                t = type(n)
                if not ((t is int or t is float) and low <= n <= high):
                    return False
    v = get("hints")
    if v is not None and type(v) is not dict:
        return False
    v = get("applied")
    if v is not None:
        if type(v) is not dict:
            return False
        for settings in v.values():
            if settings is not None and type(settings) is not dict:
                return False
    return True


def _top(data: dict[str, Any]) -> None:
    version = data.get("version")
    _number(ranks := data.get("ranks"), "ranks", minimum=1, integer=True)
    if ranks > MAX_RANKS:
        raise _Bad(f"ranks is out of range ({ranks})")
    _number(version, "version", minimum=1, integer=True)
    _number(data.get("wall_s"), "wall_s", minimum=0)
    _type(io := data.get("io"), dict, "io", optional=False)
    _number(io.get("time_s"), "io.time_s", minimum=0)
    for k in ("bytes_written", "bytes_read"):
        _number(io.get(k), f"io.{k}", minimum=0)
    _type(layers := data.get("layers"), dict, "layers", optional=False)
    for layer in LAYERS:
        _counters(layers.get(layer), f"layers.{layer}")
    _type(config := data.get("config"), dict, "config", optional=False)
    for k in ("path", "digest"):
        _type(config.get(k), str, f"config.{k}")
    _type(config.get("settings"), list, "config.settings")
    for key in ("program", "hostname", "cwd"):
        _type(data.get(key), str, key)
    if _type(data.get("argv"), list, "argv"):
        for i, word in enumerate(data["argv"]):
            _type(word, str, f"argv[{i}]", optional=False)
    if _type(hosts := data.get("hosts"), dict, "hosts"):
        if hosts.get("count") is not None:
            _number(hosts["count"], "hosts.count", minimum=0, integer=True)
        if _type(hosts.get("names"), list, "hosts.names"):
            for i, name in enumerate(hosts["names"]):
                _type(name, str, f"hosts.names[{i}]", optional=False)
    _type(data.get("reduced"), bool, "reduced")
    if _type(summarised := data.get("files_summarised"), dict, "files_summarised"):
        _number(summarised.get("files"), "files_summarised.files", minimum=0, integer=True)
    _type(data.get("adaptive"), dict, "adaptive")
    if _type(mpi := data.get("mpi_library"), dict, "mpi_library"):
        for k in ("family", "library", "standard", "io_component", "io_component_from"):
            _type(mpi.get(k), str, f"mpi_library.{k}")
        _type(mpi.get("hints_verifiable"), bool, "mpi_library.hints_verifiable")
    if _type(h5 := data.get("hdf5_library"), dict, "hdf5_library"):
        _type(h5.get("version"), str, "hdf5_library.version")
        _type(h5.get("parallel"), bool, "hdf5_library.parallel")
    _type(files := data.get("files"), list, "files", optional=False)
    for i, f in enumerate(files):
        if not _file_ok(f):
            _file(f, f"files[{i}]")


def problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a profile's shape (the first thing found), or None. data: a dict
    whose schema and version the caller has checked."""
    try:
        _top(data)
    except _Bad as e:
        return str(e)
    return None
