"""What a trial measured, and the number a study optimises.

Sources of a measurement, in order of preference:
  profile   the JSON profile that libiotune.so writes at IOTUNE_PROFILE (docs/profile.md):
            io.time_s (slowest rank's time inside I/O calls) and the bytes moved;
  kernel    the `IOTUNE_RESULT {json}` lines that the built-in kernels print (one per phase):
            the sum of their total_s and bytes;
  wall      the time from launch to exit, measured by iotune (includes start-up and compute).

Objectives: auto (the default: the whole run's I/O time: io-time if a profile was written,
else kernel, else wall), io-time (profile), write and read (one phase alone: the profile's time
in write or read calls at the outermost layer used, per rank on average, else the kernel lines
of that phase), kernel (kernel lines), wall, bandwidth (bytes / I/O time from the profile, else
from the kernel lines). Times are minimised, bandwidth maximised.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULT_PREFIX = "IOTUNE_RESULT "

OBJECTIVES = ("auto", "io-time", "write", "read", "bandwidth", "wall", "kernel")
PHASES = {"write": "write", "read": "read"}  # objective -> phase


class NoObjective(ValueError):
    """The run did not produce what the objective needs; str() says what is missing."""


@dataclass
class Measurement:
    """Everything one run told us (any part may be missing)."""

    wall_s: float
    profile: dict[str, Any] | None = None
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def profile_time(self) -> float | None:
        try:
            return float(self.profile["io"]["time_s"]) if self.profile else None
        except (KeyError, TypeError, ValueError):
            return None

    @property
    def profile_bytes(self) -> int | None:
        try:
            io = self.profile["io"] if self.profile else None
            return int(io["bytes_written"]) + int(io["bytes_read"]) if io else None
        except (KeyError, TypeError, ValueError):
            return None

    def moved(self, direction: str) -> int | None:
        """Bytes read or written ("read", "written") through HDF5 and MPI-IO: the most either
        layer saw, else the kernel lines of that phase; None when neither says. POSIX is left
        out: below MPI-IO a collective write reads too (read-modify-write of holes), which
        the read settings of HDF5 and MPI-IO do not touch."""
        layers = (self.profile or {}).get("layers")
        if isinstance(layers, dict) and layers:
            try:
                return max(
                    (int(layers[n].get(f"bytes_{direction}", 0)) for n in ("hdf5", "mpiio")
                     if n in layers),
                    default=0,
                )  # fmt: skip
            except (AttributeError, TypeError, ValueError):
                return None
        if not self.results or not all(isinstance(r.get("bytes"), int) for r in self.results):
            return None
        phase = "read" if direction == "read" else "write"
        return sum(r["bytes"] for r in self.results if r.get("phase") == phase)

    def phase_time(self, phase: str) -> tuple[float, str] | None:
        """(seconds, source) of one phase ("write" or "read"): from the profile, the time in
        that phase's calls at the outermost layer that made any, per rank on average (the
        counters are sums over ranks); else the kernel lines of that phase; else None."""
        layers = (self.profile or {}).get("layers")
        if isinstance(layers, dict):
            calls = "writes" if phase == "write" else "reads"
            ranks = max(int((self.profile or {}).get("ranks") or 1), 1)
            for name in ("hdf5", "mpiio", "posix"):
                layer = layers.get(name) or {}
                n = sum(int(layer.get(k, 0)) for k in (calls, f"independent_{calls}",
                                                        f"collective_{calls}"))  # fmt: skip
                if n > 0:
                    try:
                        return float(layer[f"{phase}_time_s"]) / ranks, "profile"
                    except (KeyError, TypeError, ValueError):
                        return None
        times = [r.get("total_s") for r in self.results if r.get("phase") == phase]
        if times and all(isinstance(t, (int, float)) for t in times):
            return float(sum(times)), "kernel"
        return None

    @property
    def kernel_time(self) -> float | None:
        times = [r.get("total_s") for r in self.results]
        if not times or not all(isinstance(t, (int, float)) for t in times):
            return None
        return float(sum(times))

    @property
    def kernel_bytes(self) -> int | None:
        sizes = [r.get("bytes") for r in self.results]
        if not sizes or not all(isinstance(b, int) for b in sizes):
            return None
        return int(sum(sizes))


def direction(objective: str) -> str:
    """'maximize' for bandwidth, 'minimize' for the times."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r} (one of {', '.join(OBJECTIVES)})")
    return "maximize" if objective == "bandwidth" else "minimize"


def unit(objective: str) -> str:
    return "MB/s" if objective == "bandwidth" else "s"


def value(m: Measurement, objective: str) -> tuple[float, str]:
    """(value, source) of a measurement for an objective; NoObjective when it cannot be had."""
    if objective == "auto":
        for source, v in (("profile", m.profile_time), ("kernel", m.kernel_time)):
            if v is not None:
                return _finite(v, source)
        return _finite(m.wall_s, "wall")
    if objective == "io-time":
        if m.profile_time is None:
            raise NoObjective("no profile with io.time_s (is the runtime preloaded?)")
        return _finite(m.profile_time, "profile")
    if objective == "kernel":
        if m.kernel_time is None:
            raise NoObjective("no IOTUNE_RESULT line with total_s in the output")
        return _finite(m.kernel_time, "kernel")
    if objective == "wall":
        return _finite(m.wall_s, "wall")
    if objective in PHASES:
        got = m.phase_time(PHASES[objective])
        if got is None:
            raise NoObjective(f"the run made no {objective} calls the profile or kernel saw")
        return _finite(*got)
    if objective == "bandwidth":
        for source, t, b in (
            ("profile", m.profile_time, m.profile_bytes),
            ("kernel", m.kernel_time, m.kernel_bytes),
        ):
            if t is not None and b:
                if t <= 0:
                    raise NoObjective(f"{source}: I/O time {t} is not positive")
                return _finite(b / t / 1e6, source)
        raise NoObjective("no profile or kernel line with bytes and an I/O time")
    raise ValueError(f"unknown objective {objective!r}")


def _finite(v: float, source: str) -> tuple[float, str]:
    if not math.isfinite(v) or v < 0:
        raise NoObjective(f"{source}: value {v} is not a finite non-negative number")
    return float(v), source


def parse_results(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The JSON objects of the `IOTUNE_RESULT {...}` lines of an output (others ignored)."""
    out = []
    for line in lines:
        line = line.strip()
        if not line.startswith(RESULT_PREFIX):
            continue
        try:
            obj = json.loads(line[len(RESULT_PREFIX) :])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def read_profile(path: str | Path) -> dict[str, Any] | None:
    """The profile at path (checked by iotune.profile), or None when the run wrote none;
    ValueError for a file that is not a profile this version reads."""
    from iotune import profile

    if not Path(path).exists():
        return None
    try:
        return profile.load(path).data
    except profile.ProfileError as e:
        raise ValueError(str(e)) from None
