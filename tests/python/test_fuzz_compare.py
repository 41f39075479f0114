"""Fuzzing the reader of `iotune compare` (iotune.compare.read.load, diff.compare and the text,
JSON and HTML renderings): the corpus tests/data/fuzz/compare/ replayed (ok_*: compared with a
partner of its kind; bad_*: one message naming the file, exit 2), then Hypothesis mutations of
the ok_ seeds, profiles and study summaries (tests/python/fuzzing.py). The only outcomes
allowed: a comparison rendered three ways, or one InputError; never another exception."""

import contextlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from fuzzing import EXAMPLES, encoded, load_seed, mutated, seeds
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iotune.cli import main
from iotune.compare import diff, page, read, text
from iotune.inputs import InputError

SEEDS = seeds("compare")
GOOD = [(p.name, load_seed(p)) for p in seeds("compare", "ok_")]
PARTNER = {  # a seed of each kind to compare with
    "profile": seeds("compare", "ok_real_profile_gcrmio_a")[0],
    "study": seeds("compare", "ok_real_study_summary_a")[0],
}


def _kind(name: str) -> str:
    return "profile" if "profile" in name else "study"


def _compare(path: Path, partner: Path, swap: bool) -> str:
    """The three renderings of path compared with partner; InputError passes through."""
    a, b = (partner, path) if swap else (path, partner)
    c = diff.compare(read.load(str(a)), read.load(str(b)))
    out = text.render(c) + page.render(c, 0) + json.dumps(text.to_json(c))
    return out


def test_the_corpus_is_there():
    assert len(SEEDS) >= 15 and len(GOOD) >= 4


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name)
def test_corpus_replay(path):
    partner = PARTNER[_kind(path.name)]
    for args in ((str(path), str(partner)), (str(partner), str(path))):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["compare", *args])
        if path.name.startswith("ok_"):
            assert status == 0 and out.getvalue() and not err.getvalue(), err.getvalue()
        else:
            message = err.getvalue()
            assert status == 2 and not out.getvalue() and message.count("\n") == 1, message
            assert message.startswith("iotune: ") and str(path) in message, message


@st.composite
def documents(draw):
    name, doc = draw(st.sampled_from(GOOD))
    return _kind(name), draw(encoded(draw(mutated(doc))))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=documents(), swap=st.booleans())
def test_mutated_inputs_are_compared_or_refused_in_one_message(case, swap):
    kind, data = case
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "input.json"
        path.write_bytes(data)
        try:
            out = _compare(path, PARTNER[kind], swap)
        except InputError as e:
            event("refused")
            message = str(e)
            assert "\n" not in message and str(path) in message, message
            return
    event("compared")
    assert out.startswith("iotune compare: two ")
