"""The report's figures (matplotlib, PNG):

trials.png   the objective of every trial in order, failures and capped trials marked, the
             best so far and the default (like Fig. 2 of the H5Evolve poster);
verify.png   default vs tuned, from the interleaved pairs of the verification;
params.png   the effect of each parameter: the objective of the successful trials per value.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from iotune import params  # noqa: E402
from iotune.space import UNSET, Space  # noqa: E402

MARKS = {
    "failed": ("x", "tab:red"),
    "crashed": ("X", "tab:red"),
    "timeout": ("v", "tab:red"),
    "capped": ("^", "tab:orange"),
    "interrupted": ("s", "tab:gray"),
}


SOURCES = {"profile": "I/O time (profile)", "kernel": "kernel time", "wall": "wall time"}


def _label(summary: dict[str, Any]) -> str:
    """The objective in words: for auto, what the trials actually measured."""
    unit = summary.get("objective_unit", "s")
    objective = summary.get("objective", "auto")
    if objective == "auto":
        objective = SOURCES.get(summary.get("source", ""), "objective")
    return f"{objective} ({unit})"


def _short(name: str, value: str) -> str:
    p = params.find(name)
    if p is not None and p.type == "size" and value not in (UNSET, "default"):
        return params.format_size(int(value)).replace(" ", "")
    return value


def _wrapped(text: str, width_in: float, fontsize: float) -> str:
    """text broken into lines that fit a figure width_in inches wide at fontsize points (a
    character is about 0.6 of the font size wide): a title is never cut at the figure's edge."""
    per_line = max(20, int(width_in * 72 / (fontsize * 0.6)))
    return "\n".join(textwrap.wrap(text, per_line, break_on_hyphens=False)) or text


def plot_trials(path: Path, rows: list[dict[str, Any]], summary: dict[str, Any]) -> Path:
    maximize = summary.get("direction") == "maximize"
    fig, ax = plt.subplots(figsize=(9, 4.2))
    ok = [r for r in rows if r["status"] == "ok"]
    ax.plot(
        [r["number"] for r in ok],
        [r["value"] for r in ok],
        "o",
        ms=4,
        color="tab:blue",
        label="trial",
    )
    values = [r["value"] for r in ok]
    top = max(values) if values else 1.0
    for status, (marker, color) in MARKS.items():
        sel = [r for r in rows if r["status"] == status]
        if sel:
            ys = [r["capped_bound"] if r.get("capped_bound") else top * 1.05 for r in sel]
            ax.plot([r["number"] for r in sel], ys, marker, color=color, ms=6, ls="", label=status)
    best, xs, ys = None, [], []
    for r in rows:
        if r["status"] == "ok":
            v = r["value"]
            if best is None or (v > best if maximize else v < best):
                best = v
        if best is not None:
            xs.append(r["number"])
            ys.append(best)
    if xs:
        ax.step(xs, ys, where="post", color="tab:green", label="best so far")
    base = [r["value"] for r in ok if r["origin"] == "defaults"]
    if base:
        ax.axhline(base[0], color="tab:gray", ls="--", lw=1, label="default (first run)")
    ax.set_xlabel("trial")
    ax.set_ylabel(_label(summary))
    title = f"{summary.get('study', '')}: every trial in order ({summary.get('strategy')})"
    ax.set_title(_wrapped(title, 9, 12), fontsize=12)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_verify(path: Path, summary: dict[str, Any]) -> Path | None:
    # the pairs of best.xml itself (the headline's); a summary of an older iotune: its winner's
    final = summary.get("headline") or summary.get("final") or {}
    rounds = final.get("rounds") or []
    names = list((final.get("variants") or {}).keys())
    if not rounds or not names:
        return None
    width = max(5, 1.6 * len(names) + 2)
    fig, ax = plt.subplots(figsize=(width, 4))
    for i, name in enumerate(names):
        vals = [r[name] for r in rounds if r.get(name) is not None]
        if not vals:
            continue
        vals.sort()
        med = (
            vals[len(vals) // 2]
            if len(vals) % 2
            else (vals[len(vals) // 2 - 1] + vals[len(vals) // 2]) / 2
        )
        color = {"default": "tab:gray", "tuned": "tab:green"}.get(name, "tab:blue")
        ax.bar(i, med, color=color, alpha=0.6)
        ax.plot([i] * len(vals), vals, "k.", ms=5)
        ax.errorbar(i, med, yerr=[[med - vals[0]], [vals[-1] - med]], color="k", capsize=4)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel(_label(summary) + ", median and range")
    ax.set_title(
        _wrapped(str(summary.get("verdict") or final.get("verdict", "")), width, 9), fontsize=9
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_params(
    path: Path, rows: list[dict[str, Any]], space: Space, summary: dict[str, Any]
) -> Path | None:
    ok = [r for r in rows if r["status"] == "ok"]
    dims = [d for d in space.dims if d.name not in summary.get("not_searched", {})]
    if not ok or not dims:
        return None
    n = len(dims)
    cols = min(4, n)
    nrows = math.ceil(n / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 2.6 * nrows), squeeze=False)
    for ax, d in zip(axes.flat, dims, strict=False):
        for i, v in enumerate(d.values):
            key = d.default if v == UNSET else v
            vals = [r["value"] for r in ok if r["settings"].get(d.name, d.default) == key]
            if vals:
                vals.sort()
                ax.plot([i] * len(vals), vals, ".", color="tab:blue", ms=4, alpha=0.6)
                ax.plot(i, vals[len(vals) // 2], "_", color="k", ms=14, mew=2)
        ax.set_xticks(
            range(len(d.values)),
            [_short(d.name, v) for v in d.values],
            rotation=45,
            fontsize=7,
            ha="right",
        )
        ax.set_title(d.name, fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(
        _wrapped(
            f"effect of each parameter: {_label(summary)} of successful trials (bar: median)",
            3.2 * cols,
            10,
        ),
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_plots(
    out: Path, rows: list[dict[str, Any]], space: Space, summary: dict[str, Any]
) -> dict[str, Path]:
    sources = [r["source"] for r in rows if r["status"] == "ok" and r["source"]]
    summary = {**summary, "source": max(set(sources), key=sources.count) if sources else ""}
    figures = {"trials": plot_trials(out / "trials.png", rows, summary)}
    for name, fig in (
        ("verify", plot_verify(out / "verify.png", summary)),
        ("params", plot_params(out / "params.png", rows, space, summary)),
    ):
        if fig is not None:
            figures[name] = fig
    return figures
