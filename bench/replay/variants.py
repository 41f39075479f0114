#!/usr/bin/env python3
"""Variants of the `local` strategy's final phases and stopping, replayed as whole studies on
the landscapes it was tuned on (seeds 100-129: never the published seeds 0-99), to choose its
constants (bench/README.md, "Fewer runs, the noise counted").

Each variant is one comma-separated spec of knobs (iotune.race, iotune.pairs, iotune.tune_config,
iotune.search.local):
  reuse,rounds,small,fpairs,flevel,vpairs,patience,earlykeep,leaders,confirm
reuse      1: the race starts from the contenders' search runs (race.RACE_REUSE)
rounds     the race's fresh rounds with reuse (race.RACE_ROUNDS)
small      1: the verification stops once its interval lies below --min-gain
fpairs     ... from this pair on (pairs.FUTILITY_PAIRS)
flevel     ... at this one-sided level (pairs.FUTILITY_LEVEL)
vpairs     --verify-pairs
patience   trials without a gain of --min-gain before the search stops (local.PATIENCE)
earlykeep  1: the race ends once its choice would be the defaults (race.RACE_EARLY_KEEP)
leaders    leaders raced (tune_config.RACE_LEADERS)
confirm    re-measure a new incumbent to this many runs during the search (0: off)
lane       optional: FIRST:LAST:LEVEL:WALPHA, a sequential t lane on the verification's log
           ratios at looks FIRST..LAST (0: --verify-pairs) at per-look level LEVEL, beside the
           signed-rank design at WALPHA (0: none) (ttest_lane.py, ttest_design.py)

Landscapes: GCRM-IO and VORPAL-IO (held), the same with twice the noise (replay.noisier), and
flat ones made of each one's defaults' runs. Per landscape: median runs (search / race /
verification), correct verdicts (within 95 % of the best median), keep the defaults, median
quality.

  PYTHONPATH=src nice -n 19 .venv/bin/python bench/replay/variants.py 0,3,1,5,0.1,20,6,1,2,0
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from pathlib import Path

import optuna

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import replay as R  # noqa: E402
import ttest_lane as TL  # noqa: E402

from iotune import pairs as P  # noqa: E402
from iotune import race as RA  # noqa: E402
from iotune import space  # noqa: E402
from iotune import tune_config as TC  # noqa: E402
from iotune.search import local as LO  # noqa: E402
from iotune.search import strategies as ST  # noqa: E402

SEEDS = range(100, 130)


def landscapes() -> dict:
    m = R.LANDSCAPES
    held = [m / f for f in R.HELD]
    gc, vo = R.load_landscape(held, "gcrmio"), R.load_landscape(held, "vorpalio")
    sg, sv = space.load(R.SPACES["gcrmio"]), space.load(R.SPACES["vorpalio"])
    return {
        "gcrm": (gc, sg),
        "vorp": (vo, sv),
        "gcrm2x": (R.noisier(gc, 2.0), sg),
        "vorp2x": (R.noisier(vo, 2.0), sv),
        "flatV": (R.flat_landscape(vo), sv),
        "flatG": (R.flat_landscape(gc), sg),
    }


def run(spec: str, lands: dict) -> str:
    reuse, rounds, small, fp, fl, vp, pat, ek, nl, cf, *lane = spec.split(",")
    TL.install(lane[0] if lane else None)
    RA.RACE_REUSE, RA.RACE_ROUNDS = reuse == "1", int(rounds)
    P.FUTILITY_PAIRS, P.FUTILITY_LEVEL = int(fp), float(fl)
    RA.RACE_EARLY_KEEP, TC.RACE_LEADERS, LO.PATIENCE = ek == "1", int(nl), int(pat)
    ST.STRATEGIES["local"] = dataclasses.replace(ST.STRATEGIES["local"], confirm=int(cf))
    R.TuneConfig = lambda **kw: dataclasses.replace(TC.TuneConfig(**kw), verify_pairs=int(vp))
    if small != "1":  # the verification without its min-gain stop
        P.FUTILITY_PAIRS = 10**6
    out = []
    for name, (land, sp) in lands.items():
        st = [R.replay_study(land, sp, "local", s) for s in SEEDS]
        ph = {p: statistics.median(x["runs"].get(p, 0) for x in st)
              for p in ("search", "re-measure", "verification")}  # fmt: skip
        out.append(
            f"{name}: runs {statistics.median(x['runs']['total'] for x in st):g} "
            f"({ph['search']:g}/{ph['re-measure']:g}/{ph['verification']:g}) correct "
            f"{sum(x['correct'] for x in st) / len(st):.0%} keep "
            f"{sum(x['keep_defaults'] for x in st) / len(st):.0%} quality "
            f"{statistics.median(x['quality'] for x in st):.2f}"
        )
    return f"{spec}\n  " + "\n  ".join(out)


def main() -> int:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    lands = landscapes()
    for spec in sys.argv[1:]:
        print(run(spec, lands), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
