"""Insights: what a run's I/O did, as a small, named, versioned set of values.

SmartIO (Bin Ather et al., SC Workshops '25, Sec. 3.2 and Table 1) turns a run's calls into
"insights" (transfer mode, transfer sizes, shared file or file per process, spatial locality,
file system) that its rules map to settings. This module computes the same insights, and a few
more (dataset layout, fill time, write amplification, metadata share), from an iotune profile
(docs/profile.md) and, when there is one, its trace (schema 2). The rule table
(data/rules.tsv) names them; `iotune advise` and, later, the runtime's adaptive mode evaluate
the table on them, and a knowledge base can use them as a run's motif signature.

Every insight has a stable name, a kind and a meaning, defined once in data/insights.tsv
(versioned; read here as INSIGHTS, and meant for the C runtime too); a value is a number, a
word, or None for "unknown" (e.g. the access pattern without a trace). Rules never fire on an
unknown value. Insights are computed per *file group*: files whose names differ only in their
numbers (iorio.r0.dat, iorio.r1.dat; chk_0001.h5, chk_0002.h5) are one group, the way a
recurring phase or a file per process is one thing to tune.
"""

from __future__ import annotations

import gc
import math
import os
import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from operator import itemgetter
from pathlib import Path
from typing import Any

from iotune import trace as iotrace
from iotune.profile import SIZE_BINS

MIB = 1 << 20
SMALL = MIB  # a transfer below 1 MiB is "small" (Drishti's threshold)
HDF5_CHUNK_CACHE_DEFAULT = MIB  # H5D_CHUNK_CACHE_NBYTES_DEFAULT
PARALLEL_FS = ("lustre", "gpfs", "beegfs", "pvfs2", "orangefs", "daos", "wekafs", "cephfs",
               "ceph")  # fmt: skip
RANDOM_BACKWARD = 0.25  # a pattern with this share of backward steps is random
STRIDED_SHARE = 0.5  # ... with this share of noncontiguous selections or gaps, strided


@dataclass(frozen=True)
class Insight:
    """The definition of one insight: name, kind and meaning."""

    name: str
    kind: str  # count | size | fraction | ratio | seconds | word
    meaning: str
    words: tuple[str, ...] = ()  # the values a word can take


LAYERS = ("hdf5", "mpiio", "posix", "stdio")
KINDS = ("count", "size", "fraction", "ratio", "seconds", "word")


def read_insights(path: str | Path) -> tuple[int, tuple[Insight, ...]]:
    """Reads the insight table (data/insights.tsv): its version and its rows, checked."""
    version = None
    rows: list[Insight] = []
    header = ["name", "kind", "words", "meaning"]
    seen_header = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip("\n")
            m = re.match(r"# INSIGHTS_VERSION (\d+)$", line)
            if m:
                version = int(m.group(1))
            if not line.strip() or line.startswith("#"):
                continue
            cells = line.split("\t")
            if not seen_header:
                if cells != header:
                    raise ValueError(f"{path}:{number}: the header must be {' '.join(header)}")
                seen_header = True
                continue
            if len(cells) != len(header) or cells[1] not in KINDS:
                raise ValueError(f"{path}:{number}: a row is name, kind ({'|'.join(KINDS)}), "
                                 "words, meaning")  # fmt: skip
            words = () if cells[2] == "-" else tuple(cells[2].split("|"))
            rows.append(Insight(cells[0], cells[1], cells[3], words))
    if version is None:
        raise ValueError(f"{path}: no '# INSIGHTS_VERSION N' line")
    names = [i.name for i in rows]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: duplicate insight names")
    return version, tuple(rows)


VERSION, INSIGHTS = read_insights(resources.files("iotune") / "data" / "insights.tsv")
BY_NAME = {i.name: i for i in INSIGHTS}
NAMES = tuple(BY_NAME)
_DIGITS = re.compile(r"\d+")
_LETTER = re.compile("[A-Za-z]")
_SMALL_BINS = SIZE_BINS[:5]  # below 1 MiB


@dataclass
class Group:
    """The insights of one file group. values: name -> number, word or None (unknown);
    notes: where an insight came from or why it is unknown, for the report."""

    pattern: str  # a FileName pattern (shell glob on the base name) that names the group
    files: list[str]
    values: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        return self.values.get(name)

    def to_json(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "files": self.files, "insights": self.values,
                "notes": self.notes}  # fmt: skip


# ----------------------------------------------------------------------------- grouping


def group_pattern(name: str) -> str:
    """The group of a file: its base name with every run of digits made a '*', except in an
    extension that has letters (chk_0001.h5 -> chk_*.h5, iorio.r1.dat -> iorio.r*.dat)."""
    base = name.rsplit("/", 1)[-1]
    stem, dot, ext = base.rpartition(".")
    if stem and _LETTER.search(ext):
        return _DIGITS.sub("*", stem) + dot + ext
    return _DIGITS.sub("*", base)


# Beyond this many files whose names share no pattern with another (hashes, words), they are
# grouped by extension: a million one-file groups would be a million findings nobody reads, and
# advise's time and output would grow with them (issue 23: 10^6 such files took 107 s, 1.4 GB).
LONE_NAMES_MAX = 1000


def lone_pattern(name: str) -> str:
    """The group of a file whose name shares no pattern, among too many such: its extension."""
    stem, dot, ext = name.rsplit("/", 1)[-1].rpartition(".")
    return f"*.{ext}" if stem and _LETTER.search(ext) else "*"


def lone_note(n: int) -> str:
    return (
        f"{n} files whose names share no pattern, grouped by extension "
        f"(more than {LONE_NAMES_MAX} such names)"
    )


def group_files(names: Iterable[str]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """The files' groups by name pattern, and {group: how many lone names it took in}."""
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(group_pattern(n), []).append(n)
    lone = [p for p, members in groups.items() if len(set(members)) == 1]
    took: dict[str, int] = {}
    if len(lone) > LONE_NAMES_MAX:
        for p in lone:
            members = groups.pop(p)
            merged = lone_pattern(members[0])
            groups.setdefault(merged, []).extend(members)
            took[merged] = took.get(merged, 0) + 1
    return groups, took


# ----------------------------------------------------------------------------- traces


def load_traces(
    profile_path: str | Path, left_out: list[str] | None = None
) -> list[dict[str, Any]]:
    """The traces of a profile, one per rank: from its hosts' files
    (<profile>.trace/host-I.json.gz, schema 5) and ranks' own (rank-N.json.gz, or an older
    runtime's rank-N.json), read by iotune.trace; a rank in a host's file is taken from there.
    [] when there are none. A file that cannot be read, or a trace that holds values the
    analyses cannot use, is left out (and said in left_out, when given: one line naming the
    file)."""
    directory = Path(str(profile_path) + ".trace")
    traces, seen = [], set()
    paths = sorted(directory.glob("host-*.json.gz")) + sorted(directory.glob("rank-*.json*"))
    for p in paths:
        problems = []
        try:
            if not p.is_file():
                raise iotrace.TraceError(f"{p}: not a regular file")
            docs = iotrace.read_all(p)
        except iotrace.TraceError as e:
            problems.append(str(e))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            problems.append(f"{p}: a damaged trace ({type(e).__name__}: {str(e)[:80]})")
        else:
            for doc in docs:
                problem = _trace_problem(doc)
                if problem is not None:
                    problems.append(f"{p}: {problem}")
                elif p.name.startswith("host-") or doc.get("rank") not in seen:
                    if p.name.startswith("host-"):
                        seen.add(doc.get("rank"))
                    traces.append(doc)
        if left_out is not None:
            left_out.extend(x.splitlines()[0] if x else str(p) for x in problems)
    return traces


def _is_int(v: Any, low: int = -(2**63)) -> bool:
    return type(v) is int and low <= v < 2**63


def _ints(v: Any) -> bool:
    return isinstance(v, list) and all(_is_int(x, 0) for x in v)


def _trace_problem(doc: Any) -> str | None:
    """What makes a read trace unusable for the analyses here (a value of the wrong type, a
    negative count or size), or None. Linear in its signatures, datasets and events."""
    if not isinstance(doc, dict) or not _is_int(doc.get("rank", 0), 0):
        return "rank: a rank number expected"
    for key in ("datasets", "signatures", "events"):
        if not isinstance(doc.get(key) or [], list):
            return f"{key}: a list expected"
    for i, d in enumerate(doc.get("datasets") or []):
        if not isinstance(d, dict):
            return f"datasets[{i}]: an object expected"
        if d.get("dims") is not None and not _ints(d["dims"]):
            return f"datasets[{i}].dims: a list of sizes expected"
        if d.get("type_size") is not None and not _is_int(d["type_size"], 0):
            return f"datasets[{i}].type_size: a size expected"
        for k in ("name", "file"):
            if d.get(k) is not None and not isinstance(d[k], str):
                return f"datasets[{i}].{k}: a name expected"
        lay = d.get("layout")
        if lay is not None and not (
            isinstance(lay, dict) and isinstance(lay.get("kind", ""), str)
            and (lay.get("chunk") is None or _ints(lay["chunk"]))
            and (lay.get("fill_time") is None or isinstance(lay["fill_time"], str))
        ):  # fmt: skip
            return f"datasets[{i}].layout: kind, chunk sizes and fill time expected"
    for i, sig in enumerate(doc.get("signatures") or []):
        if not isinstance(sig, dict):
            return f"signatures[{i}]: an object expected"
        for k in ("layer", "func", "file"):  # only a file may be null (a call without one)
            if (sig.get(k) is not None or (k in sig and k != "file")) and not isinstance(
                sig[k], str
            ):
                return f"signatures[{i}].{k}: a name expected"
        if sig.get("dims") is not None and not _ints(sig["dims"]):
            return f"signatures[{i}].dims: a list of sizes expected"
        for k, low in (("size", 0), ("step", -(2**63)), ("dataset", -(2**63))):
            if sig.get(k) is not None and not _is_int(sig[k], low):
                return f"signatures[{i}].{k}: an integer expected"
    for i, ev in enumerate(doc.get("events") or []):
        if not isinstance(ev, (list, tuple)) or len(ev) < 2 or not _is_int(ev[1], 0):
            return f"events[{i}]: [signature, count, ...] expected"
    return None


_TRANSFER = {
    "hdf5": ("H5Dwrite", "H5Dread"),
    "mpiio": ("MPI_File_write", "MPI_File_read", "MPI_File_iwrite", "MPI_File_iread"),
    "posix": ("write", "pwrite", "writev", "pwritev", "read", "pread", "readv", "preadv",
              "__read_chk", "__pread"),
    "stdio": ("fwrite", "fread"),
}  # fmt: skip


def _is_transfer(layer: str, func: str) -> bool:
    if layer == "mpiio":
        return func.startswith(_TRANSFER["mpiio"]) and not func.endswith("_end")
    return func.startswith(_TRANSFER.get(layer, ()))


def _is_write(func: str) -> bool:
    return "write" in func


@dataclass
class _Call:
    rank: int
    layer: str
    func: str
    file: str
    dataset: str | None
    extent: tuple[int, ...] | None
    box: tuple[int, ...] | None
    type_size: int | None
    size: int
    offset: int | None  # of the run's first call
    step: int  # between the run's calls
    count: int
    extendible: bool = False  # the dataset's maximum extent is not its extent when described

    @property
    def last_offset(self) -> int | None:
        return None if self.offset is None else self.offset + self.step * (self.count - 1)


def _calls(trace: Mapping[str, Any]) -> list[_Call]:
    """A rank's calls with absolute offsets (each step added to the previous offset of the same
    layer and file), run-length encoded as in the trace."""
    sigs = trace.get("signatures") or []
    datasets = trace.get("datasets") or []
    position: dict[tuple[str, str], int] = defaultdict(int)
    out = []
    for ev in trace.get("events") or []:
        try:
            s = sigs[ev[0]]
            count = int(ev[1])
        except (IndexError, TypeError, ValueError):
            continue
        file = s.get("file")
        if not file:
            continue
        ds = s.get("dataset")
        d = datasets[ds] if isinstance(ds, int) and 0 <= ds < len(datasets) else None
        step = s.get("step")
        offset = None
        key = (s.get("layer", ""), file)
        if step is not None:
            step = int(step)
            offset = position[key] + step
            position[key] = offset + step * (count - 1)
        out.append(_Call(
            rank=int(trace.get("rank", 0)), layer=s.get("layer", ""), func=s.get("func", ""),
            file=file, dataset=d.get("name") if d else None,
            extent=tuple(d["dims"]) if d and d.get("dims") else None,
            box=tuple(s["dims"]) if s.get("dims") else None,
            type_size=d.get("type_size") if d else None,
            size=int(s.get("size") or 0), offset=offset, step=step or 0, count=count,
            extendible=_extendible(d),
        ))  # fmt: skip
    return out


def _extendible(d: Mapping[str, Any] | None) -> bool:
    """A dataset whose maximum extent (trace schema 4) differs from the extent it was described
    with: it may have been extended since (created with 0 elements, then grown)."""
    maxdims = d.get("maxdims") if d else None
    return isinstance(maxdims, list) and maxdims != list(d.get("dims") or [])


def contiguous_box(box: Sequence[int], extent: Sequence[int]) -> bool:
    """Is a hyperslab's bounding box one run of elements in row-major order? After the first
    dimension that selects more than one element every later one must be whole."""
    if len(box) != len(extent):
        return False
    for i, n in enumerate(box):
        if n > 1:
            return all(box[j] == extent[j] for j in range(i + 1, len(box)))
    return True


def _locality(calls: list[_Call]) -> dict[str, Any]:
    """Backward steps, gaps and noncontiguous selections of a group's transfers (per rank, file
    and dataset, in call order)."""
    streams: dict[tuple[int, str, str | None], list[_Call]] = defaultdict(list)
    for c in calls:
        if c.offset is not None:
            streams[(c.rank, c.file, c.dataset)].append(c)
    pairs = backward = gaps = 0
    for stream in streams.values():
        prev_off = prev_end = None
        for c in stream:
            if prev_off is not None:
                pairs += 1
                backward += c.offset < prev_off
                gaps += c.offset > prev_end
            inner = c.count - 1  # the calls of a run are c.step apart
            pairs += inner
            backward += inner if c.step < 0 else 0
            gaps += inner if c.step > c.size else 0
            prev_off = c.last_offset
            prev_end = prev_off + c.size
    boxes = [c for c in calls if c.layer == "hdf5" and c.box and c.extent]
    noncontig = sum(c.count for c in boxes if not contiguous_box(c.box, c.extent))
    nboxes = sum(c.count for c in boxes)
    out = {
        "backward_fraction": backward / pairs if pairs else 0.0,
        "gap_fraction": gaps / pairs if pairs else 0.0,
        "noncontiguous_fraction": noncontig / nboxes if nboxes else 0.0,
    }
    if out["backward_fraction"] >= RANDOM_BACKWARD:
        out["access_pattern"] = "random"
    elif max(out["noncontiguous_fraction"], out["gap_fraction"]) >= STRIDED_SHARE:
        out["access_pattern"] = "strided"
    else:
        out["access_pattern"] = "sequential"
    return out


def _sizes(calls: list[_Call]) -> dict[str, Any]:
    writes = [(c.size, c.count) for c in calls if _is_write(c.func)]
    reads = [(c.size, c.count) for c in calls if not _is_write(c.func)]
    every = sorted(writes + reads)
    total = sum(n for _, n in every)
    out: dict[str, Any] = {}
    if total:
        out["transfer_size_min"] = every[0][0]
        out["transfer_size_max"] = every[-1][0]
        seen = 0
        for size, n in every:
            seen += n
            if seen * 2 >= total:
                out["transfer_size_median"] = size
                break
    for what, items in (("write", writes), ("read", reads)):
        n = sum(k for _, k in items)
        small = sum(k for s, k in items if s < SMALL)
        out[f"small_{what}s"] = small
        out[f"small_{what}_fraction"] = small / n if n else 0.0
    return out


MAX_BOXES = 4096  # boxes of one dataset whose union is computed exactly (n-D); beyond: unknown
MAX_PLACED = 1 << 20  # write selections placed one by one (runs of adjacent 1-D ones: one)
UNION_WORK = 1 << 21  # box visits the n-D union may take; beyond: unknown (time stays bounded)


class _TooMuch(Exception):
    """The exact union would take more than UNION_WORK steps."""


def _union_volume(boxes: list[tuple[tuple[int, ...], tuple[int, ...]]], budget=None) -> int:
    """Elements covered by the union of boxes (start, count): a sweep over the first dimension
    keeping the boxes that span the current slab, each slab's cross-section computed the same
    way one dimension down. Raises _TooMuch past UNION_WORK box visits."""
    if budget is None:
        budget = [UNION_WORK]
    if not boxes:
        return 0
    if len(boxes[0][0]) == 1:  # intervals: sort and merge
        budget[0] -= len(boxes)
        if budget[0] < 0:
            raise _TooMuch
        total, end = 0, None
        for lo, hi in sorted((b[0][0], b[0][0] + b[1][0]) for b in boxes):
            if end is None or lo > end:
                total, end = total + hi - lo, hi
            elif hi > end:
                total, end = total + hi - end, hi
        return total
    cuts = sorted({b[0][0] for b in boxes} | {b[0][0] + b[1][0] for b in boxes})
    pending = sorted(boxes, key=lambda b: b[0][0])
    active: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    total, nxt = 0, 0
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        while nxt < len(pending) and pending[nxt][0][0] <= lo:
            active.append(pending[nxt])
            nxt += 1
        active = [b for b in active if b[0][0] + b[1][0] >= hi]
        budget[0] -= len(active) + 1
        if budget[0] < 0:
            raise _TooMuch
        if active:
            inside = [(b[0][1:], b[1][1:]) for b in active]
            total += (hi - lo) * _union_volume(inside, budget)
    return total


def _start(offset: int, type_size: int, extent: tuple[int, ...]) -> tuple[int, ...]:
    """The coordinates of the element at a byte offset (row-major in the extent, which has no
    dimension of 0 elements: callers see to it)."""
    index, coords = offset // type_size, []
    for n in reversed(extent):
        coords.append(index % n)
        index //= n
    return tuple(reversed(coords))


def _fully_written(calls: list[_Call]) -> str | None:
    """yes when the union of the ranks' write selections covers every element of each dataset
    written; None when that cannot be known (a selection that is not a whole box: its bounding
    box over-states it; too many boxes). Rules that skip the fill (IOT-1) rely on it, so it never
    says yes on a guess: overlapping writes count once."""
    boxes: dict[tuple[str, str], set] = defaultdict(set)
    extent: dict[tuple[str, str], tuple[int, ...]] = {}
    placed = 0
    for c in calls:
        if not (c.layer == "hdf5" and c.func == "H5Dwrite" and c.dataset and c.extent):
            continue
        key = (c.file, c.dataset)
        extent[key] = c.extent
        if c.extendible or 0 in c.extent:
            return None  # its extent now is not the one described (created empty, extended)
        points = math.prod(c.box) if c.box else 0
        if not c.box or len(c.box) != len(c.extent) or not c.type_size or c.offset is None \
                or c.size < points * c.type_size:  # fmt: skip
            return None  # a point or irregular selection, or a size that is not the box's
        runs = [(c.offset, c.count)]
        if len(c.extent) == 1 and c.step == points * c.type_size:
            runs = [(c.offset, 1)]  # adjacent boxes: one box of count times the length
            box = (points * c.count,)
        else:
            box = c.box
        for offset, count in runs:
            placed += count
            if placed > MAX_PLACED:
                return None
            for k in range(count):
                start = _start(offset + k * c.step, c.type_size, c.extent)
                if any(s + n > e for s, n, e in zip(start, box, c.extent, strict=True)):
                    return None  # the box is not where its first element says: not a plain box
                boxes[key].add((start, box))
    if not extent:
        return None
    for key, n in extent.items():
        if len(n) > 1 and len(boxes[key]) > MAX_BOXES:
            return None
        try:
            if _union_volume(list(boxes[key])) < math.prod(n):
                return "no"
        except _TooMuch:
            return None
    return "yes"


# ----------------------------------------------------------------------------- layouts

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

    def chunk_bytes(self, type_size: int | None = None) -> int | None:
        size = type_size or self.type_size
        return math.prod(self.chunk) * size if self.chunk and size else None


_OPEN = re.compile(r'(\w+)(?: "((?:[^"\\]|\\.)*)")?.*\{$')


def parse_h5dump(text: str) -> dict[str, Layout]:
    """Dataset path -> Layout, from the output of `h5dump -p -H FILE`.

    Every line that ends in `{` opens a block and every `}` closes one, so attributes (of
    groups or datasets), compound types and committed datatypes nest without being mistaken for
    the end of a group; only a dataset's own DATATYPE, STORAGE_LAYOUT, FILTERS and FILLVALUE
    are read. A hard link (`HARDLINK "/a"` in a dataset block) takes its target's layout."""
    out: dict[str, Layout] = {}
    stack: list[tuple[str, str | None]] = []  # (block kind, name) of each open block
    current: dict[str, Any] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.endswith("{") and not line.startswith("}"):
            m = _OPEN.match(line)
            kind = m.group(1) if m else "?"
            name = m.group(2) if m else None
            if kind == "DATATYPE" and current is not None and stack[-1][0] == "DATASET":
                current["type_size"] = None  # a compound or array type: size unknown here
            stack.append((kind, name))
            if kind == "DATASET" and name is not None:
                current = {"kind": "contiguous", "chunk": (), "filters": False, "_seen": False}
            continue
        if line == "}" or line.startswith("} "):
            if not stack:
                continue
            kind, name = stack.pop()
            if kind == "DATASET" and current is not None:
                groups = [n for k, n in stack if k == "GROUP" and n not in (None, "/")]
                path = "/" + "/".join([*groups, name or ""])
                target = current.pop("_link", None)
                seen = current.pop("_seen")
                if not seen and target in out:
                    out[path] = out[target]
                elif seen or target is None:
                    out[path] = Layout(**current)
                current = None
            continue
        if current is None or not stack:
            continue
        parent = stack[-1][0]
        if parent == "DATASET":
            if line.startswith("DATATYPE"):
                t = _TYPE_BITS.search(line)
                current["type_size"] = int(t.group(1)) // 8 if t else None
            elif line.startswith("HARDLINK"):
                current["_link"] = line.split('"')[1] if '"' in line else None
        elif parent == "STORAGE_LAYOUT" and stack[-2][0] == "DATASET":
            current["_seen"] = True
            m = re.match(r"CHUNKED \( ([\d, ]+) \)", line)
            if m:
                current["kind"] = "chunked"
                current["chunk"] = tuple(int(x) for x in m.group(1).split(","))
            elif line in ("CONTIGUOUS", "COMPACT"):
                current["kind"] = line.lower()
        elif parent == "FILTERS" and stack[-2][0] == "DATASET" and line != "NONE":
            current["filters"] = True
        elif parent == "FILLVALUE" and stack[-2][0] == "DATASET" and line.startswith("FILL_TIME"):
            current["fill_time"] = line.split("H5D_FILL_TIME_")[-1].lower()
    return out


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


def _trace_layouts(traces: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Layout]:
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


class _ByFile(dict):
    """The trace's layouts, (file, dataset) -> Layout, with .files: file -> its layouts."""

    def __init__(self, layouts: Mapping[tuple[str, str], Layout]):
        super().__init__(layouts)
        self.files: dict[str, list[Layout]] = defaultdict(list)
        for (file, _ds), lay in layouts.items():
            self.files[file].append(lay)


def _layout_insights(layouts: list[Layout]) -> dict[str, Any]:
    kinds = {lay.kind for lay in layouts}
    out: dict[str, Any] = {"layout": kinds.pop() if len(kinds) == 1 else "mixed"}
    chunked = [lay for lay in layouts if lay.kind == "chunked"]
    if chunked:
        out["filters"] = "yes" if any(lay.filters for lay in chunked) else "no"
        fills = {lay.fill_time for lay in chunked if lay.fill_time}
        if fills:
            out["fill_time"] = "never" if fills == {"never"} else sorted(fills - {"never"})[0]
        sizes = [lay.chunk_bytes() for lay in chunked]
        if all(s is not None for s in sizes):
            biggest = max(sizes)
            out["chunk_bytes_max"] = biggest
            out["chunk_cache_needed"] = -(-biggest // MIB) * MIB
    else:
        out["filters"] = "no"
    return out


# ----------------------------------------------------------------------------- profile


# the counters _counter_insights() reads from a layer's sums (the others are not summed)
_SUMMED = frozenset(("writes", "reads", "bytes_written", "bytes_read", "write_time_s",
                     "read_time_s", "meta_time_s", "collective_writes", "collective_reads",
                     "independent_writes", "independent_reads", "set_views"))  # fmt: skip
_SUMMED_OF: dict[tuple[str, ...], tuple[str, ...]] = {}  # a counters' keys -> those summed


def _summed(keys: tuple[str, ...]) -> tuple[str, ...]:
    known = _SUMMED_OF.get(keys)
    if known is None:
        if len(_SUMMED_OF) > 1024:  # keys that vary from file to file: a damaged profile
            _SUMMED_OF.clear()
        known = _SUMMED_OF[keys] = tuple(k for k in keys if k in _SUMMED)
    return known


def _sum_layers(files: list[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {layer: defaultdict(float) for layer in LAYERS}
    number = (int, float)
    if len(files) == 1:  # a group of one file (as many as files when no two names are alike)
        for layer in LAYERS:
            c = files[0].get(layer)
            if c:
                acc = out[layer]
                for k in _summed(tuple(c)):
                    if isinstance(v := c[k], number):
                        acc[k] += v
        return out
    for layer in LAYERS:  # once per counter of 10^6 files: summed by columns, in C
        acc = out[layer]
        counters = [c for f in files if (c := f.get(layer))]
        if not counters:
            continue
        # the files whose counters have the same keys in the same order (the runtime writes
        # them so): their values summed column by column, in file order as one loop would
        keys = list(map(tuple, counters))
        rows: dict[tuple[str, ...], list[Any]]
        if len(set(keys)) == 1:
            rows = {keys[0]: counters}
        else:
            rows = {}
            for k, c in zip(keys, counters, strict=True):
                row = rows.get(k)
                if row is None:
                    rows[k] = row = []
                row.append(c)
        for names, same in rows.items():
            for k in _summed(names):
                col = list(map(itemgetter(k), same)) if len(same) > 1 else [same[0][k]]
                if _NUMBER_TYPES.issuperset(map(type, col)):
                    acc[k] = sum(col, acc[k])
                else:  # a value of another type: numbers only
                    for v in col:
                        if isinstance(v, number):
                            acc[k] += v
    return out


_NUMBER_TYPES = frozenset((int, float))


def _transfers(layer: str, c: Mapping[str, float]) -> tuple[float, float, float, float]:
    """(writes, reads, collective writes, collective reads) of a layer's counters."""
    if layer == "hdf5":
        return c["writes"], c["reads"], c["collective_writes"], c["collective_reads"]
    if layer == "mpiio":
        w = c["independent_writes"] + c["collective_writes"]
        r = c["independent_reads"] + c["collective_reads"]
        return w, r, c["collective_writes"], c["collective_reads"]
    return c["writes"], c["reads"], 0, 0


def transfer_mode(collective: float, total: float) -> str:
    """collective when at least 90 % of the transfers are (a header written by rank 0 alone
    does not make a collective checkpoint "mixed"), independent when at most 10 %."""
    if not total:
        return "none"
    share = collective / total
    return "collective" if share >= 0.9 else "independent" if share <= 0.1 else "mixed"


def _outermost(c: Mapping[str, Mapping[str, float]]) -> str | None:
    for layer in LAYERS:
        if (
            c[layer]
            and (  # a layer no file has: nothing summed
                sum(_transfers(layer, c[layer])[:2])
                or c[layer]["bytes_written"] + c[layer]["bytes_read"]
            )
        ):
            return layer
    return None


def _hint_values(files: list[Mapping[str, Any]], romio: bool = True) -> dict[str, Any]:
    """The hints in force read back; romio=False (Open MPI's OMPIO, which echoes every key it is
    given and reads none of ROMIO's own): ROMIO's hints are unknown, so that no rule proposes
    them (a rule never fires on an unknown insight)."""
    hints = next((f["hints"] for f in files if f.get("hints")), None)
    if not hints:
        return {}
    out: dict[str, Any] = {}
    for key in ("cb_buffer_size", "striping_factor"):
        try:
            out[f"hint_{key}"] = int(hints[key])
        except (KeyError, ValueError):
            pass
    for key in ("romio_cb_write", "romio_cb_read", "romio_ds_write", "romio_ds_read",
                "cb_config_list"):  # fmt: skip
        if key in hints and (romio or not key.startswith("romio_")):
            out[f"hint_{key}"] = str(hints[key])
    return out


def mpiio_component(library: Any) -> tuple[str | None, str]:
    """(romio | ompio | None, where it comes from) of a profile's mpi_library: the component
    the runtime saw in force (romio for the MPICH family, Open MPI's romio321 or ompio)."""
    io = (library or {}).get("io_component") if isinstance(library, Mapping) else None
    if not isinstance(io, str) or not io:
        return None, "unknown: the profile does not record the MPI-IO component"
    word = "ompio" if io == "ompio" else "romio" if io.startswith("romio") else None
    if word is None:
        return None, f"unknown: MPI-IO component {io!r}"
    why = (library or {}).get("io_component_from") or "the profile"
    return word, f"{io}, from the profile's mpi_library ({why})"


def _chunk_cache(files: list[Mapping[str, Any]], config: Mapping[str, Any]) -> int:
    for f in files:
        v = ((f.get("applied") or {}).get("hdf5") or {}).get("chunk_cache_bytes")
        if v is not None:
            return int(v)
    for s in config.get("settings") or []:
        if s.get("name") == "chunk_cache_bytes":
            return int(s["value"])
    return HDF5_CHUNK_CACHE_DEFAULT


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _counter_insights(files: list[Mapping[str, Any]], ranks: int) -> dict[str, Any]:
    c = _sum_layers(files)
    layer = _outermost(c)
    v: dict[str, Any] = {"ranks": ranks, "files": len(files)}
    # null is "not said" (profile_schema lets it through): one rank, as when it is absent
    v["file_ranks"] = max([int(_or(f.get("ranks"), 1)) for f in files], default=0)
    if ranks <= 1:
        v["file_mode"] = "single"
    elif v["file_ranks"] > 1:
        v["file_mode"] = "shared"
    else:
        v["file_mode"] = "per_process"
    if layer is None:
        v.update(interface=None, transfer_mode="none", writes=0, reads=0, io_mix="none")
        return v
    lc = c[layer]
    w, r, cw, cr = _transfers(layer, lc)
    coll, total = cw + cr, w + r
    v["interface"] = layer
    v["transfer_mode"] = transfer_mode(coll, total)
    v["writes"], v["reads"] = int(w), int(r)
    v["bytes_written"], v["bytes_read"] = int(lc["bytes_written"]), int(lc["bytes_read"])
    if r:
        v["read_size_mean"] = int(lc["bytes_read"] // r)
    moved = lc["bytes_written"] + lc["bytes_read"]
    v["write_fraction"] = lc["bytes_written"] / moved if moved else 0.0
    v["io_mix"] = ("none" if not moved else "write" if not lc["bytes_read"]
                   else "read" if not lc["bytes_written"] else "mixed")  # fmt: skip
    if total:
        v["transfer_size_median"] = int(moved // total)
    below = c["mpiio"] if layer == "hdf5" and c["mpiio"]["bytes_written"] else c["posix"]
    if layer == "hdf5" and lc["bytes_written"] and below["bytes_written"]:
        v["write_amplification"] = below["bytes_written"] / lc["bytes_written"]
        v["write_excess_bytes"] = max(int(below["bytes_written"] - lc["bytes_written"]), 0)
    busy = lc["write_time_s"] + lc["read_time_s"] + lc["meta_time_s"]
    v["meta_fraction"] = lc["meta_time_s"] / busy if busy else 0.0
    v["meta_time_rank_s"] = lc["meta_time_s"] / max(ranks, 1)
    v["file_views"] = int(c["mpiio"]["set_views"])
    # the files' sizes, times and file systems in one pass (a group may have one file of 10^6,
    # or 10^6 files): as max(), sum() and a set over each would say, in file order
    file_bytes = imbalance = wait = None
    rank_s: float = 0
    timed = False
    fs = set()
    for f in files:
        b = int((f.get("posix") or {}).get("last_offset") or 0)
        if file_bytes is None or b > file_bytes:
            file_bytes = b
        t = f.get("time_s") or {}
        x = float(t.get("imbalance", 1.0))
        if imbalance is None or x > imbalance:
            imbalance = x
        if "mean" in t:
            timed = True
            x = float(t.get("max", 0.0)) - float(t["mean"])
            if wait is None or x > wait:
                wait = x
        rank_s += float(t.get("mean", 0.0)) * int(f.get("ranks", 1) or 1)
        if f.get("fs"):
            fs.add(f["fs"])
    v["file_bytes"] = 0 if file_bytes is None else file_bytes
    if timed:  # the mean rank's I/O time on the group's files
        v["io_time_s"] = rank_s / max(ranks, 1)
    v["imbalance"] = 1.0 if imbalance is None else imbalance
    v["imbalance_wait_s"] = 0.0 if wait is None else wait
    if len(fs) == 1:
        v["fs"] = fs.pop()
        v["parallel_fs"] = "yes" if v["fs"] in PARALLEL_FS else "no"
    return v


def from_profile(
    profile: Any,
    traces: Sequence[Mapping[str, Any]] = (),
    layouts: Mapping[str, Mapping[str, Layout] | None] | None = None,
    search_dirs: Sequence[str | Path] = (),
) -> list[Group]:
    """The insights of each file group of a profile (iotune.profile.Profile or its dict).

    traces: the run's rank traces (load_traces()); without them the access pattern, the
    transfer-size distribution and whether datasets were fully written are unknown.
    layouts: file name -> its datasets' layouts (None: unknown); when not given, the HDF5 files
    are looked for (as named, then in search_dirs) and read with h5dump.
    """
    data = profile.data if hasattr(profile, "data") else profile
    ranks = int(data.get("ranks", 1))
    files = [f for f in data.get("files") or [] if f.get("name")]
    from iotune import profile as prof

    if getattr(profile, "files_marked", False) is True:  # classified on loading, once
        files = [f for f in files if not f.get("system")]
    else:
        script = prof.script_of(data.get("argv"))  # once, not once per file
        files = [f for f in files if not _system_file(f, script)]
    romio = (data.get("mpi_library") or {}).get("io_component") != "ompio"
    component, component_note = mpiio_component(data.get("mpi_library"))
    calls = [c for t in traces for c in _calls(t)]
    trace_layouts = _ByFile(_trace_layouts(traces))
    groups = []
    # each file and call looked up by name once: linear in files and calls, whatever the groups
    files_of: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for f in files:
        files_of[f["name"]].append(f)
    calls_of: dict[str, list[_Call]] = defaultdict(list)
    for c in calls:
        calls_of[c.file].append(c)
    dirs: dict[str, bool] = {}  # where HDF5 files were looked for: is each a directory
    config = data.get("config") or {}
    collecting = gc.isenabled()  # the groups hold no cycles: no collection need walk the
    gc.disable()  # 10^6 groups made (the collections cost a tenth of their making)
    try:
        grouped, took = group_files(f["name"] for f in files)
        for pattern, names in grouped.items():
            unique = dict.fromkeys(names)
            fs = [f for n in unique for f in files_of[n]]
            g = Group(pattern, names, _counter_insights(fs, ranks))
            g.values.update(_hint_values(fs, romio))
            if g.values.get("interface") in ("hdf5", "mpiio"):
                g.values["mpiio_component"] = component
                g.notes["mpiio_component"] = component_note
            g.values["chunk_cache_bytes"] = _chunk_cache(fs, config)
            if took.get(pattern):
                g.notes["files"] = lone_note(took[pattern])
            mine = [c for n in unique for c in calls_of.get(n, ())] if calls_of else []
            outer = g.values.get("interface")
            transfers = [c for c in mine if _is_transfer(c.layer, c.func) and c.layer == outer]
            if transfers:
                g.values.update(_sizes(transfers))
                g.values.update(_locality(transfers))
                fw = _fully_written(transfers)
                if fw:
                    g.values["fully_written"] = fw
                g.notes["access_pattern"] = "from the trace's offsets and selections"
            else:
                g.values["access_pattern"] = None
                g.notes["access_pattern"] = (
                    "unknown: no trace (profile with --trace)"
                    if not traces
                    else "no transfers traced"
                )
                _sizes_from_histogram(g, fs)
            if outer == "hdf5":
                _add_layouts(g, names, mine, trace_layouts, layouts, search_dirs, dirs)
                g.values["element_type"] = element_type(names, transfers, traces)
                if g.values.get("layout") is None:
                    _layout_from_trace_datasets(g, names, traces)
                if g.values.get("layout") is None:
                    _layout_from_counters(g, fs)
            _complete(g.values)
            groups.append(g)
    finally:
        if collecting:
            gc.enable()
    return groups


_UNKNOWN: dict[tuple[str, ...], dict[str, None]] = {}  # the names given -> the others, as None


def _complete(values: dict[str, Any]) -> None:
    """Every insight in values: the ones not given after the others, None, in INSIGHTS' order
    (as a setdefault of each would, without 50 steps per group of 10^6)."""
    given = tuple(values)
    unknown = _UNKNOWN.get(given)
    if unknown is None:
        if len(_UNKNOWN) > 1024:
            _UNKNOWN.clear()
        unknown = _UNKNOWN[given] = dict.fromkeys(n for n in NAMES if n not in values)
    values.update(unknown)


def _system_file(f: Mapping[str, Any], script: Any) -> bool:
    """Is a file one the application did not open for its data (the interpreter's, a library,
    the launcher's, /proc)? The mark iotune.profile gives on loading (data/system_files.tsv),
    or the same table applied here to a profile passed as a plain dict. script: the profile's
    iotune.profile.script_of(argv). (No copy of the file's object: this runs once per file.)"""
    from iotune import profile as prof

    if f.get("system"):
        return True
    if "system" in f or not isinstance(f.get("name"), str):
        return False
    return prof.classify(f["name"], prof.was_written(f), script=script) is not None


FILL_SHARE = 0.9  # bytes written beyond the data that show a fill of the chunked datasets
FILL_MIN = MIB  # ... when those datasets hold at least this much (metadata is smaller)


def fill_shows(excess: float | None, chunked_bytes: float) -> bool:
    """Did the bytes written below HDF5 beyond the data hold a fill of the chunked datasets?
    Parallel HDF5 allocates chunked datasets early and writes their fill first: about one more
    copy of them. At least 90 % of their size (1 MiB or more) means the fill was written and
    unfiltered (a filtered fill compresses to a fraction of it)."""
    return chunked_bytes >= FILL_MIN and (excess or 0) >= FILL_SHARE * chunked_bytes


def _layout_from_trace_datasets(g: Group, names: Sequence[str],
                                traces: Sequence[Mapping[str, Any]]) -> None:  # fmt: skip
    """The file is gone (the program removed it) and the trace records no layouts, but its
    datasets carry their chunk dimensions, extent and element size: the layout, the largest
    chunk, and, as from a Darshan log, the fill when the bytes beyond the data show one
    (fill_shows). Without chunk dimensions on every dataset nothing is decided here."""
    seen: dict[tuple[str, str], Mapping[str, Any]] = {}
    for t in traces:
        for d in t.get("datasets") or []:
            if d.get("file") in names and isinstance(d.get("name"), str):
                seen.setdefault((d["file"], d["name"]), d)
    if not seen or any("chunks" not in d for d in seen.values()):
        return  # a trace that does not say which datasets are chunked
    layouts, chunked_bytes = [], 0
    for d in seen.values():
        chunk = tuple(int(c) for c in d.get("chunks") or ())
        size = d.get("type_size") if isinstance(d.get("type_size"), int) else None
        layouts.append(Layout("chunked" if chunk else "contiguous", chunk, False, None, size))
        if chunk and size and d.get("dims"):
            chunked_bytes += math.prod(int(x) for x in d["dims"]) * size
    lay = _layout_insights(layouts)
    why = g.notes.get("layout", "").removeprefix("unknown: ")
    g.notes["layout"] = "from the trace's datasets (chunk dimensions)" + (
        f", not the file: {why}" if why else "")  # fmt: skip
    if lay["layout"] != "contiguous":
        lay.pop("filters")  # the trace does not record filters
        excess = g.values.get("write_excess_bytes")
        if fill_shows(excess, chunked_bytes):
            lay["fill_time"], lay["filters"] = "filled", "no"
            g.notes["fill_time"] = g.notes["filters"] = (
                f"inferred: {excess} bytes written below HDF5 beyond the data, "
                f"{excess / chunked_bytes:.2f}x the chunked datasets' {chunked_bytes} bytes"
            )
    g.values.update(lay)


def _layout_from_counters(g: Group, files: list[Mapping[str, Any]]) -> None:
    """Without the file or a trace that records layouts, the profile's HDF5 counters still say
    whether the datasets were chunked (hdf5.chunked_datasets counts the creates and opens of
    chunked datasets): none of them, all of them, or some."""
    h5 = [f.get("hdf5") or {} for f in files]
    if any("chunked_datasets" not in c for c in h5):
        return  # a runtime that did not count them
    chunked = sum(int(c.get("chunked_datasets") or 0) for c in h5)
    datasets = sum(int(c.get("dataset_creates") or 0) + int(c.get("dataset_opens") or 0)
                   for c in h5)  # fmt: skip
    if not datasets:
        return
    g.values["layout"] = ("contiguous" if chunked == 0 else "chunked" if chunked >= datasets
                          else "mixed")  # fmt: skip
    if chunked == 0:
        g.values["filters"] = "no"  # filters need chunks
    why = g.notes.get("layout", "").removeprefix("unknown: ")
    g.notes["layout"] = (
        f"from the profile's HDF5 counters ({chunked} of {datasets} dataset creates and opens "
        f"chunked; contiguous stands for not chunked)" + (f", not the file: {why}" if why else "")
    )


def _sizes_from_histogram(g: Group, files: list[Mapping[str, Any]]) -> None:
    """Without a trace, the POSIX histogram bounds the sizes (and says which are small)."""
    if g.get("interface") != "posix":
        return
    hist: dict[str, Any] = defaultdict(int)
    for f in files:
        for k, n in ((f.get("posix") or {}).get("sizes") or {}).items():
            hist[k] += n
    total = sum(hist.values())
    if total:
        small = sum(map(hist.__getitem__, _SMALL_BINS))  # a bin not there counts 0
        w, r = g.get("writes") or 0, g.get("reads") or 0
        # the histogram mixes reads and writes: split the small share by their counts
        g.values["small_writes"] = round(small * w / (w + r)) if w + r else 0
        g.values["small_reads"] = round(small * r / (w + r)) if w + r else 0
        g.values["small_write_fraction"] = small / total if w else 0.0
        g.values["small_read_fraction"] = small / total if r else 0.0
        g.notes["small_writes"] = "from the POSIX size histogram (reads and writes together)"


def _add_layouts(g, names, calls, trace_layouts, layouts, search_dirs, dirs=None) -> None:
    used = {(c.file, c.dataset) for c in calls if c.dataset}
    type_sizes = {(c.file, c.dataset): c.type_size for c in calls if c.dataset}
    found: list[Layout] = []
    source = None
    why: list[str] = []
    for name in names:
        if name in trace_layouts.files:
            found += trace_layouts.files[name]
            source = "the trace"
            continue
        if layouts is not None:
            lays, reason = layouts.get(name), f"{name}: no layouts given"
        else:
            lays, reason = _find_and_read(name, search_dirs, dirs)
        if lays is None:
            why.append(reason)
            continue
        source = source or "the HDF5 file (h5dump)"
        n_found = len(found)
        for ds, lay in lays.items():
            if used and (name, ds) not in used:
                continue
            ts = type_sizes.get((name, ds))
            found.append(
                Layout(lay.kind, lay.chunk, lay.filters, lay.fill_time, ts or lay.type_size)
            )
        if len(found) == n_found:
            why.append(f"{name}: none of the datasets it holds is one the trace wrote or read")
    if found:
        g.values.update(_layout_insights(found))
        g.notes["layout"] = f"from {source}"
    else:
        g.notes["layout"] = "unknown: " + "; ".join(why[:3] or ["no HDF5 file found"])


def element_type(
    names: Sequence[str], transfers: Sequence[_Call], traces: Sequence[Mapping[str, Any]]
) -> str | None:
    """The element type of the datasets a group's transfers moved, from the trace's datasets
    (schema 4: type_class and type_size): "float4", "compound32", ...; "mixed" when they differ;
    None (unknown) without a trace that records them."""
    moved = {(c.file, c.dataset) for c in transfers if c.dataset}
    kinds = set()
    for t in traces:
        for d in t.get("datasets") or []:
            if d.get("file") not in names or (
                moved and (d.get("file"), d.get("name")) not in moved
            ):
                continue
            cls, size = d.get("type_class"), d.get("type_size")
            if isinstance(cls, str) and isinstance(size, int) and size > 0:
                kinds.add(f"{cls}{size}")
    if not kinds:
        return None
    return kinds.pop() if len(kinds) == 1 else "mixed"


def _find_and_read(
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


def describe(name: str) -> str:
    """The meaning of an insight, for docs and reports."""
    return BY_NAME[name].meaning
