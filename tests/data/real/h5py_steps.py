"""An h5py + mpi4py program as users write them (not one of iotune's kernels): a simulation that
keeps one group per step in one file, with attributes on the file, the groups and the datasets,
each rank writing its rows of every field collectively.

    mpiexec -n 2 python h5py_steps.py [--out steps.h5] [--rows N] [--cols N] [--steps N]
                                      [--fields N] [--chunks] [--gzip LEVEL]
"""

import argparse

import h5py
import numpy as np
from mpi4py import MPI

ap = argparse.ArgumentParser()
ap.add_argument("--out", default="steps.h5")
ap.add_argument("--rows", type=int, default=512)
ap.add_argument("--cols", type=int, default=512)
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--fields", type=int, default=2)
ap.add_argument("--chunks", action="store_true")
ap.add_argument("--gzip", type=int, default=None)
args = ap.parse_args()

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
mine = args.rows // size
lo, hi = rank * mine, (rank + 1) * mine
chunks = (min(mine, 64), args.cols) if args.chunks or args.gzip is not None else None

with h5py.File(args.out, "w", driver="mpio", comm=comm) as f:
    f.attrs["code"] = "h5py_steps 1.0"
    f.attrs["ranks"] = size
    for step in range(args.steps):
        g = f.create_group(f"step_{step:03d}")
        g.attrs["time"] = 0.1 * step
        g.attrs["step"] = step
        for k in range(args.fields):
            d = g.create_dataset(f"field{k}", (args.rows, args.cols), dtype="f8", chunks=chunks,
                                 compression="gzip" if args.gzip is not None else None,
                                 compression_opts=args.gzip)
            d.attrs["units"] = "m/s"
            block = np.arange(lo * args.cols, hi * args.cols, dtype="f8").reshape(mine, -1)
            with d.collective:
                d[lo:hi, :] = block + k + step
