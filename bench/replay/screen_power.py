#!/usr/bin/env python3
"""How often the reduction keeps a real second gain, with and without its screen
(reduction._screen): a synthetic winner of three settings (the main gain 2x, a second gain A, a
third setting that costs H or nothing), every run's time lognormal around its true value, the
search's trials all eight combinations three times each, reduction.minimal run as `iotune tune`
runs it (the bar --min-gain 5 %, --verify-pairs 20). Per (A, H, noise): the share of studies
whose reduced set keeps A, the share that keeps the third setting, and the application runs of
the reduction, for the code before the screen (SCREEN off), the screen testing the others
together only (SCREEN_SECOND off), and the screen also testing the next clearest setting alone
(the default).

  .venv/bin/python bench/replay/screen_power.py --seeds 100 --out bench/replay/screen_power.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from iotune import reduction, space, tune_config
from iotune.trial import Outcome

HERE = Path(__file__).resolve().parent
FAKE_SPACE = HERE.parents[1] / "tests/python/fake_space.toml"
MAIN, SECOND, THIRD = "cb_buffer_size", "chunk_cache_bytes", "romio_cb_write"
WINNER = {MAIN: "1048576", SECOND: "8388608", THIRD: "disable"}
VARIANTS = {"before": (False, False), "screen, others only": (True, False), "screen": (True, True)}


def truth(settings: dict, a: float, h: float) -> float:
    t = 0.5 if settings.get(MAIN) else 1.0
    if settings.get(SECOND):
        t /= a
    if settings.get(THIRD):
        t *= h
    return t


def trials(a: float, h: float, noise: float, rng: random.Random) -> list[dict]:
    out = []
    for i in range(24):
        s = {k: v for j, (k, v) in enumerate(WINNER.items()) if (i >> j) & 1}
        out.append({"settings": s, "value": truth(s, a, h) * rng.lognormvariate(0, noise)})
    return out


def one(a: float, h: float, noise: float, seed: int, sp, out: Path) -> dict:
    rng = random.Random(seed)
    runs = []

    def evaluate(settings, cap):
        runs.append(1)
        t = truth(settings, a, h) * rng.lognormvariate(0, noise)
        return Outcome("ok", t, "kernel", t)

    cfg = tune_config.TuneConfig(app=["x"], out=out, space=sp, seed=seed, strategy="tpe")
    rows = trials(a, h, noise, random.Random(seed + 10_000))
    got = reduction.minimal(cfg, dict(WINNER), evaluate, False, random.Random(seed), lambda m: None,
                            rows)  # fmt: skip
    return {"second": SECOND in got["settings"], "third": THIRD in got["settings"],
            "runs": len(runs)}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--gains", default="1.0,1.07,1.10,1.15,1.3", help="A (default %(default)s)")
    ap.add_argument("--costs", default="1.0,1.06", help="H (default %(default)s)")
    ap.add_argument("--noises", default="0.05,0.2", help="log-normal sigma (default %(default)s)")
    ap.add_argument("--out", type=Path, default=HERE / "screen_power.json")
    args = ap.parse_args()
    sp = space.load(FAKE_SPACE)
    rows = []
    t0 = time.monotonic()
    for noise in map(float, args.noises.split(",")):
        for h in map(float, args.costs.split(",")):
            for a in map(float, args.gains.split(",")):
                row = {"second_gain": a, "third_cost": h, "noise": noise}
                for name, (screen, second) in VARIANTS.items():
                    reduction.SCREEN, reduction.SCREEN_SECOND = screen, second
                    got = [one(a, h, noise, s, sp, Path("/tmp")) for s in range(args.seeds)]
                    row[name] = {
                        "keeps_second": sum(g["second"] for g in got) / len(got),
                        "keeps_third": sum(g["third"] for g in got) / len(got),
                        "runs_mean": sum(g["runs"] for g in got) / len(got),
                    }
                rows.append(row)
                print(json.dumps(row), flush=True)
    meta = {"command": " ".join(sys.argv), "seeds": args.seeds,
            "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"| noise | A | H | {' | '.join(VARIANTS)} (A kept; third kept; runs) |")
    for r in rows:
        cells = [f"{r[n]['keeps_second']:.0%}; {r[n]['keeps_third']:.0%}; "
                 f"{r[n]['runs_mean']:.0f}" for n in VARIANTS]  # fmt: skip
        print(f"| {r['noise']} | {r['second_gain']} | {r['third_cost']} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
