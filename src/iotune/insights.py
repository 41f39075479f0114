"""Insights: what a run's I/O did, as a small, named, versioned set of values.

SmartIO (Bin Ather et al., SC Workshops '25, Sec. 3.2 and Table 1) turns a run's calls into
"insights" (transfer mode, transfer sizes, shared file or file per process, spatial locality,
file system) that its rules map to settings. This module computes the same insights, and a few
more (dataset layout, fill time, write amplification, metadata share), from an iotune profile
(docs/profile.md) and, when there is one, its trace (schema 2). The rule table
(data/rules.tsv) names them; `iotune advise` and, later, the runtime's adaptive mode evaluate
the table on them, and a knowledge base can use them as a run's motif signature.

Every insight has a stable name, a kind and a meaning, defined once in data/insights.tsv
(versioned; read here as INSIGHTS, and meant for the C runtime too); a value is a number, a
word, or None for "unknown" (e.g. the access pattern without a trace). Rules never fire on an
unknown value. Insights are computed per *file group*: files whose names differ only in their
numbers (iorio.r0.dat, iorio.r1.dat; chk_0001.h5, chk_0002.h5) are one group, the way a
recurring phase or a file per process is one thing to tune. What a trace says of a group's
transfers: trace_insights.py; the datasets' layouts: storage_layout.py.
"""

from __future__ import annotations

import gc
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from operator import itemgetter
from pathlib import Path
from typing import Any

from iotune import storage_layout, trace_insights
from iotune.profile import SIZE_BINS

HDF5_CHUNK_CACHE_DEFAULT = storage_layout.MIB  # H5D_CHUNK_CACHE_NBYTES_DEFAULT
PARALLEL_FS = ("lustre", "gpfs", "beegfs", "pvfs2", "orangefs", "daos", "wekafs", "cephfs",
               "ceph")  # fmt: skip


@dataclass(frozen=True)
class Insight:
    """The definition of one insight: name, kind and meaning."""

    name: str
    kind: str  # count | size | fraction | ratio | seconds | word
    meaning: str
    words: tuple[str, ...] = ()  # the values a word can take


LAYERS = ("hdf5", "mpiio", "posix", "stdio")
KINDS = ("count", "size", "fraction", "ratio", "seconds", "word")


def read_insights(path: str | Path) -> tuple[int, tuple[Insight, ...]]:
    """Reads the insight table (data/insights.tsv): its version and its rows, checked."""
    version = None
    rows: list[Insight] = []
    header = ["name", "kind", "words", "meaning"]
    seen_header = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip("\n")
            m = re.match(r"# INSIGHTS_VERSION (\d+)$", line)
            if m:
                version = int(m.group(1))
            if not line.strip() or line.startswith("#"):
                continue
            cells = line.split("\t")
            if not seen_header:
                if cells != header:
                    raise ValueError(f"{path}:{number}: the header must be {' '.join(header)}")
                seen_header = True
                continue
            if len(cells) != len(header) or cells[1] not in KINDS:
                raise ValueError(f"{path}:{number}: a row is name, kind ({'|'.join(KINDS)}), "
                                 "words, meaning")  # fmt: skip
            words = () if cells[2] == "-" else tuple(cells[2].split("|"))
            rows.append(Insight(cells[0], cells[1], cells[3], words))
    if version is None:
        raise ValueError(f"{path}: no '# INSIGHTS_VERSION N' line")
    names = [i.name for i in rows]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: duplicate insight names")
    return version, tuple(rows)


VERSION, INSIGHTS = read_insights(resources.files("iotune") / "data" / "insights.tsv")
BY_NAME = {i.name: i for i in INSIGHTS}
NAMES = tuple(BY_NAME)
_DIGITS = re.compile(r"\d+")
_LETTER = re.compile("[A-Za-z]")
_GLOB = re.compile(r"[*?[]")
_SMALL_BINS = SIZE_BINS[:5]  # below 1 MiB


@dataclass
class Group:
    """The insights of one file group. values: name -> number, word or None (unknown);
    notes: where an insight came from or why it is unknown, for the report."""

    pattern: str  # a FileName pattern (shell glob on the base name) that names the group
    files: list[str]
    values: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    # the I/O layers (LAYERS) the group's files went through, e.g. ("hdf5", "posix") for a
    # serial HDF5 file (sec2 driver: no MPI-IO); None when the input does not say. A rule
    # about a layer the files do not have does not apply to them (rules.applies)
    layers: tuple[str, ...] | None = None

    def get(self, name: str) -> Any:
        return self.values.get(name)

    def to_json(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "files": self.files, "insights": self.values,
                "notes": self.notes, "layers": self.layers}  # fmt: skip


# ----------------------------------------------------------------------------- grouping


def glob_literal(text: str) -> str:
    """text as a shell glob that matches only itself: each *, ? and [ in brackets ([*]), as
    both fnmatch(3) (the runtime) and Python's fnmatch read it."""
    return _GLOB.sub(lambda m: f"[{m.group()}]", text)


def _starred(text: str) -> str:
    return "*".join(glob_literal(part) for part in _DIGITS.split(text))


def group_pattern(name: str) -> str:
    """The group of a file: its base name with every run of digits made a '*', except in an
    extension that has letters (chk_0001.h5 -> chk_*.h5, iorio.r1.dat -> iorio.r*.dat); the
    rest matches only itself (glob_literal)."""
    base = name.rsplit("/", 1)[-1]
    stem, dot, ext = base.rpartition(".")
    if stem and _LETTER.search(ext):
        return _starred(stem) + dot + glob_literal(ext)
    return _starred(base)


# Beyond this many files whose names share no pattern with another (hashes, words), they are
# grouped by extension: a million one-file groups would be a million findings nobody reads, and
# advise's time and output would grow with them (issue 23: 10^6 such files took 107 s, 1.4 GB).
LONE_NAMES_MAX = 1000


def lone_pattern(name: str) -> str:
    """The group of a file whose name shares no pattern, among too many such: its extension."""
    stem, dot, ext = name.rsplit("/", 1)[-1].rpartition(".")
    return f"*.{glob_literal(ext)}" if stem and _LETTER.search(ext) else "*"


def lone_note(n: int) -> str:
    return (
        f"{n} files whose names share no pattern, grouped by extension "
        f"(more than {LONE_NAMES_MAX} such names)"
    )


def group_files(names: Iterable[str]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """The files' groups by name pattern, and {group: how many lone names it took in}. A
    pattern names a group only when several files share it: a group of one file is named by
    its own base name (glob_literal: out_0001.h5 alone is out_0001.h5, not out_*.h5)."""
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(group_pattern(n), []).append(n)
    lone = [p for p, members in groups.items() if len(set(members)) == 1]
    took: dict[str, int] = {}
    if len(lone) > LONE_NAMES_MAX:
        for p in lone:
            members = groups.pop(p)
            merged = lone_pattern(members[0])
            groups.setdefault(merged, []).extend(members)
            took[merged] = took.get(merged, 0) + 1
    if any(len(set(members)) == 1 for members in groups.values()):
        named: dict[str, list[str]] = {}
        for p, members in groups.items():
            if len(set(members)) == 1:
                took.pop(p, None)  # one file under an extension's pattern: itself
                p = glob_literal(members[0].rsplit("/", 1)[-1])
            named.setdefault(p, []).extend(members)
        groups = named
    return groups, took


# ----------------------------------------------------------------------------- profile


# the counters _counter_insights() reads from a layer's sums (the others are not summed)
_SUMMED = frozenset(("writes", "reads", "bytes_written", "bytes_read", "write_time_s",
                     "read_time_s", "meta_time_s", "collective_writes", "collective_reads",
                     "independent_writes", "independent_reads", "set_views"))  # fmt: skip
_SUMMED_OF: dict[tuple[str, ...], tuple[str, ...]] = {}  # a counters' keys -> those summed


def _summed(keys: tuple[str, ...]) -> tuple[str, ...]:
    known = _SUMMED_OF.get(keys)
    if known is None:
        if len(_SUMMED_OF) > 1024:  # keys that vary from file to file: a damaged profile
            _SUMMED_OF.clear()
        known = _SUMMED_OF[keys] = tuple(k for k in keys if k in _SUMMED)
    return known


def _sum_layers(files: list[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {layer: defaultdict(float) for layer in LAYERS}
    number = (int, float)
    if len(files) == 1:  # a group of one file (as many as files when no two names are alike)
        for layer in LAYERS:
            c = files[0].get(layer)
            if c:
                acc = out[layer]
                for k in _summed(tuple(c)):
                    if isinstance(v := c[k], number):
                        acc[k] += v
        return out
    for layer in LAYERS:  # once per counter of 10^6 files: summed by columns, in C
        acc = out[layer]
        counters = [c for f in files if (c := f.get(layer))]
        if not counters:
            continue
        # the files whose counters have the same keys in the same order (the runtime writes
        # them so): their values summed column by column, in file order as one loop would
        keys = list(map(tuple, counters))
        rows: dict[tuple[str, ...], list[Any]]
        if len(set(keys)) == 1:
            rows = {keys[0]: counters}
        else:
            rows = {}
            for k, c in zip(keys, counters, strict=True):
                row = rows.get(k)
                if row is None:
                    rows[k] = row = []
                row.append(c)
        for names, same in rows.items():
            for k in _summed(names):
                col = list(map(itemgetter(k), same)) if len(same) > 1 else [same[0][k]]
                if _NUMBER_TYPES.issuperset(map(type, col)):
                    acc[k] = sum(col, acc[k])
                else:  # a value of another type: numbers only
                    for v in col:
                        if isinstance(v, number):
                            acc[k] += v
    return out


_NUMBER_TYPES = frozenset((int, float))


def _transfers(layer: str, c: Mapping[str, float]) -> tuple[float, float, float, float]:
    """(writes, reads, collective writes, collective reads) of a layer's counters."""
    if layer == "hdf5":
        return c["writes"], c["reads"], c["collective_writes"], c["collective_reads"]
    if layer == "mpiio":
        w = c["independent_writes"] + c["collective_writes"]
        r = c["independent_reads"] + c["collective_reads"]
        return w, r, c["collective_writes"], c["collective_reads"]
    return c["writes"], c["reads"], 0, 0


def transfer_mode(collective: float, total: float) -> str:
    """collective when at least 90 % of the transfers are (a header written by rank 0 alone
    does not make a collective checkpoint "mixed"), independent when at most 10 %."""
    if not total:
        return "none"
    share = collective / total
    return "collective" if share >= 0.9 else "independent" if share <= 0.1 else "mixed"


def _outermost(c: Mapping[str, Mapping[str, float]]) -> str | None:
    for layer in LAYERS:
        if (
            c[layer]
            and (  # a layer no file has: nothing summed
                sum(_transfers(layer, c[layer])[:2])
                or c[layer]["bytes_written"] + c[layer]["bytes_read"]
            )
        ):
            return layer
    return None


def _hint_values(files: list[Mapping[str, Any]], romio: bool = True) -> dict[str, Any]:
    """The hints in force read back; romio=False (Open MPI's OMPIO, which echoes every key it is
    given and reads none of ROMIO's own): ROMIO's hints are unknown, so that no rule proposes
    them (a rule never fires on an unknown insight)."""
    hints = next((f["hints"] for f in files if f.get("hints")), None)
    if not hints:
        return {}
    out: dict[str, Any] = {}
    for key in ("cb_buffer_size", "striping_factor"):
        try:
            out[f"hint_{key}"] = int(hints[key])
        except (KeyError, ValueError):
            pass
    for key in ("romio_cb_write", "romio_cb_read", "romio_ds_write", "romio_ds_read",
                "cb_config_list"):  # fmt: skip
        if key in hints and (romio or not key.startswith("romio_")):
            out[f"hint_{key}"] = str(hints[key])
    return out


def mpiio_component(library: Any) -> tuple[str | None, str]:
    """(romio | ompio | None, where it comes from) of a profile's mpi_library: the component
    the runtime saw in force (romio for the MPICH family, Open MPI's romio321 or ompio)."""
    io = (library or {}).get("io_component") if isinstance(library, Mapping) else None
    if not isinstance(io, str) or not io:
        return None, "unknown: the profile does not record the MPI-IO component"
    word = "ompio" if io == "ompio" else "romio" if io.startswith("romio") else None
    if word is None:
        return None, f"unknown: MPI-IO component {io!r}"
    why = (library or {}).get("io_component_from") or "the profile"
    return word, f"{io}, from the profile's mpi_library ({why})"


def _chunk_cache(files: list[Mapping[str, Any]], config: Mapping[str, Any]) -> int:
    for f in files:
        v = ((f.get("applied") or {}).get("hdf5") or {}).get("chunk_cache_bytes")
        if v is not None:
            return int(v)
    for s in config.get("settings") or []:
        if s.get("name") == "chunk_cache_bytes":
            return int(s["value"])
    return HDF5_CHUNK_CACHE_DEFAULT


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _counter_insights(
    files: list[Mapping[str, Any]], ranks: int, layers: list[str] | None = None
) -> dict[str, Any]:
    """The insights of a group's counters; layers, when given, gets the layers the files went
    through (the runtime writes a layer's counters only for a file that used it)."""
    c = _sum_layers(files)
    if layers is not None:
        layers.extend(name for name in LAYERS if c[name])
    layer = _outermost(c)
    v: dict[str, Any] = {"ranks": ranks, "files": len(files)}
    # null is "not said" (profile_schema lets it through): one rank, as when it is absent
    v["file_ranks"] = max([int(_or(f.get("ranks"), 1)) for f in files], default=0)
    if ranks <= 1:
        v["file_mode"] = "single"
    elif v["file_ranks"] > 1:
        v["file_mode"] = "shared"
    else:
        v["file_mode"] = "per_process"
    if layer is None:
        v.update(interface=None, transfer_mode="none", writes=0, reads=0, io_mix="none")
        return v
    lc = c[layer]
    w, r, cw, cr = _transfers(layer, lc)
    coll, total = cw + cr, w + r
    v["interface"] = layer
    v["transfer_mode"] = transfer_mode(coll, total)
    v["writes"], v["reads"] = int(w), int(r)
    v["bytes_written"], v["bytes_read"] = int(lc["bytes_written"]), int(lc["bytes_read"])
    if r:
        v["read_size_mean"] = int(lc["bytes_read"] // r)
    moved = lc["bytes_written"] + lc["bytes_read"]
    v["write_fraction"] = lc["bytes_written"] / moved if moved else 0.0
    v["io_mix"] = ("none" if not moved else "write" if not lc["bytes_read"]
                   else "read" if not lc["bytes_written"] else "mixed")  # fmt: skip
    if total:
        v["transfer_size_median"] = int(moved // total)
    below = c["mpiio"] if layer == "hdf5" and c["mpiio"]["bytes_written"] else c["posix"]
    if layer == "hdf5" and lc["bytes_written"] and below["bytes_written"]:
        v["write_amplification"] = below["bytes_written"] / lc["bytes_written"]
        v["write_excess_bytes"] = max(int(below["bytes_written"] - lc["bytes_written"]), 0)
    busy = lc["write_time_s"] + lc["read_time_s"] + lc["meta_time_s"]
    v["meta_fraction"] = lc["meta_time_s"] / busy if busy else 0.0
    v["meta_time_rank_s"] = lc["meta_time_s"] / max(ranks, 1)
    v["file_views"] = int(c["mpiio"]["set_views"])
    # the files' sizes, times and file systems in one pass (a group may have one file of 10^6,
    # or 10^6 files): as max(), sum() and a set over each would say, in file order
    file_bytes = imbalance = wait = None
    rank_s: float = 0
    timed = False
    fs = set()
    for f in files:
        b = int((f.get("posix") or {}).get("last_offset") or 0)
        if file_bytes is None or b > file_bytes:
            file_bytes = b
        t = f.get("time_s") or {}
        x = float(t.get("imbalance", 1.0))
        if imbalance is None or x > imbalance:
            imbalance = x
        if "mean" in t:
            timed = True
            x = float(t.get("max", 0.0)) - float(t["mean"])
            if wait is None or x > wait:
                wait = x
        rank_s += float(t.get("mean", 0.0)) * int(f.get("ranks", 1) or 1)
        if f.get("fs"):
            fs.add(f["fs"])
    v["file_bytes"] = 0 if file_bytes is None else file_bytes
    if timed:  # the mean rank's I/O time on the group's files
        v["io_time_s"] = rank_s / max(ranks, 1)
    v["imbalance"] = 1.0 if imbalance is None else imbalance
    v["imbalance_wait_s"] = 0.0 if wait is None else wait
    if len(fs) == 1:
        v["fs"] = fs.pop()
        v["parallel_fs"] = "yes" if v["fs"] in PARALLEL_FS else "no"
    return v


def from_profile(
    profile: Any,
    traces: Sequence[Mapping[str, Any]] = (),
    layouts: Mapping[str, Mapping[str, storage_layout.Layout] | None] | None = None,
    search_dirs: Sequence[str | Path] = (),
    no_trace: str = "no trace (profile with --trace)",
) -> list[Group]:
    """The insights of each file group of a profile (iotune.profile.Profile or its dict).

    traces: the run's rank traces (trace_insights.load_traces()); without them the access
    pattern, the transfer-size distribution and whether datasets were fully written are
    unknown (no_trace: why, in the notes).
    layouts: file name -> its datasets' layouts (None: unknown); when not given, the HDF5 files
    are looked for (as named, then in search_dirs) and read with h5dump.
    """
    data = profile.data if hasattr(profile, "data") else profile
    ranks = int(data.get("ranks", 1))
    files = [f for f in data.get("files") or [] if f.get("name")]
    from iotune import profile as prof

    if getattr(profile, "files_marked", False) is True:  # classified on loading, once
        files = [f for f in files if not f.get("system")]
    else:
        script = prof.script_of(data.get("argv"))  # once, not once per file
        files = [f for f in files if not _system_file(f, script)]
    romio = (data.get("mpi_library") or {}).get("io_component") != "ompio"
    component, component_note = mpiio_component(data.get("mpi_library"))
    calls = [c for t in traces for c in trace_insights.trace_calls(t)]
    trace_layouts = storage_layout.ByFile(storage_layout.from_traces(traces))
    groups = []
    # each file and call looked up by name once: linear in files and calls, whatever the groups
    files_of: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for f in files:
        files_of[f["name"]].append(f)
    calls_of: dict[str, list[trace_insights.Call]] = defaultdict(list)
    for c in calls:
        calls_of[c.file].append(c)
    dirs: dict[str, bool] = {}  # where HDF5 files were looked for: is each a directory
    config = data.get("config") or {}
    collecting = gc.isenabled()  # the groups hold no cycles: no collection need walk the
    gc.disable()  # 10^6 groups made (the collections cost a tenth of their making)
    try:
        grouped, took = group_files(f["name"] for f in files)
        for pattern, names in grouped.items():
            unique = dict.fromkeys(names)
            fs = [f for n in unique for f in files_of[n]]
            layers: list[str] = []
            g = Group(pattern, names, _counter_insights(fs, ranks, layers), layers=tuple(layers))
            g.values.update(_hint_values(fs, romio))
            if g.values.get("interface") in ("hdf5", "mpiio") and "mpiio" in layers:
                # (a serial HDF5 file, sec2 driver, has no MPI-IO layer and no component)
                g.values["mpiio_component"] = component
                g.notes["mpiio_component"] = component_note
            g.values["chunk_cache_bytes"] = _chunk_cache(fs, config)
            if took.get(pattern):
                g.notes["files"] = lone_note(took[pattern])
            mine = [c for n in unique for c in calls_of.get(n, ())] if calls_of else []
            outer = g.values.get("interface")
            transfers = [
                c for c in mine if trace_insights.is_transfer(c.layer, c.func) and c.layer == outer
            ]
            if transfers:
                g.values.update(trace_insights.transfer_sizes(transfers))
                g.values.update(trace_insights.locality(transfers))
                fw = trace_insights.fully_written(transfers)
                if fw:
                    g.values["fully_written"] = fw
                g.notes["access_pattern"] = "from the trace's offsets and selections"
            else:
                g.values["access_pattern"] = None
                g.notes["access_pattern"] = (
                    f"unknown: {no_trace}" if not traces else "no transfers traced"
                )
                _sizes_from_histogram(g, fs)
            if outer == "hdf5":
                _add_layouts(g, names, mine, trace_layouts, layouts, search_dirs, dirs)
                g.values["element_type"] = trace_insights.element_type(names, transfers, traces)
                if g.values.get("layout") is None:
                    _layout_from_trace_datasets(g, names, traces)
                if g.values.get("layout") is None:
                    _layout_from_counters(g, fs)
            _complete(g.values)
            groups.append(g)
    finally:
        if collecting:
            gc.enable()
    return groups


_UNKNOWN: dict[tuple[str, ...], dict[str, None]] = {}  # the names given -> the others, as None


def _complete(values: dict[str, Any]) -> None:
    """Every insight in values: the ones not given after the others, None, in INSIGHTS' order
    (as a setdefault of each would, without 50 steps per group of 10^6)."""
    given = tuple(values)
    unknown = _UNKNOWN.get(given)
    if unknown is None:
        if len(_UNKNOWN) > 1024:
            _UNKNOWN.clear()
        unknown = _UNKNOWN[given] = dict.fromkeys(n for n in NAMES if n not in values)
    values.update(unknown)


def _system_file(f: Mapping[str, Any], script: Any) -> bool:
    """Is a file one the application did not open for its data (the interpreter's, a library,
    the launcher's, /proc)? The mark iotune.profile gives on loading (data/system_files.tsv),
    or the same table applied here to a profile passed as a plain dict. script: the profile's
    iotune.profile.script_of(argv). (No copy of the file's object: this runs once per file.)"""
    from iotune import profile as prof

    if f.get("system"):
        return True
    if "system" in f or not isinstance(f.get("name"), str):
        return False
    return prof.classify(f["name"], prof.was_written(f), script=script) is not None


def _layout_from_trace_datasets(g: Group, names: Sequence[str],
                                traces: Sequence[Mapping[str, Any]]) -> None:  # fmt: skip
    """The file is gone (the program removed it) and the trace records no layouts, but its
    datasets carry their chunk dimensions, extent and element size: the layout, the largest
    chunk, and, as from a Darshan log, the fill when the bytes beyond the data show one
    (fill_shows). Without chunk dimensions on every dataset nothing is decided here."""
    seen: dict[tuple[str, str], Mapping[str, Any]] = {}
    for t in traces:
        for d in t.get("datasets") or []:
            if d.get("file") in names and isinstance(d.get("name"), str):
                seen.setdefault((d["file"], d["name"]), d)
    if not seen or any("chunks" not in d for d in seen.values()):
        return  # a trace that does not say which datasets are chunked
    layouts, chunked_bytes = [], 0
    for d in seen.values():
        chunk = tuple(int(c) for c in d.get("chunks") or ())
        size = d.get("type_size") if isinstance(d.get("type_size"), int) else None
        kind = "chunked" if chunk else "contiguous"
        layouts.append(storage_layout.Layout(kind, chunk, False, None, size))
        if chunk and size and d.get("dims"):
            chunked_bytes += math.prod(int(x) for x in d["dims"]) * size
    lay = storage_layout.layout_insights(layouts)
    why = g.notes.get("layout", "").removeprefix("unknown: ")
    g.notes["layout"] = "from the trace's datasets (chunk dimensions)" + (
        f", not the file: {why}" if why else "")  # fmt: skip
    if lay["layout"] != "contiguous":
        lay.pop("filters")  # the trace does not record filters
        excess = g.values.get("write_excess_bytes")
        if storage_layout.fill_shows(excess, chunked_bytes):
            lay["fill_time"], lay["filters"] = "filled", "no"
            g.notes["fill_time"] = g.notes["filters"] = (
                f"inferred: {excess} bytes written below HDF5 beyond the data, "
                f"{excess / chunked_bytes:.2f}x the chunked datasets' {chunked_bytes} bytes"
            )
    g.values.update(lay)


def _layout_from_counters(g: Group, files: list[Mapping[str, Any]]) -> None:
    """Without the file or a trace that records layouts, the profile's HDF5 counters still say
    whether the datasets were chunked (hdf5.chunked_datasets counts the creates and opens of
    chunked datasets): none of them, all of them, or some."""
    h5 = [f.get("hdf5") or {} for f in files]
    if any("chunked_datasets" not in c for c in h5):
        return  # a runtime that did not count them
    chunked = sum(int(c.get("chunked_datasets") or 0) for c in h5)
    datasets = sum(int(c.get("dataset_creates") or 0) + int(c.get("dataset_opens") or 0)
                   for c in h5)  # fmt: skip
    if not datasets:
        return
    g.values["layout"] = ("contiguous" if chunked == 0 else "chunked" if chunked >= datasets
                          else "mixed")  # fmt: skip
    if chunked == 0:
        g.values["filters"] = "no"  # filters need chunks
    why = g.notes.get("layout", "").removeprefix("unknown: ")
    g.notes["layout"] = (
        f"from the profile's HDF5 counters ({chunked} of {datasets} dataset creates and opens "
        f"chunked; contiguous stands for not chunked)" + (f", not the file: {why}" if why else "")
    )


def _sizes_from_histogram(g: Group, files: list[Mapping[str, Any]]) -> None:
    """Without a trace, the POSIX histogram bounds the sizes (and says which are small)."""
    if g.get("interface") != "posix":
        return
    hist: dict[str, Any] = defaultdict(int)
    for f in files:
        for k, n in ((f.get("posix") or {}).get("sizes") or {}).items():
            hist[k] += n
    total = sum(hist.values())
    if total:
        small = sum(map(hist.__getitem__, _SMALL_BINS))  # a bin not there counts 0
        w, r = g.get("writes") or 0, g.get("reads") or 0
        # the histogram mixes reads and writes: split the small share by their counts
        g.values["small_writes"] = round(small * w / (w + r)) if w + r else 0
        g.values["small_reads"] = round(small * r / (w + r)) if w + r else 0
        g.values["small_write_fraction"] = small / total if w else 0.0
        g.values["small_read_fraction"] = small / total if r else 0.0
        g.notes["small_writes"] = "from the POSIX size histogram (reads and writes together)"


def _add_layouts(g, names, calls, trace_layouts, layouts, search_dirs, dirs=None) -> None:
    used = {(c.file, c.dataset) for c in calls if c.dataset}
    type_sizes = {(c.file, c.dataset): c.type_size for c in calls if c.dataset}
    found: list[storage_layout.Layout] = []
    source = None
    why: list[str] = []
    for name in names:
        if name in trace_layouts.files:
            found += trace_layouts.files[name]
            source = "the trace"
            continue
        if layouts is not None:
            lays, reason = layouts.get(name), f"{name}: no layouts given"
        else:
            lays, reason = storage_layout.find_and_read(name, search_dirs, dirs)
        if lays is None:
            why.append(reason)
            continue
        source = source or "the HDF5 file (h5dump)"
        n_found = len(found)
        for ds, lay in lays.items():
            if used and (name, ds) not in used:
                continue
            ts = type_sizes.get((name, ds))
            found.append(
                storage_layout.Layout(
                    lay.kind,
                    lay.chunk,
                    lay.filters,
                    lay.fill_time,
                    ts or lay.type_size,
                    lay.fill_value,
                )
            )
        if not lays:  # e.g. only virtual datasets, whose storage is other files'
            why.append(f"{name}: h5dump shows no dataset with a layout it could read")
        elif len(found) == n_found:
            why.append(f"{name}: none of the datasets it holds is one the trace wrote or read")
    if found:
        g.values.update(storage_layout.layout_insights(found))
        g.notes["layout"] = f"from {source}"
    else:
        g.notes["layout"] = "unknown: " + "; ".join(why[:3] or ["no HDF5 file found"])


def describe(name: str) -> str:
    """The meaning of an insight, for docs and reports."""
    return BY_NAME[name].meaning
