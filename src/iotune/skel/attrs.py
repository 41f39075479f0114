"""Attributes of a skeleton's HDF5 file (the descriptor's `files[].attributes`): the object
they are on (`object`: a group's or dataset's path, `/` the file's root), their name, element
type and extent (`dims`; none: a scalar). The skeleton creates each one after the step's
datasets and writes zeros: `h5dump -H` of its file shows the original's attributes (their
values are not the application's).

Types: a number type of the descriptor (float32 ... uint64) or a string, `{string: BYTES}` or
`{string: variable}`, with `pad` (nullterm, nullpad, spacepad) and `cset` (ascii, utf8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PADS = {
    "nullterm": "H5T_STR_NULLTERM",
    "nullpad": "H5T_STR_NULLPAD",
    "spacepad": "H5T_STR_SPACEPAD",
}
CSETS = {"ascii": "H5T_CSET_ASCII", "utf8": "H5T_CSET_UTF8"}
MAX_ATTRIBUTES = 100_000  # per file
MAX_ELEMENTS = 1 << 20  # elements of one attribute (the skeleton writes them as zeros)
MAX_STRING = 1 << 20  # bytes of a fixed-size string type


@dataclass
class Attribute:
    on: str  # the object's path: /, a group or a dataset ({step}, {rank} filled in)
    name: str
    type: str  # a number type name, or "string"
    dims: list[int] | None  # None: scalar
    size: int = 0  # string: bytes, 0 = variable length
    pad: str = "nullterm"
    cset: str = "ascii"
    line: int = 0

    @property
    def elements(self) -> int:
        n = 1
        for v in self.dims or []:
            n *= v
        return n


def parse(c: Any, raw: Any, line: int, where: str, types: dict, max_name: int) -> list[Attribute]:
    """The attributes list of a file entry (c: the descriptor's checker, for its messages)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_ATTRIBUTES:
        c.fail(line, where, f"expected a list of at most {MAX_ATTRIBUTES} attributes")
    out: list[Attribute] = []
    seen: set[tuple[str, str]] = set()
    lines = getattr(raw, "lines", [line] * len(raw))
    for i, (a, ln) in enumerate(zip(raw, lines, strict=True)):
        out.append(_one(c, a, ln, f"{where}[{i}]", types, max_name))
        key = (out[-1].on, out[-1].name)
        if key in seen:
            c.fail(ln, f"{where}[{i}]", f"attribute {key[1]!r} on {key[0]} given twice")
        seen.add(key)
    return out


def _one(c: Any, a: Any, line: int, where: str, types: dict, max_name: int) -> Attribute:
    a = c.mapping(a, line, where, {"object", "name", "type", "dims"})
    on = c.require(a, "object", where)
    if not isinstance(on, str) or not on.startswith("/") or "\0" in on or len(on) > max_name:
        msg = f"expected the object's absolute path (/ or /a/b; at most {max_name} bytes)"
        c.fail(c.line_of(a, "object"), f"{where}.object", msg)
    c.names_in(on, c.line_of(a, "object"), f"{where}.object", max_name)
    name = c.require(a, "name", where)
    if not isinstance(name, str) or not name or "\0" in name or len(name) > max_name:
        c.fail(c.line_of(a, "name"), f"{where}.name",
               f"expected a name (no NUL, 1 to {max_name} characters)")  # fmt: skip
    dims = a.get("dims")
    if dims is not None:
        ok = isinstance(dims, list) and 1 <= len(dims) <= 32
        ok = ok and all(type(v) is int and 0 <= v <= MAX_ELEMENTS for v in dims)
        n = 1
        for v in dims if ok else []:
            n *= v
        if not ok or n > MAX_ELEMENTS:
            msg = f"expected 1 to 32 sizes, at most {MAX_ELEMENTS} elements (omit for a scalar)"
            c.fail(c.line_of(a, "dims"), f"{where}.dims", msg)
    t = c.require(a, "type", where)
    tline = c.line_of(a, "type")
    if isinstance(t, str) and t in types:
        return Attribute(on, name, t, dims, line=line)
    expected = ("expected one of " + ", ".join(types) + " or {string: BYTES|variable, pad: "
                + "|".join(PADS) + ", cset: " + "|".join(CSETS) + "}")  # fmt: skip
    if not isinstance(t, dict) or "string" not in t:
        c.fail(tline, f"{where}.type", expected)
    t = c.mapping(t, tline, f"{where}.type", {"string", "pad", "cset"})
    size = t["string"]
    if size == "variable":
        size = 0
    elif type(size) is not int or not 1 <= size <= MAX_STRING:
        c.fail(tline, f"{where}.type.string", f"expected 1 to {MAX_STRING} bytes or variable")
    pad, cset = t.get("pad", "nullterm"), t.get("cset", "ascii")
    if pad not in PADS or cset not in CSETS:
        c.fail(tline, f"{where}.type", expected)
    return Attribute(on, name, "string", dims, size, pad, cset, line)


def from_layout(found: dict[str, Any], types: dict) -> dict[str, Any] | None:
    """The descriptor entry of an attribute of h5layout.parse (None: a type a skeleton does
    not write: compound, array, reference, enum, ...)."""
    typ: Any
    if found["dims"] == "null" or found["dims"] == []:  # null dataspace, or no extent read
        return None
    if isinstance(found["type"], dict):
        s = found["type"]
        pads = {v: k for k, v in PADS.items()}
        csets = {v: k for k, v in CSETS.items()}
        if s.get("pad") not in pads or s.get("cset") not in csets or s.get("size") is None:
            return None
        typ = {"string": "variable" if s["size"] == 0 else s["size"],
               "pad": pads[s["pad"]], "cset": csets[s["cset"]]}  # fmt: skip
    else:
        typ = {v[2]: k for k, v in types.items()}.get(found["type"])
        if typ is None:
            return None
    entry: dict[str, Any] = {"object": found["on"], "name": found["name"], "type": typ}
    if found["dims"] is not None:
        entry["dims"] = list(found["dims"])
    return entry
