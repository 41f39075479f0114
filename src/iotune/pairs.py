"""Interleaved pairs and the sequential test that decides them: the verification of tuned
settings against the defaults (verify), and the same test for several variants against one
reference (Pairs: the reduction's and the additions' measurements)."""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

from iotune import final_runs, verdict
from iotune.search import loop, noise, sequential
from iotune.space import config_key
from iotune.tune_config import TuneConfig

FUTILITY_PAIRS = 5  # pairs before the verification may stop for a gain below --min-gain
FUTILITY_LEVEL = 0.1  # one-sided level of the interval that stop reads
REDUCED_EXTRA = 0.5  # the tests whose failure keeps the defaults or the whole winner: up to
# this share of --verify-pairs more pairs, by a group-sequential design over all its looks
# (extended_pairs; named for the reduced set's check, the first test to take them)
MOST_VERIFY_PAIRS = 50  # --verify-pairs above is refused: its design is simulated for every
# look up to 1.5x it (75 looks: 23 s, 0.55 GB on the 2-core VM; 150: 136 s, 1 GB; growing)


class Pairs:
    """Interleaved rounds of several variants against one reference, each tested sequentially
    (search/sequential.py): a variant stops being measured once its test is decided."""

    def __init__(
        self,
        cfg: TuneConfig,
        evaluate: loop.Evaluate,
        rng: random.Random,
        too_small: float | None = None,
        max_pairs: int | None = None,
        margin: float = 0.0,
        extend_from: int | None = None,
        early: bool = True,
    ):
        """too_small: also stop a variant's test, as "no gain worth recommending", once the
        upper end of its Hodges-Lehmann interval at the one-sided FUTILITY_LEVEL is below a
        gain of too_small (0.05: 5 %), from FUTILITY_PAIRS pairs on. A stop for futility never
        adds a false win (it ends only tests that did not reject), so its level is free.
        max_pairs: the most pairs (default --verify-pairs); the design's per-look level is
        computed for every look up to it, so more looks keep the false-win bound.
        margin (e.g. --min-gain, 0.05): the test asks whether the better side is better by
        more than that share, not merely better: the same signed-rank test on the pairs with
        the side to be shown better handicapped by 1 + margin (equivalently: the lower end of
        the Hodges-Lehmann interval at the design's level is above 1 + margin). A difference
        of exactly 1 + margin is then called significant at most at the design's level. The
        verdict's speedup and wins stay those of the pairs as measured.
        extend_from (e.g. --verify-pairs, with a larger max_pairs): a test goes past this many
        pairs only while its pairs' speedup is at least 1 + --min-gain (a gain the noise has
        not yet let it show); one that does not lead stops as the test up to extend_from
        would have (_may_go_on). It rejects at the level of the design up to max_pairs, and
        stopping some paths early only shrinks that design's rejection region: its
        false-win bound still holds.
        early: six pairs all won are significant (sequential.EARLY_PAIRS), for the tests
        against the defaults; the reduction's and the additions' tests of one setting's
        contribution leave it out: there, more power for a second setting near the bar sent
        the screen to the one-at-a-time rounds (bench/README.md, "The early look")."""
        self.cfg, self.evaluate, self.rng = cfg, evaluate, rng
        top = cfg.verify_pairs if max_pairs is None else max(max_pairs, cfg.verify_pairs)
        self.early = early
        self.design = sequential.design(min(cfg.verify_min, cfg.verify_pairs), top, early=early)
        self.too_small = too_small
        self.margin = margin
        self.extend_from = extend_from
        self.not_in_effect: dict[str, str] = {}
        self.runs = 0
        # measured runs and failed ones (the application exited with an error, crashed or
        # timed out) per configuration (config_key): a failure leaves its round out of the
        # test, so it must be counted apart or it would vanish (verify: never recommended)
        self.measured: dict[str, int] = {}
        self.failed: dict[str, int] = {}

    def run(
        self,
        reference: dict[str, str],
        variants: dict[str, dict[str, str]],
        maximize: bool,
        variants_better: bool = False,
    ) -> dict[str, dict[str, Any]]:
        """Is `reference` better than each variant (with variants_better: is each variant
        better than `reference`)? {variant: {"a", "b", "verdict"}}: a = the variant's values,
        b = the reference's, verdict = sequential.Verdict of the question asked."""
        res: dict[str, dict[str, Any]] = {n: {"a": [], "b": [], "verdict": None} for n in variants}
        open_ = set(variants)
        attempts = 0
        while open_ and attempts < 2 * self.design.max_pairs:
            attempts += 1
            names = ["(reference)", *sorted(open_)]
            got: dict[str, float | None] = {}
            for name in noise.interleaved(names, 1, self.rng):
                settings = reference if name == "(reference)" else variants[name]
                o = final_runs.measure_once(self.evaluate, settings, self.cfg.warmup)
                self.runs += 1 + self.cfg.warmup
                got[name] = o.value if o.ok else None
                key = config_key(settings)
                self.measured[key] = self.measured.get(key, 0) + 1
                if not o.ok:
                    self.failed[key] = self.failed.get(key, 0) + 1
                if o.ok and name == "(reference)":
                    self.not_in_effect.update(o.traits.get("not_in_effect", {}))
            if got["(reference)"] is None:
                continue
            for name in list(open_):
                if got.get(name) is None:
                    continue
                r = res[name]
                r["a"].append(got[name])
                r["b"].append(got["(reference)"])
                a, b = (r["b"], r["a"]) if variants_better else (r["a"], r["b"])
                v, r["plain_significant"] = self._verdict(a, b, maximize)
                if not v.decided and self._below(a, b, maximize):
                    v = dataclasses.replace(v, decided=True, futile=True)
                    r["below_min_gain"] = True
                elif not v.decided and not self._may_go_on(v, a, b, maximize):
                    v = dataclasses.replace(v, decided=True, futile=v.pairs < self.extend_from)
                    r["not_leading"] = True
                r["verdict"] = v
                if v.decided:
                    open_.discard(name)
        return res

    def _verdict(
        self, a: list[float], b: list[float], maximize: bool
    ) -> tuple[sequential.Verdict, bool]:
        """sequential.verdict of "b is better than a", by more than self.margin if one is set;
        and whether b is significantly better at all (without the margin)."""
        v = sequential.verdict(a, b, self.design, maximize)
        if self.margin <= 0:
            return v, v.significant
        k = 1.0 + self.margin  # b handicapped: slower (times) or lower (rates) by k
        shown = sequential.verdict(a, [y / k if maximize else y * k for y in b], self.design,
                                   maximize)  # fmt: skip
        shown = dataclasses.replace(
            shown, improved=shown.significant and v.speedup > 1.0, speedup=v.speedup, wins=v.wins
        )
        return shown, v.significant

    def _may_go_on(
        self, v: sequential.Verdict, a: list[float], b: list[float], maximize: bool
    ) -> bool:
        """Whether an undecided test takes another pair (extend_from): always while its pairs
        show --min-gain (the ratio of the medians); otherwise as the test up to extend_from
        pairs would: not from extend_from on, nor once that test could no longer become
        significant (its futility). So no test ends sooner than it did without the extension."""
        if self.extend_from is None or v.speedup >= 1.0 + max(self.cfg.min_gain, 0.0):
            return True
        if v.pairs >= self.extend_from:
            return False
        short = sequential.design(self.design.min_pairs, self.extend_from, early=self.early)
        return not sequential.verdict(a, b, short, maximize).futile

    def _below(self, a: list[float], b: list[float], maximize: bool) -> bool:
        """The interval of b's gain over a lies below too_small (from FUTILITY_PAIRS on)."""
        if self.too_small is None or len(a) < FUTILITY_PAIRS:
            return False
        d = verdict.log_ratios(a, b, maximize)
        high = verdict.hodges_lehmann(d, FUTILITY_LEVEL)[2]
        return high is not None and high < math.log1p(self.too_small)


def pair_ratio(default: float, tuned: float, maximize: bool) -> float | None:
    """How many times better tuned was than default in one pair; None when a side measured 0
    (a run that did no I/O in the measured phase: once a ZeroDivisionError at the end of tune)."""
    num, den = (tuned, default) if maximize else (default, tuned)
    return num / den if den > 0 and num > 0 else None


def _verdict_text(
    v: sequential.Verdict | None,
    ratios: list[float],
    design: Any,
    what: str = "tuned settings",
    below: float | None = None,
    not_leading: float | None = None,
) -> str:
    """The sequential test's outcome for one verification (summary.json's final.verdict and the
    console's log); the study's headline is verdict.headline's, measured on best.xml."""
    if v is None or v.pairs == 0:
        return "no better setting found: too few successful verification runs"
    # the typical pair's ratio, as the headline (verdict.measure) gives it: the ratio of the
    # medians said 0.14x where the headline said 0.38x for the same two pairs
    speedup = (
        math.exp(verdict.hodges_lehmann([math.log(r) for r in ratios], 0.5)[0])
        if ratios
        else v.speedup
    )
    if v.improved:
        spread = f"pairs {min(ratios):.2f}x..{max(ratios):.2f}x; " if ratios else ""
        return (
            f"{what}: {speedup:.2f}x faster than the defaults in the typical pair "
            f"({spread}faster in {v.wins} of {verdict.plural(v.pairs, 'pair')}, significant "
            f"by a sequential signed-rank test at {design.alpha:g})"
        )
    why = "stopped: it cannot become significant" if v.futile else "not significant"
    if below is not None:
        why = f"stopped: its interval lies below a gain of {below:.0%} (--min-gain)"
    if not_leading is not None:
        why = ("stopped: it cannot become significant within --verify-pairs" if v.futile
               else "not significant at --verify-pairs")  # fmt: skip
        why += f"; more pairs only while tuned leads by {not_leading:.0%} (--min-gain)"
    return (
        f"no better setting found: {what} vs the defaults {speedup:.2f}x in the typical pair, "
        f"faster in {v.wins} of {verdict.plural(v.pairs, 'pair')} ({why}); keep the defaults"
    )


def verify(
    cfg: TuneConfig,
    best: dict[str, str],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
    what: str = "tuned settings",
    too_small: float | None = None,
    max_pairs: int | None = None,
    extend_from: int | None = None,
) -> dict[str, Any]:
    """Default vs tuned measured in interleaved pairs until a sequential signed-rank test decides
    (at least cfg.verify_min pairs, at most cfg.verify_pairs or max_pairs); `what` names them in
    its text. too_small (e.g. --min-gain): it also stops once the gain's interval lies below it;
    extend_from: past that many pairs it goes on only while the gain measures --min-gain (Pairs)."""
    pairs = Pairs(cfg, evaluate, rng, too_small, max_pairs, extend_from=extend_from)
    design = pairs.design
    if not best:
        return {
            "improved": False,
            "speedup": 1.0,
            "pairs": 0,
            "verdict": "no better setting found: the stack's defaults were the best measured",
            "rounds": [],
            "variants": {"default": {}},
            "summary": {},
            "not_in_effect": {},
        }
    res = pairs.run(best, {"default": {}}, maximize)["default"]
    v = res["verdict"]
    sides = {"default": config_key({}), "tuned": config_key(best)}
    failed = {side: pairs.failed.get(k, 0) for side, k in sides.items()}
    measured = {side: pairs.measured.get(k, 0) for side, k in sides.items()}
    below = bool(res.get("below_min_gain"))
    not_leading = max(cfg.min_gain, 0.0) if res.get("not_leading") else None
    base, tuned = res["a"], res["b"]
    # the pairs' ratios (a pair with a side that measured 0 has none)
    ratios = [r for d, t in zip(base, tuned, strict=True) if (r := pair_ratio(d, t, maximize))]
    text = _verdict_text(
        v, ratios, design, f"{what} ({len(best)})", too_small if below else None, not_leading
    )
    improved = bool(v and v.improved)
    if failed["tuned"] and not failed["default"]:
        # settings under which the application fails are never recommended, whatever the
        # runs that did finish measured (a failed run leaves its pair out of the test)
        improved = False
        text = (f"the application failed in {failed['tuned']} of {measured['tuned']} runs with "
                f"{what} and in none of {measured['default']} with the defaults: not "
                "recommended; keep the defaults")  # fmt: skip
    elif failed["tuned"] or failed["default"]:
        text += (f" (the application failed in {failed['default']} of {measured['default']} "
                 f"runs with the defaults and {failed['tuned']} of {measured['tuned']} with "
                 f"{what}: left out of the pairs)")  # fmt: skip
    return {
        "improved": improved,
        "failed": failed,
        "speedup": v.speedup if v else None,
        "p_nominal": v.p_nominal if v else None,
        "pairs": len(base),
        "wins": v.wins if v else 0,
        "futile": bool(v and v.futile),
        "pair_ratios": ratios,
        "design": {
            "min": design.min_pairs,
            "max": design.max_pairs,
            "level": design.level,
            **({"early": design.early, "early_level": design.early_level} if design.early else {}),
            **({"extend_from": extend_from} if extend_from else {}),
        },  # fmt: skip
        "below_min_gain": below,
        "verdict": text,
        "variants": {"default": {}, "tuned": dict(best)},
        "rounds": [{"default": d, "tuned": t} for d, t in zip(base, tuned, strict=True)],
        "summary": {"default": noise.summary(base), "tuned": noise.summary(tuned)},
        "not_in_effect": dict(pairs.not_in_effect),
        "runs": pairs.runs,
    }


def deciding_test(cfg: TuneConfig) -> str:
    """How a test whose failure keeps the defaults runs (the console's line)."""
    # "5 to 5" read as a minimum of 5 where a test that cannot reach --min-gain stops sooner
    return (f"interleaved pairs until a sequential test decides (at most {cfg.verify_pairs}, "
            f"{extended_pairs(cfg)} while tuned leads by --min-gain; fewer once the gain is "
            "shown or cannot reach --min-gain)")  # fmt: skip


def extended_pairs_of(verify_pairs: int) -> int:
    """extended_pairs for a --verify-pairs value."""
    return verify_pairs + int(verify_pairs * REDUCED_EXTRA)


def extended_pairs(cfg: TuneConfig) -> int:
    """The most pairs of a test whose failure keeps the defaults or the whole winner (the full
    winner's verification and best.xml's own, while tuned leads by --min-gain; the reduced
    set's check): --verify-pairs and REDUCED_EXTRA of it more (15 at the demo's 10, 30 at the
    default 20). The fewest pairs that can show a gain stay the winner's (6: at Pocock's
    level for 5..15, and at the early look of 5..30, six pairs all won reject), so a clear gain
    costs no pair more."""
    return extended_pairs_of(cfg.verify_pairs)


def check_verify_pairs(max_pairs: int, min_pairs: int = sequential.MIN_PAIRS) -> str | None:
    """Why a --verify-pairs value can never give a verdict, or None when it can."""
    if max_pairs < 1:  # no pair at all: there is no test to run (design() needs one)
        return (
            f"--verify-pairs {max_pairs}: the final verification needs at least one pair and "
            f"can show a gain only from {_fewest_pairs()} pairs: use {sequential.MIN_PAIRS} or "
            f"more (default {sequential.MAX_PAIRS})"
        )
    if max_pairs > MOST_VERIFY_PAIRS:  # the design is simulated for every look up to 1.5x it
        return (
            f"--verify-pairs {max_pairs}: at most {MOST_VERIFY_PAIRS} (the sequential test's "
            f"bound is simulated for every look up to {extended_pairs_of(MOST_VERIFY_PAIRS)} "
            "pairs: beyond, minutes and gigabytes before the first trial; the default is "
            f"{sequential.MAX_PAIRS})"
        )
    d = sequential.design(min(min_pairs, max_pairs), max_pairs)
    if d.first_possible() is None:
        return (
            f"--verify-pairs {max_pairs} can never show a gain (the p of n pairs is at least "
            f"2^-n: it needs at least "
            f"{_fewest_pairs()} pairs at {sequential.ALPHA:g}): use {sequential.MIN_PAIRS} or "
            f"more (default {sequential.MAX_PAIRS})"
        )
    return None


def _fewest_pairs() -> int:
    return next(n for n in range(1, 64) if 0.5**n <= sequential.ALPHA)
