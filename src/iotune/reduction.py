"""From the verified winner to best.xml: the fewest of its settings that keep its gain
(minimal, with the screen read from the search's trials), that set's own check against the
defaults (checked_reduction), and the settings the search's trials favour that it lacks,
measured and added when they gain (additions)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from iotune import pairs
from iotune.search import loop, marginal, noise
from iotune.space import Space, config_key
from iotune.tune_config import TuneConfig

ADDITIONS = True  # after the reduction, measure the settings the search's trials favour
SCREEN = True  # the reduction first tests together the settings the search's trials do not favour
SCREEN_SECOND = True  # ... and the next clearest of them alone, in the same rounds (_screen)
SHOWN_MIN_GAIN = True  # a setting stays in (or is added to) the recommendation beside others only
# when its contribution is shown to reach --min-gain, not merely shown to be above 1.0 (_bar)
SHOWN = 5  # the clearest marginal effects kept in summary.json (minimal.additions.effects)


def minimal(
    cfg: TuneConfig,
    best: dict[str, str],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
    log: Callable[[str], None] = print,
    rows: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The fewest of best's settings that keep its gain: each setting is removed in turn
    (interleaved pairs, the same sequential test); those whose removal is shown to cost at
    least --min-gain stay (_bar; --min-gain 0: any measurable cost). Settings that only help
    together with one another (two ways to the same gain) are not all dropped at once: the
    reduced set is tested against the full one first (by the same bar). While one setting is
    left it is never tested: the reduced set's own check against the defaults follows.

    rows (the search's trials, noise.measured): first the screen (_screen): the settings the
    trials do not favour are removed together when the winner is not shown better than the
    rest by the same bar, one test instead of one per setting."""
    bar = _bar(cfg)
    tester = pairs.Pairs(cfg, evaluate, rng, margin=bar, early=False)
    current = dict(best)
    removed: dict[str, str] = {}
    contributions: dict[str, dict[str, Any]] = {}
    screened = _screen(tester, current, rows, maximize, cfg.min_gain, bar, log)
    if screened is not None:
        current, removed = screened["settings"], screened["removed"]
    while len(units := _units(current, cfg.space)) > 1:
        without = {n: {k: v for k, v in current.items() if k not in units[n]} for n in units}
        res = tester.run(current, without, maximize)
        contributions = {n: _contribution(r, maximize, bar) for n, r in res.items()}
        useless = [n for n, c in contributions.items() if not c["needed"]]
        log(
            "settings' contributions: "
            + ", ".join(f"{n} {c['cost']:.2f}x" for n, c in contributions.items())
        )
        if not useless:
            break
        keep = max(useless, key=lambda n: contributions[n]["cost"])
        drop = [n for n in useless if n != keep or len(useless) < len(units)]
        gone = {k for n in drop for k in units[n]}
        reduced = {k: v for k, v in current.items() if k not in gone}
        check = tester.run(current, {"reduced": reduced}, maximize)["reduced"]["verdict"]
        if check is not None and check.significant:
            drop = [min(useless, key=lambda n: contributions[n]["cost"])]
            gone = set(units[drop[0]])
            reduced = {k: v for k, v in current.items() if k not in gone}
        for n in drop:
            removed.update({k: _removal_note(contributions[n], bar) for k in units[n]})
        current = reduced
    lead = {k: n for n, ks in _units(current, cfg.space).items() for k in ks}
    out = {
        "settings": current,
        "contributions": {k: contributions[lead[k]] for k in current if lead[k] in contributions},
        "removed": removed,
        "runs": tester.runs,
    }
    if screened is not None:
        out["screen"] = screened["record"]
    return out


def _units(settings: dict[str, str], space: Space) -> dict[str, list[str]]:
    """The settings the reduction removes one at a time, each with those tied to it (a
    parameter the space ties to another takes its value: sc13-lustre's cb_buffer_size follows
    striping_unit, so removing one alone makes a configuration the space cannot hold)."""
    to = {t.name: t.to for t in space.ties}
    units: dict[str, list[str]] = {}
    for k in settings:
        lead = to[k] if k in to and to[k] in settings else k
        units.setdefault(lead, []).append(k)
    return units


def _screen(
    tester: pairs.Pairs,
    winner: dict[str, str],
    rows: list[dict[str, Any]] | None,
    maximize: bool,
    min_gain: float,
    bar: float,
    log: Callable[[str], None],
) -> dict[str, Any] | None:
    """The reduction's first step when the search's trials single out the setting that carries
    the gain (marginal.carrying: the clearest marginal effect over every trial): the winner
    against that setting alone, in interleaved pairs with the reduction's test. Unless the
    winner is shown better by the bar, the others are removed together: one test instead of
    one per setting (a winner of 8 settings: 2 or 3 runs a pair instead of 9). If it is, the
    winner is returned unchanged and the reduction tests each setting alone as before.

    A test of the others together can miss a second gain that a setting costing time among
    them cancels (1.12x beside a 6 % loss), and it gives each of them one chance where the
    one-at-a-time rounds gave two (a setting's own test, then the reduced set's against the
    current one): so the other setting the trials favour most (marginal.runner_up) is also
    tested alone in the same rounds (the winner without it), and stays when its removal is
    shown to cost the bar. When the winner is shown better than the kept setting but that
    second one was shown to gain, the two together are tested against the winner once more
    (two gains, found in two tests) before the one-at-a-time rounds. None when no setting
    stands out, or all do, or when the setting kept is not measured at all (it failed every
    run, or the space forbids it alone)."""
    if not SCREEN or not rows or len(winner) < 2:
        return None
    space = tester.cfg.space
    core = marginal.carrying(rows, winner, maximize, min_gain)
    core = _with_ties(core, winner, space)
    if not core or len(core) == len(winner):
        return None
    if space.forbidden({**space.default_config(), **core}):
        return None
    rest = sorted(set(winner) - set(core))
    second = marginal.runner_up(rows, winner, core, maximize, min_gain) if SCREEN_SECOND else None
    variants = {"core": core}
    if second is not None and len(rest) > 1:
        alone = _with_ties({second[0]: second[1]}, winner, space)
        variants["second"] = {k: v for k, v in winner.items() if k not in alone}
    log(f"the search's trials favour {config_key(core)}; the other {len(rest)} settings "
        "tested together: the winner vs those alone, interleaved pairs"
        + (f" (and {second[0]}={second[1]} alone)" if "second" in variants else ""))  # fmt: skip
    res = tester.run(winner, variants, maximize)
    c = _contribution(res["core"], maximize, bar)
    if c["pairs"] == 0:  # the kept setting never ran: nothing measured, nothing removed
        return None
    record = {"kept": sorted(core), "tested": rest, "cost": c["cost"], "pairs": c["pairs"],
              "removed": not c["needed"]}  # fmt: skip
    keep = dict(core)
    if "second" in variants:
        s2 = _contribution(res["second"], maximize, bar)
        record["second"] = {"setting": f"{second[0]}={second[1]}", "cost": s2["cost"],
                            "pairs": s2["pairs"], "kept": s2["needed"]}  # fmt: skip
        if s2["needed"]:
            keep.update({k: v for k, v in winner.items() if k not in variants["second"]})
    log(f"the winner vs {config_key(core)}: {c['cost']:.2f}x in {c['pairs']} pairs ("
        + ("the others removed" if record["removed"] else "shown")
        + (f"; {record['second']['setting']} needed, its removal {record['second']['cost']:.2f}x"
           if record.get("second", {}).get("kept") else "")
        + ")")  # fmt: skip
    if c["needed"] and len(keep) > len(core) and len(keep) < len(winner):
        # the winner gains over the kept setting, and the second one was shown to gain: are
        # the two all it needs? (one more test of two sets before the one-at-a-time rounds)
        c = _contribution(tester.run(winner, {"core": keep}, maximize)["core"], maximize, bar)
        if c["pairs"] == 0:  # the two never ran together: nothing measured, nothing removed
            c = {**c, "needed": True}
        record["then"] = {"kept": sorted(keep), "cost": c["cost"], "pairs": c["pairs"],
                          "removed": not c["needed"]}  # fmt: skip
        record["removed"] = not c["needed"]
        log(f"the winner vs {config_key(keep)}: {c['cost']:.2f}x in {c['pairs']} pairs ("
            + ("the others removed" if record["removed"] else "shown")
            + ")")  # fmt: skip
    if c["needed"]:
        log("each setting tested alone")
        return {"settings": dict(winner), "removed": {}, "record": record}
    note = _removal_note(c, bar).replace("removing it", "removing it with the others")
    gone = [n for n in rest if n not in keep]
    return {"settings": keep, "removed": {n: note for n in gone}, "record": record}


def _with_ties(settings: dict[str, str], winner: dict[str, str], space: Space) -> dict[str, str]:
    """settings with the winner's settings tied to them, or to which they are tied (a tied
    pair is one setting: sc13-lustre's cb_buffer_size follows striping_unit)."""
    out = dict(settings)
    for t in space.ties:
        if (t.name in out or t.to in out) and t.name in winner and t.to in winner:
            out.update({t.name: winner[t.name], t.to: winner[t.to]})
    return out


def checked_reduction(
    cfg: TuneConfig,
    effective: dict[str, str],
    reduced: dict[str, Any],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
    log: Callable[[str], None] = print,
    failing: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The reduced settings when they beat the defaults on their own, else the whole verified
    winner; never settings the application failed with when the leaders were measured again
    while it did not with the defaults (failing: {config_key: why}, race.py): the whole
    verified winner then, without a check. Each removal was judged by a test that cannot tell
    "costs nothing" from "costs too little to show in a few noisy pairs", so several dropped
    settings can together carry the gain, and what is left may be slower than the defaults
    (seen with VORPAL-IO under MPICH: bench/README.md, Open MPI and MPICH).

    The check may take more pairs than the winner's verification (extended_pairs): its failure
    does not keep the defaults but recommends settings whose removal measured nothing, so an
    undecided check (one noisy pair among wins: 8 of 9 pairs faster, p 0.064 at 10 pairs at
    most, in a demo) is given more pairs rather than decided for the larger set. Its design's
    level covers every look up to that cap: the false-win bound stays 0.05."""
    if reduced["settings"] == effective:
        return reduced
    why = (failing or {}).get(config_key(reduced["settings"]))
    if why:
        log(f"the reduced settings ({config_key(reduced['settings'])}) are a leader that "
            f"was not recommended ({why}): the whole verified winner is kept")  # fmt: skip
        return {
            "settings": dict(effective),
            "contributions": {},
            "removed": {},
            "runs": reduced.get("runs", 0),
            "rejected": {
                "settings": reduced["settings"],
                "removed": reduced["removed"],
                "improved": False,
                "verdict": why,
            },  # fmt: skip
            **({"screen": reduced["screen"]} if reduced.get("screen") else {}),
        }
    log(f"the reduced settings ({config_key(reduced['settings'])}) vs the defaults: interleaved "
        f"pairs until the test decides ({min(cfg.verify_min, cfg.verify_pairs)} to "
        f"{pairs.extended_pairs(cfg)})")  # fmt: skip
    check = pairs.verify(cfg, reduced["settings"], evaluate, maximize, rng,
                         "the reduced settings", max_pairs=pairs.extended_pairs(cfg))  # fmt: skip
    summary = {k: check.get(k) for k in ("improved", "speedup", "pairs", "wins", "verdict",
                                         "p_nominal", "pair_ratios")}  # fmt: skip
    runs = reduced.get("runs", 0) + check.get("runs", 0)
    if check["improved"]:  # the whole verification: the headline is measured on it (verdict.py)
        return {**reduced, "runs": runs, "verified": check}
    log(
        f"the reduced settings ({config_key(reduced['settings'])}) did not beat the defaults on "
        f"their own ({check['verdict']}): the whole verified winner is kept"
    )
    return {
        "settings": dict(effective),
        "contributions": {},
        "removed": {},
        "runs": runs,
        "rejected": {"settings": reduced["settings"], "removed": reduced["removed"], **summary},
        **({"screen": reduced["screen"]} if reduced.get("screen") else {}),
    }


def additions(
    cfg: TuneConfig,
    study: Any,
    settings: dict[str, str],
    tried: set[tuple[str, str]],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
    log: Callable[[str], None] = print,
    leave_out: set[str] | frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Settings the recommendation lacks that the search's own trials favour (search/marginal.py:
    a clear favourable marginal effect among the trials holding every recommended setting; at
    most marginal.MAX_ADD, one per parameter, clearest first), measured side by side in
    interleaved pairs against the recommendation (each candidate: the recommendation with it
    vs without it, the same sequential test as the reduction's, also stopped once its gain's
    interval lies below --min-gain) and kept only when that shows a gain. The winner a search
    finds depends on what it sampled; this makes a setting with a gain of its own reach
    best.xml whether or not that search's winner held it. tried: (name, value) pairs already
    measured (the reduction's removals: measured once, not twice); leave_out: parameters not
    to add (not in effect). Returns {"settings", "added" {name: contribution}, "tested"
    [candidates with their search effect and measured contribution], "runs"}."""
    space = cfg.space
    names = set(space.names()) - set(leave_out)
    rows = noise.measured(study)
    within = marginal.stratum_for(rows, settings)
    found = marginal.favourable(rows, settings, maximize, cfg.min_gain, names, tried, within)
    seen = [e.as_dict() for e in marginal.effects(rows, settings, maximize, names, within)]
    base = {**space.default_config(), **settings}
    chosen: dict[str, tuple[marginal.Effect, dict[str, str]]] = {}
    for e in found:
        if any(c.name == e.name for c, _ in chosen.values()):
            continue  # one value per parameter: the clearest
        more = {**settings, e.name: e.value}
        more.update({t.name: e.value for t in space.ties if t.to == e.name})
        if space.forbidden({**base, **more}):
            continue
        chosen[f"{e.name}={e.value}"] = (e, more)
        if len(chosen) >= marginal.MAX_ADD:
            break
    out: dict[str, Any] = {"settings": dict(settings), "added": {}, "tested": [], "runs": 0,
                           "effects": seen[:SHOWN], "within": within}  # fmt: skip
    if not chosen:
        return out
    log(
        "settings the search's trials favour, measured against the recommendation: "
        + ", ".join(
            f"{k} ({e.ratio:.2f}x in {e.n_with} vs {e.n_without} trials, p={e.p:.3f})"
            for k, (e, _) in chosen.items()
        )  # fmt: skip
    )
    bar = _bar(cfg)
    tester = pairs.Pairs(cfg, evaluate, rng, cfg.min_gain if cfg.min_gain > 0 else None,
                         margin=bar, early=False)  # fmt: skip
    res = tester.run(settings, {k: m for k, (_, m) in chosen.items()}, maximize, True)
    for k, (e, more) in chosen.items():
        c = _contribution(res[k], maximize, bar)
        if c["needed"] and c["cost"] < 1.0 + cfg.min_gain:
            # significant but smaller than --min-gain: not worth a setting more in best.xml
            # (the bar the candidate passed in the search, whose effect selection inflates)
            c = {**c, "needed": False, "below_min_gain": True}
        out["tested"].append({**e.as_dict(), "measured": c})
        if c["needed"]:
            out["settings"].update({n: v for n, v in more.items() if n not in settings})
            out["added"][e.name] = c
    log(
        "with vs without each: "
        + ", ".join(
            f"{t['setting']} {t['measured']['cost']:.2f}x ("
            + (
                "kept"
                if t["measured"]["needed"]
                else f"below --min-gain {cfg.min_gain:.0%}: left out"
                if t["measured"].get("below_min_gain")
                else "no gain shown: left out"
            )
            + ")"
            for t in out["tested"]
        )
    )
    out["runs"] = tester.runs
    return out


def with_additions(
    cfg: TuneConfig,
    study: Any,
    effective: dict[str, str],
    reduced: dict[str, Any],
    off: set[str],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
    log: Callable[[str], None] = print,
    failing: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The reduced recommendation with the settings `additions` measured as gaining, when the
    set so made beats the defaults on its own (its own verification, for the headline); else
    the reduced recommendation as it was. Records what was tried under "additions". Never a
    set the application failed with when the leaders were measured again, or in the search,
    while it did not with the defaults (failing: {config_key: why}, race.py): the reduction
    again is told them (checked_reduction), and such a set with the additions is left out."""
    kept = reduced["settings"]
    tried = {(k, v) for k, v in effective.items() if k not in kept}
    more = additions(cfg, study, kept, tried, evaluate, maximize, rng, log, off)
    record = {k: more[k] for k in ("tested", "runs", "effects", "within")}
    record["added"] = sorted(more["added"])
    if not more["added"]:
        return {**reduced, "additions": record}
    if reduced.get("rejected") and len(more["settings"]) > 1:
        # the reduction kept the whole winner (what it left did not beat the defaults), e.g. a
        # winner without the setting that carries the gain: with it added, reduce again
        log(f"reducing the winner with the additions ({len(more['settings'])} settings) again")
        again = minimal(cfg, more["settings"], evaluate, maximize, rng, log,
                        noise.measured(study))  # fmt: skip
        again = checked_reduction(cfg, more["settings"], again, evaluate, maximize, rng, log,
                                  failing)  # fmt: skip
        record["runs"] += again.get("runs", 0)
        if again.get("verified"):  # the reduced set beat the defaults on its own
            return {**again, "additions": record}
    why = (failing or {}).get(config_key(more["settings"]))
    if why:
        log(f"the settings with the additions ({config_key(more['settings'])}) are a leader "
            f"that was not recommended ({why}): the additions are left out")  # fmt: skip
        record["rejected"] = {"settings": more["settings"], "verdict": why}
        record["added"] = []
        return {**reduced, "additions": record}
    check = pairs.verify(cfg, more["settings"], evaluate, maximize, rng, "best.xml's settings")
    record["runs"] += check.get("runs", 0)
    if not check["improved"]:
        log(f"the settings with the additions ({config_key(more['settings'])}) did not beat the "
            f"defaults on their own ({check['verdict']}): the additions are left out")  # fmt: skip
        record["rejected"] = {"settings": more["settings"], "verdict": check["verdict"]}
        record["added"] = []
        return {**reduced, "additions": record}
    return {
        **reduced,
        "settings": dict(more["settings"]),
        "contributions": {**reduced.get("contributions", {}), **more["added"]},
        "verified": check,
        "additions": record,
    }


def _bar(cfg: TuneConfig) -> float:
    """The share by which a setting's contribution must be shown to exceed 1.0 for it to stay
    in the recommendation beside others (the reduction) or to join it (the additions): the
    smallest gain worth recommending, --min-gain. Tested, not estimated: the same sequential
    signed-rank test with the full set handicapped by 1 + --min-gain (Pairs' margin), so that a
    setting whose true contribution is at or below --min-gain is kept at about the test's level
    at most (5 %; 6 % simulated on the demos' recorded pair noise) in every study alike, instead
    of in the share of studies whose few noisy pairs happened to show it above 1.0 (a real
    1.11x: 38 % of them at 10 pairs, 59 % at 20; bench/README.md, "A second setting")."""
    return cfg.min_gain if SHOWN_MIN_GAIN and cfg.min_gain > 0 else 0.0


def _contribution(r: dict[str, Any], maximize: bool, bar: float = 0.0) -> dict[str, Any]:
    v = r["verdict"]
    needed = bool(v and v.significant and v.speedup > 1.0)
    out = {
        "cost": v.speedup if v else 1.0,  # the setting's set vs the set without it
        "needed": needed,
        "pairs": len(r["a"]),
        "wins": v.wins if v else 0,
    }
    if bar > 0:
        out["shown_above"] = 1.0 + bar  # what "needed" was tested against
        if not needed and r.get("plain_significant") and out["cost"] > 1.0:
            out["below_min_gain"] = True  # shown above 1.0, not above 1 + --min-gain
    return out


def _removal_note(c: dict[str, Any], bar: float) -> str:
    """Why a setting was removed. With a bar its test may end (unable to reach 1 + bar) before
    the pairs could have shown any cost: "not shown to reach", not "not measurable"."""
    if c.get("below_min_gain"):
        return (f"removing it cost {c['cost']:.2f}x (measurable, but not shown to reach "
                f"--min-gain {bar:.0%})")  # fmt: skip
    if bar > 0:
        return f"removing it cost {c['cost']:.2f}x (not shown to reach --min-gain {bar:.0%})"
    return f"removing it cost {c['cost']:.2f}x (not measurable)"
