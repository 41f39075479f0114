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

The parts: trace_calls (reading the trace), ops (per-rank operations, aligning ranks), steps,
decomposition (fitting rank expressions), dataset_types; this module assembles the descriptor
and writes it as YAML.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import statistics
from dataclasses import dataclass, replace
from typing import Any

from iotune.skel import attrs, h5layout
from iotune.skel import decomposition as dec
from iotune.skel import descriptor as dmod
from iotune.skel import steps as stepmod
from iotune.skel import views as vw
from iotune.skel.dataset_types import dataset_entry, type_of
from iotune.skel.ops import (
    ATTRIBUTE_CALLS,
    SCALE_FUNCS,
    SCALE_LOOKUPS,
    Op,
    align,
    ops_of,
    rank_pattern,
    running_offsets,
)
from iotune.skel.trace_calls import DIRECT, VIEW_WRITES, FromProfileError, Trace, load_traces

SCALE_KINDS = tuple(SCALE_FUNCS.values())  # dimension scale calls (ops.py)
# the calls each rank replays in order: data, extents, file sizes, lookups, scales, attributes
_REPLAYED = (
    "write", "read", "extend", "setsize", "seekshared", "lookup", "attr", "ldelete", *SCALE_KINDS
)  # fmt: skip
SCALE_ATTRIBUTES = {"DIMENSION_LIST", "REFERENCE_LIST"}  # object references H5DS makes
# the calls that change a file, kept in its session whatever the file (_sessions)
_HDF5_ONLY = ("dopen", "lookup", "attr", "gcreate", "ldelete")  # calls of an HDF5 file's own
_CHANGES = ("write", "create", "sync", "extend", "setsize", "gcreate", "ldelete", *SCALE_KINDS)

__all__ = ["FromProfileError", "from_profile", "load_traces", "to_yaml"]


# a write's gap to the next call below this is not kept: the skeleton's own work between two
# calls (its selection, its loop) takes some microseconds
MIN_GAP_S = 20e-6
H5F_ACC_RDWR = 0x0001  # HDF5's flag of a file opened read-write (H5Fpublic.h)


@dataclass
class Session:
    """A rank's open..close of a file: its calls, the opening call and its flags."""

    file: str
    api: str
    ops: list[Op]
    opener: str  # "" when the file was opened before the step body
    mode: int | None  # the opening call's flags as traced
    removed: bool = False  # the application removed the file after this session
    stepwise: bool = False  # opened at every step, in the steps' calls (ops.Op.stepwise)
    lead: bool = False  # opened before the steps' calls (ops.Op.lead)
    first_only: bool = False  # opened and closed before the steps' calls: at the first step
    file_format: list[int] | None = None  # H5Fcreate's format (trace_calls.Call.format)


class InputMissing(ValueError):
    """The trace lacks what a skeleton needs to make an input the application read."""


class Builder:
    """The descriptor of one profile: files in opening order, their datasets and writes, steps
    and the compute time between them, and notes of what could not be inferred."""

    def __init__(self, prof: dict[str, Any], traces: list[Trace], data_dir: str | None):
        self.prof, self.traces, self.ranks = prof, traces, len(traces)
        self.data_dir = data_dir
        self.notes: list[str] = []
        self.read_only: list[str] = []  # files only read, not written, no input (build)
        # files the application read through HDF5 or MPI-IO and did not write: its inputs, made
        # by the skeleton before its steps (_input_entry); names as traced and as patterns
        self.inputs: set[str] = set()
        self.blocks = dec.Blocks()
        self.step_where: str | None = None
        self.gaps: dict[int, float] = {}  # id(op) -> seconds to the rank's next call (_gaps)
        self.data_files: set[str] = set()
        # file name -> (object, name) of the attributes its traced calls make (_assemble)
        self.called: dict[str, set[tuple[str | None, str]]] = {}
        # file name -> the groups its traced H5Gcreate calls make, in any session (_assemble)
        self.groups_made: dict[str, set[str]] = {}

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _rank_names(self) -> list[dict[str, str]]:
        """Per rank, its file names -> their {rank} pattern (a file of each rank's own)."""
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
                pat = rank_pattern(group, self.ranks)
                if pat and len(set(group)) == self.ranks:
                    for r, name in enumerate(group):
                        rank_names[r][name] = pat
        return rank_names

    def build(self) -> dict[str, Any]:
        rank_names = self._rank_names()
        ops_by_rank = [ops_of(tr, self.ranks, rank_names[tr.rank]) for tr in self.traces]
        for ops in ops_by_rank:
            running_offsets(ops)
        data_files = {
            op.file for ops in ops_by_rank for op in ops if op.kind in ("write", "create")
        }
        read = {op.file for ops in ops_by_rank for op in ops if op.kind == "read"} - data_files
        # an input: read through HDF5 or MPI-IO (an interpreter's own files, a script, an input
        # deck are read through POSIX only: left out)
        self.inputs = {op.file for ops in ops_by_rank for op in ops
                       if op.kind == "read" and op.api in ("hdf5", "mpiio")} & read  # fmt: skip
        self.data_files = data_files | self.inputs  # reads of other files are left out
        others = sorted(read - self.inputs)
        self.read_only = others
        if others:
            self.note(
                "reads of files the application did not write, read through POSIX only (an "
                f"input deck, a script), are not reproduced: {', '.join(others[:10])}"
            )
        steps, where = stepmod.find_steps(ops_by_rank)
        self.step_where = where
        for ops in ops_by_rank:
            for op in ops:
                if where == "file":
                    if op.file not in self.data_files:  # an interpreter's own, whatever its
                        continue  # path's digits (/work/ci1/.venv/pyvenv.cfg is no step 1)
                    was_input = op.file in self.inputs
                    op.file, op.step = stepmod.first_number_to_step(op.file)
                    if was_input:  # an input per step: in_{step}.h5
                        self.inputs.add(op.file)
                        self.data_files.add(op.file)
                    if op.dataset is not None:  # a group per step inside a file per step
                        pat, value = stepmod.first_number_to_step(op.dataset)
                        if value is not None and value == op.step:
                            op.dataset = pat
                elif where == "dataset" and op.dataset is not None:
                    op.dataset, op.step = stepmod.first_number_to_step(op.dataset)
                if op.scale is not None:  # a scale of the step's own, as its dataset
                    pat, value = stepmod.first_number_to_step(op.scale)
                    if value is not None and value == op.step:
                        op.scale = pat
                if op.attr_on is not None:  # an attribute on an object of the step's own
                    pat, value = stepmod.first_number_to_step(op.attr_on)
                    if where == "dataset" and op.step is None and value is not None:
                        op.step = value
                    if value is not None and value == op.step:
                        op.attr_on = pat
        # keep step 0 only (the body), checking that the other steps look the same
        body = [stepmod.step_body(ops, steps, where, data_files) for ops in ops_by_rank]
        if steps > 1 and any(b is None for b in body):
            self.note("the steps found in names do not repeat the same calls: unrolled instead")
            flat = Builder(self.prof, self.traces, self.data_dir)
            flat.notes, flat.data_files = self.notes, self.data_files
            flat.inputs, flat.read_only = self.inputs, self.read_only
            return flat._build_flat()
        compute = stepmod.compute_gap(ops_by_rank, steps) if steps > 1 else 0.0
        return self._assemble(body, steps, compute)

    def _build_flat(self) -> dict[str, Any]:
        """The calls unrolled (steps: 1), each rank's own files still as {rank} patterns (they
        were dropped here: every rank of the skeleton wrote one name)."""
        rank_names = self._rank_names()
        ops_by_rank = [ops_of(tr, self.ranks, rank_names[tr.rank]) for tr in self.traces]
        for ops in ops_by_rank:
            running_offsets(ops)
        return self._assemble(ops_by_rank, 1, 0.0)

    # ------------------------------------------------------------------------- assembly

    def _sessions(self, ops: list[Op]) -> list[Session]:
        """The rank's open..close of each file, in the order of opening, with the calls made
        on it; the reads of the application's data files are calls too."""
        out: list[Session] = []
        open_idx: dict[str, int] = {}
        for op in ops:
            if op.kind == "open":
                open_idx[op.file] = len(out)
                out.append(Session(op.file, op.api, [], op.func, op.mode,
                                   file_format=op.file_format, stepwise=op.stepwise,
                                   lead=op.lead))  # fmt: skip
            elif op.kind in _CHANGES or (
                op.kind in ("read", "dopen", "lookup", "attr", "seekshared")
                and op.file in self.data_files
            ):
                if op.file not in open_idx:  # file opened before the step body
                    open_idx[op.file] = len(out)
                    out.append(Session(op.file, op.api, [], "", None))
                session = out[open_idx[op.file]]
                if session.api == "hdf5" and op.api != "hdf5" and op.kind == "read":
                    continue  # H5Dread's own reads below HDF5: the skeleton's H5Dread makes them
                if session.api == "hdf5" and op.api != "hdf5" and op.kind == "write":
                    # HDF5's own metadata, written inside an HDF5 call the runtime does not
                    # follow (H5Fflush): the skeleton's HDF5 library writes its own
                    self.note(f"{op.file}: {op.func} below HDF5 (its metadata) left out")
                    continue
                if op.kind in _HDF5_ONLY and session.api != "hdf5":
                    continue
                if op.kind in ("setsize", "seekshared") and session.api == "hdf5":
                    continue  # HDF5's own (its file's end): the skeleton's HDF5 sets its own
                session.ops.append(op)
            elif op.kind == "close":
                at = open_idx.pop(op.file, None)
                if at is not None and op.once and out[at].lead:  # made before the steps
                    out[at].first_only = True
            elif op.kind == "delete":  # the file's last session is removed after its close
                last = [x for x in out if x.file == op.file]
                if last:
                    last[-1].removed = True
        return out

    def _align(self, sessions: list[list[Session]]) -> list[list[Session | None]]:
        """The ranks' sessions as slots: the i-th slot holds each rank's session of the same
        file (None for a rank that did not open it). Ranks that opened the same files in the
        same order match one to one; otherwise a file opened by some ranks only (a file made
        on a sub-communicator, IOR's size query on rank 0) gets a slot of its own, matched by
        name, opening call and whether the session did anything."""
        names = [[x.file for x in s] for s in sessions]
        if all(n == names[0] for n in names):
            return [list(slot) for slot in zip(*sessions, strict=True)]

        def key(x: Session) -> tuple[str, str, bool]:
            return (x.file, x.opener, bool(x.ops))

        slots: list[list[Session | None]] = [
            [x] + [None] * (len(sessions) - 1) for x in sessions[0]
        ]
        for r in range(1, len(sessions)):
            ref = [key(next(x for x in slot if x is not None)) for slot in slots]
            mine = [key(x) for x in sessions[r]]
            merged: list[list[Session | None]] = []
            sm = difflib.SequenceMatcher(a=ref, b=mine, autojunk=False)
            for tag, i1, i2, j1, j2 in sm.get_opcodes():
                if tag == "equal":
                    for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                        slots[i][r] = sessions[r][j]
                        merged.append(slots[i])
                    continue
                merged.extend(slots[i1:i2])  # delete, or the first half of a replace
                for j in range(j1, j2):  # insert, or the second half of a replace
                    slot: list[Session | None] = [None] * len(sessions)
                    slot[r] = sessions[r][j]
                    merged.append(slot)
            slots = merged
        # one file that some ranks wrote and the others only opened (a header rank 0 writes)
        # split into slots of disjoint ranks side by side: one session, opened together
        out: list[list[Session | None]] = []
        for slot in slots:
            prev = out[-1] if out else None
            mine = next(x for x in slot if x is not None)
            if prev is not None and all(
                a is None or b is None for a, b in zip(prev, slot, strict=True)
            ):
                theirs = next(x for x in prev if x is not None)
                if (theirs.file, theirs.opener) == (mine.file, mine.opener):
                    out[-1] = [a if a is not None else b for a, b in zip(prev, slot, strict=True)]
                    continue
            out.append(slot)
        return out

    def _assemble(self, body: list[list[Op]], steps: int, compute: float) -> dict[str, Any]:
        slots = self._align([self._sessions(ops) for ops in body])
        # per file name: the attributes its traced calls make in any of its sessions (the
        # application's file, read for the attributes the calls do not make, is the last
        # session's: one made after the file was opened again is no first session's)
        self.called, self.groups_made = {}, {}
        for slot in slots:
            for x in slot:
                if x is not None:
                    self.called.setdefault(x.file, set()).update(_called([x.ops]))
                    self.groups_made.setdefault(x.file, set()).update(_groups_made([x.ops]))
        files: list[dict[str, Any]] = []
        partial_empty: list[str] = []
        # input name -> its entries (open: existing) and their calls per rank
        inputs: dict[str, list[tuple[dict[str, Any], list[list[Op]]]]] = {}
        for slot in slots:
            present = [x for x in slot if x is not None]
            ranks = [r for r, x in enumerate(slot) if x is not None]
            name, api, opener = present[0].file, present[0].api, present[0].opener
            # opened again (not created anew, as H5Fcreate does): the file an entry wrote
            existing = opener not in ("H5Fcreate", "creat") and any(
                f["name"] == name for f in files
            )
            existing = existing or name in self.inputs  # made by an input entry before
            if not any(x.ops for x in present):
                # an HDF5 file created, or one an entry wrote opened again, moves bytes
                # without a dataset (its superblock and root group); a raw file does not
                if api != "hdf5" or not (opener == "H5Fcreate" or existing):
                    if len(ranks) < self.ranks:
                        partial_empty.append(name)
                    else:
                        self.note(
                            f"{name}: opened but neither written nor given a dataset: left out"
                        )
                    continue
            ops_by_rank = [x.ops if x is not None else [] for x in slot]
            entry = self._file(name, api, ops_by_rank, existing)
            if len(ranks) < self.ranks:  # opened by these ranks only, on a communicator of theirs
                entry = {"name": entry.pop("name"), "api": entry.pop("api"),
                         "when": " or ".join(f"rank == {r}" for r in ranks), **entry}  # fmt: skip
            writes_only_read = all(
                w.get("read")
                or w.get("open")
                or "lookup_scales" in w
                or w.get("attribute") in attrs.LOOKS
                for w in entry.get("writes", [])
            )
            if (
                existing
                and api == "hdf5"
                and writes_only_read
                and any(x.mode is not None and x.mode & H5F_ACC_RDWR for x in present)
            ):
                # as the application opened it (HDF5 then writes at close)
                at = list(entry).index("open") + 1
                entry = dict([*list(entry.items())[:at], ("readwrite", True),
                              *list(entry.items())[at:]])  # fmt: skip
            fmt = _format_entry(present[0].file_format)
            if fmt and existing:  # opened: only its format bounds say something
                fmt = {k: v for k, v in fmt.items() if k == "libver"} or None
            if api == "hdf5" and fmt:  # the format the application created the file in
                at = list(entry).index("api") + 1
                entry = dict([*list(entry.items())[:at], ("format", fmt),
                              *list(entry.items())[at:]])  # fmt: skip
            if any(x.removed for x in present):
                entry["remove"] = True  # the application removed it (unlink, MPI_File_delete)
            if (
                steps > 1
                and any(x.stepwise for x in present)
                and not dmod.has_placeholder(name, "step")
            ):
                # opened and closed at every step (a log, an HDF5 file opened again at every
                # step): so in the skeleton (it opened such a file once around its steps: the
                # application's opens and closes became one)
                at = list(entry).index("api") + 1
                entry = dict([*list(entry.items())[:at], ("each_step", True),
                              *list(entry.items())[at:]])  # fmt: skip
            elif steps > 1 and all(x.first_only for x in present):
                # opened and closed before the steps (a file created, then opened at every
                # step): at the first step only (it was made anew at every step, truncating
                # what the steps before wrote)
                at = list(entry).index("api") + 1
                entry = dict([*list(entry.items())[:at], ("once", True),
                              *list(entry.items())[at:]])  # fmt: skip
            if name in self.inputs:
                inputs.setdefault(name, []).append((entry, ops_by_rank))
            files.append(entry)
        for name, parts in inputs.items():  # each input made before its first entry
            at = next(i for i, f in enumerate(files) if f["name"] == name)
            files.insert(at, self._input_entry(name, parts))
        if partial_empty:
            self.note(
                "opens that wrote nothing, made by some ranks only, left out: "
                + ", ".join(sorted(set(partial_empty)))
            )
        method = {"name": "native"}
        out: dict[str, Any] = {
            "skel": dmod.FORMAT,
            "name": re.sub(
                r"[^A-Za-z0-9_-]",
                "_",
                os.path.basename(str(self.prof.get("program") or "skeleton")),
            ),
            "ranks": self.ranks,
            "parameters": dict(self.blocks.params),
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

    def _input_entry(
        self, name: str, parts: list[tuple[dict[str, Any], list[list[Op]]]]
    ) -> dict[str, Any]:
        """The entry making an input the application read (and did not write) before the
        steps: its datasets as the entries reading it have them (the trace's: extent, type,
        chunks, ...; exists dropped), each written whole, split along its first dimension
        between the ranks, and the attributes the application opened; or, for a raw file,
        bytes up to the end of its furthest read. InputMissing when the trace lacks that."""
        first = parts[0][0]
        entry: dict[str, Any] = {"name": name, "api": first["api"], "input": True}
        for key in ("format", "serial"):
            if key in first:
                entry[key] = first[key]
        own = dmod.has_placeholder(name, "rank") or bool(first.get("serial"))  # one rank's
        ops = [op for _, by_rank in parts for rank_ops in by_rank for op in rank_ops]
        if first["api"] != "hdf5":
            return self._raw_input(entry, [rank_ops for _, by_rank in parts
                                           for rank_ops in by_rank], own)  # fmt: skip
        unnamed = sum(1 for op in ops if op.kind == "read" and not op.dataset)
        if unnamed:
            raise InputMissing(
                f"{name} (an input it read): the trace does not name the dataset of "
                f"{unnamed} of its H5Dread calls, so its layout is unknown"
            )
        datasets: dict[str, dict[str, Any]] = {}
        for e, _ in parts:
            for d in e.get("datasets", []):
                datasets.setdefault(d["name"], copy.deepcopy(  # its own lists: no YAML alias
                    {k: v for k, v in d.items() if k != "exists"}))  # fmt: skip
        writes: list[dict[str, Any]] = []
        for d in datasets.values():
            dims = d["dims"]
            if own or not dims:
                w = {"dataset": d["name"], "start": [0] * len(dims), "count": list(dims),
                     "transfer": "independent"}  # fmt: skip
                if not own:
                    w["when"] = "rank == 0"  # a scalar: one rank writes it
            else:
                d0 = f"({dims[0]})" if isinstance(dims[0], str) else str(dims[0])
                per = f"(({d0} + size - 1) / size)"
                start = f"min(rank * {per}, {d0})"
                w = {"dataset": d["name"], "start": [start] + [0] * (len(dims) - 1),
                     "count": [f"min({per}, {d0} - {start})", *dims[1:]],
                     "transfer": "collective"}  # fmt: skip
            writes.append(w)
        groups: set[str] = set()
        made: set[tuple[str, str]] = set()
        for op in ops:  # the attributes it opened (to read them) exist in the input
            if op.kind != "attr" or op.func != "H5Aopen" or (op.attr_on, op.attr["name"]) in made:
                continue
            made.add((op.attr_on, op.attr["name"]))
            if op.attr.get("space") is None or op.attr.get("type_size") is None:
                raise InputMissing(
                    f"{name} (an input it read): the trace has no type or extent of the "
                    f"attribute {op.attr['name']!r} of {op.attr_on} it opened"
                )
            create = self._attribute_call([replace(op, func="H5Acreate")], None)
            writes += [create, {"attribute": "write", "object": op.attr_on,
                                "name": op.attr["name"]}]  # fmt: skip
            if op.attr_on not in datasets and op.attr_on != "/":
                groups.add(op.attr_on)
        entry["datasets"] = list(datasets.values())
        if groups:
            entry["groups"] = sorted(groups)
        if any(dmod.has_placeholder(n, "step") for n in datasets):  # made for every step:
            for w in writes:  # the objects of no step's own once
                on = w.get("dataset", w.get("object"))
                if not dmod.has_placeholder(on, "step"):
                    w["once"] = True
        entry["writes"] = writes
        return entry

    def _raw_input(self, entry: dict[str, Any], ops_by_rank: list[list[Op]], own: bool) -> dict:
        """A raw input (MPI-IO): bytes 0 up to the end of the furthest read, split between the
        ranks (a file of each rank's own: the furthest of any rank, by each rank)."""
        name = entry["name"]
        reads = [op for ops in ops_by_rank for op in ops if op.kind == "read"]
        untold = [op for op in reads if op.offset is None or op.shared or op.view is not None]
        if untold:
            how = "the shared file pointer" if untold[0].shared else "a file view"
            raise InputMissing(
                f"{name} (an input it read): the trace has no file offsets of its reads "
                f"through {how} ({len(untold)} {untold[0].func} calls), so the input's size is "
                "unknown"
            )
        end = max((op.offset + op.size for op in reads), default=0)
        if own:
            w: dict[str, Any] = {"offset": 0, "size": end, "transfer": "independent"}
        else:
            per = f"(({end} + size - 1) / size)"
            start = f"min(rank * {per}, {end})"
            w = {"offset": start, "size": f"min({per}, {end} - {start})",
                 "transfer": "collective"}  # fmt: skip
        entry["writes"] = [w] if end else []
        return entry

    def _layout(self, file_name: str) -> dict[str, Any] | None:
        """The original file's structure from h5dump, when the file can be found."""
        name = dmod.format_name(file_name)
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

    def _file(
        self, name: str, api: str, ops_by_rank: list[list[Op]], existing: bool = False
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": name, "api": api}
        if existing:
            entry["open"] = "existing"
        if api == "hdf5" and self._serial(name):
            entry["serial"] = True
        if api == "hdf5":
            layout = self._layout(name)  # groups; types and chunks of an older trace
            datasets: dict[str, dict[str, Any]] = {}
            created = {op.dataset for ops in ops_by_rank for op in ops if op.kind == "create"}
            for ops in ops_by_rank:  # written or only created: the file's structure is kept
                for op in ops:
                    if (
                        op.kind
                        in ("write", "create", "read", "extend", "dopen", "lookup", *SCALE_KINDS)
                        and op.dataset
                        and op.dataset not in datasets
                    ):
                        datasets[op.dataset] = dataset_entry(
                            name, op, layout, self.traces[0].version, self.note,
                            parallel=not entry.get("serial"),
                        )  # fmt: skip
                        if existing and op.dataset not in created:
                            datasets[op.dataset]["exists"] = True
            entry["datasets"] = list(datasets.values())
            if layout is None and any(
                d.get("chunks") or isinstance(d["type"], dict) for d in datasets.values()
            ):
                self.note(
                    f"{name}: the application's file was not found (give --data-dir): filters "
                    "(deflate, shuffle, ...) and compound members are not in the trace and are "
                    "not reproduced"
                )
            # the objects the application's attribute calls are on that are no dataset: groups
            carriers = {op.attr_on for ops in ops_by_rank for op in ops if op.kind == "attr"}
            carriers -= set(datasets) | {"/", None}
            # the groups the application made in this session (H5Gcreate, traced); those of
            # the application's file no session's traced calls make (an older trace, the
            # parents of a path made at once), at the file's creation
            made = _groups_made(ops_by_rank)
            if not existing and (layout or carriers):  # an existing file's were made before
                groups = {
                    g if self.step_where is None else stepmod.to_step_pattern(g)
                    for g in (layout or {}).get("groups", [])
                    if g != "/"
                }
                groups -= self.groups_made.get(name, set())
                made |= (groups | carriers) - {None}  # type: ignore[operator]
            if made:
                entry["groups"] = sorted(made)
            if layout and not existing:
                # made by the attribute calls (the trace), in this entry or in a later session
                # of the file (opened again, "r+"): not again at this entry's step's end
                made = self.called.get(name, set()) | _called(ops_by_rank)
                attributes = self._attributes(name, layout, ops_by_rank, made)
                if attributes:
                    entry["attributes"] = attributes
        syncs = [sum(1 for op in ops if op.kind == "sync" and not _flush(op, api))
                 for ops in ops_by_rank]  # fmt: skip
        if any(syncs):
            entry["sync"] = True
            funcs = sorted({op.func for ops in ops_by_rank for op in ops
                            if op.kind == "sync" and not _flush(op, api)})  # fmt: skip
            self.note(
                f"{name}: {'/'.join(funcs)} called {max(syncs)} time(s) per step on a rank: "
                "the skeleton flushes the file to storage once, after each step's writes"
            )
        entry["writes"] = self._writes(name, api, ops_by_rank, entry.get("datasets", []))
        return entry

    def _serial(self, pattern: str) -> bool:
        """Did the application write this file through a serial HDF5 driver (the profile's
        hdf5_driver: sec2, core, ...), each file by one rank? The skeleton then does too:
        with MPI-IO, HDF5 allocates chunks early and the file differs (h5dump, POSIX bytes)."""
        if self.ranks > 1 and not dmod.has_placeholder(pattern, "rank"):
            return False
        parts = re.split(r"(\{(?:step|rank)(?::0\d+)?\})", pattern)
        regex = re.compile(
            "".join(r"\d+" if p.startswith("{") else re.escape(p) for p in parts if p)
        )
        drivers = {
            f.get("hdf5_driver")
            for f in self.prof.get("files") or []
            if isinstance(f, dict) and isinstance(f.get("name"), str)
            and regex.fullmatch(f["name"]) and f.get("hdf5_driver")
        }  # fmt: skip
        return bool(drivers) and "mpio" not in drivers

    def _attributes(
        self, name: str, layout: dict[str, Any], ops_by_rank: list[list[Op]], made: set
    ) -> list[dict[str, Any]]:
        """The attributes of the application's file, on the paths the descriptor uses: a
        dataset's as its entry names it, a group's with a step number as {step}; those on
        another step's objects are the step's own (the body's are kept); those the traced
        attribute calls make ((object, name) in made) are left to them."""
        datasets = {  # the real path of each dataset of the body -> its name in the descriptor
            op.dset_info["name"]: op.dataset
            for ops in ops_by_rank
            for op in ops
            if op.kind in ("write", "create") and op.dataset and op.dset_info
        }
        out, seen, skipped = [], set(), set()
        for found in layout.get("attributes", []):
            on = found["on"]
            if on in datasets:
                on = datasets[on]
            elif on in layout["datasets"]:
                continue  # a dataset of another step
            elif self.step_where is not None:
                on = stepmod.to_step_pattern(on)
                if on is None:
                    continue
            if (on, found["name"]) in made:
                continue
            entry = attrs.from_layout(dict(found, on=on), dmod.TYPES)
            if entry is None:
                skipped.add(found["name"])
                continue
            if (on, found["name"]) not in seen:
                seen.add((on, found["name"]))
                out.append(entry)
        if any(op.kind in ("attach", "detach") for ops in ops_by_rank for op in ops):
            skipped -= SCALE_ATTRIBUTES  # the skeleton's H5DS calls make them
        if skipped:
            self.note(
                f"{name}: attributes of a type a skeleton does not write (compound, array, "
                f"reference, enum, null dataspace) left out: {', '.join(sorted(skipped)[:20])}"
            )
        return out

    def _writes(
        self, name: str, api: str, ops_by_rank: list[list[Op]], datasets: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        for ops in ops_by_rank:
            self.gaps.update(_gaps(ops, api))
        # creates and opens of datasets made in their place where the skeleton's making at
        # first use would differ (_placed), decided for the file: on every rank the same
        placed = {(op.kind, op.dataset) for ops in ops_by_rank for i, op in enumerate(ops)
                  if op.kind in ("create", "dopen") and _placed(ops, i, api)}  # fmt: skip
        ops_by_rank = [[op for op in ops if op.kind in _REPLAYED or _flush(op, api)
                        or (op.kind, op.dataset) in placed] for ops in ops_by_rank]  # fmt: skip
        ops_by_rank = [self._opens_capped(name, ops) for ops in ops_by_rank]
        ops_by_rank = self._attributes_made(name, ops_by_rank)
        for ops in ops_by_rank:
            for op in ops:
                if op.func in VIEW_WRITES and vw.layout(op.view) is None and not op.viewless:
                    self.note(
                        f"{name}: {op.func} through a file view whose layout is not in the "
                        "trace (an older trace, or a filetype it could not flatten): each "
                        "rank's data of the call is written as one block, ranks in order from "
                        "the lowest offset"
                    )
                untold = (op.offset is None or op.running) and not op.shared  # stdio
                if untold and api != "hdf5" and op.kind in ("write", "read"):
                    self.note(
                        f"{name}: {op.func} has no offset in the trace (stdio): written at "
                        "the rank's running position"
                    )
        aligned = align(ops_by_rank)
        if aligned is None:
            self.note(
                f"{name}: ranks made different sequences of writes; written per rank "
                "(runs at this rank count only)"
            )
            groups = [[(r, op)] for r, ops in enumerate(ops_by_rank) for op in ops]
        else:
            groups = [[(r, ops_by_rank[r][i]) for r, i in group] for group in aligned]
        # direct chunk transfers of different stored sizes on different ranks: one entry each
        groups = [
            part
            for g in groups
            for part in (
                [[x] for x in g]
                if g[0][1].func in DIRECT and len({op.size for _, op in g}) > 1
                else [g]
            )
        ]
        dims_of = {d["name"]: (d, list(d["dims"])) for d in datasets}
        writes = [self._write(group, api, dims_of) for group in groups]
        for w, group in zip(writes, groups, strict=True):
            if group[0][1].once:  # made once before the steps: at the first step only
                w["once"] = True
        lost = {w[k] for w in writes for k in ("attach_scale", "detach_scale") if k in w} - set(
            dims_of
        )
        if lost:  # a scale the file's entry does not make (not traced there)
            self.note(
                f"{name}: dimension scales of datasets not made here left out: {sorted(lost)}"
            )
            writes = [w for w in writes if w.get("attach_scale", w.get("detach_scale")) not in lost]
        return dec.compress(writes)

    def _write(self, group: list[tuple[int, Op]], api: str, dims_of: dict) -> dict[str, Any]:
        ranks = [r for r, _ in group]
        ops = [op for _, op in group]
        w: dict[str, Any] = {"read": True} if ops[0].kind == "read" else {}
        if api == "hdf5":
            w["dataset"] = ops[0].dataset
        if ranks != list(range(self.ranks)):
            w["when"] = (
                " or ".join(f"rank == {r}" for r in ranks)
                if len(ranks) > 1
                else (f"rank == {ranks[0]}")
            )
        if ops[0].kind == "attr":  # an attribute call, on the object it is on
            return self._attribute_call(ops, w.get("when"))
        if ops[0].kind == "create":  # a dataset made in its place (_placed)
            return {"dataset": ops[0].dataset, "create": True}
        if ops[0].kind == "dopen":  # a dataset opened in its place (_placed)
            return {"dataset": ops[0].dataset, "open": True}
        if ops[0].kind == "sync":  # H5Fflush in its place (_flush): every rank of the file
            return {"flush": True}
        if ops[0].kind == "ldelete":  # H5Ldelete in its place, of the same path
            return {"delete": ops[0].attr_on}  # every rank of the file, as H5Fflush
        if ops[0].kind == "lookup":  # netCDF-4's look at a dataset's scales (reads them)
            w["lookup_scales"] = SCALE_LOOKUPS[ops[0].func]
            if ops[0].func != "H5DSis_scale":
                w["dim"] = ops[0].mode
            return w
        if ops[0].kind in SCALE_KINDS:  # dimension scales: every rank of the file
            w.pop("when", None)
            if ops[0].kind == "scale":
                w["set_scale"] = min(ops[0].size, dmod.MAX_SCALE_NAME)
            else:
                w[f"{ops[0].kind}_scale"], w["dim"] = ops[0].scale, ops[0].mode
            return w
        if ops[0].kind == "extend":  # H5Dset_extent (collective in parallel: one extent)
            extents = [op.count for op in ops if op.count]
            extents = [e for e in extents if len(e) == len(extents[0])]
            if any(e != extents[0] for e in extents):
                self.note(f"{ops[0].dataset}: ranks set different extents: the largest is kept")
            w["extent"] = [max(e[k] for e in extents) for k in range(len(extents[0]))]
            return w
        if ops[0].kind == "setsize":  # MPI_File_set_size, ftruncate: collective, one size
            if len({op.size for op in ops}) > 1:
                self.note(f"{ops[0].file}: ranks set different file sizes: the largest is kept")
            w["set_size"] = max(op.size for op in ops)
            return w
        if ops[0].kind == "seekshared":  # MPI_File_seek_shared: collective, one offset
            if len({op.offset for op in ops}) > 1:
                self.note(f"{ops[0].file}: ranks moved the shared file pointer to different "
                          "offsets: the largest is kept")  # fmt: skip
            # moved by the same bytes at every step in a loop body (records per step)
            return {"seek_shared": _step_moved(max(op.offset or 0 for op in ops),
                                               ops[0].per_step)}  # fmt: skip
        if api == "hdf5":
            w.update(
                dec.selection(
                    ranks, ops, dims_of.get(ops[0].dataset), self.ranks, self.blocks, self.note
                )
            )
            if ops[0].kind == "read" and all(op.fresh for op in ops):
                w["fresh"] = True  # into memory never touched before (a new array)
            if ops[0].func in DIRECT:  # a chunk as stored: its stored size, filters skipped
                w["direct"], w["size"] = True, ops[0].size
                if ops[0].filter_mask:
                    w["filter_mask"] = ops[0].filter_mask
                w["transfer"] = "independent"
                return w
        elif ops[0].shared:  # through the shared file pointer: the same calls, no offset
            w["shared"] = True
            sizes = [op.size for op in ops]
            fit = dec.affine(sizes, ranks)
            memory = [op.memory for op in ops]
            if fit and all(m == memory[0] for m in memory):
                w["size"] = dec.lin(*fit)
            else:
                w["by_rank"] = {r: {"size": s} for r, s in zip(ranks, sizes, strict=True)}
            dec.add_memory(w, ranks, memory)
        else:
            offsets = [op.offset or 0 for op in ops]
            sizes = [op.size for op in ops]
            views = [{**op.view, "blocks": vw.layout(op.view)} if vw.layout(op.view) else None
                     for op in ops]  # fmt: skip
            memory = [op.memory for op in ops]
            per_rank = any(m != memory[0] for m in memory)  # layouts differ: one entry per rank
            if (ops[0].func in VIEW_WRITES or ops[0].view is not None) and all(views):
                w.update(dec.view_write(ranks, views, sizes, per_rank))  # type: ignore[arg-type]
                dec.add_memory(w, ranks, memory)
                w["transfer"] = "collective" if ops[0].collective else "independent"
                return w
            if ops[0].func in VIEW_WRITES and not all(op.viewless for op in ops):
                # layout unknown: blocks in rank order, no overlap (without a view set, the
                # traced offsets are the file's: kept; they were packed in rank order too)
                base = min(offsets)
                offsets = [base + sum(sizes[:i]) for i in range(len(sizes))]
            fit = dec.affine(offsets, ranks)
            # a running offset in a loop body (a log appended to): moved at every step
            moves = [op.per_step for op in ops]
            if len(set(sizes)) == 1 and fit and not per_rank and len(set(moves)) == 1:
                w["offset"] = _step_moved(dec.lin(*fit), moves[0])
                w["size"] = sizes[0]
            else:
                w["by_rank"] = {
                    r: {"offset": _step_moved(o, m), "size": s}
                    for r, o, s, m in zip(ranks, offsets, sizes, moves, strict=True)
                }
            dec.add_memory(w, ranks, memory)
        w["transfer"] = "collective" if ops[0].collective else "independent"
        gap = statistics.median(self.gaps.get(id(op), 0.0) for op in ops)
        # after a call some ranks make alone (a header by rank 0), the time may be a wait of
        # theirs in an MPI call the trace does not show, where the other ranks waited too:
        # spent by those ranks only, it would become the others' time inside their next call
        if gap >= MIN_GAP_S and ranks == list(range(self.ranks)):
            w["gap_s"] = round(gap, 6)
        return w

    def _opens_capped(self, name: str, ops: list[Op]) -> list[Op]:
        """The rank's calls with at most MAX_OPENS dataset opens (those beyond: a note)."""
        opens = [i for i, op in enumerate(ops) if op.kind == "dopen"]
        if len(opens) <= dmod.MAX_OPENS:
            return ops
        self.note(f"{name}: {len(opens)} dataset opens (H5Dopen) on a rank: the skeleton opens "
                  f"the first {dmod.MAX_OPENS} in their place")  # fmt: skip
        dropped = set(opens[dmod.MAX_OPENS :])
        return [op for i, op in enumerate(ops) if i not in dropped]

    def _attributes_made(self, name: str, ops_by_rank: list[list[Op]]) -> list[list[Op]]:
        """The ranks' calls without those on attributes a skeleton cannot make (more elements
        or bytes than a descriptor allows), said in a note."""
        bad = set()
        for ops in ops_by_rank:
            for op in ops:
                if op.kind != "attr" or op.func != "H5Acreate":
                    continue
                n = 1
                for v in op.attr.get("dims") or []:
                    n *= v
                if n > attrs.MAX_ELEMENTS or op.attr["type_size"] > attrs.MAX_STRING:
                    bad.add((op.attr_on, op.attr["name"]))
        if bad:
            self.note(f"{name}: attributes larger than a skeleton makes left out: "
                      + ", ".join(f"{on} {a}" for on, a in sorted(bad)[:10]))  # fmt: skip
        return [[op for op in ops if op.kind != "attr" or
                 (op.attr_on, op.attr["name"]) not in bad] for ops in ops_by_rank]  # fmt: skip

    def _attribute_call(self, ops: list[Op], when: Any) -> dict[str, Any]:
        """`{attribute: CALL, object, name, ...}`: a lookup (read, open, exists, iterate) by the
        ranks that made it; the others by every rank of the file (they change metadata)."""
        op, call = ops[0], ATTRIBUTE_CALLS[ops[0].func]
        a = op.attr or {}
        out: dict[str, Any] = {"attribute": call, "object": op.attr_on}
        if call != "iterate":
            out["name"] = a["name"]
        if call == "rename":
            out["to"] = op.attr_to
        if call in attrs.LOOKS and when is not None:
            out["when"] = when
        if call == "write" and max(o.size for o in ops) and self._variable(a):
            out["size"] = min(max(o.size for o in ops), attrs.MAX_STRING)
        if call != "create":
            return out
        out["type"] = self._attribute_type(a, f"{op.attr_on} attribute {a['name']}")
        if a.get("space") == "simple":
            out["dims"] = list(a["dims"])
        elif a.get("space") == "null":
            out["empty"] = True
        return out

    @staticmethod
    def _variable(a: dict[str, Any]) -> bool:
        """Is this attribute's a variable-length string type?"""
        string = a.get("string")
        return isinstance(string, dict) and string.get("variable") is True

    def _attribute_type(self, a: dict[str, Any], what: str) -> Any:
        """The descriptor's type of a traced attribute: a number type, a string of its size,
        padding and character set, else opaque bytes of the same size (said in a note)."""
        string, size = a.get("string"), a["type_size"]
        if a.get("type_class") == "string" and isinstance(string, dict):
            pad, cset = string.get("pad"), string.get("cset")
            if pad in attrs.PADS and cset in attrs.CSETS and (self._variable(a) or size >= 1):
                return {"string": "variable" if self._variable(a) else size, "pad": pad,
                        "cset": cset}  # fmt: skip
        typ = type_of(what, a, None, self.note)
        if isinstance(typ, dict):  # opaque: the descriptor's bounds
            typ = {"opaque": min(max(int(typ.get("opaque") or 1), 1), attrs.MAX_STRING)}
        return typ


ORDERS = {1: "tracked", 3: "indexed"}  # H5P_CRT_ORDER_TRACKED, | H5P_CRT_ORDER_INDEXED


def _format_entry(f: list[int] | None) -> dict[str, Any] | None:
    """A created file's `format` entry (what differs from HDF5's defaults): `libver` [low, high]
    when the low bound is not the earliest, `track_times: false`, `link_order` and
    `attr_order` (tracked, indexed) of its root group."""
    if not f:
        return None
    out: dict[str, Any] = {}
    names = dmod.LIBVERS
    if f[0] != 0 and f[0] < len(names) and f[1] < len(names):
        out["libver"] = [names[f[0]], names[f[1]]]
    if f[2] == 0:
        out["track_times"] = False
    for key, flags in (("link_order", f[3]), ("attr_order", f[4])):
        if flags in ORDERS:
            out[key] = ORDERS[flags]
    return out or None


def _called(ops_by_rank: list[list[Op]]) -> set[tuple[str | None, str]]:
    """(object, name) of the attributes the ranks' attribute calls create (or rename to)."""
    return {
        (op.attr_on, op.attr_to if op.func == "H5Arename" else op.attr["name"])
        for ops in ops_by_rank
        for op in ops
        if op.kind == "attr" and op.func in ("H5Acreate", "H5Arename")
    }


def _groups_made(ops_by_rank: list[list[Op]]) -> set[str]:
    """The paths of the groups the ranks' traced H5Gcreate calls make."""
    return {op.attr_on for ops in ops_by_rank for op in ops
            if op.kind == "gcreate" and op.attr_on and op.attr_on != "/"}  # fmt: skip


def _step_moved(offset: str | int, moved: int) -> str | int:
    """offset + step * moved (a running offset that moves by `moved` bytes per step)."""
    if not moved:
        return offset
    term = f"step * {moved}"
    return term if offset == 0 else f"{offset} + {term}"


def _flush(op: Op, api: str) -> bool:
    """Is op an H5Fflush of an HDF5 file (made in its place: each rewrites the file's dirty
    metadata; netCDF-4 flushes at every nc_enddef)?"""
    return op.kind == "sync" and op.func == "H5Fflush" and api == "hdf5"


def _gaps(ops: list[Op], api: str) -> dict[int, float]:
    """{id(op): seconds from its end to the start of the rank's next call on the file at the
    file's own layer} for the data writes and reads of one rank's session (not after the last:
    the close's gap is not reproduced). The calls below it (MPI-IO's POSIX writes) are inside
    their caller, not after it."""
    own = [op for op in ops if op.api == api]
    return {id(op): max(nxt.t0 - op.t1, 0.0) for op, nxt in zip(own, own[1:], strict=False)
            if op.kind in ("write", "read")}  # fmt: skip


def _names(op: Op, dataset: str) -> bool:
    """Does op use the dataset (a transfer, extent, lookup or scale call on it, an attribute
    call on it)?"""
    return dataset in (op.dataset, op.scale) or (op.kind == "attr" and op.attr_on == dataset)


def _placed(ops: list[Op], i: int, api: str) -> bool:
    """Is ops[i] a dataset's creation or open (H5Dopen) the skeleton must make in its place?
    The skeleton creates a dataset, or opens one that exists, at its first use: that is the
    application's place when the next call replayed after it uses the dataset. Otherwise
    (datasets created together and then written, attribute calls between), and for every open
    of a dataset opened more than once, or opened after its creation, the call is kept."""
    op = ops[i]
    if op.kind not in ("create", "dopen") or not op.dataset:
        return False
    if op.kind == "dopen":
        mine = [o for o in ops if o.kind in ("create", "dopen") and o.dataset == op.dataset]
        if len(mine) > 1 or mine[0].kind == "create":
            return True
    for o in ops[i + 1 :]:
        if o.kind in _REPLAYED or o.kind in ("create", "dopen") or _flush(o, api):
            return not _names(o, op.dataset)
    return False  # nothing replayed after it: the skeleton makes it at the end, as here


def from_profile(profile_path: str, data_dir: str | None = None) -> dict[str, Any]:
    prof, traces = load_traces(profile_path)
    builder = Builder(prof, traces, data_dir)
    try:
        desc = builder.build()
    except InputMissing as e:
        raise FromProfileError(
            f"{profile_path}: no skeleton can be made of this program's I/O: {e} "
            "(docs/skel.md, Inputs)"
        ) from None
    if not desc["files"]:  # a descriptor needs a file: say why there is none, not its parse
        read = builder.read_only
        what = (
            f"it only read files it did not write through POSIX ({', '.join(read[:3])}"
            f"{', ...' if len(read) > 3 else ''}), and a skeleton makes and reads only the "
            "inputs read through HDF5 or MPI-IO"
            if read
            else "it wrote no file"
        )
        raise FromProfileError(
            f"{profile_path}: no skeleton can be made of this program's I/O: {what} "
            "(docs/skel.md, Reads)"
        )
    return desc


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
