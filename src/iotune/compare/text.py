"""The comparison as terminal text (aligned columns, long values wrapped, names from outside
escaped) and as JSON (every item, exact values)."""

from __future__ import annotations

import textwrap
from typing import Any

from iotune import profile as prof
from iotune.compare.diff import Comparison, Item, Row, Section
from iotune.outputs import printable

TOP = 20  # items of a per-file section shown by default (text and HTML); 0: all
LISTED = 20  # names of unmatched files listed
WRAP = 48  # a text value wider than this is wrapped onto more lines


def value(x: Any, unit: str) -> str:
    """A figure as people read it: seconds, bytes (KiB...), counts, text (escaped)."""
    if x is None:
        return "-"
    if isinstance(x, bool) or unit == "text" or not isinstance(x, (int, float)):
        return printable(x)
    if unit == "s":
        return f"{x:.4f}" if abs(x) < 1000 else f"{x:,.1f}"
    if unit == "B":
        return prof._bytes(x)
    if unit == "n":
        return f"{int(x):,}" if float(x).is_integer() else f"{x:,.4g}"
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def ratio(r: Row) -> str:
    """B/A as "0.59x"; "new" for a figure A did not have; "=" for equal figures or text."""
    if r.unit == "text" or not all(isinstance(v, (int, float)) for v in (r.a, r.b)):
        return "=" if r.a == r.b else ""
    q = r.ratio
    if r.a == r.b:
        return "="
    if q is None:
        return "new"
    return f"{q:.2f}x" if q < 100 else f"{q:,.0f}x"


def shown(section: Section, top: int) -> list[Item]:
    """The items a page shows: the first `top` of a per-file section (0: all)."""
    if section.limited and top and len(section.items) > top:
        return section.items[:top]
    return section.items


def header(c: Comparison) -> list[str]:
    what = "two profiles" if c.kind == "profile" else "two studies"
    lines = [f"iotune compare: {what}"]
    for tag, side in (("A", c.a), ("B", c.b)):
        lines.append(f"  {tag}  {printable(side.path)}  ({printable(side.label)})")
    return lines


def _cells(rows: list[list[str]]) -> list[str]:
    """Rows of cells as aligned lines; a cell wider than WRAP continues on the next lines."""
    wrapped = [[textwrap.wrap(c, WRAP, break_on_hyphens=False) or [""] for c in r] for r in rows]
    widths = [max(max(len(x) for x in r[i]) for r in wrapped) for i in range(len(rows[0]))]
    out = []
    for r in wrapped:
        for k in range(max(len(c) for c in r)):
            parts = [(c[k] if k < len(c) else "").ljust(w) for c, w in zip(r, widths, strict=True)]
            out.append("  " + "  ".join(parts).rstrip())
    return out


def section_lines(s: Section, top: int) -> list[str]:
    items = shown(s, top)
    title = s.title
    if len(items) < len(s.items):
        title += f" ({len(items)} of {len(s.items)}; --top 0 for all)"
    lines = ["", title]
    if not s.items:
        return lines + [f"  {s.empty or 'none'}"]
    if s.grouped:
        rows = [["", "", "A", "B", "B/A"]]
        for it in items:
            for k, r in enumerate(it.rows):
                name = printable(it.name) if k == 0 else ""
                rows.append([name, r.metric, value(r.a, r.unit), value(r.b, r.unit), ratio(r)])
            if it.note:
                rows.append(["", f"({it.note})", "", "", ""])
    else:
        rows = [["", "A", "B", "B/A"]]
        for it in items:
            r = it.rows[0]
            rows.append([printable(it.name), value(r.a, r.unit), value(r.b, r.unit), ratio(r)])
    lines += _cells(rows)
    lines += [f"  ({n})" for n in s.notes]
    return lines


def names(title: str, listed: list[str]) -> list[str]:
    if not listed:
        return []
    more = len(listed) - LISTED
    return ["", f"{title} ({len(listed)})"] + [f"  {printable(n)}" for n in listed[:LISTED]] + (
        [f"  ... and {more} more (--json lists every one)"] if more > 0 else [])  # fmt: skip


def render(c: Comparison, top: int = TOP) -> str:
    lines = header(c)
    for s in c.sections:
        lines += section_lines(s, top)
    lines += names("data files only in A", c.only_a)
    lines += names("data files only in B", c.only_b)
    if c.notes:
        lines += [""] + [f"note: {printable(n)}" for n in c.notes]
    return "\n".join(lines)


def to_json(c: Comparison) -> dict[str, Any]:
    def side(s) -> dict[str, Any]:
        return {"kind": s.kind, "path": s.path, "label": s.label, "notes": s.notes}

    def row(r: Row) -> dict[str, Any]:
        return {"metric": r.metric, "unit": r.unit, "a": r.a, "b": r.b, "ratio": r.ratio}

    return {
        "kind": c.kind,
        "a": side(c.a),
        "b": side(c.b),
        "sections": [
            {
                "title": s.title,
                "grouped": s.grouped,
                "notes": s.notes,
                "items": [
                    {"name": it.name, "note": it.note, "rows": [row(r) for r in it.rows]}
                    for it in s.items
                ],
            }
            for s in c.sections
        ],  # fmt: skip
        "only_in_a": c.only_a,
        "only_in_b": c.only_b,
        "notes": c.notes,
    }
