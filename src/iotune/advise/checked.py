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
        return v.strip().lstrip("-").isdigit() and len(v) < 24
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
        """Each of keys (all when empty) that is present is a number (null: unknown)."""
        for k in keys or tuple(obj):
            v = obj.get(k)
            if v is not None and not _number(v):
                self.fail(f"{where}.{k}", "a number", v)


def profile(p: Any, name: str) -> Any:
    """Returns p (an iotune.profile.Profile) when advise can compute with it; else InputError."""
    data = p.data if hasattr(p, "data") else p
    c = _Checker(str(name))
    if not _integer(data.get("ranks", 1)) or int(data.get("ranks", 1)) < 0:
        c.fail("ranks", "a count", data.get("ranks"))
    for i, f in enumerate(data.get("files") or []):
        where = f"files[{i}]"
        f = c.mapping(f, where, optional=False)
        if "name" in f and not isinstance(f["name"], str):
            c.fail(f"{where}.name", "a file name", f["name"])
        if f.get("ranks") is not None and not (_integer(f["ranks"]) and int(f["ranks"]) >= 0):
            c.fail(f"{where}.ranks", "a count", f["ranks"])
        if f.get("fs") is not None and not isinstance(f["fs"], str):
            c.fail(f"{where}.fs", "a file system name", f["fs"])
        for layer in LAYERS:
            counters = c.mapping(f.get(layer), f"{where}.{layer}")
            c.numbers(counters, f"{where}.{layer}", ("last_offset",))
            for k, v in counters.items():  # a counter beyond 64 bits would overflow a float
                if isinstance(v, (int, float)) and not _number(v):
                    c.fail(f"{where}.{layer}.{k}", "a counter", v)
            sizes = c.mapping(counters.get("sizes"), f"{where}.{layer}.sizes")
            c.numbers(sizes, f"{where}.{layer}.sizes")
        c.numbers(c.mapping(f.get("time_s"), f"{where}.time_s"), f"{where}.time_s")
        for k, v in c.mapping(f.get("hints"), f"{where}.hints").items():
            if not isinstance(v, str) and not _number(v):
                c.fail(f"{where}.hints.{k}", "a hint value", v)
        applied = c.mapping(f.get("applied"), f"{where}.applied")
        hdf5 = c.mapping(applied.get("hdf5"), f"{where}.applied.hdf5")
        v = hdf5.get("chunk_cache_bytes")
        if v is not None and not _integer(v):
            c.fail(f"{where}.applied.hdf5.chunk_cache_bytes", "a size", v)
    config = c.mapping(data.get("config"), "config")
    settings = config.get("settings") or []
    if not isinstance(settings, list):
        c.fail("config.settings", "a list", settings)
    for i, s in enumerate(settings):
        s = c.mapping(s, f"config.settings[{i}]", optional=False)
        if s.get("name") == "chunk_cache_bytes" and not _integer(s.get("value")):
            c.fail(f"config.settings[{i}].value", "a size", s.get("value"))
    return p
