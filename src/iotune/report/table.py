"""Every trial of a study as a row: trials.csv and the data of the figures."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from iotune.space import Space

FIELDS = [
    "number",
    "state",
    "status",
    "origin",
    "value",
    "source",
    "wall_s",
    "capped_bound",
    "config",
    "worker",
    "started",
    "duration_s",
    "message",
]


# a failed trial with no status: failed by another worker when its heartbeat stopped
LOST = "lost"


def trial_rows(study: Any, space: Space) -> list[dict[str, Any]]:
    """One dict per trial (queued ones left out), in trial order."""
    rows = []
    for t in study.get_trials(deepcopy=False):
        if t.state.name == "WAITING":
            continue
        a = t.user_attrs
        settings = a.get("settings", {})
        row = {
            "number": t.number,
            "state": t.state.name,
            "status": a.get("status", LOST if t.state.name == "FAIL" else t.state.name),
            "origin": a.get("origin", "search"),
            "value": t.value,
            "source": a.get("source", ""),
            "wall_s": a.get("wall_s"),
            "config": a.get("key", ""),
            "capped_bound": max(t.intermediate_values.values()) if t.intermediate_values else None,
            "worker": a.get("worker", ""),
            "started": t.datetime_start.isoformat(timespec="seconds") if t.datetime_start else "",
            "duration_s": t.duration.total_seconds() if t.duration else None,
            "message": (a.get("message") or "").replace("\n", " ")[-300:],
            "settings": settings,
        }
        rows.append(row)
    return rows


def write_csv(path: Path, rows: list[dict[str, Any]], space: Space) -> Path:
    names = space.names() + [t.name for t in space.ties]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(FIELDS + names)
        for r in rows:
            cells = ["" if r[k] is None else r[k] for k in FIELDS]
            w.writerow(cells + [r["settings"].get(n, "default") for n in names])
    return path


def settings_rows(summary: dict[str, Any]) -> tuple[str, list[list[str]]]:
    """(title, rows of [parameter, layer, value, contribution]) of what a study recommends, or
    of its best candidate when nothing was recommended; rows are empty when there is neither."""
    from iotune import params

    rec = summary.get("recommended") or {}
    minimal = summary.get("minimal") or {}
    contributions = minimal.get("contributions") or {}
    if rec:
        title = "recommended (best.xml)"
        settings = rec
    else:
        settings = (
            (minimal.get("settings") if minimal else None) or summary.get("best_settings") or {}
        )
        title = "best candidate, not recommended (candidate.xml)"
    rows = []
    for name, value in sorted(settings.items()):
        p = params.find(name)
        c = contributions.get(name)
        share = f"{c['cost']:.2f}x ({c['pairs']} pairs)" if c else "-"
        rows.append([name, p.layer if p else "?", str(value), share])
    return title, rows


def addition_lines(summary: dict[str, Any]) -> list[str]:
    """What the step after the reduction measured: each setting the search's trials favoured,
    whether it was added, its effect in the search and its measured contribution."""
    add = (summary.get("minimal") or {}).get("additions") or {}
    added = set(add.get("added") or [])
    out = []
    for t in add.get("tested") or []:
        m = t.get("measured") or {}
        name = str(t.get("setting", "")).split("=", 1)[0]
        out.append(
            f"{t.get('setting')}: {'added' if name in added else 'not added'} (the search's "
            f"trials favoured it: {t.get('ratio', 0):.2f}x, {t.get('trials_with')} vs "
            f"{t.get('trials_without')} trials; measured with vs without: "
            f"{m.get('cost', 1.0):.2f}x in {m.get('pairs', 0)} pairs)"
        )
    if add.get("rejected"):
        out.append("the settings with the additions did not beat the defaults on their own: "
                   "the additions are left out")  # fmt: skip
    return out


def settings_lines(summary: dict[str, Any]) -> list[str]:
    """The settings table for a terminal."""
    title, rows = settings_rows(summary)
    if not rows:
        return []
    head = ["parameter", "layer", "value", "removing it costs"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [f"{title}:", fmt.format(*head)]
    lines += [fmt.format(*r) for r in rows]
    removed = (summary.get("minimal") or {}).get("removed") or {}
    for name, why in sorted(removed.items()):
        lines.append(f"left out of the recommendation: {name} ({why})")
    lines += addition_lines(summary)
    for name, why in sorted((summary.get("not_in_effect") or {}).items()):
        lines.append(f"not in effect, left out: {name} ({why})")
    for name, on in sorted((summary.get("switched_on") or {}).items()):
        lines.append(f"with {name}={on['value']} (switched on by the study: {on['why']})")
    return lines
