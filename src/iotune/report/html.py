"""report.html: one self-contained page (figures next to it as PNG files)."""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path
from typing import Any

from iotune import hostnoise
from iotune.report.table import addition_lines, settings_rows
from iotune.space import Space
from iotune.verdict import plural


def _table(header: list[str], rows: list[list[Any]]) -> str:
    """A table; with an empty header, a table of facts whose first cells are row headers.
    Numbers get class num (right-aligned, never broken inside)."""

    def cell(c: Any) -> str:
        num = isinstance(c, (int, float)) and not isinstance(c, bool)
        return f"<td{' class=num' if num else ''}>{html.escape(_fmt(c))}</td>"

    if not any(header):
        body = "".join(
            f"<tr><th scope=row>{html.escape(_fmt(row[0]))}</th>"
            + "".join(cell(c) for c in row[1:])
            + "</tr>"
            for row in rows
        )
        return f"<table class=facts>{body}</table>"
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(cell(c) for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, dict):  # settings: "name=value, ..." (a Python dict is not for readers)
        return ", ".join(f"{k}={v}" for k, v in sorted(x.items())) or "defaults"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _settings_text(settings: dict[str, str] | None) -> str:
    """name=value; ... (or "defaults")."""
    return "; ".join(f"{k}={v}" for k, v in sorted((settings or {}).items())) or "defaults"


def _why_not_searched(inert: dict[str, str]) -> list[str]:
    """'a, b: the baseline run read nothing' (one entry per reason)."""
    by_reason: dict[str, list[str]] = {}
    for name, why in inert.items():
        by_reason.setdefault(why, []).append(name)
    return [f"{', '.join(sorted(names))}: {why}" for why, names in by_reason.items()]


# Tables never push a value off the page: long values (settings strings, commands, paths)
# wrap anywhere, and a table is never wider than the page; checked at 420 and 1280 px wide in
# Chromium (tests/python/test_layout.py)
CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;
overflow-wrap:anywhere}table{border-collapse:collapse;margin:.5em 0;max-width:100%}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left;vertical-align:top;
overflow-wrap:anywhere}th{background:#f0f0f0;overflow-wrap:normal}th.long{overflow-wrap:anywhere}
td.num{text-align:right;white-space:nowrap}.better,.worse{text-align:right;white-space:nowrap}
.better{background:#eef6ee}.worse{background:#f6eee6}
.verdict{font-size:1.2em;padding:.6em;background:#eef6ee;border-left:5px solid #4a4}
.no{background:#f6f0e6;border-left-color:#c84}img{max-width:100%;height:auto}
code{background:#f4f4f4;padding:1px 4px}@media (max-width:600px){body{margin:1em auto;
padding:0 .5em}td,th{padding:2px 4px;font-size:12px}}"""


def _noise(summary: dict[str, Any]) -> list[str]:
    """One line on the machine's own noise and the controls used (iotune.hostnoise)."""
    line = hostnoise.report_line(summary.get("host_noise"))
    return [f"<p>Noise on this machine: {html.escape(line)}</p>"] if line else []


def write_html(
    path: Path,
    rows: list[dict[str, Any]],
    space: Space,
    summary: dict[str, Any],
    figures: dict[str, Path],
    importances: dict[str, float],
) -> Path:
    final = summary.get("final") or {}
    # the headline (iotune.verdict): measured on best.xml itself; a summary of an older iotune
    # has only the verification of its winner
    head = summary.get("headline") or {}
    measured = head or final
    unit = summary.get("objective_unit", "s")
    counts = Counter(r["status"] for r in rows)
    sources = Counter(r["source"] for r in rows if r["status"] == "ok" and r["source"])
    shown = head.get("established") if head else final.get("improved")
    good = "verdict" if shown else "verdict no"
    full = head.get("full_winner") or {}
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>iotune: "
        f"{html.escape(str(summary.get('study')))}</title><style>{CSS}</style></head><body>",
        f"<h1>iotune study <code>{html.escape(str(summary.get('study')))}</code></h1>",
        f"<p class='{good}'>{html.escape(str(summary.get('verdict', '')))}</p>",
        *([f"<p>{html.escape(str(full.get('text')))} (its settings: "
           f"{html.escape(_settings_text(full.get('settings')))})</p>"] if full else []),
        *_noise(summary),
        "<h2>What was tuned</h2>",
        _table(
            ["", ""],
            [
                ["command", summary.get("command")],
                ["trials ran in", summary.get("ran_in")],
                [
                    "space",
                    f"{space.name} ({len(space.dims)} parameters, {space.size():,} configurations)",
                ],
                ["strategy", summary.get("strategy")],
                *(
                    [["not searched", "; ".join(_why_not_searched(summary["not_searched"]))]]
                    if summary.get("not_searched")
                    else []
                ),
                *(
                    [
                        [
                            "switched on",
                            "; ".join(
                                f"{n}={on['value']}: {on['why']}"
                                for n, on in summary["switched_on"].items()
                            ),
                        ]
                    ]
                    if summary.get("switched_on")
                    else []
                ),  # fmt: skip
                ["objective", f"{summary.get('objective')} ({unit}, {summary.get('direction')})"],
                ["trials", ", ".join(f"{n} {s}" for s, n in counts.most_common())],
                ["measured from", ", ".join(f"{s} ({n} trials)" for s, n in sources.items())],
                ["storage", summary.get("storage")],
            ],
        ),
        *_measured_section(summary),
        "<h2>Recommended settings</h2>" if summary.get("recommended") else
        "<h2>No recommendation</h2>",
    ]  # fmt: skip
    title, srows = settings_rows(summary)
    if srows:
        parts.append(f"<p>{html.escape(title)}</p>")
        parts.append(_table(["parameter", "layer", "value", "removing it costs"], srows))
    if summary.get("recommended"):
        parts.append(
            "<p>Written to <code>best.xml</code>: run with "
            "<code>iotune run --config best.xml -- ...</code>. Only the settings whose removal "
            "costs measurably are kept.</p>"
        )
    else:
        parts.append(
            "<p>None: <code>best.xml</code> holds no settings (keep the defaults)."
            + (
                " The best candidate measured is in <code>candidate.xml</code>.</p>"
                if srows
                else "</p>"
            )
        )
    extra = [
        *(
            [f"{n}: left out of the recommendation, {why}" for n, why in
             ((summary.get("minimal") or {}).get("removed") or {}).items()]
        ),
        *addition_lines(summary),
        *[f"{n}: not in effect ({why})" for n, why in (summary.get("not_in_effect") or {}).items()],
        *[
            f"{n}={v}: not tried ({why})"
            for n, vals in (summary.get("values_not_searched") or {}).items()
            for v, why in vals.items()
        ],
    ]  # fmt: skip
    if extra:
        parts.append("<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in extra) + "</ul>")
    summ = measured.get("summary") or {}
    if summ:
        what = "best.xml" if summary.get("recommended") else "the candidate"
        parts.append(
            f"<h2>Default vs {what} (interleaved pairs, sequential test)</h2>"
            if head
            else "<h2>Default vs tuned (interleaved pairs, sequential test)</h2>"
        )
        parts.append(
            _table(
                ["variant", "settings", "n", f"median ({unit})", "min", "max", "CV"],
                [
                    [
                        name,
                        _settings_text((measured.get("variants") or {}).get(name)),
                        s.get("n"),
                        s.get("median"),
                        s.get("min"),
                        s.get("max"),
                        s.get("cv"),
                    ]
                    for name, s in summ.items()
                ],
            )
        )
        design = (head or {}).get("design") or final.get("design") or {}  # the headline's test
        more = design.get("extend_from")
        test = (
            f"sequential signed-rank test ({_fmt(design.get('min'))} to "
            f"{_fmt(more or design.get('max'))} pairs"
            + (f", up to {_fmt(design.get('max'))} while tuned leads by --min-gain" if more else "")
            + f", level {_fmt(design.get('level'))} per look"
            + (
                f", {_fmt(design['early'])} pairs all won significant"
                if design.get("early")
                else ""
            )
            + ", 0.05 overall)"
        )
        if head and head.get("pairs"):
            interval = (
                f"{head['confidence']:.0%} interval {head['low']:.2f}-{head['high']:.2f}x"
                if head.get("low") is not None
                else f"no {head['confidence']:.0%} interval from {plural(head['pairs'], 'pair')}"
            )
            parts.append(
                f"<p>Speedup {head['speedup']:.2f}x ({interval}, Hodges-Lehmann on the pairs' "
                f"log ratios, each end at the test's per-look level); faster in "
                f"{head['wins']} of {head['pairs']} pairs; speedup per pair: "
                + ", ".join(f"{x:.2f}x" for x in head.get("pair_ratios") or [])
                + f"; {test}, p of the pairs as one look = {_fmt(head.get('p_nominal'))}.</p>"
            )
        elif final.get("pair_ratios"):
            parts.append(
                "<p>Speedup per pair: "
                + ", ".join(f"{x:.2f}x" for x in final["pair_ratios"])
                + f"; tuned faster in {final.get('wins')} of {final.get('pairs')} pairs; "
                f"{test}, p of the pairs as one look = {_fmt(final.get('p_nominal'))}.</p>"
            )
        if full:
            parts.append(f"<p>{html.escape(str(full['text']))}.</p>")
    if "verify" in figures:
        parts.append("<img src='verify.png' alt='default vs tuned'>")
    parts.append("<h2>Every trial in order</h2><img src='trials.png' alt='trials'>")
    lead = summary.get("leaders") or {}
    if lead.get("values"):
        parts.append("<h2>Leaders re-measured (interleaved)</h2>")
        failed, runs = lead.get("failed") or {}, lead.get("runs") or {}
        bad = lead.get("not_recommended") or {}
        parts.append(
            _table(
                ["configuration", f"values ({unit})", "failed runs"],
                [
                    [
                        k,
                        ", ".join(f"{v:.4g}" for v in vals),
                        (f"{failed[k]} of {runs.get(k, '?')}" if failed.get(k) else "")
                        + (": not recommended" if k in bad else ""),
                    ]
                    for k, vals in lead["values"].items()
                ],
            )
        )
        for why in bad.values():
            parts.append(f"<p>{html.escape(str(why))}.</p>")
    parts.append("<h2>Effect of each parameter</h2>")
    parts.append(
        "<p>Measured effects are the settings' contributions above (the set with a setting "
        "against the set without it; those the search's trials did not favour may have been "
        "removed together, as their notes say). Below, "
        "hints from the search: per parameter, the objective of the successful trials at each "
        "value (other parameters vary at the same time, so a value that the search favoured "
        "late looks good with whatever else was good then), and Optuna's PED-ANOVA importance "
        "(how much a parameter decides whether a trial is among the best; one that the warm "
        "start settled early scores low even when it matters).</p>"
    )
    if importances:
        parts.append(
            _table(
                ["parameter", "importance (PED-ANOVA)"], [[k, v] for k, v in importances.items()]
            )
        )
    if "params" in figures:
        parts.append("<img src='params.png' alt='parameters'>")
    failures = [r for r in rows if r["status"] not in ("ok",)]
    if failures:
        parts.append("<h2>Trials that did not finish normally</h2>")
        parts.append(
            _table(
                ["trial", "status", "wall (s)", "configuration", "message"],
                [
                    [r["number"], r["status"], r["wall_s"], r["config"], r["message"][-160:]]
                    for r in failures[:50]
                ],
            )
        )
    parts.append(
        "<p>All trials: <code>trials.csv</code>; the study itself is in "
        f"<code>{html.escape(str(summary.get('storage')))}</code>.</p></body></html>"
    )
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _measured_section(summary: dict[str, Any]) -> list[str]:
    """How the study's trials and final phases were measured (iotune.measured)."""
    from iotune import measured

    return [
        "<h2>How it was measured</h2>",
        _table(["option", "value", "what it changes"], measured.rows(summary.get(measured.ATTR))),
    ]
