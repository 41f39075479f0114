"""Fuzzing the cost rule (src/iotune/data/costs.tsv): random settings of every costed parameter,
at every scale up to the registry's bounds, with random budgets (tiny, huge, unknown, exactly at
a share), through iotune.costs and the runtime's bounds.c (`iotune-parse --costs`): the same
cost, the same verdict, the same words, never a crash. The seed corpus (the shared vectors
tests/vectors/costs/cases.json) is replayed by test_costs.py.
"""

import subprocess

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotune import costs, params

COSTED = sorted(n for n in costs.table() if not params.get(n).is_mca)


def _number(p: params.Param) -> st.SearchStrategy[int]:
    low = int(p.min) if p.min is not None else 0
    high = int(p.max) if p.max is not None else 2**62
    edges = st.sampled_from(sorted({low, high, min(high, 1 << 20), min(high, (1 << 32) - 1)}))
    return st.one_of(edges, st.integers(low, high))


@st.composite
def case(draw):
    name = draw(st.sampled_from(COSTED))
    p = params.get(name)
    if p.type == "pair":
        value = f"{draw(_number(p))},{draw(_number(p).filter(lambda x: x >= 1))}"
    elif p.type == "dims":
        value = ",".join(str(draw(_number(p))) for _ in range(draw(st.integers(1, 8))))
    else:
        value = str(draw(_number(p)))
    elem = draw(st.sampled_from([1, 2, 4, 8, 16, 1000]))
    budget = draw(st.one_of(st.just(-1), st.integers(0, 2**62), st.sampled_from([0, 1, 2**31])))
    disk = draw(st.one_of(st.just(-1), st.integers(0, 2**62)))
    if draw(st.booleans()):  # exactly at the share: kept; one byte less: withdrawn
        c = costs.cost_of(name)
        at = int(costs.cost(name, params.normalise(name, value), elem) * c.share)
        if c.resource == "memory":
            budget = at - draw(st.integers(0, 1))
        else:
            disk = at - draw(st.integers(0, 1))
    return name, value, elem, budget, disk


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(case(), min_size=1, max_size=40))
def test_the_runtime_and_python_judge_every_setting_alike(build_dir, cases):
    lines = "".join(f"{n}\t{v}\t{e}\t{m}\t{d}\n" for n, v, e, m, d in cases)
    out = subprocess.run([build_dir / "runtime" / "iotune-parse", "--costs"], input=lines,
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert out.returncode == 0, out.stderr
    got = [ln.split("\t") for ln in out.stdout.splitlines()]
    assert len(got) == len(cases)
    for (name, value, elem, memory, disk), answer in zip(cases, got, strict=True):
        cost, withdrawn, message = answer
        text = params.normalise(name, value)
        mine = costs.cost(name, text, elem)
        assert float(cost) == mine, (name, value, elem)
        said = costs.exceeds(name, text, mine, costs.Budget(memory, "vectors", disk, "vectors"))
        assert (withdrawn == "1") == (said is not None), (name, value, memory, disk)
        assert message == (said or "")
