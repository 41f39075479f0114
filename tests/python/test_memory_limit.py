"""Acceptance (issue 23): under a memory limit of 2 GiB, a control file with the largest value
of every numeric parameter of the registry leaves the application running to its end, with
the same data as a run without the runtime.

The limit is a cgroup made for the test (v2 memory.max, else v1 memory.limit_in_bytes), else a
systemd scope (MemoryMax), else RLIMIT_AS (prlimit) on each process; the test is skipped, with
the reason, where none of them works. The runtime withdraws what costs more than the limit
allows (src/iotune/data/costs.tsv): without that, chunk_cache_slots alone makes HDF5 fill
8 GiB per open dataset and the kernel kills the application.
"""

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import launcher

from iotune import controlfile, params

LIMIT = 2 << 30
NUMERIC = ("size", "int", "pair", "dims", "double")
GCRM = ["--cells", "2048", "--levels", "8", "--chunk-cells", "512", "--iterations", "2"]


def _largest(p: params.Param) -> str | None:
    """The largest value of a numeric parameter, as text (None for the others)."""
    if p.max is None or p.type not in NUMERIC:
        return None
    top = p.max if p.type == "double" else int(p.max)
    if p.type in ("pair", "dims"):  # the kernel's datasets are two-dimensional
        return f"{top},{top}"
    return str(top)


def largest_control_file() -> str:
    lines = ["<?xml version='1.0'?>", "<Parameters>", "<High_Level_IO_Library>"]
    for p in params.all_params():
        value = _largest(p)
        if value is not None and not p.is_mca:
            lines.append(f"<{p.name}>{value}</{p.name}>")
    lines += ["</High_Level_IO_Library>", "</Parameters>", ""]
    return "\n".join(lines)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _own_cgroup(controller: str | None) -> str | None:
    """This process's cgroup path for a v1 controller, or the v2 one (controller None)."""
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        if (controller is None and controllers == "") or (
            controller is not None and controller in controllers.split(",")
        ):
            return path
    return None


def _cgroup(root: Path, path: str, settings: dict[str, str], limit_file: str, limit: int,
            cleanup: contextlib.ExitStack, enable: Path | None = None) -> list[str]:  # fmt: skip
    """A new cgroup below this process's (root + path) with settings written: the command
    prefix that runs a command in it. OSError when the cgroup cannot be made or used."""
    if enable is not None and "memory" not in _read(enable).split():
        enable.write_text("+memory")  # OSError when the cgroup may not delegate it
    child = root / path.lstrip("/") / f"iotune-test-{os.getpid()}"
    child.mkdir()
    cleanup.callback(_remove, child)
    for name, value in settings.items():
        if (child / name).exists():
            (child / name).write_text(value)
    if _read(child / limit_file) != str(limit):
        raise OSError(f"{child / limit_file} does not hold {limit}")
    prefix = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(child / "cgroup.procs")]
    if not _works(prefix):
        raise OSError(f"cannot start a process in {child}")
    return prefix


def _remove(cgroup: Path) -> None:
    with contextlib.suppress(OSError):
        cgroup.rmdir()


def _works(prefix: list[str]) -> bool:
    try:
        proc = subprocess.run([*prefix, "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def memory_limit(limit: int, cleanup: contextlib.ExitStack, kind: str) -> tuple[list[str], str]:
    """A command prefix that runs a command (and its children) under limit bytes of memory,
    and what limits it: the first way that works here (kind "shared": a cgroup, a systemd
    scope, else RLIMIT_AS) or RLIMIT_AS on each process (kind "rlimit"); pytest.skip, with what
    was tried, when nothing here can."""
    tried = []
    if kind == "rlimit":
        return _rlimit(limit, tried)
    v2 = next((Path(r) for r in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")
               if Path(r, "cgroup.controllers").exists()), None)  # fmt: skip
    path = _own_cgroup(None)
    if v2 is not None and path is not None:
        settings = {"memory.max": str(limit), "memory.swap.max": "0"}
        enable = v2 / path.lstrip("/") / "cgroup.subtree_control"
        try:
            return _cgroup(v2, path, settings, "memory.max", limit, cleanup, enable), "cgroup v2"
        except OSError as e:
            tried.append(f"cgroup v2: {e}")
    path = _own_cgroup("memory")
    if path is not None:
        v1 = Path("/sys/fs/cgroup/memory")
        settings = {"memory.limit_in_bytes": str(limit)}
        settings["memory.memsw.limit_in_bytes"] = str(limit)  # no swapping out of the limit
        try:
            return _cgroup(v1, path, settings, "memory.limit_in_bytes", limit, cleanup), "cgroup v1"
        except OSError as e:
            tried.append(f"cgroup v1: {e}")
    scope = ["systemd-run", "--scope", "--quiet", "-p", f"MemoryMax={limit}"]
    if shutil.which("systemd-run") and _works(scope):
        return scope, "systemd scope MemoryMax"
    tried.append("systemd-run --scope: not available")
    return _rlimit(limit, tried)


def _rlimit(limit: int, tried: list[str]) -> tuple[list[str], str]:
    rlimit = ["prlimit", f"--as={limit}"]
    if shutil.which("prlimit") and _works([*rlimit, *launcher(), "1"]):
        return rlimit, "RLIMIT_AS"
    tried.append("prlimit --as: the launcher does not start under it")
    pytest.skip("no way to limit memory here: " + "; ".join(tried))


@pytest.mark.parametrize("kind", ["shared", "rlimit"])
def test_the_largest_value_of_every_parameter_under_2_gib(tmp_path, kernel, libiotune, kind):
    xml = tmp_path / "largest.xml"
    xml.write_text(largest_control_file())
    parsed = controlfile.parse_file(xml)  # valid, and every numeric parameter of the registry
    numeric = {p.name for p in params.all_params() if p.type in NUMERIC and not p.is_mca}
    assert parsed.ok and {s.name for s in parsed.settings} == numeric, parsed.messages()
    for d in ("plain", "largest"):
        (tmp_path / d).mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    cmd = [*launcher(), "2", kernel("gcrmio"), *GCRM, "--read"]
    plain = subprocess.run(cmd, cwd=tmp_path / "plain", env=env, capture_output=True, text=True,
                           timeout=120)  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    tuned_env = dict(env, LD_PRELOAD=str(libiotune), IOTUNE_CONFIG=str(xml),
                     IOTUNE_PROFILE=str(tmp_path / "p.json"))  # fmt: skip
    with contextlib.ExitStack() as cleanup:
        prefix, how = memory_limit(LIMIT, cleanup, kind)
        tuned = subprocess.run([*prefix, *map(str, cmd)], cwd=tmp_path / "largest",
                               env=tuned_env, capture_output=True, text=True,
                               timeout=120)  # fmt: skip
    assert tuned.returncode == 0, f"under {how}: exit {tuned.returncode}\n{tuned.stderr}"
    assert "gcrmio read" in tuned.stdout and "verified" in tuned.stdout, tuned.stdout
    said = [ln for ln in tuned.stderr.splitlines() if ln.startswith("iotune: ")]
    withdrawn = [ln for ln in said if ": withdrawn [largest.xml:" in ln]
    # the settings that would cost the most are among those withdrawn, each said once
    for name in ("chunk_cache_slots", "chunk_cache_bytes", "sieve_buf_size", "cb_buffer_size"):
        assert sum(f": {name}=" in ln for ln in withdrawn) == 1, (name, tuned.stderr)
    # a limit the ranks share is divided among the ranks on the host; RLIMIT_AS is each one's
    share = "2 GiB / 2 ranks on this host" if how != "RLIMIT_AS" else "(RLIMIT_AS 2 GiB)"
    assert all(share in ln for ln in withdrawn if "of memory" in ln), tuned.stderr
    diff = subprocess.run(["h5diff", tmp_path / "plain" / "gcrmio.h5",
                           tmp_path / "largest" / "gcrmio.h5"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert diff.returncode == 0, diff.stdout + diff.stderr
