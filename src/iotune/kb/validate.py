"""A knowledge-base entry checked in full before it is stored or used (docs/kb.md, "Bad input").

An entry from outside (an imported export, a row written by another program) must have the
types the knowledge base writes, finite numbers in their ranges, settings that make a valid
control file (the parameter registry and the control-file grammar: iotune.controlfile), and,
for imports, its uid, which must match its content. `entry(data, where)` returns the Entry or
raises one InputError naming the file and the entry; nothing is stored before every entry of a
file has passed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from iotune.inputs import InputError
from iotune.kb.entry import Entry
from iotune.kb.signature import Signature
from iotune.params import shown

UID_RE = re.compile(r"[0-9a-f]{20}")
STUDY_UID_RE = re.compile(r"[0-9a-f]{8,64}")  # iotune.study.STUDY_UID: a uuid4's hex
MAX_TEXT = 65536  # a study name, command or date longer than this is not one
MAX_NUMBER = 2**64


class _Bad(Exception):
    pass


def _text(x: Any, where: str, optional: bool = True) -> str:
    if x is None and optional:
        return ""
    if not isinstance(x, str):
        raise _Bad(f"{where} is not a string ({type(x).__name__})")
    if len(x) > MAX_TEXT:
        raise _Bad(f"{where} is longer than {MAX_TEXT} characters")
    return x


def _number(x: Any, where: str, lo: float | None = None, hi: float | None = None,
            integer: bool = False, optional: bool = True) -> Any:  # fmt: skip
    if x is None and optional:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise _Bad(f"{where} is not a number ({x!r})")
    if isinstance(x, float) and not math.isfinite(x):
        raise _Bad(f"{where} is not a finite number ({x!r})")
    if integer and not isinstance(x, int):
        raise _Bad(f"{where} is not a whole number ({x!r})")
    if abs(x) > MAX_NUMBER or (lo is not None and x < lo) or (hi is not None and x > hi):
        # the bounds as checked: none wider than MAX_NUMBER (1e+308 is not "inside [0, inf]")
        lo_s = f"{-MAX_NUMBER if lo is None else max(lo, -MAX_NUMBER):g}"
        hi_s = f"{MAX_NUMBER if hi is None else min(hi, MAX_NUMBER):g}"
        raise _Bad(f"{where} is {x!r}, outside [{lo_s}, {hi_s}]")
    return x


def _object(x: Any, where: str, optional: bool = False) -> Mapping[str, Any]:
    if x is None and optional:
        return {}
    if not isinstance(x, Mapping):
        raise _Bad(f"{where} is not an object ({type(x).__name__})")
    return x


def settings(x: Any, where: str) -> dict[str, str]:
    """Settings that make a valid control file: names the registry knows (or valid MPI-IO hint
    keys), values valid for them, as iotune.controlfile reads them back."""
    from iotune import controlfile, params

    raw = _object(x, where)
    out = {str(k): _text(v, f"{where}.{shown(str(k))}", optional=False) for k, v in raw.items()}
    if not out:
        return out
    # each name and value as the runtime's adaptive mode reads them (adapt_kb.c): a parameter of
    # the registry by its exact name, its value parsed as it stands (iot_value_parse); a bad one
    # is named by its key (chunk_size=1: below the minimum)
    for k, v in out.items():
        p = params.find(k)
        if p is None:
            raise _Bad(f"{where}.{shown(k)}: not a parameter of the registry{_case_hint(k)}")
        try:
            params.exact_value(p, v)
        except ValueError as e:
            raise _Bad(f"{where}.{k}: {e}") from None
    try:
        text = controlfile.render(out)
    except ValueError as e:
        raise _Bad(f"{where}: {e}") from None
    parsed = controlfile.parse_text(text, where)
    if not parsed.ok:
        raise _Bad(f"{where}: {parsed.errors[0].message}")
    return out


def _case_hint(name: str) -> str:
    """' (names are case-sensitive: cb_buffer_size)' for a registry name in another case."""
    from iotune import params

    same = [n for n in params.names() if n.lower() == name.lower()]
    return f" (names are case-sensitive: {same[0]})" if same else " (`iotune check --list`)"


def _signature(x: Any, where: str) -> Signature:
    data = _object(x, where)
    motif = _object(data.get("motif"), f"{where}.motif")
    if not motif:
        raise _Bad(f"{where}.motif is empty")
    # a field missing compares as unknown (entries of an older signature version lack the newer
    # fields; they are kept, and never suggested for another version)
    motif = {str(k): _text(v, f"{where}.motif.{k}", optional=False) for k, v in motif.items()}
    scale = dict(_object(data.get("scale"), f"{where}.scale", optional=True))
    for k, v in scale.items():
        if k == "ranks":  # a run has at least one process
            _number(v, f"{where}.scale.{k}", lo=1, integer=True)
        elif not isinstance(v, str):
            _number(v, f"{where}.scale.{k}", lo=0)
    platform = _object(data.get("platform"), f"{where}.platform", optional=True)
    platform = {str(k): _text(v, f"{where}.platform.{k}", optional=False)
                for k, v in platform.items()}  # fmt: skip
    version = _number(data.get("version"), f"{where}.version", lo=1, integer=True, optional=False)
    iv = _number(data.get("insights_version"), f"{where}.insights_version", lo=1, integer=True)
    sig = Signature(motif=motif, scale=scale, platform=platform, version=version)
    if iv is not None:
        sig.insights_version = iv
    key = data.get("key")
    if key is not None and key != sig.key:
        raise _Bad(f"{where}.key {key!r} is not its motif's key ({sig.key}): edited or damaged")
    return sig


def _leaders(x: Any, where: str) -> list[dict[str, Any]]:
    if x is None:
        return []
    if not isinstance(x, list):
        raise _Bad(f"{where} is not a list ({type(x).__name__})")
    out = []
    for i, item in enumerate(x):
        w = f"{where}[{i}]"
        obj = _object(item, w)
        out.append({
            "settings": settings(obj.get("settings"), f"{w}.settings"),
            "median": _number(obj.get("median"), f"{w}.median", lo=0),
            "runs": _number(obj.get("runs") or 0, f"{w}.runs", lo=0, integer=True),
        })  # fmt: skip
    return out


def _study_uid(x: Any) -> str:
    if x is None or x == "":
        return ""
    if not isinstance(x, str) or not STUDY_UID_RE.fullmatch(x):
        raise _Bad(f"its study_uid {x!r} is not one iotune writes")
    return x


def _verdict(x: Any, where: str) -> dict[str, Any]:
    """The headline of the study (iotune.verdict): absent in entries of an older iotune."""
    obj = _object(x, where, optional=True)
    out: dict[str, Any] = {}
    for k in ("low", "high"):
        if k in obj:
            out[k] = _number(obj[k], f"{where}.{k}", lo=0)
    if "confidence" in obj:
        out["confidence"] = _number(obj["confidence"], f"{where}.confidence", lo=0, hi=1)
    for k in ("wins", "pairs"):
        if k in obj:
            out[k] = _number(obj[k], f"{where}.{k}", lo=0, integer=True)
    if out.get("wins") is not None and out.get("pairs") is not None and out["wins"] > out["pairs"]:
        raise _Bad(f"{where}: wins {out['wins']} of {out['pairs']} pairs")
    if (out.get("low") is None) != (out.get("high") is None):
        raise _Bad(f"{where}: an interval needs both ends (low and high) or neither")
    if out.get("low") is not None and out["low"] > out["high"]:
        raise _Bad(f"{where}: its interval's low end {out['low']} is above its high end")
    if "established" in obj:
        if not isinstance(obj["established"], bool):
            raise _Bad(f"{where}.established is not true or false ({obj['established']!r})")
        out["established"] = obj["established"]
    if "text" in obj:
        out["text"] = _text(obj["text"], f"{where}.text")
    return out


def _entry(data: Any, require_uid: bool) -> Entry:
    obj = _object(data, "the entry")
    uid = obj.get("uid")
    if uid is None and require_uid:
        raise _Bad("it has no uid: its integrity cannot be checked (export it with iotune kb "
                   "export)")  # fmt: skip
    if uid is not None and not (isinstance(uid, str) and UID_RE.fullmatch(uid)):
        raise _Bad(f"its uid {uid!r} is not one iotune writes")
    spread = _object(obj.get("spread"), "spread", optional=True)
    for k, v in spread.items():
        _number(v, f"spread.{k}", lo=0)
    improved = obj.get("improved", False)
    if not isinstance(improved, bool):
        raise _Bad(f"improved is not true or false ({improved!r})")
    e = Entry(
        signature=_signature(obj.get("signature"), "signature"),
        settings=settings(obj.get("settings"), "settings"),
        space=_text(obj.get("space"), "space"),
        speedup=_number(obj.get("speedup"), "speedup", lo=0),
        p_value=_number(obj.get("p_value"), "p_value", lo=0, hi=1),
        spread=dict(spread),
        improved=improved,
        study=_text(obj.get("study"), "study"),
        command=_text(obj.get("command"), "command"),
        source=_text(obj.get("source"), "source"),
        created=_text(obj.get("created"), "created"),
        leaders=_leaders(obj.get("leaders"), "leaders"),
        study_uid=_study_uid(obj.get("study_uid")),
        verdict=_verdict(obj.get("verdict"), "verdict"),
    )
    if improved and e.speedup is not None and e.speedup <= 0:
        raise _Bad(f"speedup is {e.speedup!r} for an improvement")
    if uid is not None and uid != e.uid:
        raise _Bad("its uid does not match its content (edited or damaged)")
    return e


def entry(data: Any, where: str, require_uid: bool = True) -> Entry:
    """The Entry of data, checked in full; InputError naming where (the file and the entry)."""
    try:
        return _entry(data, require_uid)
    except _Bad as e:
        raise InputError(f"{where}: {e}") from None


def check(e: Entry, where: str) -> None:
    """An entry about to be stored, checked as an imported one would be (its own uid)."""
    entry(e.to_json(), where, require_uid=True)
