"""Leave out of the search what cannot matter for this application (inert parameters).

The baseline run (the stack's defaults) is profiled like every trial; what it shows decides:
- no HDF5 calls (or HDF5 linked statically, so no setting can reach it): no HDF5 parameter;
- no MPI-IO calls: no MPI-IO hint, no striping, no transfer mode or collective metadata;
- HDF5 data files opened only with serial drivers (sec2: h5py without MPI, serial HDF5
  programs; the profile's per-file `hdf5_driver`): no transfer mode or collective metadata
  (parallel HDF5's), and, without MPI-IO, no hint; the HDF5 settings are searched with the
  `serial_files` switch on (search/switches.py); only the core driver: no HDF5 setting;
- no reads: no read-only setting; no writes: no write or file-creation setting (the
  registry's `io` column says which is which);
- no HDF5 datasets: no dataset setting; no chunked dataset (when the profile says so, and
  chunking is not itself searched): no chunk cache setting;
- few attributes per object (the profile's per-file `attribute_creates` against the datasets
  and groups created): no file format bounds (`libver_low`). They pay where an object carries
  many attributes: in the earliest format every attribute lives in the object header and each
  creation or lookup by name scans them all, while 1.8's format indexes them past 8
  (bench/README.md, "Many attributes on one object": 2.4-2.5x faster with 3,000 per object);
- the files on file systems without striping (ext4, xfs, tmpfs, ...): no striping;
- `transfer_mode=collective` only when the profile shows that every rank makes the same number
  of dataset calls: a collective transfer that some rank never joins hangs the job;
- what the application's HDF5 library lacks or refuses (the profile's `hdf5_library`, the
  registry's h5versions.tsv): a parameter newer than its release; page buffering and eviction
  on close in a parallel build (refused for every file); the metadata cache image for files
  opened with MPI-IO. Judged even when inert parameters are kept (every strategy): the runtime
  would only withdraw them, trial after trial;
- under Open MPI's OMPIO (the profile's `mpi_library.io_component`), no ROMIO hint OMPIO never
  reads (it reads only OMPIO_HINTS), unless the space searches the component itself (`io`
  with `romio321`): then ROMIO's hints apply in the trials that switch to ROMIO.
Searching inert settings costs trials (the model must learn that they do nothing) and clutters
the recommendation with settings that look tuned but are noise.

The profile keys read here that a runtime may not write (`chunked_datasets`, `hdf5_driver`,
`per_rank`, `attribute_creates`) are optional: without them the decision is the cautious one,
and the reason says what was missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from iotune.space import Space

NO_READS = "the baseline run read nothing"
NO_WRITES = "the baseline run wrote nothing"
NO_HDF5 = "the baseline run made no HDF5 calls"
NO_MPIIO = "the baseline run made no MPI-IO calls"
NO_DATASETS = "the baseline run created or opened no HDF5 dataset"
NO_CHUNKED = "the baseline run's datasets are not chunked"
# the format bounds: searched when some file's objects carry this many attributes on average
FORMAT_BOUNDS = ("libver_low",)
MANY_ATTRIBUTES = 100
FEW_ATTRIBUTES = (
    "the baseline run created at most {n:g} attributes per created object in a file (the file "
    "format bounds matter from about " + str(MANY_ATTRIBUTES) + " on: indexed attributes)"
)
NO_STRIPING = "the files are on a file system without striping ({fs})"
STATIC_HDF5 = "HDF5 is linked statically into the program: its settings cannot be injected"
COLLECTIVE_UNKNOWN = (
    "the profile does not show that every rank makes the same number of dataset calls "
    "(a collective transfer some rank never joins would hang)"
)
COLLECTIVE_UNEQUAL = "the ranks make different numbers of dataset calls (collective would hang)"
SERIAL_HDF5 = (
    "the application's HDF5 files are serial (sec2 driver): parallel HDF5's collective "
    "settings cannot take effect"
)
SERIAL_NO_MPIIO = (
    "the application's HDF5 files are serial (sec2 driver) and it makes no MPI-IO calls: "
    "MPI-IO hints cannot take effect"
)
CORE_ONLY = "the application's HDF5 files use the core (in-memory) driver, which gets no settings"

# the file-system hints (layer fs) have an effect only here (ROMIO drops them elsewhere:
# shared/LAB-NOTES.md)
STRIPED_FS = ("lustre", "gpfs", "beegfs", "pvfs2", "orangefs", "daos", "wekafs")
# a stripe count and size per file, set where the file system takes them (docs/striping.md):
# Lustre and PVFS2/OrangeFS through ROMIO's hints, CephFS through the layout the runtime sets
# (runtime/src/fs); GPFS and BeeGFS have none per file, CephFS's object size is its own
STRIPING = ("striping_factor", "striping_unit", "start_iodevice")
STRIPING_FS = ("lustre", "ceph", "cephfs", "pvfs2", "orangefs")
CEPH_ONLY = ("striping_object_size",)
NOT_CEPH = "the files are not on CephFS ({fs}): the object size is CephFS's own"
MPIIO_ONLY = ("transfer_mode", "coll_metadata_read", "coll_metadata_write", "mpio_chunk_opt",
              "mpio_chunk_opt_num", "mpio_chunk_opt_ratio", "mpio_collective_opt")  # fmt: skip
CHUNK_CACHE = ("chunk_cache_bytes", "chunk_cache_slots", "chunk_cache_w0")
CHUNKING = ("chunk", "chunk_size")
# the MPI-IO hints Open MPI's OMPIO reads (the runtime's abi.c says the same in its read-back)
OMPIO_HINTS = ("cb_buffer_size", "cb_nodes", "collective_buffering", "striping_factor",
               "striping_unit")  # fmt: skip
# the hints that matter whichever MPI-IO component runs: those OMPIO reads too, and CephFS's
# object size, which the runtime sets itself on the new file (runtime/src/fs)
ANY_COMPONENT = (*OMPIO_HINTS, *CEPH_ONLY)
NOT_OMPIO = "the application's MPI-IO is Open MPI's OMPIO, which does not read this ROMIO hint"


def traits(profile: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a profile says about the application that decides what can matter (JSON-able);
    {} without a profile. A key is absent when the profile does not say."""
    if not profile:
        return {}
    layers = profile.get("layers") or {}
    h5 = layers.get("hdf5") or {}
    mp = layers.get("mpiio") or {}
    out: dict[str, Any] = {}
    if h5:
        out["hdf5_calls"] = sum(
            int(h5.get(k, 0)) for k in ("file_creates", "file_opens", "writes", "reads")
        )
        out["hdf5_datasets"] = int(h5.get("dataset_creates", 0)) + int(h5.get("dataset_opens", 0))
    if mp:
        out["mpiio_calls"] = int(mp.get("opens", 0))
    files = [f for f in profile.get("files") or [] if isinstance(f, dict)]
    fs = sorted({f["fs"] for f in files if f.get("fs")})
    if fs:
        out["fs"] = fs
    chunked = [
        f["hdf5"]["chunked_datasets"] for f in files if "chunked_datasets" in (f.get("hdf5") or {})
    ]
    if chunked:
        out["chunked_datasets"] = sum(int(c) for c in chunked)
    per_object = attributes_per_object(files)
    if per_object is not None:
        out["attributes_per_object"] = per_object
    drivers: dict[str, int] = {}
    for f in files:
        if f.get("hdf5_driver") and not f.get("system"):  # the application's data files
            drivers[f["hdf5_driver"]] = drivers.get(f["hdf5_driver"], 0) + 1
    if drivers:
        out["hdf5_drivers"] = drivers
    same = same_dataset_calls(profile)
    if same is not None:
        out["same_dataset_calls"] = same
    if isinstance(profile.get("ranks"), int) and "mpi" in profile:  # for the launch check
        out["ranks"], out["mpi"] = profile["ranks"], bool(profile["mpi"])
        if profile.get("reduced") is False:  # rank 0's counters alone: not a rank count
            out["reduced"] = False
    lib = profile.get("hdf5_library")
    if isinstance(lib, dict) and isinstance(lib.get("version"), str):
        out["hdf5_library"] = {"version": lib["version"], "parallel": bool(lib.get("parallel"))}
    component = (profile.get("mpi_library") or {}).get("io_component")
    if component:
        out["io_component"] = component
    out["not_in_effect"] = not_in_effect(profile)
    return out


def attributes_per_object(files: list[dict]) -> float | None:
    """The most attributes created per created object (dataset, group, and the root group) in
    one of the application's files; None when no file's counters say (an older runtime)."""
    most = None
    for f in files:
        h5 = f.get("hdf5") or {}
        if f.get("system") or "attribute_creates" not in h5:
            continue
        objects = 1 + sum(int(h5.get(k) or 0) for k in ("dataset_creates", "group_creates"))
        ratio = round(int(h5["attribute_creates"] or 0) / objects, 1)
        most = ratio if most is None else max(most, ratio)
    return most


def same_dataset_calls(profile: Mapping[str, Any]) -> bool | None:
    """Whether every rank that opened each HDF5 file made as many H5Dwrite calls on it as the
    others, and as many H5Dread calls (the profile's per-file `per_rank` counts, one per rank,
    or their minimum and maximum when more ranks had the file than the runtime lists;
    counters.tsv marks which); None when the profile cannot say: no per-rank counts,
    or rank 0's alone (MPI_Finalize never came)."""
    from iotune.profile import PER_RANK

    if not profile.get("reduced"):
        return None
    seen = False
    for f in profile.get("files") or []:
        counts = ((f.get("per_rank") or {}) if isinstance(f, dict) else {}).get("hdf5")
        if not isinstance(counts, dict):
            continue
        for key in PER_RANK.get("hdf5", ()):
            values = counts.get(key)
            if isinstance(values, dict):  # more ranks than listed: the runtime's min and max
                values = [values.get("min"), values.get("max")]
                if not all(isinstance(v, int) for v in values):
                    return None
            if not isinstance(values, list):
                return None
            seen = True
            if len(set(values)) > 1:
                return False
    return True if seen else None


def not_in_effect(profile: Mapping[str, Any]) -> dict[str, str]:
    """{setting: why} for control-file settings that did not take effect in this run: a
    withdrawn setting (the runtime's record), one marked not in effect, or an MPI-IO hint that
    was applied but that MPI-IO does not report back (dropped, e.g. striping on ext4) or
    reports with another value (e.g. cb_nodes capped by cb_config_list)."""
    out: dict[str, str] = {}
    files = [f for f in profile.get("files") or [] if isinstance(f, dict)]
    for w in [
        *(profile.get("withdrawn") or []),
        *(w for f in files for w in f.get("withdrawn") or []),
    ]:
        name = isinstance(w, dict) and (w.get("setting") or w.get("name"))
        if name:
            out[name] = f"withdrawn: {w.get('reason') or 'the call failed with it'}"
    for f in files:
        effect = f.get("hint_effect") or {}
        for name, e in effect.items():  # the runtime's verdict per hint, with its cause
            if isinstance(e, dict) and e.get("in_effect") == "no":
                out.setdefault(name, f"not in effect: {e.get('reason') or 'the runtime says'}")
        if effect:
            continue  # the runtime judged this file's hints: no second guess below
        hints = f.get("hints")
        applied = (f.get("applied") or {}).get("mpiio") or {}
        if not hints:
            continue  # nothing read back: nothing to compare
        for name, value in applied.items():
            if name not in hints:
                out.setdefault(name, f"dropped by MPI-IO on {f.get('fs', 'this file system')}")
            elif str(hints[name]).strip() != str(value).strip():
                out.setdefault(name, f"MPI-IO uses {hints[name]} instead")
    return out


def inert(
    space: Space, metrics: Mapping[str, Any], facts: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """{parameter: why it is left out} for the space's parameters that cannot matter, judged
    from a run's bytes (metrics) and its profile's traits (facts, see traits()) plus
    facts["static_hdf5"]; a missing fact leaves its parameters in."""
    facts = facts or {}
    read, written = metrics.get("bytes_read"), metrics.get("bytes_written")
    searched = set(space.names())
    # the component itself searched (io=romio321): ROMIO's hints matter in those trials
    romio_searched = "io" in searched and any(v != "ompio" for v in space.dim("io").values)
    drivers = facts.get("hdf5_drivers") or {}
    serial = bool(drivers) and "mpio" not in drivers and "sec2" in drivers
    core_only = bool(drivers) and set(drivers) == {"core"}
    out = {}
    for d in space.dims:
        p = d.param
        why = None
        if p.layer == "hdf5" and facts.get("static_hdf5"):
            why = STATIC_HDF5
        elif p.layer == "hdf5" and (refused := library_refuses(p.name, facts)):
            why = refused
        elif p.layer == "hdf5" and facts.get("hdf5_calls") == 0:
            why = NO_HDF5
        elif p.layer == "hdf5" and core_only:
            why = CORE_ONLY
        elif p.name in MPIIO_ONLY and serial:
            why = SERIAL_HDF5
        elif p.is_hint and serial and facts.get("mpiio_calls") == 0:
            why = SERIAL_NO_MPIIO
        elif (p.is_hint or p.name in MPIIO_ONLY) and facts.get("mpiio_calls") == 0:
            why = NO_MPIIO
        elif p.io == "read" and read == 0 and written is not None:
            why = NO_READS
        elif p.io == "write" and written == 0 and read is not None:
            why = NO_WRITES
        elif p.scope == "dataset" and p.layer == "hdf5" and facts.get("hdf5_datasets") == 0:
            why = NO_DATASETS
        elif (
            p.name in CHUNK_CACHE
            and facts.get("chunked_datasets") == 0
            and not searched & set(CHUNKING)
        ):
            why = NO_CHUNKED
        elif (
            p.name in FORMAT_BOUNDS
            and facts.get("attributes_per_object") is not None
            and facts["attributes_per_object"] < MANY_ATTRIBUTES
        ):
            why = FEW_ATTRIBUTES.format(n=facts["attributes_per_object"])
        elif (
            p.is_hint
            and facts.get("io_component") == "ompio"
            and p.name not in ANY_COMPONENT
            and not romio_searched
        ):
            why = NOT_OMPIO
        elif p.layer == "fs" and facts.get("fs"):
            why = fs_inert(p.name, facts["fs"])
        if why:
            out[d.name] = why
    return out


def library_facts(traits: Mapping[str, Any]) -> dict[str, Any]:
    """The facts of a baseline's traits about its HDF5 library alone (whether its files are
    opened with MPI-IO decides the not-MPI-IO parameters), for library_refuses."""
    out = {k: traits[k] for k in ("hdf5_library",) if k in traits}
    if "hdf5_drivers" in traits:
        out["hdf5_mpio"] = "mpio" in (traits["hdf5_drivers"] or {})
    return out


def library_refuses(name: str, facts: Mapping[str, Any]) -> str | None:
    """Why the application's HDF5 library (facts["hdf5_library"]: version, parallel) cannot
    take the parameter (h5versions.tsv), or None (unknown library: kept)."""
    from iotune import h5versions

    lib = facts.get("hdf5_library")
    support = h5versions.support(name)
    version = h5versions.profile_version({"hdf5_library": lib})
    if support is None or version is None:
        return None
    mpio = facts.get("hdf5_mpio", "mpio" in (facts.get("hdf5_drivers") or {}))
    why = support.lacks(version, parallel_build=bool(lib.get("parallel")), mpio=bool(mpio))
    if why is None:
        return None
    build = " (parallel build)" if lib.get("parallel") else ""
    return f"the application's HDF5 is {h5versions.show(version)}{build}: {why}"


def fs_inert(name: str, fs: list[str]) -> str | None:
    """Why a file-system parameter cannot matter for files on the file systems fs, or None."""
    on = set(fs)
    if name in CEPH_ONLY:
        return None if on & {"ceph", "cephfs"} else NOT_CEPH.format(fs=", ".join(fs))
    kept = STRIPING_FS if name in STRIPING else STRIPED_FS
    return None if on & set(kept) else NO_STRIPING.format(fs=", ".join(fs))


def excluded_values(space: Space, facts: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """{parameter: {value: why}} for single values that must not be tried: collective
    transfers unless every rank is known to make the same number of dataset calls."""
    if (
        "transfer_mode" not in space.names()
        or "collective" not in space.dim("transfer_mode").values
    ):
        return {}
    same = facts.get("same_dataset_calls")
    if same is True:
        return {}
    why = COLLECTIVE_UNEQUAL if same is False else COLLECTIVE_UNKNOWN
    return {"transfer_mode": {"collective": why}}
