"""The structure of an HDF5 file as `h5dump -H -p` shows it: groups, and each dataset's type,
extent, maximum extent and chunking. Used to fill in what a trace does not record (the type's
class, chunking) and to compare a skeleton's file with the original's."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any


class LayoutError(RuntimeError):
    pass


def read(path: str) -> dict[str, Any]:
    """{"groups": [paths], "datasets": {path: {"type", "dims", "maxdims", "chunks"}}}."""
    exe = shutil.which("h5dump")
    if exe is None:
        raise LayoutError("h5dump is not installed (Debian: hdf5-tools)")
    proc = subprocess.run([exe, "-H", "-p", path], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise LayoutError(f"h5dump -H -p {path} failed: {proc.stderr.strip()[:300]}")
    return parse(proc.stdout)


def _dims(text: str) -> tuple[list[int], list[int | None]]:
    m = re.search(r"\(([^)]*)\)\s*/\s*\(([^)]*)\)", text)
    if not m:
        return [], []
    try:
        cur = [int(x) for x in m.group(1).split(",") if x.strip()]
        mx = [None if "UNLIMITED" in x else int(x) for x in m.group(2).split(",") if x.strip()]
    except ValueError:  # not h5dump's numbers: no extent known
        return [], []
    return cur, mx


_TIMES = re.compile(r"(?:FILL_TIME )?H5D_(FILL|ALLOC)_TIME_(ALLOC|NEVER|IFSET|EARLY|LATE|INCR)\Z")
_MEMBER = re.compile(r'(\S+) "(.*)";\Z')  # h5dump does not escape quotes in member names


def _filter(line: str) -> str:
    """A filter line of h5dump's FILTERS block as a descriptor filter name."""
    if line == "PREPROCESSING SHUFFLE":
        return "shuffle"
    if line == "CHECKSUM FLETCHER32":
        return "fletcher32"
    m = re.match(r"COMPRESSION DEFLATE \{ LEVEL (\d) \}", line)
    if m:
        return f"deflate={m.group(1)}"
    return "other: " + line


def parse(text: str) -> dict[str, Any]:
    """Groups, datasets and attributes of `h5dump -H -p` output: the one reader of it (advise's
    layouts too: iotune.storage_layout). A dataset: type (h5dump's name; compound types also
    their members, [[type, name], ...], None when a member is itself compound or an array),
    dims, maxdims, chunks, filters (shuffle, deflate=N, fletcher32, other: ...), and when shown
    layout (its STORAGE_LAYOUT: contiguous, chunked, compact), fill_time (alloc, never, ifset),
    fill_value (own: the application defined one; default: it did not),
    alloc_time (early, late, incr) and hardlink (the path a `HARDLINK "/a"` line names);
    complete once its block has closed (output cut short leaves the last one incomplete).
    An attribute: on (its object's path), name, type (h5dump's name; a string {size (0:
    variable), pad, cset}; None: another class), dims (None: scalar; "null")."""
    groups: list[str] = []
    datasets: dict[str, dict[str, Any]] = {}
    attributes: list[dict[str, Any]] = []
    stack: list[tuple[str, str]] = []  # (kind, path) of open blocks; other blocks ("", "")
    for line in text.splitlines():
        s = line.strip()
        if _attribute_line(s, stack, attributes):
            continue
        m = re.match(r'(GROUP|DATASET) "(.*)" \{\Z', s)  # a name's quotes are not escaped
        if m:
            kind, name = m.groups()
            parent = next((p for k, p in reversed(stack) if k == "GROUP"), "")
            path = "/" if name == "/" else parent.rstrip("/") + "/" + name
            stack.append((kind, path))
            if kind == "GROUP":
                groups.append(path)
            else:
                datasets[path] = {"type": None, "dims": [], "maxdims": [], "chunks": None,
                                  "members": None, "filters": []}  # fmt: skip
            continue
        top = stack[-1][0] if stack else ""
        ds = next((p for k, p in reversed(stack) if k == "DATASET"), None)
        if ds is not None and top == "DATASET":
            if s.startswith("DATATYPE"):
                datasets[ds]["type"] = s.split()[1]
                if datasets[ds]["type"] == "H5T_COMPOUND":
                    datasets[ds]["members"] = []
            elif s.startswith("DATASPACE"):
                datasets[ds]["dims"], datasets[ds]["maxdims"] = _dims(s)
            elif s.startswith("HARDLINK"):
                datasets[ds]["hardlink"] = s.split('"')[1] if '"' in s else None
        elif ds is not None and top == "COMPOUND":
            m2 = _MEMBER.match(s)
            if m2 and datasets[ds]["members"] is not None:
                datasets[ds]["members"].append([m2.group(1), m2.group(2)])
            elif s.endswith("{"):  # a member that is itself compound, an array, ...
                datasets[ds]["members"] = None
        elif ds is not None and top == "FILTERS" and s and s not in ("NONE", "}"):
            datasets[ds]["filters"].append(_filter(s))
        if ds is not None and top == "FILLVALUE" and s.startswith("VALUE"):
            # H5D_FILL_VALUE_DEFAULT (or _UNDEFINED): none of the application's; a value: its own
            value = s[len("VALUE") :].strip()
            datasets[ds]["fill_value"] = "default" if value.startswith("H5D_FILL_VALUE_") else "own"
        m3 = _TIMES.match(s) if ds is not None else None
        if m3:  # FILLVALUE's FILL_TIME, ALLOCATION_TIME's value
            key = "fill_time" if m3.group(1) == "FILL" else "alloc_time"
            datasets[ds][key] = m3.group(2).lower()
        if ds is not None and s.startswith("CHUNKED"):
            m2 = re.search(r"CHUNKED \(\s*(\d+(?:\s*,\s*\d+)*)\s*\)", s)
            if m2:
                datasets[ds]["chunks"] = [int(x) for x in m2.group(1).split(",")]
                if top == "LAYOUT":
                    datasets[ds]["layout"] = "chunked"
        if ds is not None and top == "LAYOUT" and s in ("CONTIGUOUS", "COMPACT"):
            datasets[ds]["layout"] = s.lower()
        if s.endswith("{"):
            if top == "DATASET" and s.startswith("DATATYPE") and "H5T_COMPOUND" in s:
                stack.append(("COMPOUND", ""))
            elif top == "DATASET" and s.startswith("FILTERS"):
                stack.append(("FILTERS", ""))
            elif top == "DATASET" and s.startswith("STORAGE_LAYOUT"):
                stack.append(("LAYOUT", ""))
            elif top == "DATASET" and s.startswith("FILLVALUE"):
                stack.append(("FILLVALUE", ""))
            else:
                stack.append(("", ""))
        elif s == "}" or s.startswith("}"):
            if stack:
                kind, path = stack.pop()
                if kind == "DATASET":
                    datasets[path]["complete"] = True  # read to its end, not cut short
    return {"groups": groups, "datasets": datasets, "attributes": attributes}


_ATTRIBUTE = re.compile(r'ATTRIBUTE "(.*)" \{\Z')


def _attribute_line(s: str, stack: list[tuple[str, str]], out: list[dict[str, Any]]) -> bool:
    """Reads a line that opens an attribute or is inside one (True: handled). Attribute blocks
    are ("ATTR", owner) on the stack, a string type inside one ("ATTRSTR", "")."""
    m = _ATTRIBUTE.match(s)
    top = stack[-1][0] if stack else ""
    if m and top in ("GROUP", "DATASET"):
        out.append({"on": stack[-1][1], "name": m.group(1), "type": None, "dims": None})
        stack.append(("ATTR", stack[-1][1]))
        return True
    if top == "ATTRSTR":
        t = out[-1]["type"]
        if s.startswith("}"):
            stack.pop()
        elif s.startswith("STRSIZE "):
            v = s[8:].rstrip(";")
            t["size"] = 0 if v == "H5T_VARIABLE" else int(v) if v.isdigit() else None
        elif s.startswith("STRPAD "):
            t["pad"] = s[7:].rstrip(";")
        elif s.startswith("CSET "):
            t["cset"] = s[5:].rstrip(";")
        return True
    if top != "ATTR":
        return False
    if s.startswith("}"):
        stack.pop()
    elif s.startswith("DATATYPE"):
        words = s.split()
        if len(words) == 3 and words[1] == "H5T_STRING" and words[2] == "{":
            out[-1]["type"] = {"size": None, "pad": None, "cset": None}
            stack.append(("ATTRSTR", ""))
        elif len(words) == 2:
            out[-1]["type"] = words[1]
        elif s.endswith("{"):  # compound, array, ...: read to its end, type unknown
            stack.append(("", ""))
    elif s.startswith("DATASPACE"):
        if "NULL" in s.split():
            out[-1]["dims"] = "null"
        elif "SIMPLE" in s:
            out[-1]["dims"] = _dims(s)[0]
    elif s.endswith("{"):
        stack.append(("", ""))
    return True
