"""Fuzzing the search-space reader (`iotune tune --space FILE`): whatever the file holds, the
outcome is a Space or one SpaceError naming the file; never another exception, never a hang.
The seed corpus (tests/data/fuzz/space) holds real spaces and the nasty ones found so far."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotune import space

CORPUS = Path(__file__).resolve().parent.parent / "data" / "fuzz" / "space"
SEEDS = sorted(CORPUS.glob("*.toml"))


def _outcome(path: Path) -> str:
    try:
        space.load(str(path))
    except space.SpaceError as e:
        assert str(path) in str(e), e
        assert "\n" not in str(e).strip(), e
        return "refused"
    return "ok"


@pytest.mark.parametrize("seed", SEEDS, ids=[p.stem for p in SEEDS])
def test_seed_corpus(seed):
    outcome = _outcome(seed)
    assert outcome == ("ok" if seed.stem.startswith("real_") else "refused")


# TOML-shaped values: the reader must survive a value of any kind anywhere
scalars = st.one_of(
    st.text(max_size=12), st.integers(), st.floats(allow_nan=False), st.booleans(),
    st.sampled_from(["1M", "4M", "16M", "1E", "automatic", "disable", "-1", "0", ""]),
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
names = st.sampled_from(["cb_buffer_size", "romio_cb_write", "chunk_cache_bytes", "bogus", ""])
keys = st.sampled_from(["values", "ladder", "default", "name", "tie", "to", "forbid", "settings"])


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{_toml_value(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    params=st.dictionaries(names, st.dictionaries(keys, values, max_size=3), max_size=3),
    constraints=st.lists(st.dictionaries(keys, values, max_size=2), max_size=2),
    guesses=st.lists(st.dictionaries(keys, values, max_size=2), max_size=2),
    top=st.dictionaries(
        st.sampled_from(["params", "constraints", "guesses", "name"]), values, max_size=2
    ),
)
def test_structured_spaces_never_crash(tmp_path, params, constraints, guesses, top):
    lines = [f"{_toml_value(k)} = {_toml_value(v)}" for k, v in top.items()]
    text = "\n".join(lines) + "\n"
    if "params" not in top:
        for name, table in params.items():
            text += f"[params.{_toml_value(name)}]\n"
            text += "".join(f"{k} = {_toml_value(v)}\n" for k, v in table.items())
    if "constraints" not in top:
        for c in constraints:
            text += "[[constraints]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in c.items())
    if "guesses" not in top:
        for g in guesses:
            text += "[[guesses]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in g.items())
    path = tmp_path / "space.toml"
    path.write_text(text)
    _outcome(path)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=400))
def test_any_bytes_never_crash(tmp_path, data):
    path = tmp_path / "space.toml"
    path.write_bytes(data)
    _outcome(path)


def test_a_fifo_is_not_read(tmp_path):
    fifo = tmp_path / "space.toml"
    os.mkfifo(fifo)
    assert _outcome(fifo) == "refused"
