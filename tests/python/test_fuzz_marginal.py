"""Fuzzing the search's marginal effects (search/marginal.py): random studies' rows (settings
from a small alphabet, times with ties, zeros and extremes) never crash it, and what it returns
keeps its promises: the exact rank-sum p of a permutation test, at least MIN_SIDE trials a side,
no parameter of the base proposed, the same answer at any time scale and (inverted) for a
maximised objective. The seed corpus (tests/data/fuzz/marginal/cases.json: equal values, zero
times, extremes, a lone winner, an empty study) is replayed as regular tests."""

import itertools
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iotune.search import marginal

CORPUS = Path(__file__).resolve().parent.parent / "data" / "fuzz" / "marginal" / "cases.json"

times = st.one_of(
    st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, 1e-300, 1e300]),
    st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False),
)
config = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.sampled_from(["1", "2"]), max_size=3)
rows_st = st.lists(st.fixed_dictionaries({"settings": config, "value": times}), max_size=24)


def _check(rows, base, maximize):
    found = marginal.effects(rows, base, maximize)
    within = marginal.stratum_for(rows, base)
    assert within in ({}, dict(base))
    for e in found:
        assert e.name not in base
        assert e.n_with >= marginal.MIN_SIDE and e.n_without >= marginal.MIN_SIDE
        assert 0.0 < e.p <= 1.0 and (e.ratio >= 0.0 or math.isnan(e.ratio))
    fav = marginal.favourable(rows, base, maximize, 0.05)
    assert all(e in found and e.p <= marginal.LEVEL and e.ratio >= 1.05 for e in fav)
    assert [e.p for e in found] == sorted(e.p for e in found)
    return found


def _brute(better, worse):
    pooled, m = [*better, *worse], len(better)

    def u(a, b):
        return sum(2 if x > y else 1 if x == y else 0 for x in a for y in b)  # twice U

    obs = u(better, worse)
    picks = list(itertools.combinations(range(len(pooled)), m))
    hits = 0
    for idx in picks:
        rest = [pooled[i] for i in range(len(pooled)) if i not in idx]
        hits += u([pooled[i] for i in idx], rest) >= obs
    return hits / len(picks)


@pytest.mark.parametrize("case", json.loads(CORPUS.read_text()), ids=lambda c: c["why"][:40])
def test_seed_corpus(case):
    for maximize in (False, True):
        _check(case["rows"], case["base"], maximize)


@settings(max_examples=150, deadline=None)
@given(rows_st, config, st.booleans())
def test_random_studies_never_break_its_promises(rows, base, maximize):
    _check(rows, base, maximize)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=6),
    st.lists(st.integers(0, 6), min_size=1, max_size=6),
)
def test_rank_sum_p_is_the_permutation_p_with_ties(a, b):
    assert marginal.rank_sum_p(a, b) == pytest.approx(_brute(a, b))


@settings(max_examples=80, deadline=None)
@given(rows_st, st.sampled_from([1e-3, 2.0, 1e3]))
def test_the_same_effects_at_any_time_scale_and_inverted_when_maximised(rows, k):
    rows = [r for r in rows if 1e-200 < r["value"] < 1e200]
    one = marginal.effects(rows, {}, False)
    scaled = marginal.effects([{**r, "value": r["value"] * k} for r in rows], {}, False)
    assert [(e.name, e.value, e.p) for e in one] == [(e.name, e.value, e.p) for e in scaled]
    for x, y in zip(one, scaled, strict=True):
        assert x.ratio == pytest.approx(y.ratio, rel=1e-9)
    inverted = marginal.effects([{**r, "value": 1 / r["value"]} for r in rows], {}, True)
    assert [(e.name, e.value, e.p) for e in one] == [(e.name, e.value, e.p) for e in inverted]


def test_beyond_the_exact_limit_with_ties_the_normal_approximation_is_close():
    import random

    rng = random.Random(3)
    for _ in range(20):
        a = [rng.randint(0, 8) + rng.choice((0, 1)) for _ in range(14)]
        b = [rng.randint(0, 8) for _ in range(16)]
        pooled = sorted(a + b)
        twice = {v: (pooled.index(v) + 1) + (len(pooled) - pooled[::-1].index(v)) for v in pooled}
        exact = marginal._tied_p([twice[v] for v in pooled], len(a), sum(twice[v] for v in a))
        assert marginal.rank_sum_p(a, b) == pytest.approx(exact, abs=0.02)


def test_regressions_found_by_fuzzing_ties():
    """The first version read tied samples with the no-tie distribution: too small a p."""
    assert marginal.rank_sum_p([0], [0, 0]) == 1.0  # was 2/3
    assert marginal.rank_sum_p([0, 2], [1, 1, 2]) == pytest.approx(0.7)
    assert marginal.rank_sum_p([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]) == 1.0
