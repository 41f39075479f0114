"""Fuzzing `iotune advise`'s inputs: Darshan logs (truncated, bit-flipped, spliced) and profiles
(values replaced, keys dropped, text damaged, traces beside them damaged). The only outcomes
allowed: advice (exit 0), or one message naming the file (exit 1) and no traceback.

Seed corpus (replayed as regular tests): tests/data/fuzz/darshan/ (two real logs shipped with
PyDarshan and damaged versions of them that once crashed or misled the reader) and
tests/data/fuzz/advise_profile/ (profiles, with a trace where the seed needs one). Each
Hypothesis test is bounded (max_examples, no deadline): the file runs in well under 60 s.
"""

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotune import cli
from iotune.advise import darshan_safe

FUZZ = Path(__file__).resolve().parent.parent / "data" / "fuzz"
LOGS = sorted((FUZZ / "darshan").glob("*.darshan"))
PROFILES = sorted((FUZZ / "advise_profile").glob("*.json"))
GOOD_LOGS = [FUZZ / "darshan" / "ior_hdf5_example.darshan", FUZZ / "darshan" / "macsio.darshan"]
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _advise(capsys, path, *extra):
    status = cli.main(["advise", str(path), "-o", "-", *extra])
    out = capsys.readouterr()
    return status, out.out, out.err


def _clean_outcome(status, out, err, name):
    """Advice, or one message naming the file: nothing else."""
    assert "Traceback" not in err and "internal error" not in err, err
    if status == 0:
        assert out.strip()
        return "advice"
    assert status == 1, (status, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and name in lines[0], err
    return "message"


# ----------------------------------------------------------------------------- seed corpus


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_darshan_seed(tmp_path, capsys, log):
    pytest.importorskip("darshan")
    copy = tmp_path / log.name
    shutil.copy(log, copy)
    _clean_outcome(*_advise(capsys, copy), str(copy))
    assert copy.read_bytes() == log.read_bytes()  # the reader never changes or removes it


@pytest.mark.parametrize("profile", PROFILES, ids=[p.name for p in PROFILES])
def test_profile_seed(tmp_path, capsys, profile):
    copy = tmp_path / profile.name
    shutil.copy(profile, copy)
    if Path(str(profile) + ".trace").is_dir():
        shutil.copytree(str(profile) + ".trace", str(copy) + ".trace")
    assert _clean_outcome(*_advise(capsys, copy, "--json"), str(copy)) == "advice"


# ----------------------------------------------------------------------------- Darshan logs


@st.composite
def damaged_log(draw):
    """A seed log truncated, bit-flipped, with bytes overwritten, or spliced with another."""
    data = bytearray(draw(st.sampled_from(GOOD_LOGS)).read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["truncate", "flip", "flip", "overwrite", "splice"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if how == "truncate":
            del data[at:]
        elif how == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif how == "overwrite":
            junk = draw(st.binary(min_size=1, max_size=16))
            data[at : at + len(junk)] = junk
        else:
            other = draw(st.sampled_from(GOOD_LOGS)).read_bytes()
            data[at:] = other[draw(st.integers(0, len(other) - 1)) :]
    return bytes(data)


@settings(max_examples=300, **SETTINGS)
@given(data=damaged_log())
def test_damaged_logs_are_checked_or_refused(tmp_path, data):
    """The check before the native reader: a size, or one DarshanLogError naming the file."""
    log = tmp_path / "x.darshan"
    log.write_bytes(data)
    try:
        assert darshan_safe.check(log) >= 0
    except darshan_safe.DarshanLogError as e:
        assert str(e).startswith(str(log)) and "\n" not in str(e)


@st.composite
def header_flip(draw):
    """A seed log with bits flipped in its header (360 bytes up to format 3.21): many such logs
    pass the check (padding, unused maps, module versions) and reach the native reader."""
    data = bytearray(draw(st.sampled_from(GOOD_LOGS)).read_bytes())
    for _ in range(draw(st.integers(1, 3))):
        data[draw(st.integers(0, 359))] ^= 1 << draw(st.integers(0, 7))
    return bytes(data)


@settings(max_examples=4, **SETTINGS)
@given(data=header_flip() | damaged_log())
def test_damaged_logs_give_advice_or_one_message(tmp_path, capsys, data):
    """The whole path, the native reader in its child included (seconds per log: few)."""
    pytest.importorskip("darshan")
    log = tmp_path / "x.darshan"
    log.write_bytes(data)
    _clean_outcome(*_advise(capsys, log), str(log))


# ----------------------------------------------------------------------------- profiles

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=6,
)  # fmt: skip


def _paths(value, prefix=()):
    """Every path to a value inside a parsed JSON document."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


@st.composite
def damaged_profile(draw):
    """(profile text, trace text or None): a seed with values replaced or dropped, or its text
    damaged; its trace (when the seed has one) likewise."""
    seed = draw(st.sampled_from(PROFILES))
    docs = [json.loads(seed.read_text())]
    trace = Path(str(seed) + ".trace") / "rank-0.json"
    docs.append(json.loads(trace.read_text()) if trace.exists() else None)
    texts = []
    for doc in docs:
        if doc is None:
            texts.append(None)
            continue
        for _ in range(draw(st.integers(0, 3))):
            path = draw(st.sampled_from(list(_paths(doc))[1:]))
            parent = doc
            for k in path[:-1]:
                parent = parent[k]
            if draw(st.booleans()) and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = draw(JSON_VALUES)
        text = json.dumps(doc)
        if draw(st.integers(0, 4)) == 0:  # the text itself: cut or a byte changed
            at = draw(st.integers(0, max(len(text) - 1, 0)))
            text = text[:at] if draw(st.booleans()) else text[:at] + "\x00" + text[at + 1 :]
        texts.append(text)
    return texts[0], texts[1]


@settings(max_examples=200, **SETTINGS)
@given(damaged=damaged_profile())
def test_damaged_profiles_give_advice_or_one_message(tmp_path, capsys, damaged):
    text, trace = damaged
    path = tmp_path / "p.json"
    path.write_text(text)
    shutil.rmtree(str(path) + ".trace", ignore_errors=True)
    if trace is not None:
        Path(str(path) + ".trace").mkdir()
        (Path(str(path) + ".trace") / "rank-0.json").write_text(trace)
    _clean_outcome(*_advise(capsys, path, "--json"), str(path))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
        | st.lists(st.text(max_size=6), min_size=1, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=_JSON)
def test_the_indented_advice_is_json_dumps_with_indent_2(value):
    """render.indented() (a group's 10^5 file names joined in C) writes what
    json.dumps(indent=2) writes, for any JSON value: nested, empty, non-ASCII, NaN."""
    import json

    from iotune.advise import render

    assert render.indented(value) == json.dumps(value, indent=2)


# ------------------------------------------------------- H5D selection counters of a log

_H5D_KEYS = ["H5D_DATASPACE_NDIMS", "H5D_DATASPACE_NPOINTS", "H5D_DATATYPE_SIZE", "H5D_WRITES",
             "H5D_READS", "H5D_POINT_SELECTS", "H5D_IRREGULAR_HYPERSLAB_SELECTS",
             "H5D_REGULAR_HYPERSLAB_SELECTS"] + [
    f"H5D_ACCESS{k}_{what}_D{d}" for k in range(1, 5) for what in ("LENGTH", "STRIDE")
    for d in range(1, 6)] + [f"H5D_ACCESS{k}_COUNT" for k in range(1, 5)]  # fmt: skip
_COUNTER = st.one_of(st.integers(-2, 8), st.integers(-(2**63), 2**63 - 1),
                     st.sampled_from([0, 1, 24, 576, 1 << 40]))  # fmt: skip
_H5D_RECORD = st.fixed_dictionaries(
    {"name": st.sampled_from(["/f0.h5:/a", "/f1.h5:/a", "/f0.h5:/b", "odd", ""]),
     "rank": st.sampled_from([-1, 0, 1])},
    optional={k: _COUNTER for k in _H5D_KEYS},
)  # fmt: skip


@settings(max_examples=300, **SETTINGS)
@given(st.lists(_H5D_RECORD, max_size=6))
def test_h5d_selection_counters_give_bounds_or_nothing(records):
    # whatever numbers a log's H5D records hold (negative, huge, ranks beyond 5, shapes that
    # contradict the points): bounds 0 <= low <= high <= 1, or no answer; never an exception
    from iotune.advise import darshan  # noqa: PLC0415

    shares = darshan.selection_shares(records)
    if shares is not None:
        low, high, n = shares
        assert 0 <= low <= high <= 1 and n > 0
    v, notes = {}, {}
    decided = darshan._pattern_from_selections(v, notes, records)
    assert decided == (v.get("access_pattern") in ("sequential", "strided"))
