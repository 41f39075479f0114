#!/usr/bin/env python3
"""A serial h5py program of a common shape: many small datasets in many groups, with attributes.

One group per record (an experiment's samples, a simulation's particles of interest, a
catalogue's objects), each holding a few small arrays and a compressed 1-D signal chunked so
that its last chunk is partial, and a few attributes on the group and on each array. The
program writes the file, closes it, opens it again and reads every array and attribute back.
It times both phases itself (open to close) and prints one `IOTUNE_RESULT {json}` line per
phase, like the project's kernels (`iotune tune --objective kernel` can use it).

It sets nothing itself: h5py's defaults (sec2 driver, HDF5's file space and format defaults).
iotune's runtime changes them from outside (LD_PRELOAD and a control file), never this code.

usage: many_small.py FILE [--groups G] [--arrays A] [--elements N] [--signal S] [--attrs K]
"""

from __future__ import annotations

import argparse
import json
import time

import h5py
import numpy as np


def write(path: str, a: argparse.Namespace) -> dict:
    rng = np.random.default_rng(7)  # the same content in every run
    t0 = time.perf_counter()
    nbytes = 0
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "many small datasets"
        for g in range(a.groups):
            grp = f.create_group(f"record{g:05d}")
            for k in range(a.attrs):
                grp.attrs[f"meta{k}"] = g * 100 + k
            grp.attrs["label"] = f"record {g}"
            for i in range(a.arrays):
                data = rng.random(a.elements)
                d = grp.create_dataset(f"array{i}", data=data)
                d.attrs["units"] = "m/s"
                d.attrs["scale"] = 1.0 + i
                nbytes += data.nbytes
            signal = rng.integers(0, 1000, a.signal, dtype=np.int32)
            s = grp.create_dataset("signal", data=signal, chunks=(a.signal // 3 + 1,),
                                   compression="gzip", compression_opts=1)  # fmt: skip
            s.attrs["rate_hz"] = 1000
            nbytes += signal.nbytes
    return {"phase": "write", "bytes": nbytes, "total_s": time.perf_counter() - t0}


def read(path: str) -> dict:
    t0 = time.perf_counter()
    nbytes, total = 0, 0.0
    with h5py.File(path, "r") as f:
        for name in f:
            grp = f[name]
            total += sum(float(v) for v in grp.attrs.values() if not isinstance(v, str))
            for dname in grp:
                d = grp[dname]
                data = d[()]
                nbytes += data.nbytes
                total += float(data.sum()) + float(d.attrs.get("scale", 0.0))
    return {"phase": "read", "bytes": nbytes, "total_s": time.perf_counter() - t0,
            "checksum": total}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--groups", type=int, default=400)
    ap.add_argument("--arrays", type=int, default=8)
    ap.add_argument("--elements", type=int, default=64)
    ap.add_argument("--signal", type=int, default=2000)
    ap.add_argument("--attrs", type=int, default=4)
    a = ap.parse_args()
    for r in (write(a.file, a), read(a.file)):
        r.update(kernel="many_small", ranks=1, mb_s=round(r["bytes"] / r["total_s"] / 1e6, 3),
                 hdf5=".".join(map(str, h5py.version.hdf5_version_tuple)))  # fmt: skip
        print("IOTUNE_RESULT " + json.dumps(r, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
