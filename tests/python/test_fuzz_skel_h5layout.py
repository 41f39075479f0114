"""skel's reader of `h5dump -H -p` (iotune.skel.h5layout.parse: groups, datasets, attributes)
on real outputs (seed corpus tests/data/fuzz/h5dump/) and mutations of them: it never raises,
and every attribute it finds becomes either nothing (a type skeletons do not write) or a
descriptor entry the descriptor reader accepts (or refuses with one DescriptorError)."""

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotune.skel import attrs, h5layout
from iotune.skel import descriptor as dmod

CORPUS = sorted((Path(__file__).resolve().parents[1] / "data" / "fuzz" / "h5dump").glob("*.txt"))
LINES = [ln for p in CORPUS for ln in p.read_text().splitlines()]
EXAMPLES = int(os.environ.get("IOTUNE_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

BASE = {"skel": 1, "ranks": 1, "files": [{"name": "a.h5", "datasets": [
    {"name": "/d", "type": "int8", "dims": [4]}], "writes": [
    {"dataset": "/d", "start": [0], "count": [4]}]}]}  # fmt: skip


def _check(text: str) -> dict:
    out = h5layout.parse(text)
    assert set(out) == {"groups", "datasets", "attributes"}
    for a in out["attributes"]:
        entry = attrs.from_layout(a, dmod.TYPES)
        if entry is None:
            continue
        desc = dict(BASE, files=[dict(BASE["files"][0], attributes=[entry])])
        try:
            d = dmod.parse_text(yaml.safe_dump(desc), "a.yaml")
        except dmod.DescriptorError as e:
            assert str(e).startswith("a.yaml") and "\n" not in str(e).strip()
        else:
            (got,) = d.files[0].attributes
            assert (got.on, got.name) == (entry["object"], entry["name"])
    return out


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_seed_corpus(path):
    out = _check(path.read_text())
    if path.name == "attributes-checkpoint.txt":
        got = {(a["on"], a["name"]) for a in out["attributes"]}
        assert ("/fields", "code") in got and ("/fields/field0", "units") in got
        assert out["datasets"]["/fields/field0"]["chunks"]  # attributes leave datasets whole
    if path.name == "found_bad_numbers.txt":  # raised ValueError (found by hand, 2026-11-26)
        assert out["datasets"]["/a"]["dims"] == [] and out["datasets"]["/a"]["chunks"] is None
        assert out["attributes"][0]["dims"] == []


@FUZZ
@given(st.sampled_from(CORPUS), st.data())
def test_numbers_replaced(path, data):
    """Digits (extents, chunk sizes, string sizes) replaced by other characters."""
    text = list(path.read_text())
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    for _ in range(data.draw(st.integers(1, 4)) if digits else 0):
        i = data.draw(st.sampled_from(digits))
        text[i] = data.draw(st.sampled_from(list("x- ,()/;{}UNLIMITED")))
    _check("".join(text))


@FUZZ
@given(st.lists(st.sampled_from(LINES), max_size=80))
def test_shuffled_lines_of_real_outputs(lines):
    _check("\n".join(lines))


@FUZZ
@given(st.sampled_from(CORPUS), st.data())
def test_mutated_lines(path, data):
    lines = path.read_text().splitlines()
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(lines) - 1))
        junk = data.draw(st.text(alphabet=st.sampled_from(list('{}()"/; 0123456789x,-')),
                                 max_size=12))  # fmt: skip
        k = data.draw(st.integers(0, len(lines[i])))
        lines[i] = lines[i][:k] + junk + lines[i][k:]
    _check("\n".join(lines))


@FUZZ
@given(st.text(alphabet=st.sampled_from(list('{}()"/ \nATRIBUEDSPCLGOHNK5_0123456789,;')),
               max_size=400))  # fmt: skip
def test_brace_soup(text):
    _check(text)
