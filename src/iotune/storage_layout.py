"""HDF5 datasets' layouts (contiguous, chunked, compact; chunk sizes, filters, fill time): read
from a file with `h5dump -p -H` (parse_h5dump, read_layouts), from a trace that records them
(from_traces), and what a group's layouts say (layout_insights, fill_shows)."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iotune.skel import h5layout as h5dump_reader

MIB = 1 << 20
_TYPE_BITS = re.compile(r"H5T_(?:IEEE_F|STD_[IUB]|NATIVE_\w*?)(\d+)")


@dataclass(frozen=True)
class Layout:
    """A dataset's storage: kind (contiguous|chunked|compact), chunk dims, filters, fill time,
    and the element size (None when unknown)."""

    kind: str
    chunk: tuple[int, ...] = ()
    filters: bool = False
    fill_time: str | None = None
    type_size: int | None = None
    fill_value: str | None = None  # own (the application defined one) | default | None

    def chunk_bytes(self, type_size: int | None = None) -> int | None:
        size = type_size or self.type_size
        return math.prod(self.chunk) * size if self.chunk and size else None


def parse_h5dump(text: str) -> dict[str, Layout]:
    """Dataset path -> Layout, from the output of `h5dump -p -H FILE` as the one reader of it
    reads it (iotune.skel.h5layout.parse: blocks nest, so attributes, compound types and
    committed datatypes are not mistaken for the end of a group): the layout its
    STORAGE_LAYOUT names (CONTIGUOUS, COMPACT, CHUNKED with its dims), whether any filter is
    set, the fill time, and the element size when the type's name says it (None for compound,
    string, array types). A dataset whose layout is not named, or whose block h5dump's output
    cut short, is left out: unknown, not guessed. A hard link (`HARDLINK "/a"` in a dataset
    block) takes its target's layout, when the target came before it."""
    out: dict[str, Layout] = {}
    for path, d in h5dump_reader.parse(text)["datasets"].items():
        kind = d.get("layout")
        if not d.get("complete"):
            continue
        if kind is None:
            if d.get("hardlink") in out:
                out[path] = out[d["hardlink"]]
            continue
        out[path] = Layout(
            kind=kind,
            chunk=tuple(d["chunks"]) if kind == "chunked" else (),
            filters=bool(d.get("filters")),
            fill_time=d.get("fill_time"),
            type_size=_type_size(d.get("type")),
            fill_value=d.get("fill_value"),
        )
    return out


def _type_size(name: str | None) -> int | None:
    """The element size a type's name says (H5T_IEEE_F64LE: 8), or None."""
    t = _TYPE_BITS.match(name) if name else None
    return int(t.group(1)) // 8 or None if t else None


def read_layouts(path: str | Path) -> dict[str, Layout] | None:
    """The layouts of an HDF5 file's datasets (through h5dump), or None when the file or h5dump
    is not there or the file is not HDF5."""
    lays, _why = read_layouts_why(path)
    return lays


def read_layouts_why(path: str | Path) -> tuple[dict[str, Layout] | None, str]:
    """read_layouts() and, when it gives None, why (for the report)."""
    h5dump = shutil.which("h5dump")
    if h5dump is None:
        return None, "h5dump is not installed"
    if not Path(path).is_file():
        return None, f"{path} is not there"
    try:
        r = subprocess.run([h5dump, "-p", "-H", str(path)], capture_output=True, text=True,
                           timeout=60, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"h5dump of {path} failed ({e})"
    lays = parse_h5dump(r.stdout)
    if r.returncode != 0 and not lays:  # h5dump prints what it could read before an error
        return None, f"h5dump cannot read {path} (exit status {r.returncode})"
    return lays, ""


def from_traces(traces: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Layout]:
    """Layouts the trace itself records (a "layout" object on a dataset), when it has them."""
    out = {}
    for t in traces:
        for d in t.get("datasets") or []:
            lay = d.get("layout")
            if isinstance(lay, dict) and lay.get("kind"):
                out[(d.get("file"), d.get("name"))] = Layout(
                    kind=lay["kind"], chunk=tuple(lay.get("chunk") or ()),
                    filters=bool(lay.get("filters")), fill_time=lay.get("fill_time"),
                    type_size=d.get("type_size"),
                )  # fmt: skip
    return out


class ByFile(dict):
    """The trace's layouts, (file, dataset) -> Layout, with .files: file -> its layouts."""

    def __init__(self, layouts: Mapping[tuple[str, str], Layout]):
        super().__init__(layouts)
        self.files: dict[str, list[Layout]] = defaultdict(list)
        for (file, _ds), lay in layouts.items():
            self.files[file].append(lay)


def layout_insights(layouts: list[Layout]) -> dict[str, Any]:
    """What a group's datasets' layouts say: the layout (or "mixed"), and of the chunked ones
    whether any is filtered, the fill time, the largest chunk and the chunk cache it needs."""
    kinds = {lay.kind for lay in layouts}
    out: dict[str, Any] = {"layout": kinds.pop() if len(kinds) == 1 else "mixed"}
    chunked = [lay for lay in layouts if lay.kind == "chunked"]
    if chunked:
        out["filters"] = "yes" if any(lay.filters for lay in chunked) else "no"
        fills = {lay.fill_time for lay in chunked if lay.fill_time}
        if fills:
            out["fill_time"] = "never" if fills == {"never"} else sorted(fills - {"never"})[0]
        values = {lay.fill_value for lay in chunked}
        if "own" in values or values == {"default"}:  # own when any is: the runtime's guard
            out["fill_value"] = "own" if "own" in values else "default"
        sizes = [lay.chunk_bytes() for lay in chunked]
        if all(s is not None for s in sizes):
            biggest = max(sizes)
            out["chunk_bytes_max"] = biggest
            out["chunk_cache_needed"] = -(-biggest // MIB) * MIB
    else:
        out["filters"] = "no"
    return out


FILL_SHARE = 0.9  # bytes written beyond the data that show a fill of the chunked datasets
FILL_MIN = MIB  # ... when those datasets hold at least this much (metadata is smaller)


def fill_shows(excess: float | None, chunked_bytes: float) -> bool:
    """Did the bytes written below HDF5 beyond the data hold a fill of the chunked datasets?
    Parallel HDF5 allocates chunked datasets early and writes their fill first: about one more
    copy of them. At least 90 % of their size (1 MiB or more) means the fill was written and
    unfiltered (a filtered fill compresses to a fraction of it)."""
    return chunked_bytes >= FILL_MIN and (excess or 0) >= FILL_SHARE * chunked_bytes


def find_and_read(
    name: str, search_dirs: Sequence[str | Path], dirs: dict[str, bool] | None = None
) -> tuple[dict[str, Layout] | None, str]:
    """The layouts of an HDF5 file found as named (or in search_dirs), and why not. dirs: the
    directories already looked at (whether each is one), shared by the files of a profile: a
    file is looked for only in a directory that is there (10^6 files of a run on another
    machine cost one look at their directory, not one per file)."""
    # a relative name is relative to the application's directory, which the profile does not
    # record: only the directories given are searched (not whatever the cwd holds)
    # (os.path, not pathlib: this runs once per HDF5 file of a profile, 10^6 of them)
    absolute = os.path.isabs(name)
    candidates = [name] if absolute else [os.path.join(d, name) for d in search_dirs]
    for p in candidates:
        if dirs is not None:
            parent = p[: p.rfind("/") + 1] or "."  # its directory (os.path.dirname: slower)
            there = dirs.get(parent)
            if there is None:
                there = dirs[parent] = os.path.isdir(parent)
            if not there:
                continue
        if os.path.isfile(p):
            return read_layouts_why(p)
    where = "" if absolute else ", ".join(str(d) for d in search_dirs)
    return None, f"{name} is gone" + (f" (looked in {where}; --data-dir DIR)" if where else "")
