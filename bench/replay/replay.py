#!/usr/bin/env python3
"""Replay search strategies against a measured landscape (bench/measure_landscape/landscape.csv).

Each strategy runs iotune's own search loop (iotune.search.loop with the strategy's sampler,
warm start and capping), but a trial does not launch anything: it draws one of the measured
repetitions of that configuration (value and wall time), so the noise is the machine's own.
A capped trial costs its cap. After every trial the configuration the tuner would recommend
(best median of what it has measured so far) is judged by its true quality: the median of
all the repetitions in the landscape.

Reported per kernel and strategy, over many seeds: trials and replayed tuning time (sum of the
wall times of the trials run) until the recommendation first reaches 90 % and 95 % of the best
configuration's performance (i.e. its true time is at most best / 0.90 or best / 0.95), and the
share of seeds that reached it within the budget.

With --read-dims the grid spaces also hold the read-side parameters of the `local` preset
(romio_cb_read, romio_ds_read, ind_rd_buffer_size) and a guess that sets one: the landscapes are
of write phases, which those cannot touch, so a trial's value ignores them (and the runs
report that they read nothing). This measures what searching parameters that cannot matter
costs, with the default strategy leaving them out after the baseline (prune) and without.

Usage: .venv/bin/python bench/replay/replay.py [--seeds 50] [--out bench/replay/replay.json]
       .venv/bin/python bench/replay/replay.py --read-dims --strategies tpe,tpe-no-prune
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple
from unittest import mock

import optuna

from iotune import pairs, reduction, space
from iotune.race import remeasure_leaders
from iotune.search import get_strategy, loop, marginal, sequential, warmstart
from iotune.study import capping_for
from iotune.trial import Outcome
from iotune.tune_config import TuneConfig

HERE = Path(__file__).resolve().parent
LANDSCAPES = (
    HERE.parent / "measure_landscape"
)  # the CSVs of bench/measure_landscape/measure_landscape.py
SPACES = {
    "gcrmio": HERE.parent / "measure_landscape" / "spaces" / "grid-gcrmio.toml",
    "vorpalio": HERE.parent / "measure_landscape" / "spaces" / "grid-vorpalio.toml",
}
BUDGETS = {"tpe": 100, "tpe-no-prune": 100, "local": 100, "random": 200, "genetic": 600}
READ_DIMS = ("romio_cb_read", "romio_ds_read", "ind_rd_buffer_size")


def with_read_dims(sp: space.Space) -> space.Space:
    """The space plus the local preset's read-side parameters and a guess setting one."""
    local = space.load("local")
    guess = space.Guess("no collective buffering on reads", {"romio_cb_read": "disable"})
    return dataclasses.replace(
        sp,
        dims=sp.dims + [local.dim(n) for n in READ_DIMS],
        guesses=sp.guesses + [guess],
    )


class CannotReplay(ValueError):
    """A configuration the landscape cannot stand for; str() says why."""


TARGETS = (0.90, 0.95)
TOP = "top"  # a target too: the recommendation is in the judge's top group
CHECK_AT = 30


def _bytes(r: dict) -> tuple[int | None, int | None]:
    """(read, written) of a landscape row: its bytes_read / bytes_written columns, else its
    `bytes` counted for its phase (`phase` column; landscapes without one are write phases)."""
    if r.get("bytes_read") not in (None, "") or r.get("bytes_written") not in (None, ""):
        return int(r.get("bytes_read") or 0), int(r.get("bytes_written") or 0)
    if r.get("bytes") in (None, ""):
        return None, None
    n = int(r["bytes"])
    return (n, 0) if r.get("phase", "write") == "read" else (0, n)


class Landscape:
    def __init__(self, rows: list[dict]):
        self.samples: dict[str, list[tuple[float | None, float, dict]]] = defaultdict(list)
        self.params: set[str] = set()  # the parameters the landscape varied
        self.reads = False
        for r in rows:
            value = float(r["value_s"]) if r["status"] == "ok" and r["value_s"] else None
            read, written = _bytes(r)
            metrics = {} if read is None else {"bytes_read": read, "bytes_written": written}
            self.reads = self.reads or bool(read)
            self.samples[r["config"]].append((value, float(r["wall_s"]), metrics))
            self.params |= set(json.loads(r["settings"])) if r.get("settings") else set()
        self.truth = {}
        for key, s in self.samples.items():
            ok = [v for v, _, _ in s if v is not None]
            # a configuration that failed in half its runs or more is never good
            self.truth[key] = statistics.median(ok) if len(ok) * 2 > len(s) else float("inf")
        self.best = min(self.truth.values())
        self.default = self.truth["(defaults)"]

    def reached(self, key: str, q: float) -> bool:
        return self.truth.get(key, float("inf")) <= self.best / q

    def judge(self, name: str = "replayed", top: bool = False) -> Judge:
        """This landscape's own medians as the truth (with its top group, if asked)."""
        return Judge(name, dict(self.truth), self.best, top_group(self) if top else None)

    def key(self, settings: dict) -> str:
        """The landscape's key of a configuration. A setting of a parameter the landscape never
        varied is left out only when it cannot change what was measured (a read-side setting
        on a landscape that read nothing); otherwise the landscape cannot stand for it. A
        setting that the configuration's MPI-IO component never reads (Open MPI's OMPIO
        parameters with io=romio321, ROMIO's hints under OMPIO) is left out too: the landscape
        measured that component with its own settings only."""
        from iotune import mpifamily

        kept = {}
        io = settings.get("io")
        for k, v in settings.items():
            if io is not None and mpifamily.unread_under(k, io):
                continue
            if k in self.params:
                kept[k] = v
            elif k in READ_DIMS and not self.reads:
                continue
            else:
                raise CannotReplay(f"the landscape never varied {k}: it cannot replay {k}={v}")
        return space.config_key(kept)


class Judge(NamedTuple):
    """What a recommendation is judged by: a true time per configuration and the best of
    them (95 % of the best: time <= best / 0.95), and optionally a top group: configurations
    that the measurements cannot tell from the best (target TOP)."""

    name: str
    truth: dict[str, float]
    best: float
    top: frozenset[str] | None = None

    def quality(self, key: str) -> float:
        return self.best / self.truth.get(key, float("inf"))

    def reached(self, key: str, target: float | str) -> bool:
        if target == TOP:
            return self.top is not None and key in self.top
        return self.truth.get(key, float("inf")) <= self.best / float(target)

    def targets(self) -> tuple[float | str, ...]:
        return TARGETS + ((TOP,) if self.top is not None else ())


def round_normalised(rows: list[dict]) -> list[dict]:
    """The rows with each successful value divided by the median value of its kernel's round.
    A round runs every configuration once in shuffled order, so what the machine did during
    that round (other users' load: round medians of one landscape differ by up to 2x) is
    common to all its configurations and cancels; what is left compares configurations."""
    by_round: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r["status"] == "ok" and r["value_s"]:
            by_round[(r["kernel"], r["round"])].append(float(r["value_s"]))
    ref = {k: statistics.median(v) for k, v in by_round.items()}
    out = []
    for r in rows:
        if r["status"] == "ok" and r["value_s"]:
            r = {**r, "value_s": str(float(r["value_s"]) / ref[(r["kernel"], r["round"])])}
        out.append(r)
    return out


def mann_whitney_less(a: list[float], b: list[float]) -> float:
    """One-sided p of "a is smaller than b": Mann-Whitney U, normal approximation with a
    continuity correction and the tie-corrected variance."""
    n, m = len(a), len(b)
    if not n or not m:
        return 1.0
    both = sorted(a + b)
    rank: dict[float, float] = {}
    i = 0
    while i < len(both):
        j = i
        while j + 1 < len(both) and both[j + 1] == both[i]:
            j += 1
        rank[both[i]] = (i + j) / 2 + 1
        i = j + 1
    u = sum(rank[x] for x in a) - n * (n + 1) / 2  # small when a is smaller
    ties = sum(t**3 - t for t in Counter(both).values())
    var = n * m / 12 * ((n + m + 1) - ties / ((n + m) * (n + m - 1)))
    if var <= 0:
        return 1.0
    z = (u - n * m / 2 + 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(-z / math.sqrt(2))


def top_group(land: Landscape, alpha: float = 0.05) -> frozenset[str]:
    """The configurations whose runs a one-sided Mann-Whitney test at level alpha cannot show
    to be slower than the best median's runs (the best itself included)."""
    ok = {k: [v for v, _, _ in s if v is not None] for k, s in land.samples.items()}
    best = min(land.truth, key=land.truth.get)
    return frozenset(k for k, v in ok.items() if land.truth[k] != float("inf")
                     and mann_whitney_less(ok[best], v) >= alpha)  # fmt: skip


BOOT = 400  # resamples of a landscape's repetitions (noise_of)


def noise_of(land: Landscape, q: float = 0.95, resamples: int = BOOT, seed: int = 0) -> dict:
    """How far the landscape's noise lets "within q of the best" be told: each resample draws
    every configuration's repetitions again (with replacement) and takes their medians as
    another equally likely truth. Per configuration: the share of resamples in which it is
    within q of that resample's best ("p"); for the landscape: how often the best median's
    configuration stays the best, and how often the set within q stays the same set. Cached on
    the landscape."""
    have = getattr(land, "_noise", None)
    if have is not None:
        return have
    r = random.Random(seed)
    ok = {k: [v for v, _, _ in s if v is not None] for k, s in land.samples.items()}
    ok = {k: v for k, v in ok.items() if land.truth.get(k, math.inf) != math.inf and v}
    within = frozenset(k for k in ok if land.reached(k, q))
    best_key = min(land.truth, key=land.truth.get)
    hits: Counter = Counter()
    same_best = same_set = 0
    sizes = []
    for _ in range(resamples):
        med = {k: statistics.median(r.choices(v, k=len(v))) for k, v in ok.items()}
        b = min(med.values())
        w = frozenset(k for k, m in med.items() if m <= b / q)
        hits.update(w)
        sizes.append(len(w))
        same_best += min(med, key=med.get) == best_key
        same_set += w == within
    out = {
        "p": {k: hits[k] / resamples for k in ok},
        "best_stays_best": same_best / resamples,
        "set_within_stays_same": same_set / resamples,
        "within_median_size": statistics.median(sizes),
        "likely_within": sum(1 for k in ok if hits[k] / resamples >= 0.5),
        "resamples": resamples,
        "repetitions_median": statistics.median(len(v) for v in ok.values()),
        "top_group": len(top_group(land)),
    }
    land._noise = out
    return out


def replay(
    land: Landscape,
    sp: space.Space,
    strategy: str,
    seed: int,
    judges: list[Judge] | None = None,
) -> dict:
    """One replayed study. Judged by `judges` (default: the landscape's own medians); the
    result's "incumbent" and "final" are the first judge's, "judges" holds every judge's."""
    judges = judges or [land.judge()]
    rng = random.Random(seed * 7919 + sorted(BUDGETS).index(strategy))
    rng_final = random.Random(seed * 104729 + 17)  # the final phase's own noise stream
    s = get_strategy(strategy.removesuffix("-no-prune"))
    prune = s.leave_out_inert and not strategy.endswith("-no-prune")
    study = optuna.create_study(sampler=s.sampler(seed, len(sp.guesses)))
    warmstart.enqueue(study, sp, s.warm_start)
    cfg = TuneConfig(app=[], out=Path("."), space=sp, strategy=s.name)
    cost = 0.0
    modes = ("incumbent", "final")
    # reach[judge][mode][target] = (trials, replayed time) when the target was first met
    reach: dict[str, dict[str, dict]] = {j.name: {m: {} for m in modes} for j in judges}
    quality: dict[str, dict[str, float]] = {j.name: {} for j in judges}

    def draw(key: str, r: random.Random, cap: float | None = None) -> Outcome:
        value, wall, metrics = r.choice(land.samples[key])
        if cap is not None and wall > cap:
            return Outcome("capped", wall_s=cap)
        if value is None:
            return Outcome("failed", wall_s=wall)
        # what the run read and wrote, as measured (what leaving out inert settings looks at)
        return Outcome("ok", value, "kernel", wall, metrics=dict(metrics))

    def evaluate(settings: dict, cap: float | None) -> Outcome:
        nonlocal cost
        o = draw(land.key(settings), rng, cap)
        cost += o.wall_s
        return o

    def final_choice() -> tuple[str, float]:
        """What `iotune tune` would recommend if the study stopped now: its leaders re-measured
        (the same code, race.remeasure_leaders), and the cost of doing so."""
        spent = 0.0

        def again(settings: dict, cap: float | None) -> Outcome:
            nonlocal spent
            o = draw(land.key(settings), rng_final)
            spent += o.wall_s
            return o

        chosen = remeasure_leaders(cfg, study, again, rng_final)
        return land.key(chosen.get("best_settings") or {}), spent

    class Done(Exception):
        pass

    def on_trial(p: loop.Progress) -> None:
        inc = loop.incumbent(study, maximize=False)
        if inc is None:
            return
        final_key, extra = final_choice()
        inc_key = land.key(inc.settings)
        for mode, key, c in (("incumbent", inc_key, cost), ("final", final_key, cost + extra)):
            for j in judges:
                for q in j.targets():
                    if q not in reach[j.name][mode] and j.reached(key, q):
                        reach[j.name][mode][q] = (p.done, c)
                if p.done == CHECK_AT:
                    quality[j.name][mode] = j.quality(key)
        met = all(len(reach[j.name][m]) == len(j.targets()) for j in judges for m in modes)
        if met and p.done >= CHECK_AT:
            raise Done

    try:
        loop.run(
            study,
            sp,
            evaluate,
            BUDGETS[strategy],
            capping_for(cfg),
            on_trial,
            confirm=s.confirm,
            combine=s.warm_start,
            leave_out_inert=prune,
        )
    except Done:
        pass
    judged = {
        j.name: {
            mode: {
                "reach": {str(q): reach[j.name][mode].get(q) for q in j.targets()},
                "quality_at_check": quality[j.name].get(mode, 0.0),
            }
            for mode in modes
        }
        for j in judges
    }
    return {**judged[judges[0].name], "judges": judged}


# ----------------------------------------------------------------------------- whole studies
# (issue 25): the search, then study.finish as `iotune tune` runs it, every run a draw.

STUDY_BUDGETS = {"local": 30, "tpe": 30, "random": 60, "local+kb": 30}
CI_RESAMPLES = 2000


def flat_landscape(land: Landscape, key: str = "(defaults)") -> Landscape:
    """A flat landscape: every configuration of `land` gets the repetitions of one of its
    configurations (by default the defaults'): no setting changes anything, only the noise
    is the machine's own. The correct verdict there is "keep the defaults"."""
    flat = Landscape.__new__(Landscape)
    flat.samples = {k: list(land.samples[key]) for k in land.samples}
    flat.params, flat.reads = set(land.params), land.reads
    flat.truth = {k: land.truth[key] for k in land.samples}
    flat.best = flat.default = land.truth[key]
    # the truth is exact by construction (every configuration is the same one): no noise in
    # which configuration is within 95 % of the best, every one is
    flat._top = frozenset(flat.samples)
    flat._noise = {"p": dict.fromkeys(flat.samples, 1.0), "best_stays_best": None,
                   "set_within_stays_same": 1.0, "within_median_size": len(flat.samples),
                   "likely_within": len(flat.samples), "resamples": 0,
                   "repetitions_median": len(land.samples[key]),
                   "top_group": len(flat.samples)}  # fmt: skip
    return flat


def noisier(land: Landscape, factor: float) -> Landscape:
    """The landscape with every run's deviation from its configuration's median raised to
    `factor` in log scale (value = median x (value / median) ** factor): the same medians,
    factor times the noise (e.g. 2: the demo's CV of 24-36 % from the held landscapes'
    12-18 %). A stress test of a strategy's reliability, not a measurement."""
    out = Landscape.__new__(Landscape)
    out.samples = {}
    for k, s in land.samples.items():
        med = land.truth[k]
        out.samples[k] = [
            (None if v is None or med == math.inf else med * (v / med) ** factor, w, m)
            for v, w, m in s
        ]
    out.params, out.reads = set(land.params), land.reads
    out.truth, out.best, out.default = dict(land.truth), land.best, land.default
    return out


def kb_guesses(land: Landscape, sp: space.Space, seed: int) -> list[space.Guess]:
    """What a knowledge-base entry of an earlier study of the same motif (another run: another
    seed of the whole default study on the same landscape) seeds: its recommendation, then its
    other raced leaders, as `--warm-start kb` puts them before the rule-based guesses."""
    earlier = replay_study(land, sp, "local", 10_000 + seed, keep_summary=True)["summary"]
    out, seen = [], set()
    recommended = earlier.get("recommended") or {}
    candidates = [recommended] if recommended else []
    leaders = earlier.get("leaders") or {}
    candidates += [leaders.get("settings", {}).get(k, {}) for k in leaders.get("leaders", [])]
    for i, settings in enumerate(candidates):
        key = space.config_key(settings)
        if not settings or key in seen:
            continue
        seen.add(key)
        out.append(space.Guess(f"{warmstart.FROM_KB}earlier study {i}", dict(settings)))
    return out


def replay_study(
    land: Landscape,
    sp: space.Space,
    strategy: str,
    seed: int,
    warmup: int = 0,
    keep_summary: bool = False,
    verify_pairs: int | None = None,
) -> dict:
    """One whole `iotune tune` study replayed: the strategy's search (its own budget, its early
    stop), then study.finish (race or re-measurement of the leaders, verification pairs, the
    reduction where the strategy makes one, `warmup` discarded runs before each measured run of
    the final phases); every application run is a draw of the configuration's measured
    repetitions. Returns the trials until the incumbent was first within 95 % of the best, the
    study's runs by phase, its recommendation and whether that is correct."""
    import tempfile

    from iotune.study import finish, search

    name = strategy.removesuffix("+kb")
    s = get_strategy(name)
    rng = random.Random(seed * 7919 + 3)
    if strategy.endswith("+kb"):
        sp = dataclasses.replace(sp, guesses=[*kb_guesses(land, sp, seed), *sp.guesses])
    study = optuna.create_study(sampler=s.sampler(seed, len(sp.guesses)))
    warmstart.enqueue(study, sp, s.warm_start)
    runs = Counter()

    def evaluate(settings: dict, cap: float | None) -> Outcome:
        value, wall, metrics = rng.choice(land.samples[land.key(settings)])
        runs["all"] += 1
        if cap is not None and wall > cap:
            return Outcome("capped", wall_s=cap)
        if value is None:
            return Outcome("failed", wall_s=wall)
        return Outcome("ok", value, "kernel", wall, metrics=dict(metrics))

    reached: dict[str, int] = {}
    shape = noise_of(land)
    top = top_group(land) if not hasattr(land, "_top") else land._top
    land._top = top

    def on_trial(p: loop.Progress) -> None:
        inc = loop.incumbent(study, maximize=False)
        if inc is None:
            return
        key = land.key(inc.settings)
        for q in TARGETS:
            if str(q) not in reached and land.reached(key, q):
                reached[str(q)] = p.done
        if "likely" not in reached and shape["p"].get(key, 0.0) >= 0.5:
            reached["likely"] = p.done  # more likely than not within 95 %, noise counted
        if TOP not in reached and key in top:
            reached[TOP] = p.done

    with tempfile.TemporaryDirectory() as d, mock.patch("iotune.report.write_all"):
        # (the report's plots cost 5 s a study and change nothing replayed)
        cfg = TuneConfig(app=["replayed"], out=Path(d), space=sp, strategy=name,
                         trials=STUDY_BUDGETS[strategy], remember=False, seed=seed,
                         warmup=warmup)  # fmt: skip
        if verify_pairs is not None:
            cfg.verify_pairs = verify_pairs
        search(cfg, study, evaluate, on_trial)
        search_runs = runs["all"]
        summary = finish(cfg, study, evaluate, log=lambda _: None)
    recommended = summary.get("recommended") or {}
    key = land.key(recommended)
    out = {
        "seed": seed,
        "reach": {q: reached.get(q) for q in [*map(str, TARGETS), "likely", TOP]},
        "search_trials": loop.used(study),
        "runs": {**summary["runs"], "counted": runs["all"], "search_replayed": search_runs},
        "stopped": summary["stopped"],
        "recommended": key,
        "keep_defaults": not recommended,
        "quality": land.best / land.truth.get(key, float("inf")),
        "correct": land.reached(key, 0.95),
        "p_within_95": shape["p"].get(key, 0.0),  # the verdict's chance, noise counted
        "in_top": key in top,
        # the reduced set's own check against the defaults (reduction.checked_reduction): its
        # pairs, and whether it failed so that the whole winner was kept
        "reduced_check": _reduced_check(summary.get("minimal") or {}),
        # the reduction's group removal of what the search's trials do not favour
        # (reduction._screen)
        "screen": (summary.get("minimal") or {}).get("screen"),
    }
    if keep_summary:
        out["summary"] = summary
    return out


def median_ci(xs: list[float], seed: int = 0) -> tuple[float, float, float]:
    """The median and its 95 % bootstrap percentile interval."""
    r = random.Random(seed)
    meds = sorted(statistics.median(r.choices(xs, k=len(xs))) for _ in range(CI_RESAMPLES))
    return (
        statistics.median(xs),
        meds[int(0.025 * CI_RESAMPLES)],
        meds[int(0.975 * CI_RESAMPLES) - 1],
    )


def summarise_studies(studies: list[dict], budget: int) -> dict:
    """Per landscape and strategy: trials to 95 % (a study that never got there counts as its
    budget: a floor), total runs, correct verdicts, keep-the-defaults share."""
    trials = [st["reach"]["0.95"] or budget for st in studies]
    totals = [st["runs"]["total"] for st in studies]
    out = {
        "studies": len(studies),
        "trials_95": median_ci(trials),
        "trials_90": median_ci([st["reach"]["0.9"] or budget for st in studies]),
        "reached_95": sum(1 for st in studies if st["reach"]["0.95"]) / len(studies),
        "trials_likely": median_ci([st["reach"].get("likely") or budget for st in studies]),
        "trials_top": median_ci([st["reach"].get(TOP) or budget for st in studies]),
        "correct_expected": statistics.fmean(st.get("p_within_95", 0.0) for st in studies),
        "correct_top": sum(st.get("in_top", False) for st in studies) / len(studies),
        "runs_total": median_ci(totals),
        "search_trials_median": statistics.median(st["search_trials"] for st in studies),
        "correct": sum(st["correct"] for st in studies) / len(studies),
        "keep_defaults": sum(st["keep_defaults"] for st in studies) / len(studies),
        "quality_median": statistics.median(st["quality"] for st in studies),
        "stopped_early": sum(1 for st in studies if not st["stopped"].startswith("its budget"))
        / len(studies),
        "runs_by_phase_median": {
            ph: statistics.median(st["runs"].get(ph, 0) for st in studies)
            for ph in ("search", "re-measure", "verification", "reduction", "addition", "warm-up")
        },
    }
    # the counted runs (every draw) must equal the summary's own count
    out["count_mismatches"] = sum(
        1 for st in studies if st["runs"]["counted"] != st["runs"]["total"]
    )
    return out


def noise_table(results: dict) -> str:
    """Per landscape: how many configurations are within 95 % of the best median, and how
    well the landscape's own repetitions can tell which (noise_of)."""
    lines = [
        "| landscape | configurations | repetitions (median) | defaults / best | within 95 % "
        "(medians) | likely within 95 % (p >= 0.5) | best stays best | the set within 95 % "
        "stays the same | indistinguishable from the best (Mann-Whitney, 5 %) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for lname, lres in results["landscapes"].items():
        n = lres.get("noise") or {}
        stays = n.get("best_stays_best")
        lines.append(
            f"| {lname} | {lres['configurations']} | {n.get('repetitions_median', '-')} | "
            f"{lres['best_speedup']:.2f}x | {lres['within_95']} | {n.get('likely_within', '-')} "
            f"| {'-' if stays is None else f'{stays:.0%}'} | "
            f"{n.get('set_within_stays_same', 0):.0%} | {n.get('top_group', '-')} |"
        )
    return "\n".join(lines)


def study_table(results: dict) -> str:
    lines = [
        "| landscape | strategy | studies | trials to 95 % (median [95 % CI]) | reached 95 % | "
        "trials to 90 % | runs to a verified verdict (median [95 % CI]) | search / re-measure / "
        "verification / reduction runs (medians) | correct verdicts | verdict's quality "
        "(median) | keep the defaults | stopped early | trials to likely within 95 % | "
        "trials to the top group | verdicts' expected correct share | verdicts in the top "
        "group |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for lname, lres in results["landscapes"].items():
        for sname, st in lres["strategies"].items():
            t, r, ph = st["trials_95"], st["runs_total"], st["runs_by_phase_median"]
            lines.append(
                f"| {lname} | {sname} | {st['studies']} | {t[0]:g} [{t[1]:g}, {t[2]:g}] | "
                f"{st['reached_95']:.0%} | {st['trials_90'][0]:g} | "
                f"{r[0]:g} [{r[1]:g}, {r[2]:g}] | {ph['search']:g} / {ph['re-measure']:g} / "
                f"{ph['verification']:g} / {ph['reduction']:g} | {st['correct']:.0%} | "
                f"{st['quality_median']:.0%} | "
                f"{st['keep_defaults']:.0%} | {st['stopped_early']:.0%} | "
                + _ci(st.get("trials_likely"))
                + " | "
                + _ci(st.get("trials_top"))
                + f" | {st.get('correct_expected', 0):.0%} | {st.get('correct_top', 0):.0%} |"
            )
    return "\n".join(lines)


def _ci(t: list | tuple | None) -> str:
    return "-" if not t else f"{t[0]:g} [{t[1]:g}, {t[2]:g}]"


def parse_landscape(text: str) -> tuple[list[Path], str | None]:
    """CSV[,CSV...][@KERNEL]: the files (rounds of one landscape) and the kernel to keep."""
    files, _, kernel = text.partition("@")
    return [Path(f) for f in files.split(",") if f], kernel or None


def load_landscape(files: list[Path], kernel: str | None) -> Landscape:
    rows = []
    for f in files:
        with open(f, newline="") as fh:
            rows += list(csv.DictReader(fh))
    kernels = sorted({r.get("kernel", "") for r in rows})
    if kernel is None and len(kernels) > 1:
        raise SystemExit(f"{files[0]}: holds kernels {', '.join(kernels)}: name one with @KERNEL")
    return Landscape([r for r in rows if kernel is None or r.get("kernel") == kernel])


HELD = ["landscape-held.csv", "landscape-held-rounds4-6.csv", "landscape-held-rounds7-10.csv"]
DEFAULT_STUDIES = [
    (",".join(str(LANDSCAPES / f) for f in HELD) + "@vorpalio", SPACES["vorpalio"]),
    (",".join(str(LANDSCAPES / f) for f in HELD) + "@gcrmio", SPACES["gcrmio"]),
]


def shape_of(land: Landscape) -> dict:
    """A landscape's size, best and default configurations and how many are within 95 % of
    the best: the head of each landscape's results."""
    return {
        "configurations": len(land.truth),
        "best": min(land.truth, key=land.truth.get),
        "best_s": land.best,
        "default_s": land.default,
        "best_speedup": land.default / land.best,
        "within_95": sum(land.reached(k, 0.95) for k in land.truth),
    }


def _reduced_check(minimal: dict) -> dict | None:
    """The reduced set's check of one study: {"pairs", "passed"}; None when there was none."""
    if minimal.get("rejected"):
        return {"pairs": minimal["rejected"].get("pairs"), "passed": False}
    verified = minimal.get("verified")
    if verified and minimal.get("removed"):
        return {"pairs": verified.get("pairs"), "passed": bool(verified.get("improved"))}
    return None


def main_studies(args: argparse.Namespace) -> int:
    cases = list(zip(args.landscape_study or [], args.space or [], strict=False))
    if len(args.landscape_study or []) != len(args.space or []):
        raise SystemExit("give one --space TOML per --landscape-study CSV")
    if not cases:
        cases = [(t, Path(p)) for t, p in DEFAULT_STUDIES]
    results = {
        "command": " ".join([sys.executable, *sys.argv]),
        "git": subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "host": platform.node(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_at_start": os.getloadavg(),
        "seeds": args.seeds,
        "first_seed": args.first_seed,
        "warmup": args.warmup,
        "verify_pairs": args.verify_pairs,
        "noisier": args.noisier,
        "t_lane": args.t_lane,
        "early_pairs": sequential.EARLY_PAIRS,
        "min_gain_stop_local_only": args.min_gain_stop_local_only,
        "reduced_extra": pairs.REDUCED_EXTRA,
        "screen": reduction.SCREEN,
        "stop_early": args.stop_early,
        "screen_keep": marginal.SCREEN_KEEP,
        "screen_second": reduction.SCREEN_SECOND,
        "patience": args.patience,
        "budgets": STUDY_BUDGETS,
        "landscapes": {},
    }
    todo = []
    for text, space_file in cases:
        files, kernel = parse_landscape(text)
        land = load_landscape(files, kernel)
        name = (kernel or files[0].stem) + f" ({files[0].name}{' +' if len(files) > 1 else ''})"
        if args.noisier != 1.0:  # a stress test: the same medians, more noise
            land, name = noisier(land, args.noisier), f"{name} (noise x{args.noisier:g})"
        todo.append((name, land, space.load(space_file), [str(f) for f in files], str(space_file)))
    if args.flat or args.flat_only:
        name, land, sp, files, sf = todo[0]
        flat = (f"flat (the defaults' runs of {name})", flat_landscape(land), sp, files, sf)
        todo = [flat] if args.flat_only else [*todo, flat]
    for name, land, sp, files, space_file in todo:
        lres = {"files": files, "space": space_file, **shape_of(land), "strategies": {}}
        lres["noise"] = {k: v for k, v in noise_of(land).items() if k != "p"}
        results["landscapes"][name] = lres
        for strategy in args.strategies.split(","):
            t0 = time.monotonic()
            studies = []
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                studies.append(replay_study(land, sp, strategy, seed, args.warmup,
                                            verify_pairs=args.verify_pairs))  # fmt: skip
                if len(studies) % 10 == 0 or len(studies) == args.seeds:  # a loaded machine:
                    summary = summarise_studies(studies, STUDY_BUDGETS[strategy])  # save often
                    summary["elapsed_s"] = round(time.monotonic() - t0, 1)
                    summary["budget"] = STUDY_BUDGETS[strategy]
                    summary["runs"] = studies
                    lres["strategies"][strategy] = summary
                    write_studies(args.out, results)
            print(f"{name} {strategy}: trials to 95 % {summary['trials_95'][0]:g}, runs "
                  f"{summary['runs_total'][0]:g}, correct {summary['correct']:.0%}, keep "
                  f"defaults {summary['keep_defaults']:.0%} ({summary['elapsed_s']} s)",
                  flush=True)  # fmt: skip
    write_studies(args.out, results)
    print(study_table(results))
    return 0


def merge_studies(files: list[Path], out: Path) -> int:
    """One JSON and table of several --studies runs: each run's landscapes and strategies,
    with each run's command, start, end and load kept (runs: [...])."""
    merged: dict = {"runs": [], "landscapes": {}}
    for f in files:
        r = json.loads(f.read_text())
        merged["runs"].append({k: v for k, v in r.items() if k != "landscapes"})
        for name, lres in r["landscapes"].items():
            have = merged["landscapes"].setdefault(name, {**lres, "strategies": {}})
            have["strategies"].update(lres["strategies"])
    first, last = merged["runs"][0], merged["runs"][-1]
    merged.update({k: first[k] for k in ("host", "git", "budgets")})
    merged["command"] = "; ".join(r["command"] for r in merged["runs"])
    merged["started"] = min(r["started"] for r in merged["runs"])
    merged["finished"] = max(r.get("finished", "") for r in merged["runs"])
    merged["load_at_start"] = first["load_at_start"]
    merged["load_at_end"] = last.get("load_at_end")
    out.write_text(json.dumps(merged, indent=1) + "\n")
    out.with_suffix(".txt").write_text(
        "\n".join(f"{r['command']}\n  {r['started']} .. {r.get('finished')}, load "
                  f"{r['load_at_start']} .. {r.get('load_at_end')}" for r in merged["runs"])
        + f"\nhost {merged['host']}, git {merged['git']}\n\n{noise_table(merged)}\n\n"
        + f"{study_table(merged)}\n"
    )  # fmt: skip
    print(study_table(merged))
    return 0


def write_studies(out: Path, results: dict) -> None:
    """The raw JSON (every study) and the table, with when, where and at what load."""
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    results["load_at_end"] = os.getloadavg()
    out.write_text(json.dumps(results, indent=1) + "\n")
    text = study_table(results)
    out.with_suffix(".txt").write_text(
        f"{results['command']}\n{results['started']} .. {results['finished']}, host "
        f"{results['host']}, git {results['git']}, load {results['load_at_start']} .. "
        f"{results['load_at_end']}\n\n{noise_table(results)}\n\n{text}\n"
    )


def summarise(runs: list[dict], budget: int) -> dict:
    out: dict = {}
    for q in runs[0]["reach"]:
        hits = [r["reach"][q] for r in runs if r["reach"][q]]
        out[f"reached_{q}"] = len(hits) / len(runs)
        # seeds that never reached it count as the budget (a floor for them)
        trials = [h[0] for h in hits] + [budget] * (len(runs) - len(hits))
        out[f"trials_{q}_median"] = statistics.median(trials)
        out[f"trials_{q}_p75"] = statistics.quantiles(trials, n=4)[2] if len(trials) > 1 else 0
        out[f"time_{q}_median_s"] = median_or_none([h[1] for h in hits])
    out[f"quality_at_{CHECK_AT}_median"] = statistics.median(r["quality_at_check"] for r in runs)
    return out


def median_or_none(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--landscape",
        type=Path,
        nargs="+",
        # not a glob: the --sync landscapes beside them are another machine state
        default=[LANDSCAPES / "landscape.csv", LANDSCAPES / "landscape-rounds4-6.csv"],
        help="measured landscapes, together (default: bench/measure_landscape/landscape.csv and "
        "landscape-rounds4-6.csv, the 7 rounds bench/README.md's results replay)",
    )
    ap.add_argument(
        "--studies",
        action="store_true",
        help="replay whole studies (search, race/re-measurement, verification, reduction, "
        "warm-ups) and report trials to 95 %%, runs to a verified verdict, correct verdicts",
    )
    ap.add_argument(
        "--landscape-study",
        action="append",
        metavar="CSV[,CSV...][@KERNEL]",
        help="with --studies: a landscape in measure_landscape's CSV format (several files: "
        "rounds of one landscape; @KERNEL: the kernel to keep of a file holding several); "
        "repeatable, each with its --space",
    )
    ap.add_argument(
        "--space",
        action="append",
        type=Path,
        metavar="TOML",
        help="with --studies: the grid space of the --landscape-study before it",
    )
    ap.add_argument(
        "--flat",
        action="store_true",
        help="with --studies: add a flat landscape made of the first landscape's "
        "defaults' runs (the correct verdict: keep the defaults)",
    )
    ap.add_argument(
        "--flat-only",
        action="store_true",
        help="with --studies: replay only the flat landscape of --flat",
    )
    ap.add_argument(
        "--noisier",
        type=float,
        default=1.0,
        metavar="F",
        help="with --studies: every run's deviation from its configuration's median x F in "
        "log scale (noisier(): the same medians, F times the noise; a stress test)",
    )
    ap.add_argument(
        "--warmup",
        type=int,
        default=0,
        help="with --studies: warm-up runs before each final-phase run (default 0)",
    )
    ap.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="merge the JSON files of several --studies runs (run side by side, one "
        "landscape and strategy each) into --out and its .txt table",
    )
    ap.add_argument(
        "--reduced-extra",
        type=float,
        metavar="F",
        help="with --studies: the tests whose failure keeps the defaults or the whole winner "
        "(the reduced set's check; since 6227f84 also the full winner's verification and "
        "best.xml's, while tuned leads) take up to F x --verify-pairs more pairs "
        "(pairs.REDUCED_EXTRA; 0: capped at --verify-pairs as before 2026-11-27)",
    )
    ap.add_argument(
        "--verify-pairs",
        type=int,
        help="with --studies: the most pairs of each test of the final phases (iotune's "
        "--verify-pairs; default: iotune's, 20; the demo's is 10)",
    )
    ap.add_argument(
        "--stop-early",
        action="store_true",
        help="with --studies: every strategy stops its search as `local` does when the last "
        "6 trials did not beat the fastest run by --min-gain (Strategy.stop_early; a test "
        "of it for tpe, not iotune's default)",
    )
    ap.add_argument(
        "--screen-keep",
        type=int,
        help="with --studies: the reduction's screen keeps at most this many settings, the "
        "clearest (marginal.SCREEN_KEEP; default: iotune's, 1; 0: all that stand out)",
    )
    ap.add_argument(
        "--patience",
        type=int,
        help="with --studies: trials without a gain of --min-gain before a search that stops "
        "early stops (local.PATIENCE, default 6)",
    )
    ap.add_argument(
        "--no-screen-second",
        action="store_true",
        help="with --studies: the screen tests only the others together, not also the next "
        "clearest alone (reduction.SCREEN_SECOND off, as in iotune's first version of 2026-11-27)",
    )
    ap.add_argument(
        "--no-screen",
        action="store_true",
        help="with --studies: the reduction tests each setting alone from the start, as before "
        "2026-11-27 (reduction.SCREEN off: no group removal of what the search's trials do not "
        "favour)",
    )
    ap.add_argument(
        "--t-lane",
        default=None,
        help="FIRST:LAST:LEVEL:WALPHA: replay the verification with a sequential t lane "
        "(ttest_lane.py; issue 25), not part of iotune",
    )
    ap.add_argument(
        "--early-pairs",
        type=int,
        default=None,
        help="with --studies: the look at which every pair won is significant "
        "(sequential.EARLY_PAIRS; default: iotune's, 6; 0: Pocock's level at every look, as "
        "before 2026-11-28)",
    )
    ap.add_argument(
        "--min-gain-stop-local-only",
        action="store_true",
        help="with --studies: only `local`'s verification stops once the gain's interval lies "
        "below --min-gain (study.STOP_BELOW_MIN_GAIN off, as before 2026-11-28)",
    )
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--strategies", default="tpe,random,genetic")
    ap.add_argument("--out", type=Path, default=HERE / "replay.json")
    ap.add_argument(
        "--read-dims",
        action="store_true",
        help="add read-side parameters that cannot change these write phases",
    )
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if args.t_lane:
        import ttest_lane

        ttest_lane.install(args.t_lane)
    if args.reduced_extra is not None:
        pairs.REDUCED_EXTRA = args.reduced_extra
    if args.min_gain_stop_local_only:
        import iotune.study

        iotune.study.STOP_BELOW_MIN_GAIN = False
    if args.early_pairs is not None:
        sequential.EARLY_PAIRS = args.early_pairs
    if args.no_screen:
        reduction.SCREEN = False
    if args.no_screen_second:
        reduction.SCREEN_SECOND = False
    if args.screen_keep is not None:
        marginal.SCREEN_KEEP = args.screen_keep or None
    if args.patience is not None:
        from iotune.search import local

        local.PATIENCE = args.patience
    if args.stop_early:
        from iotune.search import strategies

        for k, v in list(strategies.STRATEGIES.items()):
            strategies.STRATEGIES[k] = dataclasses.replace(v, stop_early=True)
    if args.merge:
        return merge_studies(args.merge, args.out)
    if args.studies:
        if args.out == HERE / "replay.json":
            args.out = HERE / "studies.json"
        if args.strategies == "tpe,random,genetic":
            args.strategies = "local,tpe,random"
        return main_studies(args)
    rows = [r for path in args.landscape for r in csv.DictReader(open(path))]
    results = {
        "command": " ".join([sys.executable, *sys.argv]),
        "git": subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "host": platform.node(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seeds": args.seeds,
        "read_dims": args.read_dims,
        "landscapes": [str(p.relative_to(HERE.parents[1])) for p in args.landscape],
        "budgets": BUDGETS,
        "check_at": CHECK_AT,
        "kernels": {},
    }
    for kernel, space_file in SPACES.items():
        land = Landscape([r for r in rows if r["kernel"] == kernel])
        sp = space.load(space_file)
        if args.read_dims:
            sp = with_read_dims(sp)
        kres = {**shape_of(land),
                "within_90": sum(land.reached(k, 0.90) for k in land.truth),
                "strategies": {}}  # fmt: skip
        for strategy in args.strategies.split(","):
            t0 = time.monotonic()
            runs = [replay(land, sp, strategy, seed) for seed in range(args.seeds)]
            summary = {"elapsed_s": round(time.monotonic() - t0, 1), "budget": BUDGETS[strategy]}
            for mode in ("incumbent", "final"):
                summary[mode] = summarise([r[mode] for r in runs], BUDGETS[strategy])
            summary["runs"] = runs
            kres["strategies"][strategy] = summary
            f = summary["final"]
            print(
                f"{kernel} {strategy}: recommendation within 95 % after {f['trials_0.95_median']}"
                f" trials (median), reached by {f['reached_0.95']:.0%} of seeds; "
                f"{summary['elapsed_s']} s",
                flush=True,
            )
        results["kernels"][kernel] = kres
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    for mode in ("final", "incumbent"):
        print(f"\n{mode}:\n" + table(results, mode))
    return 0


def table(results: dict, mode: str) -> str:
    lines = [
        "| kernel | strategy | budget | trials to 90 % | trials to 95 % (median, p75) | "
        "seeds reaching 95 % | replayed time to 95 % | quality at 30 trials |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kernel, k in results["kernels"].items():
        for name, strat in k["strategies"].items():
            s = strat[mode]
            t95 = s["time_0.95_median_s"]
            lines.append(
                f"| {kernel} | {name} | {strat['budget']} | {s['trials_0.9_median']:g} | "
                f"{s['trials_0.95_median']:g} ({s['trials_0.95_p75']:g}) | "
                f"{s['reached_0.95']:.0%} | {'-' if t95 is None else f'{t95:.0f} s'} | "
                f"{s[f'quality_at_{CHECK_AT}_median']:.0%} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
