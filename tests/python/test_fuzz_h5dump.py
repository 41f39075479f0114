"""parse_h5dump reads `h5dump -p -H` of any file advise finds: real outputs (seed corpus in
tests/data/fuzz/h5dump/) and mutations of them never raise and give Layouts only."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotune import storage_layout

CORPUS = sorted((Path(__file__).resolve().parents[1] / "data" / "fuzz" / "h5dump").glob("*.txt"))
LINES = [ln for p in CORPUS for ln in p.read_text().splitlines()]


def _check(text: str) -> dict:
    out = storage_layout.parse_h5dump(text)
    assert isinstance(out, dict)
    for name, lay in out.items():
        assert name.startswith("/") and isinstance(lay, storage_layout.Layout)
        assert lay.kind in ("contiguous", "chunked", "compact")
        assert lay.type_size is None or lay.type_size > 0
    return out


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_seed_corpus(path):
    out = _check(path.read_text())
    if path.name.startswith("checkpoint-"):
        assert out["/fields/field0"].kind == "chunked"
        assert out["/fields/field0"].filters == ("deflate" in path.name)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINES), max_size=80))
def test_shuffled_lines_of_real_outputs(lines):
    _check("\n".join(lines))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('{}()"/ \nDATSEGROUPCHNKFILL_0123456789,')),
               max_size=400))  # fmt: skip
def test_brace_soup(text):
    _check(text)
