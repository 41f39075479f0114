"""Fuzzing the knowledge-base export reader (`iotune kb import`: iotune.inputs.load_json and
kb.store.import_json with kb.validate): the checked-in corpus tests/data/fuzz/kb/ replayed
(ok_*: imported; bad_*: one message naming the file, nothing stored), then Hypothesis mutations
of the ok_ seeds (tests/python/fuzzing.py). The only outcomes allowed: entries that are valid
through and through (their settings make a control file, their numbers are finite, a
suggestion can be made from them), or one InputError; never another exception."""

import contextlib
import io
import math
import tempfile
from pathlib import Path

import pytest
from fuzzing import EXAMPLES, encoded, load_seed, mutated, seeds
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iotune import controlfile, kb
from iotune.cli import main
from iotune.inputs import InputError, load_json
from iotune.kb import store

SEEDS = seeds("kb")
GOOD = [load_seed(p) for p in seeds("kb", "ok_")]


def _import(path: Path) -> list[store.Entry]:
    return store.import_json(load_json(path, "knowledge-base export"), str(path))


def _usable(entries):
    for e in entries:
        controlfile.render(e.settings)
        assert e.speedup is None or math.isfinite(e.speedup)
        s = kb.suggest(entries, e.signature)
        assert isinstance(s.settings, dict)


def test_the_corpus_is_there():
    assert len(SEEDS) >= 8 and len(GOOD) >= 2


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name)
def test_corpus_replay_through_the_cli(path, tmp_path):
    db = tmp_path / "kb.sqlite"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["kb", "--kb", str(db), "import", str(path)])
        listed = main(["kb", "--kb", str(db), "list"])
    base = kb.KnowledgeBase(kb.resolve_url(str(db)))
    stored = base.entries()
    base.close()
    if path.name.startswith("ok_"):
        assert status == 0 and listed == 0
        # one entry per study (an entry without a study uid is one of its own): the newest
        newest: dict[str, store.Entry] = {}
        for e in _import(path):
            key = e.study_uid or e.uid
            if key not in newest or e.created >= newest[key].created:
                newest[key] = e
        assert sorted(e.uid for e in stored) == sorted(e.uid for e in newest.values())
    else:
        lines = err.getvalue().splitlines()
        assert status == 1 and str(path) in lines[0] and "nothing imported" in lines[0]
        assert stored == []  # the store is never poisoned, not even by the file's good entries


@st.composite
def exports(draw):
    return draw(encoded(draw(mutated(draw(st.sampled_from(GOOD)), max_mutations=3))))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=exports())
def test_mutated_exports_are_imported_whole_or_refused(data):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "export.json"
        path.write_bytes(data)
        try:
            entries = _import(path)
        except InputError as e:
            assert str(e).startswith(str(path)) and "\n" not in str(e)
            event("refused")
            return
    event("imported")
    _usable(entries)
