"""Profiles written by the runtime (docs/profile.md): loading, checking and summarising them."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

SCHEMA = "iotune-profile"
VERSION = 1


def _counter_table() -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """The layers and each layer's counter keys, from data/counters.tsv: the table the runtime's
    counters (C struct, merge, JSON names) are generated from."""
    text = (resources.files("iotune") / "data" / "counters.tsv").read_text(encoding="utf-8")
    lines = [ln.split("\t") for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    header, rows = lines[0], lines[1:]
    layers = tuple(header[3:])
    keys = {layer: tuple(r[header.index(layer)] for r in rows if r[header.index(layer)] != "-")
            for layer in layers}  # fmt: skip
    return layers, keys


# LAYERS: the profile's layers, outermost first; COUNTERS: each layer's counter keys
LAYERS, COUNTERS = _counter_table()
SIZE_BINS = ("0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M",
             "10M-100M", "100M-1G", "1G+")  # fmt: skip
# hints worth showing in a summary (ROMIO reports many more)
INTERESTING_HINTS = ("cb_buffer_size", "cb_nodes", "cb_config_list", "romio_cb_write",
                     "romio_cb_read", "romio_ds_write", "romio_ds_read", "ind_wr_buffer_size",
                     "ind_rd_buffer_size", "striping_factor", "striping_unit")  # fmt: skip


class ProfileError(ValueError):
    """A file that is not a profile this version can read."""


@dataclass(frozen=True)
class Profile:
    data: dict[str, Any]
    path: Path | None = None

    @property
    def ranks(self) -> int:
        return int(self.data["ranks"])

    @property
    def io_time(self) -> float:
        """Seconds the slowest rank spent in I/O calls (outermost layer): the tuning objective."""
        return float(self.data["io"]["time_s"])

    @property
    def wall_time(self) -> float:
        return float(self.data["wall_s"])

    @property
    def bytes_written(self) -> int:
        return int(self.data["io"]["bytes_written"])

    @property
    def bytes_read(self) -> int:
        return int(self.data["io"]["bytes_read"])

    @property
    def bandwidth(self) -> float | None:
        """MB/s of all bytes moved over the I/O time, or None without I/O."""
        moved = self.bytes_written + self.bytes_read
        return moved / 1e6 / self.io_time if self.io_time > 0 and moved else None

    @property
    def reduced(self) -> bool:
        """False when the counters are rank 0's alone (MPI_Finalize never came)."""
        return bool(self.data.get("reduced", True))

    @property
    def files(self) -> list[dict[str, Any]]:
        return list(self.data["files"])

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.data["config"])

    def layer(self, name: str) -> dict[str, Any]:
        return dict(self.data["layers"][name])


def parse(data: Any, path: Path | None = None) -> Profile:
    where = f"{path}: " if path else ""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ProfileError(f'{where}not an iotune profile (no "schema": "{SCHEMA}")')
    version = data.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ProfileError(f"{where}profile version {version!r}: this iotune reads up to {VERSION}")
    for key in ("ranks", "wall_s", "io", "layers", "files", "config"):
        if key not in data:
            raise ProfileError(f'{where}profile without "{key}"')
    return Profile(data, path)


def load(path: str | os.PathLike[str]) -> Profile:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ProfileError(f"{path}: cannot read: {e.strerror}") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProfileError(f"{path}: not JSON: {e}") from e
    return parse(data, path)


# ----------------------------------------------------------------------------- summary


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _rate(nbytes: float, seconds: float) -> str:
    return f"{nbytes / 1e6 / seconds:.1f} MB/s" if seconds > 0 and nbytes else "-"


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header), fmt.format(*("-" * w for w in widths))] + [
        fmt.format(*r) for r in rows
    ]


class _Counters(dict):
    """A layer's counters where an absent one (an older or partial profile) reads as 0."""

    def __missing__(self, key: str) -> int:
        return 0


def _ops(layer: str, c: dict[str, Any]) -> str:
    if layer == "hdf5":
        return (f"{c['writes']} writes ({c['collective_writes']} coll), "
                f"{c['reads']} reads ({c['collective_reads']} coll)")  # fmt: skip
    if layer == "mpiio":
        return (f"{c['independent_writes'] + c['collective_writes']} writes "
                f"({c['collective_writes']} coll), "
                f"{c['independent_reads'] + c['collective_reads']} reads "
                f"({c['collective_reads']} coll)")  # fmt: skip
    if layer == "stdio":
        return f"{c['writes']} fwrite, {c['reads']} fread"
    return f"{c['writes']} writes, {c['reads']} reads, {c['seeks']} seeks, {c['fsyncs']} fsyncs"


def _layer_rows(counters: dict[str, dict[str, Any]], ranks: int) -> list[list[str]]:
    rows = []
    for layer in LAYERS:
        if not isinstance(counters.get(layer), dict):
            continue
        c = _Counters(counters[layer])
        if not (c["bytes_written"] or c["bytes_read"] or c["meta_time_s"]):
            continue
        busy = (c["write_time_s"] + c["read_time_s"] + c["meta_time_s"]) / max(ranks, 1)
        rows.append([
            layer,
            f"{busy:.4f}",
            _bytes(c["bytes_written"]),
            _bytes(c["bytes_read"]),
            _rate(c["bytes_written"], c["write_time_s"] / max(ranks, 1)),
            _rate(c["bytes_read"], c["read_time_s"] / max(ranks, 1)),
            _ops(layer, c),
        ])  # fmt: skip
    return rows


LAYER_HEADER = ["layer", "time/rank s", "written", "read", "write rate", "read rate", "operations"]


def summary(p: Profile) -> str:
    d = p.data
    rate = f"{p.bandwidth:.1f} MB/s" if p.bandwidth else "no data moved"
    lines = [
        f"program   {' '.join(d.get('argv') or [d.get('program') or '?'])}",
        f"ranks     {p.ranks} on {d.get('hostname', '?')}   wall {p.wall_time:.3f} s",
        f"I/O       {p.io_time:.4f} s (slowest rank)   written {_bytes(p.bytes_written)}   "
        f"read {_bytes(p.bytes_read)}   {rate}",
    ]
    if not p.reduced:
        lines.append("partial   rank 0's counters alone: MPI_Finalize was not called")
    cfg = p.config
    if cfg.get("path"):
        lines.append(f"config    {cfg['path']} ({cfg.get('digest')}, "
                     f"{len(cfg.get('settings') or [])} settings)")  # fmt: skip
    else:
        lines.append("config    none (library defaults)")
    lines += ["", "per layer (all files)"]
    lines += ["  " + ln for ln in _table(_layer_rows(d["layers"], p.ranks), LAYER_HEADER)]
    for f in p.files:
        lines += [""] + _file_lines(f)
    return "\n".join(lines)


def _file_lines(f: dict[str, Any]) -> list[str]:
    """A file's part of the summary; every key but the name is optional."""
    ranks = f.get("ranks", 1)
    where = [f.get("fs", "unknown"), f"{ranks} ranks"]
    phase = f.get("phase") or {}
    if "start_s" in phase and "end_s" in phase:
        where.append(f"open {phase['start_s']:.3f}-{phase['end_s']:.3f} s")
    lines = [f"file {f.get('name', '?')}  ({', '.join(where)})"]
    outer = _Counters(next((f[name] for name in LAYERS if isinstance(f.get(name), dict)), {}))
    moved = outer["bytes_written"] + outer["bytes_read"]
    t = f.get("time_s") or {}
    if "max" in t:
        lines.append(
            f"  I/O time {t['max']:.4f} s slowest (rank {t.get('slowest_rank', '?')}), "
            f"imbalance {t.get('imbalance', 1.0):.2f}, {_rate(moved, t['max'])}"
        )
    rows = _layer_rows({name: f[name] for name in LAYERS if name in f}, ranks)
    lines += ["  " + ln for ln in _table(rows, LAYER_HEADER)] if rows else []
    posix = _Counters(f.get("posix") or {})
    sizes = posix["sizes"] or {}
    if sum(sizes.values()):
        listed = ", ".join(f"{k}: {v}" for k, v in sizes.items() if v)
        lines.append(f"  POSIX access sizes  {listed}; sequential {posix['sequential']}, "
                     f"consecutive {posix['consecutive']}")  # fmt: skip
    hints = {k: v for k, v in (f.get("hints") or {}).items() if k in INTERESTING_HINTS}
    if hints:
        lines.append("  hints in effect     " + ", ".join(f"{k}={v}" for k, v in hints.items()))
    applied_by_layer = f.get("applied") or {}
    applied = {
        k: v for layer in ("hdf5", "mpiio") for k, v in applied_by_layer.get(layer, {}).items()
    }
    if applied:
        lines.append("  applied by iotune   " + ", ".join(f"{k}={v}" for k, v in applied.items()))
    return lines
