#!/usr/bin/env python3
"""The runtime's adaptive mode against the same runtime without it, and against the setting
`iotune tune` recommended for the kernel, phase by phase.

Each case runs a kernel with recurring phases under mpiexec (2 ranks) with the runtime
preloaded and capture on, without (baseline), with IOTUNE_MODE=adaptive, and (where a study of
the kernel exists) with a control file of the study's recommended settings (tuned) and with
the adaptive mode reading a knowledge base that holds them (adapt-kb: an export of one entry,
the study's settings under the signature of one profiled run of the same command), in a
shuffled order per round, each measured run right after a discarded identical warm-up run
(LAB-NOTES' noise section). The tuned settings are read from the study records that
bench/minimal/minimal.py keeps (bench/minimal/minimal-<kernel>.json, `study.recommended`).
Each run writes a profile: the per-file time (`files[].time_s.max`, the slowest rank's time
in the file's I/O calls) is a phase's time; the adaptive profile also gives
the rules applied and the overhead split (prediction, extraction, optimisation).

Per case and phase: median time of each, the ratio of medians (speedup = baseline / adaptive);
for the whole run (the profile's io.time_s): medians, min, max, the median of the paired
per-round ratios and a paired sign-flip permutation test on the log ratios (exact for up to 16
rounds), two-sided, for adaptive and for tuned against the baseline; the share of the tuned
setting's gain the adaptive mode reaches (time saved, on the medians); overhead as a share of
the adaptive run's I/O time.

Raw rows go to bench/adapt_phases/adapt_phases.csv (appended as measured), the machine and
commands to bench/adapt_phases/adapt_phases-meta.json, the summary to
bench/adapt_phases/adapt_phases.txt.

Usage: nice -n 10 .venv/bin/python bench/adapt_phases/adapt_phases.py [--rounds 6]
         [--cases iorio-shared,...] [--configs base,adapt,tuned] [--sync] [--warmup 1] [--name STEM]
       .venv/bin/python bench/adapt_phases/adapt_phases.py --study --sync
         --cases iorio-shared-big,...
         (a short `iotune tune` study of each case's command: its tuned reference)
       .venv/bin/python bench/adapt_phases/adapt_phases.py --summary-only --cases ... --name STEM
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
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

from iotune import controlfile, paths, trial

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

sys.path.insert(0, str(HERE.parent / "freed_memory"))
import freed_memory  # noqa: E402

STEPS = 7
CASES = {
    # IOR-style, one new shared HDF5 file per step, collective transfers in order
    "iorio-shared": ("iorio", ["--api", "hdf5", "--mode", "collective", "--block", "2M",
                               "--transfer", "512K", "--segments", "4", "--steps", str(STEPS)]),
    # IOR-style, a file per process per step through MPI-IO, independent
    "iorio-fpp": ("iorio", ["--api", "mpiio", "--layout", "fpp", "--block", "2M", "--transfer",
                            "512K", "--segments", "4", "--steps", str(STEPS)]),
    # 7 iterations in one file: one phase (nothing recurs), so only the overhead shows
    "vorpal": ("vorpalio", ["--block", "100,100,60", "--steps", str(STEPS)]),
    "gcrm": ("gcrmio", ["--cells", "16384", "--iterations", str(STEPS)]),
    # 7 time steps, each in its own file (as the codes write a plot file per step): recurring
    "vorpal-steps": ("vorpalio", ["--block", "100,100,60", "--steps", str(STEPS),
                                  "--file-per-step"]),
    "gcrm-steps": ("gcrmio", ["--cells", "16384", "--iterations", str(STEPS),
                              "--file-per-step"]),
}  # fmt: skip
# The same four patterns at sizes where one phase takes ~0.3-1 s on this machine (the smaller
# ones above take 20-60 ms: fixed noise and the adaptive mode's fixed costs were large shares)
CASES.update({
    "iorio-shared-big": ("iorio", ["--api", "hdf5", "--mode", "collective", "--block", "16M",
                                   "--transfer", "4M", "--segments", "4", "--steps",
                                   str(STEPS)]),
    "iorio-fpp-big": ("iorio", ["--api", "mpiio", "--layout", "fpp", "--block", "16M",
                                "--transfer", "4M", "--segments", "4", "--steps",
                                str(STEPS)]),
    "vorpal-steps-big": ("vorpalio", ["--block", "160,160,100", "--steps", str(STEPS),
                                      "--file-per-step"]),
    # VORPAL-IO's volume with pieces 16x longer (runs of 2560 doubles, 20 KiB, not 1.25 KiB):
    # does romio_cb_write=disable's gain depend on the contiguous piece size (a rule's question)?
    "vorpal-steps-wide": ("vorpalio", ["--block", "2560,10,100", "--steps", str(STEPS),
                                       "--file-per-step"]),
    "gcrm-steps-big": ("gcrmio", ["--cells", "65536", "--iterations", str(STEPS),
                                  "--file-per-step"]),
})  # fmt: skip
DEFAULT_CASES = ["iorio-shared-big", "iorio-fpp-big", "vorpal-steps-big", "gcrm-steps-big"]
CONFIGS = ("base", "adapt", "tuned", "adapt-kb")
FIELDS = ["case", "round", "order", "config", "file", "time_s", "bytes", "run_io_s",
          "wall_s", "rules", "reverted", "prediction_s", "extraction_s", "optimisation_s",
          "wait_s", "status"]  # fmt: skip
TIMEOUT = 300


def study_record(case: str) -> Path:
    return HERE / f"adapt_phases-tune-{case}.json"


def tuned_reference(case: str) -> dict | None:
    """The settings `iotune tune` recommended for the case: a study of the case's own command
    (`--study`, bench/adapt_phases/adapt_phases-tune-<case>.json), else bench/minimal/minimal.py's
    study of the
    kernel (bench/minimal/minimal-<kernel>.json, `study.recommended`); None without one. Returns
    {"settings", "source", "verdict"}; settings are {} when the study found no significant
    gain (then there is no tuned gain to share)."""
    own = study_record(case)
    if own.exists():
        rec = json.loads(own.read_text())
        return {"settings": rec["control"], "source": own.name, "verdict": rec["verdict"]}
    kernel = CASES[case][0]
    rec = HERE.parent / "minimal" / f"minimal-{kernel}.json"
    if not rec.exists():
        return None
    study = json.loads(rec.read_text())["study"]
    return {"settings": study["recommended"] or {}, "source": rec.name,
            "verdict": study["verdict"]}  # fmt: skip


def tuned_settings(case: str) -> dict | None:
    ref = tuned_reference(case)
    return (ref or {}).get("settings") or None


def run_study(case: str, trials: int, verify_pairs: int, sync: bool) -> dict:
    """A short real `iotune tune` study of the case's command (2 ranks, each trial in a scratch
    directory; --warmup 1 in the final phases; --sync as the measurement uses), kept as the
    case's tuned reference."""
    from iotune.search import switches

    name, kargs = CASES[case]
    app = [str(paths.find_kernel(name)), *kargs]
    opts = ["--trials", str(trials), "--warmup", "1", "--verify-pairs", str(verify_pairs),
            "--isolate", "-n", "2", *(["--sync"] if sync else [])]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="adapt-study-") as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "iotune.tune_cli", *opts, "--study", f"adapt-{case}",
               "--out", str(out), "--no-progress", "--", *app]  # fmt: skip
        t0 = time.time()
        load = os.getloadavg()
        subprocess.run(cmd, check=True, cwd=tmp, timeout=1800)
        summary = json.loads((out / "summary.json").read_text())
    rec = {
        "case": case,
        "command": ["iotune", "tune", *opts, "--", name, *kargs],
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t0)),
        "seconds": round(time.time() - t0, 1),
        "load_average_start": load, "load_average_end": os.getloadavg(),
        "machine": platform.platform(),
        "verdict": summary["verdict"], "final": summary["final"],
        "best_settings": summary["best_settings"], "minimal": summary["minimal"],
        "recommended": summary["recommended"],
        # what best.xml holds: the recommendation with the switches it needs
        "control": switches.apply(summary["recommended"], summary.get("switched_on")),
    }  # fmt: skip
    study_record(case).write_text(json.dumps(rec, indent=1) + "\n")
    print(rec["verdict"], rec["recommended"], flush=True)
    return rec


def clear(d: Path) -> None:
    for f in d.iterdir():
        shutil.rmtree(f) if f.is_dir() else f.unlink()


def make_kb(kernel: Path, args: list[str], cwd: Path, settings: dict, out: Path) -> Path:
    """An exported knowledge base of one entry, as a site would have it: the study's
    recommended settings under the motif signature of this command (one profiled, traced run,
    as `iotune tune` files a study; iotune.kb.signature)."""
    from iotune.kb import signature, store

    env = dict(os.environ, LD_PRELOAD=str(paths.find_library()), IOTUNE_TRACE="1",
               IOTUNE_PROFILE=str(cwd / "p.json"))  # fmt: skip
    for key in ("IOTUNE_CONFIG", "IOTUNE_MODE", "IOTUNE_ADAPT_KB"):
        env.pop(key, None)
    clear(cwd)
    subprocess.run([*mpitools.mpiexec(2), str(kernel), *args], cwd=cwd, env=env, check=True,
                   capture_output=True, timeout=TIMEOUT)  # fmt: skip
    sig = signature.from_profile(cwd / "p.json", program=str(kernel))
    entry = store.Entry(signature=sig, settings=dict(settings), improved=True,
                        study=f"{kernel.name} (bench/minimal/minimal-{kernel.name}.json)",
                        )  # fmt: skip
    out.write_text(json.dumps(store.export_json([entry]), indent=1) + "\n")
    return out


def run(
    kernel: Path, args: list[str], cwd: Path, config: str, control: tuple | None, sync: bool = False
) -> dict | None:
    env = dict(os.environ, LD_PRELOAD=str(paths.find_library()))
    for key in ("IOTUNE_CONFIG", "IOTUNE_TRACE", "IOTUNE_VERBOSE", "IOTUNE_MODE",
                "IOTUNE_ADAPT_KB", "IOTUNE_SYNC"):  # fmt: skip
        env.pop(key, None)
    env["IOTUNE_PROFILE"] = str(cwd / "p.json")
    if sync:
        env["IOTUNE_SYNC"] = "1"  # each written file flushed to the device in its close
    if config in ("adapt", "adapt-kb"):
        env["IOTUNE_MODE"] = "adaptive"
    if config == "tuned":
        env["IOTUNE_CONFIG"] = str(control[0])
    if config == "adapt-kb":
        env["IOTUNE_ADAPT_KB"] = str(control[1])
    clear(cwd)
    cmd = [*mpitools.mpiexec(2), str(kernel), *args]
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        return None
    return json.loads((cwd / "p.json").read_text())


def rows_of(case: str, rnd: int, order: int, config: str, p: dict | None) -> list[dict]:
    if p is None:
        return [dict(case=case, round=rnd, order=order, config=config, status="failed")]
    a = p.get("adaptive") or {}
    by_file = {x["file"]: x for x in a.get("phases") or []}
    pred_s = (a.get("prediction") or {}).get("seconds", 0.0)
    out = []
    for f in p["files"]:
        if f["name"].startswith("/"):
            continue  # not the kernel's data (libraries, /proc): only relative names are
        ph = by_file.get(f["name"], {})
        o = ph.get("overhead_s") or {}
        g = ph.get("guard") or {}
        out.append(dict(
            case=case, round=rnd, order=order, config=config, file=f["name"],
            time_s=f["time_s"]["max"],
            bytes=sum((f.get(lay) or {}).get("bytes_written", 0) for lay in ("hdf5",))
            or (f.get("mpiio") or {}).get("bytes_written", 0),
            run_io_s=p["io"]["time_s"], wall_s=p["wall_s"],
            rules=" ".join(s["rule"] for s in ph.get("applied") or []),
            reverted=" ".join(g.get("reverted") or []),
            prediction_s=pred_s, extraction_s=o.get("extraction", 0.0),
            optimisation_s=o.get("optimisation", 0.0), wait_s=o.get("wait", 0.0),
            status="ok"))  # fmt: skip
    return out


def sign_flip_p(logs: list[float]) -> float:
    """Two-sided paired sign-flip permutation test of mean log ratio = 0 (exact up to 16)."""
    n = len(logs)
    if n == 0:
        return float("nan")
    obs = abs(sum(logs))
    if n <= 16:
        flips = itertools.product((1, -1), repeat=n)
        hits = total = 0
        for s in flips:
            total += 1
            hits += abs(sum(a * b for a, b in zip(s, logs, strict=True))) >= obs - 1e-12
        return hits / total
    rng = random.Random(1)
    hits = sum(abs(sum(x * rng.choice((1, -1)) for x in logs)) >= obs - 1e-12
               for _ in range(20000))  # fmt: skip
    return hits / 20000


ALPHA = 0.05


def paired(io: dict, cfg: str) -> dict | None:
    """Run I/O time of cfg against the baseline over the rounds both have: medians, range, the
    median paired ratio (base / cfg: > 1 is faster) and the sign-flip p."""
    pairs = [(io["base"][k], io[cfg][k]) for k in io.get("base", {}) if k in io.get(cfg, {})]
    if not pairs:
        return None
    logs = [math.log(b / a) for b, a in pairs]
    bs, xs = [b for b, _ in pairs], [a for _, a in pairs]
    return {"n": len(pairs), "base": statistics.median(bs), "base_range": (min(bs), max(bs)),
            "med": statistics.median(xs), "range": (min(xs), max(xs)),
            "ratio": math.exp(statistics.median(logs)), "p": sign_flip_p(logs)}  # fmt: skip


def share_of_gain(base: float, adapt: float, tuned: dict | None, ref: dict | None) -> tuple:
    """(share, raw, why): the share of the tuned setting's gain (time saved, medians) the
    adaptive mode reaches, None when there is no tuned gain to share (no study, a study that
    found no significant gain, or the tuned setting not significantly faster in this run: then
    raw still gives the ratio of the two differences, for what it is worth)."""
    if ref is None:
        return None, None, "no tuned reference"
    if not ref.get("settings"):
        return None, None, "the study found no significant gain"
    if tuned is None:
        return None, None, "tuned not measured"
    raw = (base - adapt) / (base - tuned["med"]) if base != tuned["med"] else None
    if tuned["p"] >= ALPHA or tuned["ratio"] <= 1:
        return None, raw, f"tuned not significantly faster in this run (p = {tuned['p']:.3f})"
    return raw, raw, f"tuned significantly faster in this run (p = {tuned['p']:.3f})"


def summarise(rows: list[dict], refs: dict | None = None) -> str:
    refs = refs or {}
    out, table = [], []
    ok = [r for r in rows if r["status"] == "ok"]
    for case in dict.fromkeys(r["case"] for r in rows):
        out.append(f"== {case}")
        mine = [r for r in ok if r["case"] == case]
        files = list(dict.fromkeys(r["file"] for r in mine))
        out.append("  phase               base med s  adapt med s  speedup  tuned med s  speedup"
                   "  adapt+kb s  speedup  rules applied (adaptive)")  # fmt: skip
        for f in files:
            b = [float(r["time_s"]) for r in mine if r["file"] == f and r["config"] == "base"]
            a = [float(r["time_s"]) for r in mine if r["file"] == f and r["config"] == "adapt"]
            t = [float(r["time_s"]) for r in mine if r["file"] == f and r["config"] == "tuned"]
            k = [float(r["time_s"]) for r in mine if r["file"] == f and r["config"] == "adapt-kb"]
            if not b or not a:
                continue
            tm = statistics.median(t) if t else float("nan")
            km = statistics.median(k) if k else float("nan")
            rules = sorted({r["rules"] for r in mine if r["file"] == f and r["config"] == "adapt"})
            mine_f = [r for r in mine if r["file"] == f]
            rev = sorted(
                {r["reverted"] for r in mine_f if r["reverted"] and r["config"] == "adapt"}
            )
            note = "/".join(x or "-" for x in rules) + (f" reverted:{'/'.join(rev)}" if rev else "")
            kb_rows = [r for r in mine_f if r["config"] == "adapt-kb"]
            kbr = sorted({" ".join(sorted(set(r["rules"].split()))) for r in kb_rows})
            krev = sorted({r["reverted"] for r in kb_rows if r["reverted"]})
            if kbr:
                note += " | adapt+kb: " + "/".join(x or "-" for x in kbr)
                note += f" reverted:{'/'.join(krev)}" if krev else ""
            bm, am = statistics.median(b), statistics.median(a)
            out.append(f"  {f:<20}{bm:>11.4f}{am:>13.4f}{bm / am:>9.2f}{tm:>13.4f}{bm / tm:>9.2f}"
                       f"{km:>11.4f}{bm / km:>9.2f}  {note}")  # fmt: skip
        runs = {}
        for r in mine:
            runs[(r["round"], r["config"])] = r
        io = {cfg: {k[0]: float(v["run_io_s"]) for k, v in runs.items() if k[1] == cfg}
              for cfg in CONFIGS}  # fmt: skip
        med = {cfg: statistics.median(v.values()) for cfg, v in io.items() if v}
        res = {cfg: paired(io, cfg) for cfg in ("adapt", "tuned", "adapt-kb")}
        for cfg, label in (("adapt", "adaptive"), ("tuned", "tuned"), ("adapt-kb", "adapt+kb")):
            x = res[cfg]
            if not x:
                continue
            out.append(f"  run I/O time, {label} vs base: base median {x['base']:.4f} s "
                       f"[{x['base_range'][0]:.4f}, {x['base_range'][1]:.4f}], {label} "
                       f"{x['med']:.4f} s [{x['range'][0]:.4f}, {x['range'][1]:.4f}], ratio of "
                       f"medians {x['base'] / x['med']:.2f}, median paired ratio "
                       f"{x['ratio']:.2f}, sign-flip p = {x['p']:.3f} "
                       f"({x['n']} rounds)")  # fmt: skip
        ref = refs.get(case)
        shares = {}
        for cfg in ("adapt", "adapt-kb"):
            if res[cfg] and "base" in med:
                shares[cfg] = share_of_gain(med["base"], med[cfg], res["tuned"], ref)
                sh, raw, why = shares[cfg]
                if sh is not None:
                    out.append(f"  {cfg} reaches {sh:.0%} of the tuned setting's gain (time "
                               f"saved, medians; {why})")  # fmt: skip
                else:
                    out.append(f"  {cfg}: share of the tuned gain undefined ({why}"
                               + (f"; the ratio of the time saved is {raw:.0%}" if raw else "")
                               + ")")  # fmt: skip
        if ref:
            out.append(f"  tuned reference: {ref.get('settings') or '{}'} from {ref['source']}: "
                       f"{ref['verdict']}")  # fmt: skip
        if not io["adapt"]:
            continue
        ov = {}
        for r in (v for k, v in runs.items() if k[1] == "adapt"):
            rr = [x for x in mine if x["round"] == r["round"] and x["config"] == "adapt"]
            ext = sum(float(x["extraction_s"]) for x in rr)
            opt = sum(float(x["optimisation_s"]) for x in rr)
            wait = sum(float(x.get("wait_s") or 0.0) for x in rr)
            ov.setdefault("prediction", []).append(float(r["prediction_s"]))
            ov.setdefault("extraction", []).append(ext)
            ov.setdefault("optimisation", []).append(opt)
            ov.setdefault("collectives (wait)", []).append(wait)
            ov.setdefault("io", []).append(float(r["run_io_s"]))
        io = statistics.median(ov["io"])
        parts = ", ".join(f"{k} {statistics.median(v) * 1e3:.2f} ms "
                          f"({statistics.median(v) / io:.2%} of I/O time)"
                          for k, v in ov.items() if k != "io")  # fmt: skip
        out.append(f"  overhead (rank 0, median per run): {parts}")
        total = overhead_share(ov, [k for k in ov if k != "io"])
        own = overhead_share(ov, ["prediction", "extraction", "optimisation"])
        out.append(f"  overhead in all, median per run: {total:.2%} of the run's I/O time; "
                   f"without the collectives' time {own:.2%}")  # fmt: skip
        table.append((case, res, shares.get("adapt"), ov, total, own))
    return "\n".join(out + verdicts(table))


def overhead_share(ov: dict, keys: list[str]) -> float:
    """Median over the runs of the named overheads' sum as a share of the run's I/O time."""
    return statistics.median(sum(ov[k][i] for k in keys) / io for i, io in enumerate(ov["io"]))


def verdicts(table: list) -> list[str]:
    """One line per case: the acceptance's numbers side by side."""
    if not table:
        return []
    out = ["", "== per case: adapt vs base | tuned vs base | share of tune's gain | overhead "
           "in all, without collectives (prediction / extraction / optimisation / collectives) "
           "| significantly slower?"]  # fmt: skip
    for case, res, share, ov, total, own in table:
        a, t = res["adapt"], res["tuned"]
        ts = f"{t['ratio']:.2f}x p={t['p']:.3f}" if t else "-"
        sh = (
            "-"
            if not share
            else f"{share[0]:.0%}"
            if share[0] is not None
            else (f"undefined ({share[2]}" + (f"; raw {share[1]:.0%}" if share[1] else "") + ")")
        )
        parts = " / ".join(f"{statistics.median(ov[k]) / statistics.median(ov['io']):.2%}"
                           for k in ov if k != "io")  # fmt: skip
        slower = "YES" if a["ratio"] < 1 and a["p"] < ALPHA else "no"
        out.append(f"  {case}: {a['ratio']:.2f}x p={a['p']:.3f} | {ts} | {sh} | {total:.2%}, "
                   f"{own:.2%} ({parts}) | {slower}")  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES), help=f"of {', '.join(CASES)}")
    ap.add_argument("--configs", default=",".join(CONFIGS[:3]), help=f"of {', '.join(CONFIGS)}")
    ap.add_argument("--warmup", type=int, default=1, help="discarded runs before each run")
    ap.add_argument("--sync", action="store_true",
                    help="IOTUNE_SYNC=1: every written file is flushed to the device in "
                         "its close, in every configuration (no page cache swings)")  # fmt: skip
    ap.add_argument("--drop-caches", action="store_true",
                    help="sync and drop the page cache before each run (root; off when the "
                         "system does not permit it, said in the meta file)")  # fmt: skip
    ap.add_argument(
        "--hold-freed-memory",
        action="store_true",
        help="keep freed memory in the VM while measuring (root; bench/freed_memory/)",
    )
    ap.add_argument("--study", action="store_true",
                    help="instead: a short `iotune tune` study of each case's command, kept as "
                         "its tuned reference (data/adapt_phases-tune-<case>.json)")  # fmt: skip
    ap.add_argument("--study-trials", type=int, default=12)
    ap.add_argument("--study-pairs", type=int, default=10, help="most verification pairs")
    ap.add_argument("--summary-only", action="store_true",
                    help="instead: the summary of the raw rows already in --out/--name.csv "
                         "(e.g. of a run cut short by its time limit)")  # fmt: skip
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--name", default="adapt_phases", help="file names' stem under --out")
    args = ap.parse_args()
    cases = args.cases.split(",")
    if args.study:
        for c in cases:
            run_study(c, args.study_trials, args.study_pairs, args.sync)
        return
    configs = [c for c in CONFIGS if c in args.configs.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = out / f"{args.name}.csv"
    if args.summary_only:
        with raw.open() as fh:
            rows = [r for r in csv.DictReader(fh) if r["case"] in cases]
        text = summarise(rows, {c: tuned_reference(c) for c in cases})
        (out / f"{args.name}.txt").write_text(text + "\n")
        print(text)
        return
    new = not raw.exists()
    drop = args.drop_caches and trial.drop_caches()
    meta = {
        "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "note": "shared 2-core machine, other engineers running builds and tests: noisy",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "rounds": args.rounds,
        "configs": configs, "warmup": args.warmup, "sync": args.sync,
        "drop_caches": drop if args.drop_caches else False,
        "drop_caches_refused": bool(args.drop_caches and not drop),
        "load_average_start": os.getloadavg(),
        "runtime": os.path.relpath(paths.find_library(), HERE.parents[1]),  # no machine's paths
        "commands": {c: [*mpitools.mpiexec(2), CASES[c][0], *CASES[c][1]] for c in cases},
        "tuned": {c: tuned_reference(c) for c in cases},
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
    }  # fmt: skip
    meta_file = out / f"{args.name}-meta.json"
    meta_file.write_text(json.dumps(meta, indent=2) + "\n")  # again at the end, with its load
    rows: list[dict] = []
    with (
        tempfile.TemporaryDirectory(prefix="adapt-bench-") as tmp,
        raw.open("a") as fh,
        freed_memory.maybe_hold(args.hold_freed_memory) as held,
    ):
        meta["freed_memory"] = held
        w = csv.DictWriter(fh, FIELDS)
        if new:
            w.writeheader()
        work = Path(tmp) / "run"
        work.mkdir()
        controls = {}  # case -> (control file of the tuned settings, KB export with them)
        for c in cases:
            t = tuned_settings(c)
            if t:
                name, kargs = CASES[c]
                kb = None
                if "adapt-kb" in configs:
                    kb = make_kb(paths.find_kernel(name), kargs, work, t,
                                 Path(tmp) / f"kb-{c}.json")  # fmt: skip
                    (out / f"{args.name}-kb-{c}.json").write_text(kb.read_text())
                controls[c] = (controlfile.write(Path(tmp) / f"tuned-{c}.xml", t), kb)
        for rnd in range(args.rounds):
            jobs = [(c, cfg) for c in cases for cfg in configs
                    if cfg in ("base", "adapt") or c in controls]  # fmt: skip
            random.Random(rnd).shuffle(jobs)
            for order, (case, cfg) in enumerate(jobs):
                name, kargs = CASES[case]
                kernel = paths.find_kernel(name)
                for _ in range(args.warmup):  # discarded, identical
                    run(kernel, kargs, work, cfg, controls.get(case), args.sync)
                if drop:
                    trial.drop_caches()
                p = run(kernel, kargs, work, cfg, controls.get(case), args.sync)
                for r in rows_of(case, rnd, order, cfg, p):
                    rows.append(r)
                    w.writerow(r)
                fh.flush()
            print(f"round {rnd + 1}/{args.rounds} done", flush=True)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    meta["load_average_end"] = os.getloadavg()
    meta["uptime_end"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    meta_file.write_text(json.dumps(meta, indent=2) + "\n")
    text = summarise(rows, meta["tuned"])
    (out / f"{args.name}.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
