"""Insights from a Darshan log (through PyDarshan, the optional `darshan` package).

The same named insights as iotune.insights.from_profile(), from Darshan's per-file counters:
POSIX, MPI-IO, H5F/H5D (Darshan's HDF5 module), LUSTRE, the mount table and, when the log has
them, DXT traces (offsets). What a log does not record stays unknown and is said (LIMITS and
each group's notes): the fill time and filters of HDF5 datasets, the MPI-IO hints in effect,
the layout without the HDF5 module, and the order (offsets) of HDF5 selections.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections import defaultdict
from pathlib import Path
from typing import Any

from iotune import insights, storage_layout, trace_insights
from iotune import profile as prof

LIMITS = (
    "fill time and filters of HDF5 datasets: Darshan's H5D module does not record them (a "
    "fill is inferred when the bytes written below HDF5 hold one more copy of the chunked "
    "datasets)",
    "MPI-IO hints in effect: Darshan counts hints set (MPIIO_HINTS), not their values (when "
    "the application set none and the log shows no Open MPI, ROMIO's defaults are assumed)",
    "the HDF5 chunk cache the application set: the HDF5 default (1 MiB) is assumed",
)
BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M",
        "100M_1G", "1G_PLUS")  # fmt: skip
BIN_TOP = (100, 1 << 10, 10 << 10, 100 << 10, 1 << 20, 4 << 20, 10 << 20, 100 << 20, 1 << 30,
           None)  # fmt: skip
_SMALL_BINS = 5  # the bins below 1 MiB


# the hints ROMIO (MPICH, its derivatives, Open MPI's romio component) uses when an application
# sets none: what is in effect when a log's MPIIO_HINTS counters are all 0
ROMIO_DEFAULTS = {
    "hint_cb_buffer_size": 16 << 20, "hint_romio_cb_write": "automatic",
    "hint_romio_cb_read": "automatic", "hint_romio_ds_write": "automatic",
    "hint_romio_ds_read": "automatic", "hint_cb_config_list": "*:1",
}  # fmt: skip


# what Open MPI leaves among the files a log names (data/system_files.tsv says the same):
# OMPIO's file-locking test beside each data file (<file>.locktest.<rank>) and its shared file
# pointers (sharedfp/sm: <file>_cid-<n>-<n>.sm) in Open MPI's session directory; ROMIO (the
# MPICH family, Open MPI's romio321) creates neither
_OMPIO_FILE = re.compile(r"(\.locktest\.\d+|/ompi\.[^/]+/pid\.\d+/.*_cid-[-\d]+\.sm)$")
_OPENMPI_FILE = re.compile(r"/(ompi|prte)\.[^/]+/")  # Open MPI's (PRRTE's) session directory


def mpi_io_of(names: Any) -> tuple[str | None, str, bool]:
    """(mpiio_component, why, Open MPI seen) from the file names a log records: "ompio" when it
    holds OMPIO's own files; None when it shows Open MPI without them (its component cannot be
    told); "romio" assumed when it shows no Open MPI at all (said so)."""
    openmpi = None
    for name in names:
        if _OMPIO_FILE.search(name):
            return "ompio", f"Open MPI's OMPIO: the log names its file {name}", True
        if openmpi is None and _OPENMPI_FILE.search(name):
            openmpi = name
    if openmpi:
        return None, (f"unknown: Open MPI ran (the log names {openmpi}) but not which MPI-IO "
                      "component"), True  # fmt: skip
    return "romio", ("assumed: ROMIO (the log shows no file of Open MPI's OMPIO; a Darshan "
                     "log does not record the MPI library)"), False  # fmt: skip


class DarshanUnavailable(RuntimeError):
    """PyDarshan is not installed (pip install 'iotune[darshan]')."""


_VERSION = re.compile(rb"\d+\.\d+\0")


def is_darshan_log(path: str | Path) -> bool:
    """A Darshan log: named *.darshan, or a file that starts with a version string ("3.21")."""
    if str(path).endswith(".darshan"):
        return True
    return looks_like_darshan(path)


def looks_like_darshan(path: str | Path) -> bool:
    """Does the file start as Darshan logs do (their format version, NUL-padded)?"""
    try:  # never blocks: a FIFO or device is not a log (the reader refuses it in one message)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        head = os.read(fd, 8) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return False
    finally:
        os.close(fd)
    return bool(_VERSION.match(head))


def _report(path: str | Path) -> Any:
    if not looks_like_darshan(path):  # PyDarshan's C library would print errors of its own
        raise ValueError("it does not start with a Darshan log format version")
    try:
        import darshan  # noqa: PLC0415 (optional dependency)
    except ImportError as e:
        raise DarshanUnavailable(
            "reading a Darshan log needs PyDarshan: pip install darshan (or iotune[darshan])"
        ) from e
    return darshan.DarshanReport(str(path), read_all=True)


def _records(report: Any, module: str) -> list[dict[str, Any]]:
    """One dict per record: counters and fcounters merged, name resolved."""
    if module not in report.records:
        return []
    frames = report.records[module].to_df()
    if not isinstance(frames, dict) or "counters" not in frames:
        return []
    rows = frames["counters"].to_dict("records")
    fc = frames.get("fcounters")
    frows = fc.to_dict("records") if fc is not None else [{}] * len(rows)
    out = []
    for c, f in zip(rows, frows, strict=False):
        rec = {**c, **f}
        rec["name"] = report.name_records.get(int(c["id"]), str(c["id"]))
        out.append(rec)
    return out


def _lustre(report: Any) -> list[dict[str, Any]]:
    """The LUSTRE module's records (their own frame layout: "components")."""
    if "LUSTRE" not in report.records:
        return []
    frames = report.records["LUSTRE"].to_df()
    comp = frames.get("components") if isinstance(frames, dict) else None
    return comp.to_dict("records") if comp is not None else []


def _fs_of(path: str, mounts: list[tuple[str, str]]) -> str | None:
    best = None
    for point, fstype in mounts or []:
        if path == point or path.startswith(point.rstrip("/") + "/"):
            if best is None or len(point) > len(best[0]):
                best = (point, fstype)
    return best[1] if best else None


_WRITTEN = ("POSIX_BYTES_WRITTEN", "POSIX_WRITES", "MPIIO_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN",
            "STDIO_WRITES", "H5D_BYTES_WRITTEN", "H5D_WRITES")  # fmt: skip


def _system_file(name: str, mods: dict[str, list[dict[str, Any]]], script: Any) -> bool:
    """A file the application did not open for its data (data/system_files.tsv, as for a
    profile): the interpreter's, a library, the script an interpreter runs, MPI's helpers."""
    written = any(r.get(k, 0) for rs in mods.values() for r in rs for k in _WRITTEN)
    return prof.classify(name, written, script=script) is not None


def _sum(recs: list[dict[str, Any]], key: str) -> float:
    return float(sum(r.get(key, 0) or 0 for r in recs))


def _hist(recs: list[dict[str, Any]], prefix: str) -> list[float]:
    return [_sum(recs, f"{prefix}{b}") for b in BINS]


def _size_insights(v: dict[str, Any], notes: dict[str, str], w: list[float], r: list[float]):
    both = [a + b for a, b in zip(w, r, strict=True)]
    top = max((i for i, n in enumerate(both) if n), default=None)
    if top is not None and BIN_TOP[top] is not None:
        v["transfer_size_max"] = BIN_TOP[top]
        notes["transfer_size_max"] = "an upper bound: the top of the highest size bin"
    for what, hist in (("write", w), ("read", r)):
        n = sum(hist)
        small = sum(hist[:_SMALL_BINS])
        v[f"small_{what}s"] = int(small)
        v[f"small_{what}_fraction"] = small / n if n else 0.0


def _pattern_from_counters(v, notes, posix: list[dict[str, Any]]) -> None:
    total = _sum(posix, "POSIX_WRITES") + _sum(posix, "POSIX_READS")
    seq = _sum(posix, "POSIX_SEQ_WRITES") + _sum(posix, "POSIX_SEQ_READS")
    consec = _sum(posix, "POSIX_CONSEC_WRITES") + _sum(posix, "POSIX_CONSEC_READS")
    if not total:
        return
    pairs = max(total - len(posix), 1)  # each record's first access has no predecessor
    v["backward_fraction"] = max(total - len(posix) - seq, 0) / pairs
    v["gap_fraction"] = max(seq - consec, 0) / pairs
    if v["backward_fraction"] >= trace_insights.RANDOM_BACKWARD:
        v["access_pattern"] = "random"
    elif v["gap_fraction"] >= trace_insights.STRIDED_SHARE:
        v["access_pattern"] = "strided"
    else:
        v["access_pattern"] = "sequential"
    notes["access_pattern"] = "from Darshan's POSIX sequential/consecutive counters"


NDIMS_MAX = 5  # Darshan's H5D_MAX_NDIMS: the common accesses keep 5 lengths and strides
COMMON = 4  # the common accesses a record keeps (H5D_ACCESS1..4)


def _shapes(r: dict[str, Any]) -> list[tuple[tuple[int, ...], tuple[int, ...], int]]:
    """A dataset record's common regular-hyperslab selections: (lengths, strides, count), the
    lengths per dimension slowest first. Darshan keeps dimension i of a selection in D(5 - i)
    (the slowest in D5, a 2-D selection's fastest in D4: darshan-hdf5.c, and the traces of the
    same runs); accesses that were not regular hyperslabs (the whole dataset, points) have no
    lengths."""
    n = int(r.get("H5D_DATASPACE_NDIMS") or 0)
    out = []
    if not 1 <= n <= NDIMS_MAX:
        return out
    for k in range(1, COMMON + 1):
        count = int(r.get(f"H5D_ACCESS{k}_COUNT") or 0)
        dims = range(NDIMS_MAX, NDIMS_MAX - n, -1)
        lengths = tuple(int(r.get(f"H5D_ACCESS{k}_LENGTH_D{d}") or 0) for d in dims)
        strides = tuple(int(r.get(f"H5D_ACCESS{k}_STRIDE_D{d}") or 0) for d in dims)
        if count > 0 and all(x > 0 for x in lengths):
            out.append((lengths, strides, count))
    return out


def _extents(h5d: list[dict[str, Any]]) -> dict[tuple, tuple[int, ...]]:
    """The extent of each dataset where the selections pin it: Darshan records a dataset's rank
    and number of points, not its dimensions; each dimension is at least the longest selection
    made in it, so when those longest lengths multiply to the number of points they are the
    extent. Datasets of one name, rank, size and element size in files of one group pool their
    selections (a product beyond the points, where they differ, decides nothing)."""
    longest: dict[tuple, list[int]] = {}
    for r in h5d:
        key = _dataset_key(r)
        for lengths, _strides, _n in _shapes(r):
            top = longest.setdefault(key, [0] * len(lengths))
            for i, x in enumerate(lengths[: len(top)]):
                top[i] = max(top[i], x)
    return {k: tuple(t) for k, t in longest.items() if math.prod(t) == k[2]}


def _dataset_key(r: dict[str, Any]) -> tuple:
    name = str(r.get("name", "")).rsplit(":/", 1)[-1]
    shape = ("H5D_DATASPACE_NDIMS", "H5D_DATASPACE_NPOINTS", "H5D_DATATYPE_SIZE")
    return (name, *(int(r.get(k) or 0) for k in shape))


def _contiguous(lengths, strides, points: int, extent) -> bool | None:
    """Is a selection one run of the file's elements (True), not (False), or unknown (None)?"""
    if any(s > 1 for x, s in zip(lengths, strides, strict=True) if x > 1):
        return None  # Darshan keeps count x block and the application's stride: with one
        # block the stride means nothing (IOR passes its block size), with more it leaves gaps
    if math.prod(lengths) == points:
        return True  # the whole dataset
    first = next((i for i, x in enumerate(lengths) if x > 1), len(lengths) - 1)
    if first == len(lengths) - 1:
        return True  # a run along the fastest dimension
    if extent is None:
        return None
    return trace_insights.contiguous_box(lengths, extent)


def selection_shares(h5d: list[dict[str, Any]]) -> tuple[float, float, int] | None:
    """The share of HDF5 transfers whose file selection is noncontiguous, as bounds (low,
    high: the selections the log does not pin between them) and the transfers counted; None
    without transfers or without Darshan's selection counters (built without them: -1)."""
    extents = _extents(h5d)
    transfers = noncontig = unknown = 0
    for r in h5d:
        n = int((r.get("H5D_WRITES") or 0) + (r.get("H5D_READS") or 0))
        sel = [int(r.get(k) or 0) for k in ("H5D_POINT_SELECTS",
               "H5D_IRREGULAR_HYPERSLAB_SELECTS", "H5D_REGULAR_HYPERSLAB_SELECTS")]  # fmt: skip
        if n <= 0:
            continue
        if min(sel) < 0:
            return None
        transfers += n
        unknown += sel[0] + sel[1]  # points and irregular hyperslabs: not described
        key = _dataset_key(r)
        seen = 0
        for lengths, strides, count in _shapes(r):
            count = min(count, sel[2] - seen)
            seen += count
            c = _contiguous(lengths, strides, key[2], extents.get(key))
            if c is None:
                unknown += count
            elif not c:
                noncontig += count
        unknown += max(sel[2] - seen, 0)  # beyond the four common selections
    if not transfers:
        return None
    unknown = min(unknown, transfers - noncontig)
    return noncontig / transfers, (noncontig + unknown) / transfers, transfers


def _pattern_from_selections(v, notes, h5d: list[dict[str, Any]]) -> bool:
    """The pattern of HDF5 transfers from Darshan's H5D selection counters (the run's rule:
    strided when at least half the selections are noncontiguous, else sequential); whether a
    rank's successive transfers of one dataset go backwards is not in the log (no offsets
    below DXT) and is taken as not. True when decided."""
    shares = selection_shares(h5d)
    if shares is None:
        return False
    low, high, n = shares
    if low >= trace_insights.STRIDED_SHARE:
        v["access_pattern"] = "strided"
    elif high < trace_insights.STRIDED_SHARE:
        v["access_pattern"] = "sequential"
    else:
        notes["access_pattern"] = (
            f"unknown: {low:.2f}-{high:.2f} of {n} HDF5 selections are noncontiguous (Darshan "
            "keeps four common selection shapes per dataset, not every dataset's extent)"
        )
        return False
    if low == high:
        v["noncontiguous_fraction"] = low
    share = f"{low:.2f}" if low == high else f"{low:.2f}-{high:.2f}"
    notes["access_pattern"] = (
        f"from Darshan's H5D selection counters: {share} of {n} selections noncontiguous; the "
        "order of a rank's transfers of one dataset is not in the log (taken as in order)"
    )
    return True


AGGREGATED = 0.5  # spread of the ranks' POSIX bytes (sd / mean) when ROMIO aggregated
NOT_AGGREGATED = 0.25  # ... when each rank wrote its own piece
EXCESS_SHARE = 1.25  # POSIX bytes per HDF5 data byte above which the spread is not the data's
AGG_MIN_BYTES = 1 << 20  # below this the metadata rank 0 writes alone decides the spread


def _pattern_from_aggregation(v, notes, posix: list[dict[str, Any]], ranks: int,
                              data: float) -> None:  # fmt: skip
    """The pattern of collective HDF5 transfers, as ROMIO judged it. With its default hints
    (romio_cb_write/read automatic) ROMIO aggregates a collective call only when the ranks'
    pieces interleave in the file (noncontiguous selections); when they do not, each rank moves
    its own contiguous piece. Darshan keeps the variance of the ranks' POSIX bytes on a shared
    file: with aggregation a few ranks move everything (sd / mean near sqrt(ranks /
    aggregators - 1), 1 at 2 ranks on a node), without it each rank moves its share (near 0).
    In between, with little data, or when the POSIX bytes go beyond the data by more than a
    quarter (fill values or metadata, which one rank may write alone, would decide the spread),
    the pattern stays unknown."""
    below = sum(float((r.get("POSIX_BYTES_WRITTEN") or 0) + (r.get("POSIX_BYTES_READ") or 0))
                for r in posix)  # fmt: skip
    if below > EXCESS_SHARE * data:
        notes["access_pattern"] = (
            f"unknown: {below / max(data, 1):.2f} bytes below HDF5 per data byte, so fill values "
            "or metadata, not ROMIO's aggregation, would decide the ranks' spread"
        )
        return
    moved = weighted = 0.0
    for r in posix:
        b = float((r.get("POSIX_BYTES_WRITTEN") or 0) + (r.get("POSIX_BYTES_READ") or 0))
        if r.get("rank") != -1 or b < AGG_MIN_BYTES or ranks < 2:
            continue  # only a file every rank shared has the variance
        sd = math.sqrt(max(float(r.get("POSIX_F_VARIANCE_RANK_BYTES") or 0), 0.0))
        moved += b
        weighted += b * sd / (b / ranks)  # each file's spread, weighed by its bytes
    if not moved:
        return
    spread = weighted / moved
    if spread >= AGGREGATED:
        v["access_pattern"] = "strided"
    elif spread <= NOT_AGGREGATED:
        v["access_pattern"] = "sequential"
    else:
        return
    how = "aggregated: pieces interleave" if spread >= AGGREGATED else "each rank its own piece"
    notes["access_pattern"] = (
        f"from ROMIO's choice: the ranks' POSIX bytes spread {spread:.2f} (sd / mean) under "
        f"collective transfers with default hints ({how})"
    )


def _h5d_transfer_mode(h5d: list[dict[str, Any]], mpi: bool) -> str:
    """The transfer mode of H5Dwrite/H5Dread: Darshan flags a dataset whose transfers used
    MPI-IO collectives (H5D_USE_MPIIO_COLLECTIVE); each dataset's transfers are weighed. Below
    HDF5 the MPI-IO counters mix in HDF5's own metadata writes, which are independent."""
    if not mpi:
        return "independent"  # not through MPI-IO (sec2 or another driver)
    coll = total = 0.0
    for r in h5d:
        n = float((r.get("H5D_WRITES") or 0) + (r.get("H5D_READS") or 0))
        total += n
        coll += n if (r.get("H5D_USE_MPIIO_COLLECTIVE") or 0) > 0 else 0.0
    return insights.transfer_mode(coll, total)


def _fill_from_excess(v, notes, h5d: list[dict[str, Any]]) -> None:
    """Darshan does not record fill times or filters, but their trace shows below HDF5: a
    parallel HDF5 file whose chunked datasets were filled before being written carries, beyond
    the data, about one more copy of those datasets. When the excess is at least 90 % of the
    chunked datasets' size (1 MiB or more), the fill was written (fill_time "filled": ifset or
    alloc) and unfiltered (a filtered fill compresses to a fraction of it); otherwise both stay
    unknown."""
    sizes: dict[str, float] = {}
    for r in h5d:
        if int(r.get("H5D_CHUNK_SIZE_D1", 0) or 0) > 0:
            points = float(r.get("H5D_DATASPACE_NPOINTS", 0) or 0)
            sizes[r["name"]] = points * float(r.get("H5D_DATATYPE_SIZE", 0) or 0)
    chunked = sum(sizes.values())
    excess = v.get("write_excess_bytes") or 0
    if storage_layout.fill_shows(excess, chunked):
        v["fill_time"], v["filters"] = "filled", "no"
        why = (f"inferred: {excess:.0f} bytes written below HDF5 beyond the data, "
               f"{excess / chunked:.2f}x the chunked datasets' {chunked:.0f} bytes")  # fmt: skip
        notes["fill_time"] = notes["filters"] = why


def _h5d_insights(v, notes, h5d: list[dict[str, Any]]) -> None:
    by_ds: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in h5d:
        by_ds[rec["name"]].append(rec)
    layouts, written = [], []
    for recs in by_ds.values():
        first = recs[0]
        chunk = tuple(int(first.get(f"H5D_CHUNK_SIZE_D{i}", 0) or 0) for i in range(1, 6))
        chunk = tuple(c for c in chunk if c > 0)
        size = int(first.get("H5D_DATATYPE_SIZE", 0) or 0) or None
        kind = "chunked" if chunk else "contiguous"
        layouts.append(storage_layout.Layout(kind, chunk, False, None, size))
        points = int(first.get("H5D_DATASPACE_NPOINTS", 0) or 0)
        nbytes = _sum(recs, "H5D_BYTES_WRITTEN")
        if nbytes and size and points:
            written.append(nbytes / size >= points)
    lay = storage_layout.layout_insights(layouts)
    if any(lay.kind == "chunked" for lay in layouts):
        lay.pop("filters", None)  # Darshan does not record filters
        notes["filters"] = "unknown: Darshan does not record filters"
    else:
        notes["filters"] = "no chunked dataset: no filters (HDF5 filters need chunks)"
    v.update(lay)
    notes["layout"] = "from Darshan's H5D module (chunk dimensions)"
    notes["fill_time"] = "unknown: Darshan does not record the fill time"
    if written:
        v["fully_written"] = "yes" if all(written) else "no"
        notes["fully_written"] = "bytes written over the dataspace size (H5D counters)"


def from_log(path: str | Path) -> tuple[list[insights.Group], list[str]]:
    """The insights of each file group of a Darshan log, and what the log cannot tell."""
    report = _report(path)
    job = report.metadata.get("job", {})
    ranks = int(job.get("nprocs", 1))
    mounts = list(report.data.get("mounts") or [])
    mods = {m: _records(report, m) for m in ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D")}
    lustre = {int(r["id"]) for r in _lustre(report)}
    per_file: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for mod, recs in mods.items():
        for rec in recs:
            name = rec["name"]
            if mod == "H5D":
                name = name.rsplit(":/", 1)[0]
            if name.startswith("<") or name.startswith(("/proc/", "/sys/", "/dev/")):
                continue
            per_file[name][mod].append(rec)
    script = prof.script_of(str(report.metadata.get("exe") or "").split())
    component, component_why, openmpi = mpi_io_of(report.name_records.values())
    for name in [n for n in per_file if _system_file(n, per_file[n], script)]:
        del per_file[name]
    limits = list(LIMITS)
    if not mods["H5D"] and (mods["H5F"] or any(n.endswith(".h5") for n in per_file)):
        limits.append("HDF5 dataset layout: the log has no H5D records (Darshan's HDF5 module)")
    limits.append(
        "access pattern of HDF5 datasets: from the shapes of their selections (H5D module), "
        "not their offsets (DXT is not read yet): the order of a rank's transfers of one "
        "dataset is unknown; of raw MPI-IO and POSIX files: from the counters"
    )
    groups_files, took = insights.group_files(per_file)
    groups = []
    for pattern, names in groups_files.items():
        recs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for n in names:
            for mod, rs in per_file[n].items():
                recs[mod] += rs
        g = insights.Group(pattern, names)
        v, notes = g.values, g.notes
        if took.get(pattern):
            notes["files"] = insights.lone_note(took[pattern])
        v["ranks"], v["files"] = ranks, len(names)
        file_ranks = []
        for n in names:
            rs = [r for m in per_file[n].values() for r in m]
            file_ranks.append(ranks if any(r["rank"] == -1 for r in rs) else
                              len({r["rank"] for r in rs}))  # fmt: skip
        v["file_ranks"] = max(file_ranks)
        v["file_mode"] = ("single" if ranks <= 1 else "shared" if v["file_ranks"] > 1
                          else "per_process")  # fmt: skip
        h5d, mpi, posix = recs["H5D"], recs["MPI-IO"], recs["POSIX"]
        g.layers = tuple(layer for layer, mods_of in (("hdf5", ("H5F", "H5D")),
                         ("mpiio", ("MPI-IO",)), ("posix", ("POSIX",)), ("stdio", ("STDIO",)))
                         if any(recs[m] for m in mods_of))  # fmt: skip
        if h5d and (_sum(h5d, "H5D_BYTES_WRITTEN") + _sum(h5d, "H5D_BYTES_READ")):
            layer, pre, w_key, r_key = "hdf5", "H5D_", "H5D_WRITES", "H5D_READS"
        elif mpi:
            layer, pre = "mpiio", "MPIIO_"
            w_key = r_key = None
        elif posix:
            layer, pre, w_key, r_key = "posix", "POSIX_", "POSIX_WRITES", "POSIX_READS"
        elif recs["STDIO"]:
            layer, pre, w_key, r_key = "stdio", "STDIO_", "STDIO_WRITES", "STDIO_READS"
        else:
            continue
        outer = {"hdf5": h5d, "mpiio": mpi, "posix": posix, "stdio": recs["STDIO"]}[layer]
        v["interface"] = layer
        if mpi:
            cw, cr = _sum(mpi, "MPIIO_COLL_WRITES"), _sum(mpi, "MPIIO_COLL_READS")
            iw, ir = _sum(mpi, "MPIIO_INDEP_WRITES"), _sum(mpi, "MPIIO_INDEP_READS")
            v["transfer_mode"] = insights.transfer_mode(cw + cr, cw + cr + iw + ir)
            v["file_views"] = int(_sum(mpi, "MPIIO_VIEWS"))
        else:
            v["transfer_mode"] = "independent"
        if layer == "hdf5":  # HDF5's own metadata writes are independent MPI-IO calls
            v["transfer_mode"] = _h5d_transfer_mode(h5d, bool(mpi))
            notes["transfer_mode"] = "from Darshan's H5D_USE_MPIIO_COLLECTIVE per dataset"
        if layer == "mpiio":
            extra_w = _sum(mpi, "MPIIO_SPLIT_WRITES") + _sum(mpi, "MPIIO_NB_WRITES")
            extra_r = _sum(mpi, "MPIIO_SPLIT_READS") + _sum(mpi, "MPIIO_NB_READS")
            v["writes"], v["reads"] = int(cw + iw + extra_w), int(cr + ir + extra_r)
        else:
            v["writes"], v["reads"] = int(_sum(outer, w_key)), int(_sum(outer, r_key))
        bw, br = _sum(outer, f"{pre}BYTES_WRITTEN"), _sum(outer, f"{pre}BYTES_READ")
        v["bytes_written"], v["bytes_read"] = int(bw), int(br)
        if v["reads"]:
            v["read_size_mean"] = int(br // v["reads"])
        v["write_fraction"] = bw / (bw + br) if bw + br else 0.0
        v["io_mix"] = ("none" if not bw + br else "write" if not br
                       else "read" if not bw else "mixed")  # fmt: skip
        if v["writes"] + v["reads"]:
            v["transfer_size_median"] = int((bw + br) // (v["writes"] + v["reads"]))
            notes["transfer_size_median"] = "the mean: bytes over transfers (Darshan counters)"
        hist_pre = {"hdf5": "H5D_SIZE_", "mpiio": "MPIIO_SIZE_", "posix": "POSIX_SIZE_"}
        hist_pre = hist_pre.get(layer)
        if hist_pre:
            agg = "_AGG" if layer in ("hdf5", "mpiio") else ""
            _size_insights(v, notes, _hist(outer, f"{hist_pre}WRITE{agg}_"),
                           _hist(outer, f"{hist_pre}READ{agg}_"))  # fmt: skip
        if layer == "hdf5":  # below HDF5 the counters mix its metadata with the data
            notes["access_pattern"] = (
                "unknown: Darshan's POSIX and MPI-IO counters mix HDF5 metadata with the data"
            )
            decided = _pattern_from_selections(v, notes, h5d)
            if (not decided and v["transfer_mode"] == "collective"
                    and not _sum(mpi, "MPIIO_HINTS")):  # fmt: skip
                if openmpi:  # OMPIO aggregates by its own rules, not ROMIO's
                    notes["access_pattern"] = (
                        "unknown: the ranks' spread tells ROMIO's choice to aggregate, and "
                        f"this run's MPI-IO is not known to be ROMIO ({component_why})"
                    )
                else:
                    data = _sum(h5d, "H5D_BYTES_WRITTEN") + _sum(h5d, "H5D_BYTES_READ")
                    _pattern_from_aggregation(v, notes, posix, ranks, data)
                    if v.get("access_pattern"):
                        notes["access_pattern"] = f"assumed: ROMIO; {notes['access_pattern']}"
        else:
            _pattern_from_counters(v, notes, posix)
        if layer == "hdf5":
            _h5d_insights(v, notes, h5d)
            below = mpi or posix
            key = "MPIIO_BYTES_WRITTEN" if mpi else "POSIX_BYTES_WRITTEN"
            if bw and below:
                v["write_amplification"] = _sum(below, key) / bw
                v["write_excess_bytes"] = max(int(_sum(below, key) - bw), 0)
                _fill_from_excess(v, notes, h5d)
            v["chunk_cache_bytes"] = insights.HDF5_CHUNK_CACHE_DEFAULT
        meta = _sum(outer, f"{pre}F_META_TIME")
        busy = meta + _sum(outer, f"{pre}F_READ_TIME") + _sum(outer, f"{pre}F_WRITE_TIME")
        v["meta_fraction"] = meta / busy if busy else 0.0
        v["meta_time_rank_s"] = meta / max(ranks, 1)
        v["io_time_s"] = busy / max(ranks, 1)  # Darshan sums the ranks' times
        if posix:  # the highest byte any rank touched, +1
            top = max(max(r.get("POSIX_MAX_BYTE_WRITTEN", -1), r.get("POSIX_MAX_BYTE_READ", -1))
                      for r in posix)  # fmt: skip
            v["file_bytes"] = int(top) + 1
        ids = {int(r["id"]) for r in posix}
        fs = {_fs_of(n, mounts) for n in names} - {None}
        if ids & lustre:
            fs = {"lustre"}
        if len(fs) == 1:
            v["fs"] = fs.pop()
            v["parallel_fs"] = "yes" if v["fs"] in insights.PARALLEL_FS else "no"
        if mpi:
            v["mpiio_component"] = component
            notes["mpiio_component"] = component_why
        if mpi and not _sum(mpi, "MPIIO_HINTS") and not openmpi:
            for k, value in ROMIO_DEFAULTS.items():
                v[k] = value
                notes[k] = ("assumed: ROMIO's default (the application set no MPI-IO hints, "
                            "MPIIO_HINTS 0, and the log shows no Open MPI)")  # fmt: skip
        elif mpi and not _sum(mpi, "MPIIO_HINTS"):
            for k in ROMIO_DEFAULTS:
                notes[k] = (f"unknown: {component_why.split(': ', 1)[-1]}; "
                            "ROMIO's defaults are not assumed")  # fmt: skip
        notes.setdefault("hint_cb_buffer_size", "unknown: Darshan does not record hint values")
        for i in insights.INSIGHTS:
            v.setdefault(i.name, None)
            if v[i.name] is None and i.name.startswith("hint_"):
                notes.setdefault(i.name, "unknown: Darshan does not record hint values")
        groups.append(g)
    return groups, limits
