"""Reading a Darshan log without letting a bad one harm the caller.

PyDarshan's native reader (darshan-util, C) trusts the log: a truncated or bit-flipped log made
it segfault, abort in free(), print errors of its own, raise KeyError from inside PyDarshan, and
once unlink the log it was reading. So a log is read in two steps:

1. check(): the header is validated in Python before any native code sees the file: the format
   version, the magic number (either byte order), the compression type, every region the header
   maps lies inside the file (a truncated log is refused here), and every compressed region
   decompresses completely with a valid checksum (zlib's Adler-32, bzip2's CRC: a flipped bit in
   the data is refused here) and within bounds (beyond 64 MiB, at most 256 times its
   compressed size: a decompression bomb is refused in a second, before the reader).
2. read(): the log, copied into a private temporary directory, is read by a child process
   (`python -m iotune.advise.darshan_safe COPY`) under a memory bound and a timeout. A crash,
   hang, or exception of the reader becomes one DarshanLogError naming the file; the child
   returns the insights as JSON.

Every problem is one DarshanLogError (a ValueError) whose text names the file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from iotune import inputs, insights
from iotune.advise.darshan import DarshanUnavailable

MAGIC = 6567223  # DARSHAN_MAGIC_NR
# the header layouts (darshan-log-format.h): up to format 3.21, 16 modules and a 32-bit
# partial flag; from 3.41, 64 modules and a 64-bit one
_OLD = {"mods": 16, "name_map": 24, "size": 8 + 8 + 4 + 4 + 16 + 16 * 16 + 16 * 4}
_NEW = {"mods": 64, "name_map": 32, "size": 8 + 8 + 8 + 8 + 16 + 64 * 16 + 64 * 4}
# module ids of format 3.41 (darshan-log-format.h); older logs lack PNETCDF_VAR (3.20-3.21)
# and H5D too (before 3.20), so their ids after those are one or two lower
_MODULES = ("NULL", "POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q",
            "LUSTRE", "STDIO", "DXT_POSIX", "DXT_MPIIO", "MDHIM", "APXC", "APMPI", "HEATMAP",
            "DFS", "DAOS")  # fmt: skip
_COMP = {0: "zlib", 1: "bzip2", 2: "none"}
_VERSION = re.compile(rb"(\d)\.(\d\d)\0")
MAX_EXPANDED = 8 * 1024**3  # bytes the regions may decompress to (a zip bomb is refused)
# a region may expand beyond BOMB_FLOOR only up to BOMB_RATIO times its compressed size: the
# logs of tests/data/darshan and PyDarshan's own compress their regions 1-12x; zlib reaches
# 1032x on zeros, bzip2 far more (a small log that inflated to 6 GiB ran 198 s in the reader)
BOMB_FLOOR = 64 << 20
BOMB_RATIO = 256
TIMEOUT_S = 300.0  # the reader's time, plus 1 s per MiB of decompressed records
MEMORY_MIN = 2 * 1024**3  # the reader's address-space bound: this, plus 16x the records ...
MEMORY_MAX_SHARE = 0.75  # ... at most this share of the machine's memory


class DarshanLogError(ValueError):
    """A Darshan log that cannot be read; str() is the one message, naming the file."""


def _fail(path: str, why: str) -> DarshanLogError:
    return DarshanLogError(f"{path}: not a Darshan log that can be read: {why}")


def _expand(path: str, data: bytes, comp: str, off: int, length: int, what: str) -> int:
    """Decompresses one region (one or more concatenated streams) to nowhere, through the one
    bounded decompressor of outside input (iotune.inputs.inflate); its size. A region that
    expands beyond BOMB_FLOOR and more than BOMB_RATIO times its compressed size is refused as
    soon as it does (a decompression bomb: Darshan's records compress 2-12x)."""
    total = 0
    region = f"{what} (bytes {off}-{off + length})"
    bound = max(BOMB_FLOOR, BOMB_RATIO * length)
    try:
        for piece in inputs.inflate((data[off : off + length],), comp, MAX_EXPANDED, path, region):
            total += len(piece)
            if total > bound:
                raise _fail(path, f"the {region} expand to more than {bound >> 20} MiB, over "
                            f"{BOMB_RATIO} times their size: a decompression bomb, not records "
                            "Darshan wrote")  # fmt: skip
    except inputs.InputError as e:
        raise _fail(path, str(e).removeprefix(f"{path}: ")) from None
    return total


def _module(version: tuple[int, int], i: int) -> str:
    names = list(_MODULES)
    if version < (3, 41):
        names.remove("PNETCDF_VAR")
    if version < (3, 20):
        names.remove("H5D")
    return names[i] if i < len(names) else f"module {i}'s"


def check(path: str | os.PathLike[str], data: bytes | None = None) -> int:
    """Validates a Darshan log's header and regions (see the module's text); returns the bytes
    its regions decompress to. Raises DarshanLogError naming the file."""
    name = os.fspath(path)
    if data is None:
        try:
            data = inputs.read_bytes(name, "Darshan log")
        except inputs.InputError as e:
            raise DarshanLogError(str(e)) from None
    m = _VERSION.match(data[:5])
    if not m:
        raise _fail(name, "it does not start with a Darshan log format version")
    version = (int(m.group(1)), int(m.group(2)))
    if version < (3, 0):
        raise _fail(name, f"log format {version[0]}.{version[1]:02d} (Darshan 2): not supported")
    lay = _NEW if version >= (3, 41) else _OLD
    if len(data) < lay["size"]:
        raise _fail(name, f"truncated: {len(data)} bytes, shorter than its header ({lay['size']})")
    order = "<"
    if struct.unpack_from("<q", data, 8)[0] != MAGIC:
        if struct.unpack_from(">q", data, 8)[0] != MAGIC:
            raise _fail(name, "bad magic number (a damaged header)")
        order = ">"
    comp = _COMP.get(data[16])
    if comp is None:
        raise _fail(name, f"unknown compression type {data[16]} (a damaged header)")
    maps = [("name records", *struct.unpack_from(order + "QQ", data, lay["name_map"]))]
    for i in range(lay["mods"]):
        off, length = struct.unpack_from(order + "QQ", data, lay["name_map"] + 16 * (i + 1))
        maps.append((f"{_module(version, i)} records", off, length))
    regions = sorted((off, length, what) for what, off, length in maps if length)
    job_end = regions[0][0] if regions else len(data)
    if job_end <= lay["size"]:
        raise _fail(name, "its header maps records over the job data (a damaged header)")
    regions.insert(0, (lay["size"], job_end - lay["size"], "job data"))
    end = 0
    for off, length, what in regions:
        if off < end:
            raise _fail(name, f"the {what} overlap other data (a damaged header)")
        if off + length > len(data):
            raise _fail(name, f"truncated: the {what} end at byte {off + length}, the file has "
                              f"{len(data)}")  # fmt: skip
        end = off + length
    if comp == "none":
        return sum(r[1] for r in regions)
    return sum(_expand(name, data, comp, off, length, what) for off, length, what in regions)


def available() -> bool:
    return importlib.util.find_spec("darshan") is not None


def _memory_bound(expanded: int) -> int:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 8 * 1024**3
    bound = int(min(MEMORY_MIN + 16 * expanded, max(MEMORY_MIN, total * MEMORY_MAX_SHARE)))
    import resource

    hard = resource.getrlimit(resource.RLIMIT_AS)[1]  # a login node's ulimit -v: no higher
    return bound if hard == resource.RLIM_INFINITY else min(bound, hard)


def _limits(memory: int) -> None:  # runs in the child before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _child_command(copy: str, out: str) -> list[str]:
    return [sys.executable, "-P", "-m", "iotune.advise.darshan_safe", copy, out]


def _child_env() -> dict[str, str]:
    """The environment, with this iotune package first on the path (the child imports it)."""
    import iotune

    env = dict(os.environ)
    root = str(Path(iotune.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _said(stderr: str) -> str:
    """The last thing the reader printed, for the message (one line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    return f"; it said: {lines[-1][:200]}" if lines else ""


def read(
    path: str | os.PathLike[str], timeout: float | None = None
) -> tuple[list[insights.Group], list[str]]:
    """The insights of a Darshan log (iotune.advise.darshan.from_log), read safely: validated
    first, then read from a private copy by a child process under a memory bound and a timeout."""
    name = os.fspath(path)
    try:
        data = inputs.read_bytes(name, "Darshan log")
    except inputs.InputError as e:
        raise DarshanLogError(str(e)) from None
    expanded = check(name, data)
    if not available():
        raise DarshanUnavailable(
            "reading a Darshan log needs PyDarshan: pip install darshan (or iotune[darshan])"
        )
    if timeout is None:
        timeout = TIMEOUT_S + expanded / (1 << 20)
    memory = _memory_bound(expanded)
    tmp = tempfile.mkdtemp(prefix="iotune-darshan-")
    try:
        copy = os.path.join(tmp, "log.darshan")  # the reader never touches the user's file
        result = os.path.join(tmp, "insights.json")
        with open(copy, "wb") as f:
            f.write(data)
        del data
        try:
            proc = subprocess.run(
                _child_command(copy, result), cwd=tmp, stdin=subprocess.DEVNULL,
                capture_output=True, timeout=timeout, check=False, env=_child_env(),
                preexec_fn=lambda: _limits(memory),
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise _fail(name, f"the Darshan reader did not finish within {timeout:.0f} s") from None
        except (OSError, subprocess.SubprocessError) as e:
            why = e.strerror if isinstance(e, OSError) else "its limits could not be set"
            raise DarshanLogError(f"{name}: cannot start the Darshan reader: {why}") from None
        stderr = proc.stderr.decode("utf-8", "replace")
        if proc.returncode < 0:
            try:
                sig = signal.Signals(-proc.returncode).name
            except ValueError:
                sig = f"signal {-proc.returncode}"
            raise _fail(name, f"the Darshan reader crashed ({sig}){_said(stderr)}")
        try:
            with open(result, encoding="utf-8") as f:
                out = json.load(f)
        except (OSError, ValueError):
            out = None
        if proc.returncode != 0 or not isinstance(out, dict) or "groups" not in out:
            why = out.get("error") if isinstance(out, dict) and out.get("error") else None
            if why is None:
                low_memory = "MemoryError" in stderr or "memory" in stderr.lower()
                why = ("the Darshan reader ran out of memory" if low_memory
                       else f"the Darshan reader failed (exit status {proc.returncode})"
                       f"{_said(stderr)}")  # fmt: skip
            raise _fail(name, why)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    groups = []
    for g in out["groups"]:
        group = insights.Group(g["pattern"], list(g["files"]))
        if isinstance(g.get("layers"), list):
            group.layers = tuple(g["layers"])
        group.values.update(g["insights"])
        group.notes.update(g["notes"])
        groups.append(group)
    return groups, list(out["limits"])


def _child(path: str, result: str) -> int:
    """In the child: read the log with PyDarshan, write the insights as JSON to result. A Python
    error of the reader is written as {"error": ...}; a crash of the native code kills only us."""
    out: dict[str, Any]
    try:
        from iotune.advise import darshan as dlog

        groups, limits = dlog.from_log(path)
        out = {"groups": [g.to_json() for g in groups], "limits": limits}
        code = 0
    except MemoryError:
        out, code = {"error": "the Darshan reader ran out of memory"}, 3
    except Exception as e:  # noqa: BLE001 (anything PyDarshan raises on a bad log)
        what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        out, code = {"error": f"PyDarshan cannot read it ({what[:300]})"}, 3
    with open(result, "w", encoding="utf-8") as f:
        json.dump(out, f)
    return code


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2]))
