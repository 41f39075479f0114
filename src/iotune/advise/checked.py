"""The profile fields advise's insights read, checked before they are used.

A profile comes from outside: iotune.profile.parse() checks its schema and top-level keys, and
this module checks the values iotune.insights.from_profile() computes with (types, numbers in a
counter's range), so that a damaged or hand-edited profile gives one InputError naming the file
and the key (`files[3].posix.bytes_written`) instead of a traceback deep in an analysis.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from iotune.inputs import InputError
from iotune.insights import LAYERS

LIMIT = 2**64  # counters are 64-bit in the runtime: anything beyond is damage


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and -LIMIT <= v <= LIMIT


def _integer(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lstrip("-").isdecimal() and len(v) < 24
    return _number(v) and float(v).is_integer()


class _Checker:
    def __init__(self, name: str):
        self.name = name

    def fail(self, where: str, what: str, v: Any) -> None:
        shown = repr(v)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise InputError(f"{self.name}: {where}: {what} expected, not {shown}")

    def mapping(self, v: Any, where: str, optional: bool = True) -> Mapping[str, Any]:
        if v is None and optional:
            return {}
        if not isinstance(v, dict):
            self.fail(where, "an object", v)
        return v

    def numbers(self, obj: Mapping[str, Any], where: str, keys: tuple[str, ...] = ()) -> None:
        """Each of keys (all when empty) that is present is a number."""
        for k in keys or tuple(obj):
            v = obj.get(k, 0.0)
            if type(v) is not float and not _number(v):  # a parsed float is finite
                self.fail(f"{where}.{k}", "a number", v)


def _counters(c: _Checker, counters: Any, where: str) -> None:
    """A layer's counters: an object whose numbers fit 64 bits (an int beyond overflows a float
    sum), last_offset a number, sizes an object of numbers; other values are not read."""
    if type(counters) is not dict:
        c.fail(where, "an object", counters)
    for k, v in counters.items():
        t = type(v)
        if t is int:
            if not -LIMIT <= v <= LIMIT:
                c.fail(f"{where}.{k}", "a counter", v)
        elif k == "sizes" and v is not None:
            c.numbers(c.mapping(v, f"{where}.sizes"), f"{where}.sizes")
        elif k == "last_offset" and t is not float and v is not None:
            c.fail(f"{where}.{k}", "a number", v)


def _settings(c: _Checker, f: dict[str, Any], i: int) -> None:
    """A file's hints (strings or numbers) and applied chunk cache size (a size)."""
    if f.get("hints") is not None:
        for k, v in c.mapping(f["hints"], f"files[{i}].hints").items():
            if not isinstance(v, str) and not _number(v):
                c.fail(f"files[{i}].hints.{k}", "a hint value", v)
    if f.get("applied") is not None:
        applied = c.mapping(f["applied"], f"files[{i}].applied")
        hdf5 = c.mapping(applied.get("hdf5"), f"files[{i}].applied.hdf5")
        v = hdf5.get("chunk_cache_bytes")
        if v is not None and not _integer(v):
            c.fail(f"files[{i}].applied.hdf5.chunk_cache_bytes", "a size", v)


def profile(p: Any, name: str) -> Any:
    """Returns p (an iotune.profile.Profile) when advise can compute with it; else InputError.
    Linear in the files, and lean: it runs once per file of a profile of 10^6 files."""
    data = p.data if hasattr(p, "data") else p
    c = _Checker(str(name))
    # a Profile from iotune.profile.parse() passed profile_schema, whose checks of the files'
    # objects, names, ranks, file systems, counters and times are stricter than these: only
    # the hints and applied settings, which it does not look into, are checked again
    shaped = getattr(p, "shape_checked", False) is True
    if not (_integer(data.get("ranks")) and int(data["ranks"]) >= 0):
        c.fail("ranks", "a count", data.get("ranks"))
    for i, f in enumerate(data.get("files") or []):
        if shaped:
            if f.get("hints") is not None or f.get("applied") is not None:
                _settings(c, f, i)
            continue
        if type(f) is not dict:
            c.fail(f"files[{i}]", "an object", f)
        if type(f.get("name", "")) is not str:
            c.fail(f"files[{i}].name", "a file name", f["name"])
        if "ranks" in f and not (_integer(f["ranks"]) and int(f["ranks"]) >= 0):
            c.fail(f"files[{i}].ranks", "a count", f["ranks"])
        if f.get("fs") is not None and type(f["fs"]) is not str:
            c.fail(f"files[{i}].fs", "a file system name", f["fs"])
        for layer in LAYERS:
            if f.get(layer) is not None:
                _counters(c, f[layer], f"files[{i}].{layer}")
        if f.get("time_s") is not None:
            where = f"files[{i}].time_s"
            c.numbers(c.mapping(f["time_s"], where), where)
        _settings(c, f, i)
    config = c.mapping(data.get("config"), "config")
    settings = config.get("settings") or []
    if not isinstance(settings, list):
        c.fail("config.settings", "a list", settings)
    for i, s in enumerate(settings):
        s = c.mapping(s, f"config.settings[{i}]", optional=False)
        if s.get("name") == "chunk_cache_bytes" and not _integer(s.get("value")):
            c.fail(f"config.settings[{i}].value", "a size", s.get("value"))
    return p
