"""Does a skeleton's I/O take as long as the original's, on the corpus (programs nobody here
wrote, corpus/cases.toml)? Issue 22: within 10 % in at least 80 % of the cases.

For every built case (generically, none named): the original profiled with trace on at its
ranks under its MPI family's runtime, the skeleton derived from that profile (`iotune skel
from-profile --data-dir`, `generate` with the family's compiler, `make`); then rounds that
visit the cases in shuffled order and, within a case, run original and skeleton in shuffled
order, each measured run right after a discarded warm-up of the same program, each in a folder
emptied before it, after `sync`. The I/O time is the profile's `io.time_s` (`iotune profile`)
for both. Per case: the median of the rounds' skeleton/original ratios (a pair shares the
machine's state), min and max, and the medians of each. With --hold-freed-memory the VM keeps
freed memory for the whole run (bench/README.md, "The page cache's two modes").

    flock /work/wt/measure.lock .venv/bin/python bench/skel_corpus/skel_corpus.py \
        --hold-freed-memory --rounds 5 --out bench/skel_corpus/skel_corpus.json
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

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "corpus"))
sys.path.insert(0, str(REPO / "src"))
import corpus  # noqa: E402
from iotune import freedmem  # noqa: E402

TIMEOUT = 600


def iotune(case, *argv, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, **corpus.run_env(case)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "iotune", *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip


def io_time(case, argv: list[str], d: Path, trace: bool = False) -> float:
    """One run of argv (launcher included) in d under `iotune profile`: its io.time_s."""
    prof = d / "p.json"
    extra = ["--trace"] if trace else []
    r = iotune(case, "profile", *extra, "-o", prof, "--", *argv, cwd=d)
    if r.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {r.stdout[-500:]}{r.stderr[-800:]}")
    return float(json.loads(prof.read_text())["io"]["time_s"])


def fresh(d: Path) -> None:
    shutil.rmtree(d, ignore_errors=True)
    (d / "data").mkdir(parents=True)
    os.sync()


def prepare(case, work: Path) -> dict:
    """The original traced once, its skeleton built: {orig: argv maker, skel: argv} or error."""
    first = work / "first"
    fresh(first)
    io_time(case, [*corpus.launcher(case), *corpus.command(case, first)], first, trace=True)
    fam = case.family
    desc, src = work / "skel.yaml", work / "src"
    r = iotune(case, "skel", "from-profile", first / "p.json", "-o", desc, "--data-dir", first,
               cwd=first)  # fmt: skip
    if r.returncode:
        return {"error": f"from-profile: {r.stderr[-500:]}"}
    r = iotune(case, "skel", "generate", desc, "-o", src, "--cc", f"mpicc.{fam}", "--pkg",
               f"hdf5-{fam}", cwd=work)  # fmt: skip
    if r.returncode:
        return {"error": f"generate: {r.stderr[-500:]}"}
    m = subprocess.run(["make", "-s", "-C", str(src)], capture_output=True, text=True,
                       timeout=TIMEOUT)  # fmt: skip
    if m.returncode:
        return {"error": f"make: {m.stderr[-500:]}"}
    return {"skeleton": str(src / "skeleton")}


def argv_of(case, which: str, d: Path, skeleton: str) -> list[str]:
    if which == "orig":
        return [*corpus.launcher(case), *corpus.command(case, d)]
    return [*corpus.launcher(case), skeleton, "--dir", str(d / "data"), "--timing",
            str(d / "t.json")]  # fmt: skip


def summary(orig: list, skel: list) -> dict:
    pairs = [s / o for o, s in zip(orig, skel, strict=False) if o and s]
    if not pairs:
        return {"ratio": None}
    ratio = statistics.median(pairs)
    return {"ratio": ratio, "min": min(pairs), "max": max(pairs), "n": len(pairs),
            "orig_median": statistics.median(orig), "skel_median": statistics.median(skel),
            "within_10pct": 1 / 1.1 <= ratio <= 1.1}  # fmt: skip


def save(result: dict, out: Path) -> None:
    for row in result["cases"].values():
        row["summary"] = summary(row["orig"], row["skel"])
    result["load_after"] = os.getloadavg()
    done = [r["summary"] for r in result["cases"].values() if r["summary"].get("ratio")]
    met = sum(1 for s in done if s["within_10pct"])
    result["acceptance"] = f"skeleton I/O time within 10 % in {met}/{len(done)} cases"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", help="comma-separated names (default: every built case)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--hold-freed-memory", action="store_true")
    ap.add_argument("--workdir", help="scratch (default: a new temporary folder, removed)")
    ap.add_argument("--out", default=str(REPO / "bench/skel_corpus/skel_corpus.json"))
    a = ap.parse_args()
    cases = [c for c in corpus.load_cases() if corpus.built(c)]
    if a.cases:
        cases = [c for c in cases if c.name in a.cases.split(",")]
    scratch = Path(a.workdir or tempfile.mkdtemp(prefix="skel-corpus-"))
    result: dict = {
        "command": " ".join(["python", *sys.argv]).replace(str(REPO) + "/", ""),
        "machine": {"node": platform.node(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_before": os.getloadavg(), "cases": {},
    }  # fmt: skip
    with freedmem.maybe_hold(a.hold_freed_memory) as held:
        result["freed_memory"] = {k: v for k, v in held.items() if k in ("held", "why")}
        setups = {}
        for case in cases:
            work = scratch / case.name
            try:
                setups[case.name] = (case, work, prepare(case, work))
            except (OSError, RuntimeError, subprocess.SubprocessError) as e:
                setups[case.name] = (case, work, {"error": str(e)[-500:]})
            result["cases"][case.name] = {"prepare": setups[case.name][2], "orig": [], "skel": []}
            print(f"skel_corpus: {case.name}: {setups[case.name][2]}", flush=True)
        rng = random.Random(a.seed)
        names = [n for n, s in setups.items() if "skeleton" in s[2]]
        for rnd in range(a.rounds):
            rng.shuffle(names)
            for n in names:
                case, work, prep = setups[n]
                order = ["orig", "skel"]
                rng.shuffle(order)
                for which in order:
                    d = work / which
                    argv = argv_of(case, which, d, prep["skeleton"])
                    try:
                        fresh(d)
                        io_time(case, argv, d)  # warm-up, discarded
                        fresh(d)
                        t = io_time(case, argv, d)
                    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
                        t = None
                        result["cases"][n].setdefault("errors", []).append(str(e)[-300:])
                    result["cases"][n][which].append(t)
            print(f"skel_corpus: round {rnd + 1}/{a.rounds} done", flush=True)
            save(result, Path(a.out))  # a stopped run keeps its rounds
    save(result, Path(a.out))
    print("| case | skel/orig (median of pairs) | min-max | n | orig median s | skel median s |")
    print("|---|---|---|---|---|---|")
    for n, row in result["cases"].items():
        s = row["summary"]
        if s.get("ratio") is None:
            print(f"| {n} | - ({row['prepare'].get('error', 'no pair')[:80]}) | | | | |")
            continue
        print(f"| {n} | {s['ratio']:.2f} | {s['min']:.2f}-{s['max']:.2f} | {s['n']} | "
              f"{s['orig_median']:.4f} | {s['skel_median']:.4f} |")  # fmt: skip
    print(result["acceptance"])
    if not a.workdir:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
