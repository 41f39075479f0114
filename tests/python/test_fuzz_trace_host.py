"""Fuzzing the reader of a host's trace file (schema 5: iotune.trace.read_all, iotune.trace_host):
the checked-in corpus tests/data/fuzz/trace_host/ replayed (ok_*: every rank read; bad_*: one
TraceError naming the file), then Hypothesis mutations of the ok_ seeds, gzip-compressed or
not (tests/python/fuzzing.py). The only outcomes allowed: the ranks' logical traces, or
TraceError; never another exception or a hang (a bound on the blocks of calls rebuilt holds
for the whole file, however many ranks share a shape)."""

import gzip
import tempfile
from pathlib import Path

import pytest
from fuzzing import EXAMPLES, check_trace, encoded, load_seed, mutated, seeds
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iotune import trace as iotrace

SEEDS = seeds("trace_host")
GOOD = [load_seed(p) for p in seeds("trace_host", "ok_")]


@pytest.fixture(scope="module", autouse=True)
def small_bounds():
    """Bounds a fuzz example reaches in milliseconds: 10,000 blocks of calls rebuilt per file
    (bad_blocks_bomb_shared_shape: 6,000 per rank, two ranks), 8 MiB of gzip data expanded."""
    old = iotrace.MAX_BLOCKS, iotrace.MAX_EXPANDED
    iotrace.MAX_BLOCKS, iotrace.MAX_EXPANDED = 10_000, 8 << 20
    yield
    iotrace.MAX_BLOCKS, iotrace.MAX_EXPANDED = old


def _check(traces):
    """A host's file (version 5) gives distinct ranks within the job; a mutation that changed
    the version is read as one rank's trace of that schema."""
    assert isinstance(traces, list) and traces
    if traces[0]["version"] == 5:
        ranks = [t["rank"] for t in traces]
        assert len(set(ranks)) == len(ranks)
        assert all(0 <= t["rank"] < t["ranks"] for t in traces)
    else:
        assert len(traces) == 1
    for tr in traces:
        check_trace(tr)


def test_the_corpus_is_there():
    assert len(SEEDS) >= 10 and len(GOOD) >= 3


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name)
def test_corpus_replay(path):
    if path.name.startswith("ok_"):
        _check(iotrace.read_all(path))
    else:
        with pytest.raises(iotrace.TraceError) as e:
            iotrace.read_all(path)
        assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_a_shared_shape_gives_each_rank_its_own_steps():
    """ok_real_host_vpicio_3ranks: ranks 1 and 2 carry no steps; theirs are the first rank's
    plus the rank times the step per rank (each rank writes its slice of the shared file)."""
    path = SEEDS[0].parent / "ok_real_host_vpicio_3ranks.json.gz"
    doc = load_seed(path)
    assert not any("step" in m for m in doc["members"])
    sh = doc["shapes"][0]
    for t in iotrace.read_all(path):
        want = [None if s is None else s + (t["rank"] - sh["first"]) * k
                for s, k in zip(sh["step"], sh["step_per_rank"], strict=True)]  # fmt: skip
        assert [s["step"] for s in t["signatures"]] == want
    assert any(sh["step_per_rank"])


@st.composite
def host_files(draw):
    data = draw(encoded(draw(mutated(draw(st.sampled_from(GOOD))))))
    return gzip.compress(data) if draw(st.booleans()) else data


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=host_files())
def test_mutated_host_files_are_read_or_refused(data):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "host-0.json.gz"
        path.write_bytes(data)
        try:
            traces = iotrace.read_all(path)
        except iotrace.TraceError as e:
            assert str(path) in str(e)
            event("refused")
            return
    event("read")
    _check(traces)
