"""The motif signature of a run: what kind of I/O it does, in a few words, derived from its
insights (iotune.insights, one definition) and the platform it ran on.

A signature has three parts (docs/kb.md):
- motif: words that do not change with the problem size or the rank count of the same
  application (layer mix, access pattern, transfer-size class, shared file or file per process,
  reads/writes, dataset layout and filters, file-system kind). Its hash is the signature's key:
  two runs with the same key are the same motif.
- scale: ranks (as a class), nodes, the median transfer and the bytes moved: they tell runs of
  one motif apart and weigh in the distance, never in the key.
- platform: MPI family and library, HDF5 library, file system and host class. Settings tuned on
  another platform are still evidence, but a suggestion says where they came from.

Only the dominant file group (the one that moved the most bytes) makes the motif: a
checkpoint's small side files (a log, a header) should not change what is tuned.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform as pyplatform
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from iotune import insights, trace_insights

# bump when a field or its meaning changes (entries of other versions stay apart); 2: the
# datasets' element type is part of the motif
VERSION = 2
SMALL_TRANSFER = 64 * 1024
MOTIF_FIELDS = (
    "interface",
    "transfer_mode",
    "access_pattern",
    "size_class",
    "file_mode",
    "io_mix",
    "layout",
    "filters",
    "fs_kind",
    "element_type",
)
# motif fields a query may not know although the stored study did: the runtime's adaptive mode
# sees no element types. When the query's value is "unknown" the field is not compared (in
# same_motif, here and in the runtime's kbmatch.c); the distance still counts half a mismatch.
LENIENT_FIELDS = ("element_type",)
# how much a difference in each part costs in distance(); motif fields dominate (one mismatch
# outweighs any difference of scale or platform), so "nearest" means "the same kind of I/O"
WEIGHTS = {
    "interface": 4.0,
    "io_mix": 4.0,
    "file_mode": 3.0,
    "access_pattern": 3.0,
    "transfer_mode": 2.0,
    "layout": 2.0,
    "size_class": 2.0,
    "filters": 1.0,
    "fs_kind": 2.0,
    "element_type": 2.0,
}
SCALE_WEIGHT = 0.25  # per doubling of ranks, nodes, transfer size or bytes (up to CAP_DOUBLINGS)
SCALE_FIELDS = ("ranks", "nodes", "transfer_size_median", "bytes")  # weighed in the distance
CAP_DOUBLINGS = 4
PLATFORM_WEIGHT = 0.5  # per platform field that differs


@dataclass
class Signature:
    motif: dict[str, str]
    scale: dict[str, Any] = field(default_factory=dict)
    platform: dict[str, str] = field(default_factory=dict)
    version: int = VERSION
    insights_version: int = insights.VERSION

    @property
    def key(self) -> str:
        """A short hash of the version and the motif: equal keys are the same motif."""
        text = json.dumps([self.version, self.motif], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def words(self) -> str:
        """The motif in one line, for listings."""
        return " ".join(f"{k}={self.motif.get(k, '?')}" for k in MOTIF_FIELDS)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "insights_version": self.insights_version,
            "key": self.key,
            "motif": dict(self.motif),
            "scale": dict(self.scale),
            "platform": dict(self.platform),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Signature:
        if not isinstance(data, Mapping) or not isinstance(data.get("motif"), Mapping):
            raise ValueError("a signature needs a 'motif' object")
        return cls(
            motif={str(k): str(v) for k, v in data["motif"].items()},
            scale=dict(data.get("scale") or {}),
            platform={str(k): str(v) for k, v in (data.get("platform") or {}).items()},
            version=int(data.get("version", VERSION)),
            insights_version=int(data.get("insights_version", insights.VERSION)),
        )


# ----------------------------------------------------------------------------- from insights


def dominant(groups: Sequence[insights.Group]) -> insights.Group | None:
    """The file group that moved the most bytes (the motif); None when nothing moved."""
    moved = [g for g in groups if (g.get("bytes_written") or 0) + (g.get("bytes_read") or 0) > 0]
    if not moved:
        return None
    return max(moved, key=lambda g: (g.get("bytes_written") or 0) + (g.get("bytes_read") or 0))


def size_class(g: insights.Group) -> str:
    """small when the median transfer is below SMALL_TRANSFER (64 KiB: there the cost of each
    call dominates and aggregation pays), else large. Coarse on purpose: the same application
    at another problem size or rank count keeps its class unless its transfers change by far
    more than a factor of two; the distance counts the finer difference."""
    median = g.get("transfer_size_median")
    if median is None:
        return "unknown"
    return "small" if median < SMALL_TRANSFER else "large"


def file_mode(g: insights.Group) -> str:
    """shared or per_process; a one-rank run (insights say single) cannot tell them apart and
    counts as shared when it wrote one file, the way the same program at more ranks would."""
    mode = g.get("file_mode") or "unknown"
    if mode == "single":
        return "shared" if (g.get("files") or 1) == 1 else "per_process"
    return mode


def motif_of(g: insights.Group) -> dict[str, str]:
    interface = g.get("interface") or "none"
    fs = g.get("fs")
    return {
        "interface": interface,
        "transfer_mode": g.get("transfer_mode") or "none",
        "access_pattern": g.get("access_pattern") or "unknown",
        "size_class": size_class(g),
        "file_mode": file_mode(g),
        "io_mix": g.get("io_mix") or "none",
        "layout": (g.get("layout") or "unknown") if interface == "hdf5" else "none",
        "filters": (g.get("filters") or "no") if interface == "hdf5" else "no",
        "fs_kind": "unknown"
        if not fs
        else ("parallel" if g.get("parallel_fs") == "yes" else "local"),  # fmt: skip
        "element_type": (g.get("element_type") or "unknown") if interface == "hdf5" else "none",
    }


def scale_class(ranks: int) -> str:
    """1, 2-16, 17-256, 257-4096, 4097+ ranks."""
    if ranks <= 1:
        return "1"
    for hi, name in ((16, "2-16"), (256, "17-256"), (4096, "257-4096")):
        if ranks <= hi:
            return name
    return "4097+"


def from_groups(
    groups: Sequence[insights.Group],
    platform: Mapping[str, str] | None = None,
    nodes: int | None = None,
) -> Signature:
    """The signature of a run from its insights (insights.from_profile)."""
    g = dominant(groups)
    if g is None:
        raise ValueError("the run moved no data: there is no I/O motif to recognise")
    ranks = int(g.get("ranks") or 1)
    plat = dict(platform or {})
    if g.get("fs"):
        plat.setdefault("fs", str(g.get("fs")))
    scale = {
        "ranks": ranks,
        "scale_class": scale_class(ranks),
        "nodes": nodes,  # None: not known (a profile from before hosts were counted)
        "ranks_per_node": round(ranks / nodes, 3) if nodes else None,
        "transfer_size_median": g.get("transfer_size_median"),
        "bytes": int((g.get("bytes_written") or 0) + (g.get("bytes_read") or 0)),
        "files": int(g.get("files") or 1),  # the distance weighs the bytes per file
        "group": g.pattern,
    }
    return Signature(motif=motif_of(g), scale=scale, platform=plat)


def from_profile(
    path: str | os.PathLike[str],
    program: str | None = None,
    data_dirs: Sequence[str | os.PathLike[str]] = (),
) -> Signature:
    """The signature of a saved profile (and its trace, when there is one); data_dirs: where
    the run's HDF5 files are (their dataset layouts), besides the profile's directory."""
    from iotune import profile as prof

    p = prof.load(path)
    traces = trace_insights.load_traces(path)
    dirs = [os.path.dirname(os.path.abspath(path)), *map(os.fspath, data_dirs)]
    groups = insights.from_profile(p, traces, search_dirs=dirs)
    data = p.data
    prog = program or data.get("program")
    return from_groups(groups, platform_of(prog, data.get("hostname")), p.nodes)


# ----------------------------------------------------------------------------- platform

_SOVERSION = re.compile(r"^(lib[A-Za-z0-9_+-]*?)\.so\.([0-9.]+)$")


def _library_versions(program: str | None) -> dict[str, str]:
    """{"mpi": "libmpich.so.12.2.0", "hdf5": "libhdf5_mpich.so.103.3.0"} from the libraries the
    program loads (their real file names carry the library versions); {} when unknown."""
    from iotune import mpifamily

    if not program:
        return {}
    path = mpifamily.resolve_program(program)
    if path is None:
        return {}
    out: dict[str, str] = {}
    for name, real in _ldd_paths(path):
        base = os.path.basename(real or name)
        if "hdf5" in base and "hl" not in base.split("hdf5")[1][:3] and "hdf5" not in out:
            out["hdf5"] = base
        elif re.match(r"lib(mpi|mpich)[a-z_]*\.so", base) and "mpi" not in out:
            out["mpi"] = base
    return out


def _ldd_paths(program: os.PathLike[str]) -> list[tuple[str, str | None]]:
    import shutil
    import subprocess

    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    try:
        text = subprocess.run(
            [ldd, os.fspath(program)], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if not parts or ".so" not in parts[0]:
            continue
        target = parts[2] if len(parts) > 2 and parts[1] == "=>" else None
        out.append((parts[0], os.path.realpath(target) if target else None))
    return out


def host_class(hostname: str | None = None) -> str:
    """The machine's architecture and its host name without digits (nid001234 and nid005678
    are one class of node; a laptop is its own)."""
    name = (hostname or socket.gethostname()).split(".", 1)[0]
    return f"{pyplatform.machine()}:{re.sub(r'[0-9]+', '#', name)}"


def platform_of(program: str | None, hostname: str | None = None) -> dict[str, str]:
    """The platform of a run: MPI family and library, HDF5 library, host class."""
    from iotune import mpifamily

    out = {"host": host_class(hostname)}
    if program:
        fam, _ = mpifamily.family_of_program(mpifamily.resolve_program(program) or program)
        if fam:
            out["mpi_family"] = fam
    out.update(_library_versions(program))
    return out


# ----------------------------------------------------------------------------- distance


def _per_file(scale: Mapping[str, Any]) -> Any:
    """The bytes the distance weighs when both signatures count their group's files (from
    2026-11-28): per file, so that one phase of the adaptive mode (one file, kbmatch.c) and a
    whole run of the same program (`kb suggest`) are the same scale. A signature stored before
    has the group's bytes only: then both sides' bytes are compared as they are."""
    v, files = scale.get("bytes"), scale.get("files")
    if isinstance(v, int | float) and isinstance(files, int | float) and files > 1:
        return v / files
    return v


def _doublings(a: Any, b: Any) -> float:
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return 0.0
    if a <= 0 or b <= 0:
        return 0.0
    return min(abs(math.log2(a / b)), CAP_DOUBLINGS)


def platform_differences(a: Signature, b: Signature) -> list[str]:
    """The platform fields known on both sides whose values differ (e.g. ['hdf5', 'host'])."""
    return sorted(k for k in set(a.platform) & set(b.platform) if a.platform[k] != b.platform[k])


def same_motif(query: Signature, other: Signature) -> bool:
    """Is other of the query's motif? Equal in every motif field (and of one signature
    version), except that a field of LENIENT_FIELDS the query does not know is not compared.
    The runtime's kbmatch.c applies the same rule (shared vectors tests/vectors/kb)."""
    if query.version != other.version:
        return False
    for k in MOTIF_FIELDS:
        mine, theirs = query.motif.get(k, "unknown"), other.motif.get(k, "unknown")
        if mine != theirs and not (k in LENIENT_FIELDS and mine == "unknown"):
            return False
    return True


def distance(a: Signature, b: Signature) -> float:
    """0 for the same motif at the same scale on the same platform; each motif field that
    differs adds its weight (an unknown on one side, half), scale differences a little per
    doubling, and each platform field that differs PLATFORM_WEIGHT. Signatures of another
    signature version are infinitely far apart."""
    if a.version != b.version:
        return math.inf
    d = 0.0
    for k, w in WEIGHTS.items():
        x, y = a.motif.get(k, "unknown"), b.motif.get(k, "unknown")
        if x != y:
            d += w / 2 if "unknown" in (x, y) else w
    per_file = "files" in a.scale and "files" in b.scale
    for k in SCALE_FIELDS:
        if k == "bytes" and per_file:
            d += SCALE_WEIGHT * _doublings(_per_file(a.scale), _per_file(b.scale))
        else:
            d += SCALE_WEIGHT * _doublings(a.scale.get(k), b.scale.get(k))
    d += PLATFORM_WEIGHT * len(platform_differences(a, b))
    return round(d, 4)
