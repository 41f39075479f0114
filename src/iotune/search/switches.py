"""Runtime switches a study turns on by itself, decided from the baseline profile.

A switch (registry target `switch`) is no setting to tune: it decides whether the settings
searched can reach the application at all. `serial_files` gives the HDF5 settings to files
opened with HDF5's serial sec2 driver (h5py without MPI, serial HDF5 programs), which get none
otherwise (off by default, so that tools such as h5repack keep their own). When the baseline
shows the application's data files opened that way, every trial that sets an HDF5 parameter
carries the switch, and so do best.xml and candidate.xml; the baseline and the defaults of
every comparison run without it (with no HDF5 setting it changes nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from iotune import params
from iotune.space import Space

SERIAL = "serial_files"
SWITCHED = (SERIAL,)  # every switch a study turns on
SERIAL_WHY = (
    "the application's HDF5 data files are opened with the serial sec2 driver ({files}), which "
    "gets HDF5 settings only with serial_files on"
)


def decide(
    space: Space, facts: Mapping[str, Any], left_out: Mapping[str, str]
) -> dict[str, dict[str, str]]:
    """{switch: {"value", "why"}} to turn on for the rest of the study (JSON-able)."""
    drivers = facts.get("hdf5_drivers") or {}
    searched = [d.param for d in space.dims if d.name not in left_out]
    hdf5_searched = any(p.layer == "hdf5" and p.target != "switch" for p in searched)
    if (
        drivers.get("sec2")
        and hdf5_searched
        and not facts.get("static_hdf5")
        and SERIAL not in space.names()  # the study searches it itself
        and params.find(SERIAL) is not None
    ):
        files = f"{drivers['sec2']} file{'s' if drivers['sec2'] != 1 else ''}"
        return {SERIAL: {"value": "true", "why": SERIAL_WHY.format(files=files)}}
    return {}


def apply(settings: Mapping[str, str], switched: Mapping[str, Any] | None) -> dict[str, str]:
    """settings with the switches turned on when they hold a setting a switch serves (an HDF5
    one); the defaults ({}) and settings of other layers stay as they are."""
    out = dict(settings)
    if not switched or not any(_serves(name) for name in settings):
        return out
    for name, s in switched.items():
        out.setdefault(name, s["value"])
    return out


def _serves(name: str) -> bool:
    p = params.find(name)
    return p is not None and p.layer == "hdf5" and p.target != "switch"
