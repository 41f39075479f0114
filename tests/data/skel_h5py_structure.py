"""The h5py + mpi4py twin of skel_structure.c (issue 22): one file per step with zero-padded
names (chk_0000.h5), a group per step (/step_000), a 32-byte compound dataset (numpy structured
dtype with padding), a chunked field with shuffle and gzip (deflate 6), a dataset created and
never written, and a flush after each step's writes. Every rank writes a block of N elements of
each written dataset, collectively.

    mpiexec -n 2 python skel_h5py_structure.py [N [STEPS]]   (defaults 16, 2)
"""

import sys

import h5py
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 16
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 2
particle = np.dtype(
    {"names": ["id", "x", "y", "flag"], "formats": ["<i4", "<f8", "<f8", "<i8"],
     "offsets": [0, 8, 16, 24], "itemsize": 32}
)  # fmt: skip
mine = slice(rank * n, (rank + 1) * n)
for step in range(steps):
    with h5py.File(f"chk_{step:04d}.h5", "w", driver="mpio", comm=comm) as f:
        g = f.create_group(f"step_{step:03d}")
        p = g.create_dataset("particles", (n * size,), dtype=particle)
        data = np.zeros(n, dtype=particle)
        data["id"] = np.arange(rank * n, (rank + 1) * n)
        with p.collective:
            p[mine] = data
        r = g.create_dataset("rho", (n * size,), dtype="<f8", chunks=(n,), shuffle=True,
                             compression="gzip", compression_opts=6)  # fmt: skip
        with r.collective:
            r[mine] = (np.arange(n) % 7).astype("<f8")  # no conversion: collective with filters
        g.create_dataset("unwritten", (10,), dtype="<f4")
        f.flush()
