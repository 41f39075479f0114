"""MPI-IO file views as the trace records them (`disp`, `size`, `lb`, `extent` and the
filetype's `blocks`, or, for a filetype of too many blocks, `runs` of them: `[offset, length,
count, stride]`): their layout for a descriptor, and where in a view a byte of the file lies (an
`MPI_File_write_at` through a view gives the file offset; the skeleton needs the view's)."""

from __future__ import annotations

import bisect
from typing import Any

MAX_BLOCKS = 1 << 20  # a layout expanded beyond this is treated as unknown


def layout(view: dict[str, Any] | None) -> list[list[int]] | None:
    """The view's filetype as descriptor blocks: [offset, length] each, or [offset, length,
    count, stride] for a run the trace recorded; None when the trace has neither."""
    if not isinstance(view, dict):
        return None
    blocks, runs = view.get("blocks"), view.get("runs")
    if _ints(blocks, 2):
        return [list(b) for b in blocks]
    if _ints(runs, 4) and all(r[2] >= 1 for r in runs):
        return [list(r[:2]) if r[2] == 1 else list(r) for r in runs]
    return None


def _ints(v: Any, n: int) -> bool:
    return (
        isinstance(v, list)
        and bool(v)
        and all(isinstance(b, list) and len(b) == n for b in v)
        and all(type(x) is int and x >= 0 for b in v for x in b)
    )


def expanded(view: dict[str, Any] | None) -> list[tuple[int, int]] | None:
    """The view's blocks one by one, (offset, length); None when unknown or beyond MAX_BLOCKS."""
    lay = layout(view)
    if lay is None or sum(b[2] if len(b) == 4 else 1 for b in lay) > MAX_BLOCKS:
        return None
    out = []
    for b in lay:
        count, stride = (b[2], b[3]) if len(b) == 4 else (1, 0)
        out.extend((b[0] + k * stride, b[1]) for k in range(count))
    return out


def contiguous(view: dict[str, Any] | None) -> bool:
    """A view through which bytes land as they would without it (one block tiling its
    extent): a write through it is a write of bytes at the file offset."""
    if view is None:
        return True
    lay = layout(view)
    return (
        lay is not None and len(lay) == 1 and len(lay[0]) == 2 and view.get("extent") == lay[0][1]
    )


def position(view: dict[str, Any], file_offset: int) -> int | None:
    """Bytes into the view's data where file_offset (bytes from the file's start) lies, or None
    when the view's layout is unknown or the offset is in none of its blocks."""
    prep = _prepared(view)
    if prep is None:
        return None
    disp, extent, starts, lengths, before, per_tile, span = prep
    rel = file_offset - disp
    tile = max((rel - starts[0]) // extent, 0)
    for k in range(max(tile - span, 0), tile + 2):  # the first tile that holds it
        r = rel - k * extent
        i = bisect.bisect_right(starts, r) - 1
        if i >= 0 and r < starts[i] + lengths[i]:
            return k * per_tile + before[i] + (r - starts[i])
    return None


_PREPARED: dict[int, tuple[dict[str, Any], tuple | None]] = {}  # id(view) -> (view, tables)


def _prepared(view: dict[str, Any]) -> tuple | None:
    """The view's blocks as lookup tables, once per view (a program writes through one view
    many times)."""
    hit = _PREPARED.get(id(view))
    if hit is not None and hit[0] is view:
        return hit[1]
    blocks = expanded(view)
    disp, extent = view.get("disp"), view.get("extent")
    tables = None
    ok = blocks and type(disp) is int and type(extent) is int and extent > 0
    if ok and all(b[0] >= a[0] for a, b in zip(blocks, blocks[1:], strict=False)):
        starts = [o for o, _ in blocks]
        lengths = [n for _, n in blocks]
        before, acc = [], 0
        for n in lengths:
            before.append(acc)
            acc += n
        span = -(-(starts[-1] + lengths[-1] - starts[0]) // extent)  # tiles one tile covers
        tables = (disp, extent, starts, lengths, before, acc, span)
    if len(_PREPARED) > 64:
        _PREPARED.clear()
    _PREPARED[id(view)] = (view, tables)
    return tables
