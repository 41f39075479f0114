#!/usr/bin/env python3
"""A serial h5py program of a metadata-heavy shape: thousands of attributes on a few objects.

Each scan of an experiment (a beamline, a test stand) keeps a snapshot of the facility's
process variables as attributes of the scan's group (one attribute per variable, name to
value, as NeXus-style files and many lab loggers do), beside the scan's small detector
dataset. The program writes the scans, closes the file, opens it again and reads the data and
every variable back by name. It times both phases itself (open to close) and prints one
`IOTUNE_RESULT {json}` line per phase, like the project's kernels.

It sets nothing itself: h5py's defaults (sec2 driver; h5py asks HDF5 for the earliest file
format, low bound `earliest`, on every HDF5 release). iotune's runtime changes them from
outside (LD_PRELOAD and a control file), never this code.

usage: many_attrs.py FILE [--scans S] [--attrs K] [--frames F]
"""

from __future__ import annotations

import argparse
import json
import time

import h5py
import numpy as np


def names(k: int) -> list[str]:
    """The process variables' names (sector, device, signal), the same in every run."""
    sig = ("readback", "setpoint", "status", "temperature")
    return [f"SR{i % 40:02d}:DEV{i // 4:05d}:{sig[i % 4]}" for i in range(k)]


def write(path: str, a: argparse.Namespace) -> dict:
    rng = np.random.default_rng(7)  # the same content in every run
    pvs = names(a.attrs)
    t0 = time.perf_counter()
    nbytes = 0
    with h5py.File(path, "w") as f:
        f.attrs["facility"] = "test stand"
        for s in range(a.scans):
            grp = f.create_group(f"scan{s:04d}")
            frames = rng.random((a.frames, 64), dtype=np.float32)
            grp.create_dataset("detector", data=frames)
            nbytes += frames.nbytes
            values = rng.random(a.attrs)
            for i, name in enumerate(pvs):
                grp.attrs[name] = values[i]
                nbytes += 8
    return {"phase": "write", "bytes": nbytes, "total_s": time.perf_counter() - t0}


def read(path: str, a: argparse.Namespace) -> dict:
    pvs = names(a.attrs)
    t0 = time.perf_counter()
    nbytes, total = 0, 0.0
    with h5py.File(path, "r") as f:
        for s in range(a.scans):
            grp = f[f"scan{s:04d}"]
            data = grp["detector"][()]
            nbytes += data.nbytes
            total += float(data.sum())
            attrs = grp.attrs
            for name in pvs:
                total += float(attrs[name])
                nbytes += 8
    return {"phase": "read", "bytes": nbytes, "total_s": time.perf_counter() - t0,
            "checksum": total}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--scans", type=int, default=4)
    ap.add_argument("--attrs", type=int, default=3000)
    ap.add_argument("--frames", type=int, default=100)
    a = ap.parse_args()
    for r in (write(a.file, a), read(a.file, a)):
        r.update(kernel="many_attrs", ranks=1, mb_s=round(r["bytes"] / r["total_s"] / 1e6, 3),
                 hdf5=".".join(map(str, h5py.version.hdf5_version_tuple)))  # fmt: skip
        print("IOTUNE_RESULT " + json.dumps(r, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
