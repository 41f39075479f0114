"""How often the demo's verification ends undecided, at the demo's cap and at longer ones.

The demos recorded every verification pair they ran (summary.json `final.rounds`: the defaults
and the full winner, interleaved). This pools those real pairs of every held demo in this
folder and replays the study's own sequential test (iotune.search.sequential) on pairs drawn
with replacement from the pool, for several caps (--verify-pairs). It reports the share of
verifications that establish the gain and the mean pairs they take; the pooled pairs mix the
demos' winners and noise as the demos met them.

  PYTHONPATH=src .venv/bin/python bench/demo_verdicts/verify_cap.py --caps 10 12 14 15 20

Output: a table on stdout and bench/demo_verdicts/verify_cap.json.

--old-test: for every demo that ran the verification past --verify-pairs' extension (files
demo_verdicts-held-extend*.json), at which look the test before it (5..10 pairs, its own
level) would have decided the same pairs; printed only.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path

from iotune.search import sequential

HERE = Path(__file__).resolve().parent


def demo_pairs() -> tuple[list[tuple[float, float]], int]:
    """(default, tuned) times of every held demo's full-winner verification before the
    extension, and how many demos."""
    pairs, demos = [], 0
    for path in sorted(HERE.glob("demo_verdicts-held*.json")):
        if path.name.startswith("demo_verdicts-held-extend"):  # after the change it weighs
            continue
        for run in json.loads(path.read_text()).get("runs") or []:
            rounds = ((run.get("summary") or {}).get("final") or {}).get("rounds") or []
            got = [(r["default"], r["tuned"]) for r in rounds
                   if r.get("default") and r.get("tuned")]  # fmt: skip
            demos += bool(got)
            pairs += got
    return pairs, demos


def replay(pairs, cap: int, repeats: int, seed: int, scale: float = 1.0) -> dict:
    """Share established and mean pairs of `repeats` sequential tests at this cap."""
    design = sequential.design(min(sequential.MIN_PAIRS, cap), cap)
    rng = random.Random(seed)
    won, used = 0, []
    for _ in range(repeats):
        a, b = [], []
        while True:
            x, y = rng.choice(pairs)
            a.append(x)
            b.append(y * scale)
            if len(a) < design.min_pairs:
                continue
            v = sequential.verdict(a, b, design)
            if v.decided:
                won += v.improved
                used.append(len(a))
                break
    return {
        "cap": cap,
        "first_possible": design.first_possible(),
        "established": won / repeats,
        "undecided_or_lost": 1 - won / repeats,
        "mean_pairs": statistics.fmean(used),
    }


def old_test() -> None:
    """The demos with the extension whose full winner took more than 7 pairs: where the plain
    5..10 test of before would have ended on the same pairs."""
    old = sequential.design(5, 10)
    for path in sorted(HERE.glob("demo_verdicts-held-extend*.json")):
        for i, run in enumerate(json.loads(path.read_text()).get("runs") or [], 1):
            final = (run.get("summary") or {}).get("final") or {}
            rounds = final.get("rounds") or []
            if len(rounds) <= 7:
                continue
            a, b = [r["default"] for r in rounds], [r["tuned"] for r in rounds]
            said = f"undecided at {min(10, len(a))}"
            for n in range(5, min(10, len(a)) + 1):
                v = sequential.verdict(a[:n], b[:n], old)
                if v.decided:
                    said = f"{'passed' if v.improved else 'failed'} at {n}"
                    break
            print(f"{path.name} run {i}: {len(a)} pairs, improved {final.get('improved')}; "
                  f"the 5..10 test: {said}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--caps", type=int, nargs="+", default=[10, 12, 14, 15, 20])
    ap.add_argument("--repeats", type=int, default=20000, help="tests replayed a cap (20000)")
    ap.add_argument("--seed", type=int, default=1, help="resampling seed (1)")
    ap.add_argument("--gains", type=float, nargs="+", default=[1.0, 1.3, 1.2],
                    help="median gains to scale the tuned runs to; 1.0 = as measured")  # fmt: skip
    ap.add_argument("--old-test", action="store_true", help="see the module's text")
    args = ap.parse_args()
    if args.old_test:
        old_test()
        return 0
    pairs, demos = demo_pairs()
    measured = statistics.median(a / b for a, b in pairs)
    out = {"demos": demos, "pairs": len(pairs), "median_ratio": measured, "rows": []}
    print(f"{len(pairs)} real pairs from {demos} demos, median ratio {measured:.2f}x")
    print("gain | cap | first possible | established | mean pairs")
    for gain in args.gains:
        scale = 1.0 if gain == 1.0 else measured / gain
        for cap in args.caps:
            row = replay(pairs, cap, args.repeats, args.seed, scale)
            row["gain"] = "as measured" if gain == 1.0 else gain
            out["rows"].append(row)
            print(f"{row['gain']} | {cap} | {row['first_possible']} | "
                  f"{row['established']:.2%} | {row['mean_pairs']:.2f}")  # fmt: skip
    (HERE / "verify_cap.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
