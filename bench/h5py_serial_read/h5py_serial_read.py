#!/usr/bin/env python3
"""Serial h5py read across chunks: default vs tuned settings, interleaved, with a significance
test.

The application (`--app FILE`) is the classic slow h5py read: a chunked 2-D float64 dataset read
row by row with a stride, so every row touches one chunk per chunk column. h5py's default chunk
cache (1 MiB, 521 slots) holds two of its 512 KiB chunks, so each chunk is read from the file
again for every row that needs it (64 times at stride 4); a chunk cache that holds a whole row
of chunks (16 x 512 KiB) reads each chunk once. The application times its own read loop and
prints one `IOTUNE_RESULT {json}` line (phase "read", bytes, total_s), like the kernels, so
`iotune tune --objective kernel` can use it.

The bench:
  1. writes the file once (`--rows`, `--cols`, `--chunk`), outside any measurement;
  2. gets the tuned settings: `--config FILE` (e.g. best.xml of an earlier study), or `--tune`
     runs `iotune tune --launcher none -- python THIS --app FILE` and takes its best.xml;
  3. runs default (libiotune.so preloaded with an empty control file, so both variants carry
     the preload) and tuned (the tuned control file) interleaved, in a fresh random order each
     round, each measured run right after a discarded identical warm-up run, `--rounds` rounds
     (shared/LAB-NOTES: the only way to believe numbers on these machines); `--drop-caches`
     (root) empties the page cache before every measured run, so the reads reach the device;
  4. prints median, min, max per variant, the ratio of medians and the one-sided paired
     permutation test's p (iotune.search.noise.paired_test, as `iotune tune` verifies), the
     chunk cache each variant's dataset had (read back through h5py: did the settings reach
     it?), and writes the raw numbers to `--out` (JSON, with the machine and the command).

Files opened with h5py's default sec2 driver get HDF5 settings only with the serial opt-in
(`<serial_files>true</serial_files>`); `iotune tune` switches it on by itself when the
baseline's data files are sec2, so `--tune` needs no hand-written control file. Datasets opened
as f["name"] (H5Oopen) get the dataset settings. Results in bench/README.md, raw numbers in
bench/h5py_serial_read/h5py_serial_read*.json.

usage: bench/h5py_serial_read/h5py_serial_read.py [--tune | --config FILE] [--rounds N]
[--drop-caches]
                                 [--rows R --cols C --chunk K --stride S] [--out FILE.json]
       bench/h5py_serial_read/h5py_serial_read.py --app FILE --stride S     (the application alone)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "src"))
DATASET = "field"
EMPTY_CONFIG = "<?xml version='1.0'?>\n<Parameters></Parameters>\n"


# ----------------------------------------------------------------------------- the application


def app(path: str, stride: int) -> int:
    import h5py
    import numpy as np

    with h5py.File(path, "r") as f:  # sec2: h5py's default
        d = f[DATASET]
        t0 = time.perf_counter()
        total, rows = 0.0, 0
        for r in range(0, d.shape[0], stride):
            total += float(np.sum(d[r, :]))  # one row: one chunk of each chunk column
            rows += 1
        elapsed = time.perf_counter() - t0
        nbytes = rows * d.shape[1] * d.dtype.itemsize
        cache = d.id.get_access_plist().get_chunk_cache()  # what reached the dataset
    result = {"kernel": "h5py_serial_read", "phase": "read", "ranks": 1, "bytes": nbytes,
              "total_s": elapsed, "mb_s": round(nbytes / elapsed / 1e6, 3), "rows": rows,
              "checksum": total, "chunk_cache": list(cache)}  # fmt: skip
    print("IOTUNE_RESULT " + json.dumps(result, separators=(",", ":")), flush=True)
    return 0


def make_file(path: Path, rows: int, cols: int, chunk: int) -> None:
    import h5py
    import numpy as np

    with h5py.File(path, "w") as f:
        d = f.create_dataset(DATASET, (rows, cols), dtype="f8", chunks=(chunk, chunk))
        for r in range(0, rows, chunk):
            n = min(chunk, rows - r)
            d[r : r + n] = np.arange(r * cols, (r + n) * cols, dtype="f8").reshape(n, cols)


# ----------------------------------------------------------------------------- the bench


def library() -> Path:
    from iotune import paths

    return paths.find_library()


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def run_app(path: Path, stride: int, config: Path, lib: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.update(LD_PRELOAD=str(lib), IOTUNE_CONFIG=str(config))
    cmd = [sys.executable, __file__, "--app", str(path), "--stride", str(stride)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=True)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("IOTUNE_RESULT "))
    return json.loads(line.split(" ", 1)[1])


def tune(path: Path, stride: int, out: Path, trials: int) -> Path:
    """iotune tune on the application; returns its best.xml."""
    cmd = [sys.executable, "-m", "iotune", "tune", "--launcher", "none", "--trials", str(trials),
           "--objective", "kernel", "--out", str(out), "--study", "h5py-serial-read", "--no-kb",
           "--no-progress", "--",
           sys.executable, __file__, "--app", str(path), "--stride", str(stride)]  # fmt: skip
    print("$", shlex.join(cmd), flush=True)
    subprocess.run(cmd, check=True, timeout=3600)
    return out / "best.xml"


def _study_summary(tuned: Path) -> dict | None:
    """What `iotune tune` decided (when it made the tuned settings): switches, what it left out,
    its verdict and its own pairs."""
    path = tuned.parent / "summary.json"
    if not path.is_file():
        return None
    s = json.loads(path.read_text())
    keep = ("switched_on", "not_searched", "recommended", "verdict", "trials", "final")
    return {k: s.get(k) for k in keep}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", metavar="FILE", help="run the application on FILE and exit")
    ap.add_argument("--stride", type=int, default=4, help="read every S-th row (4)")
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--chunk", type=int, default=256, help="square chunks of K x K (256: 512 KiB)")
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--config", type=Path, help="the tuned control file")
    how.add_argument("--tune", action="store_true", help="get it from `iotune tune`")
    ap.add_argument("--trials", type=int, default=20, help="trials of --tune (20)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--drop-caches", action="store_true", help="before each measured run (root)")
    ap.add_argument("--dir", type=Path, default=None, help="where the file goes (a temp dir)")
    ap.add_argument(
        "--out", type=Path, default=REPO / "bench" / "h5py_serial_read" / "h5py_serial_read.json"
    )
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.app:
        return app(a.app, a.stride)
    if not (a.config or a.tune):
        ap.error("give --config FILE (the tuned settings) or --tune")

    from iotune.search import noise

    lib = library()
    work = Path(tempfile.mkdtemp(prefix="h5py-serial-read-", dir=a.dir))
    path = work / "serial_read.h5"
    make_file(path, a.rows, a.cols, a.chunk)
    tuned = tune(path, a.stride, work / "tune", a.trials) if a.tune else a.config.resolve()
    default = work / "default.xml"
    default.write_text(EMPTY_CONFIG)
    configs = {"default": default, "tuned": tuned}
    print(f"tuned settings: {tuned}\n{tuned.read_text()}", flush=True)

    rng = random.Random(a.seed)
    times: dict[str, list[float]] = {"default": [], "tuned": []}
    rounds = []
    caches: dict[str, list] = {}
    for _ in range(a.rounds):
        order = noise.interleaved(list(configs), 1, rng)
        measured = {}
        for variant in order:
            run_app(path, a.stride, configs[variant], lib)  # warm-up, discarded
            if a.drop_caches:
                drop_caches()
            result = run_app(path, a.stride, configs[variant], lib)
            measured[variant] = result["total_s"]
            caches[variant] = result["chunk_cache"]
            times[variant].append(measured[variant])
        rounds.append({"order": order, **measured})
        print(f"round {len(rounds)}: " + ", ".join(f"{v} {t:.4f} s" for v, t in measured.items()))
    # (slots, bytes, w0) of the dataset as h5py sees it: did the tuned settings reach it?
    print(f"chunk cache in effect: {caches}")

    stats = {v: noise.summary(t) for v, t in times.items()}
    speedup = stats["default"]["median"] / stats["tuned"]["median"]
    p = noise.paired_test(times["default"], times["tuned"], maximize=False)
    print("\n| variant | median s | min s | max s | CV |\n|---|---|---|---|---|")
    for v, s in stats.items():
        print(f"| {v} | {s['median']:.4f} | {s['min']:.4f} | {s['max']:.4f} | {s['cv']:.2f} |")
    print(f"\nspeedup (median default / median tuned): {speedup:.2f}x, one-sided p = {p:.4f}")
    record = {
        "command": shlex.join(sys.argv), "machine": platform.node(), "cpus": os.cpu_count(),
        "python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "args": {k: str(v) for k, v in vars(a).items()}, "tuned_config": tuned.read_text(),
        "study": _study_summary(tuned),
        "rounds": rounds, "chunk_cache": caches, "stats": stats, "speedup": speedup, "p": p,
    }  # fmt: skip
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"raw numbers: {a.out}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
