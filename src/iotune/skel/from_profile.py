"""A descriptor derived from a trace-mode profile (`iotune profile --trace`).

From each rank's trace: the files in the order they were opened, the datasets (path, extent,
maximum extent, chunks, element type), every write with its selection box and offset, the file
views writes go through (their filetype's blocks), and the clock. Ranks' calls are
aligned, and what every rank does the same way becomes one write whose selection is an
expression of `rank` (a block decomposition becomes a parameter `block...` with the dimension
`block * size`); what differs by rank is kept as a per-rank table. A number that enumerates the
steps in file or dataset names becomes `{step}`, a rank number in file names `{rank}`.

What the trace cannot say is written into the descriptor's `notes`, not guessed silently: types
a skeleton cannot write (strings, compounds, big-endian), reads (not reproduced), views whose
filetype the trace could not flatten. Traces of schema 2 and 3 have no type class, chunks or
views: those come from the application's output file when it still exists (h5dump), else the
type is chosen by its size and a note says so.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from iotune import trace as iotrace
from iotune.skel import descriptor as dmod
from iotune.skel import h5layout

OPENS = {
    "H5Fcreate",
    "H5Fopen",
    "MPI_File_open",
    "open",
    "open64",
    "creat",
    "openat",
    "fopen",
    "fopen64",
}
CLOSES = {"H5Fclose", "MPI_File_close", "close", "fclose"}
WRITES = {
    "H5Dwrite",
    "MPI_File_write_at",
    "MPI_File_write_at_all",
    "MPI_File_write",
    "MPI_File_write_all",
    "pwrite",
    "pwrite64",
    "write",
    "writev",
    "pwritev",
    "pwritev64",
    "fwrite",
    "MPI_File_iwrite_at",
    "MPI_File_iwrite_at_all",
    "MPI_File_iwrite",
    "MPI_File_iwrite_all",
    "MPI_File_write_at_all_begin",
    "MPI_File_write_all_begin",
}
VIEW_WRITES = {
    "MPI_File_write",
    "MPI_File_write_all",
    "MPI_File_iwrite",
    "MPI_File_iwrite_all",
    "MPI_File_write_all_begin",
}
READS_PREFIX = ("H5Dread", "MPI_File_read", "MPI_File_iread", "read", "pread", "fread")
API_OF_LAYER = {"hdf5": "hdf5", "mpiio": "mpiio", "posix": "posix", "stdio": "posix"}


class FromProfileError(ValueError):
    pass


@dataclass
class Call:
    func: str
    layer: str
    file: str
    dataset: int | None
    dims: list[int] | None
    size: int
    offset: int | None
    collective: bool
    t0: float
    t1: float
    view: dict[str, Any] | None = None  # MPI_File_set_view: the view set
    memory: dict[str, Any] | None = None  # an MPI-IO transfer's noncontiguous memory layout


@dataclass
class Trace:
    rank: int
    datasets: list[dict[str, Any]]
    calls: list[Call] = field(default_factory=list)
    version: int = 4


def load_traces(profile_path: str) -> tuple[dict[str, Any], list[Trace]]:
    try:
        with open(profile_path, encoding="utf-8") as fh:
            prof = json.load(fh)
    except (OSError, ValueError) as e:
        raise FromProfileError(f"{profile_path}: cannot read the profile: {e}") from None
    ranks = int(prof.get("ranks", 1))
    traces = []
    for r in range(ranks):
        path = iotrace.rank_path(profile_path, r)  # schema 3, or an older runtime's schema 2
        if not os.path.exists(path):
            raise FromProfileError(
                f"{path}: missing: the profile has no trace of rank {r}; record one with "
                "`iotune profile --trace -- COMMAND`"
            )
        try:
            t = iotrace.read(path)
        except iotrace.TraceError as e:
            raise FromProfileError(str(e)) from None
        if t.get("truncated"):
            raise FromProfileError(
                f"{path}: the trace was truncated at its limit "
                f"({t.get('dropped_calls')} calls dropped); raise "
                "IOTUNE_TRACE_LIMIT and profile again"
            )
        traces.append(_calls(r, t))
    return prof, traces


def _calls(rank: int, t: dict[str, Any]) -> Trace:
    out = Trace(rank, t.get("datasets", []), version=int(t.get("version", 4)))
    last: dict[tuple[str, str], int] = {}
    sigs = t["signatures"]
    for sig_i, count, start, busy, span in t["events"]:
        s = sigs[sig_i]
        each = busy / count if count else 0.0
        for k in range(count):
            offset = None
            if s.get("step") is not None and s.get("file") is not None:
                key = (s["file"], s["layer"])
                offset = last.get(key, 0) + int(s["step"])
                last[key] = offset
            t0 = start + (span - busy) * k / max(count, 1) + each * k
            out.calls.append(
                Call(
                    s["func"],
                    s["layer"],
                    s.get("file") or "",
                    s.get("dataset"),
                    s.get("dims"),
                    int(s.get("size") or 0),
                    offset,
                    s.get("mode") == 1,
                    t0,
                    t0 + each,
                    s.get("view"),
                    s.get("memory"),
                )
            )
    return out


# ----------------------------------------------------------------------------- names


def _rank_pattern(names_by_rank: list[str], ranks: int) -> str | None:
    """The pattern with {rank} that gives each rank's name, or None."""
    if ranks < 2:
        return None
    candidates = None
    for r, name in enumerate(names_by_rank):
        pats = set()
        for m in re.finditer(r"\d+", name):
            if int(m.group()) == r:
                pats.add(name[: m.start()] + "{rank}" + name[m.end() :])
        candidates = pats if candidates is None else candidates & pats
    return sorted(candidates)[0] if candidates else None


@dataclass
class Op:
    """A call of one rank, with names in pattern form."""

    kind: str  # open, close, write, read
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


def _ops(tr: Trace, ranks: int, file_rank_names: dict[str, str]) -> list[Op]:
    ops = []
    views: dict[str, dict[str, Any] | None] = {}  # file -> the view set last
    for c in tr.calls:
        if c.func == "MPI_File_set_view":
            views[c.file] = c.view
            continue
        if c.func in OPENS:
            kind = "open"
        elif c.func in CLOSES:
            kind = "close"
        elif c.func in WRITES:
            kind = "write"
        elif c.func.startswith(READS_PREFIX):
            kind = "read"
        else:
            kind = "other"
        dname = dinfo = None
        start = count = None
        if c.dataset is not None and 0 <= c.dataset < len(tr.datasets):
            dinfo = tr.datasets[c.dataset]
            dname = dinfo["name"]
            if kind == "write" and c.dims is not None:
                count = list(c.dims)
                elem = c.offset // max(int(dinfo["type_size"]), 1) if c.offset is not None else 0
                start = _unravel(elem, dinfo["dims"])
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
                view=views.get(c.file) if c.func in VIEW_WRITES else None,
                memory=(c.memory or {}).get("pieces"),
            )
        )
    return ops


def _unravel(index: int, dims: list[int]) -> list[int]:
    out = []
    for d in reversed(dims):
        d = max(int(d), 1)
        out.append(index % d)
        index //= d
    return list(reversed(out))


def _find_steps(ops_by_rank: list[list[Op]]) -> tuple[int, str | None]:
    """(steps, how): a number in file or dataset names that counts 0, 1, ... S-1 along the
    calls of every rank (the first such number of a name), or (1, None)."""
    best = (1, None)
    for where in ("file", "dataset"):
        ok, steps = True, None
        for ops in ops_by_rank:
            values = []
            for op in ops:
                name = op.file if where == "file" else op.dataset
                if name is None or op.kind not in ("write", "open", "close"):
                    continue
                m = re.search(r"\d+", name.replace("{rank}", ""))
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


def _first_number_to_step(name: str) -> tuple[str, int | None]:
    parts = re.split(r"(\{rank\})", name)
    for i, part in enumerate(parts):
        if part == "{rank}":
            continue
        m = re.search(r"\d+", part)
        if m:
            parts[i] = part[: m.start()] + "{step}" + part[m.end() :]
            return "".join(parts), int(m.group())
    return name, None


# ----------------------------------------------------------------------------- fitting


def _affine(values: list[int], ranks_present: list[int]) -> tuple[int, int] | None:
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


def _lin(a: int, b: int, unit: str | None = None) -> str | int:
    """Text of a + b*rank (b given as `unit` when it is a parameter's value)."""
    if b == 0:
        return a
    term = "rank" if b == 1 else f"rank * {unit or b}"
    return term if a == 0 else f"{a} + {term}"


class Builder:
    def __init__(self, prof: dict[str, Any], traces: list[Trace], data_dir: str | None):
        self.prof, self.traces, self.ranks = prof, traces, len(traces)
        self.data_dir = data_dir
        self.notes: list[str] = []
        self.params: dict[str, int] = {}
        self.block_param: dict[int, str] = {}
        self.step_where: str | None = None

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def param_for_block(self, n: int) -> str:
        """The parameter of a block length n: `block` for the smallest, multiples of it are
        written as k * block by the caller."""
        if n not in self.block_param:
            name = "block" if not self.block_param else f"block{len(self.block_param)}"
            self.block_param[n] = name
            self.params[name] = n
        return self.block_param[n]

    def build(self) -> dict[str, Any]:
        # file names per rank -> {rank} patterns
        first_names: list[list[str]] = []
        for tr in self.traces:
            seen: list[str] = []
            for c in tr.calls:
                if c.file and c.file not in seen:
                    seen.append(c.file)
            first_names.append(seen)
        rank_names: list[dict[str, str]] = [{} for _ in self.traces]
        if self.ranks > 1 and len({len(n) for n in first_names}) == 1:
            for i in range(len(first_names[0])):
                group = [names[i] for names in first_names]
                pat = _rank_pattern(group, self.ranks)
                if pat and len(set(group)) == self.ranks:
                    for r, name in enumerate(group):
                        rank_names[r][name] = pat
        ops_by_rank = [_ops(tr, self.ranks, rank_names[tr.rank]) for tr in self.traces]
        reads = sum(1 for ops in ops_by_rank for op in ops if op.kind == "read")
        if reads:
            self.note(f"{reads} read calls are not reproduced: skeletons write only")
        steps, where = _find_steps(ops_by_rank)
        self.step_where = where
        for ops in ops_by_rank:
            for op in ops:
                if where == "file":
                    op.file, op.step = _first_number_to_step(op.file)
                elif where == "dataset" and op.dataset is not None:
                    op.dataset, op.step = _first_number_to_step(op.dataset)
        # keep step 0 only (the body), checking that the other steps look the same
        body = [self._step_body(ops, steps, where) for ops in ops_by_rank]
        if steps > 1 and any(b is None for b in body):
            self.note("the steps found in names do not repeat the same calls: unrolled instead")
            flat = Builder(self.prof, self.traces, self.data_dir)
            flat.notes = self.notes
            return flat._build_flat()
        compute = self._compute_gap(ops_by_rank, steps) if steps > 1 else 0.0
        return self._assemble(body, steps, compute)

    def _build_flat(self) -> dict[str, Any]:
        ops_by_rank = [_ops(tr, self.ranks, {}) for tr in self.traces]
        return self._assemble(ops_by_rank, 1, 0.0)

    def _step_body(self, ops: list[Op], steps: int, where: str | None) -> list[Op] | None:
        if steps == 1:
            return ops
        body = [op for op in ops if op.step in (None, 0)]
        shape0 = [self._shape(op) for op in ops if op.step == 0]
        for s in range(1, steps):
            if [self._shape(op) for op in ops if op.step == s] != shape0:
                return None
        if where == "dataset":
            # the file stays open over the steps: its open and close are outside the body
            return body
        return [op for op in body if op.step == 0]

    @staticmethod
    def _shape(op: Op) -> tuple:
        view = json.dumps(op.view, sort_keys=True) if op.view else None
        return (op.kind, op.func, op.file, op.dataset, op.count, op.size, op.offset, op.start, view)

    def _compute_gap(self, ops_by_rank: list[list[Op]], steps: int) -> float:
        gaps = []
        for ops in ops_by_rank:
            for s in range(steps - 1):
                end = max((op.t1 for op in ops if op.step == s), default=None)
                nxt = min((op.t0 for op in ops if op.step == s + 1), default=None)
                if end is not None and nxt is not None:
                    gaps.append(max(nxt - end, 0.0))
        return round(statistics.median(gaps), 6) if gaps else 0.0

    # ------------------------------------------------------------------------- assembly

    def _sessions(self, ops: list[Op]) -> list[tuple[str, str, list[Op]]]:
        """(file pattern, api, calls) per open..close of a file, in the order of opening."""
        out: list[tuple[str, str, list[Op]]] = []
        open_idx: dict[str, int] = {}
        for op in ops:
            if op.kind == "open":
                open_idx[op.file] = len(out)
                out.append((op.file, op.api, []))
            elif op.kind == "write":
                if op.file not in open_idx:  # file opened before the step body
                    open_idx[op.file] = len(out)
                    out.append((op.file, op.api, []))
                session = out[open_idx[op.file]]
                if session[1] == "hdf5" and op.api != "hdf5":
                    # HDF5's own metadata, written inside an HDF5 call the runtime does not
                    # follow (H5Fflush): the skeleton's HDF5 library writes its own
                    self.note(f"{op.file}: {op.func} below HDF5 (its metadata) left out")
                    continue
                session[2].append(op)
            elif op.kind == "close":
                open_idx.pop(op.file, None)
        return out

    def _align(self, sessions: list[list[tuple[str, str, list[Op]]]]) -> list[list[Any]]:
        """Each rank's sessions, so that the i-th of every rank is the same file. Opens that
        write nothing and that only some ranks make (IOR asks a file's size through an open
        of its own on rank 0) are left out when they are what breaks the match."""

        def aligned(ss: list[list[Any]]) -> bool:
            return len({len(s) for s in ss}) == 1 and all(
                len({s[i][0] for s in ss}) == 1 for i in range(len(ss[0]))
            )

        if aligned(sessions):
            return sessions
        written = [[x for x in s if x[2]] for s in sessions]
        if not aligned(written):
            raise FromProfileError(
                "ranks opened different numbers of files; per-rank file sets are not supported"
            )
        left = sorted({x[0] for s in sessions for x in s if not x[2]})
        self.note(f"opens that wrote nothing, made by some ranks only, left out: {', '.join(left)}")
        return written

    def _assemble(self, body: list[list[Op]], steps: int, compute: float) -> dict[str, Any]:
        sessions = self._align([self._sessions(ops) for ops in body])
        files = []
        for i in range(len(sessions[0])):
            per_rank = [s[i] for s in sessions]
            names = {p[0] for p in per_rank}
            if len(names) != 1:
                raise FromProfileError(f"ranks' file #{i} differ in name: {sorted(names)}")
            name, api, _ = per_rank[0]
            if not any(p[2] for p in per_rank):
                self.note(f"{name}: opened but not written: left out")
                continue
            files.append(self._file(name, api, [p[2] for p in per_rank]))
        method = {"name": "native"}
        out: dict[str, Any] = {
            "skel": dmod.FORMAT,
            "name": re.sub(
                r"[^A-Za-z0-9_-]",
                "_",
                os.path.basename(str(self.prof.get("program") or "skeleton")),
            ),
            "ranks": self.ranks,
            "parameters": dict(self.params),
            "steps": steps,
            "compute_s": compute,
            "method": method,
            "files": files,
            "notes": self.notes,
            "source": {
                "program": self.prof.get("program"),
                "argv": self.prof.get("argv"),
                "ranks": self.ranks,
                "io_time_s": self.prof.get("io", {}).get("time_s"),
            },
        }
        return out

    def _layout(self, file_name: str) -> dict[str, Any] | None:
        """The original file's structure from h5dump, when the file can be found."""
        name = file_name.replace("{rank}", "0").replace("{step}", "0")
        for base in [self.data_dir, os.getcwd()]:
            if base is None:
                continue
            path = name if os.path.isabs(name) else os.path.join(base, name)
            if os.path.exists(path):
                try:
                    return h5layout.read(path)
                except h5layout.LayoutError as e:
                    self.note(f"{path}: {e}")
                    return None
        return None

    def _file(self, name: str, api: str, ops_by_rank: list[list[Op]]) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": name, "api": api}
        if api == "hdf5":
            layout = self._layout(name)  # groups; types and chunks of an older trace
            datasets: dict[str, dict[str, Any]] = {}
            for ops in ops_by_rank:
                for op in ops:
                    if op.kind == "write" and op.dataset and op.dataset not in datasets:
                        datasets[op.dataset] = self._dataset(name, op, layout)
            entry["datasets"] = list(datasets.values())
            if layout:
                groups = sorted(
                    {
                        g if self.step_where != "dataset" else _to_step_pattern(g)
                        for g in layout["groups"]
                        if g != "/"
                    }
                    - {None}
                )
                if groups:
                    entry["groups"] = groups
        entry["writes"] = self._writes(name, api, ops_by_rank, entry.get("datasets", []))
        return entry

    def _dataset(self, file: str, op: Op, layout: dict[str, Any] | None) -> dict[str, Any]:
        info = op.dset_info
        real = info["name"]
        d: dict[str, Any] = {"name": op.dataset, "type": None, "dims": list(info["dims"])}
        if "type_class" in info:  # trace schema 4: the dataset as the application made it
            d["type"] = self._type_of(real, info)
            if info.get("chunks"):
                d["chunks"] = list(info["chunks"])
            maxdims = info.get("maxdims")
            if maxdims and maxdims != info["dims"]:
                d["maxdims"] = ["unlimited" if v is None else v for v in maxdims]
            return d
        found = layout["datasets"].get(real) if layout else None
        if found and found["type"]:
            typ = {v[2]: k for k, v in dmod.TYPES.items()}.get(found["type"])
            if typ is None:
                self.note(
                    f"{real}: type {found['type']} is not supported here: "
                    "the type is chosen by its size"
                )
            d["type"] = typ
            if found["chunks"]:
                d["chunks"] = found["chunks"]
            if found["maxdims"] and found["maxdims"] != found["dims"]:
                d["maxdims"] = ["unlimited" if v is None else v for v in found["maxdims"]]
        if d["type"] is None:
            size = int(info["type_size"])
            d["type"] = {4: "float32", 8: "float64", 1: "uint8", 2: "uint16"}.get(size, "uint8")
            if found is None:
                self.note(
                    f"{file}: the application's file was not found (give --data-dir) and the "
                    f"trace (schema {self.traces[0].version}) has no types or chunks: "
                    f"{real}: element size {size}, class assumed {d['type']}, contiguous"
                )
        return d

    def _type_of(self, real: str, info: dict[str, Any]) -> str:
        """The descriptor's type of a traced dataset type (class, size, sign); a type skeletons
        cannot write becomes an unsigned integer of its size, said in a note."""
        cls, size = info.get("type_class"), int(info["type_size"])
        if cls == "float" and size in (4, 8):
            typ = f"float{8 * size}"
        elif cls == "integer" and size in (1, 2, 4, 8):
            typ = f"{'int' if info.get('type_signed') else 'uint'}{8 * size}"
        else:
            typ = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}.get(size, "uint8")
            self.note(
                f"{real}: a {cls or 'unknown'} type of {size} bytes: skeletons write numbers, "
                f"written as {typ}" + ("" if size in (1, 2, 4, 8) else " (another size)")
            )
            return typ
        if info.get("type_order") == "BE":
            self.note(f"{real}: big-endian {typ} in the application: written little-endian")
        return typ

    def _writes(
        self, name: str, api: str, ops_by_rank: list[list[Op]], datasets: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        ops_by_rank = [[op for op in ops if op.kind == "write"] for ops in ops_by_rank]
        for ops in ops_by_rank:
            for op in ops:
                if op.func in VIEW_WRITES and not (op.view and op.view.get("blocks") is not None):
                    self.note(
                        f"{name}: {op.func} through a file view whose layout is not in the "
                        "trace (an older trace, or a filetype it could not flatten): each "
                        "rank's data of the call is written as one block, ranks in order from "
                        "the lowest offset"
                    )
                if op.offset is None and api != "hdf5":
                    self.note(
                        f"{name}: {op.func} has no offset in the trace (shared file "
                        "pointer, stdio): written at the rank's running position"
                    )
        aligned = _align(ops_by_rank)
        if aligned is None:
            self.note(
                f"{name}: ranks made different sequences of writes; written per rank "
                "(runs at this rank count only)"
            )
            groups = [[(r, op)] for r, ops in enumerate(ops_by_rank) for op in ops]
        else:
            groups = [[(r, ops_by_rank[r][i]) for r, i in group] for group in aligned]
        dims_of = {d["name"]: (d, list(d["dims"])) for d in datasets}
        writes = [self._write(group, api, dims_of) for group in groups]
        return _compress(writes)

    def _write(self, group: list[tuple[int, Op]], api: str, dims_of: dict) -> dict[str, Any]:
        ranks = [r for r, _ in group]
        ops = [op for _, op in group]
        w: dict[str, Any] = {}
        if api == "hdf5":
            w["dataset"] = ops[0].dataset
        if ranks != list(range(self.ranks)):
            w["when"] = (
                " or ".join(f"rank == {r}" for r in ranks)
                if len(ranks) > 1
                else (f"rank == {ranks[0]}")
            )
        if api == "hdf5":
            w.update(self._selection(ranks, ops, dims_of.get(ops[0].dataset)))
        else:
            offsets = [op.offset or 0 for op in ops]
            sizes = [op.size for op in ops]
            views = [op.view if op.view and op.view.get("blocks") is not None else None
                     for op in ops]  # fmt: skip
            memory = [op.memory for op in ops]
            per_rank = any(m != memory[0] for m in memory)  # layouts differ: one entry per rank
            if ops[0].func in VIEW_WRITES and all(views):
                w.update(_view_write(ranks, views, sizes, per_rank))  # type: ignore[arg-type]
                _memory(w, ranks, memory)
                w["transfer"] = "collective" if ops[0].collective else "independent"
                return w
            if ops[0].func in VIEW_WRITES:  # layout unknown: blocks in rank order, no overlap
                base = min(offsets)
                offsets = [base + sum(sizes[:i]) for i in range(len(sizes))]
            fit = _affine(offsets, ranks)
            if len(set(sizes)) == 1 and fit and not per_rank:
                w["offset"] = _lin(*fit)
                w["size"] = sizes[0]
            else:
                w["by_rank"] = {
                    r: {"offset": o, "size": s}
                    for r, o, s in zip(ranks, offsets, sizes, strict=True)
                }
            _memory(w, ranks, memory)
        w["transfer"] = "collective" if ops[0].collective else "independent"
        return w

    def _selection(self, ranks: list[int], ops: list[Op], dims_pair: tuple | None) -> dict:
        entry, orig = dims_pair if dims_pair else (None, None)
        dims = entry["dims"] if entry else None
        counts = [op.count for op in ops]
        starts = [op.start for op in ops]
        if any(c is None for c in counts) or any(s is None for s in starts):
            self.note(f"{ops[0].dataset}: a write without a selection box in the trace")
            return {"start": [0], "count": [0]}
        if any(c != counts[0] for c in counts):
            return {
                "by_rank": {
                    r: {"start": s, "count": c}
                    for r, s, c in zip(ranks, starts, counts, strict=True)
                }
            }
        count: list[Any] = list(counts[0])
        start: list[Any] = []
        for k in range(len(count)):
            fit = _affine([s[k] for s in starts], ranks)
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
                and len(ranks) == self.ranks > 1
                and a == 0
                and b == n
                and orig[k] == n * self.ranks
            )
            if block:
                p = self._block_expr(n)
                count[k] = p
                start.append(f"rank * {p}" if " " not in p else f"rank * ({p})")
                dims[k] = f"{p} * size" if " " not in p else f"({p}) * size"
                maxdims = entry.get("maxdims")
                if maxdims and maxdims[k] == orig[k]:  # a fixed dimension grows with it
                    maxdims[k] = dims[k]
            else:
                start.append(_lin(a, b))
        return {"start": start, "count": count}

    def _block_expr(self, n: int) -> str:
        for m, name in self.block_param.items():
            if n % m == 0 and n != m:
                return f"{n // m} * {name}"
            if m % n == 0 and m != n:
                break
        return self.param_for_block(n)


def _memory(w: dict[str, Any], ranks: list[int], memory: list[list[int] | None]) -> None:
    """The pieces of the ranks' noncontiguous memory datatypes, beside the write or its ranks."""
    if not any(memory):
        return
    if "by_rank" in w:
        for r, m in zip(ranks, memory, strict=True):
            if m:
                w["by_rank"][r]["memory"] = m
    else:
        w["memory"] = memory[0]


def _view_write(
    ranks: list[int], views: list[dict[str, Any]], sizes: list[int], per_rank: bool = False
) -> dict:
    """A write through a file view: `offset` the view's displacement, `size` the call's bytes,
    `view` the filetype (lb, extent, blocks). Values that follow a + b * rank across the ranks
    become expressions; otherwise one entry per rank."""
    fields = [[v["disp"], size, v["lb"], v["extent"]] for v, size in zip(views, sizes, strict=True)]
    blocks = [v["blocks"] for v in views]
    fits = [_affine([f[k] for f in fields], ranks) for k in range(4)]
    same_shape = len({len(b) for b in blocks}) == 1
    pairs = []
    if same_shape:
        for i in range(len(blocks[0])):
            off = _affine([b[i][0] for b in blocks], ranks)
            length = _affine([b[i][1] for b in blocks], ranks)
            pairs.append((off, length))
    if all(fits) and same_shape and all(o and n for o, n in pairs) and not per_rank:
        disp, size, lb, extent = (_lin(*f) for f in fits)  # type: ignore[misc]
        return {"offset": disp, "size": size,
                "view": {"lb": lb, "extent": extent,
                         "blocks": [[_lin(*o), _lin(*n)] for o, n in pairs]}}  # type: ignore[misc]  # fmt: skip
    return {
        "by_rank": {
            r: {"offset": f[0], "size": f[1],
                "view": {"lb": f[2], "extent": f[3], "blocks": [list(x) for x in b]}}
            for r, f, b in zip(ranks, fields, blocks, strict=True)
        }
    }  # fmt: skip


def _to_step_pattern(group: str) -> str | None:
    pat, value = _first_number_to_step(group)
    if value is None:
        return group
    return pat if value == 0 else None


def _align(ops_by_rank: list[list[Op]]) -> list[list[tuple[int, int]]] | None:
    """Groups of (rank, index) of the same write across ranks, in call order, or None.
    Identical sequences align one to one; rank 0 may make extra writes (a header) or miss
    some that all others make."""
    keys = [[(op.func, op.dataset, op.collective) for op in ops] for ops in ops_by_rank]
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


def _compress(writes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of writes that differ only by a constant step of their start (or offset) become one
    write with `repeat` and `stride`."""
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
            w = dict(w, repeat=j - i, stride=stride)
        out.append(w)
        i = j
    return out


def _difference(a: dict[str, Any], b: dict[str, Any]) -> Any:
    keys = set(a) | set(b)
    if "by_rank" in keys or "repeat" in keys:
        return None
    if any(a.get(k) != b.get(k) for k in keys - {"start", "offset"}):
        return None
    if "offset" in a:
        da, db = _split_lin(a["offset"]), _split_lin(b["offset"])
        if da is None or db is None or da[1] != db[1]:
            return None
        return db[0] - da[0]
    stride = []
    for x, y in zip(a["start"], b["start"], strict=True):
        sx, sy = _split_lin(x), _split_lin(y)
        if sx is None or sy is None or sx[1] != sy[1]:
            return None
        stride.append(sy[0] - sx[0])
    return stride


def _split_lin(v: Any) -> tuple[int, str] | None:
    """(constant, rest) of `a`, `a + rank * b`, `rank * p`; None for other forms."""
    if isinstance(v, int):
        return v, ""
    m = re.fullmatch(r"(-?\d+) \+ (.*)", str(v))
    if m:
        return int(m.group(1)), m.group(2)
    return 0, str(v)


def from_profile(profile_path: str, data_dir: str | None = None) -> dict[str, Any]:
    prof, traces = load_traces(profile_path)
    return Builder(prof, traces, data_dir).build()


def to_yaml(desc: dict[str, Any], profile_path: str) -> str:
    import yaml

    head = (
        f"# Skeleton descriptor derived by `iotune skel from-profile` from {profile_path}.\n"
        "# Format: docs/skel.md. `notes` lists what the trace could not say.\n"
    )

    class _Dumper(yaml.SafeDumper):
        pass

    def _flow_list(dumper: yaml.SafeDumper, data: list) -> Any:
        flow = all(not isinstance(x, dict | list) for x in data)
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    _Dumper.add_representer(list, _flow_list)
    return head + yaml.dump(desc, Dumper=_Dumper, sort_keys=False, width=100)
