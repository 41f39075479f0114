"""bench/replay/ttest_lane.py and ttest_design.py (issue 25: a t-test lane for the
verification, evaluated by replay and simulation, not part of iotune): Student's t tail is
exact, the lane's interval agrees with its test at every look, and install() leaves the
signed-rank design alone when no lane is asked for."""

import importlib.util
import math
import random
import sys

import pytest
from conftest import BENCH

from iotune import verdict as V
from iotune.search import sequential as SQ


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / "replay" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # its dataclass needs its module
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def lane():
    mod = _load("ttest_lane")
    yield mod
    SQ.design, SQ.verdict, V.measure = (mod.ORIGINAL[k] for k in ("design", "verdict", "measure"))


@pytest.mark.parametrize(
    ("t", "df", "p"),
    [(6.314, 1, 0.05), (2.920, 2, 0.05), (4.541, 3, 0.01), (2.132, 4, 0.05), (2.845, 20, 0.005)],
)
def test_t_tail_matches_the_tables(lane, t, df, p):
    assert lane.t_sf(t, df) == pytest.approx(p, rel=2e-3)
    assert lane.t_crit(df, p) == pytest.approx(t, rel=1e-3)


def test_the_vectorised_tail_is_the_same():
    np = pytest.importorskip("numpy")
    design, lane = _load("ttest_design"), _load("ttest_lane")
    ts = np.array([-3.0, -0.5, 0.0, 0.7, 2.5, 11.0])
    for df in range(1, 12):
        got = design.t_sf(ts, df)
        assert got == pytest.approx([1 - lane.t_sf(-t, df) if t < 0 else lane.t_sf(t, df)
                                     for t in ts], abs=1e-12)  # fmt: skip


def test_the_lanes_interval_agrees_with_its_test_at_every_look(lane):
    rng = random.Random(3)
    level = 0.0097
    for _ in range(300):
        d = [rng.gauss(0.3, 0.25) for _ in range(rng.randint(2, 12))]
        _, low, _ = lane.t_interval(d, level)
        assert (low > 0) == (lane.t_p(d) <= level)


def test_no_lane_leaves_the_signed_rank_design(lane):
    lane.install(None)
    assert SQ.design() == lane.ORIGINAL["design"]()
    lane.install("4:0:0.0097:0")
    d = SQ.design()
    assert (d.level, d.t_first, d.t_last, d.t_level) == (0.0, 4, 20, 0.0097)
    # a 1.6x gain at CV 15 %: the t lane shows it from its 4th pair, the signed rank from its 7th
    rng = random.Random(1)
    a = [math.exp(rng.gauss(0, 0.15)) * 1.6 for _ in range(4)]
    b = [math.exp(rng.gauss(0, 0.15)) for _ in range(4)]
    assert SQ.verdict(a, b, d).improved
    assert not lane.ORIGINAL["verdict"](a, b, lane.ORIGINAL["design"]()).significant
