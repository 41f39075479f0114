"""The comparison as one self-contained HTML page: no scripts, no fetched resources, every
value from A and B escaped; the report's style (iotune.report.html.CSS: tables that wrap long
values and fit a narrow window)."""

from __future__ import annotations

import html
import re
from typing import Any

from iotune.compare.diff import Comparison, Section
from iotune.compare.text import LISTED, TOP, ratio, shown, value
from iotune.outputs import printable
from iotune.report.html import CSS


def _e(x: Any) -> str:
    return html.escape(printable(x))


_BREAKS = re.compile(r"([/_.@:=,;-])")
_LONG = re.compile(r"[^/_.@:=,;\s-]{25}")


def _name(x: Any) -> tuple[str, str]:
    """(class, escaped HTML) of an item's name: a line may break after a path's or setting's
    separators; a name with a run of 25 characters and no separator may break anywhere."""
    text = printable(x)
    parts = _BREAKS.split(text)
    marked = "".join(html.escape(p) + ("<wbr>" if _BREAKS.fullmatch(p) else "") for p in parts)
    return ("item long" if _LONG.search(text) else "item"), marked


def _section(s: Section, top: int) -> list[str]:
    items = shown(s, top)
    title = s.title + (f" ({len(items)} of {len(s.items)})" if len(items) < len(s.items) else "")
    out = [f"<h2>{_e(title)}</h2>"]
    if not s.items:
        return out + [f"<p>{_e(s.empty or 'none')}</p>"]
    rows = []
    if s.grouped:
        head = "<tr><th></th><th></th><th>A</th><th>B</th><th>B/A</th></tr>"
        for it in items:
            span = len(it.rows)
            note = f"<br><small>{_e(it.note)}</small>" if it.note else ""
            cls, name = _name(it.name)
            for k, r in enumerate(it.rows):
                first = f"<th rowspan='{span}' class='{cls}'>{name}{note}</th>" if k == 0 \
                    else ""  # fmt: skip
                rows.append(f"<tr>{first}<td>{_e(r.metric)}</td>{_cells(r)}</tr>")
    else:
        head = "<tr><th></th><th>A</th><th>B</th><th>B/A</th></tr>"
        for it in items:
            cls, name = _name(it.name)
            rows.append(f"<tr><th class='{cls}'>{name}</th>{_cells(it.rows[0])}</tr>")
    out.append(f"<table class='compare'>{head}{''.join(rows)}</table>")
    out += [f"<p><small>{_e(n)}</small></p>" for n in s.notes]
    return out


def _cells(r) -> str:
    num = "" if r.unit == "text" else " class='num'"
    q = ratio(r)
    cls = ""
    if r.ratio is not None and r.ratio != 1.0 and r.unit == "s":
        cls = " class='num better'" if r.ratio < 1 else " class='num worse'"
    return (f"<td{num}>{_e(value(r.a, r.unit))}</td><td{num}>{_e(value(r.b, r.unit))}</td>"
            f"<td{cls or num}>{_e(q)}</td>")  # fmt: skip


def _names(title: str, listed: list[str]) -> list[str]:
    if not listed:
        return []
    more = len(listed) - LISTED
    items = "".join(f"<li><code>{_e(n)}</code></li>" for n in listed[:LISTED])
    tail = f"<li>... and {more} more (--json lists every one)</li>" if more > 0 else ""
    return [f"<h2>{_e(title)} ({len(listed)})</h2><ul>{items}{tail}</ul>"]


def render(c: Comparison, top: int = TOP) -> str:
    what = "two profiles" if c.kind == "profile" else "two studies"
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>iotune compare: {_e(c.a.label)} / {_e(c.b.label)}</title>"
        f"<style>{CSS}</style></head><body>",
        f"<h1>iotune compare: {what}</h1>",
        "<table class='sides'>"
        + "".join(
            f"<tr><th>{tag}</th><td><code>{_e(s.path)}</code><br>{_e(s.label)}</td></tr>"
            for tag, s in (("A", c.a), ("B", c.b))
        )  # fmt: skip
        + "</table>",
        "<p>B/A: B's figure over A's (below 1: B took less time, moved fewer bytes, made fewer "
        "calls); <em>new</em>: A had none. Biggest differences first.</p>",
    ]
    for s in c.sections:
        parts += _section(s, top)
    parts += _names("data files only in A", c.only_a)
    parts += _names("data files only in B", c.only_b)
    if c.notes:
        parts.append("<ul class='notes'>" + "".join(f"<li>{_e(n)}</li>" for n in c.notes)
                     + "</ul>")  # fmt: skip
    parts.append("</body></html>")
    return "\n".join(parts)
