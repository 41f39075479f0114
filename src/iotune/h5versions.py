"""The HDF5 library's side of the registry (data/h5versions.tsv): for each parameter of layer
hdf5, the first release that has it, where the library supports it (any file, serial builds
only, MPI-IO files only, not MPI-IO files) and its own default from each release on.

The runtime reads the same table (tools/gen_params.py): it skips a parameter the library of
the process lacks, saying so once. Here a recommendation equal to the default of the HDF5 it
will run with is dropped (`drop_defaults`): HDF5 2.0's chunk cache default (8 MiB, 8191 slots)
is not 1.10's (1 MiB, 521).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from iotune import params

BUILDS = ("any", "serial", "mpio", "nompio")
Version = tuple[int, int, int]


@dataclass(frozen=True)
class Support:
    """One row: the HDF5 library's side of a parameter."""

    name: str
    since: Version | None  # None: a runtime switch, no property of the library
    builds: str
    defaults: tuple[tuple[Version, str], ...]  # (release, normalised value), ascending

    def default(self, version: Version) -> str | None:
        """The library's own default in release version (None: none known, or it lacks it)."""
        if self.since and version < self.since:
            return None
        found = None
        for since, value in self.defaults:
            if since <= version:
                found = value
        return found

    def lacks(self, version: Version, *, parallel_build: bool = False, mpio: bool = False):
        """Why the library of that version (and build, and a file's driver) cannot take it:
        one sentence, or None."""
        if self.since and version < self.since:
            return f"{self.name} needs HDF5 {show(self.since)} or later, not {show(version)}"
        if self.builds == "serial" and parallel_build:
            return f"{self.name}: a parallel build of HDF5 refuses it for every file"
        if self.builds == "nompio" and mpio:
            return f"{self.name}: not for files opened with the MPI-IO driver"
        return None


def parse_version(text: str) -> Version:
    """'1.10.8' (or '2.0', '1.14.6-3') as (1, 10, 8); ValueError otherwise."""
    parts = text.strip().split("-")[0].split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not an HDF5 version: {text!r}")
    nums = [int(p) for p in parts] + [0] * (3 - len(parts))
    return nums[0], nums[1], nums[2]


def show(v: Version) -> str:
    return ".".join(map(str, v))


def read_versions(path: str | Path) -> dict[str, Support]:
    """Reads and checks the table: every parameter of layer hdf5 once, values in the
    registry's syntax, releases ascending."""
    with open(path, encoding="utf-8") as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    if not lines or lines[0].split("\t") != ["name", "since", "builds", "defaults"]:
        raise ValueError(f"{path}: the header must be name since builds defaults")
    out: dict[str, Support] = {}
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != 4:
            raise ValueError(f"{path}: row {number} has {len(cells)} columns, not 4")
        name, since, builds, defaults = cells
        p = params.find(name)
        if p is None or p.layer != "hdf5" or name in out or builds not in BUILDS:
            raise ValueError(f"{path}: row {number}: {name}: unknown, repeated or bad builds")
        pairs = []
        for item in [] if defaults == "-" else defaults.split(" "):
            release, _, value = item.partition("=")
            try:
                pairs.append((parse_version(release), params.normalise_value(p, value)))
            except ValueError as e:
                raise ValueError(f"{path}: row {number}: {name}: {e}") from None
        if [r for r, _ in pairs] != sorted({r for r, _ in pairs}):
            raise ValueError(f"{path}: row {number}: {name}: releases not ascending")
        try:
            first = None if since == "-" else parse_version(since)
        except ValueError as e:
            raise ValueError(f"{path}: row {number}: {name}: {e}") from None
        out[name] = Support(name, first, builds, tuple(pairs))
    missing = [p.name for p in params.by_layer("hdf5") if p.name not in out]
    if missing:
        raise ValueError(f"{path}: no row for {', '.join(missing)}")
    return out


@cache
def table() -> dict[str, Support]:
    return read_versions(Path(str(resources.files("iotune") / "data" / "h5versions.tsv")))


def support(name: str) -> Support | None:
    """The HDF5 side of a parameter, or None (not an HDF5 library parameter)."""
    return table().get(name)


def default_for(name: str, version: Version) -> str | None:
    """HDF5 release version's own default of a parameter (normalised), or None."""
    s = support(name)
    return s.default(version) if s else None


def drop_defaults(settings: dict[str, str], version: Version) -> tuple[dict[str, str], list[str]]:
    """The settings (name: value) without those equal to that HDF5 release's own default, and
    one line per setting dropped."""
    kept, dropped = {}, []
    for name, value in settings.items():
        p, d = params.find(name), default_for(name, version)
        if p is not None and d is not None and params.normalise_value(p, value) == d:
            dropped.append(f"{name}={value} is HDF5 {show(version)}'s own default: left out")
        else:
            kept[name] = value
    return kept, dropped


def without_defaults(
    settings: Mapping[str, str], version: Version | None
) -> tuple[dict[str, str], list[str]]:
    """drop_defaults for a release that may be unknown (None: the settings as they are): what a
    knowledge-base entry, `kb suggest` and the site defaults keep of a study's settings."""
    if version is None:
        return dict(settings), []
    return drop_defaults(dict(settings), version)


def describe(name: str) -> str:
    """The `hdf5` column of `iotune check --list`: since which release, where, the defaults
    ("1.8.0+; default 1 MiB, 8 MiB from 2.0.0"); empty for other parameters."""
    s = support(name)
    if s is None or s.since is None:
        return ""
    where = {"serial": " serial builds", "mpio": " MPI-IO files", "nompio": " not MPI-IO"}
    text = f"{show(s.since)}+{where.get(s.builds, '')}"
    p = params.get(name)
    for i, (release, value) in enumerate(s.defaults):
        shown = params.format_size(int(value)) if p.type == "size" else value
        text += f"; default {shown}" if i == 0 else f", {shown} from {show(release)}"
    return text


def profile_version(profile: Mapping[str, Any]) -> Version | None:
    """The HDF5 release a profile's process used (its `hdf5_library`), or None; also of a
    study's summary and a trial's traits, which keep the baseline's `hdf5_library`."""
    lib = profile.get("hdf5_library") if isinstance(profile, Mapping) else None
    if not isinstance(lib, dict) or not isinstance(lib.get("version"), str):
        return None
    try:
        return parse_version(lib["version"])
    except ValueError:
        return None
