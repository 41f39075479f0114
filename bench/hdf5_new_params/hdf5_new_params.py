#!/usr/bin/env python3
"""Each new HDF5 parameter's effect (issue 27), on both HDF5 generations, A/B against defaults.

Cases (`--cases`):
  wheel    many_small.py (beside this script: many small datasets in many groups, with
           attributes, written then read back) run by the h5py of pip's wheel, HDF5 2.0 serial
           (`--wheel-python`, default $IOTUNE_H5WHEEL_PYTHON, else .venv-h5wheel/bin/python of
           the checkout, made by scripts/install.sh; left out, said, when there is none);
  debian   the same program run serially by the h5py built on Debian's parallel HDF5 1.10.8
           (this interpreter's h5py): the serial-only settings are refused there, and said so;
  wheel_attrs, debian_attrs
           many_attrs.py (beside this script: a few scans, each a group with a small dataset and
           thousands of attributes, written then read back by name) by the same two h5py: the
           file format bounds (libver_low) against h5py's own `earliest`;
  gcrmio   the GCRM-IO kernel (chunked, five datasets per step, several steps) on 2 ranks with
           Debian's parallel HDF5 1.10.8 through MPICH (the runtime's own mpiexec).
Each case has its configurations: `default` (the runtime preloaded with only the serial
opt-in, `serial_files`, for the serial cases, so that both sides carry the preload) and one per
parameter (page_buffer_size with file_space_strategy=page, as HDF5 requires). The program is
never changed: the settings reach it through LD_PRELOAD and IOTUNE_CONFIG only.

Measurement (shared/LAB-NOTES.md): `--rounds` rounds; in each, every configuration in a fresh
random order, each measured run right after a discarded identical warm-up run. The time is the
program's own (write and read phases, open to close: its IOTUNE_RESULT lines). Per
configuration: median, min, max, the ratio of medians default/config (> 1: faster) and the
one-sided paired sign-flip permutation test of `iotune tune`'s verification
(iotune.search.noise.paired_test) in each direction; a win is p < 0.05 / (number of
configurations of the case) (Bonferroni). Before the rounds, one run per configuration with a
profile says what the runtime did (applied, withdrawn and why, notes) and its output file is
compared with the default's (h5diff for 1.10 files; for the wheel's files, which HDF5 1.10's
h5diff may not read, every object, value and attribute through the wheel's h5py).
`uptime` before and after. Results in bench/README.md, raw numbers in the JSON of `--out`.

usage: hdf5_new_params.py [--cases wheel,debian,gcrmio,wheel_attrs,debian_attrs] [--rounds N]
                          [--smoke] [--out F.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(HERE.parent / "common"))
PROGRAM = HERE / "many_small.py"
PROGRAM_ATTRS = HERE / "many_attrs.py"
# pip's h5py (scripts/install.sh makes .venv-h5wheel), as tests/python/test_h5py_wheel.py finds it
WHEEL_PYTHON = os.environ.get("IOTUNE_H5WHEEL_PYTHON", str(REPO / ".venv-h5wheel/bin/python"))

SERIAL = {
    "default": {},
    "file_space_strategy=page": {"file_space_strategy": "page"},
    "file_space_page_size=64K": {"file_space_strategy": "page", "file_space_page_size": "65536"},
    "page_buffer_size=1M": {"file_space_strategy": "page", "page_buffer_size": "1048576"},
    "libver_low=v110": {"libver_low": "v110"},
    "libver_low=latest": {"libver_low": "latest"},
    "evict_on_close": {"evict_on_close": "true"},
    "mdc_image": {"mdc_image": "true"},
    "filter_partial_chunks=false": {"filter_partial_chunks": "false"},
}
ATTRS = {
    "default": {},
    "libver_low=v18": {"libver_low": "v18"},
    "libver_low=v110": {"libver_low": "v110"},
    "libver_low=latest": {"libver_low": "latest"},
}
PARALLEL = {
    "default": {},
    "file_space_strategy=page": {"file_space_strategy": "page"},
    "libver_low=latest": {"libver_low": "latest"},
    "mpio_chunk_opt=one_io": {"mpio_chunk_opt": "one_io"},
    "mpio_chunk_opt=multi_io": {"mpio_chunk_opt": "multi_io"},
    "mpio_chunk_opt_num=64": {"mpio_chunk_opt_num": "64"},
    "mpio_chunk_opt_ratio=100": {"mpio_chunk_opt_num": "64", "mpio_chunk_opt_ratio": "100"},
    "page_buffer_size=1M": {"file_space_strategy": "page", "page_buffer_size": "1048576"},
    "evict_on_close": {"evict_on_close": "true"},
    "mdc_image": {"mdc_image": "true"},
}


def control_file(settings: dict[str, str], serial: bool) -> str:
    every = ({"serial_files": "true"} if serial else {}) | settings
    body = "".join(f"<{k}>{v}</{k}>" for k, v in every.items())
    return f"<Parameters><High_Level_IO_Library>{body}</High_Level_IO_Library></Parameters>\n"


def known(settings: dict[str, str]) -> bool:
    """Whether every setting is in this checkout's registry (a parameter added later is not)."""
    from iotune import params

    return all(params.find(k) is not None for k in settings)


def command(case: str, work: Path, a: argparse.Namespace) -> tuple[list[str], Path]:
    out = work / "out.h5"
    if case == "gcrmio":
        import mpitools

        kernels = Path(os.environ.get("IOTUNE_KERNELS_DIR", REPO / "build" / "kernels"))
        return [*mpitools.mpiexec(2), str(kernels / "gcrmio"), *a.gcrm_args.split(),
                "--file", str(out)], out  # fmt: skip
    python = a.wheel_python if case.startswith("wheel") else sys.executable
    if case.endswith("_attrs"):
        return [python, str(PROGRAM_ATTRS), str(out), *a.attrs_args.split()], out
    return [python, str(PROGRAM), str(out), *a.small_args.split()], out


def run(case: str, cfg: Path, work: Path, a: argparse.Namespace, profile: Path | None = None):
    """One run of the case's program with the control file cfg: {phase: seconds}."""
    cmd, out = command(case, work, a)
    env = dict(os.environ, LD_PRELOAD=a.lib, IOTUNE_CONFIG=str(cfg))
    env.pop("IOTUNE_PROFILE", None)
    if profile:
        env["IOTUNE_PROFILE"] = str(profile)
    if case == "gcrmio":
        import mpitools

        flags = [*mpitools.env_flags("LD_PRELOAD", a.lib),
                 *mpitools.env_flags("IOTUNE_CONFIG", str(cfg))]  # fmt: skip
        if profile:
            flags += mpitools.env_flags("IOTUNE_PROFILE", str(profile))
        cmd = [*cmd[:3], *flags, *cmd[3:]]
    if out.exists():
        out.unlink()
    p = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{case}: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    phases = {}
    for line in p.stdout.splitlines():
        if line.startswith("IOTUNE_RESULT "):
            r = json.loads(line.split(" ", 1)[1])
            phases[r["phase"]] = r["total_s"]
    return phases, p.stderr


def what_happened(profile: Path) -> dict:
    """The runtime's account of the data file: applied, withdrawn (with why) and notes."""
    prof = json.loads(profile.read_text())
    files = [f for f in prof.get("files", []) if str(f.get("name", "")).endswith("out.h5")]
    out = {"hdf5_library": prof.get("hdf5_library"), "applied": {}, "withdrawn": {}, "notes": []}
    for f in files:
        out["applied"].update((f.get("applied") or {}).get("hdf5") or {})
        for w in f.get("withdrawn") or []:
            out["withdrawn"][w.get("setting") or w.get("name")] = w.get("reason")
        out["notes"] += [n for n in (f.get("hdf5_notes") or f.get("notes") or [])
                         if n not in out["notes"]]  # fmt: skip
    return out


COMPARE = """
import sys, h5py, numpy as np
def walk(a, b, path):
    assert sorted(a.attrs) == sorted(b.attrs), path
    for k in a.attrs:
        assert np.array_equal(np.asarray(a.attrs[k]), np.asarray(b.attrs[k])), (path, k)
    if isinstance(a, h5py.Dataset):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert np.array_equal(a[()], b[()]), path
        return 1
    assert sorted(a) == sorted(b), path
    return sum(walk(a[k], b[k], path + '/' + k) for k in a)
with h5py.File(sys.argv[1], 'r') as a, h5py.File(sys.argv[2], 'r') as b:
    print(walk(a, b, ''))
"""


def same_output(case: str, ref: Path, other: Path, a: argparse.Namespace) -> str:
    """'equal' or what differs (h5diff, or the wheel's h5py for 2.0 files; h5py too for the
    files with thousands of attributes on one object, which 1.10's h5diff takes minutes on)."""
    if case.startswith("wheel") or case.endswith("_attrs"):
        python = a.wheel_python if case.startswith("wheel") else sys.executable
        p = subprocess.run([python, "-c", COMPARE, str(ref), str(other)],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
        return f"equal ({p.stdout.strip()} datasets, h5py)" if p.returncode == 0 else (
            "DIFFERENT: " + p.stderr.strip()[-300:])  # fmt: skip
    p = subprocess.run(["h5diff", str(ref), str(other)], capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    return "equal (h5diff)" if p.returncode == 0 else "DIFFERENT: " + p.stdout[-300:]


def stats(base: list[float], times: list[float], n_configs: int) -> dict:
    from iotune.search import noise

    mb, mt = statistics.median(base), statistics.median(times)
    faster = noise.paired_test(base, times, maximize=False)
    slower = noise.paired_test(times, base, maximize=False)
    level = 0.05 / max(1, n_configs)
    verdict = "wins" if faster < level else "loses" if slower < level else "no difference shown"
    return {
        "median_s": mt,
        "min_s": min(times),
        "max_s": max(times),
        "speedup": mb / mt,
        "p_faster": faster,
        "p_slower": slower,
        "level": level,
        "verdict": verdict,
    }


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run_case(case: str, a: argparse.Namespace, root: Path) -> dict:
    serial = case != "gcrmio"
    every = ATTRS if case.endswith("_attrs") else SERIAL if serial else PARALLEL
    configs = {k: v for k, v in every.items() if known(v)}
    cfgs, works = {}, {}
    for name, settings in configs.items():
        works[name] = root / case / name.replace("=", "_")
        works[name].mkdir(parents=True)
        cfgs[name] = works[name] / "c.xml"
        cfgs[name].write_text(control_file(settings, serial))
    result: dict = {"configs": {}, "uptime_before": uptime()}
    for name in configs:  # what the runtime did, and the output, outside the timing
        prof = works[name] / "profile.json"
        _, stderr = run(case, cfgs[name], works[name], a, profile=prof)
        done = what_happened(prof)
        done["said"] = [ln for ln in stderr.splitlines() if ln.startswith("iotune:")][:6]
        done["settings"] = configs[name]
        result["configs"][name] = done
        if name != "default":
            _, ref = command(case, works["default"], a)
            _, out = command(case, works[name], a)
            done["output"] = same_output(case, ref, out, a)
        shutil.copy(command(case, works[name], a)[1], works[name] / "kept.h5")
    times: dict[str, dict[str, list[float]]] = {n: {} for n in configs}
    rng = random.Random(a.seed)
    start = time.monotonic()
    for done in range(a.rounds):
        spent = time.monotonic() - start
        if done >= 5 and spent / done * (done + 1) > a.budget_s:
            break  # the next round would overrun the budget (a locked run stays short)
        order = list(configs)
        rng.shuffle(order)
        for name in order:
            if a.warmup:
                run(case, cfgs[name], works[name], a)
            phases, _ = run(case, cfgs[name], works[name], a)
            for ph, s in [*phases.items(), ("total", sum(phases.values()))]:
                times[name].setdefault(ph, []).append(s)
        # the rounds so far, kept should the run be stopped (a locked run's timeout)
        Path(f"{a.out}.{case}.partial").write_text(json.dumps({**result, "times": times}) + "\n")
    result["uptime_after"] = uptime()
    result["rounds_done"] = len(times["default"].get("total", []))
    result["times"] = times
    n = len(configs) - 1
    for name in configs:
        result["configs"][name]["stats"] = {
            ph: stats(times["default"][ph], times[name][ph], n) for ph in times["default"]
        }
    return result


def table(results: dict) -> str:
    lines = ["| case | configuration | HDF5 | runtime | output | total s (median) | default/"
             "config | p faster | p slower | verdict |", "|" + "---|" * 10]  # fmt: skip
    for case, r in results["cases"].items():
        for name, c in r["configs"].items():
            st = c["stats"]["total"]
            lib = c.get("hdf5_library") or {}
            ran = ("withdrawn: " + "; ".join(f"{k}" for k in c["withdrawn"])) if c[
                "withdrawn"] else ("applied" if c["applied"] else "-")  # fmt: skip
            lines.append(
                f"| {case} | {name} | {lib.get('version', '?')}"
                f"{' parallel' if lib.get('parallel') else ''} | {ran} | "
                f"{c.get('output', 'reference')} | {st['median_s']:.3f} | {st['speedup']:.3f} | "
                f"{st['p_faster']:.4f} | {st['p_slower']:.4f} | "
                f"{'-' if name == 'default' else st['verdict']} |"
            )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="wheel,debian,gcrmio,wheel_attrs,debian_attrs")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--no-warmup", dest="warmup", action="store_false")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument(
        "--budget-s",
        type=float,
        default=540,
        help="stop after the round that would overrun this (at least 5 rounds)",
    )
    ap.add_argument("--small-args", default="--groups 100")
    ap.add_argument("--attrs-args", default="--scans 4 --attrs 3000")
    ap.add_argument("--gcrm-args", default="--cells 4096 --levels 25 --chunk-cells 256 "
                    "--iterations 4")  # fmt: skip
    ap.add_argument("--wheel-python", default=WHEEL_PYTHON)
    ap.add_argument(
        "--lib", default=os.environ.get("IOTUNE_LIB", str(REPO / "build/runtime/libiotune.so"))
    )
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, 1 round, no warm-up")
    ap.add_argument("--out", default="hdf5_new_params.json")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.warmup = 1, False
        a.small_args = "--groups 3 --arrays 2 --signal 100"
        a.attrs_args = "--scans 2 --attrs 20 --frames 4"
        a.gcrm_args = "--cells 256 --levels 2 --chunk-cells 64 --iterations 1"
    cases = [c for c in a.cases.split(",") if c]
    if not Path(a.wheel_python).exists():
        print(f"no pip h5py wheel venv at {a.wheel_python}: the wheel cases are left out")
        cases = [c for c in cases if not c.startswith("wheel")]
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    results = {"machine": platform.node(), "command": sys.argv, "rounds": a.rounds,
               "warmup": a.warmup, "small_args": a.small_args, "attrs_args": a.attrs_args,
               "gcrm_args": a.gcrm_args,
               "started": started, "cases": {}}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="hdf5_new_params.") as tmp:
        for case in cases:
            results["cases"][case] = run_case(case, a, Path(tmp))
    Path(a.out).write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
