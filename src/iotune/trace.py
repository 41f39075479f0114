"""The one reader of the runtime's traces (`IOTUNE_TRACE`, docs/profile.md, "Trace mode").

`read_all(path)` reads a trace file: a host's (schema 5, `host-I.json.gz`: every rank of one
host, what they repeat stored once; iotune.trace_host expands it exactly) or one rank's,
schema 4 or 3 (`rank-N.json.gz`, runs merged per layer and file, gzip-compressed columns) or
schema 2 (`rank-N.json`), and returns one trace per rank, the same logical content for all
(`read(path)`: a file of one rank's trace):

- the header keys (`schema`, `version`, `session`, `rank`, `ranks`, `start`, `truncated`,
  `dropped_calls`, `limits`; from a host's file also `host` and `host_index`);
- `datasets`: as written (schema 4 adds `maxdims`, `chunks`, `type_class`, `type_signed`,
  `type_order`; older schemas lack them);
- `views`: the MPI-IO file views set (schema 4; `[]` before): `disp`, `etype_size`, the
  filetype's `size`, `lb`, `extent`, `true_extent` (since 2026-11-28: from its first to its
  last byte, beyond `size` when it has holes) and `blocks` (`[offset, length]` in bytes, or
  None; then perhaps `runs`, `[offset, length, count, stride]`, for a filetype of too many
  blocks);
- `memory`: the memory layouts of MPI-IO transfers from noncontiguous datatypes (schema 4;
  `[]` before);
- `attributes`: the HDF5 attributes the attribute calls name (`object`, `name`, and for
  creations and opens `space`, `dims`, the type's fields and `string`; `[]` before);
- `signatures`: one dict per signature (`layer`, `func`, `file` (a name or None), `dataset`,
  `dims`, `size`, `step`, `mode`), as in schema 2, `view` (the view an
  `MPI_File_set_view` set, or None), `memory` (an MPI-IO transfer's memory layout when its
  datatype is not contiguous: `size` and the `pieces`' lengths; else None), `attribute` (an
  attribute call's entry of `attributes`, its `dataset` then None; else None), `renamed`
  (`H5Arename`'s new name's entry) and `format` (`H5Fcreate`'s and `H5Fopen`'s: [format bound
  low, high, times tracked, link creation order, attribute creation order], else None);
- `runs` (schema 3; for schema 2 each event is a run of stride 1): `Run` tuples, in the order
  of their first call;
- `events`: `[signature, count, start_s, busy_s, span_s]`, consecutive calls of one signature
  in the rank's call order, as schema 2 wrote them. From schema 3 they are rebuilt from the runs:
  signatures, counts and order are exact; a run's first start, summed busy time and last end are
  exact (to the tick); the start of a call inside a run is within the trace's `tolerance_s` of
  `start + k * period`, and its busy time is the run's mean.

`load(profile_path)` reads the traces beside a profile, one per rank, in rank order;
`by_rank(profile_path)` says which file holds each rank's.
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from iotune import trace_host, trace_schema
from iotune.inputs import MAX_BYTES, InputError, parse_json, read_input

SCHEMA = "iotune-trace"
VERSIONS = (2, 3, 4, 5)
# HDF5 attribute calls: their signature's dataset column indexes the trace's attributes; so
# does a group creation's (H5Gcreate: the group's path, no name; absent from older traces) and a
# link deletion's (H5Ldelete, also for H5Gunlink and H5Ldelete_by_idx: the path deleted, no name)
ATTRIBUTE_FUNCS = frozenset(
    ("H5Acreate", "H5Aopen", "H5Awrite", "H5Aread", "H5Aexists", "H5Aiterate", "H5Arename",
     "H5Adelete", "H5Gcreate", "H5Ldelete")
)  # fmt: skip
# the most bytes a trace's gzip data may expand to (read at each call: tests lower it)
# the stand-in path of a dataset made without a name (H5Dcreate_anon) or in a group made without
# one (H5Gcreate_anon), until an H5Olink call names it (_named; docs/profile.md)
ANONYMOUS = re.compile(r"\(anonymous( group)? [0-9]+\)(/.*)?", re.S)
MAX_EXPANDED = MAX_BYTES
# consecutive-call blocks rebuilt from a trace's runs: beyond this the trace is refused rather
# than expanded without end (a run interleaved call by call with another costs one per call)
MAX_BLOCKS = 20_000_000


class TraceError(InputError):
    """A file that is not a trace this reader knows (an InputError: one message naming the
    file, printed by the CLI without a traceback)."""


class Run(NamedTuple):
    """count calls of one signature in one stream (layer and file): call k is the rank's call
    number seq + k * stride and started at start + k * period (seconds on the job's clock);
    busy is their summed time, span from the first start to the last end."""

    sig: int
    count: int
    seq: int
    stride: int
    start: float
    period: float
    busy: float
    span: float


def rank_path(profile_path: str | os.PathLike[str], rank: int) -> str:
    """The trace of a rank beside a profile: schema 3 and 4's name, else schema 2's if it exists."""
    base = os.path.join(f"{os.fspath(profile_path)}.trace", f"rank-{rank}.json")
    return base if os.path.exists(base) and not os.path.exists(base + ".gz") else base + ".gz"


def files(profile_path: str | os.PathLike[str]) -> list[str]:
    """The trace files beside a profile: hosts' (host-I.json.gz) first, then ranks' files
    (directories of those names left out)."""
    d = f"{os.fspath(profile_path)}.trace"
    try:
        names = os.listdir(d)
    except OSError:
        return []

    def number(name: str, prefix: str) -> int | None:
        stem = name[len(prefix) :].removesuffix(".gz").removesuffix(".json")
        ok = name.startswith(prefix) and stem.isdigit() and stem.isascii()
        return int(stem) if ok and name.endswith((".json", ".json.gz")) else None

    hosts = sorted((n, x) for x in names if (n := number(x, "host-")) is not None and
                   x.endswith(".gz"))  # fmt: skip
    ranks = sorted((n, x) for x in names if (n := number(x, "rank-")) is not None)
    paths = [os.path.join(d, x) for _, x in hosts + ranks]
    return [p for p in paths if not os.path.isdir(p)]


def by_rank(profile_path: str | os.PathLike[str]) -> dict[int, tuple[str, dict[str, Any]]]:
    """Each rank's trace beside a profile and the file it is in: a host's file when one holds
    it, else the rank's own file (schema 4's rank-N.json.gz, else schema 2's rank-N.json).
    TraceError on a file that cannot be read."""
    out: dict[int, tuple[str, dict[str, Any]]] = {}
    for path in files(profile_path):
        base = os.path.basename(path)
        rank = None
        if base.startswith("rank-"):
            rank = int(base[5:].split(".")[0])
            if rank in out or path != rank_path(profile_path, rank):
                continue  # in a host's file, or schema 2's beside schema 4's
        for t in read_all(path):
            # a rank's own file that does not say its rank (the header is optional): its name's
            r = t.get("rank", rank)
            if r is None:
                raise TraceError(f"{path}: a trace without its rank")
            out.setdefault(r, (path, t))
    return out


def load(profile_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every rank's trace beside a profile, by rank (the ranks found from rank 0 on)."""
    found = by_rank(profile_path)
    out = []
    while len(out) in found:
        out.append(found[len(out)][1])
    return out


def read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """One rank's trace: a file of schema 2, 3 or 4, or a host's file (schema 5) holding one
    rank; TraceError otherwise (read_all reads a host's file of several ranks)."""
    traces = read_all(path)
    if len(traces) != 1:
        raise TraceError(f"{os.fspath(path)}: a host's trace file of {len(traces)} ranks, "
                         "not one rank's")  # fmt: skip
    return traces[0]


def read_all(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every rank's trace in one file (schema 2 to 5), in the logical form the module docstring
    describes. Read as every file from outside is (iotune.inputs: never blocks, bounded) and its
    shape checked (trace_schema, trace_host) before it is rebuilt; TraceError naming the file
    otherwise."""
    path = os.fspath(path)
    try:
        # gzip data as a stream, bounded (iotune.inputs.inflate: a bomb is refused as the
        # bound is passed, never expanded into memory first)
        raw = read_input(path, "trace", starts=b"{[", max_expanded=MAX_EXPANDED)
        doc = parse_json(raw, path, "trace")
        del raw
    except InputError as e:
        raise TraceError(str(e)) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise TraceError(f"{path}: not a trace of schema {SCHEMA}")
    version = doc.get("version")
    if isinstance(version, bool) or version not in VERSIONS:
        raise TraceError(f"{path}: trace version {version!r} (this reader: 2 to 5)")
    if version != 5:
        return [_rebuild(doc, path, [MAX_BLOCKS])]
    try:
        members = trace_host.expand(doc)
    except trace_host.HostError as e:
        raise TraceError(f"{path}: not a usable trace: {e}") from None
    budget = [MAX_BLOCKS]  # for the whole file: members may share one large shape
    return [_rebuild(m, path, budget, f"rank {m['rank']}: ") for m in members]


def _rebuild(doc: dict[str, Any], path: str, budget: list[int], who: str = "") -> dict[str, Any]:
    """One rank's trace checked and rebuilt; budget[0]: the blocks of calls left to rebuild."""
    wrong = trace_schema.problem(doc)
    if wrong:
        raise TraceError(f"{path}: not a usable trace: {who}{wrong}")
    doc["views"] = doc.get("views") or []
    doc["memory"] = doc.get("memory") or []
    doc["attributes"] = doc.get("attributes") or []
    if doc["version"] == 2:
        doc["signatures"] = doc.get("signatures") or []
        doc["events"] = doc.get("events") or []
        for s in doc["signatures"]:
            s.setdefault("view", None)
            s.setdefault("memory", None)
            s.setdefault("attribute", None)
            s.setdefault("renamed", None)
            s.setdefault("format", None)
        doc["runs"] = [
            Run(
                e[0],
                e[1],
                0,
                1,
                e[2],
                0.0 if e[1] < 2 else (e[4] - e[3] / e[1]) / (e[1] - 1),
                e[3],
                e[4],
            )  # fmt: skip
            for e in doc["events"]
        ]
        return doc
    doc["signatures"] = _signatures(doc)
    _named(doc)
    doc["runs"] = _runs(doc)
    try:
        doc["events"] = [list(e) for e in _events(_counted(doc["runs"], budget))]
    except ValueError as e:
        raise TraceError(f"{path}: {who}{e}") from None
    return doc


def _named(doc: dict[str, Any]) -> None:
    """The datasets traced under a stand-in path (ANONYMOUS: made by H5Dcreate_anon, or in a
    group made by H5Gcreate_anon) take the name an H5Olink call gave them (its dataset's; its
    dims: [the stand-in's index]), so that their calls since their creation are on the dataset
    the application linked. One never linked keeps its stand-in. A runtime since the skel5
    branch renames the entry itself (dims: its own index, nothing to do here); an older one
    wrote a copy under the name, which this makes a second entry of the same file and path."""
    datasets = doc.get("datasets") or []
    for s in doc["signatures"]:
        new, dims = s["dataset"], s["dims"]
        if s["func"] != "H5Olink" or new is None or not dims or len(dims) != 1:
            continue
        old = dims[0]
        if not (0 <= old < len(datasets) and 0 <= new < len(datasets)):
            continue
        name = datasets[new].get("name")
        if ANONYMOUS.fullmatch(str(datasets[old].get("name"))) and str(name).startswith("/"):
            datasets[old] = dict(datasets[old], name=name)


def _counted(runs: list[Run], budget: list[int]) -> Iterator[tuple[Run, int, int]]:
    """calls(runs), counted against budget[0], the blocks left for the whole file (ValueError
    when it runs out)."""
    for block in calls(runs):
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError(f"the file's runs interleave into more than {MAX_BLOCKS} blocks "
                             "of calls: too many to rebuild")  # fmt: skip
        yield block


def _signatures(doc: dict[str, Any]) -> list[dict[str, Any]]:
    cols = doc["signatures"]
    files, views, memory = doc.get("files") or [], doc["views"], doc["memory"]
    attributes = doc["attributes"]
    keys = ("layer", "func", "file", "dataset", "dims", "size", "step", "mode")
    out = []
    for row in zip(*(cols[k] for k in keys), strict=True):
        s = dict(zip(keys, row, strict=True))
        s["file"] = files[s["file"]] if s["file"] >= 0 else None
        s["view"] = s["memory"] = s["attribute"] = s["renamed"] = s["format"] = None
        if s["func"] in ("H5Fcreate", "H5Fopen") and s["layer"] == "hdf5":  # dims: its format
            s["format"] = s["dims"] if s["dims"] and len(s["dims"]) == 5 else None
            s["dims"] = None
        elif s["func"] in ATTRIBUTE_FUNCS and s["layer"] == "hdf5":  # an attribute's index
            s["attribute"] = _entry(attributes, s["dataset"])
            if s["func"] == "H5Arename" and s["dims"] and len(s["dims"]) == 1:
                s["renamed"] = _entry(attributes, s["dims"][0])
                s["dims"] = None
            s["dataset"] = -1
        elif s["func"] == "MPI_File_set_view":  # its dataset column is the view's index
            s["view"] = views[s["dataset"]] if 0 <= s["dataset"] < len(views) else None
            s["dataset"] = -1
        elif s["layer"] == "mpiio":  # a transfer's: its memory layout's, when not contiguous
            s["memory"] = memory[s["dataset"]] if 0 <= s["dataset"] < len(memory) else None
            s["dataset"] = -1
        s["dataset"] = s["dataset"] if s["dataset"] >= 0 else None
        out.append(s)
    return out


def _entry(table: list[Any], i: Any) -> Any:
    """table[i] when i indexes it (an attribute as the trace describes it), else None."""
    return table[i] if type(i) is int and 0 <= i < len(table) else None


def _runs(doc: dict[str, Any]) -> list[Run]:
    cols = doc["runs"]
    tick = float(doc["tick_s"])  # times in ticks, the period in thousandths of a tick
    sig = seq = start = 0
    out = []
    for dsig, count, dseq, stride, dstart, period, busy, idle in zip(
        *(cols[k] for k in ("sig", "count", "seq", "stride", "start", "period", "busy", "idle")),
        strict=True,
    ):
        sig, seq, start = sig + dsig, seq + dseq, start + dstart
        out.append(Run(sig, count, seq, stride, start * tick, period * tick / 1000, busy * tick,
                       (busy + idle) * tick))  # fmt: skip
    return out


def calls(runs: list[Run], max_blocks: int | None = None) -> Iterator[tuple[Run, int, int]]:
    """The runs' calls in the rank's call order, as blocks (run, first k, last k) of calls that
    follow one another: a run whose calls nothing else interleaves is one block. ValueError
    after max_blocks blocks (None: no bound)."""
    heap = [(r.seq, i, 0) for i, r in enumerate(runs)]
    heapq.heapify(heap)
    blocks = 0
    while heap:
        blocks += 1
        if max_blocks is not None and blocks > max_blocks:
            raise ValueError(f"the trace's runs interleave into more than {max_blocks} blocks "
                             "of calls: too many to rebuild")  # fmt: skip
        seq, i, k = heapq.heappop(heap)
        r = runs[i]
        if r.stride < 1 and k < r.count - 1:  # read() refuses these (trace_schema) first
            raise ValueError(f"run of signature {r.sig}: stride {r.stride} for {r.count} calls")
        if r.stride == 1 or k == r.count - 1:
            yield r, k, r.count - 1
            continue
        # the calls up to the next run's first call in order belong to this run alone
        last = r.count - 1
        if heap:
            last = min(last, k + max(0, (heap[0][0] - seq - 1) // r.stride))
        yield r, k, last
        if last < r.count - 1:
            heapq.heappush(heap, (seq + (last - k + 1) * r.stride, i, last + 1))


def events(
    runs: list[Run], max_blocks: int | None = None
) -> Iterator[tuple[int, int, float, float, float]]:
    """Schema 2's events from runs: consecutive calls of one signature in call order, as
    (signature, count, start_s, busy_s, span_s)."""
    return _events(calls(runs, max_blocks))


def _events(
    blocks: Iterator[tuple[Run, int, int]],
) -> Iterator[tuple[int, int, float, float, float]]:
    cur: list[Any] | None = None  # [sig, count, start, busy, end]
    for r, k0, k1 in blocks:
        n = k1 - k0 + 1
        start = r.start + k0 * r.period
        busy = r.busy if n == r.count else r.busy * n / r.count
        end = r.start + r.span if k1 == r.count - 1 else r.start + k1 * r.period + r.busy / r.count
        if cur and cur[0] == r.sig:
            cur[1] += n
            cur[3] += busy
            cur[4] = end
            continue
        if cur:
            yield cur[0], cur[1], cur[2], cur[3], cur[4] - cur[2]
        cur = [r.sig, n, start, busy, end]
    if cur:
        yield cur[0], cur[1], cur[2], cur[3], cur[4] - cur[2]
