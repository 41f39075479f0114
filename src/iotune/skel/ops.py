"""Each rank's calls as operations (open, write, close, read) with file names in pattern form
({rank}), and the alignment of the ranks' writes into groups of the same write."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from iotune.skel import views as vw
from iotune.skel.trace_calls import (
    API_OF_LAYER,
    CLOSES,
    DELETES,
    OPENS,
    READS_PREFIX,
    SEEKS_SHARED,
    SET_SIZES,
    SHARED,
    SYNCS,
    VIEW_AT_WRITES,
    VIEW_WRITES,
    WRITES,
    Trace,
)


def placeholder(which: str, digits: str) -> str:
    """{rank} / {step}, or zero-padded to the written width when the number was padded
    (`0000` -> {step:04}): the skeleton's names keep the application's padding."""
    if len(digits) > 1 and digits.startswith("0"):
        return f"{{{which}:0{len(digits)}}}"
    return f"{{{which}}}"


def rank_pattern(names_by_rank: list[str], ranks: int) -> str | None:
    """The pattern with {rank} that gives each rank's name, or None."""
    if ranks < 2:
        return None
    candidates = None
    for r, name in enumerate(names_by_rank):
        pats = set()
        for m in re.finditer(r"\d+", name):
            if int(m.group()) == r:
                pats.add(name[: m.start()] + placeholder("rank", m.group()) + name[m.end() :])
        candidates = pats if candidates is None else candidates & pats
    return sorted(candidates)[0] if candidates else None


@dataclass
class Op:
    """A call of one rank, with names in pattern form."""

    # open, close, write, read, create, dopen, sync, extend (count: the new extent), delete,
    # setsize (size: the new size), seekshared (offset: where the shared file pointer points),
    # gcreate (a group made: attr_on its path), ldelete (a link deleted: attr_on its path)
    kind: str
    func: str
    file: str  # pattern ({rank}, later {step})
    api: str
    dataset: str | None
    dset_info: dict[str, Any] | None
    start: list[int] | None
    count: list[int] | None
    offset: int | None
    size: int
    collective: bool
    t0: float
    t1: float
    step: int | None = None
    view: dict[str, Any] | None = None  # a write through a file view: the view (trace)
    memory: list[int] | None = None  # the pieces of a noncontiguous memory datatype (trace)
    filter_mask: int = 0  # a direct chunk transfer's filters skipped
    mode: int | None = None  # an open's flags as traced (H5F_ACC_* for HDF5)
    scale: str | None = None  # attach, detach: the scale's dataset (its real path)
    fresh: bool = False  # a read into memory never touched before (trace_calls.Call.fresh)
    attr: dict[str, Any] | None = None  # kind attr: the attribute as the trace describes it
    attr_on: str | None = None  # its object's path (in pattern form: {step})
    attr_to: str | None = None  # a rename's new name
    file_format: list[int] | None = None  # H5Fcreate: the format asked (trace_calls.Call)
    running: bool = False  # offset: the rank's running position (the trace has none: stdio)
    per_step: int = 0  # in a loop body: how far a running offset moves at each step (steps.py)
    once: bool = False  # in a loop body: a call made once before the steps (steps.py)
    shared: bool = False  # a transfer through the shared file pointer (no offset: trace_calls)
    # a transfer through the individual file pointer on a file without a view set: its traced
    # offset is the file's byte offset (wherever an MPI_File_seek put the pointer)
    viewless: bool = False
    # in a loop body: an open made in the steps' calls, not before them (steps.py): the file
    # is opened and closed at every step
    stepwise: bool = False
    # in a loop body: an open made before the steps' calls (steps.py); its file closed there too
    # (its close `once`) is opened at the first step only
    lead: bool = False


def ops_of(tr: Trace, ranks: int, file_rank_names: dict[str, str]) -> list[Op]:
    ops = []
    views: dict[str, dict[str, Any] | None] = {}  # file -> the view set last
    extents: dict[int, list[int]] = {}  # dataset -> its extent since H5Dset_extent
    for c in tr.calls:
        if c.func == "MPI_File_set_view":
            views[c.file] = c.view
            continue
        if c.func in OPENS:
            views.pop(c.file, None)  # a file opened has the default view again
            kind = "open"
        elif c.func in CLOSES:
            kind = "close"
        elif c.func in WRITES:
            kind = "write"
        elif c.func == "H5Dcreate":
            kind = "create"  # kept for datasets created and never written
        elif c.func == "H5Dopen":
            kind = "dopen"  # a dataset opened (read, or only looked at: its header is read)
        elif c.func == "H5Dset_extent":
            kind = "extend"  # the dataset's new extent: c.dims (op.count)
        elif c.func in SCALE_FUNCS:
            kind = SCALE_FUNCS[c.func]  # scale (count: [its name's bytes]), attach, detach
        elif c.func in SCALE_LOOKUPS:
            kind = "lookup"  # mode: the dimension
        elif c.func in ATTRIBUTE_CALLS:
            kind = "attr"  # an attribute call (the skeleton's attribute: CALL entries)
        elif c.func == "H5Gcreate":
            kind = "gcreate"  # a group made (attr_on: its path; the file entry's groups)
        elif c.func == "H5Ldelete":
            kind = "ldelete"  # a link deleted (attr_on: its path)
        elif c.func in SYNCS:
            kind = "sync"
        elif c.func in DELETES:
            kind = "delete"
        elif c.func in SET_SIZES:
            kind = "setsize"  # size: the file's new size
        elif c.func in SEEKS_SHARED:
            kind = "seekshared"  # offset: where the shared file pointer points, in bytes
        elif c.func.startswith(READS_PREFIX) and not c.func.endswith("_end"):
            kind = "read"  # (a split collective's _end is no transfer of its own)
        else:
            kind = "other"
        dname = dinfo = None
        start = count = None
        if c.dataset is not None and 0 <= c.dataset < len(tr.datasets):
            dinfo = tr.datasets[c.dataset]
            dname = dinfo["name"]
            same_rank = c.dims is not None and len(c.dims) == len(dinfo.get("dims") or [])
            if c.func in ("H5Dcreate", "H5Dopen") and same_rank:
                extents[c.dataset] = list(c.dims)  # the extent then (the table: the first's)
            if kind == "extend" and same_rank:
                extents[c.dataset] = list(c.dims)
                count = list(c.dims)  # the new extent
            extent = extents.get(c.dataset, dinfo.get("dims") or [])
            if kind in ("write", "read") and c.dims is not None and len(c.dims) == len(extent):
                count = list(c.dims)
                size = int(dinfo.get("type_size") or 1)
                elem = c.offset // max(size, 1) if c.offset is not None else 0
                # the offset counts in the extent at the call: after H5Dset_extent, the new one
                start = _unravel(max(elem, 0), extent)
        if kind == "extend" and count is None:  # no dataset or extent known: nothing to make
            kind = "other"
        scale = None
        if kind in ("attach", "detach"):  # dims: [the scale's dataset], mode: the dimension
            i = c.dims[0] if c.dims and len(c.dims) == 1 else -1
            ok = dname is not None and 0 <= i < len(tr.datasets) and type(c.mode) is int
            scale = tr.datasets[i]["name"] if ok else None
            kind = kind if ok and 0 <= c.mode < len(dinfo.get("dims") or []) else "other"
        elif kind == "scale" and dname is None:
            kind = "other"
        elif kind == "lookup" and (dname is None or type(c.mode) is not int or c.mode < 0):
            kind = "other"
        elif kind == "attr" and not _attribute_call_known(c):
            kind = "other"
        elif kind in ("gcreate", "ldelete") and (
            c.attribute is None or c.attribute.get("name") is not None
        ):
            kind = "other"
        ops.append(
            Op(
                kind,
                c.func,
                file_rank_names.get(c.file, c.file),
                API_OF_LAYER[c.layer],
                dname,
                dinfo,
                start,
                count,
                c.offset,
                c.size,
                c.collective,
                c.t0,
                c.t1,
                view=_view_of(c, views.get(c.file)),
                viewless=c.func in VIEW_WRITES and c.file not in views,
                memory=(c.memory or {}).get("pieces"),
                filter_mask=c.filter_mask,
                mode=c.mode,
                scale=scale,
                fresh=c.fresh,
                attr=c.attribute if kind == "attr" else None,
                attr_on=c.attribute["object"] if kind in ("attr", "gcreate", "ldelete") else None,
                attr_to=(c.renamed or {}).get("name") if kind == "attr" else None,
                file_format=c.format,
                shared=c.func in SHARED,
            )
        )
    return ops


O_TRUNC, O_APPEND = 0o1000, 0o2000  # Linux open(2) flags, as the trace gives an open's mode


def running_offsets(ops: list[Op]) -> None:
    """Gives the POSIX (and stdio) transfers the trace has no offset for (fwrite, fread) the
    rank's running position in the file: from 0 after an open, from the file's end (as far as
    the rank's calls wrote it) in append mode (O_APPEND, fopen "a"), the end reset by O_TRUNC.
    They were all at offset 0: a log appended to at every step was one line long."""
    pos: dict[str, int] = {}
    end: dict[str, int] = {}
    append: dict[str, bool] = {}
    for op in ops:
        if op.api != "posix":
            continue
        if op.kind == "open":
            flags = op.mode or 0
            if flags & O_TRUNC:
                end[op.file] = 0
            append[op.file] = bool(flags & O_APPEND)
            pos[op.file] = end.get(op.file, 0) if append[op.file] else 0
        elif op.kind in ("write", "read") and op.offset is None:
            at = end.get(op.file, 0) if append.get(op.file) and op.kind == "write" else None
            op.offset = pos.get(op.file, 0) if at is None else at
            op.running = True
            pos[op.file] = op.offset + op.size
            if op.kind == "write":
                end[op.file] = max(end.get(op.file, 0), pos[op.file])
        elif op.kind == "write" and op.offset is not None:
            end[op.file] = max(end.get(op.file, 0), op.offset + op.size)


# attribute calls (the trace's funcs): the call of the skeleton's `attribute:` entry
ATTRIBUTE_CALLS = {"H5Acreate": "create", "H5Aopen": "open", "H5Awrite": "write",
                   "H5Aread": "read", "H5Aexists": "exists", "H5Aiterate": "iterate",
                   "H5Arename": "rename", "H5Adelete": "delete"}  # fmt: skip


def _attribute_call_known(c: Any) -> bool:
    """Does the trace say enough of an attribute call to make it: a name (but for an
    iteration), a rename's new name, a creation's dataspace and type?"""
    a, call = c.attribute, ATTRIBUTE_CALLS[c.func]
    if a is None or (a.get("name") is None) != (call == "iterate"):
        return False
    if call == "rename":
        return isinstance((c.renamed or {}).get("name"), str)
    if call == "create":
        dims = a.get("dims")
        space_ok = a.get("space") in ("scalar", "null") or (
            a.get("space") == "simple" and isinstance(dims, list) and 1 <= len(dims) <= 32
            and all(type(v) is int and v >= 0 for v in dims)
        )  # fmt: skip
        return space_ok and type(a.get("type_size")) is int and a["type_size"] >= 0
    return True


# dimension scales (libhdf5_hl): the op kinds of their traced calls
SCALE_FUNCS = {"H5DSset_scale": "scale", "H5DSattach_scale": "attach", "H5DSdetach_scale": "detach"}
# their lookups (netCDF-4's at every open): op kind "lookup", the descriptor's lookup_scales
SCALE_LOOKUPS = {"H5DSis_scale": "is_scale", "H5DSget_num_scales": "count",
                 "H5DSiterate_scales": "iterate"}  # fmt: skip


def _view_of(c: Any, view: dict[str, Any] | None) -> dict[str, Any] | None:
    """The view a write goes through: the one set last for MPI_File_write(_all), with `at`
    where the individual file pointer was in it when not at its start (moved by MPI_File_seek,
    any whence, or by the writes before: the skeleton sets the view again before each write,
    which moves the pointer to the start); for an explicit-offset write through a view, that
    view with `at`, the offset in the view's bytes where the call's file offset lies (None:
    written as bytes at the file offset, as without a view). A contiguous view is kept too:
    its MPI_File_set_view is a collective call of its own (PnetCDF sets one before each
    variable's write; under OMPIO 7-17 ms each)."""
    if c.func in VIEW_WRITES:  # at the individual file pointer: where a seek or the calls
        # before put it (traced: its byte offset); `at` unless at the view's start
        at = vw.position(view, c.offset) if view is not None and c.offset is not None else None
        return {**view, "at": at} if view is not None and at else view
    if c.func not in VIEW_AT_WRITES or view is None:
        return None
    at = vw.position(view, c.offset) if c.offset is not None else None
    return None if at is None else {**view, "at": at}


def _unravel(index: int, dims: list[int]) -> list[int]:
    out = []
    for d in reversed(dims):
        d = max(int(d), 1)
        out.append(index % d)
        index //= d
    return list(reversed(out))


def align(ops_by_rank: list[list[Op]]) -> list[list[tuple[int, int]]] | None:
    """Groups of (rank, index) of the same write across ranks, in call order, or None.
    Identical sequences align one to one; rank 0 may make extra writes (a header) or miss
    some that all others make."""
    keys = [
        [(op.func, op.dataset, op.collective, op.attr_on, (op.attr or {}).get("name"))
         for op in ops]
        for ops in ops_by_rank
    ]  # fmt: skip
    n = len(keys)
    if all(k == keys[0] for k in keys):
        return [[(r, i) for r in range(n)] for i in range(len(keys[0]))]
    if n < 2 or any(k != keys[1] for k in keys[1:]):
        return None
    sm = difflib.SequenceMatcher(a=keys[0], b=keys[1], autojunk=False)
    groups: list[list[tuple[int, int]]] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                groups.append([(0, i)] + [(r, j) for r in range(1, n)])
        elif tag == "delete":
            groups.extend([[(0, i)] for i in range(i1, i2)])
        elif tag == "insert":
            groups.extend([[(r, j) for r in range(1, n)] for j in range(j1, j2)])
        else:
            return None
    return groups
