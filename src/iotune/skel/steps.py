"""Steps: a number in file or dataset names that counts the steps becomes {step}; one step's
calls are the body the skeleton repeats, checked against the others; the compute time is
the median gap between the end of a step and the start of the next."""

from __future__ import annotations

import json
import re
import statistics

from iotune.skel.ops import Op, placeholder

_RANK = re.compile(r"(\{rank(?::0\d+)?\})")


def find_steps(ops_by_rank: list[list[Op]]) -> tuple[int, str | None]:
    """(steps, how): a number in file or dataset names that counts 0, 1, ... S-1 along the
    calls of every rank (the first such number of a name), or (1, None)."""
    best = (1, None)
    for where in ("file", "dataset"):
        ok, steps = True, None
        for ops in ops_by_rank:
            values = []
            # only files the application wrote or made datasets in: an interpreter's own
            # files (h5py's script, pyvenv.cfg), opened and read, do not count steps
            data_files = {op.file for op in ops if op.kind in ("write", "create")}
            for op in ops:
                name = op.file if where == "file" else op.dataset
                if name is None or op.kind not in ("write", "open", "close"):
                    continue
                if where == "file" and name not in data_files:
                    continue
                m = re.search(r"\d+", _RANK.sub("", name))
                if not m:
                    continue
                values.append(int(m.group()))
            if not values or values != sorted(values) or values[0] != 0:
                ok = False
                break
            distinct = sorted(set(values))
            if distinct != list(range(len(distinct))) or len(distinct) < 2:
                ok = False
                break
            steps = len(distinct) if steps is None else steps
            if steps != len(distinct):
                ok = False
                break
        if ok and steps:
            return steps, where
    return best


def first_number_to_step(name: str) -> tuple[str, int | None]:
    parts = _RANK.split(name)
    for i, part in enumerate(parts):
        if _RANK.fullmatch(part):
            continue
        m = re.search(r"\d+", part)
        if m:
            parts[i] = part[: m.start()] + placeholder("step", m.group()) + part[m.end() :]
            return "".join(parts), int(m.group())
    return name, None


def to_step_pattern(group: str) -> str | None:
    pat, value = first_number_to_step(group)
    if value is None:
        return group
    return pat if value == 0 else None


def step_body(
    ops: list[Op], steps: int, where: str | None, data_files: set[str] | None = None
) -> list[Op] | None:
    """One step's calls (the body the skeleton repeats), or None when the steps do not repeat
    the same calls. data_files: the files the application wrote (where == "dataset")."""
    if steps == 1:
        return ops
    if where == "dataset":
        return _loop_body(ops, steps, data_files)
    # a file per step: the calls on files without a step number (a log or summary written at
    # every step beside the step's file) are the step's too (they were dropped); the calls on
    # other files (an interpreter's own) are left out, as before
    mine = [op for op in ops if op.step is not None or (data_files or set()) & {op.file}]
    return _loop_body(mine, steps, None)


_LAYERS = ("posix", "mpiio", "hdf5")  # below to above


def _loop_body(ops: list[Op], steps: int, data_files: set[str] | None) -> list[Op] | None:
    """A group (or dataset) per step in files open over all steps: the skeleton opens those
    files before its step loop, makes one step's calls at every step and closes them after.
    That is the application's I/O only when its calls on its data files (at each file's own
    layer) are opens and calls made once (no step number: made at the first step only,
    `once`), then `steps` runs of the same calls, the k-th naming step k only, then closes.
    Calls without a step number in the runs count too: an H5Dset_extent of a growing dataset,
    another file's writes at moving offsets, a file closed and opened again to read the steps
    back (a checkpoint writer) make the runs differ or the closes not the last calls, and so
    the calls are unrolled (None); before, they were all repeated at every step, and the
    file opened again was created anew at every step."""
    top: dict[str, int] = {}
    for op in ops:
        if op.api in _LAYERS:
            top[op.file] = max(top.get(op.file, 0), _LAYERS.index(op.api))
    mine = [
        i
        for i, op in enumerate(ops)
        if op.kind != "other"
        and (data_files is None or op.file in data_files)
        and _LAYERS.index(op.api) == top.get(op.file, -1)
        and not _once_group(op)
    ]
    # groups made without a step number (a parent of the steps' groups): the skeleton makes a
    # file's groups at every step, once (they exist after), so they may be anywhere in the
    # body, but not in another step's calls only (they would not be made)
    once = [i for i, op in enumerate(ops) if _once_group(op)]
    sig = [ops[i] for i in mine]
    # before the first step: opens, and calls made once (a root attribute, a dataset written
    # once: the skeleton makes them at its first step only, `once`)
    lead = next((k for k, op in enumerate(sig) if op.step is not None), len(sig))
    tail = next(
        (k for k, op in enumerate(reversed(sig)) if op.kind not in ("close", "delete")), len(sig)
    )
    for p in range(lead, -1, -1):  # the longest prologue of opens and epilogue of closes first
        for e in range(tail, -1, -1):
            n = len(sig) - p - e
            if n <= 0 or n % steps:
                continue
            t = n // steps
            runs = [sig[p + k * t : p + (k + 1) * t] for k in range(steps)]
            if all(
                [shape(op) for op in run] == [shape(op) for op in runs[0]]
                and all(op.step in (None, k) for op in run)
                and any(op.step == k for op in run)
                for k, run in enumerate(runs)
            ) and _per_step(runs):
                end0 = mine[p + t - 1]  # the first step's last call
                after = mine[p + steps * t] if e else len(ops)  # the closes after the steps
                if any(end0 < i < after for i in once):
                    continue
                for op in sig[:p]:
                    op.once = op.kind != "open"
                    op.lead = op.kind == "open"
                for op in runs[0]:  # a file opened at every step (a log): kept so
                    op.stepwise = op.kind == "open"
                return ops[: end0 + 1] + ops[after:]
    return None


def _once_group(op: Op) -> bool:
    """A group made (H5Gcreate) whose path has no step number."""
    return op.kind == "gcreate" and op.step is None


def _per_step(runs: list[list[Op]]) -> bool:
    """Do the running offsets (a log appended to, ops.running_offsets) and the shared file
    pointer's seeks move by the same bytes at every step? Then the first step's calls get that
    as per_step (the descriptor's offset `... + step * N`); otherwise the steps differ
    (False)."""
    moves: dict[int, int] = {}
    for j, op in enumerate(runs[0]):
        if not _moves(op) or op.offset is None:
            continue
        offsets = [run[j].offset or 0 for run in runs]
        moved = offsets[1] - offsets[0] if len(runs) > 1 else 0
        if any(o != offsets[0] + k * moved for k, o in enumerate(offsets)):
            return False
        moves[j] = moved
    for j, moved in moves.items():
        runs[0][j].per_step = moved
    return True


def _moves(op: Op) -> bool:
    """An offset that may move from step to step (by the same bytes at each: _per_step): a
    running one (a log appended to), a seek of the shared file pointer (records per step)."""
    return op.running or op.kind == "seekshared"


def shape(op: Op) -> tuple:
    """What must be the same in every step's call (a running offset may move: _per_step)."""
    view = json.dumps(op.view, sort_keys=True) if op.view else None
    attr = (op.attr_on, (op.attr or {}).get("name"), op.attr_to) if op.kind == "attr" else None
    if op.kind == "gcreate":
        attr = (op.attr_on,)
    offset = None if _moves(op) else op.offset
    return (op.kind, op.func, op.file, op.dataset, op.count, op.size, offset, op.start, view,
            attr)  # fmt: skip


def compute_gap(ops_by_rank: list[list[Op]], steps: int) -> float:
    gaps = []
    for ops in ops_by_rank:
        for s in range(steps - 1):
            end = max((op.t1 for op in ops if op.step == s), default=None)
            nxt = min((op.t0 for op in ops if op.step == s + 1), default=None)
            if end is not None and nxt is not None:
                gaps.append(max(nxt - end, 0.0))
    return round(statistics.median(gaps), 6) if gaps else 0.0
