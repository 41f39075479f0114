"""What a run's trace says of a file group's transfers: the ranks' calls with their offsets
(trace_calls), the access pattern (locality), the transfer sizes, whether every element of
the datasets written was written (fully_written) and the element type. iotune.insights puts
these beside the profile's counters; `iotune advise` reads a Darshan log's counters and HDF5
selection shapes with the same thresholds (RANDOM_BACKWARD, STRIDED_SHARE, contiguous_box).

The traces are read with iotune.trace (load_traces); one whose values the analyses cannot use
is left out with one line naming the file."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iotune import trace as iotrace

SMALL = 1 << 20  # a transfer below 1 MiB is "small" (Drishti's threshold)
RANDOM_BACKWARD = 0.25  # a pattern with this share of backward steps is random
STRIDED_SHARE = 0.5  # ... with this share of noncontiguous selections or gaps, strided


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


def _int_problem(v: Any, low: int, what: str = "an integer") -> str | None:
    """None for a whole number in [low, 2**63); else what is wrong: its range, or its type."""
    if type(v) is int:
        return None if low <= v < 2**63 else f"out of range ({low}..{2**63 - 1})"
    return f"{what} expected"


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
        if d.get("type_size") is not None and (bad := _int_problem(d["type_size"], 0, "a size")):
            return f"datasets[{i}].type_size: {bad}"
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
            if sig.get(k) is not None and (bad := _int_problem(sig[k], low)):
                return f"signatures[{i}].{k}: {bad}"
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


def is_transfer(layer: str, func: str) -> bool:
    if layer == "mpiio":
        return func.startswith(_TRANSFER["mpiio"]) and not func.endswith("_end")
    return func.startswith(_TRANSFER.get(layer, ()))


# The calls that open a file, per layer: a stream of transfers starts again at each (the
# runtime's adaptive mode measures one phase, an open to its close, at a time)
OPENS = frozenset(("MPI_File_open", "H5Fcreate", "H5Fopen", "open", "openat", "fopen"))


def _is_write(func: str) -> bool:
    return "write" in func


@dataclass
class Call:
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
    opening: int = 0  # how many times the rank had opened the file at this layer before it
    # an MPI-IO transfer's file view (view_shape of the view set last since the file's open);
    # None: the default view, contiguous
    view: tuple[bool, int] | None = None

    @property
    def last_offset(self) -> int | None:
        return None if self.offset is None else self.offset + self.step * (self.count - 1)


def trace_calls(trace: Mapping[str, Any]) -> list[Call]:
    """A rank's calls with absolute offsets (each step added to the previous offset of the same
    layer and file), run-length encoded as in the trace."""
    sigs = trace.get("signatures") or []
    datasets = trace.get("datasets") or []
    position: dict[tuple[str, str], int] = defaultdict(int)
    opens: dict[tuple[str, str], int] = defaultdict(int)
    views: dict[str, tuple[bool, int] | None] = {}  # file -> the view set since its MPI-IO open
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
        d = datasets[ds] if _index(ds, datasets) else None
        step = s.get("step")
        offset = None
        key = (s.get("layer", ""), file)
        opens[key] += s.get("func") in OPENS
        if s.get("func") in ("MPI_File_open", "MPI_File_set_view"):
            views[file] = view_shape(s.get("view")) if s.get("func") != "MPI_File_open" else None
        if step is not None:
            step = int(step)
            offset = position[key] + step
            position[key] = offset + step * (count - 1)
        out.append(Call(
            rank=int(trace.get("rank", 0)), layer=s.get("layer", ""), func=s.get("func", ""),
            file=file, dataset=d.get("name") if d else None,
            extent=tuple(d["dims"]) if d and d.get("dims") else None,
            box=tuple(s["dims"]) if s.get("dims") else None,
            type_size=d.get("type_size") if d else None,
            size=int(s.get("size") or 0), offset=offset, step=step or 0, count=count,
            extendible=_extendible(d), opening=opens[key],
            view=views.get(file) if key[0] == "mpiio" else None,
        ))  # fmt: skip
    return out


def _index(i: Any, table: Sequence[Any]) -> bool:
    return isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(table)


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


def view_shape(view: Mapping[str, Any] | None) -> tuple[bool, int] | None:
    """What a file view (as the trace describes it) does to the transfers through it: whether
    its filetype has holes (its true extent, from its first to its last byte, beyond its size),
    and its size when its instances lie apart (its extent not its size; else 0). None when not
    known. The runtime's adaptive mode decides the same at MPI_File_set_view
    (adapt_selection.c)."""
    if not isinstance(view, Mapping) or not isinstance(view.get("size"), int):
        return None
    size, extent, true_extent = view["size"], view.get("extent"), view.get("true_extent")
    if not isinstance(true_extent, int):  # a trace before true_extent: the blocks' span
        runs = [(*b, 1, 0) for b in view.get("blocks") or []] or view.get("runs") or []
        try:
            true_extent = max(o + (n - 1) * st + ln for o, ln, n, st in runs) - min(
                o for o, *_ in runs
            )
        except (TypeError, ValueError):  # none, or not numbers
            return None
    return true_extent > size, size if isinstance(extent, int) and extent != size else 0


def noncontiguous_view(shape: tuple[bool, int] | None, size: int) -> bool:
    """Does a transfer of size bytes through a view of this shape (view_shape) land in more
    than one run of the file: through the filetype's holes, or longer than one filetype whose
    instances lie apart?"""
    return shape is not None and (shape[0] or (shape[1] > 0 and size > shape[1]))


def locality(calls: list[Call]) -> dict[str, Any]:
    """Backward steps, gaps and noncontiguous selections of a group's transfers (per rank, file,
    open of the file and dataset, in call order: reading a file back after writing it is not
    a step backwards). A noncontiguous selection is an HDF5 selection that is not one run of
    elements, or an MPI-IO transfer through a noncontiguous file view (noncontiguous_view)."""
    streams: dict[tuple[int, str, int, str | None], list[Call]] = defaultdict(list)
    for c in calls:
        if c.offset is not None:
            streams[(c.rank, c.file, c.opening, c.dataset)].append(c)
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
    through = [c for c in calls if c.layer == "mpiio"]
    noncontig += sum(c.count for c in through if noncontiguous_view(c.view, c.size))
    nboxes += sum(c.count for c in through)
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


def transfer_sizes(calls: list[Call]) -> dict[str, Any]:
    """The sizes of a group's transfers: smallest, largest and median (by calls), and how many
    of its writes and reads were small (below SMALL), and their share."""
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


def fully_written(calls: list[Call]) -> str | None:
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


def element_type(
    names: Sequence[str], transfers: Sequence[Call], traces: Sequence[Mapping[str, Any]]
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
