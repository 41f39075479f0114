"""Decompositions: values across ranks fitted as a + b * rank, block decompositions of a
dataset as a parameter `block` (dimension block * size), file views, memory layouts, and runs
of writes folded into one with `repeat` and `stride`. What does not fit stays per rank."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from typing import Any

from iotune.skel.ops import Op


def affine(values: list[int], ranks_present: list[int]) -> tuple[int, int] | None:
    """(a, b) with values[i] == a + b * rank, exact, or None."""
    if len(values) == 1:
        return values[0], 0
    r0, r1 = ranks_present[0], ranks_present[1]
    b_num = values[1] - values[0]
    if b_num % (r1 - r0):
        return None
    b = b_num // (r1 - r0)
    a = values[0] - b * r0
    if all(v == a + b * r for v, r in zip(values, ranks_present, strict=True)):
        return a, b
    return None


def lin(a: int, b: int, unit: str | None = None) -> str | int:
    """Text of a + b*rank (b given as `unit` when it is a parameter's value)."""
    if b == 0:
        return a
    term = "rank" if b == 1 else f"rank * {unit or b}"
    return term if a == 0 else f"{a} + {term}"


def split_lin(v: Any) -> tuple[int, str] | None:
    """(constant, rest) of `a`, `a + rank * b`, `rank * p`; None for other forms."""
    if isinstance(v, int):
        return v, ""
    m = re.fullmatch(r"(-?\d+) \+ (.*)", str(v))
    if m:
        return int(m.group(1)), m.group(2)
    return 0, str(v)


class Blocks:
    """The parameters of a block decomposition: `block` for the first block length found,
    `block1`, ... for others; a multiple of a known block is written as k * block."""

    def __init__(self) -> None:
        self.params: dict[str, int] = {}
        self.block_param: dict[int, str] = {}

    def param_for_block(self, n: int) -> str:
        """The parameter of a block length n: `block` for the smallest, multiples of it are
        written as k * block by the caller."""
        if n not in self.block_param:
            name = "block" if not self.block_param else f"block{len(self.block_param)}"
            self.block_param[n] = name
            self.params[name] = n
        return self.block_param[n]

    def expr(self, n: int) -> str:
        """The expression of a block length n: its parameter, a multiple of a known block, or
        a new parameter."""
        if n in self.block_param:  # before any smaller block n is a multiple of (1)
            return self.block_param[n]
        for m, name in self.block_param.items():
            if n % m == 0 and n != m:
                return f"{n // m} * {name}"
            if m % n == 0 and m != n:
                break
        return self.param_for_block(n)


def selection(
    ranks: list[int],
    ops: list[Op],
    dims_pair: tuple | None,
    nranks: int,
    blocks: Blocks,
    note: Callable[[str], None],
) -> dict:
    """The write's selection box over its ranks: start and count as expressions of rank (a
    block decomposition: its dimension becomes block * size), else one entry per rank."""
    entry, orig = dims_pair if dims_pair else (None, None)
    dims = entry["dims"] if entry else None
    counts = [op.count for op in ops]
    starts = [op.start for op in ops]
    boxed = [c is not None and s is not None for c, s in zip(counts, starts, strict=True)]
    if (
        any(boxed)
        and not all(boxed)
        and all(b or not op.size for b, op in zip(boxed, ops, strict=True))
    ):
        # some ranks selected nothing (no box in the trace, no bytes), the others a box: empty
        # selections of the dataset's rank beside theirs (netCDF-4's rank 0 appends nothing
        # to an unlimited variable its rank 1 appends to)
        n = len(counts[boxed.index(True)] or [])
        counts = [c if b else [0] * n for c, b in zip(counts, boxed, strict=True)]
        starts = [s if b else [0] * n for s, b in zip(starts, boxed, strict=True)]
    if any(c is None for c in counts) or any(s is None for s in starts):
        if any(op.size for op in ops):
            note(f"{ops[0].dataset}: a write without a selection box in the trace")
        rank = len(dims) if dims else 1  # an empty write (nothing selected) of the same rank
        return {"start": [0] * rank, "count": [0] * rank}
    if any(c != counts[0] for c in counts):
        return {
            "by_rank": {
                r: {"start": s, "count": c} for r, s, c in zip(ranks, starts, counts, strict=True)
            }
        }
    count: list[Any] = list(counts[0])
    start: list[Any] = []
    for k in range(len(count)):
        fit = affine([s[k] for s in starts], ranks)
        if fit is None:
            return {
                "by_rank": {
                    r: {"start": s, "count": c}
                    for r, s, c in zip(ranks, starts, counts, strict=True)
                }
            }
        a, b = fit
        n = count[k]
        block = (
            dims is not None
            and len(ranks) == nranks > 1
            and a == 0
            and b == n
            and orig[k] == n * nranks
        )
        if block:
            p = blocks.expr(n)
            count[k] = p
            start.append(f"rank * {p}" if " " not in p else f"rank * ({p})")
            dims[k] = f"{p} * size" if " " not in p else f"({p}) * size"
            maxdims = entry.get("maxdims")
            if maxdims and maxdims[k] == orig[k]:  # a fixed dimension grows with it
                maxdims[k] = dims[k]
        else:
            start.append(lin(a, b))
    return {"start": start, "count": count}


def add_memory(w: dict[str, Any], ranks: list[int], memory: list[list[int] | None]) -> None:
    """The pieces of the ranks' noncontiguous memory datatypes, beside the write or its ranks."""
    if not any(memory):
        return
    if "by_rank" in w:
        for r, m in zip(ranks, memory, strict=True):
            if m:
                w["by_rank"][r]["memory"] = m
    else:
        w["memory"] = memory[0]


def view_write(
    ranks: list[int], views: list[dict[str, Any]], sizes: list[int], per_rank: bool = False
) -> dict:
    """A write through a file view: `offset` the view's displacement, `size` the call's bytes,
    `view` the filetype (lb, extent, blocks: [offset, length] or runs [offset, length, count,
    stride]; `at`: where in the view an explicit-offset write starts). Values that follow
    a + b * rank across the ranks become expressions; otherwise one entry per rank."""
    fields = [[v["disp"], size, v["lb"], v["extent"], v.get("at")]
              for v, size in zip(views, sizes, strict=True)]  # fmt: skip
    blocks = [v["blocks"] for v in views]
    has_at = any(f[4] is not None for f in fields)
    if has_at:
        for f in fields:
            f[4] = f[4] or 0
    fits = [affine([f[k] for f in fields], ranks) for k in range(5 if has_at else 4)]
    same_shape = len({tuple(len(x) for x in b) for b in blocks}) == 1
    entries = []
    if same_shape:
        for i in range(len(blocks[0])):
            entries.append(
                [affine([b[i][j] for b in blocks], ranks) for j in range(len(blocks[0][i]))]
            )
    if all(fits) and same_shape and all(all(e) for e in entries) and not per_rank:
        disp, size, lb, extent = (lin(*f) for f in fits[:4])  # type: ignore[misc]
        view = {"lb": lb, "extent": extent,
                "blocks": [[lin(*x) for x in e] for e in entries]}  # type: ignore[misc]  # fmt: skip
        if has_at:
            view["at"] = lin(*fits[4])  # type: ignore[misc]
        return {"offset": disp, "size": size, "view": view}

    def one(f: list, b: list) -> dict:
        view = {"lb": f[2], "extent": f[3], "blocks": [list(x) for x in b]}
        if has_at:
            view["at"] = f[4]
        return {"offset": f[0], "size": f[1], "view": view}

    return {"by_rank": {r: one(f, b) for r, f, b in zip(ranks, fields, blocks, strict=True)}}


def compress(writes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of writes that differ only by a constant step of their start (or offset) become one
    write with `repeat` and `stride` (the same write through the shared file pointer: `repeat`
    alone)."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(writes):
        w = writes[i]
        j = i + 1
        stride = None
        while j < len(writes):
            d = _difference(writes[j - 1], writes[j])
            if d is None or (stride is not None and d != stride):
                break
            stride = d
            j += 1
        if j - i > 1:
            # through the shared file pointer: the calls move it, no stride
            w = dict(w, repeat=j - i) if w.get("shared") else dict(w, repeat=j - i, stride=stride)
            gap = statistics.median(x.get("gap_s", 0.0) for x in writes[i:j])
            w.pop("gap_s", None)
            if gap > 0:  # the run's typical time after a call (its last's may be longer)
                w["gap_s"] = gap
        out.append(w)
        i = j
    return out


def _difference(a: dict[str, Any], b: dict[str, Any]) -> Any:
    keys = set(a) | set(b)
    if "by_rank" in keys or "repeat" in keys:
        return None
    if any(a.get(k) != b.get(k) for k in keys - {"start", "offset", "gap_s"}):
        return None
    if a.get("shared"):  # the same call through the shared file pointer again
        return 0
    if "offset" not in a and ("start" not in a or "start" not in b):
        return None  # an extent (H5Dset_extent) is no write
    if "offset" in a:
        da, db = split_lin(a["offset"]), split_lin(b["offset"])
        if da is None or db is None or da[1] != db[1]:
            return None
        return db[0] - da[0]
    stride = []
    for x, y in zip(a["start"], b["start"], strict=True):
        sx, sy = split_lin(x), split_lin(y)
        if sx is None or sy is None or sx[1] != sy[1]:
            return None
        stride.append(sy[0] - sx[0])
    return stride
