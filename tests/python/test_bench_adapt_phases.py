"""bench/adapt_phases/adapt_phases.py's summary states the acceptance honestly: the share of the
tuned gain
only where there is a significant tuned gain to share, and a case significantly slower than the
baseline said as such."""

import pytest
from conftest import bench_module

REF = {"settings": {"fill_time": "never"}, "source": "study.json", "verdict": "1.8x faster"}


@pytest.fixture(scope="module")
def bench():
    return bench_module("adapt_phases")


def _rows(times: dict[str, list[float]]) -> list[dict]:
    """One phase per run; the run's I/O time per round and configuration as given."""
    rows = []
    for cfg, ts in times.items():
        for rnd, t in enumerate(ts):
            rows.append(dict(case="c", round=rnd, order=0, config=cfg, file="f.0.h5", time_s=t,
                             bytes=1, run_io_s=t, wall_s=t, rules="", reverted="",
                             prediction_s=1e-4, extraction_s=1e-4, optimisation_s=1e-4,
                             wait_s=0.0, status="ok"))  # fmt: skip
    return rows


def _verdict(text: str) -> str:
    return text.splitlines()[-1]


def test_share_when_the_tuned_gain_is_significant(bench):
    base = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0]
    rows = _rows({"base": base, "adapt": [t * 0.8 for t in base], "tuned": [t * 0.6 for t in base]})
    line = _verdict(bench.summarise(rows, {"c": REF}))
    assert "| 50% |" in line  # time saved: 0.2 of the tuned 0.4
    assert line.endswith("| no")


def test_share_undefined_without_a_significant_tuned_gain(bench):
    base = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0]
    tuned = [t * f for t, f in zip(base, [0.6, 1.3, 0.7, 1.2, 0.8, 1.1], strict=True)]
    rows = _rows({"base": base, "adapt": [t * 0.8 for t in base], "tuned": tuned})
    assert "undefined (tuned not significantly faster" in _verdict(
        bench.summarise(rows, {"c": REF})
    )
    nothing = {**REF, "settings": {}}
    rows = _rows({"base": base, "adapt": [t * 0.8 for t in base]})
    assert "undefined (the study found no significant gain)" in _verdict(
        bench.summarise(rows, {"c": nothing})
    )


def test_a_significantly_slower_adaptive_case_is_flagged(bench):
    base = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0]
    rows = _rows({"base": base, "adapt": [t * 1.3 for t in base]})
    line = _verdict(bench.summarise(rows, {}))
    assert "0.77x p=0.031" in line and line.endswith("| YES")
    mixed = [t * f for t, f in zip(base, [1.3, 0.9] * 3, strict=True)]
    rows = _rows({"base": base, "adapt": mixed})
    assert _verdict(bench.summarise(rows, {})).endswith("| no")
