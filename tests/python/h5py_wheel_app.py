"""A serial h5py program as a new user writes it (pip's h5py, HDF5 inside the wheel): one
chunked dataset written in two steps, one small dataset written at creation, then read back.
It prints, as JSON, what HDF5 itself says is in effect (tests/python/test_h5py_wheel.py) and
how many HDF5 writes and reads it made."""

import json
import sys

import h5py
import numpy as np

name = sys.argv[1]
writes = reads = 0
with h5py.File(name, "w") as f:
    d = f.create_dataset("a", shape=(1000, 100), chunks=(100, 100), dtype="f8")
    d[0:500] = np.arange(50000.0).reshape(500, 100)
    d[500:1000] = -np.arange(50000.0).reshape(500, 100)
    writes += 2
    f["b"] = np.ones(10)  # an anonymous dataset, written at its creation
    writes += 1
    c = f.create_dataset("c", data=np.arange(105.0), chunks=(10,), compression="gzip")
    writes += 1  # a filtered dataset with a partial edge chunk
    g = f.create_group("many")
    for i in range(50):  # created and closed at once: what evict_on_close takes out of the cache
        g.create_dataset(f"d{i}", data=np.full(4, float(i)))
    writes += 50
    cached = f.id.get_mdc_size()[3]  # the metadata cache's entries now
    fapl = f.id.get_access_plist()
    dapl = d.id.get_access_plist()
    dcpl = d.id.get_create_plist()
    seen = {
        "hdf5": ".".join(map(str, h5py.h5.get_libversion())),
        "alignment": list(fapl.get_alignment()),
        "chunk_cache": list(dapl.get_chunk_cache()),
        "fill_time": dcpl.get_fill_time(),
        "libver": list(fapl.get_libver_bounds()),
        "fs_strategy": list(f.id.get_create_plist().get_file_space_strategy()),
        "fs_page_size": f.id.get_create_plist().get_file_space_page_size(),
        "page_buffer": list(fapl.get_page_buffer_size()),
        "cached_entries": cached,
    }
with h5py.File(name, "r") as f:
    total = float(f["a"][...].sum()) + float(f["b"][...].sum()) + float(f["c"][...].sum())
    total += sum(float(f["many"][k][...].sum()) for k in f["many"])
    reads += len(f["many"])
    reads += 3
print(json.dumps({"seen": seen, "writes": writes, "reads": reads, "sum": total}))
