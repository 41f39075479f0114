"""Two ranks write their halves of a chunked dataset (one row per chunk) collectively with
h5py and mpi4py (tests/python/test_h5_transfer_opts.py)."""

import sys

import h5py
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
with h5py.File(sys.argv[1], "w", driver="mpio", comm=comm) as f:
    d = f.create_dataset("a", shape=(8, 1000), chunks=(1, 1000), dtype="f8")
    with d.collective:
        d[comm.rank * 4 : (comm.rank + 1) * 4] = np.full((4, 1000), comm.rank + 1.0)
