"""bench/replay/replay.py replays read landscapes right: read-side settings stay in the key of a
landscape that varied them, and a replayed run reports the bytes the real one read."""

import json
import random
from pathlib import Path

import pytest
from conftest import bench_module


@pytest.fixture(scope="module")
def replay():
    return bench_module("replay")


def _row(settings, value, **cols):
    key = ";".join(f"{k}={v}" for k, v in sorted(settings.items())) or "(defaults)"
    return {"kernel": "k", "config": key, "settings": json.dumps(settings), "status": "ok",
            "value_s": str(value), "wall_s": str(value + 0.1), **cols}  # fmt: skip


def test_a_read_landscape_keeps_its_read_dimensions_and_bytes(replay):
    rows = [
        _row({}, 1.0, bytes_read="1000", bytes_written="0"),
        _row({"romio_cb_read": "disable"}, 0.5, bytes_read="1000", bytes_written="0"),
    ]
    land = replay.Landscape(rows)
    assert land.reads
    assert land.key({"romio_cb_read": "disable"}) == "romio_cb_read=disable"
    assert land.truth["romio_cb_read=disable"] == 0.5
    (_, _, metrics), *_ = land.samples["(defaults)"]
    assert metrics == {"bytes_read": 1000, "bytes_written": 0}
    with pytest.raises(replay.CannotReplay):  # never varied, and it reads: cannot stand for it
        land.key({"romio_ds_read": "disable"})


def test_a_write_landscape_ignores_read_settings_and_reads_nothing(replay):
    rows = [_row({}, 1.0, bytes="500"), _row({"fill_time": "never"}, 0.5, bytes="500")]
    land = replay.Landscape(rows)
    assert not land.reads
    assert land.key({"fill_time": "never", "romio_cb_read": "disable"}) == "fill_time=never"
    value, wall, metrics = random.Random(0).choice(land.samples["fill_time=never"])
    assert metrics == {"bytes_read": 0, "bytes_written": 500}


def test_round_normalised_cancels_what_a_round_shares(replay):
    rows = [_row({}, 1.0, round="0"), _row({"fill_time": "never"}, 0.5, round="0"),
            _row({}, 4.0, round="1"), _row({"fill_time": "never"}, 2.0, round="1"),
            {**_row({}, 0.0, round="1"), "status": "failed", "value_s": ""}]  # fmt: skip
    norm = replay.round_normalised(rows)
    land = replay.Landscape(norm)
    # raw medians mix the slow round in (2.5 vs 1.25); per round the ratio is the same 2x
    assert land.truth["(defaults)"] == pytest.approx(4 / 3)
    assert land.truth["fill_time=never"] == pytest.approx(2 / 3)
    assert norm[-1]["status"] == "failed" and rows[0]["value_s"] == "1.0"


def test_mann_whitney_and_the_top_group(replay):
    fast, slow = [1.0, 1.1, 1.2, 1.3, 1.05], [2.0, 2.1, 2.2, 2.3, 2.05]
    assert replay.mann_whitney_less(fast, slow) < 0.01
    assert replay.mann_whitney_less(slow, fast) > 0.99
    assert replay.mann_whitney_less(fast, fast) > 0.4
    rows = [_row({}, v) for v in slow]
    rows += [_row({"fill_time": "never"}, v) for v in fast]
    rows += [_row({"fill_time": "alloc"}, v + 0.02) for v in fast]
    land = replay.Landscape(rows)
    j = land.judge("x", top=True)
    assert j.top == {"fill_time=never", "fill_time=alloc"}
    assert j.reached("fill_time=alloc", replay.TOP) and not j.reached("(defaults)", replay.TOP)
    assert j.reached("fill_time=never", 0.95) and not j.reached("(defaults)", 0.9)
    assert j.targets() == (*replay.TARGETS, replay.TOP)
    assert land.judge().targets() == replay.TARGETS


def test_a_replay_is_judged_by_every_judge(replay, tmp_path):
    from iotune import space

    toml = tmp_path / "tiny.toml"
    toml.write_text('name = "tiny"\n[params.fill_time]\nvalues = ["ifset", "never"]\n'
                    'default = "ifset"\n[params.romio_cb_write]\n'
                    'values = ["automatic", "disable"]\ndefault = "automatic"\n')  # fmt: skip
    sp = space.load(toml)
    rows = []
    both = {"fill_time": "never", "romio_cb_write": "disable"}
    for settings, scale in (({}, 1), ({"fill_time": "never"}, 0.5),
                            ({"romio_cb_write": "disable"}, 0.9), (both, 0.8)):  # fmt: skip
        rows += [_row(settings, v * scale, round=str(i), bytes="100")
                 for i, v in enumerate((1.0, 1.1, 0.9))]  # fmt: skip
    land = replay.Landscape(rows)
    # a judge that thinks the opposite: fill_time=never is the worst
    truth = dict(land.truth)
    truth["fill_time=never"] = 10.0
    other = replay.Judge("other", truth, min(truth.values()))
    r = replay.replay(land, sp, "local", 0, [land.judge(), other])
    assert r["final"] == r["judges"]["replayed"]["final"]
    assert set(r["judges"]) == {"replayed", "other"}
    assert r["judges"]["replayed"]["final"]["reach"]["0.95"] is not None
    # at trial 30 the search recommends fill_time=never, which this judge scores at 10 s
    assert r["judges"]["other"]["final"]["quality_at_check"] == pytest.approx(other.best / 10)
    assert r["judges"]["replayed"]["final"]["reach"] != r["judges"]["other"]["final"]["reach"]


def _tiny(replay, tmp_path):
    from iotune import space

    toml = tmp_path / "tiny.toml"
    toml.write_text('name = "tiny"\n[params.fill_time]\nvalues = ["ifset", "never"]\n'
                    'default = "ifset"\n[params.romio_cb_write]\n'
                    'values = ["automatic", "disable"]\ndefault = "automatic"\n'
                    '[[guesses]]\nname = "no fill"\n'
                    'settings = { fill_time = "never" }\n')  # fmt: skip
    rows = []
    both = {"fill_time": "never", "romio_cb_write": "disable"}
    for settings, scale in (({}, 1), ({"fill_time": "never"}, 0.5),
                            ({"romio_cb_write": "disable"}, 0.9), (both, 0.55)):  # fmt: skip
        rows += [_row(settings, v * scale, round=str(i), bytes="100")
                 for i, v in enumerate((1.0, 1.02, 0.98, 1.01, 0.99))]  # fmt: skip
    return replay.Landscape(rows), space.load(toml)


def test_a_whole_study_is_replayed_and_every_run_counted(replay, tmp_path):
    land, sp = _tiny(replay, tmp_path)
    st = replay.replay_study(land, sp, "local", 0)
    assert st["recommended"] == "fill_time=never" and st["correct"]
    assert st["reach"]["0.95"] == 2  # the defaults, then the rule-based guess
    runs = st["runs"]
    # the draws the replay made are exactly the runs the study's summary counts, by phase
    assert runs["counted"] == runs["total"] == runs["search"] + runs["re-measure"] + runs[
        "verification"]  # fmt: skip
    assert runs["search"] == runs["search_replayed"] == st["search_trials"] < 30
    assert not st["stopped"].startswith("its budget")
    warm = replay.replay_study(land, sp, "local", 0, warmup=1)
    assert warm["runs"]["warm-up"] == warm["runs"]["re-measure"] + warm["runs"]["verification"]


def test_a_flat_landscape_is_one_configuration_s_runs_everywhere(replay, tmp_path):
    land, sp = _tiny(replay, tmp_path)
    flat = replay.flat_landscape(land)
    assert set(flat.samples) == set(land.samples)
    assert all(flat.samples[k] == land.samples["(defaults)"] for k in flat.samples)
    assert len(set(flat.truth.values())) == 1 and flat.best == flat.default
    st = replay.replay_study(flat, sp, "local", 1)
    assert st["correct"]  # everything is within 95 % of the best on a flat landscape
    summary = replay.summarise_studies([st], 30)
    assert summary["count_mismatches"] == 0 and summary["studies"] == 1
    assert replay.median_ci([1, 2, 3])[0] == 2
    assert replay.parse_landscape("a.csv,b.csv@k") == ([Path("a.csv"), Path("b.csv")], "k")


def test_noise_of_says_how_well_the_repetitions_tell_the_best(replay, tmp_path):
    land, _ = _tiny(replay, tmp_path)
    n = replay.noise_of(land, resamples=100)
    # fill_time=never (0.5 s) is within 95 % of the best in every resample, nothing else is
    assert n["p"]["fill_time=never"] == 1.0 and n["p"]["(defaults)"] == 0.0
    assert n["best_stays_best"] == 1.0 and n["set_within_stays_same"] == 1.0
    assert n["likely_within"] == 1 and replay.noise_of(land) is n  # cached
    # two configurations whose runs overlap: each is within 95 % in some resamples only
    rows = [_row({}, v) for v in (1.0, 1.3, 0.8, 1.1, 0.9)]
    rows += [_row({"fill_time": "never"}, v) for v in (1.05, 0.75, 1.25, 0.95, 1.0)]
    close = replay.noise_of(replay.Landscape(rows), resamples=200)
    assert 0.1 < close["p"]["(defaults)"] < 1.0 and 0.1 < close["p"]["fill_time=never"] < 1.0
    assert close["best_stays_best"] < 1.0


def test_noisier_keeps_the_medians_and_scales_the_log_deviations(replay, tmp_path):
    land, _ = _tiny(replay, tmp_path)
    loud = replay.noisier(land, 2.0)
    assert loud.truth == land.truth and loud.best == land.best
    for key, runs in land.samples.items():
        med = land.truth[key]
        for (v, w, _), (v2, w2, _) in zip(runs, loud.samples[key], strict=True):
            assert v2 == pytest.approx(med * (v / med) ** 2) and w2 == w
    flat = replay.flat_landscape(land)
    assert set(replay.noise_of(flat)["p"].values()) == {1.0}  # exact by construction


def test_a_replayed_study_is_judged_with_the_noise_counted(replay, tmp_path):
    land, sp = _tiny(replay, tmp_path)
    st = replay.replay_study(land, sp, "local", 0)
    assert st["p_within_95"] == 1.0 and st["in_top"]
    assert st["reach"]["likely"] == st["reach"]["top"] == 2
    summary = replay.summarise_studies([st], 30)
    assert summary["correct_expected"] == 1.0 and summary["trials_likely"][0] == 2


def test_a_setting_the_components_never_reads_stands_for_its_absence(replay):
    """Under ROMIO (io=romio321) OMPIO's parameters are never read: a landscape that measured
    io=romio321 alone stands for io=romio321 with any of them (the OMPIO landscape)."""
    rows = [_row({}, 1.0, bytes="500"), _row({"io": "romio321"}, 0.5, bytes="500"),
            _row({"fcoll": "two_phase"}, 0.7, bytes="500")]  # fmt: skip
    land = replay.Landscape(rows)
    assert land.key({"io": "romio321", "fcoll": "vulcan"}) == "io=romio321"
    assert land.key({"fcoll": "two_phase"}) == "fcoll=two_phase"
    with pytest.raises(replay.CannotReplay):  # ROMIO reads this hint: never measured
        land.key({"io": "romio321", "romio_cb_write": "disable"})
