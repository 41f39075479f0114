"""What `iotune compare` is given: a profile (the runtime's JSON), or a study (the output
directory of `iotune tune`, or its summary.json). Every input is read as every file from outside
is (iotune.inputs) and checked before use: anything else is one InputError naming the file and,
where there is one, the key."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotune import profile as prof
from iotune.inputs import InputError, load_json
from iotune.outputs import printable

SUMMARY = "summary.json"
BASELINE = "kb-profile.json"  # the study's run at the defaults with capture on (docs/tune.md)
# A summary's sections that are not options of the study (their own parts of the comparison,
# or data too long for a row: the trials, rounds and reasons)
NOT_OPTIONS = frozenset({
    "final", "leaders", "minimal", "recommended", "best_settings", "not_searched",
    "values_not_searched", "not_in_effect", "switched_on", "storage", "ran_in", "verdict", "study",
    "headline",
})  # fmt: skip
MAX_TEXT = 2000  # a value longer than this is cut (a row of a table, not a document)


@dataclass
class Study:
    """What a study's summary.json says, checked: the fields compare shows."""

    name: str
    options: dict[str, Any]  # flattened: "nprocs", "measurement.warmup", ...
    headline: dict[str, Any]  # "verdict", "speedup", "default median", ...
    recommended: dict[str, str]  # best.xml's settings
    best: dict[str, str]  # the search's winner (all its settings)


@dataclass
class Side:
    """A or B."""

    kind: str  # "profile" or "study"
    path: str  # as given
    label: str  # what the output calls it
    profile: prof.Profile | None = None  # a study: its baseline profile, when it has one
    study: Study | None = None
    notes: list[str] = field(default_factory=list)


def _is_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def load(path: str) -> Side:
    """A or B, whatever it is; InputError (one message naming the file) when it is neither a
    profile nor a study, or cannot be read."""
    if _is_dir(path):
        summary = os.path.join(path, SUMMARY)
        if not os.path.lexists(summary):
            raise InputError(
                f"{path}: a directory without {SUMMARY}: not the output directory of a finished "
                "study (iotune tune writes it at the end), and not a profile"
            )
        return _study_side(path, path, summary, load_json(summary, "study summary"))
    data = load_json(path, "profile or study summary")
    if isinstance(data, dict) and data.get("schema") == prof.SCHEMA:
        p = prof.parse(data, Path(path))
        return Side("profile", path, _profile_label(p), profile=p)
    if isinstance(data, dict) and isinstance(data.get("study"), str) and "final" in data:
        return _study_side(path, os.path.dirname(path) or ".", path, data)
    raise InputError(
        f'{path}: neither an iotune profile (no "schema": "{prof.SCHEMA}") nor a study\'s '
        f'{SUMMARY} (no "study" and "final")'
    )


def _profile_label(p: prof.Profile) -> str:
    argv = p.data.get("argv") or [p.data.get("program") or "?"]
    return f"{' '.join(argv)[:200]} ({p.ranks} rank{'s' if p.ranks != 1 else ''})"


def _study_side(given: str, directory: str, summary_path: str, data: Any) -> Side:
    study = parse_summary(data, summary_path)
    side = Side("study", given, study.name, study=study)
    baseline = os.path.join(directory, BASELINE)
    if os.path.lexists(baseline):
        try:
            side.profile = prof.load(baseline)
        except InputError as e:  # the summary is still compared; the note says why not this
            side.notes.append(f"baseline profile not used: {e}")
    else:
        side.notes.append(f"no baseline profile ({baseline} is absent)")
    return side


# ----------------------------------------------------------------------------- summary.json


def _scalar(x: Any) -> bool:
    return x is None or isinstance(x, (str, int, float, bool))


def _text(x: Any) -> Any:
    """A value for a row: scalars as they are (strings bounded), lists of scalars joined."""
    if isinstance(x, str):
        return x[:MAX_TEXT]
    if isinstance(x, list) and all(_scalar(v) for v in x):
        return " ".join(str(v) for v in x)[:MAX_TEXT]
    return x


def _settings(value: Any, name: str, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{name}: the study summary's {key} is not an object of settings")
    out = {}
    for k, v in value.items():
        if not _scalar(v):
            raise InputError(
                f"{name}: the study summary's {key}.{printable(k[:80])} is not a value"
            )
        out[k[:MAX_TEXT]] = str(v)[:MAX_TEXT]
    return out


def _number(d: dict[str, Any], key: str, name: str, where: str) -> float | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(f"{name}: the study summary's {where}{key} is not a number")
    return float(v) if isinstance(v, float) else int(v)


MAX_OPTIONS = 500  # values of a summary compared as options, at most
FLAT_DEPTH = 3  # objects within objects: "measurement.runtime.lib"


def _flatten(data: dict[str, Any]) -> dict[str, Any]:
    """Top-level scalars (and lists of scalars) as they are, those of objects within as
    "key.sub" (FLAT_DEPTH levels, MAX_OPTIONS values): the options a study was run with,
    whatever version of iotune wrote it."""
    out: dict[str, Any] = {}
    stack = [("", {k: v for k, v in data.items() if k not in NOT_OPTIONS}, 1)]
    while stack and len(out) < MAX_OPTIONS:
        prefix, obj, depth = stack.pop(0)
        for k, v in obj.items():
            v = _text(v)
            if _scalar(v):
                out[f"{prefix}{k}"[:MAX_TEXT]] = v
            elif isinstance(v, dict) and depth < FLAT_DEPTH:
                stack.append((f"{prefix}{k}.", v, depth + 1))
            if len(out) >= MAX_OPTIONS:
                break
    return out


def parse_summary(data: Any, name: str) -> Study:
    """A study's summary.json (study.finish writes it), its fields checked."""
    if not isinstance(data, dict) or not isinstance(data.get("study"), str):
        raise InputError(f'{name}: not a study summary (no "study" name)')
    final = data.get("final")
    if final is None:
        final = {}
    if not isinstance(final, dict):
        raise InputError(f"{name}: the study summary's final is not an object")
    # the headline (iotune.verdict: measured on best.xml itself) where the summary has one;
    # an older iotune's summary has only the full winner's verification ("final")
    head = data.get("headline")
    if head is not None and not isinstance(head, dict):
        raise InputError(f"{name}: the study summary's headline is not an object")
    source, where = (head, "headline.") if head is not None else (final, "final.")
    headline: dict[str, Any] = {}
    verdict = data.get("verdict", final.get("verdict"))
    if verdict is not None and not isinstance(verdict, str):
        raise InputError(f"{name}: the study summary's verdict is not text")
    headline["verdict"] = (verdict or "")[:MAX_TEXT]
    shown = source.get("established" if head is not None else "improved")
    if shown is not None:
        headline["recommended"] = "yes" if shown is True else "no"
    for key, label in (("speedup", "speedup"), ("low", "interval low"), ("high", "interval high"),
                       ("pairs", "pairs"), ("wins", "tuned faster in"),
                       ("p_nominal", "p")):  # fmt: skip
        value = _number(source, key, name, where)
        if value is not None:
            headline[label] = value
    stats = source.get("summary") or {}
    if not isinstance(stats, dict):
        raise InputError(f"{name}: the study summary's {where}summary is not an object")
    for variant in ("default", "tuned"):
        s = stats.get(variant)
        if s is None:
            continue
        if not isinstance(s, dict):
            raise InputError(
                f"{name}: the study summary's {where}summary.{variant} is not an object"
            )
        for key in ("median", "cv"):
            value = _number(s, key, name, f"{where}summary.{variant}.")
            if value is not None:
                headline[f"{variant} {key}"] = value
    options = _flatten(data)
    # what a newer iotune says about its headline (an interval...) goes with the headline
    for key in [k for k in options if "headline" in k or "verdict" in k]:
        headline[key] = options.pop(key)
    return Study(
        name=data["study"][:200],
        options=options,
        headline=headline,
        recommended=_settings(data.get("recommended"), name, "recommended"),
        best=_settings(data.get("best_settings"), name, "best_settings"),
    )
