"""`iotune tune --warm-start kb`: the nearest stored motifs' settings become the first guesses
of a new study (tried right after the baseline, before the rule-based guesses), and a finished
study is filed in the knowledge base."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from iotune.kb.match import SEEDS, Match, nearest
from iotune.kb.signature import Signature
from iotune.kb.store import Entry
from iotune.search import warmstart
from iotune.space import Guess, Space, SpaceError

PREFIX = warmstart.FROM_KB


RUNNERS_UP = 2  # of the nearest entry's other re-measured leaders, tried after the recommendations


def guesses_for(
    space: Space, matches: Sequence[Match], runners_up: int = RUNNERS_UP
) -> list[Guess]:
    """A guess per match (its recommended settings), then up to `runners_up` of the nearest
    match's other re-measured leaders (Entry.leaders: on a noisy machine a study cannot tell
    its top few apart, and which one it filed was partly luck; the nearest motif gets the
    extra trials). Each with only the settings this space
    can express (a setting of a parameter the space does not search, or a value it does not
    hold, is left out); guesses left empty, or the same as an earlier one, are dropped."""
    out: list[Guess] = []
    seen: set[tuple] = set()
    names = set(space.names())
    wanted = [(m, m.entry.settings, "") for m in matches]
    for m in matches[:1]:
        wanted += [(m, x["settings"], f", leader {i + 2}")
                   for i, x in enumerate(m.entry.leaders[:runners_up])]  # fmt: skip
    for m, settings, which in wanted:
        kept = {}
        for k, v in settings.items():
            if k not in names:
                continue
            try:
                space.trial_params_for({k: v})
            except (SpaceError, KeyError, ValueError):
                continue
            kept[k] = v
        key = tuple(sorted(kept.items()))
        if not kept or key in seen:
            continue
        seen.add(key)
        what = f"entry {m.entry.id} ({m.entry.study or 'study'}, distance {m.distance:g}{which})"
        out.append(Guess(PREFIX + what, kept))
    return out


def seeded_space(
    space: Space, entries: Sequence[Entry], sig: Signature, k: int = SEEDS
) -> tuple[Space, list[Guess]]:
    """The space with the nearest entries' settings first among its guesses (in_order)."""
    seeds = guesses_for(space, nearest(entries, sig, k))
    return dataclasses.replace(space, guesses=in_order(seeds, space.guesses)), seeds


def in_order(seeds: Sequence[Guess], rules: Sequence[Guess]) -> list[Guess]:
    """Every knowledge-base guess, then the space's rule-based guesses. Where the rules already
    hold the answer this costs a few trials (VORPAL-IO: 95 % of the best after 4 trials, cold
    2), but the orders that put rules among the seeds lost more where the seeds carry the gain
    (GCRM-IO), on the replay landscapes (bench/README.md, "The order of the first trials")."""
    return [*seeds, *rules]


def remember(
    url: str, summary: dict[str, Any], sig: Signature, source: str, log: Callable[[str], None]
) -> None:
    """Files a finished study: one entry per study (a study finished again updates its entry,
    KnowledgeBase.put); a knowledge base that cannot be written is reported, never fatal (the
    study's results are already on disk)."""
    from iotune.kb import store
    from iotune.kb.match import entry_from_summary

    try:
        base = store.KnowledgeBase(url)
        try:
            rid, status = base.put(entry_from_summary(summary, sig, source))
        finally:
            base.close()
    except store.KBError as e:
        log(f"not stored in the knowledge base: {e}")
        return
    said = {
        store.STORED: "stored in",
        store.UPDATED: "updated in",  # the study finished again: its entry replaced
        store.ALREADY: "already in",
        store.KEPT: "a newer entry of this study is already in",
    }[status]
    log(f"{said} the knowledge base {base.where} as entry {rid} (motif {sig.key})")
