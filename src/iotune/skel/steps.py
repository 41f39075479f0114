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


def step_body(ops: list[Op], steps: int, where: str | None) -> list[Op] | None:
    if steps == 1:
        return ops
    body = [op for op in ops if op.step in (None, 0)]
    shape0 = [shape(op) for op in ops if op.step == 0]
    for s in range(1, steps):
        if [shape(op) for op in ops if op.step == s] != shape0:
            return None
    if where == "dataset":
        # the file stays open over the steps: its open and close are outside the body
        return body
    return [op for op in body if op.step == 0]


def shape(op: Op) -> tuple:
    view = json.dumps(op.view, sort_keys=True) if op.view else None
    return (op.kind, op.func, op.file, op.dataset, op.count, op.size, op.offset, op.start, view)


def compute_gap(ops_by_rank: list[list[Op]], steps: int) -> float:
    gaps = []
    for ops in ops_by_rank:
        for s in range(steps - 1):
            end = max((op.t1 for op in ops if op.step == s), default=None)
            nxt = min((op.t0 for op in ops if op.step == s + 1), default=None)
            if end is not None and nxt is not None:
                gaps.append(max(nxt - end, 0.0))
    return round(statistics.median(gaps), 6) if gaps else 0.0
