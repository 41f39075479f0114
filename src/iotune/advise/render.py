"""Advice for people (text, HTML) and programs (JSON)."""

from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Iterator, Sequence
from typing import Any

from iotune import insights, rules
from iotune.advise import Advice
from iotune.outputs import printable

# the insights a report shows for each group, in this order
SHOWN = ("ranks", "files", "file_mode", "interface", "transfer_mode", "io_mix", "access_pattern",
         "transfer_size_median", "transfer_size_max", "small_write_fraction", "fs", "layout",
         "fill_time", "fill_value", "chunk_bytes_max", "fully_written", "write_amplification",
         "meta_fraction")  # fmt: skip


def _insight_line(g: insights.Group) -> str:
    parts = []
    for name in SHOWN:
        v = g.get(name)
        if v is not None:
            parts.append(f"{name}={rules.format_insight(name, v)}")
    return ", ".join(parts)


def text(a: Advice, control_path: str | None = None) -> str:
    # names come from the analysed run (file names, the source's path): a line break or an
    # escape sequence in them is shown escaped (outputs.printable), never forging a line
    lines = [f"advice for {printable(a.source)} ({a.kind})", ""]
    for g in a.groups:
        if g.get("interface"):
            lines.append(f"files {printable(g.pattern)} ({len(g.files)}): {_insight_line(g)}")
    lines.append("")
    if not a.findings:
        lines.append("no rule fired: nothing to change that the rule table knows of")
    for f in a.findings:
        head = f"[{f.severity.upper()}] {f.code} ({f.layer}, {printable(f.group)})"
        if f.settings:
            head += ": " + ", ".join(f"{k}={v}" for k, v in f.settings)
        elif f.kind == "finding":
            head += ": finding"
        lines.append(head)
        lines.append(f"    evidence: {f.evidence}")
        lines.append(f"    why:      {f.explain}")
        lines.append(f"    source:   {f.source}")
        if f.note:
            lines.append(f"    note:     {f.note}")
        for why in f.assumed:
            lines.append(f"    assumed:  {why}")
    if a.undecided:
        lines += ["", "not decided (an insight the source does not give):"]
        for u in a.undecided:
            why = f" ({'; '.join(u.notes)})" if u.notes else ""
            lines.append(f"    {u.code} on {printable(u.group)}: needs {', '.join(u.missing)}{why}")
    if a.limits:
        lines += ["", "what this source cannot tell:"] + [f"    {x}" for x in a.limits]
    lines.append("")
    if a.settings:
        where = f" written to {control_path}" if control_path else ""
        n = len(a.settings)
        lines.append(f"control file{where} ({n} setting{'s' if n > 1 else ''}):")
        lines += ["    " + ln for ln in (a.control_text() or "").splitlines()]
        if control_path:
            lines.append(f"apply it: iotune run --config {control_path} -- <your launch command>")
    else:
        lines.append("no settings to apply")
    return "\n".join(lines)


def as_json(a: Advice) -> str:
    return "".join(json_pieces(a))


def json_pieces(a: Advice) -> Iterator[str]:
    """as_json() in pieces, to be written one after the other: indented for people up to 1,000
    groups; beyond, compact (json's C encoder: indenting 10^6 groups' insights in Python took
    longer than the analysis), and written a group (a finding...) at a time, as json.dumps()
    would write the whole (no text of 10^6 groups held at once, nor each group's object)."""
    if len(a.groups) <= 1000:
        yield indented(a.to_json())
        return
    head = dataclasses.replace(a, groups=[]).to_json()
    yield "{"
    for i, (key, value) in enumerate(head.items()):
        yield f"{', ' if i else ''}{json.dumps(key)}: "
        items: Sequence[Any] = a.groups if key == "groups" else value
        if not isinstance(value, list) or not items:
            yield json.dumps(value)
            continue
        yield "["
        for j in range(0, len(items), _BATCH):  # "[x, y]" is x, y in brackets
            batch = items[j : j + _BATCH]
            if key == "groups":
                batch = [g.to_json() for g in batch]
            yield (", " if j else "") + json.dumps(batch)[1:-1]
        yield "]"
    yield "}"


def indented(value: Any, prefix: str = "") -> str:
    """json.dumps(value, indent=2), at an indentation of prefix: its lists of strings (a
    group's files: 10^5 names in a few groups) joined in C, not encoded by json's Python
    encoder (which indenting needs) one name at a time. The text of a value is the same alone
    or nested, but for the prefix after each newline (a JSON string holds no newline)."""
    inner = prefix + "  "
    if type(value) is list and value and _STR.issuperset(map(type, value)):
        return f"[\n{inner}" + f",\n{inner}".join(map(_string, value)) + f"\n{prefix}]"
    if type(value) is dict and value and _STR.issuperset(map(type, value)):
        items = (f"{inner}{_string(k)}: {indented(v, inner)}" for k, v in value.items())
        return "{\n" + ",\n".join(items) + f"\n{prefix}}}"
    if type(value) is list and value:
        return "[\n" + ",\n".join(inner + indented(v, inner) for v in value) + f"\n{prefix}]"
    return json.dumps(value, indent=2).replace("\n", "\n" + prefix)


_STR = frozenset((str,))
_string = json.encoder.encode_basestring_ascii  # json.dumps() of a string (ensure_ascii)
_BATCH = 1000  # items given to json.dumps() at once (one call per item cost more than its text)


def as_html(a: Advice) -> str:
    e = html.escape
    rows = []
    for f in a.findings:
        settings = ", ".join(f"{k}={v}" for k, v in f.settings) or "-"
        assumed = "".join(f"<br><i>assumed: {e(w)}</i>" for w in f.assumed)
        rows.append(
            f"<tr class='{e(f.severity)}'><td>{e(f.severity)}</td><td>{e(f.code)}</td>"
            f"<td>{e(f.group)}</td><td><code>{e(settings)}</code></td><td>{e(f.evidence)}</td>"
            f"<td>{e(f.explain)}{'<br><i>' + e(f.note) + '</i>' if f.note else ''}{assumed}</td>"
            f"<td>{e(f.source)}</td></tr>"
        )
    groups = "".join(
        f"<li><b>{e(g.pattern)}</b>: {e(_insight_line(g))}</li>"
        for g in a.groups
        if g.get("interface")
    )
    undecided = "".join(
        f"<li>{e(u.code)} on {e(u.group)}: needs {e(', '.join(u.missing))}"
        f"{' (' + e('; '.join(u.notes)) + ')' if u.notes else ''}</li>"
        for u in a.undecided
    )
    limits = "".join(f"<li>{e(x)}</li>" for x in a.limits)
    control = e(a.control_text() or "no settings to apply")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>iotune advice: {e(a.source)}</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top}}
tr.high td:first-child{{background:#f8c0c0}} tr.medium td:first-child{{background:#f8e0b0}}
tr.low td:first-child{{background:#e0f0e0}}</style></head><body>
<h1>iotune advice</h1><p>{e(a.source)} ({e(a.kind)})</p>
<h2>Insights</h2><ul>{groups}</ul>
<h2>Findings</h2><table><tr><th>severity</th><th>rule</th><th>files</th><th>settings</th>
<th>evidence</th><th>why</th><th>source</th></tr>{"".join(rows)}</table>
<h2>Not decided</h2><ul>{undecided or "<li>none</li>"}</ul>
<h2>What this source cannot tell</h2><ul>{limits or "<li>nothing listed</li>"}</ul>
<h2>Control file</h2><pre>{control}</pre></body></html>
"""
