"""A host's trace file (schema 5, `host-I.json.gz`, docs/profile.md "Trace mode"): the traces
of every rank of one host, what ranks repeat stored once. `expand(doc)` turns it back into one
rank's trace per member, in schema 4's columns (as `rank-N.json.gz` would hold them), for
iotune.trace to check and rebuild like any other: exactly, not approximately.

The file: the header (`session`, `host`, `host_index`, `ranks`, `start`, `limits`, `tick_s`,
`tolerance_s`), `members` (one per rank: `rank`, `start` (the job's start on its clock),
`dropped_calls`, `shape`, and what differs from the shape's first rank: `files`, `step`, the
runs' order columns `sig`, `count`, `seq`, `stride`; always its own `runs` times `start`,
`period`, `busy`, `idle`) and `shapes` (`first`: the rank whose trace it is; `datasets`
(`file`: an index into `files`), `views`, `memory`, `attributes`, `signatures` without `step`;
`runs` with the order columns; `files`; `step`; `step_per_rank`).
A member's steps, when it has none, are the shape's `step + (rank - first) * step_per_rank`;
a member whose `shape` is an object (the leader's memory was full) carries everything itself.
"""

from __future__ import annotations

from typing import Any

from iotune.trace_schema import MAX_NUMBER, RUN_COLUMNS, SIG_COLUMNS

ORDER = ("sig", "count", "seq", "stride")
TIMES = ("start", "period", "busy", "idle")
HEADER = ("schema", "session", "host", "host_index", "ranks", "start", "limits", "tick_s",
          "tolerance_s")  # fmt: skip
MAX_MEMBERS = 1 << 24


class HostError(ValueError):
    """What is wrong with a host's file (one line, without the file's name)."""


def _int(x: Any, where: str, lo: int = -MAX_NUMBER, hi: int = MAX_NUMBER) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or not lo <= x <= hi:
        raise HostError(f"{where} is not a whole number in [{lo}, {hi}] ({str(x)[:40]})")
    return x


def _obj(x: Any, where: str) -> dict[str, Any]:
    if not isinstance(x, dict):
        raise HostError(f"{where} is not an object ({type(x).__name__})")
    return x


def _lst(x: Any, where: str) -> list[Any]:
    if not isinstance(x, list):
        raise HostError(f"{where} is not a list ({type(x).__name__})")
    return x


def _shape(sh: dict[str, Any], where: str) -> tuple[dict[str, Any], int]:
    """The signature columns of a shape (checked to be lists of one length) and that length."""
    sigs = _obj(sh.get("signatures"), f"{where}.signatures")
    lengths = {len(_lst(sigs.get(k), f"{where}.signatures.{k}")) for k in SIG_COLUMNS
               if k != "step"}  # fmt: skip
    if len(lengths) != 1:
        raise HostError(f"the columns of {where}.signatures differ in length ({sorted(lengths)})")
    return sigs, lengths.pop()


def _steps(m: dict[str, Any], sh: dict[str, Any] | None, n: int, rank: int, where: str) -> list:
    if "step" in m:
        steps = _lst(m["step"], f"{where}.step")
    elif sh is None:
        raise HostError(f"{where} has its shape inline but no step")
    else:
        base = _lst(sh.get("step"), "shape.step")
        slope = _lst(sh.get("step_per_rank"), "shape.step_per_rank")
        if len(base) != n or len(slope) != n:
            raise HostError(f"{where}'s shape has {len(base)} steps and {len(slope)} steps per "
                            f"rank for {n} signatures")  # fmt: skip
        first = _int(sh.get("first"), "shape.first", 0)
        steps = []
        for i, (b, k) in enumerate(zip(base, slope, strict=True)):
            if b is None:
                steps.append(None)
                continue
            v = _int(b, f"shape.step[{i}]") + (rank - first) * _int(k, f"shape.step_per_rank[{i}]")
            steps.append(_int(v, f"{where}.step[{i}] (from its shape)"))
    if len(steps) != n:
        raise HostError(f"{where} has {len(steps)} steps for {n} signatures")
    return steps


def _member(doc: dict[str, Any], shapes: list[Any], m: Any, where: str) -> dict[str, Any]:
    m = _obj(m, where)
    rank = _int(m.get("rank"), f"{where}.rank", 0, _int(doc.get("ranks"), "ranks", 1) - 1)
    ref = m.get("shape")
    if isinstance(ref, dict):
        sh, inline = ref, True
    else:
        sh, inline = _obj(shapes[_int(ref, f"{where}.shape", 0, len(shapes) - 1)], "shape"), False
    sigs, n = _shape(sh, f"{where}'s shape")
    files = m["files"] if "files" in m else ([] if inline else sh.get("files", []))
    files = _lst(files, f"{where}.files")
    runs = dict(_obj(m.get("runs"), f"{where}.runs"))
    if not all(k in runs for k in ORDER):
        base = {} if inline else _obj(sh.get("runs"), f"{where}'s shape.runs")
        for k in ORDER:
            runs.setdefault(k, base.get(k))
    datasets = []
    for i, d in enumerate(_lst(sh.get("datasets", []), f"{where}'s shape.datasets")):
        d = dict(_obj(d, f"datasets[{i}]"))
        f = _int(d.get("file", -1), f"datasets[{i}].file")
        d["file"] = files[f] if 0 <= f < len(files) and isinstance(files[f], str) else None
        datasets.append(d)
    dropped = _int(m.get("dropped_calls", 0), f"{where}.dropped_calls", 0)
    out = {k: doc.get(k) for k in HEADER}
    out.update(version=5, rank=rank, start=m.get("start", doc.get("start")),
               truncated=dropped > 0, dropped_calls=dropped, files=files,
               datasets=datasets, views=sh.get("views", []), memory=sh.get("memory", []),
               attributes=sh.get("attributes", []),
               signatures={**sigs, "step": _steps(m, None if inline else sh, n, rank, where)},
               runs={k: runs.get(k) for k in RUN_COLUMNS})  # fmt: skip
    return out


def expand(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One schema-4-like trace per member of a host's file, in the file's order. HostError
    when the file's own structure is wrong (the members' traces are checked by the caller)."""
    shapes = _lst(doc.get("shapes"), "shapes")
    members = _lst(doc.get("members"), "members")
    if len(members) > MAX_MEMBERS:
        raise HostError(f"{len(members)} members, more than {MAX_MEMBERS}")
    out, seen = [], set()
    for i, m in enumerate(members):
        t = _member(doc, shapes, m, f"members[{i}]")
        if t["rank"] in seen:
            raise HostError(f"members[{i}]: rank {t['rank']} twice")
        seen.add(t["rank"])
        out.append(t)
    return out
