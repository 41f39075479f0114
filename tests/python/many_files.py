"""A generator of large profiles, for the tests and the benchmark of advise's running time.

many_files(n) is a profile (schema iotune-profile, version 1) of a run that touched n files, in
the shape the runtime writes (every counter of the layers it used, hints, times), with file
names as applications make them: a file per process (out.r<k>.dat: one group), checkpoints
of several series (chk<s>_<k>.h5), or names without numbers (every file its own group).
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

NAMINGS = ("per_process", "series", "distinct")


def _name(i: int, naming: str, series: int) -> str:
    if naming == "per_process":
        return f"/scratch/run/out.r{i}.dat"
    if naming == "series":
        return f"/scratch/run/chk{string.ascii_lowercase[i % series]}_{i:07d}.h5"
    letters, k = [], i  # a name without digits, distinct for each i
    while True:
        letters.append(string.ascii_lowercase[k % 26])
        k //= 26
        if not k:
            break
    return f"/scratch/run/{''.join(letters)}.dat"


def _file(i: int, naming: str, series: int) -> dict[str, Any]:
    name = _name(i, naming, series)
    size = 4096 * (1 + i % 7)
    posix = {"opens": 1, "dups": 0, "closes": 1, "reads": 0, "writes": 4, "seeks": 0,
             "fsyncs": 0, "bytes_written": size, "bytes_read": 0, "write_time_s": 1e-4,
             "read_time_s": 0.0, "meta_time_s": 2e-5, "sequential": 3, "consecutive": 3,
             "first_offset": 0, "last_offset": size, "sizes": {"1K-10K": 4}}  # fmt: skip
    f: dict[str, Any] = {"name": name, "fs": "ext4", "ranks": 1,
                         "phase": {"start_s": i * 1e-4, "end_s": i * 1e-4 + 2e-4},
                         "time_s": {"max": 1.2e-4, "min": 1.2e-4, "mean": 1.2e-4,
                                    "slowest_rank": i % 64, "imbalance": 1.0},
                         "posix": posix}  # fmt: skip
    if name.endswith(".h5"):
        f["hdf5"] = {"file_creates": 1, "file_opens": 0, "file_closes": 1, "dataset_creates": 1,
                     "dataset_opens": 0, "chunked_datasets": 0, "writes": 1, "reads": 0,
                     "bytes_written": size - 2048, "bytes_read": 0, "write_time_s": 1e-4,
                     "read_time_s": 0.0, "meta_time_s": 1e-5, "collective_writes": 0,
                     "independent_writes": 1, "collective_reads": 0,
                     "independent_reads": 0}  # fmt: skip
    return f


def _head(ranks: int, written: int) -> dict[str, Any]:
    return {"schema": "iotune-profile", "version": 1, "session": "many-files", "mpi": True,
            "reduced": True, "ranks": ranks, "io": {"time_s": 1.0, "bytes_written": written,
                                                    "bytes_read": 0},
            "program": "/usr/bin/app", "argv": ["/usr/bin/app"], "hostname": "node0",
            "start": 0.0, "wall_s": 10.0, "layers": {},
            "config": {"path": None, "digest": None, "settings": []}}  # fmt: skip


def many_files(n: int, naming: str = "per_process", series: int = 4, ranks: int = 64) -> dict:
    """The profile of a run that wrote n files (see the module's text for the namings)."""
    if naming not in NAMINGS:
        raise ValueError(f"naming is one of {', '.join(NAMINGS)}")
    files = [_file(i, naming, series) for i in range(n)]
    written = sum(f["posix"]["bytes_written"] for f in files)
    return {**_head(ranks, written), "files": files}


def write(path: str | Path, n: int, naming: str = "per_process", series: int = 4) -> Path:
    """Writes many_files(n, naming) to path, one file object at a time (one per line)."""
    if naming not in NAMINGS:
        raise ValueError(f"naming is one of {', '.join(NAMINGS)}")
    path = Path(path)
    written = sum(4096 * (1 + i % 7) for i in range(n))
    head = json.dumps(_head(64, written), separators=(",", ":"))[:-1]
    with open(path, "w", encoding="utf-8") as out:
        out.write(head + ',"files":[\n')
        for i in range(n):
            f = _file(i, naming, series)
            out.write(("," if i else "") + json.dumps(f, separators=(",", ":")) + "\n")
        out.write("]}\n")
    return path
