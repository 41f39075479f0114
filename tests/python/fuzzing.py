"""Structure-aware mutation of valid documents, shared by the fuzz tests (test_fuzz_*.py).

A valid document (a seed of tests/data/fuzz/<surface>/ whose name starts with ok_) is mutated
the way hostile input differs from good input: keys dropped, values replaced by ones of the
wrong type, huge, negative, NaN or infinite numbers, deeply nested containers, long strings;
then written as JSON (NaN and Infinity as Python writes them), truncated, bit-flipped, or
replaced by binary garbage. The property each surface asserts: the reader returns a valid result
or raises InputError (one message), never any other exception, never hangs.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "fuzz"
# examples per fuzz test: 200 in CI (each file well under 60 s); IOTUNE_FUZZ_EXAMPLES=5000 for a
# longer campaign (crashes found go into the corpus as bad_* or ok_* files)
EXAMPLES = int(os.environ.get("IOTUNE_FUZZ_EXAMPLES", "200"))


def seeds(surface: str, prefix: str = "") -> list[Path]:
    """The corpus files of a surface (sorted), those whose name starts with prefix."""
    return sorted(p for p in (CORPUS / surface).iterdir() if p.name.startswith(prefix))


def load_seed(path: Path) -> Any:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def nested(depth: int) -> Any:
    value: Any = 1
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2, 2**31, 2**63 - 1, 2**63, 2**64, 2**64 + 1, 10**30, -(10**30)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-320, 1e308, -1e308, 0.5, float("nan"), float("inf")]),
)
NASTY = st.one_of(
    st.none(),
    st.booleans(),
    NUMBERS,
    st.text(max_size=30),
    st.sampled_from(
        ["", "nan", "NaN", "inf", "-1", "1e999", "0x10", "../../etc", "\x00", "é" * 300]
    ),
    st.lists(NUMBERS, max_size=4),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=6), NUMBERS, max_size=3),
    st.integers(min_value=1, max_value=150).map(nested),
)


def _paths(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in doc, parents before children."""
    out, stack = [], [doc]
    while stack:
        value = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
            value, list) else ()  # fmt: skip
        for k, v in items:
            out.append((value, k))
            if isinstance(v, (dict, list)):
                stack.append(v)
    return out


@st.composite
def mutated(draw: st.DrawFn, doc: Any, max_mutations: int = 4) -> Any:
    """doc with 1..max_mutations structural mutations."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(min_value=1, max_value=max_mutations))):
        paths = _paths(doc)
        if not paths:
            return draw(NASTY)
        parent, key = paths[draw(st.integers(min_value=0, max_value=len(paths) - 1))]
        op = draw(st.sampled_from(["drop", "replace", "replace", "wrap", "copy", "grow"]))
        if op == "drop":
            del parent[key]
        elif op == "replace":
            parent[key] = draw(NASTY)
        elif op == "wrap":
            parent[key] = draw(st.sampled_from([[parent[key]], {"x": parent[key]}]))
        elif op == "copy":  # a value from elsewhere in the document (right type, wrong place)
            _, other_key = paths[draw(st.integers(min_value=0, max_value=len(paths) - 1))]
            source = paths[draw(st.integers(min_value=0, max_value=len(paths) - 1))]
            try:
                parent[key] = copy.deepcopy(source[0][source[1]])
            except (KeyError, IndexError):
                pass
        elif op == "grow" and isinstance(parent[key], list):  # more of the same
            parent[key] = parent[key] * draw(st.integers(min_value=2, max_value=5))
    return doc


@st.composite
def encoded(draw: st.DrawFn, doc: Any) -> bytes:
    """A (mutated) document as bytes: JSON, or JSON damaged (truncated, bit-flipped, garbage)."""
    text = json.dumps(doc, allow_nan=True).encode()
    how = draw(st.sampled_from(["json", "json", "json", "truncate", "flip", "garbage", "prefix"]))
    if how == "truncate" and text:
        return text[: draw(st.integers(min_value=0, max_value=len(text) - 1))]
    if how == "flip" and text:
        data = bytearray(text)
        for _ in range(draw(st.integers(min_value=1, max_value=8))):
            i = draw(st.integers(min_value=0, max_value=len(data) - 1))
            data[i] ^= 1 << draw(st.integers(min_value=0, max_value=7))
        return bytes(data)
    if how == "garbage":
        return draw(st.binary(max_size=200))
    if how == "prefix":
        return draw(st.binary(min_size=1, max_size=8)) + text
    return text


def check_trace(tr: dict[str, Any]) -> None:
    """A rank's logical trace as iotune.trace gives it: events index its signatures, counts are
    whole, runs are Run records (the outcome every trace reader's fuzz test accepts)."""
    from iotune import trace as iotrace

    assert isinstance(tr["signatures"], list) and isinstance(tr["events"], list)
    for e in tr["events"]:
        assert 0 <= e[0] < len(tr["signatures"]) and e[1] >= 1
    for r in tr["runs"]:
        assert isinstance(r, iotrace.Run)
    for s in tr["signatures"]:  # an attribute call's entry: None or one of the table's
        assert s.get("attribute") is None or s["attribute"] in tr["attributes"]
