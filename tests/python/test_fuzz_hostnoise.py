"""Fuzzing what iotune.hostnoise and iotune.freedmem read from the machine: the virtio devices'
`device`/`features`, the page reporting parameters, cpufreq governors, `online`, /proc/loadavg
and the hold's own state file, as random and nasty text. Never an exception, a record that is
strict JSON (no NaN), at most one source of each kind, and a hold that always ends with the
parameter as the rules say (the value found, or the one a state file of a hold in force
remembers) and nothing left in the state directory. The seed corpus
(tests/data/fuzz/hostnoise/*.json: this VM's real files, a laptop, NaN, huge, binary, unicode
digits) is replayed as regular tests."""

import json
import os
from pathlib import Path

import pytest
from hostroot import make_root, param
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotune import freedmem, hostnoise

CORPUS = Path(__file__).resolve().parent.parent / "data" / "fuzz" / "hostnoise"
CASES = sorted(CORPUS.glob("*.json"))


def _build(root: Path, case: dict) -> Path:
    make_root(root, balloon=case["device"] is not None, features=case["features"] or "",
              driver=case["driver"], min_free_ms=case["min_free_ms"], governors=None,
              online=case["online"], loadavg=case["loadavg"])  # fmt: skip
    if case["device"] is not None:
        (root / "sys/bus/virtio/devices/virtio0/device").write_text(case["device"])
    cpu = root / "sys" / "devices" / "system" / "cpu"
    for i, g in enumerate(case["governors"] or []):
        (cpu / f"cpu{i}" / "cpufreq").mkdir(parents=True)
        (cpu / f"cpu{i}" / "cpufreq" / "scaling_governor").write_text(g)
    return root


def _state_text(state) -> str | None:
    return state if state is None or isinstance(state, str) else json.dumps(state)


def check(root: Path, case: dict) -> None:
    sources = hostnoise.detect(root, nprocs=2)
    keys = [s.key for s in sources]
    assert len(keys) == len(set(keys)) and set(keys) <= set(hostnoise.CHECKED)
    for line in hostnoise.message(sources, None, 0, False):
        assert len(line) < 2000
    json.dumps(hostnoise.record(sources, None, 0, False), allow_nan=False)
    # the hold, with whatever state file a crashed or hostile earlier holder left
    p, state_dir = param(root), root / "run" / "iotune"
    if not p.exists():
        return
    state_dir.mkdir(parents=True)
    text = _state_text(case["state"])
    if text is not None:
        freedmem.state_path(state_dir, p).write_text(text)
    before = p.read_bytes()
    try:
        remembered = json.loads(text) if text else None
    except ValueError:
        remembered = None
    in_force = (
        isinstance(remembered, dict)
        and isinstance(remembered.get("holders"), list)
        and freedmem.number(remembered.get("was")) is not None
    )
    with freedmem.hold(p, 5000, state_dir=state_dir) as rec:
        if rec["held"]:
            assert freedmem.number(p.read_text().strip()) >= 5000
    if rec["held"]:
        found = before.decode().strip()
        assert freedmem.number(found) is not None  # only a number of milliseconds is held
        want = remembered["was"] if in_force else found
        assert p.read_text().strip() == want
        assert list(state_dir.iterdir()) == []  # nothing left behind
    else:  # nothing changed, a state file found is left as it was
        assert p.read_bytes() == before
        planted = freedmem.state_path(state_dir, p)
        assert set(state_dir.iterdir()) <= {planted, planted.with_suffix(".lock")}


@pytest.mark.parametrize("path", CASES, ids=[c.stem for c in CASES])
def test_corpus(path, tmp_path):
    case = json.loads(path.read_text())
    check(_build(tmp_path / "root", case), case)


def test_the_corpus_is_there():
    assert len(CASES) >= 8


NASTY = ["0x0005", "5", "0", "300000", "1e999", "nan", "-1", "0-1", "0-", "\x00", "9" * 5000]
text = st.one_of(st.none(), st.text(max_size=60), st.sampled_from(NASTY))
states = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.fixed_dictionaries(
        {"was": st.one_of(text, st.integers()),
         "holders": st.lists(st.one_of(st.integers(-5, 0), st.integers(2**22 + 1, 2**70),
                                       st.booleans(), st.text(max_size=3)), max_size=4)}),
)  # fmt: skip


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    device=text, features=text, driver=st.sampled_from(["virtio_balloon", "virtio_blk", None]),
    min_free_ms=text, loadavg=text, online=text, state=states,
    governors=st.lists(st.text(max_size=20), max_size=3),
)  # fmt: skip
def test_random_machines(tmp_path_factory, device, features, driver, min_free_ms, loadavg,
                         online, governors, state):  # fmt: skip
    case = dict(device=device, features=features, driver=driver, min_free_ms=min_free_ms,
                loadavg=loadavg, online=online, governors=governors, state=state)  # fmt: skip
    root = tmp_path_factory.mktemp("root")
    os.rmdir(root)
    check(_build(root, case), case)
