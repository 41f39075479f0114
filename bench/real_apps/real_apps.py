"""Try iotune on real applications it does not ship: IOR (github.com/hpc/ior) and h5bench's
write and read benchmarks (github.com/hpc-io/h5bench). Builds them against the parallel HDF5
of the runtime's MPI (dynamically: a preloaded library cannot reach an `h5pcc` build), then
runs each through every user-facing command at 2 ranks and small sizes and prints a pass/fail
table. Needs downloads (or source trees given), so it is not part of scripts/test.sh.

    nice -n 15 .venv/bin/python bench/real_apps/real_apps.py                      # git clone both
    .venv/bin/python bench/real_apps/real_apps.py --ior ~/src/ior --h5bench ~/src/h5bench --nice 15
    .venv/bin/python bench/real_apps/real_apps.py --only ior --work /tmp/ra       # one application

A source is a URL (cloned with git), a source tree, or a bare git directory (its HEAD is
exported). Everything goes under --work (default /tmp/iotune-real-apps): builds, each check's
directory and log (logs/<check>.log). Exit status 0 when every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

IOR_URL = "https://github.com/hpc/ior.git"
H5BENCH_URL = "https://github.com/hpc-io/h5bench.git"
SHORT_S = 180  # one run of an application (seconds): a hang fails its check
LONG_S = 1200  # a tuning study

# settings with an effect on ext4 as well as on Lustre (striping is reported as not in effect
# on file systems without it): read back through IOR's own hint printing and the runtime's
CONFIG = """<?xml version="1.0"?>
<Parameters>
  <High_Level_IO_Library>
    <alignment> 1048576, 1048576 </alignment>
    <sieve_buf_size> 262144 </sieve_buf_size>
    <chunk_cache_bytes> 8MiB </chunk_cache_bytes>
    <fill_time> never </fill_time>
    <coll_metadata_write> true </coll_metadata_write>
  </High_Level_IO_Library>
  <Middleware_Layer>
    <cb_buffer_size> 1MiB </cb_buffer_size>
    <cb_nodes> 2 </cb_nodes>
    <cb_config_list> *:* </cb_config_list>
    <romio_cb_write> enable </romio_cb_write>
    <romio_ds_write> disable </romio_ds_write>
  </Middleware_Layer>
  <Parallel_File_System>
    <striping_factor> 4 </striping_factor>
    <striping_unit> 1MiB </striping_unit>
  </Parallel_File_System>
</Parameters>
"""

# h5bench's configuration (KEY=VALUE, as its Python driver writes it): 3 time steps of 64 Ki
# particles per rank, collective data and metadata, no compute time
H5BENCH_CFG = """IO_OPERATION={op}
MEM_PATTERN=CONTIG
FILE_PATTERN=CONTIG
TIMESTEPS=3
DELAYED_CLOSE_TIMESTEPS=0
COLLECTIVE_DATA=YES
COLLECTIVE_METADATA=YES
EMULATED_COMPUTE_TIME_PER_TIMESTEP=0 s
NUM_DIMS=1
DIM_1=65536
DIM_2=1
DIM_3=1
CSV_FILE={op}.csv
"""
# h5bench fills x, y, px, py with rand() seeded by the clock: only these compare between runs
H5BENCH_STABLE = ("id_1", "id_2", "z", "pz")


class Checks:
    """Runs commands, keeps their logs and the table of results."""

    def __init__(self, work: Path, iotune: str, mpiexec: str, nprocs: int):
        self.work, self.iotune, self.nprocs = work, iotune, nprocs
        self.mpiexec = mpiexec
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.rows: list[tuple[str, str, bool, str]] = []
        self.env = {**os.environ, "IOTUNE_KB": str(work / "kb.sqlite")}

    def launch(self, *argv: str) -> list[str]:
        return [self.mpiexec, "-n", str(self.nprocs), *argv]

    def run(self, name: str, cmd: Sequence[str], cwd: Path, timeout: float = SHORT_S,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:  # fmt: skip
        t = time.monotonic()
        # a hung job is killed with everything below it (launcher, ranks)
        proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env={**self.env, **(env or {})})  # fmt: skip
        try:
            out, err = proc.communicate(timeout=timeout)
            p = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            for pid in [*_descendants(proc.pid), proc.pid]:  # iotune may start new sessions
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            out, err = proc.communicate()
            p = subprocess.CompletedProcess(cmd, 124, out, err + f"\n[killed after {timeout:g} s]")
        with open(self.logs / f"{name}.log", "a", encoding="utf-8") as f:
            took = time.monotonic() - t
            f.write(f"$ (cd {cwd}; {' '.join(map(str, cmd))})  # {took:.1f} s, exit ")
            f.write(f"{p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}\n")
        return p

    def iot(self, name: str, args: Sequence[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
        return self.run(name, [self.iotune, *args], cwd, **kw)

    def check(self, app: str, name: str, fn: Callable[[Path], str]) -> None:
        """fn(directory) returns a detail for the table; an AssertionError fails the check."""
        d = self.work / "runs" / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        try:
            detail, ok = fn(d), True
        except AssertionError as e:
            detail, ok = str(e) or "assertion failed", False
        except Exception as e:  # noqa: BLE001 - a broken check is a failed check, reported
            detail, ok = f"{type(e).__name__}: {e}", False
        self.rows.append((app, name, ok, detail.replace("\n", " ")[:150]))
        print(f"{'PASS' if ok else 'FAIL'}  {app:8} {name:28} {self.rows[-1][3]}", flush=True)

    def table(self) -> str:
        w = max(len(r[1]) for r in self.rows)
        lines = [f"{'app':8} {'check':{w}} result  detail", f"{'-' * 8} {'-' * w} ------  ------"]
        lines += [f"{a:8} {n:{w}} {'pass' if ok else 'FAIL':6}  {d}" for a, n, ok, d in self.rows]
        return "\n".join(lines)


def _descendants(root: int) -> list[int]:
    """Every process below root (from /proc), children first found first."""
    parent = {}
    for d in Path("/proc").iterdir():
        try:
            stat = (d / "stat").read_text()
            parent[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        except (ValueError, OSError, IndexError):
            continue
    out, todo = [], [root]
    while todo:
        node = todo.pop()
        kids = [p for p, pp in parent.items() if pp == node]
        out += kids
        todo += kids
    return out


def _ok(p: subprocess.CompletedProcess, what: str) -> None:
    tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
    assert p.returncode == 0, f"{what}: exit {p.returncode}: {' | '.join(tail)}"
    assert "Traceback" not in p.stderr, f"{what}: a Python traceback"


def _sh(cmd: Sequence[str], cwd: Path, log: Path, env: dict[str, str] | None = None) -> None:
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"$ (cd {cwd}; {' '.join(map(str, cmd))})\n")
        f.flush()
        r = subprocess.run([str(c) for c in cmd], cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                           env={**os.environ, **(env or {})}, check=False)  # fmt: skip
    if r.returncode != 0:
        sys.exit(f"real_apps: {' '.join(map(str, cmd))} failed (exit {r.returncode}); see {log}")


# ----------------------------------------------------------------------------- sources, builds


def fetch(source: str, dest: Path, log: Path) -> str:
    """The source tree at dest, from a URL, a tree or a bare git directory; its version."""
    if dest.exists():
        shutil.rmtree(dest)
    src = Path(source).expanduser()
    if src.is_dir() and (src / "HEAD").is_file() and (src / "objects").is_dir():  # bare git
        dest.mkdir(parents=True)
        archive = subprocess.run(["git", "--git-dir", str(src), "archive", "HEAD"],
                                 capture_output=True, check=True).stdout  # fmt: skip
        subprocess.run(["tar", "x", "-C", str(dest)], input=archive, check=True)
        return _git_version(["git", "--git-dir", str(src)])
    if src.is_dir():
        shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns("build"))
        return _git_version(["git", "-C", str(src)]) or str(src)
    _sh(["git", "clone", "--depth", "1", source, dest], dest.parent, log)
    return _git_version(["git", "-C", str(dest)])


def _git_version(git: list[str]) -> str:
    r = subprocess.run([*git, "log", "-1", "--format=%h %cs"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def hdf5_flags(pkg: str) -> tuple[str, str]:
    """(CPPFLAGS, LDFLAGS) of the parallel HDF5's pkg-config module."""
    inc = subprocess.run(["pkg-config", "--cflags-only-I", pkg], capture_output=True, text=True,
                         check=True).stdout.strip()  # fmt: skip
    lib = subprocess.run(["pkg-config", "--libs-only-L", pkg], capture_output=True, text=True,
                         check=True).stdout.strip()  # fmt: skip
    return inc, lib


def build_ior(src: Path, cc: str, pkg: str, log: Path) -> Path:
    inc, lib = hdf5_flags(pkg)
    _sh(["./bootstrap"], src, log)
    _sh(["./configure", "--with-hdf5", "--with-mpiio", f"CC={cc}", f"CPPFLAGS={inc}",
         f"LDFLAGS={lib}"], src, log)  # fmt: skip
    _sh(["make", "-j2"], src, log)
    return src / "src" / "ior"


def build_h5bench(src: Path, cc: str, pkg: str, log: Path) -> Path:
    inc, lib = hdf5_flags(pkg)
    prefix = lib.split()[0][2:] if lib else ""  # .../hdf5/mpich: include/ and lib/ in it
    build = src / "build"
    build.mkdir(exist_ok=True)
    _sh(["cmake", "..", f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_C_FLAGS={inc}",
         f"-DCMAKE_EXE_LINKER_FLAGS={lib}"], build, log, env={"HDF5_DIR": prefix})  # fmt: skip
    _sh(["make", "-j2", "h5bench_write", "h5bench_read"], build, log)
    return build


# ----------------------------------------------------------------------------- IOR


def ior_checks(c: Checks, ior: Path) -> None:
    config = c.work / "tune.xml"
    small = ["-b", "4m", "-t", "1m", "-s", "2", "-G", "42"]

    def plain(d: Path, api: str, out: str, *extra: str) -> None:
        _ok(c.run("ior-reference", c.launch(ior, "-a", api, *small, "-o", out, "-w", "-k",
                                            *extra), d), "IOR alone")  # fmt: skip

    def run_hdf5(d: Path) -> str:
        plain(d, "HDF5", "ref.h5", "-c")
        p = c.iot("ior-run-hdf5", ["run", "--config", config, "--verbose", "--",
                                   *c.launch(ior, "-a", "HDF5", "-c", *small, "-o", "t.h5", "-w",
                                             "-r", "-W", "-R", "-k", "--hdf5.showHints")],
                  d)  # fmt: skip
        _ok(p, "iotune run")
        assert "cb_buffer_size=1048576 (in effect)" in p.stderr, "no read-back in the report"
        assert "cb_buffer_size = 1048576" in p.stdout, "IOR's own hints do not show it"
        assert "fill_time=never" in p.stderr and "alignment=1048576,1048576" in p.stderr
        assert "ERROR" not in p.stdout, "IOR's verification failed"
        h = subprocess.run(["h5diff", d / "ref.h5", d / "t.h5"], capture_output=True, text=True)
        assert h.returncode == 0, f"h5diff: {h.stdout[-300:]}"
        return "hints read back by IOR and iotune; -W -R verified; h5diff equal"

    def run_raw(api: str) -> Callable[[Path], str]:
        def fn(d: Path) -> str:
            plain(d, api, "ref.dat")
            flag = ["--mpiio.showHints"] if api == "MPIIO" else []
            p = c.iot(f"ior-run-{api.lower()}", ["run", "--config", config, "--verbose", "--",
                                                 *c.launch(ior, "-a", api, *small, "-o", "t.dat",
                                                           "-w", "-r", "-W", "-R", "-k", *flag)],
                      d)  # fmt: skip
            _ok(p, "iotune run")
            assert "ERROR" not in p.stdout, "IOR's verification failed"
            if api == "MPIIO":
                assert "romio_ds_write=disable (in effect)" in p.stderr
                assert "romio_ds_write = disable" in p.stdout, "IOR's own hints do not show it"
            assert (d / "ref.dat").read_bytes() == (d / "t.dat").read_bytes(), "data differ"
            return "-W -R verified; data equal to a run without iotune"

        return fn

    def profile_show(d: Path) -> str:
        p = c.iot("ior-profile", ["profile", "-o", "p.json", "--",
                                  *c.launch(ior, "-a", "HDF5", *small, "-o", "p.h5", "-w", "-r")],
                  d)  # fmt: skip
        _ok(p, "iotune profile")
        prof = json.loads((d / "p.json").read_text())
        want = c.nprocs * 4 * 2**20 * 2
        assert prof["io"]["bytes_written"] == want, f"written {prof['io']['bytes_written']}"
        assert prof["io"]["bytes_read"] == want, f"read {prof['io']['bytes_read']}"
        _ok(c.iot("ior-profile", ["show", "p.json"], d), "iotune show")
        return f"{want} B written and read, as IOR says"

    def tune(d: Path) -> str:
        p = c.iot("ior-tune", ["tune", "--trials", "6", "--no-progress", "--out", "study", "--",
                               *c.launch(ior, "-a", "HDF5", *small, "-o", "tt.h5", "-w", "-r")],
                  d, timeout=LONG_S)  # fmt: skip
        _ok(p, "iotune tune")
        s = json.loads((d / "study" / "summary.json").read_text())
        assert (d / "study" / "report.html").is_file(), "no report"
        assert f"each trial runs in {d}" in p.stdout, "the trials did not run where asked"
        return s["verdict"][:90]

    def tune_bad(d: Path) -> str:
        p = c.iot("ior-tune-bad", ["tune", "--trials", "6", "--no-progress", "--out", "study",
                                   "--", *c.launch(ior, "-a", "HDF5", "-b", "4m", "-t", "3m",
                                                   "-o", "bad.h5")], d)  # fmt: skip
        assert p.returncode != 0, "a failing application made a study"
        assert "Traceback" not in p.stderr, "a Python traceback"
        assert "nothing to tune" in p.stderr, "no clear message"
        assert "block size must be a multiple of transfer size" in p.stderr, "IOR's reason lost"
        return "stopped at the baseline with IOR's own message"

    def adapt(name: str, *args: str) -> Callable[[Path], str]:
        def fn(d: Path) -> str:
            p = c.iot(name, ["adapt", "-o", "a.json", "--", *c.launch(ior, *args)], d)
            _ok(p, "iotune adapt")
            assert "ERROR" not in p.stdout, "IOR's verification failed"
            phases = json.loads((d / "a.json").read_text())["adaptive"]["phases"]
            data = [x for x in phases if x["bytes"] > 0]
            assert data and data[0]["role"] == "learning", "learned from a phase without data"
            reverted = [x for x in phases if (x.get("guard") or {}).get("reverted")]
            empty = [x for x in reverted if x["bytes"] == 0]
            assert not empty, "a phase without data made the guard revert"
            roles = sorted({x["role"] for x in phases})
            return f"{len(phases)} phases ({', '.join(roles)}); -W -R verified"

        return fn

    def advise(d: Path) -> str:
        p = c.iot("ior-advise", ["advise", "--", *c.launch(ior, "-a", "HDF5", "-c", *small,
                                                            "-o", "adv.h5", "-w", "-r")],
                  d)  # fmt: skip
        _ok(p, "iotune advise")
        assert "advice for" in p.stdout
        fired = [ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith("[")]
        return "rules: " + (", ".join(fired) or "none")

    def skel(d: Path) -> str:
        return _skeleton(c, d, "ior", c.launch(ior, "-a", "HDF5", "-c", *small, "-o", "sk.h5",
                                               "-w", "-k"), "sk.h5")  # fmt: skip

    def kb_suggest(d: Path) -> str:
        p = c.iot("ior-kb-suggest", ["kb", "suggest", "--",
                                     *c.launch(ior, "-a", "HDF5", *small, "-o", "kb.h5", "-w",
                                               "-r")], d)  # fmt: skip
        _ok(p, "iotune kb suggest")
        assert p.stdout.startswith("motif "), "no motif"
        return next((ln for ln in p.stdout.splitlines() if ln.startswith(("note", "sugg"))), "")

    c.check("IOR", "run-hdf5-config", run_hdf5)
    c.check("IOR", "run-mpiio-config", run_raw("MPIIO"))
    c.check("IOR", "run-posix-config", run_raw("POSIX"))
    c.check("IOR", "profile-show", profile_show)
    c.check("IOR", "tune", tune)
    c.check("IOR", "tune-bad-arguments", tune_bad)
    c.check("IOR", "adapt-i3", adapt("ior-adapt", "-a", "HDF5", "-c", *small, "-i", "3", "-o",
                                     "ad.h5", "-w", "-r", "-W", "-R"))  # fmt: skip
    c.check("IOR", "adapt-file-per-process", adapt("ior-adapt-fpp", "-a", "MPIIO", "-F", *small,
                                                   "-i", "3", "-o", "adF", "-w", "-r", "-W",
                                                   "-R"))  # fmt: skip
    c.check("IOR", "advise", advise)
    c.check("IOR", "skel-from-profile", skel)
    c.check("IOR", "kb-suggest", kb_suggest)


# ----------------------------------------------------------------------------- h5bench


def h5bench_checks(c: Checks, build: Path) -> None:
    write, read = build / "h5bench_write", build / "h5bench_read"
    config = c.work / "tune.xml"

    def cfg(d: Path) -> None:
        (d / "write.cfg").write_text(H5BENCH_CFG.format(op="WRITE"))
        (d / "read.cfg").write_text(H5BENCH_CFG.format(op="READ") + "READ_OPTION=FULL\n")

    def run_config(d: Path) -> str:
        cfg(d)
        _ok(c.run("h5bench-reference", c.launch(write, "write.cfg", "ref.h5"), d), "h5bench")
        p = c.iot("h5bench-run", ["run", "--config", config, "--verbose", "--",
                                  *c.launch(write, "write.cfg", "t.h5")], d)  # fmt: skip
        _ok(p, "iotune run")
        assert "fill_time=never" in p.stderr and "cb_buffer_size=1048576 (in effect)" in p.stderr
        for step in range(3):
            for ds in H5BENCH_STABLE:
                obj = f"/Timestep_{step}/{ds}"
                h = subprocess.run(["h5diff", d / "ref.h5", d / "t.h5", obj, obj],
                                   capture_output=True, text=True)  # fmt: skip
                assert h.returncode == 0, f"h5diff {obj}: {h.stdout[-200:]}"
        _ok(c.run("h5bench-run", ["h5dump", "-H", "t.h5"], d), "h5dump")
        p = c.iot("h5bench-run", ["run", "--config", config, "--",
                                  *c.launch(read, "read.cfg", "t.h5")], d)  # fmt: skip
        _ok(p, "iotune run h5bench_read")
        return "settings read back; h5diff equal on " + ", ".join(H5BENCH_STABLE) + "; read ok"

    def profile_show(d: Path) -> str:
        cfg(d)
        p = c.iot("h5bench-profile", ["profile", "-o", "p.json", "--",
                                      *c.launch(write, "write.cfg", "p.h5")], d)  # fmt: skip
        _ok(p, "iotune profile")
        prof = json.loads((d / "p.json").read_text())
        want = 3 * c.nprocs * 65536 * 8 * 4  # 3 steps, 8 variables of 4 bytes per particle
        got = prof["layers"]["hdf5"]["bytes_written"]
        assert got == want, f"HDF5 bytes written {got}, h5bench writes {want}"
        _ok(c.iot("h5bench-profile", ["show", "p.json"], d), "iotune show")
        return f"{want} B through H5Dwrite, as h5bench says"

    def tune(d: Path) -> str:
        cfg(d)
        p = c.iot("h5bench-tune", ["tune", "--trials", "6", "--no-progress", "--out", "study",
                                   "--", *c.launch(write, "write.cfg", "out.h5")],
                  d, timeout=LONG_S)  # fmt: skip
        _ok(p, "iotune tune")
        s = json.loads((d / "study" / "summary.json").read_text())
        assert (d / "study" / "report.html").is_file(), "no report"
        assert (d / "out.h5").is_file(), "the application's own output is not where it runs"
        return s["verdict"][:90]

    def adapt(d: Path) -> str:
        cfg(d)
        p = c.iot("h5bench-adapt", ["adapt", "-o", "a.json", "--",
                                    *c.launch(write, "write.cfg", "ad.h5")], d)  # fmt: skip
        _ok(p, "iotune adapt")
        phases = json.loads((d / "a.json").read_text())["adaptive"]["phases"]
        return f"{len(phases)} phase(s): one file holds every time step"

    def advise(d: Path) -> str:
        cfg(d)
        p = c.iot("h5bench-advise", ["advise", "--", *c.launch(write, "write.cfg", "adv.h5")], d)
        _ok(p, "iotune advise")
        fired = [ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith("[")]
        return "rules: " + (", ".join(fired) or "none")

    def skel(d: Path) -> str:
        cfg(d)
        return _skeleton(c, d, "h5bench", c.launch(write, "write.cfg", "sk.h5"), "sk.h5")

    def kb_suggest(d: Path) -> str:
        cfg(d)
        p = c.iot("h5bench-kb-suggest", ["kb", "suggest", "--",
                                         *c.launch(write, "write.cfg", "kb.h5")], d)  # fmt: skip
        _ok(p, "iotune kb suggest")
        return next((ln for ln in p.stdout.splitlines() if ln.startswith(("note", "sugg"))), "")

    c.check("h5bench", "run-config-write-read", run_config)
    c.check("h5bench", "profile-show", profile_show)
    c.check("h5bench", "tune", tune)
    c.check("h5bench", "adapt", adapt)
    c.check("h5bench", "advise", advise)
    c.check("h5bench", "skel-from-profile", skel)
    c.check("h5bench", "kb-suggest", kb_suggest)


def _skeleton(c: Checks, d: Path, app: str, launch: list[str], h5: str) -> str:
    """A trace-mode profile, its skeleton built and run, the HDF5 structure compared."""
    name = f"{app}-skel"
    _ok(c.iot(name, ["profile", "--trace", "-o", "t.json", "--", *launch], d), "profile --trace")
    _ok(c.iot(name, ["skel", "from-profile", "t.json", "-o", "s.yaml"], d), "skel from-profile")
    (d / "out").mkdir()
    _ok(c.iot(name, ["skel", "run", "s.yaml", "-o", "skel", "--dir", "out"], d), "skel run")

    def structure(path: Path) -> list[str]:
        r = subprocess.run(["h5dump", "-p", "-H", path], capture_output=True, text=True)
        assert r.returncode == 0, f"h5dump {path}"
        return [ln for ln in r.stdout.splitlines()[1:] if "OFFSET" not in ln]

    assert structure(d / "out" / h5) == structure(d / h5), "h5dump -p -H differs"
    return "skeleton built and run; h5dump -p -H equal (offsets aside)"


# ----------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ior", default=IOR_URL, help="IOR: URL, source tree or bare git dir")
    ap.add_argument("--h5bench", default=H5BENCH_URL, help="h5bench: the same")
    ap.add_argument("--only", choices=["ior", "h5bench"], help="one application")
    ap.add_argument("--work", type=Path, default=Path("/tmp/iotune-real-apps"))
    ap.add_argument("--iotune", default=str(REPO / ".venv" / "bin" / "iotune"))
    ap.add_argument("--cc", default=None, help="default: the runtime's MPI's")
    ap.add_argument("--mpiexec", default=None, help="default: the runtime's MPI's")
    ap.add_argument(
        "--pkg",
        default=None,
        help="pkg-config module of parallel HDF5 (default: that of the runtime's MPI)",
    )
    ap.add_argument("-n", "--nprocs", type=int, default=2)
    ap.add_argument("--nice", type=int, default=0, help="lower this script's priority first")
    ap.add_argument("--no-build", action="store_true", help="reuse the builds in --work")
    args = ap.parse_args(argv)
    if args.nice:
        os.nice(args.nice)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "tune.xml").write_text(CONFIG)
    args.cc = args.cc or mpitools.mpicc()
    args.pkg = args.pkg or mpitools.hdf5_pkg()
    args.mpiexec = args.mpiexec or mpitools.mpiexec()[0]
    c = Checks(work, args.iotune, args.mpiexec, args.nprocs)
    versions = {}
    for app, source in (("ior", args.ior), ("h5bench", args.h5bench)):
        if args.only and args.only != app:
            continue
        src = work / app
        log = c.logs / f"build-{app}.log"
        if not args.no_build:
            versions[app] = fetch(source, src, log)
            print(f"real_apps: building {app} ({versions[app]}) in {src}", flush=True)
        if app == "ior":
            exe = src / "src" / "ior" if args.no_build else build_ior(src, args.cc, args.pkg, log)
            ior_checks(c, exe)
        else:
            b = src / "build" if args.no_build else build_h5bench(src, args.cc, args.pkg, log)
            h5bench_checks(c, b)
    print()
    print(c.table())
    failed = sum(not r[2] for r in c.rows)
    print(f"\n{len(c.rows) - failed} of {len(c.rows)} checks passed; versions: "
          f"{json.dumps(versions)}; logs in {c.logs}")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
