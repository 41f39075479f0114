"""Reading a trace-mode profile for `iotune skel from-profile`: each rank's calls in order, with
their file, dataset, selection, offset, view, memory layout and clock (trace.py reads the
schema; this expands its signatures and counts into one Call per call)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iotune import trace as iotrace
from iotune.trace import ANONYMOUS

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
SYNCS = {"fsync", "fdatasync", "MPI_File_sync", "H5Fflush"}
CLOSES = {"H5Fclose", "MPI_File_close", "close", "fclose"}
DELETES = {"unlink", "remove", "MPI_File_delete"}  # a followed file removed
SET_SIZES = {"MPI_File_set_size"}  # a raw file's size set (size: the new size)
SEEKS_SHARED = {"MPI_File_seek_shared"}  # the shared file pointer moved (offset: to where)
# direct chunk transfers (H5Dwrite_chunk, H5Dread_chunk): their mode is the filter mask
DIRECT = {"H5Dwrite_chunk", "H5Dread_chunk"}
# the shared file pointer's transfers: no offset traced (reading the pointer would take
# communication); a skeleton makes the same calls (ops.Op.shared, the descriptor's `shared`)
SHARED_WRITES = {
    "MPI_File_write_shared",
    "MPI_File_write_ordered",
    "MPI_File_iwrite_shared",
    "MPI_File_write_ordered_begin",
}
SHARED = SHARED_WRITES | {
    "MPI_File_read_shared",
    "MPI_File_read_ordered",
    "MPI_File_iread_shared",
    "MPI_File_read_ordered_begin",
}
WRITES = SHARED_WRITES | {
    "H5Dwrite",
    "H5Dwrite_chunk",
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
# explicit-offset writes: through a view that is not contiguous, the offset is in the view
VIEW_AT_WRITES = {
    "MPI_File_write_at",
    "MPI_File_write_at_all",
    "MPI_File_iwrite_at",
    "MPI_File_iwrite_at_all",
    "MPI_File_write_at_all_begin",
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
    filter_mask: int = 0  # a direct chunk transfer's (DIRECT)
    mode: int | None = None  # the signature's mode: an open's flags (H5F_ACC_*, amode, O_*)
    fresh: bool = False  # an H5Dread into memory not yet touched (mode bit 2)
    attribute: dict[str, Any] | None = None  # an attribute call's attribute (the trace's entry)
    renamed: dict[str, Any] | None = None  # H5Arename: the new name's entry
    format: list[int] | None = None  # H5Fcreate: the file's format (iotune.trace, `format`)


@dataclass
class Trace:
    rank: int
    datasets: list[dict[str, Any]]
    calls: list[Call] = field(default_factory=list)
    version: int = 4


def load_traces(profile_path: str) -> tuple[dict[str, Any], list[Trace]]:
    from iotune import inputs

    try:
        prof = inputs.load_json(profile_path, "profile")
    except inputs.InputError as e:
        raise FromProfileError(str(e)) from None
    ranks = prof.get("ranks", 1) if isinstance(prof, dict) else None
    if type(ranks) is not int or not 1 <= ranks <= 1 << 24:
        raise FromProfileError(f"{profile_path}: not an iotune profile (ranks)")
    traces = []
    try:
        found = iotrace.by_rank(profile_path)  # hosts' files (schema 5), or ranks' own
    except iotrace.TraceError as e:
        raise FromProfileError(str(e)) from None
    for r in range(ranks):
        if r not in found:
            # named by its directory: the runtime writes one file per host (host-I.json.gz),
            # which one holds a rank is in the file (rank-N.json.gz only when it could not)
            raise FromProfileError(
                f"{profile_path}.trace: missing: the profile has no trace of rank {r} (none in "
                f"host-*.json.gz, no rank-{r}.json.gz); record one with `iotune profile --trace "
                "-- COMMAND`"
            )
        path, t = found[r]
        if t.get("truncated"):
            raise FromProfileError(
                f"{path}: the trace of rank {r} was truncated at its limit "
                f"({t.get('dropped_calls')} calls dropped); raise "
                "IOTUNE_TRACE_LIMIT and profile again"
            )
        _check_datasets(path, t)
        traces.append(_calls(r, t))
    return prof, traces


def _check_datasets(path: str, t: dict[str, Any]) -> None:
    """What a skeleton needs of the trace's datasets (the trace reader lets an older runtime's
    leave fields out): a path, an extent, an element size, maximum extent and chunks of its
    rank."""
    for i, d in enumerate(t.get("datasets") or []):
        name, dims = d.get("name"), d.get("dims")
        ok = isinstance(name, str) and isinstance(dims, list)
        ok = ok and (name.startswith("/") or ANONYMOUS.fullmatch(name) is not None)
        ok = ok and type(d.get("type_size")) is int and d["type_size"] >= 0
        for key in ("maxdims", "chunks"):
            ok = ok and (d.get(key) is None or len(d[key]) == len(dims))
        if not ok:
            raise FromProfileError(
                f"{path}: datasets[{i}]: a dataset without its path, extent or element size, or "
                "with a maximum extent or chunks of another rank"
            )
    for i, sig in enumerate(t.get("signatures") or []):
        if sig.get("layer") not in API_OF_LAYER:
            raise FromProfileError(f"{path}: signature {i}: unknown layer {sig.get('layer')!r}")


def _calls(rank: int, t: dict[str, Any]) -> Trace:
    out = Trace(rank, t.get("datasets") or [], version=int(t.get("version", 4)))
    last: dict[tuple[str, str], int] = {}
    sigs = t["signatures"]
    for sig_i, count, start, busy, span in t["events"]:
        s = sigs[sig_i]
        func = _func(s["func"])
        each = busy / count if count else 0.0
        # span: from the first start to the last end, so count - 1 gaps between the calls
        gap = (span - busy) / (count - 1) if count > 1 else 0.0
        for k in range(count):
            offset = None
            if s.get("step") is not None and s.get("file") is not None:
                key = (s["file"], s["layer"])
                offset = last.get(key, 0) + int(s["step"])
                last[key] = offset
            t0 = start + (each + gap) * k
            direct = func in DIRECT
            mode = s.get("mode")
            # H5Dread's mode: bit 1 collective, bit 2 its memory untouched before (fresh)
            fresh = func == "H5Dread" and type(mode) is int and mode in (2, 3)
            out.calls.append(
                Call(
                    func,
                    s["layer"],
                    s.get("file") or "",
                    s.get("dataset"),
                    s.get("dims"),
                    int(s.get("size") or 0),
                    offset,
                    (mode & 1 if fresh else mode) == 1 and not direct,
                    t0,
                    t0 + each,
                    s.get("view"),
                    s.get("memory"),
                    mode if direct and type(mode) is int and 0 <= mode < 2**31 else 0,
                    mode if type(mode) is int else None,
                    fresh,
                    _entry(s.get("attribute")),
                    _entry(s.get("renamed")),
                    _format(s.get("format")),
                )
            )
    _named(out)
    return out


def _named(tr: Trace) -> None:
    """A dataset traced under a stand-in path (iotune.trace.ANONYMOUS: made by H5Dcreate_anon,
    or in a group made by H5Gcreate_anon) that no H5Olink named (iotune.trace names the others)
    is named "/(anonymous N)" and `anonymous`: a skeleton makes it without a name too."""
    for i, d in enumerate(tr.datasets):
        if ANONYMOUS.fullmatch(str(d.get("name"))):
            tr.datasets[i] = dict(d, name="/" + d["name"].replace("/", "_"), anonymous=True)


def _func(name: Any) -> str:
    """The call's name, an MPI-4 large-count MPI-IO call's (MPI_File_write_at_all_c, as MPICH 4
    applications call them) as its classic one's: the same transfer for a skeleton."""
    name = str(name)
    if name.startswith("MPI_File_") and name.endswith("_c"):
        return name[:-2]
    return name


def _format(f: Any) -> list[int] | None:
    """H5Fcreate's format: 5 small whole numbers, else None."""
    ok = isinstance(f, list) and len(f) == 5 and all(type(v) is int and 0 <= v < 64 for v in f)
    return f if ok else None


def _entry(a: Any) -> dict[str, Any] | None:
    """An attribute entry of the trace with its object's path and name as text (name None: an
    iteration), else None (the call is then no attribute call a skeleton makes)."""
    if not isinstance(a, dict) or not isinstance(a.get("object"), str):
        return None
    if not a["object"].startswith("/") or not isinstance(a.get("name"), str | None):
        return None
    return a
