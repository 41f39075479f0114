"""An h5py + mpi4py program written for the skeleton tests (an outside tester's finding): a
file written, closed, opened again ("r+") to read it back, and an attribute added then to a
group made in the first session. The application's file (read for the attributes the traced
calls do not make) has that attribute: the skeleton must make it once, on the file opened
again, as the program did (it made it at the first session's end too, and its second
H5Acreate failed).

    mpiexec -n 2 python skel_reopen_attr.py FILE [N]   (N: rows per rank, default 16)
"""

import sys

import h5py
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
name = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
mine = slice(rank * n, (rank + 1) * n)
with h5py.File(name, "w", driver="mpio", comm=comm) as f:
    f.attrs["title"] = "reopened"
    d = f.create_group("fields").create_dataset("temp", (size * n, 4), dtype="<f8")
    d[mine, :] = np.arange(n * 4, dtype="<f8").reshape(n, 4) + rank
with h5py.File(name, "r+", driver="mpio", comm=comm) as f:
    ok = np.array_equal(f["fields/temp"][mine], np.arange(n * 4, dtype="<f8").reshape(n, 4) + rank)
    f["fields"].attrs["checked"] = np.int64(1)
sys.exit(0 if ok else 4)
