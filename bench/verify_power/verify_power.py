"""Power and false wins of `iotune tune`'s sequential verification, from real measurements.

Hundreds of real studies cannot be run on a shared 2-core machine, so this does what can be
done honestly:

  measure   runs a kernel in interleaved rounds, each round the stack's defaults twice (A, A')
            and a setting known to be ~1.3x faster (B), in a shuffled order, exactly as a
            study's verification runs them (iotune.trial.run_trial, objective io-time); the
            raw samples go to bench/verify_power/verify-<kernel>.json;
  evaluate  replays the sequential procedure (iotune.search.sequential, the same verdict code
            as the study) many times on pairs drawn with replacement from those real rounds:
            A/A pairs (A vs A') for the false-win rate, A/B pairs for the power, and reports
            how many pairs each needed. Output: bench/verify_power/verify-power.{json,md}.

  .venv/bin/python bench/verify_power/verify_power.py measure --kernel vorpalio --rounds 40
  .venv/bin/python bench/verify_power/verify_power.py evaluate --repeats 5000

Ways to cut the noise of each pair, all as `iotune tune` can run its verification (measure's
options, recorded in the data file): --warmup N (discarded identical runs before each measured
run: `--warmup`), --sync (the runtime flushes each file to the device before it closes:
`--sync`), --drop-caches (sync and drop the page cache before every run, so that one run's
dirty pages are not written back during the next: `--drop-caches`), -n 1 (no rank waits for a
descheduled partner in collective calls). The load average is recorded before and after.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

SCALED_GAIN = 1.3
DATA = HERE
RESULTS = HERE
RESULT_JSON = "verify-power.json"  # evaluate's output; the raw data are verify-<case>.json

# the ~1.3x settings of shared/LAB-NOTES.md ("What tuning can gain")
CASES = {
    "vorpalio": {"args": ["--block", "160,160,100"], "tuned": {"cb_buffer_size": "1M"}},
    "gcrmio": {"args": ["--cells", "65536"], "tuned": {"fill_time": "never"}},
    # four times the I/O per run: short disturbances weigh less
    "gcrmio-large": {
        "kernel": "gcrmio",
        "args": ["--cells", "262144"],
        "tuned": {"fill_time": "never"},
    },  # fmt: skip
    "vorpalio-cb-write-off": {
        "kernel": "vorpalio",
        "args": ["--block", "160,160,100"],
        "tuned": {"romio_cb_write": "disable"},
    },
}


def measure(
    name: str,
    rounds: int,
    nprocs: int,
    seed: int,
    warmup: int = 0,
    sync: bool = False,
    drop_caches: bool = False,
    objective: str = "io-time",
    tag: str = "",
) -> Path:
    import os

    from iotune import paths, trial

    case = CASES[name]
    kernel = case.get("kernel", name)
    app = [str(paths.find_kernel(kernel)), *case["args"]]
    command = [*mpitools.mpiexec(nprocs), *app]
    arms = {"A": {}, "A2": {}, "B": case["tuned"]}
    rng = random.Random(seed)
    rows = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="verify-power-") as tmp:
        opts = trial.TrialOptions(
            command=command,
            workdir=Path(tmp),
            objective=objective,
            timeout=120,
            lib=paths.find_library(),
            isolate=True,
            sync=sync,
            drop_caches=drop_caches,
        )
        for r in range(rounds):
            order = list(arms)
            rng.shuffle(order)
            row = {"round": r, "order": order}
            for arm in order:
                for _ in range(warmup):  # discarded, as `iotune tune --warmup N` does
                    trial.run_trial(arms[arm], opts)
                o = trial.run_trial(arms[arm], opts)
                row[arm] = o.value if o.ok else None
                row[f"{arm}_wall_s"] = round(o.wall_s, 6)
            rows.append(row)
            print(json.dumps(row), flush=True)
    how = [f"n{nprocs}"] if nprocs != 2 else []
    how += [f"warmup{warmup}"] if warmup else []
    how += ["sync"] if sync else []
    how += ["drop"] if drop_caches and opts.drop_caches else []  # off when not permitted
    how += [objective] if objective != "io-time" else []
    how += [tag] if tag else []  # e.g. the session, so that earlier raw data stay
    out = DATA / f"verify-{'-'.join([name, *how])}.json"
    out.write_text(
        json.dumps(
            {
                "case": name + (f" ({', '.join(how)})" if how else ""),
                "warmup": warmup,
                "nprocs": nprocs,
                "sync": sync,
                "drop_caches": drop_caches and opts.drop_caches,
                "load_before": load_before,
                "load_after": os.getloadavg(),
                "kernel": kernel,
                "command": shlex.join(command),
                "arms": arms,
                "objective": objective,
                "machine": platform.platform(),
                "host": platform.node(),
                "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                "rounds": rows,
            },
            indent=1,
        )
        + "\n"
    )
    return out


def _simulate(pairs, design, rng, exchangeable=False, maximize=False):
    """One sequential verification on pairs drawn with replacement: (recommended, n).
    exchangeable: the pair's two runs had the same settings (A/A), so which one is called
    "tuned" is a coin flip; a finite sample is never exactly balanced, and drawing it without
    the flip would replay its chance imbalance as a real effect."""
    from iotune.search import sequential

    a: list[float] = []
    b: list[float] = []
    while True:
        x, y = rng.choice(pairs)
        if exchangeable and rng.random() < 0.5:
            x, y = y, x
        a.append(x)
        b.append(y)
        if len(a) < design.min_pairs:
            continue
        v = sequential.verdict(a, b, design, maximize)
        if v.decided:
            return v.improved, len(a)


def evaluate(repeats: int, seed: int, max_pairs: int) -> dict:
    from iotune.search import sequential

    design = sequential.design(sequential.MIN_PAIRS, max_pairs)
    out = {
        "design": {
            "min_pairs": design.min_pairs,
            "max_pairs": design.max_pairs,
            "nominal_level": design.level,
            "false_win_bound": design.error,
            "false_win_bound_se": design.error_se,
        },
        "repeats": repeats,
        "seed": seed,
        "kernels": {},
    }
    for path in sorted(DATA.glob("verify-*.json")):
        if path.name == RESULT_JSON:  # evaluate's own output, in the same folder
            continue
        data = json.loads(path.read_text())
        rounds = [r for r in data["rounds"] if None not in (r["A"], r["A2"], r["B"])]
        rng = random.Random(seed)
        res = {"file": path.name, "rounds": len(rounds), "arms": data["arms"]}
        ratio = [r["A"] / r["B"] for r in rounds]
        aa = [r["A"] / r["A2"] for r in rounds]
        res["median_ratio_A_over_B"] = statistics.median(ratio)
        res["median_ratio_A_over_A2"] = statistics.median(aa)
        res["cv_A"] = statistics.pstdev([r["A"] for r in rounds]) / statistics.fmean(
            [r["A"] for r in rounds]
        )
        # the noise a paired test sees: the spread of ln(A/A') (0: both runs of a pair agree)
        res["sd_ln_AA"] = statistics.pstdev([math.log(r["A"] / r["A2"]) for r in rounds])
        res["load"] = [data.get("load_before"), data.get("load_after")]
        scale = res["median_ratio_A_over_B"] / SCALED_GAIN
        res["scaled_B_by"] = scale
        for name, pairs in (
            ("A/A", [(r["A"], r["A2"]) for r in rounds]),
            ("A/B", [(r["A"], r["B"]) for r in rounds]),
            # the same real pairs, B's times stretched so that the median gain is SCALED_GAIN:
            # the real noise of both arms, a smaller effect
            ("A/B at 1.3x", [(r["A"], r["B"] * scale) for r in rounds]),
        ):
            hits, used = 0, []
            for _ in range(repeats):
                won, n = _simulate(pairs, design, rng, exchangeable=name == "A/A")
                hits += won
                used.append(n)
            res[name] = {
                "recommended_share": hits / repeats,
                "mean_pairs": statistics.fmean(used),
                "mean_runs": 2 * statistics.fmean(used),
            }
        out["kernels"][data.get("case", data["kernel"])] = res
    return out


def _markdown(res: dict) -> str:
    d = res["design"]
    lines = [
        f"Sequential signed-rank test, pairs {d['min_pairs']}..{d['max_pairs']}, nominal level "
        f"{d['nominal_level']:.4f} per look, overall false-win rate under H0 "
        f"{d['false_win_bound']:.4f} (simulated, s.e. {d['false_win_bound_se']:.4f}); "
        f"{res['repeats']} resampled studies per row.",
        "",
        "| case | real rounds | load (1-min, before/after) | CV of A | sd ln(A/A') | "
        "median A/B (A/A') | A/A recommended | A/A mean runs | "
        "A/B recommended | A/B mean runs | A/B scaled to 1.3x recommended | its mean runs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k, r in res["kernels"].items():
        load = "/".join(f"{x[0]:.1f}" for x in r["load"] if x) or "-"
        lines.append(
            f"| {k} ({r['arms']['B']}) | {r['rounds']} | {load} | {r['cv_A']:.2f} | "
            f"{r['sd_ln_AA']:.2f} | {r['median_ratio_A_over_B']:.2f}x "
            f"({r['median_ratio_A_over_A2']:.2f}x) | {100 * r['A/A']['recommended_share']:.1f} % "
            f"| {r['A/A']['mean_runs']:.1f} | {100 * r['A/B']['recommended_share']:.1f} % | "
            f"{r['A/B']['mean_runs']:.1f} | "
            f"{100 * r['A/B at 1.3x']['recommended_share']:.1f} % | "
            f"{r['A/B at 1.3x']['mean_runs']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--kernel", choices=sorted(CASES), required=True, help="a case of CASES")
    m.add_argument("--rounds", type=int, default=40)
    m.add_argument("-n", "--nprocs", type=int, default=2)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--warmup", type=int, default=0, help="discarded runs before each run")
    m.add_argument("--sync", action="store_true", help="flush files before close (IOTUNE_SYNC)")
    m.add_argument("--drop-caches", action="store_true", help="sync + drop caches before runs")
    m.add_argument("--objective", default="io-time", help="io-time (default), wall, kernel")
    m.add_argument("--tag", default="", help="added to the data file's name and the case")
    m.add_argument("--out", type=Path, default=HERE, help="folder of the raw data (this one)")
    e = sub.add_parser("evaluate")
    e.add_argument("--repeats", type=int, default=5000)
    e.add_argument("--seed", type=int, default=1)
    e.add_argument("--max-pairs", type=int, default=20)
    e.add_argument("--out", type=Path, default=HERE, help="folder of the results (this one)")
    args = ap.parse_args(argv)
    global DATA, RESULTS  # the raw data evaluated stay this folder's
    if args.cmd == "measure":
        DATA = args.out
        DATA.mkdir(parents=True, exist_ok=True)
        print(measure(args.kernel, args.rounds, args.nprocs, args.seed, args.warmup,
                      args.sync, args.drop_caches, args.objective, args.tag))  # fmt: skip
        return 0
    res = evaluate(args.repeats, args.seed, args.max_pairs)
    RESULTS = args.out
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / RESULT_JSON).write_text(json.dumps(res, indent=1) + "\n")
    md = _markdown(res)
    (RESULTS / "verify-power.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
