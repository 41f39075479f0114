"""Fuzzing the trace reader (iotune.trace.read): the checked-in corpus tests/data/fuzz/trace/
replayed (ok_*: read; bad_*: one TraceError naming the file), then Hypothesis mutations of the
ok_ seeds, gzip-compressed or not (tests/python/fuzzing.py). The only outcomes allowed: the
logical trace (signatures, runs, events), or TraceError; never another exception or a hang."""

import gzip
import tempfile
from pathlib import Path

import pytest
from fuzzing import EXAMPLES, check_trace, encoded, load_seed, mutated, seeds
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iotune import trace as iotrace

SEEDS = seeds("trace")
GOOD = [load_seed(p) for p in seeds("trace", "ok_")]


@pytest.fixture(scope="module", autouse=True)
def small_expansion_bound():
    """gzip data may expand to 8 MiB here (2 GiB in use): bad_gzip_bomb.json.gz, a valid trace
    padded to 24 MiB (25 kB compressed), is refused as it would be at any bound, in
    milliseconds; every other seed expands to a few kB."""
    old = iotrace.MAX_EXPANDED
    iotrace.MAX_EXPANDED = 8 << 20
    yield
    iotrace.MAX_EXPANDED = old


def test_the_corpus_is_there():
    assert len(SEEDS) >= 10 and len(GOOD) >= 3


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name)
def test_corpus_replay(path):
    if path.name.startswith("ok_"):
        check_trace(iotrace.read(path))
    else:
        with pytest.raises(iotrace.TraceError) as e:
            iotrace.read(path)
        assert str(path) in str(e.value) and "\n" not in str(e.value)
        if "bomb" in path.name:
            assert "expands to more than" in str(e.value)


@st.composite
def traces(draw):
    data = draw(encoded(draw(mutated(draw(st.sampled_from(GOOD))))))
    return gzip.compress(data) if draw(st.booleans()) else data


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=traces())
def test_mutated_traces_are_read_or_refused(data, monkeypatch_blocks):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "rank-0.json.gz"
        path.write_bytes(data)
        try:
            tr = iotrace.read(path)
        except iotrace.TraceError as e:
            assert str(path) in str(e)
            event("refused")
            return
    event("read")
    check_trace(tr)


@pytest.fixture(scope="module")
def monkeypatch_blocks():
    """A bound on the blocks a trace may expand to that a fuzz example reaches in milliseconds
    (huge counts interleaved must be refused, not expanded)."""
    old = iotrace.MAX_BLOCKS
    iotrace.MAX_BLOCKS = 10_000
    yield
    iotrace.MAX_BLOCKS = old
