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
            "status": a.get("status", t.state.name),
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
