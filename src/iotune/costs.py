"""What a setting costs, and whether it fits the machine: data/costs.tsv, the one definition the
C runtime shares (runtime/src/config/bounds.c, generated costs_gen.h).

A setting costs memory (per open dataset or file: chunk cache slots and bytes, sieve and
metadata cache sizes, MPI-IO buffers) or disk space (per object or file: alignment, metadata
and small-data blocks). It may take at most 1/share of the budget: the process's memory (the
least of physical memory and the cgroup's limit, each divided by the ranks on the host, and of
RLIMIT_AS and RLIMIT_DATA) or the free space of the file system. The runtime withdraws a
setting that costs more before it applies it; `iotune check` warns about it and `iotune tune`
leaves such values out of its search spaces. The shared vectors tests/vectors/costs/cases.json hold
both sides to one reading.
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path

from iotune import params

RESOURCES = ("memory", "disk")
PER = ("dataset", "file", "object")


@dataclass(frozen=True)
class Cost:
    """One row of the cost table."""

    name: str
    resource: str  # memory | disk
    per: str  # dataset | file | object
    item: int | None  # the number of the value that costs; None: the product of all
    factor: float  # bytes per unit
    share: float  # the setting may take at most 1/share of the budget
    why: str


@dataclass(frozen=True)
class Budget:
    """What the machine allows; a negative amount is unknown (nothing judged against it)."""

    memory: float = -1.0
    memory_what: str = ""
    disk: float = -1.0
    disk_what: str = ""


def table_path() -> Path:
    return Path(str(resources.files("iotune") / "data" / "costs.tsv"))


def read_table(path: str | Path) -> dict[str, Cost]:
    """Reads a cost table (tab-separated, '#' comments, a header line) and checks it."""
    with open(path, encoding="utf-8") as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    expected = ["name", "resource", "per", "item", "factor", "share", "why"]
    if not lines or lines[0].split("\t") != expected:
        raise ValueError(f"{path}: the header must be {' '.join(expected)}")
    out: dict[str, Cost] = {}
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(expected):
            raise ValueError(f"{path}: row {number} has {len(cells)} columns, not {len(expected)}")
        row = dict(zip(expected, cells, strict=True))
        name = row["name"]
        if params.find(name) is None or name in out:
            raise ValueError(f"{path}: row {number}: {name} is unknown or repeated")
        if row["resource"] not in RESOURCES or row["per"] not in PER:
            raise ValueError(f"{path}: row {number}: bad resource or per")
        out[name] = Cost(
            name=name,
            resource=row["resource"],
            per=row["per"],
            item=None if row["item"] == "product" else int(row["item"]),
            factor=float(row["factor"]),
            share=float(row["share"]),
            why=row["why"],
        )
    return out


@cache
def table() -> dict[str, Cost]:
    return read_table(table_path())


def cost_of(name: str) -> Cost | None:
    """The cost row of a parameter, or None when it costs nothing the bounds know."""
    return table().get(name)


def cost(name: str, value: str, elem: float = 1) -> float:
    """The bytes a value (text) of name costs; elem: bytes per element for chunk dimensions."""
    c = cost_of(name)
    if c is None:
        return 0.0
    v = params.python_value(params.get(name), value)
    numbers = list(v) if isinstance(v, tuple) else [v]
    if c.item is None:
        units = float(math.prod(float(x) for x in numbers)) * (elem if elem > 0 else 1)
    else:
        units = float(numbers[c.item]) if c.item < len(numbers) else 0.0
    return units * c.factor


def format_bytes(n: float) -> str:
    """A byte count for people, as the runtime writes it: "8 GiB", "1.5 GiB", "512 bytes"."""
    if n < 1024:
        return f"{n:.0f} bytes"
    units = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    u = -1
    while n >= 1024 and u < 5:
        n /= 1024
        u += 1
    if n >= 1e6:  # beyond a million EiB (chunk dimensions multiplied out): three digits
        return f"{n:.3g} {units[u]}"
    return f"{n:.0f} {units[u]}" if n == math.floor(n) else f"{n:.1f} {units[u]}"


def exceeds(name: str, value: str, nbytes: float, budget: Budget) -> str | None:
    """The message when nbytes of name exceed its share of the budget, else None."""
    c = cost_of(name)
    if c is None:
        return None
    mem = c.resource == "memory"
    whole = budget.memory if mem else budget.disk
    if whole < 0 or nbytes <= whole / c.share:
        return None
    return (
        f"{name}={value} would cost {format_bytes(nbytes)} of "
        f"{'memory' if mem else 'disk space'} per {'open ' if mem else ''}{c.per} ({c.why}), "
        f"more than 1/{c.share:.0f} of {format_bytes(whole)} "
        f"({budget.memory_what if mem else budget.disk_what}): withdrawn"
    )


def judge(name: str, value: str, budget: Budget) -> str | None:
    """The message when a setting (normalised value) costs more than the budget allows."""
    if cost_of(name) is None:
        return None
    return exceeds(name, value, cost(name, value), budget)


FILE_TOTAL_SHARE = 4  # bounds.h IOT_FILE_TOTAL_SHARE
_MDC = ("mdc_initial_size", "mdc_min_size", "mdc_max_size")


def file_total(settings, budget: Budget) -> list[tuple[object, str]]:
    """The runtime's total per HDF5 file (apply_hdf5.c judge_total): the file access settings
    and MPI-IO hints that cost memory, each under its own limit, may cost together at most
    1/FILE_TOTAL_SHARE of the budget (the three mdc_* sizes count once, as the largest); the
    costliest is withdrawn first until they fit. settings: controlfile.Setting-like objects
    (name, value, file, param); returns (setting, message) per withdrawal. Settings of one
    FileName pattern are judged with those for every file."""
    from iotune import params

    if budget.memory < 0:
        return []
    out: list[tuple[object, str]] = []
    patterns = {s.file for s in settings if s.file}
    for pattern in sorted(patterns) or [None]:
        chosen: dict[str, object] = {}
        for s in settings:
            p, c = params.find(s.name), cost_of(s.name)
            if s.file not in (None, pattern) or not p or p.target not in ("fapl", "hint"):
                continue
            if c and c.resource == "memory" and judge(s.name, s.value, budget) is None:
                chosen[s.name] = s  # the last of a name wins; over its own limit: judged alone
        order = [p.name for p in params.all_params() if p.target == "fapl"]
        fapl = sorted(
            (s for s in chosen.values() if s.name in order), key=lambda s: order.index(s.name)
        )
        items = fapl + [s for s in chosen.values() if s.name not in order]  # as the runtime
        while items:
            each = [cost(s.name, s.value) for s in items]
            mdc = max([c for s, c in zip(items, each, strict=True) if s.name in _MDC], default=0)
            total = sum(c for s, c in zip(items, each, strict=True) if s.name not in _MDC) + mdc
            if total <= budget.memory / FILE_TOTAL_SHARE:
                break
            at = each.index(max(each))
            s = items.pop(at)
            if any(s is o for o, _ in out):
                continue
            out.append((s, (
                f"{s.name}={s.value} ({format_bytes(each[at])}) withdrawn: the file's buffers "
                f"would cost {format_bytes(total)} of memory together per open file, more than "
                f"1/{FILE_TOTAL_SHARE} of {format_bytes(budget.memory)} ({budget.memory_what})"
            )))  # fmt: skip
    return out


# ----------------------------------------------------------------------------- the machine


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(4096)
    except OSError:
        return ""


def _cgroup_limit(root: str, path: str, name: str) -> float:
    """The least limit of a cgroup and its ancestors ("max" and v1's huge values: none)."""
    least = -1.0
    parts = [p for p in path.split("/") if p]
    for depth in range(len(parts), -1, -1):
        text = _read(os.path.join(root, *parts[:depth], name)).strip()
        try:
            v = float(text)
        except ValueError:
            continue
        if 0 < v < 4e18 and (least < 0 or v < least):
            least = v
    return least


def cgroup_memory() -> tuple[float, str]:
    """The memory limit of this process's cgroup (v2 memory.max, v1 memory.limit_in_bytes)."""
    least, what = -1.0, ""
    for line in _read("/proc/self/cgroup").splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        controllers, path = fields[1], fields[2]
        v, name = -1.0, ""
        if controllers == "":
            v = _cgroup_limit("/sys/fs/cgroup", path, "memory.max")
            if v < 0:
                v = _cgroup_limit("/sys/fs/cgroup/unified", path, "memory.max")
            name = "cgroup memory.max"
        elif "memory" in controllers.split(","):
            v = _cgroup_limit("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes")
            name = "cgroup memory.limit_in_bytes"
        if v > 0 and (least < 0 or v < least):
            least, what = v, name
    return least, what


def machine_budget(ranks_per_host: int = 1, path: str | Path = ".") -> Budget:
    """This machine's budget for one of ranks_per_host processes, and the free space of the
    file system holding path (a directory), as the runtime computes them."""
    ranks = max(1, ranks_per_host)
    memory, what = -1.0, ""
    try:
        phys = float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):
        phys = -1.0
    for amount, name in ((phys, "physical memory"), cgroup_memory()):
        if amount > 0 and (memory < 0 or amount / ranks < memory):
            memory = amount / ranks
            what = f"{name} {format_bytes(amount)}" + (
                f" / {ranks} ranks on this host" if ranks > 1 else ""
            )
    for which, name in ((resource.RLIMIT_AS, "RLIMIT_AS"), (resource.RLIMIT_DATA, "RLIMIT_DATA")):
        soft = resource.getrlimit(which)[0]
        if soft != resource.RLIM_INFINITY and (memory < 0 or soft < memory):
            memory, what = float(soft), f"{name} {format_bytes(soft)}"
    disk, disk_what = -1.0, ""
    where = Path(path)
    while not where.exists() and where != where.parent:  # a directory not made yet
        where = where.parent
    try:
        st = os.statvfs(where)
        disk = float(st.f_bavail * st.f_frsize)
        disk_what = f"free on the file system of {where}"
    except OSError:
        pass
    return Budget(memory, what, disk, disk_what)


# ----------------------------------------------------------------------------- search spaces


def bounded_space(sp, budget: Budget):
    """The search space without the values that cost more than budget allows (the stack's
    default and "unset" always stay), and one line per value left out."""
    from iotune import space as space_mod

    dropped: list[str] = []
    dims = []
    for d in sp.dims:
        keep = []
        for v in d.values:
            message = None
            if v not in (space_mod.UNSET, d.default):
                message = judge(d.name, v, budget)
            if message:
                dropped.append(message.replace(": withdrawn", ": left out of the search space"))
            else:
                keep.append(v)
        dims.append(replace(d, values=tuple(keep)) if len(keep) != len(d.values) else d)
    if not dropped:
        return sp, []
    guesses = [
        g
        for g in sp.guesses
        if all(v in next(x for x in dims if x.name == n).values for n, v in g.settings.items())
    ]
    return replace(sp, dims=dims, guesses=guesses), dropped
