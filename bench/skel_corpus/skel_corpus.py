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

`--sizes FILE` (e.g. bench/skel_corpus/sizes-large.toml) gives cases other arguments (larger
problems, so that I/O outweighs the machine's noise; `[case.NAME] argv = [...]`, the manifest's
argv format); the cases it does not name run as the manifest says. `--build DIR` traces with
the runtime built in DIR (MPICH) and DIR-openmpi (Open MPI) instead of the installed one.

`--inner K --inner-below S`: for cases whose traced run's I/O took under S seconds (programs of
fixed small sizes), each program of a pair is measured K times (no separate warm-up: a cold
first run is not the least) and the least kept (the undisturbed run's time; the K values are in
the record as `orig_runs`/`skel_runs`).

Per case the verdict says whether the pairs decide: the median pair ratio with a
distribution-free ~95 % interval of that median (order statistics of the pairs), `within` when
the interval lies inside 1.0 +- 10 % (1/1.1 to 1.1), `outside` when it lies wholly outside,
else `undecided` (the median alone in or out of the band, `within_10pct`, is the acceptance's
count).

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
import tomllib
from dataclasses import replace
from math import comb
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "corpus"))
sys.path.insert(0, str(REPO / "src"))
import corpus  # noqa: E402
from iotune import freedmem  # noqa: E402

TIMEOUT = 600
BAND = 1.1  # within 10 %: 1/1.1 <= skeleton/original <= 1.1
LIBS: dict[str, str] = {}  # family -> libiotune.so to trace with (--build)


def iotune(case, *argv, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, **corpus.run_env(case)}
    if case.family in LIBS:
        env["IOTUNE_LIB"] = LIBS[case.family]
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "iotune", *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip


# the skeleton's own files: its list of the files it wrote (docs/skel.md, "Where it writes")
# and its timing record, written by rank 0 at the end; not the application's I/O
OWN_FILES = {".iotune-skel-files", "t.json"}


def io_time(case, argv: list[str], d: Path, trace: bool = False) -> float:
    """One run of argv (launcher included) in d under `iotune profile`: its io.time_s, less
    the time of the skeleton's own files (OWN_FILES: 0.3-0.5 ms, 3 % of a 15 ms case)."""
    prof = d / "p.json"
    extra = ["--trace"] if trace else []
    r = iotune(case, "profile", *extra, "-o", prof, "--", *argv, cwd=d)
    if r.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {r.stdout[-500:]}{r.stderr[-800:]}")
    doc = json.loads(prof.read_text())
    own = sum(float((f.get("time_s") or {}).get("max") or 0) for f in doc.get("files") or []
              if Path(str(f.get("name", ""))).name in OWN_FILES)  # fmt: skip
    return float(doc["io"]["time_s"]) - own


def fresh(d: Path) -> None:
    shutil.rmtree(d, ignore_errors=True)
    (d / "data").mkdir(parents=True)
    os.sync()


def prepare(case, work: Path) -> dict:
    """The original traced once, its skeleton built: {orig: argv maker, skel: argv} or error."""
    first = work / "first"
    fresh(first)
    t = io_time(case, [*corpus.launcher(case), *corpus.command(case, first)], first, trace=True)
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
    return {"skeleton": str(src / "skeleton"), "first_io_s": t}


def argv_of(case, which: str, d: Path, skeleton: str) -> list[str]:
    if which == "orig":
        return [*corpus.launcher(case), *corpus.command(case, d)]
    return [*corpus.launcher(case), skeleton, "--dir", str(d / "data"), "--timing",
            str(d / "t.json")]  # fmt: skip


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval of the median: the order statistics k-th from each end with
    P(Binomial(n, 1/2) < k) <= (1 - level) / 2 (the whole range when n is too small)."""
    v = sorted(values)
    n = len(v)
    k, tail = 0, 0.0
    while k < n // 2:
        tail += comb(n, k) / 2**n
        if tail > (1 - level) / 2:
            break
        k += 1
    k = max(k, 1)
    return v[k - 1], v[n - k]


def interval_level(n: int, k: int = 0) -> float:
    """The coverage of median_interval's interval for n pairs (k: its order statistic, found
    again when 0)."""
    if not k:
        k, tail = 0, 0.0
        while k < n // 2:
            tail += comb(n, k) / 2**n
            if tail > 0.025:
                break
            k += 1
        k = max(k, 1)
    return 1 - 2 * sum(comb(n, i) for i in range(k)) / 2**n


def summary(orig: list, skel: list) -> dict:
    pairs = [s / o for o, s in zip(orig, skel, strict=False) if o and s]
    if not pairs:
        return {"ratio": None}
    ratio = statistics.median(pairs)
    lo, hi = median_interval(pairs)
    level = interval_level(len(pairs))
    decisive = level >= 0.95  # 6 pairs or more; fewer cannot say anything at 95 %
    inside = decisive and 1 / BAND <= lo and hi <= BAND
    outside = decisive and (hi < 1 / BAND or lo > BAND)
    return {"ratio": ratio, "min": min(pairs), "max": max(pairs), "n": len(pairs),
            "ci95": [lo, hi], "ci_level": round(level, 4),
            "verdict": "within" if inside else "outside" if outside else "undecided",
            "orig_median": statistics.median([o for o in orig if o]),
            "skel_median": statistics.median([s for s in skel if s]),
            "within_10pct": 1 / BAND <= ratio <= BAND}  # fmt: skip


def save(result: dict, out: Path) -> None:
    for row in result["cases"].values():
        row["summary"] = summary(row["orig"], row["skel"])
    if "merged" not in result:
        result["load_after"] = os.getloadavg()
    done = [r["summary"] for r in result["cases"].values() if r["summary"].get("ratio")]
    met = sum(1 for s in done if s["within_10pct"])
    sure = sum(1 for s in done if s["verdict"] == "within")
    out_ = sum(1 for s in done if s["verdict"] == "outside")
    result["acceptance"] = (
        f"skeleton I/O time within 10 % (median of pairs) in {met}/{len(done)} cases; "
        f"the pairs' 95 % interval of the median inside the band in {sure}, wholly outside "
        f"in {out_}, undecided in {len(done) - sure - out_}"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))


def sizes_path(value: str) -> Path:
    """--sizes: a file, or NAME for bench/skel_corpus/sizes-NAME.toml."""
    named = Path(__file__).resolve().parent / f"sizes-{value}.toml"
    return named if not Path(value).exists() and named.is_file() else Path(value)


def load_sizes(path: Path) -> dict[str, tuple[str, ...]]:
    """{case name: argv} of a sizes file ([case.NAME] argv = [...])."""
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SystemExit(f"skel_corpus: {path}: {e}") from None
    out = {}
    for name, entry in (doc.get("case") or {}).items():
        argv = entry.get("argv") if isinstance(entry, dict) else None
        if not isinstance(argv, list) or not all(isinstance(x, str) for x in argv):
            raise SystemExit(f"skel_corpus: {path}: case.{name}.argv: expected a list of strings")
        out[name] = tuple(argv)
    return out


def table(result: dict) -> None:
    print(
        "| case | skel/orig (median of pairs) | 95 % interval | min-max | n | verdict | "
        "orig median s | skel median s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n, row in result["cases"].items():
        s = row["summary"]
        if s.get("ratio") is None:
            print(f"| {n} | - ({row['prepare'].get('error', 'no pair')[:80]}) | | | | | | |")
            continue
        print(f"| {n} | {s['ratio']:.2f} | {s['ci95'][0]:.2f}-{s['ci95'][1]:.2f} | "
              f"{s['min']:.2f}-{s['max']:.2f} | {s['n']} | {s['verdict']} | "
              f"{s['orig_median']:.4f} | {s['skel_median']:.4f} |")  # fmt: skip
    print(result["acceptance"])


def merge(paths: list[str], out: Path) -> int:
    """The pairs of several runs' records pooled per case (each run's own record kept)."""
    result: dict = {"merged": paths, "cases": {}, "runs": []}
    for p in paths:
        rec = json.loads(Path(p).read_text())
        result["runs"].append({k: rec.get(k) for k in ("command", "date", "load_before",
                                                        "load_after", "freed_memory")})  # fmt: skip
        for name, row in rec["cases"].items():
            first = {"prepare": row["prepare"], "orig": [], "skel": [], "argv": row.get("argv")}
            pooled = result["cases"].setdefault(name, first)
            n = min(len(row["orig"]), len(row["skel"]))
            pooled["orig"] += row["orig"][:n]
            pooled["skel"] += row["skel"][:n]
    save(result, out)
    table(result)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", help="comma-separated names (default: every built case)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--hold-freed-memory", action="store_true")
    ap.add_argument("--workdir", help="scratch (default: a new temporary folder, removed)")
    ap.add_argument("--out", default=str(REPO / "bench/skel_corpus/skel_corpus.json"))
    ap.add_argument("--sizes", help="TOML: [case.NAME] argv = [...] for cases run at other "
                    "sizes (or NAME: sizes-NAME.toml beside this script, e.g. large)")  # fmt: skip
    ap.add_argument("--build", help="trace with DIR/runtime (MPICH) and DIR-openmpi/runtime")
    ap.add_argument("--inner", type=int, default=1,
                    help="measured runs per program and pair, the least kept (cases whose traced "
                    "run's I/O took under --inner-below seconds)")  # fmt: skip
    ap.add_argument("--inner-below", type=float, default=float("inf"))
    ap.add_argument(
        "--budget-s",
        type=float,
        default=0,
        help="start no round that would end past this many seconds of rounds",
    )
    ap.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="pool the pairs of earlier runs' records into --out (no run)",
    )
    a = ap.parse_args()
    if a.merge:
        return merge(a.merge, Path(a.out))
    cases = [c for c in corpus.load_cases() if corpus.built(c)]
    if a.cases:
        cases = [c for c in cases if c.name in a.cases.split(",")]
    sizes = load_sizes(sizes_path(a.sizes)) if a.sizes else {}
    cases = [replace(c, argv=sizes[c.name]) if c.name in sizes else c for c in cases]
    if a.build:
        for fam, d in (("mpich", a.build), ("openmpi", a.build.rstrip("/") + "-openmpi")):
            lib = Path(d) / "runtime" / "libiotune.so"
            if lib.is_file():
                LIBS[fam] = str(lib.resolve())
    scratch = Path(a.workdir or tempfile.mkdtemp(prefix="skel-corpus-"))
    result: dict = {
        "command": " ".join(["python", *sys.argv]).replace(str(REPO) + "/", ""),
        "machine": {"node": platform.node(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_before": os.getloadavg(), "cases": {},
        "sizes": {n: list(v) for n, v in sizes.items()}, "runtimes": dict(LIBS),
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
            result["cases"][case.name] = {"prepare": setups[case.name][2], "orig": [], "skel": [],
                                          "argv": list(case.argv)}  # fmt: skip
            print(f"skel_corpus: {case.name}: {setups[case.name][2]}", flush=True)
        rng = random.Random(a.seed)
        names = [n for n, s in setups.items() if "skeleton" in s[2]]
        started, last = time.monotonic(), 0.0
        for rnd in range(a.rounds):
            spent = time.monotonic() - started
            if a.budget_s and rnd and spent + last > a.budget_s:
                print(f"skel_corpus: stopped after {rnd} rounds ({spent:.0f} s; --budget-s)")
                result["stopped"] = f"after {rnd} rounds: --budget-s {a.budget_s}"
                break
            rng.shuffle(names)
            for n in names:
                case, work, prep = setups[n]
                order = ["orig", "skel"]
                rng.shuffle(order)
                for which in order:
                    d = work / which
                    argv = argv_of(case, which, d, prep["skeleton"])
                    k = a.inner if prep["first_io_s"] < a.inner_below else 1
                    try:
                        if k == 1:  # with k runs the least is kept: the first warms up
                            fresh(d)
                            io_time(case, argv, d)  # warm-up, discarded
                        runs = []
                        for _ in range(k):
                            fresh(d)
                            runs.append(io_time(case, argv, d))
                        t = min(runs)
                        if k > 1:
                            result["cases"][n].setdefault(f"{which}_runs", []).append(runs)
                    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
                        t = None
                        result["cases"][n].setdefault("errors", []).append(str(e)[-300:])
                    result["cases"][n][which].append(t)
            last = time.monotonic() - started - spent
            print(f"skel_corpus: round {rnd + 1}/{a.rounds} done", flush=True)
            save(result, Path(a.out))  # a stopped run keeps its rounds
    save(result, Path(a.out))
    table(result)
    if not a.workdir:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
