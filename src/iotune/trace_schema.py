"""The shape of a rank's trace (docs/profile.md, "Trace mode"), checked before iotune.trace
rebuilds its signatures and runs: columns of equal length and of the right types, indices that
point into their tables, counts and strides that are at least 1. `problem(doc)` says the first
thing wrong ("runs.stride[3] is 0, below 1"), or None for a usable trace.

Keys the reader does not use are not checked (a newer runtime may add some).
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_NUMBER = 2**64  # the runtime's columns are 64-bit
SIG_COLUMNS = ("layer", "func", "file", "dataset", "dims", "size", "step", "mode")
RUN_COLUMNS = ("sig", "count", "seq", "stride", "start", "period", "busy", "idle")


class _Bad(Exception):
    pass


def _number(x: Any, where: str, minimum: float | None = None, integer: bool = True) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise _Bad(f"{where} is not a number ({type(x).__name__})")
    if isinstance(x, float) and (not math.isfinite(x) or integer):
        raise _Bad(f"{where} is not a whole number ({x!r})")
    if abs(x) > MAX_NUMBER:
        raise _Bad(f"{where} is out of range ({x:.3g})")
    if minimum is not None and x < minimum:
        raise _Bad(f"{where} is {x!r}, below {minimum:g}")


def _list(x: Any, where: str, optional: bool = False) -> list[Any]:
    if x is None and optional:
        return []
    if not isinstance(x, list):
        raise _Bad(f"{where} is not a list ({type(x).__name__})")
    return x


def _dict(x: Any, where: str) -> dict[str, Any]:
    if not isinstance(x, dict):
        raise _Bad(f"{where} is not an object ({type(x).__name__})")
    return x


def _ints(x: Any, where: str, optional: bool = True, nulls: bool = False) -> None:
    """A list of whole numbers (or null, when optional; its items null too, with nulls)."""
    if x is None and optional:
        return
    for i, n in enumerate(_list(x, where)):
        if not (n is None and nulls):
            _number(n, f"{where}[{i}]")


def _str(x: Any, where: str, optional: bool = False) -> None:
    if x is None and optional:
        return
    if not isinstance(x, str):
        raise _Bad(f"{where} is not a string ({type(x).__name__})")


def _header(doc: dict[str, Any]) -> None:
    for key in ("rank", "dropped_calls"):
        if doc.get(key) is not None:
            _number(doc[key], key, minimum=0)
    if doc.get("ranks") is not None:
        _number(doc["ranks"], "ranks", minimum=1)
    if doc.get("start") is not None:
        _number(doc["start"], "start", integer=False)
    for i, d in enumerate(_list(doc.get("datasets"), "datasets", optional=True)):
        where = f"datasets[{i}]"
        _dict(d, where)
        _str(d.get("file"), f"{where}.file", optional=True)
        _str(d.get("name"), f"{where}.name", optional=True)
        for key in ("dims", "maxdims", "chunks"):
            _ints(d.get(key), f"{where}.{key}", nulls=key == "maxdims")
        if d.get("type_size") is not None:
            _number(d["type_size"], f"{where}.type_size", minimum=0)
        _str(d.get("type_class"), f"{where}.type_class", optional=True)
        if d.get("fill") is not None:  # schema 4 and 5 since the fill value was traced
            fill = _dict(d["fill"], f"{where}.fill")
            _str(fill.get("time"), f"{where}.fill.time", optional=True)
            value = fill.get("value")
            _str(value, f"{where}.fill.value", optional=True)
            if value is not None and not re.fullmatch(r"(?:[0-9a-f]{2}){1,16}", value):
                raise _Bad(f"{where}.fill.value is not 1 to 16 bytes in hex")
    for i, v in enumerate(_list(doc.get("views"), "views", optional=True)):
        where = f"views[{i}]"
        _dict(v, where)
        for key in ("disp", "etype_size", "size", "lb", "extent", "true_extent"):
            if v.get(key) is not None:
                _number(v[key], f"{where}.{key}")
        for j, b in enumerate(_list(v.get("blocks"), f"{where}.blocks", optional=True)):
            if len(_list(b, f"{where}.blocks[{j}]")) != 2:
                raise _Bad(f"{where}.blocks[{j}] is not [offset, length]")
            _ints(b, f"{where}.blocks[{j}]")
    for i, a in enumerate(_list(doc.get("attributes"), "attributes", optional=True)):
        where = f"attributes[{i}]"
        _dict(a, where)
        _str(a.get("object"), f"{where}.object")
        for key in ("name", "space", "type_class", "type_order"):
            _str(a.get(key), f"{where}.{key}", optional=True)
        _ints(a.get("dims"), f"{where}.dims")
        if a.get("type_size") is not None:
            _number(a["type_size"], f"{where}.type_size", minimum=0)
        if a.get("string") is not None:
            string = _dict(a["string"], f"{where}.string")
            _str(string.get("pad"), f"{where}.string.pad", optional=True)
            _str(string.get("cset"), f"{where}.string.cset", optional=True)
    for i, m in enumerate(_list(doc.get("memory"), "memory", optional=True)):
        _dict(m, f"memory[{i}]")
        if m.get("size") is not None:
            _number(m["size"], f"memory[{i}].size")
        _ints(m.get("pieces"), f"memory[{i}].pieces")


def _columns(obj: Any, where: str, names: tuple[str, ...]) -> int:
    """Checks that obj has every column as a list, all of one length; that length."""
    _dict(obj, where)
    lengths = {len(_list(obj.get(k), f"{where}.{k}")) for k in names}
    if len(lengths) != 1:
        raise _Bad(f"the columns of {where} differ in length ({sorted(lengths)})")
    return lengths.pop()


def _columnar(doc: dict[str, Any]) -> None:
    files = _list(doc.get("files"), "files", optional=True)
    for i, f in enumerate(files):
        _str(f, f"files[{i}]")
    _number(doc.get("tick_s"), "tick_s", integer=False)
    if doc["tick_s"] <= 0:
        raise _Bad(f"tick_s is {doc['tick_s']!r}, not positive")
    sigs = doc.get("signatures")
    nsig = _columns(sigs, "signatures", SIG_COLUMNS)
    for i in range(nsig):
        where = f"signatures.%s[{i}]"
        _str(sigs["layer"][i], where % "layer")
        _str(sigs["func"][i], where % "func")
        for key in ("file", "dataset", "size", "step", "mode"):
            if sigs[key][i] is not None or key in ("file", "dataset"):
                _number(sigs[key][i], where % key)
        if sigs["file"][i] >= len(files):
            raise _Bad(f"{where % 'file'} is {sigs['file'][i]}, past the {len(files)} files")
        _ints(sigs["dims"][i], where % "dims")
    runs = doc.get("runs")
    nruns = _columns(runs, "runs", RUN_COLUMNS)
    sig = 0
    for i in range(nruns):
        for key in RUN_COLUMNS:
            _number(runs[key][i], f"runs.{key}[{i}]")
        if runs["count"][i] < 1:
            raise _Bad(f"runs.count[{i}] is {runs['count'][i]}, below 1")
        if runs["count"][i] > 1 and runs["stride"][i] < 1:  # 0 only for a single call
            raise _Bad(f"runs.stride[{i}] is {runs['stride'][i]} for {runs['count'][i]} calls")
        sig += runs["sig"][i]
        if not 0 <= sig < nsig:
            raise _Bad(f"run {i} is of signature {sig}, not one of the {nsig} signatures")


def _events(doc: dict[str, Any]) -> None:
    """Schema 2: signatures as objects, events as [signature, count, start, busy, span]."""
    sigs = _list(doc.get("signatures"), "signatures", optional=True)
    for i, s in enumerate(sigs):
        _dict(s, f"signatures[{i}]")
    for i, e in enumerate(_list(doc.get("events"), "events", optional=True)):
        if len(_list(e, f"events[{i}]")) != 5:
            raise _Bad(f"events[{i}] is not [signature, count, start_s, busy_s, span_s]")
        _number(e[0], f"events[{i}][0]", minimum=0)
        if e[0] >= len(sigs):
            raise _Bad(f"events[{i}] is of signature {e[0]}, not one of the {len(sigs)}")
        _number(e[1], f"events[{i}][1]", minimum=1)
        for k in (2, 3, 4):
            _number(e[k], f"events[{i}][{k}]", integer=False)


def problem(doc: dict[str, Any]) -> str | None:
    """What is wrong with a trace's shape (the first thing found), or None. doc: a dict of
    schema iotune-trace whose version the caller has checked."""
    try:
        _header(doc)
        if doc["version"] == 2:
            _events(doc)
        else:
            _columnar(doc)
    except _Bad as e:
        return str(e)
    return None
