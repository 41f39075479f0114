"""The structure of an HDF5 file as `h5dump -H -p` shows it: groups, and each dataset's type,
extent, maximum extent and chunking. Used to fill in what a trace does not record (the type's
class, chunking) and to compare a skeleton's file with the original's."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

_TOKEN = re.compile(
    r'(GROUP|DATASET) "([^"]*)" \{|\}|DATATYPE\s+(\S+)|DATASPACE\s+(.*)|'
    r"CHUNKED \(([^)]*)\)"
)


class LayoutError(RuntimeError):
    pass


def read(path: str) -> dict[str, Any]:
    """{"groups": [paths], "datasets": {path: {"type", "dims", "maxdims", "chunks"}}}."""
    exe = shutil.which("h5dump")
    if exe is None:
        raise LayoutError("h5dump is not installed (Debian: hdf5-tools)")
    proc = subprocess.run([exe, "-H", "-p", path], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise LayoutError(f"h5dump -H -p {path} failed: {proc.stderr.strip()[:300]}")
    return parse(proc.stdout)


def _dims(text: str) -> tuple[list[int], list[int | None]]:
    m = re.search(r"\(([^)]*)\)\s*/\s*\(([^)]*)\)", text)
    if not m:
        return [], []
    cur = [int(x) for x in m.group(1).split(",") if x.strip()]
    mx = [None if "UNLIMITED" in x else int(x) for x in m.group(2).split(",") if x.strip()]
    return cur, mx


def parse(text: str) -> dict[str, Any]:
    groups: list[str] = []
    datasets: dict[str, dict[str, Any]] = {}
    stack: list[tuple[str, str]] = []  # (kind, path) of open blocks; other blocks ("", "")
    for line in text.splitlines():
        s = line.strip()
        m = re.match(r'(GROUP|DATASET) "([^"]*)" \{', s)
        if m:
            kind, name = m.groups()
            parent = next((p for k, p in reversed(stack) if k == "GROUP"), "")
            path = "/" if name == "/" else parent.rstrip("/") + "/" + name
            stack.append((kind, path))
            if kind == "GROUP":
                groups.append(path)
            else:
                datasets[path] = {"type": None, "dims": [], "maxdims": [], "chunks": None}
            continue
        if s.endswith("{"):
            stack.append(("", ""))
        current = stack[-1] if stack else ("", "")
        ds = next((p for k, p in reversed(stack) if k == "DATASET"), None)
        if ds is not None:
            if s.startswith("DATATYPE"):
                datasets[ds]["type"] = s.split()[1]
            elif s.startswith("DATASPACE"):
                datasets[ds]["dims"], datasets[ds]["maxdims"] = _dims(s)
            elif s.startswith("CHUNKED"):
                m2 = re.search(r"CHUNKED \(([^)]*)\)", s)
                datasets[ds]["chunks"] = [int(x) for x in m2.group(1).split(",")]
        if s == "}" or s.startswith("}"):
            if stack:
                stack.pop()
        del current
    return {"groups": groups, "datasets": datasets}
