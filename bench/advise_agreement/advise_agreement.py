#!/usr/bin/env python3
"""Does `iotune advise` name what `iotune tune` finds? Per program, from a run and from a log.

For each case (the five kernels and programs nobody here wrote: a C checkpoint writer with
attributes, an h5py + mpi4py script, HDF5's own parallel example from Debian's libhdf5-doc) at
2 ranks:

1. `iotune advise --json -- mpiexec -n 2 PROGRAM ARGS` (the runtime MPI's mpiexec; a profile
   with its trace): the findings and the settings advise proposes (control file: severity
   medium and up; low ones are listed too);
2. with `--darshan-lib LIB` (a Darshan runtime's libdarshan.so), the same program run once
   under Darshan, and `iotune advise --json LOG`;
3. tune's verdict: the settings of `best.xml` of a study. For the kernels these are the
   project's recorded studies (bench/minimal/minimal.md, LAB-NOTES "What tuning can gain"),
   named in REFERENCE with where they come from; for the other programs a small study is run
   here with `--tune` (`iotune tune --trials N`, its minimal `best.xml`), or read from
   `--verdicts FILE` (the JSON this script wrote before).

A case "names best.xml" when advise proposes at least one of the parameters `best.xml` holds
(VORPAL-IO's studies found two collective-buffering settings, either counts); a case whose
`best.xml` is empty (the defaults won) agrees when advise's control file is empty.

Raw results: bench/advise_agreement/advise_agreement.json (per case: command, advise's findings and
settings from the run and from the log, the verdict and its source); summary on stdout.

Usage: nice -n 10 .venv/bin/python bench/advise_agreement/advise_agreement.py [--cases a,b] [--tune]
       [--trials 10] [--darshan-lib /opt/darshan/lib/libdarshan.so] [--out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench" / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

REAL = REPO / "tests" / "data" / "real"
PH5 = Path("/usr/share/doc/libhdf5-doc/examples/ph5example.c.gz")
TIMEOUT = 600
HDF5_LIB = Path(f"/usr/lib/x86_64-linux-gnu/hdf5/{mpitools.runtime_build().family}/libhdf5.so")

# case: (program kind, program, arguments)
CASES = {
    "vpicio": ("kernel", "vpicio", ["--particles", "262144"]),
    "vorpalio-write": ("kernel", "vorpalio", ["--block", "64,64,32"]),
    "vorpalio-read": ("kernel", "vorpalio", ["--block", "64,64,32", "--read"]),
    "gcrmio-write": ("kernel", "gcrmio", ["--cells", "16384", "--levels", "8",
                                          "--chunk-cells", "1024"]),
    "gcrmio-read": ("kernel", "gcrmio", ["--cells", "70000", "--levels", "2",
                                         "--chunk-cells", "70000", "--read"]),
    "haccio": ("kernel", "haccio", ["--particles", "262144"]),
    "iorio-hdf5": ("kernel", "iorio", ["--api", "hdf5", "--block", "4M", "--transfer", "1M",
                                       "--segments", "2"]),
    # 64 MiB per dataset, 2 fields, 2 files (oversize: 1 file of 8 x 64 MiB per field)
    "checkpoint-chunked": ("c", "checkpoint", ["--rows", "2048", "--cols", "4096"]),
    "checkpoint-deflate": ("c", "checkpoint", ["--rows", "2048", "--cols", "4096",
                                               "--deflate", "4"]),
    "checkpoint-oversize": ("c", "checkpoint", ["--rows", "1024", "--cols", "4096", "--layout",
                                                "contiguous", "--fill", "0", "--oversize", "8",
                                                "--steps", "1"]),
    "h5py-steps": ("python", "h5py_steps.py", ["--chunks", "--rows", "2048", "--cols", "4096",
                                               "--steps", "2"]),
    "ph5example": ("ph5", "ph5example", ["-c"]),
}  # fmt: skip

# tune's verdicts recorded by the project's studies (the parameters of best.xml)
REFERENCE = {
    "vpicio": ([], "LAB-NOTES 'What tuning can gain': nothing beyond noise"),
    "vorpalio-write": (["romio_cb_write", "cb_buffer_size"],
                       "bench/minimal/minimal.md best.xml romio_cb_write=disable; LAB-NOTES "
                       "cb_buffer_size=1M 1.45x (both collective buffering)"),
    "vorpalio-read": (["romio_cb_read"], "LAB-NOTES: romio_cb_read=disable 1.5x"),
    "gcrmio-write": (["fill_time"], "bench/minimal/minimal.md best.xml fill_time=never"),
    "gcrmio-read": (["chunk_cache_bytes"], "LAB-NOTES: the chunk cache (~9x with chunks above "
                                           "the 1 MiB default)"),
}  # fmt: skip


def build_c(name: str, source: Path, work: Path) -> Path:
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", mpitools.hdf5_pkg()], check=True,
                           capture_output=True, text=True).stdout.split()  # fmt: skip
    exe = work / name
    subprocess.run([mpitools.mpicc(), "-O2", "-o", str(exe), str(source), *flags], check=True)
    return exe


def program(case: str, work: Path) -> list[str] | None:
    kind, prog, args = CASES[case]
    if kind == "kernel":
        kdir = Path(os.environ.get("IOTUNE_KERNELS_DIR", REPO / "build" / "kernels"))
        return [str(kdir / prog), *args]
    if kind == "c":
        return [str(build_c(prog, REAL / f"{prog}.c", work)), *args]
    if kind == "python":
        probe = "import h5py, mpi4py; assert h5py.get_config().mpi"
        if subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode:
            return None
        return [sys.executable, str(REAL / prog), *args]
    if kind == "ph5":
        if not PH5.exists():
            return None
        src = work / "ph5example.c"
        src.write_bytes(gzip.decompress(PH5.read_bytes()))
        return [str(build_c(prog, src, work)), *args]
    raise ValueError(kind)


def iotune(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iotune", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=TIMEOUT)  # fmt: skip


def summarise(advice: dict) -> dict:
    return {
        "findings": [{"code": f["code"], "severity": f["severity"], "group": f["group"],
                      "settings": f["settings"], "in_control_file": f["in_control_file"]}
                     for f in advice["findings"]],
        "control_file": sorted({s["name"] for s in advice["control_file"]}),
        "proposed": sorted({k for f in advice["findings"] for k in f["settings"]}),
        "undecided": [u["code"] + ": " + ",".join(u["missing"]) for u in advice["undecided"]],
        "groups": [g["pattern"] for g in advice["groups"]],
    }  # fmt: skip


def advise_run(cmd: list[str], work: Path) -> dict:
    run = work / "run"
    run.mkdir()
    r = iotune("advise", "--json", "-o", "-", "--profile-out", str(run / "p.json"), "--",
               *mpitools.mpiexec(2), *cmd, cwd=run)  # fmt: skip
    if r.returncode:
        return {"error": r.stderr[-800:]}
    text = r.stdout  # the program's own output comes first
    start = text.rindex("{", 0, text.index('"schema": "iotune-advice"'))
    return summarise(json.loads(text[start:]))


def advise_log(cmd: list[str], work: Path, lib: str) -> dict:
    run = work / "darshan"
    run.mkdir()
    env = dict(os.environ)
    for k in ("IOTUNE_CONFIG", "IOTUNE_PROFILE", "LD_PRELOAD"):
        env.pop(k, None)
    # Darshan's HDF5 module needs libhdf5 loaded at start (a Python interpreter loads it late);
    # Darshan first, so that its wrappers come before HDF5's own symbols
    preload = f"{lib} {HDF5_LIB}" if HDF5_LIB.exists() else lib
    r = subprocess.run([*mpitools.mpiexec(2), *mpitools.env_flags("LD_PRELOAD", preload),
                        *mpitools.env_flags("DARSHAN_LOGDIR", str(run)), *cmd], cwd=run, env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
    logs = list(run.glob("*.darshan"))
    if r.returncode or len(logs) != 1:
        return {"error": f"exit {r.returncode}, {len(logs)} logs: {r.stderr[-500:]}"}
    log = logs[0]
    r = iotune("advise", "--json", "-o", "-", str(log), cwd=run)
    if r.returncode:
        return {"error": r.stderr[-800:]}
    return summarise(json.loads(r.stdout))


def verdict_by_tune(case: str, cmd: list[str], work: Path, trials: int) -> tuple[list, str]:
    out = work / "study"
    r = iotune("tune", "--trials", str(trials), "--no-kb", "--no-progress", "--isolate",
               "--verify-pairs", "10", "--out", str(out), "-n", "2", "--", *cmd,
               cwd=work)  # fmt: skip
    best = out / "best.xml"
    if not best.exists():
        return [], f"tune wrote no best.xml (exit {r.returncode}): {r.stdout[-300:]}"
    from iotune import controlfile

    parsed = controlfile.parse_file(best)
    names = sorted({s.name for s in parsed.settings})
    return names, f"iotune tune --trials {trials} here: best.xml " + (
        ", ".join(f"{s.name}={s.value}" for s in parsed.settings) or "(the defaults)"
    )


def agrees(verdict: list[str], side: dict, key: str = "proposed") -> bool | None:
    """key: "proposed" (any finding's settings, low ones too) or "control_file"."""
    if key not in side:
        return None
    if not verdict:
        return not side["control_file"]
    return bool(set(verdict) & set(side[key]))


def add_agreement(row: dict) -> None:
    if "verdict" not in row:
        return
    for what in ("run", "log"):
        side = row.get(what, {})
        row[f"names_best_{what}"] = agrees(row["verdict"], side)
        row[f"control_best_{what}"] = agrees(row["verdict"], side, "control_file")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--tune", action="store_true", help="run a study for cases without one")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--darshan-lib", help="libdarshan.so of a Darshan runtime")
    ap.add_argument("--verdicts", help="a previous output: reuse its verdicts")
    ap.add_argument("--out", default=str(HERE / "advise_agreement.json"))
    ap.add_argument("--table", metavar="JSON", help="print the table of a previous output")
    args = ap.parse_args()
    if args.table:
        rows = json.loads(Path(args.table).read_text())["cases"]
        for row in rows:
            add_agreement(row)
        print_table(rows)
        return 0
    old = {}
    if args.verdicts:
        old = {c["case"]: c for c in json.loads(Path(args.verdicts).read_text())["cases"]}
    rows = []
    for case in args.cases.split(","):
        work = Path(tempfile.mkdtemp(prefix=f"agree-{case}-"))
        try:
            cmd = program(case, work)
            if cmd is None:
                rows.append({"case": case, "skipped": "program not available here"})
                continue
            row = {"case": case, "command": [*mpitools.mpiexec(2), *cmd]}
            t0 = time.time()
            row["run"] = advise_run(cmd, work)
            if args.darshan_lib:
                row["log"] = advise_log(cmd, work, args.darshan_lib)
            if case in REFERENCE:
                row["verdict"], row["verdict_source"] = REFERENCE[case]
            elif case in old and "verdict" in old[case]:
                row["verdict"], row["verdict_source"] = (old[case]["verdict"],
                                                         old[case]["verdict_source"])  # fmt: skip
            elif args.tune:
                row["verdict"], row["verdict_source"] = verdict_by_tune(case, cmd, work,
                                                                        args.trials)  # fmt: skip
            add_agreement(row)
            row["seconds"] = round(time.time() - t0, 1)
            rows.append(row)
            write(args.out, rows)
            print(json.dumps({k: row.get(k) for k in ("case", "verdict", "names_best_run",
                                                      "names_best_log")}), flush=True)  # fmt: skip
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            rows.append({"case": case, "error": str(e)[-800:]})
            write(args.out, rows)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print_table(rows)
    return 0


def write(out: str, rows: list[dict]) -> None:
    """The results so far (written after each case: a long run keeps what it measured)."""
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": os.uname().nodename,
            "load": os.getloadavg()}  # fmt: skip
    Path(out).write_text(json.dumps({"meta": meta, "cases": rows}, indent=1) + "\n")


def print_table(rows: list[dict]) -> None:
    print("| case | tune's best.xml | advise (run) | advise (Darshan log) | names it: run / log "
          "| in its control file: run / log |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in rows:
        if "skipped" in r or "error" in r:
            print(f"| {r['case']} | {r.get('skipped') or 'error'} | | | | |")
            continue

        def side(s):
            if not s:
                return "-"
            if "error" in s:
                return "error"
            low = sorted(set(s["proposed"]) - set(s["control_file"]))
            return (", ".join(s["control_file"]) or "none") + (f" (low: {', '.join(low)})"
                                                                if low else "")  # fmt: skip

        v = r.get("verdict")
        v = "not measured" if v is None else ", ".join(v) or "defaults"
        yes = {True: "yes", False: "**no**", None: "-"}
        print(f"| {r['case']} | {v} | {side(r['run'])} | {side(r.get('log'))} | "
              f"{yes[r.get('names_best_run')]} / {yes[r.get('names_best_log')]} | "
              f"{yes[r.get('control_best_run')]} / {yes[r.get('control_best_log')]} |")  # fmt: skip
    for what in ("run", "log"):
        for key, how in (("names_best", "names"), ("control_best", "puts in its control file")):
            named = [r[f"{key}_{what}"] for r in rows if r.get("verdict")
                     and r.get(f"{key}_{what}") is not None]  # fmt: skip
            if named:
                print(f"from a {what}: advise {how} a setting of best.xml in {sum(named)} of "
                      f"{len(named)} cases where tune recommends something")  # fmt: skip
        quiet = [r[f"names_best_{what}"] for r in rows if r.get("verdict") == []
                 and r.get(f"names_best_{what}") is not None]  # fmt: skip
        if quiet:
            print(f"from a {what}: no control file in {sum(quiet)} of {len(quiet)} cases where "
                  "the defaults won")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
