#!/usr/bin/env python3
"""Does `iotune tune --warm-start kb` reach 95 % of the best in fewer trials than a cold start?

Replayed on the measured landscapes (bench/replay/replay.py: iotune's own search loop, a trial draws
one of the measured repetitions of its configuration). The knowledge base holds what earlier
studies would have filed, from the *other* measurement rounds (--stored, never the rounds
replayed here, --replayed): --stored-by study (the default) files the entry an earlier
`iotune tune` replayed on those rounds files (match.entry_from_summary of study.finish's
summary: its search, the re-measurement of its leaders, the verification against the
defaults and the reduction to the settings that carry the gain), with its other re-measured
leaders (Entry.leaders; --no-leaders: the recommendation alone), one knowledge base per
earlier study, --earlier-seeds of them; --stored-by argmin files the single configuration
with the best median of those rounds (a winner's-curse pick among 162 noisy medians). Each
entry is filed under the signature of a real tiny run of that kernel at 2 ranks. The new study
is the same kernel at another problem size and 1 rank: its signature comes from a real run too,
and iotune.kb.seeds picks the seeds by distance (the other kernel's entry is there as well, as
a distractor). Reported per kernel: trials until the recommendation (and the incumbent) first
reaches 95 % / 90 % of the best, median over seeds, cold vs kb.

"The best" depends on whose medians: JUDGES. The replayed rounds' own medians (the first
definition, kept) reward whatever was lucky in exactly the runs the search draws from, and
with 3-4 runs per configuration the best of 162 medians is mostly the luckiest
(bench/landscape_stats/landscape_stats.py); --held-out rounds that neither the search nor the
knowledge base saw give an independent judge, and all rounds together, each run relative to
its round's median run, the most precise one (with its top group: what a test cannot tell
from the best).

Usage: .venv/bin/python bench/kb_warmstart/kb_warmstart.py [--seeds 50] [--out
bench/kb_warmstart/kb_warmstart.json]
       [--replayed landscape.csv] [--stored landscape-rounds4-6.csv] [--held-out FILE.csv]
       [--kernels gcrmio]
  --replayed/--stored/--held-out: CSV files of bench/measure_landscape/
  (bench/measure_landscape/measure_landscape.py), or one
  file split by round with --split N (rounds below N replayed, the others the KB's source)
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

sys.path.insert(0, str(HERE.parent / "replay"))
LANDSCAPES = (
    HERE.parent / "measure_landscape"
)  # the CSVs of bench/measure_landscape/measure_landscape.py

import replay  # noqa: E402

from iotune import paths, space  # noqa: E402
from iotune.kb import capture, match, seeds, store  # noqa: E402
from iotune.search import get_strategy, loop, warmstart  # noqa: E402
from iotune.study import capping_for, finish  # noqa: E402
from iotune.trial import Outcome  # noqa: E402
from iotune.tune_config import TuneConfig  # noqa: E402

STORED_ARGS = {"gcrmio": ["--cells", "65536"], "vorpalio": ["--block", "160,160,100"]}
NEW_ARGS = {"gcrmio": ["--cells", "32768"], "vorpalio": ["--block", "96,96,60"]}


def signature_of(kernel: str, nprocs: int, args: list[str]):
    exe = paths.find_kernel(kernel)
    with tempfile.TemporaryDirectory() as d:
        return capture.profile_signature([*mpitools.mpiexec(nprocs), str(exe), *args], cwd=d)


def earlier_study(land: replay.Landscape, sp: space.Space, seed: int) -> dict:
    """The summary of an earlier `iotune tune` (default strategy, its whole budget) on these
    rounds: the search, then study.finish as a real study runs it (its leaders re-measured,
    the best verified against the defaults with the sequential pairs test, reduced to the
    settings that carry the gain), each run a draw of the measured repetitions, as
    bench/replay/replay.py replays them. Its knowledge-base entry is match.entry_from_summary's,
    exactly what `iotune tune` files (nothing is seeded from a study that verified nothing)."""
    strategy = get_strategy("tpe")
    study = optuna.create_study(sampler=strategy.sampler(seed, len(sp.guesses)))
    warmstart.enqueue(study, sp, strategy.warm_start)
    rng = random.Random(seed)

    def evaluate(settings: dict, cap: float | None) -> Outcome:
        value, wall, metrics = rng.choice(land.samples[land.key(settings)])
        if cap is not None and wall > cap:
            return Outcome("capped", wall_s=cap)
        if value is None:
            return Outcome("failed", wall_s=wall)
        return Outcome("ok", value, "kernel", wall, metrics=dict(metrics))

    with tempfile.TemporaryDirectory() as d:
        cfg = TuneConfig(app=["replayed"], out=Path(d), space=sp, strategy=strategy.name,
                         remember=False, seed=seed)  # fmt: skip
        loop.run(study, sp, evaluate, replay.BUDGETS["tpe"], capping_for(cfg),
                 confirm=strategy.confirm, combine=strategy.warm_start,
                 leave_out_inert=strategy.leave_out_inert)  # fmt: skip
        return finish(cfg, study, evaluate, log=lambda _: None)


MODES = ("final", "incumbent")
JUDGES = {
    "replayed": "median of the replayed rounds' runs (the search draws its noise from them)",
    "held-out": "median of the held-out rounds' runs, each divided by its round's median run "
    "(replay.round_normalised): rounds neither the search nor the knowledge base saw",
    "not the KB's": "median over the replayed and held-out rounds, each run divided by its "
    "round's median run: every round but those the knowledge base was filed from (it cannot "
    "favour the warm start; it favours configurations lucky in the rounds the search draws "
    "from); top group: the configurations a one-sided Mann-Whitney test (p >= 0.05) cannot "
    "show slower than that best (replay.top_group)",
    "pooled": "median over every round (replayed, stored, held-out), each run divided by its "
    "round's median run; top group as above",
}


def judges_for(replayed: list[dict], stored: list[dict], held_out: list[dict]) -> list:
    """What a recommendation is judged by (JUDGES), the replayed rounds' own medians first."""
    norm = replay.round_normalised
    out = [replay.Landscape(replayed).judge("replayed")]
    if held_out:
        out.append(replay.Landscape(norm(held_out)).judge("held-out"))
    out.append(replay.Landscape(norm(replayed + held_out)).judge("not the KB's", top=True))
    out.append(replay.Landscape(norm(replayed + stored + held_out)).judge("pooled", top=True))
    return out


def fewer_trials_p(k: dict, judge: str, target: str = "0.95") -> float:
    """One-sided Mann-Whitney p of "the kb start needs fewer trials than the cold start" to the
    target, over the replayed studies (one that never reached it counts as the budget)."""

    def trials(name: str) -> list[float]:
        reach = [r["judges"][judge]["final"]["reach"][target] for r in k[name]["runs"]]
        return [h[0] if h else replay.BUDGETS["tpe"] for h in reach]

    return replay.mann_whitney_less(trials("kb"), trials("cold"))


def table(results: dict) -> str:
    lines = []
    for jname, what in JUDGES.items():
        if not any(jname in k["cold"]["judges"] for k in results["kernels"].values()):
            continue
        top = any(k["judges"][jname]["top"] for k in results["kernels"].values())
        lines += ["", f"judged by {jname}: {what}", "",
                  "| kernel | start | trials to 90 % | trials to 95 % (median, p75) | seeds "
                  "reaching 95 % | p (kb fewer trials to 95 %) | quality at 30 trials | "
                  "incumbent: trials to 95 % |"
                  + (" trials to the top group (seeds reaching it) |" if top else ""),
                  "|---|---|---|---|---|---|---|---|" + ("---|" if top else "")]  # fmt: skip
        for kernel, k in results["kernels"].items():
            best = k["judges"][jname]
            for name in ("cold", "kb"):
                f, inc = (k[name]["judges"][jname][m] for m in MODES)
                p = "" if name == "cold" else f"{fewer_trials_p(k, jname):.2g}"
                row = (f"| {kernel} | {name} | {f['trials_0.9_median']:g} | "
                       f"{f['trials_0.95_median']:g} ({f['trials_0.95_p75']:g}) | "
                       f"{f['reached_0.95']:.0%} | {p} | "
                       f"{f[f'quality_at_{replay.CHECK_AT}_median']:.0%}"
                       f" | {inc['trials_0.95_median']:g} |")  # fmt: skip
                if top:
                    row += (f" {f['trials_top_median']:g} ({f['reached_top']:.0%}; top group: "
                            f"{len(best['top'])} configurations) |")  # fmt: skip
                lines.append(row)
    return "\n".join(lines).strip()


def without_seed_confirmation() -> None:
    """The search as it was before knowledge-base seeds were confirmed and a confirmed
    configuration kept among the leaders (for the ablation only)."""
    from iotune.search import noise

    loop._confirm_seeds = lambda *a, **k: None
    loop.leaders = lambda study, n, maximize: noise.ranked(
        noise.group(noise.measured(study)), maximize
    )[:n]


SEED_ORDERS = {
    "kb-rules": "every knowledge-base guess, then the rule-based guesses (seeds.in_order)",
    "nearest-rules-kb": "the nearest entry's recommendation, the rule-based guesses, the other "
    "knowledge-base guesses",
    "interleaved": "knowledge-base and rule-based guesses alternating, a knowledge-base one first",
}


def with_seed_order(order: str) -> None:
    """The first trials of a warm start in another order than seeds.in_order's (SEED_ORDERS;
    for the ablation only)."""

    def interleaved(kb: list, rules: list) -> list:
        out = []
        for i in range(max(len(kb), len(rules))):
            out += kb[i : i + 1] + rules[i : i + 1]
        return out

    seeds.in_order = {
        "kb-rules": seeds.in_order,
        "nearest-rules-kb": lambda kb, rules: [*kb[:1], *rules, *kb[1:]],
        "interleaved": interleaved,
    }[order]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--out", type=Path, default=HERE / "kb_warmstart.json")
    ap.add_argument("--replayed", default="landscape.csv")
    ap.add_argument("--stored", default="landscape-rounds4-6.csv")
    ap.add_argument("--split", type=int, help="one file (--replayed), split by round")
    ap.add_argument("--kernels", default=",".join(replay.SPACES))
    ap.add_argument("--stored-by", choices=("study", "argmin"), default="study",
                    help="what the KB holds: an earlier study's recommendation on the stored "
                    "rounds (study) or their single best median (argmin)")  # fmt: skip
    ap.add_argument("--earlier-seeds", type=int, default=5,
                    help="earlier studies (one knowledge base each; the kb start runs --seeds "
                    "new studies on each, the cold start --seeds)")  # fmt: skip
    ap.add_argument(
        "--no-leaders",
        action="store_true",
        help="file the recommendation alone, not the study's other leaders too",
    )
    ap.add_argument(
        "--held-out", help="CSV of rounds neither replayed nor stored: judge by them as well"
    )
    ap.add_argument(
        "--without-seed-confirmation",
        action="store_true",
        help="ablation: the search without the confirmation of knowledge-base seeds and with "
        "the leaders by median alone (loop._confirm_seeds, loop.leaders), as before them",
    )
    ap.add_argument(
        "--seed-order",
        choices=SEED_ORDERS,
        default="kb-rules",
        help="ablation: the order of a warm start's first guesses (SEED_ORDERS)",
    )
    ap.add_argument("--retable", type=Path, help="only write the table of this JSON result again")
    ap.add_argument(
        "--no-rule-guesses",
        action="store_true",
        help="the new studies without the space's rule-based guesses (cold and kb)",
    )
    args = ap.parse_args()
    if args.retable:
        text = table(json.loads(args.retable.read_text()))
        print(text)
        args.retable.with_suffix(".txt").write_text(text + "\n")
        return 0
    if args.without_seed_confirmation:
        without_seed_confirmation()
    with_seed_order(args.seed_order)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    kernels = args.kernels.split(",")
    replayed = [r for r in csv.DictReader(open(LANDSCAPES / args.replayed))]
    if args.split is not None:
        earlier = [r for r in replayed if int(r["round"]) >= args.split]
        replayed = [r for r in replayed if int(r["round"]) < args.split]
    else:
        earlier = [r for r in csv.DictReader(open(LANDSCAPES / args.stored))]
    source = f"rounds >= {args.split}" if args.split is not None else args.stored
    stored_sigs = {k: signature_of(k, 2, STORED_ARGS[k]) for k in kernels}
    # one knowledge base per earlier study (--earlier-seeds of them: which configuration an
    # earlier study files depends on its own noise draws, so one would be an anecdote)
    kbs: list[list[store.Entry]] = []
    for earlier_seed in range(args.earlier_seeds if args.stored_by == "study" else 1):
        entries = []
        for i, kernel in enumerate(kernels):
            land = replay.Landscape([r for r in earlier if r["kernel"] == kernel])
            if args.stored_by == "study":
                sp = space.load(replay.SPACES[kernel])
                summary = earlier_study(land, sp, 1000 + earlier_seed)
                e = match.entry_from_summary(summary, stored_sigs[kernel], "replayed")
                e.study = f"{kernel} ({source})"
                if args.no_leaders:
                    e.leaders = []
            else:
                best = min(land.truth, key=land.truth.get)
                settings = next(json.loads(r["settings"] or "{}") for r in earlier
                                if r["kernel"] == kernel and r["config"] == best)  # fmt: skip
                e = store.Entry(
                    signature=stored_sigs[kernel],
                    settings=settings,
                    space=f"grid-{kernel}",
                    speedup=land.default / land.truth[best],
                    improved=True,
                    study=f"{kernel} ({source})",
                )
            e.id = i + 1
            entries.append(e)
        kbs.append(entries)
    results = {
        "command": " ".join([sys.executable, *sys.argv]),
        "git": subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "host": platform.node(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seeds": args.seeds,
        "stored_by": args.stored_by,
        "earlier_seeds": len(kbs),
        "replayed": args.replayed + (f" rounds < {args.split}" if args.split is not None else ""),
        "stored_from": (
            f"{args.replayed} rounds >= {args.split}" if args.split is not None else args.stored
        ),  # fmt: skip
        "stored": [
            [
                {
                    "study": e.study,
                    "settings": e.settings,
                    "improved": e.improved,
                    "speedup": e.speedup,
                    "p_value": e.p_value,
                    "leaders": e.leaders,
                    "key": e.signature.key,
                    "ranks": e.signature.scale["ranks"],
                }
                for e in entries
            ]
            for entries in kbs
        ],  # fmt: skip
        "kernels": {},
    }
    held_out = list(csv.DictReader(open(LANDSCAPES / args.held_out))) if args.held_out else []
    results["held_out"] = args.held_out
    results["rule_guesses"] = not args.no_rule_guesses
    results["seed_confirmation"] = not args.without_seed_confirmation
    results["seed_order"] = args.seed_order
    for kernel in kernels:
        space_file = replay.SPACES[kernel]
        land = replay.Landscape([r for r in replayed if r["kernel"] == kernel])
        judges = judges_for([r for r in replayed if r["kernel"] == kernel],
                            [r for r in earlier if r["kernel"] == kernel],
                            [r for r in held_out if r["kernel"] == kernel])  # fmt: skip
        sp = space.load(space_file)
        if args.no_rule_guesses:  # what the knowledge base knows beyond the rules (both starts)
            sp = dataclasses.replace(sp, guesses=[])
        new_sig = signature_of(kernel, 1, NEW_ARGS[kernel])
        seeded = [seeds.seeded_space(sp, entries, new_sig) for entries in kbs]
        k = {
            "new_signature": new_sig.to_json(),
            "seeds": [
                [
                    {
                        "name": g.name,
                        "settings": dict(g.settings),
                        "quality": land.best
                        / land.truth.get(land.key(dict(g.settings)), float("inf")),
                        "judged": {
                            j.name: {
                                "quality": j.quality(land.key(dict(g.settings))),
                                "top": j.reached(land.key(dict(g.settings)), replay.TOP),
                            }
                            for j in judges
                        },
                    }
                    for g in chosen
                ]
                for _, chosen in seeded
            ],  # fmt: skip
            "best_s": land.best,
            "default_s": land.default,
            "judges": {j.name: {"best": j.best, "top": sorted(j.top or [])} for j in judges},
        }
        for name, spaces in (("cold", [sp]), ("kb", [s for s, _ in seeded])):
            t0 = time.monotonic()
            runs = [replay.replay(land, s, "tpe", seed, judges)
                    for s in spaces for seed in range(args.seeds)]  # fmt: skip
            k[name] = {
                mode: replay.summarise([r[mode] for r in runs], replay.BUDGETS["tpe"])
                for mode in MODES
            }
            k[name]["judges"] = {
                j.name: {
                    mode: replay.summarise(
                        [r["judges"][j.name][mode] for r in runs], replay.BUDGETS["tpe"]
                    )  # fmt: skip
                    for mode in MODES
                }
                for j in judges
            }
            k[name]["elapsed_s"] = round(time.monotonic() - t0, 1)
            k[name]["runs"] = runs
            for j in judges:
                f = k[name]["judges"][j.name]["final"]
                print(f"{kernel} {name} [{j.name}]: 95 % after {f['trials_0.95_median']} trials "
                      f"(median; p75 {f['trials_0.95_p75']}), reached by {f['reached_0.95']:.0%};"
                      f" 90 % after {f['trials_0.9_median']}", flush=True)  # fmt: skip
        results["kernels"][kernel] = k
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    text = table(results)
    print(text)
    args.out.with_suffix(".txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
