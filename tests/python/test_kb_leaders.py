"""A knowledge-base entry keeps its study's other re-measured leaders (the top few a noisy
machine cannot tell apart), JSON carries them, and `--warm-start kb` tries them after every
entry's recommendation."""

import json

import pytest
from test_kb import entry, sig

from iotune import kb, space
from iotune.kb import seeds, store

LEADERS = {
    "leaders": ["a", "b", "c"],
    "settings": {
        "a": {"fill_time": "never", "alignment": "65536,65536"},
        "b": {"fill_time": "never"},
        "c": {"romio_cb_write": "disable"},
    },
    "values": {"a": [0.3, 0.2, 0.25], "b": [0.22, 0.21, 0.2], "c": [0.4, 0.5, 0.45]},
    "best": "b",
    "best_settings": {"fill_time": "never"},
}


def test_runners_up_are_the_other_leaders_best_median_first():
    got = kb.match.runners_up({"leaders": LEADERS, "direction": "minimize"})
    assert [x["settings"] for x in got] == [LEADERS["settings"]["a"], LEADERS["settings"]["c"]]
    assert got[0] == {"settings": LEADERS["settings"]["a"], "median": 0.25, "runs": 3}
    got = kb.match.runners_up({"leaders": LEADERS, "direction": "maximize"})
    assert [x["median"] for x in got] == [0.45, 0.25]
    assert kb.match.runners_up({}) == []


def test_an_entry_from_a_summary_keeps_the_runners_up_with_their_switches():
    summary = {"study": "g", "recommended": {"fill_time": "never"}, "leaders": LEADERS,
               "direction": "minimize", "final": {"improved": True, "speedup": 1.3},
               "switched_on": {"serial_files": {"value": "true", "why": "sec2"}}}  # fmt: skip
    e = kb.entry_from_summary(summary, sig(), "dir")
    assert [x["settings"] for x in e.leaders] == [
        {"fill_time": "never", "alignment": "65536,65536", "serial_files": "true"},
        {"romio_cb_write": "disable"},  # an MPI-IO hint needs no HDF5 switch
    ]


def test_leaders_survive_json_and_the_database_and_leave_the_uid_alone(tmp_path):
    e = entry()
    uid = e.uid
    e.leaders = [{"settings": {"fill_time": "never"}, "median": 0.2, "runs": 3}]
    assert e.uid == uid, "the same study filed with and without leaders is one entry"
    back = store.Entry.from_json(json.loads(json.dumps(e.to_json())))
    assert back.leaders == e.leaders
    base = store.KnowledgeBase(store.resolve_url(str(tmp_path / "kb.sqlite")))
    base.add(e)
    assert base.entries()[0].leaders == e.leaders
    base.close()
    assert store.Entry.from_json({**e.to_json(), "leaders": None}).leaders == []


@pytest.mark.parametrize("bad", [{"settings": 1}, [{"median": 1}], ["x"], [{"settings": "x"}]])
def test_bad_leaders_are_refused(bad):
    with pytest.raises(ValueError, match="leaders"):
        store.Entry.from_json({**entry().to_json(), "leaders": bad})


def test_a_warm_start_tries_the_recommendations_first_then_the_nearest_ones_runners_up():
    sp = space.load("local")
    near = entry({"fill_time": "never"}, study="near")
    near.id = 1
    near.leaders = [
        {"settings": {"fill_time": "never", "romio_cb_write": "disable"}, "median": 1, "runs": 3},
        {"settings": {"fill_time": "never"}, "median": 2, "runs": 3},  # the same as a seed
        {"settings": {"romio_ds_write": "disable"}, "median": 3, "runs": 3},  # beyond RUNNERS_UP
    ]
    far = entry({"romio_cb_write": "disable"}, study="far", signature=sig(ranks=64))
    far.id = 2
    far.leaders = [{"settings": {"romio_ds_write": "enable"}, "median": 1, "runs": 3}]
    seeded, chosen = seeds.seeded_space(sp, [far, near], sig())
    assert seeded.guesses == [*chosen, *sp.guesses]  # every seed before the rules (in_order)
    assert [g.settings for g in chosen] == [
        {"fill_time": "never"},
        {"romio_cb_write": "disable"},
        {"fill_time": "never", "romio_cb_write": "disable"},
    ]
    assert chosen[2].name.endswith("leader 2)")
    _, alone = seeds.seeded_space(sp, [near], sig())
    assert len(seeds.guesses_for(sp, kb.match.nearest([near], sig()), runners_up=0)) == 1
    assert len(alone) == 2
