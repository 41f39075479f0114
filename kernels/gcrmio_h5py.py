"""gcrmio-h5py: the GCRM-IO motif written with h5py and mpi4py (a Python application).

The same file as the C kernel `gcrmio` (docs/kernels.md), value for value: per iteration, in the
group /Step#<i> of one shared file, five 2-D float64 datasets (rows = mesh entities of all ranks,
columns = levels), chunked by --chunk-cells (0: contiguous):

  pressure            (Ncells,   L)      cells x layers
  temperature         (Ncells,   L)      cells x layers
  vertical_velocity   (Ncells,   L + 1)  cells x layer interfaces
  normal_wind         (3*Ncells, L)      edges x layers
  vorticity           (2*Ncells, L)      corners x layers

Each rank writes its row range with one assignment per variable (one H5Dwrite). The file is
opened the way h5py programs do (`h5py.File(name, "w", driver="mpio", comm=...)`), datasets
are read back as `f[name]` (h5py opens them with H5Oopen) and released by reference count, so
the kernel exercises exactly what distinguishes h5py from C programs. It chooses no tuning:
every property list is h5py's default; only the transfer mode and the chunk size are the
motif's. Output: one human line and one `IOTUNE_RESULT {json}` line per phase (rank 0), with
the keys of the C kernels. Exit codes: 0 ok, 1 error, 2 usage, 3 verification failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

KERNEL = "gcrmio-h5py"
# name, mesh entities per cell (cells 1, edges 3, corners 2), extra levels (layer interfaces)
VARS = (
    ("pressure", 1, 0),
    ("temperature", 1, 0),
    ("vertical_velocity", 1, 1),
    ("normal_wind", 3, 0),
    ("vorticity", 2, 0),
)
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_VERIFY = 0, 1, 2, 3
CHUNK_LIMIT = 0xFFFFFFFF  # bytes; HDF5 refuses chunks of 4 GiB or more


def count(text: str) -> int:
    """A count with an optional K, M, G or T suffix (powers of 1024)."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper()
    factor = scale.get(t[-1:], 1)
    digits = t[:-1] if factor > 1 else t
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"not a count: {text!r}")
    return int(digits) * factor


class Parser(argparse.ArgumentParser):
    """argparse whose messages come from rank 0 only (every rank parses)."""

    rank = 0

    def _print_message(self, message, file=None):
        if self.rank == 0:
            super()._print_message(message, file)


def parse_args(argv: list[str], rank: int) -> argparse.Namespace:
    Parser.rank = rank
    p = Parser(
        prog=KERNEL,
        description="GCRM-IO motif in h5py + mpi4py: a geodesic mesh with `cells` cells per "
        "rank (3 edges, 2 corners each) and L levels; per iteration five float64 datasets "
        "/Step#<i>/{pressure, temperature, vertical_velocity, normal_wind, vorticity}.",
    )
    p.add_argument("--cells", type=count, default=32768, help="grid cells per rank (32768)")
    p.add_argument("--levels", type=count, default=25, help="vertical levels (25)")
    p.add_argument(
        "--chunk-cells", type=count, default=16384, help="cells per chunk; 0 = contiguous (16384)"
    )
    p.add_argument("--iterations", "--steps", type=count, default=1, help="output iterations (1)")
    p.add_argument("--mode", choices=("collective", "independent"), default="collective")
    p.add_argument("--file", default="gcrmio-h5py.h5", help="file name (gcrmio-h5py.h5)")
    p.add_argument("--dir", default="", help="directory of the file, unless --file is absolute")
    p.add_argument("--read", action="store_true", help="read back and verify after writing")
    p.add_argument("--read-only", action="store_true", help="only read and verify")
    p.add_argument("--cleanup", action="store_true", help="delete the file at the end")
    a = p.parse_args(argv)
    if a.cells < 1 or a.levels < 1 or a.iterations < 1:
        p.error("--cells, --levels and --iterations must be at least 1")
    a.path = a.file if os.path.isabs(a.file) or not a.dir else os.path.join(a.dir, a.file)
    return a


def layout(a: argparse.Namespace, ranks: int, rank: int, v: int):
    """(global shape, first row of this rank, rows of this rank, chunk shape or None)."""
    _, per_cell, extra = VARS[v]
    rows, levels = a.cells * per_cell, a.levels + extra
    chunk = None
    if a.chunk_cells > 0:  # clamped to the dataset, as HDF5 requires for fixed-size datasets
        chunk = (min(a.chunk_cells, a.cells * ranks) * per_cell, levels)
    return (rows * ranks, levels), rows * rank, rows, chunk


def values(np, first: int, n: int, var: int, step: int):
    """The C kernels' data (kcommon.c kc_val_f64): a splitmix64 hash of the global index."""
    with np.errstate(over="ignore"):
        key = np.uint64((var << 32) | step)
        z = np.arange(first, first + n, dtype=np.uint64)
        z += np.uint64(0x9E3779B97F4A7C15) * (key + np.uint64(1))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def phase_bytes(a: argparse.Namespace, ranks: int) -> int:
    return a.cells * ranks * 8 * (8 * a.levels + 1) * a.iterations


def report(comm, a, phase: str, t: dict[str, float], verified: bool | None) -> None:
    if comm.rank != 0:
        return
    total = t["open"] + t["io"] + t["close"]
    nbytes = phase_bytes(a, comm.size)
    mbs = nbytes / total / 1e6 if total > 0 else 0.0
    ver = "" if verified is None else ", verified" if verified else ", NOT VERIFIED"
    ranks = f"{comm.size} rank{'' if comm.size == 1 else 's'}"
    print(
        f"{KERNEL} {phase}: {ranks}, {len(VARS) * a.iterations} datasets, {nbytes} bytes, "
        f"open {t['open']:.4f} s, io {t['io']:.4f} s, close {t['close']:.4f} s, "
        f"{mbs:.1f} MB/s{ver}"
    )
    result = {
        "kernel": KERNEL, "phase": phase, "ranks": comm.size, "bytes": nbytes,
        "open_s": t["open"], "io_s": t["io"], "close_s": t["close"], "total_s": total,
        "mb_s": round(mbs, 3), "verified": verified, "steps": a.iterations, "cells": a.cells,
        "levels": a.levels, "chunk_cells": a.chunk_cells, "mode": a.mode, "file": a.path,
    }  # fmt: skip
    print("IOTUNE_RESULT " + json.dumps(result, separators=(",", ":")), flush=True)


class Timer:
    """Slowest rank's open, io and close times (each phase ends at a barrier, as in C)."""

    def __init__(self, comm):
        self.comm, self.t, self.last = comm, {"open": 0.0, "io": 0.0, "close": 0.0}, None

    def start(self) -> None:
        self.comm.Barrier()
        self.last = time.perf_counter()

    def mark(self, slot: str | None) -> None:
        now = time.perf_counter()
        if slot:
            self.t[slot] += now - self.last
        self.last = now

    def slowest(self, mpi) -> dict[str, float]:
        return {k: self.comm.allreduce(v, op=mpi.MAX) for k, v in self.t.items()}


def write_phase(np, h5py, mpi, comm, a) -> None:
    timer = Timer(comm)
    timer.start()
    f = h5py.File(a.path, "w", driver="mpio", comm=comm)
    timer.mark("open")
    for it in range(a.iterations):
        group = f.create_group(f"Step#{it}")
        for v, (name, _, _) in enumerate(VARS):
            shape, first, rows, chunk = layout(a, comm.size, comm.rank, v)
            timer.mark("io")
            buf = values(np, first * shape[1], rows * shape[1], v, it).reshape(rows, shape[1])
            timer.mark(None)  # making the data is not I/O
            dset = group.create_dataset(name, shape, dtype="f8", chunks=chunk)
            if a.mode == "collective":
                with dset.collective:
                    dset[first : first + rows] = buf
            else:
                dset[first : first + rows] = buf
    timer.mark("io")
    f.close()
    timer.mark("close")
    report(comm, a, "write", timer.slowest(mpi), None)


def read_phase(np, h5py, mpi, comm, a) -> bool:
    timer = Timer(comm)
    timer.start()
    f = h5py.File(a.path, "r", driver="mpio", comm=comm)
    timer.mark("open")
    bad = 0
    for it in range(a.iterations):
        for v, (name, _, _) in enumerate(VARS):
            shape, first, rows, _ = layout(a, comm.size, comm.rank, v)
            dset = f[f"Step#{it}/{name}"]  # H5Oopen, as h5py opens every existing object
            if dset.shape != shape or dset.dtype != np.float64:
                raise ValueError(f"/Step#{it}/{name} is {dset.shape} {dset.dtype}, want {shape}")
            if a.mode == "collective":
                with dset.collective:
                    got = dset[first : first + rows]
            else:
                got = dset[first : first + rows]
            timer.mark("io")
            want = values(np, first * shape[1], rows * shape[1], v, it).reshape(rows, shape[1])
            wrong = np.flatnonzero(got.ravel() != want.ravel())
            if wrong.size and not bad:
                i = int(wrong[0])
                where = f"/Step#{it}/{name}: element {first * shape[1] + i} (float64)"
                got_i, want_i = float(got.ravel()[i]), float(want.ravel()[i])
                print(f"{KERNEL}: {where} is {got_i!r}, expected {want_i!r}", file=sys.stderr)
            bad += int(wrong.size)
            timer.mark(None)
    f.close()
    timer.mark("close")
    bad = comm.allreduce(bad)
    if bad and comm.rank == 0:
        print(f"{KERNEL}: {bad} values differ", file=sys.stderr)
    report(comm, a, "read", timer.slowest(mpi), bad == 0)
    return bad == 0


def main(argv: list[str]) -> int:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    try:
        a = parse_args(argv, comm.rank)
    except SystemExit as e:  # --help (0) or a usage error (2): every rank leaves the same way
        return int(e.code or 0)
    levels = a.levels + max(extra for _, _, extra in VARS)
    most_rows = max(per_cell for _, per_cell, _ in VARS)
    if (
        a.chunk_cells
        and min(a.chunk_cells, a.cells * comm.size) * most_rows * levels * 8 > CHUNK_LIMIT
    ):
        if comm.rank == 0:
            print(f"{KERNEL}: --chunk-cells {a.chunk_cells} makes chunks of 4 GiB or more; "
                  f"HDF5 chunks must be below 4 GiB", file=sys.stderr)  # fmt: skip
        return EXIT_USAGE

    import h5py
    import numpy as np

    if not h5py.get_config().mpi:
        if comm.rank == 0:
            print(f"{KERNEL}: h5py was built without MPI (driver 'mpio')", file=sys.stderr)
        return EXIT_ERROR
    ok, stage = True, "write"
    try:
        if not a.read_only:
            write_phase(np, h5py, MPI, comm, a)
        stage = "read"
        if a.read or a.read_only:
            ok = read_phase(np, h5py, MPI, comm, a)
    except (OSError, ValueError, KeyError) as e:
        print(f"{KERNEL}: {stage} {a.path}: {e}", file=sys.stderr, flush=True)
        if stage == "write":  # a partial file could pass for a result
            try:
                os.unlink(a.path)
            except OSError:
                pass
        comm.Abort(EXIT_ERROR)
    if a.cleanup:
        comm.Barrier()
        if comm.rank == 0:
            os.unlink(a.path)
    return EXIT_OK if ok else EXIT_VERIFY


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
