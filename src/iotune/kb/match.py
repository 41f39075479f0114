"""The nearest stored motifs of a run, the suggestion made from them, and the entry of a
finished study."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from iotune import h5versions
from iotune.kb.signature import Signature, distance, platform_differences, same_motif
from iotune.kb.store import Entry
from iotune.search import switches

SEEDS = 3  # entries whose settings `tune --warm-start kb` tries first


@dataclass
class Match:
    entry: Entry
    distance: float
    other_platform: list[str] = field(default_factory=list)  # platform fields that differ
    same_motif: bool = False  # signature.same_motif: the query's motif (any scale, platform)


def nearest(
    entries: Sequence[Entry], sig: Signature, k: int = 5, improved_only: bool = True
) -> list[Match]:
    """The k entries closest to sig (distance, then the higher verified speedup), among those
    whose study found something better than the defaults (improved_only)."""
    out = []
    for e in entries:
        if improved_only and not (e.improved and e.settings):
            continue
        d = distance(sig, e.signature)
        if d == float("inf"):
            continue
        out.append(
            Match(e, d, platform_differences(sig, e.signature), same_motif(sig, e.signature))
        )
    out.sort(key=lambda m: (m.distance, -(m.entry.speedup or 0.0)))
    return out[:k]


@dataclass
class Suggestion:
    signature: Signature
    settings: dict[str, str]
    evidence: list[Match]
    notes: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature.to_json(),
            "settings": self.settings,
            "notes": self.notes,
            "evidence": [
                {
                    "entry": m.entry.id,
                    "uid": m.entry.uid,
                    "study": m.entry.study,
                    "distance": m.distance,
                    "same_motif": m.same_motif,
                    "other_platform": m.other_platform,
                    "speedup": m.entry.speedup,
                    "p_value": m.entry.p_value,
                    "settings": m.entry.settings,
                    "created": m.entry.created,
                }
                for m in self.evidence
            ],
        }


def suggest(
    entries: Sequence[Entry], sig: Signature, k: int = 5, hdf5: h5versions.Version | None = None
) -> Suggestion:
    """The settings of the nearest stored motif (the closest entry; among equally close ones,
    the best verified speedup), with the evidence and what to beware of; hdf5: the release the
    new run uses, whose own defaults are left out of the suggestion (said in the notes)."""
    matches = nearest(entries, sig, k)
    notes: list[str] = []
    if not matches:
        notes.append("no stored study found better settings than the defaults: keep them")
        return Suggestion(sig, {}, [], notes)
    best = matches[0]
    measured = [
        m for m in nearest(entries, sig, k, improved_only=False)
        if m.same_motif and not (m.entry.improved and m.entry.settings)
    ]  # fmt: skip
    if not best.same_motif and measured:
        # a study of this very motif found nothing better: that beats another motif's guess
        m = measured[0]
        notes.append(
            f"a study of this motif (entry {m.entry.id}, {m.entry.study or '-'}) found nothing "
            f"better than the defaults: keep them (the nearest gain is another motif's, "
            f"{best.distance:g} away)"
        )
        return Suggestion(sig, {}, [m, *matches[: k - 1]], notes)
    if not best.same_motif:
        notes.append(
            f"no stored study has this motif (the nearest is {best.distance:g} away): its "
            "settings are a guess only; tune it (iotune tune --warm-start kb)"
        )
    if best.other_platform:
        where = ", ".join(
            f"{k} {best.entry.signature.platform.get(k)} (here {sig.platform.get(k)})"
            for k in best.other_platform
        )
        notes.append(f"the stored entry comes from another platform: {where}")
    settings, dropped = h5versions.without_defaults(best.entry.settings, hdf5)
    notes += dropped
    if not set(settings) - set(switches.SWITCHED):  # only a switch is left: nothing to change
        settings = {}
    return Suggestion(sig, settings, matches, notes)


def runners_up(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The re-measured leaders of a study other than the one it chose, best median first:
    [{"settings", "median", "runs"}] (race.remeasure_leaders' result in its summary); not
    those the application failed with there (never recommended)."""
    led = summary.get("leaders") or {}
    values = led.get("values") or {}
    out = []
    for key in led.get("leaders") or []:
        if key == led.get("best") or key not in (led.get("settings") or {}):
            continue
        if key in (led.get("not_recommended") or {}):  # the application failed with it
            continue
        v = [float(x) for x in values.get(key) or []]
        out.append({"settings": dict(led["settings"][key]),
                    "median": statistics.median(v) if v else None, "runs": len(v)})  # fmt: skip
    maximize = summary.get("direction") == "maximize"
    out.sort(key=lambda x: (x["median"] is None, (-1 if maximize else 1) * (x["median"] or 0)))
    return out


def verified_recommendation(summary: Mapping[str, Any]) -> Mapping[str, Any]:
    """The verification that belongs to what best.xml holds (the study's recommendation): the
    reduced settings' own verification when the winner was reduced to them (`minimal.verified`),
    else the verification of the winner itself (`final`). The winner's speedup is not the reduced
    set's: a study whose 7-setting winner measured 2x may recommend one setting that measured
    1.03x on its own."""
    final = summary.get("final") or {}
    verified = (summary.get("minimal") or {}).get("verified")
    if summary.get("recommended") and isinstance(verified, Mapping) and verified.get("improved"):
        return verified
    return final


def entry_from_summary(summary: Mapping[str, Any], sig: Signature, source: str = "") -> Entry:
    """The knowledge-base entry of a finished study (its summary.json): best.xml's settings
    (the recommendation, with the switches it needs) and the study's headline (iotune.verdict:
    speedup, interval, pairs won, measured on those settings), as the console and the report
    give it; a summary of an older iotune without a headline: verified_recommendation."""
    final = summary.get("final") or {}
    head = summary.get("headline")
    if isinstance(head, Mapping):
        used: Mapping[str, Any] = {
            "speedup": head.get("speedup"),
            "p_nominal": head.get("p_nominal"),
            "pair_ratios": head.get("pair_ratios"),
            "improved": head.get("established"),
        }
        final = {"improved": head.get("established")}
    else:
        used = verified_recommendation(summary)
    ratios = [float(r) for r in used.get("pair_ratios") or []]
    spread = (
        {
            "min": min(ratios),
            "median": statistics.median(ratios),
            "max": max(ratios),
            "pairs": len(ratios),
        }  # fmt: skip
        if ratios
        else {}
    )

    release = h5versions.profile_version(summary)

    def with_switches(settings: Mapping[str, Any]) -> dict[str, str]:
        # as best.xml has them: with the switches they need (serial_files for sec2 files), less
        # any setting equal to the default of the HDF5 release the study ran on (no advice)
        kept = h5versions.without_defaults({str(k): str(v) for k, v in settings.items()}, release)
        on = switches.apply(kept[0], summary.get("switched_on"))
        return {str(k): str(v) for k, v in on.items()}

    return Entry(
        signature=sig,
        settings=with_switches(summary.get("recommended") or {}),
        leaders=[{**x, "settings": with_switches(x["settings"])} for x in runners_up(summary)],
        space=str(summary.get("space") or ""),
        speedup=used.get("speedup"),
        p_value=used.get("p_nominal"),
        spread=spread,
        improved=bool(final.get("improved") and used.get("improved")),
        study=str(summary.get("study") or ""),
        command=str(summary.get("command") or ""),
        source=source,
        study_uid=str(summary.get("study_uid") or ""),
        verdict={k: head[k] for k in VERDICT_KEYS if isinstance(head, Mapping) and k in head},
    )


VERDICT_KEYS = ("low", "high", "confidence", "wins", "pairs", "established", "text")
