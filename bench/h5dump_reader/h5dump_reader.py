#!/usr/bin/env python3
"""advise's layouts read two ways, file by file: `storage_layout.parse_h5dump` as it stands (the
one reader of h5dump's output, iotune.skel.h5layout.parse) and as it was at an earlier commit
(its own block parser, `--old`). Every HDF5 or netCDF-4 file found under the directories given
is dumped once with `h5dump -p -H`; both readers read the same text. Writes the files read, the
ones whose layouts differ (with both readings) and the machine's h5dump version.

  PYTHONPATH=src .venv/bin/python bench/h5dump_reader/h5dump_reader.py /tmp \\
      --out bench/h5dump_reader/h5dump_reader.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from iotune import storage_layout

REPO = Path(__file__).resolve().parents[2]
SUFFIXES = (".h5", ".hdf5", ".nc", ".nc4")


def old_reader(rev: str):
    """storage_layout (or, before it existed, insights) of commit rev, loaded as a module."""
    for path in ("src/iotune/storage_layout.py", "src/iotune/insights.py"):
        r = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], capture_output=True,
                           text=True)  # fmt: skip
        if r.returncode == 0 and "def parse_h5dump" in r.stdout:
            break
    else:
        sys.exit(f"no parse_h5dump at {rev}")
    f = Path(tempfile.mkdtemp()) / "old_reader.py"
    f.write_text(r.stdout)
    spec = importlib.util.spec_from_file_location("old_reader", f)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_reader"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def plain(layouts: dict) -> dict:
    return {k: [v.kind, list(v.chunk), v.filters, v.fill_time, v.type_size]
            for k, v in sorted(layouts.items())}  # fmt: skip


def files_under(dirs: list[str], most: int) -> list[str]:
    out = []
    for d in dirs:
        for root, _, names in os.walk(d):
            out += [os.path.join(root, n) for n in sorted(names) if n.endswith(SUFFIXES)]
    return sorted(out)[:most]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", help="directories searched for HDF5/netCDF-4 files")
    ap.add_argument("--old", default="79e5850", help="the commit of the earlier reader "
                    "(default: %(default)s, the last with its own parser)")  # fmt: skip
    ap.add_argument("--most", type=int, default=5000, help="files read at most (%(default)s)")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_suffix(".json"))
    args = ap.parse_args()
    old = old_reader(args.old)
    version = subprocess.run(["h5dump", "--version"], capture_output=True, text=True).stdout
    read, differ, not_hdf5 = 0, [], 0
    for f in files_under(args.dirs, args.most):
        r = subprocess.run(["h5dump", "-p", "-H", f], capture_output=True, text=True, timeout=60)
        if not r.stdout.strip():
            not_hdf5 += 1
            continue
        read += 1
        a, b = plain(old.parse_h5dump(r.stdout)), plain(storage_layout.parse_h5dump(r.stdout))
        if a != b:
            differ.append({"file": f, "old": a, "new": b})
    out = {"host": socket.gethostname(), "h5dump": version.strip(), "old": args.old,
           "dirs": args.dirs, "files_read": read, "not_read": not_hdf5,
           "differ": differ}  # fmt: skip
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{read} files read ({not_hdf5} h5dump could not read), {len(differ)} read differently")
    return 0


if __name__ == "__main__":
    sys.exit(main())
