"""A small h5py application for the tests: run the same way with and without libiotune.so, its
output, exit status and files must be the same (test_h5py.py).

    python h5py_app.py SCENARIO [--mpio]

--mpio opens every file with driver="mpio" on COMM_WORLD (run it under mpiexec); without it the
files are serial (h5py's default sec2 driver) and only rank 0 of a job does anything. Rank 0
prints; every line is deterministic (no times, no addresses).

Scenarios:
  errors     the failing calls h5py programs meet, each caught: "<case>: <Exception> <message>"
  data       chunked, contiguous, compressed-free datasets, attributes, groups, append mode;
             prints checksums of what it reads back
  cache      a chunked dataset, closed, reopened as f["name"]: its chunk cache and the one of a
             dataset just created
  many N     N small datasets written one after another, each released by reference count
  idioms     f["a"] = data (an anonymous dataset, linked after: H5Dcreate_anon + H5Olink), in
             the root and in a step group; reopened as h5py 3.7 opens f["name"] (H5Oopen with a
             link access list); prints each one's chunk cache and sums
  exclusive  files created with modes "w-" and "x", written and read back
"""

from __future__ import annotations

import os
import sys

import h5py
import numpy as np

MPIO = "--mpio" in sys.argv
if MPIO:
    from mpi4py import MPI

    COMM = MPI.COMM_WORLD
    RANK = COMM.rank
else:
    COMM, RANK = None, 0


def say(*args) -> None:
    if RANK == 0:
        print(*args, flush=True)


def open_file(name: str, mode: str, **kw) -> h5py.File:
    if MPIO:
        return h5py.File(name, mode, driver="mpio", comm=COMM, **kw)
    return h5py.File(name, mode, **kw)


def barrier() -> None:
    if MPIO:
        COMM.Barrier()


def outcome(case: str, call) -> None:
    """Runs call; prints its result or the exception's type and message."""
    try:
        result = call()
    except Exception as e:  # the type and message are what the test compares
        say(f"{case}: {type(e).__name__} {e}")
    else:
        say(f"{case}: ok {result}")


def errors() -> None:
    # append mode on a file that does not exist: h5py tries H5Fopen, expects "no such file" and
    # then creates the file
    def append_missing():
        with open_file("appended.h5", "a") as f:
            f["x"] = np.arange(4)
        with open_file("appended.h5", "r") as f:
            return f["x"][()].tolist()

    outcome("append on a missing file", append_missing)
    outcome("open a missing file", lambda: open_file("missing.h5", "r"))
    with open_file("errors.h5", "w") as f:
        f.create_dataset("d", data=np.zeros(8))
        outcome("dataset created twice", lambda: f.create_dataset("d", (8,), dtype="f8"))
        outcome("missing name", lambda: f["no/such/name"])
        outcome("missing attribute", lambda: f["d"].attrs["nope"])
        outcome("group over a dataset", lambda: f.create_group("d"))
        outcome("bad shape", lambda: f.create_dataset("bad", (4,), data=np.arange(5)))
    barrier()
    outcome('mode "x" on an existing file', lambda: open_file("errors.h5", "x"))
    outcome('mode "w-" on an existing file', lambda: open_file("errors.h5", "w-"))
    with open_file("errors.h5", "r") as f:
        d = f["d"]

        def write_read_only():
            d[0:2] = 1.0  # H5Dwrite fails: no write intent on the file

        outcome("write to a read-only file", write_read_only)
        # H5Dread fails: no conversion from float64 to a variable-length string
        outcome("read with an impossible conversion",
                lambda: d.astype(h5py.string_dtype())[0:2])  # fmt: skip
        outcome("read back after the failures", lambda: d[0:2].tolist())
    say("errors: done")


def data() -> None:
    rows = 64
    with open_file("data.h5", "w") as f:
        f.attrs["title"] = "iotune h5py test"
        g = f.create_group("fields")
        for name, chunks in (("chunked", (16, 8)), ("contiguous", None)):
            d = g.create_dataset(name, (rows, 8), dtype="f8", chunks=chunks)
            d.attrs["units"] = "m/s"
            part = rows // (COMM.size if MPIO else 1)
            first = part * RANK
            block = np.arange(first * 8, (first + part) * 8, dtype="f8").reshape(part, 8)
            if MPIO:
                with d.collective:
                    d[first : first + part] = block * 0.5
            else:
                d[...] = np.arange(rows * 8, dtype="f8").reshape(rows, 8) * 0.5
        f.create_dataset("ints", data=np.arange(100, dtype="i4"))
        f.create_dataset("growing", data=np.arange(5, dtype="f4"), maxshape=(None,), chunks=(10,))
    barrier()
    with open_file("data.h5", "a") as f:  # append mode on an existing file
        if RANK == 0:  # independent, from one rank
            f["fields/chunked"][0, :] = -1.0
        f.create_dataset("appended", data=np.ones(10))
        f.attrs["appended"] = 1
    barrier()
    with open_file("data.h5", "r") as f:
        names = []
        f.visit(names.append)
        say("objects:", ", ".join(sorted(names)))
        for name in sorted(names):
            obj = f[name]
            if isinstance(obj, h5py.Dataset):
                total = float(np.sum(obj[()], dtype="f8")) if obj.size else 0.0
                # not obj.chunks: a control file may chunk datasets, by design
                say(f"{name}: shape {obj.shape} {obj.dtype} sum {total}")
        say("attrs:", dict(sorted((k, str(v)) for k, v in f.attrs.items())))


def cache() -> None:
    with open_file("cache.h5", "w") as f:
        created = f.create_dataset("grid2", (256, 64), dtype="f8", chunks=(32, 64))
        f.create_group("grp")
        say("created:", created.id.get_access_plist().get_chunk_cache())
        if RANK == 0 or MPIO:
            with created.collective if MPIO else _nothing():
                created[...] = 1.0
    barrier()
    with open_file("cache.h5", "r") as f:
        d = f["grid2"]  # H5Oopen
        say("group:", type(f["grp"]).__name__)  # H5Oopen of a group
        say("opened:", d.id.get_access_plist().get_chunk_cache())
        say("sum:", float(d[()].sum()))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def many(n: int) -> None:
    value = np.arange(16, dtype="f8")
    f = open_file("many.h5", "w")
    for i in range(n):
        d = f.create_dataset(f"d{i:05d}", (16,), dtype="f8")  # collective with mpio
        if RANK == 0:
            d[...] = value
        del d  # released by reference count (H5Idec_ref), never H5Dclose
    f.close()
    say(f"many: {n} datasets of {value.nbytes} bytes")


def idioms() -> None:
    grid = np.arange(64 * 64, dtype="f8").reshape(64, 64)
    with open_file("idioms.h5", "w") as f:
        f["a"] = grid  # every rank writes the whole array (same values), independently
        step = f.create_group("step_000")
        step["b"] = grid * 2
        f["a"].attrs["units"] = "m"
    barrier()
    with open_file("idioms.h5", "r") as f:
        lapl = h5py.h5p.create(h5py.h5p.LINK_ACCESS)  # what Debian's h5py 3.7 passes
        for name in ("a", "step_000/b"):
            d = h5py.Dataset(h5py.h5o.open(f.id, name.encode(), lapl=lapl))
            say(f"{name}: cache {d.id.get_access_plist().get_chunk_cache()} "
                f"sum {float(d[()].sum())}")  # fmt: skip


def exclusive() -> None:
    for mode in ("w-", "x"):
        name = f"exclusive_{mode.strip('-') or 'x'}.h5"
        with open_file(name, mode) as f:
            f["x"] = np.arange(10, dtype="i4")
        barrier()
        with open_file(name, "r") as f:
            say(f"mode {mode}: {f['x'][()].tolist()}")


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--mpio"]
    scenario = args[0] if args else ""
    if not MPIO and RANK != 0:
        return 0
    if scenario == "errors":
        errors()
    elif scenario == "data":
        data()
    elif scenario == "cache":
        cache()
    elif scenario == "idioms":
        idioms()
    elif scenario == "exclusive":
        exclusive()
    elif scenario == "many":
        many(int(args[1]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    say(f"files: {sorted(n for n in os.listdir('.') if n.endswith('.h5'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
