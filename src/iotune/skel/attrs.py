"""Attributes of a skeleton's HDF5 file. Two ways to say them:

- `files[].attributes` (from the application's file, read with h5dump): the object they are on
  (`object`: a group's or dataset's path, `/` the file's root), their name, element type and
  extent (`dims`; none: a scalar). The skeleton creates each one after the step's datasets and
  writes zeros: `h5dump -H` of its file shows the original's attributes (their values are not
  the application's).
- attribute calls among a file's `writes`, in the application's order (from the trace):
  `{attribute: CALL, object: PATH, name: NAME, ...}`, CALL one of create (with `type`, and `dims`
  or `empty: true` for a null dataspace; neither: a scalar), write (`size`: the characters of a
  variable-length string attribute, spread over its elements), read, open, exists, iterate (no
  name: H5Aiterate2 over the object's attributes), rename (`to`: the new name), delete. Reads,
  opens, exists and iterate change nothing and may name their ranks (`when`); the others are
  made by every rank of the file (HDF5 metadata). A write or read moves the whole value, in the
  attribute's own type (zeros; a variable-length string's characters as 'x').

Types: a number type of the descriptor (float32 ... uint64, big-endian ones too), a string,
`{string: BYTES}` or `{string: variable}`, with `pad` (nullterm, nullpad, spacepad) and `cset`
(ascii, utf8), or `{opaque: BYTES}` (attribute calls only: a type a skeleton does not write
otherwise, of the same size)."""

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
    size: int = 0  # string: bytes, 0 = variable length; opaque: bytes
    pad: str = "nullterm"
    cset: str = "ascii"
    line: int = 0
    empty: bool = False  # a null dataspace (no elements)

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
    dims = _dims(c, a, where)
    typ, size, pad, cset = _type(c, c.require(a, "type", where), c.line_of(a, "type"), where,
                                 types, opaque=False)  # fmt: skip
    return Attribute(on, name, typ, dims, size, pad, cset, line)


def _type(
    c: Any, t: Any, tline: int, where: str, types: dict, opaque: bool
) -> tuple[str, int, str, str]:
    """(type, size, pad, cset) of an attribute's `type`: a number type name, a string or (when
    opaque) opaque bytes."""
    if isinstance(t, str) and t in types:
        return t, 0, "nullterm", "ascii"
    expected = ("expected one of " + ", ".join(types) + " or {string: BYTES|variable, pad: "
                + "|".join(PADS) + ", cset: " + "|".join(CSETS) + "}"
                + (" or {opaque: BYTES}" if opaque else ""))  # fmt: skip
    if opaque and isinstance(t, dict) and "opaque" in t:
        t = c.mapping(t, tline, f"{where}.type", {"opaque"})
        if type(t["opaque"]) is not int or not 1 <= t["opaque"] <= MAX_STRING:
            c.fail(tline, f"{where}.type.opaque", f"expected 1 to {MAX_STRING} bytes")
        return "opaque", t["opaque"], "nullterm", "ascii"
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
    return "string", size, pad, cset


def _dims(c: Any, a: Any, where: str) -> list[int] | None:
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
    return dims


# attribute calls among a file's writes: those that change nothing may name their ranks
CALLS = ("create", "write", "read", "open", "exists", "iterate", "rename", "delete")
LOOKS = ("read", "open", "exists", "iterate")


@dataclass
class Call:
    """An attribute call of a file's writes (`attribute: CALL`)."""

    call: str
    on: str  # the object's path ({step}, {rank} filled in)
    name: str | None  # None: iterate
    attr: Attribute | None = None  # create: type and extent
    to: str | None = None  # rename: the new name
    size: int | None = None  # write: a variable-length string's characters


def parse_call(c: Any, w: Any, line: int, where: str, types: dict, max_name: int) -> Call:
    """One `{attribute: CALL, object, name, ...}` entry of a file's writes (w: a mapping)."""
    call = w.get("attribute")
    if call not in CALLS:
        c.fail(
            c.line_of(w, "attribute"), f"{where}.attribute", "expected one of " + ", ".join(CALLS)
        )
    allowed = {"attribute", "object"} | ({"name"} if call != "iterate" else set())
    allowed |= {"when"} if call in LOOKS else set()
    allowed |= {"create": {"type", "dims", "empty"}, "write": {"size"}, "rename": {"to"}}.get(
        call, set()
    )
    w = c.mapping(w, line, where, allowed)
    on = c.require(w, "object", where)
    if not isinstance(on, str) or not on.startswith("/") or "\0" in on or len(on) > max_name:
        msg = f"expected the object's absolute path (/ or /a/b; at most {max_name} bytes)"
        c.fail(c.line_of(w, "object"), f"{where}.object", msg)
    c.names_in(on, c.line_of(w, "object"), f"{where}.object", max_name)
    names = {}
    for key in ("name", "to") if call != "iterate" else ():
        if key == "to" and call != "rename":
            continue
        value = c.require(w, key, where)
        if not isinstance(value, str) or not value or "\0" in value or len(value) > max_name:
            c.fail(c.line_of(w, key), f"{where}.{key}",
                   f"expected a name (no NUL, 1 to {max_name} characters)")  # fmt: skip
        names[key] = value
    out = Call(call, on, names.get("name"), to=names.get("to"))
    if call == "create":
        typ, size, pad, cset = _type(c, c.require(w, "type", where), c.line_of(w, "type"), where,
                                     types, opaque=True)  # fmt: skip
        empty = w.get("empty", False)
        if type(empty) is not bool or (empty and w.get("dims") is not None):
            c.fail(c.line_of(w, "empty"), f"{where}.empty",
                   "expected true (a null dataspace, without dims) or false")  # fmt: skip
        out.attr = Attribute(on, out.name or "", typ, _dims(c, w, where), size, pad, cset, line,
                             empty)  # fmt: skip
    if call == "write" and w.get("size") is not None:
        size = w["size"]
        if type(size) is not int or not 0 <= size <= MAX_STRING:
            c.fail(c.line_of(w, "size"), f"{where}.size",
                   f"expected the characters of its strings, 0 to {MAX_STRING}")  # fmt: skip
        out.size = size
    return out


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
