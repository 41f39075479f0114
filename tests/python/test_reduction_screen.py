"""The reduction's screen (reduction._screen, marginal.carrying): the settings of the winner that
the search's own trials do not single out are removed together, after one interleaved test of
the winner against the others alone, instead of one test per setting (issue 25: runs; a tpe
study's reduction cost 60-140 of its ~150 runs in the replay). The screen only proposes: when
the winner is shown better than what it keeps, each setting is tested alone as before."""

import random
from pathlib import Path

import pytest

from iotune import reduction, space, tune_config
from iotune.search import marginal
from iotune.trial import Outcome

HERE = Path(__file__).resolve().parent
CB, CC, CW = "cb_buffer_size", "chunk_cache_bytes", "romio_cb_write"
MAIN = {CB: "1048576"}
WINNER = {**MAIN, CC: "8388608", CW: "disable"}


def _cfg(tmp_path, **kw):
    kw.setdefault("strategy", "tpe")
    kw.setdefault("verify_pairs", 10)
    sp = space.load(HERE / "fake_space.toml")
    return tune_config.TuneConfig(app=["x"], out=tmp_path, space=sp, seed=3, **kw)


def _rows(rule, n=24, seed=5):
    """Search trials: every combination of the winner's settings on and off, in turn, each
    measured once with 5 % noise (what a search leaves: the fast ones hold MAIN)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        s = {k: v for j, (k, v) in enumerate(WINNER.items()) if (i >> j) & 1}
        rows.append({"settings": s, "value": rule(s) * rng.lognormvariate(0, 0.05)})
    return rows


def _timed(rule, counter):
    rng = random.Random(4)

    def evaluate(settings, cap):
        counter.append(dict(settings))
        t = rule(settings) * rng.lognormvariate(0, 0.05)
        return Outcome("ok", t, "kernel", t)

    return evaluate


def _main_only(s):
    return 0.5 if s.get(CB) == "1048576" else 1.0


def _reduce(tmp_path, rule, rows, screen=True, monkeypatch=None):
    if monkeypatch is not None:
        monkeypatch.setattr(reduction, "SCREEN", screen)
    runs: list = []
    got = reduction.minimal(_cfg(tmp_path), dict(WINNER), _timed(rule, runs), False,
                            random.Random(0), lambda m: None, rows)  # fmt: skip
    return got, runs


def test_carrying_singles_out_the_setting_the_trials_favour():
    rows = _rows(_main_only)
    assert marginal.carrying(rows, WINNER, False, 0.05) == MAIN
    # nothing to single out: every trial as fast
    assert marginal.carrying(_rows(lambda s: 1.0), WINNER, False, 0.05) == {}
    # a value the winner does not hold is not the winner's
    assert marginal.carrying(rows, {**WINNER, CB: "4194304"}, False, 0.05) == {}


def test_the_others_are_removed_together_in_fewer_runs(tmp_path, monkeypatch):
    rows = _rows(_main_only)
    got, runs = _reduce(tmp_path, _main_only, rows, True, monkeypatch)
    assert got["settings"] == MAIN
    assert set(got["removed"]) == {CC, CW}
    assert "removing it with the others cost" in got["removed"][CC]
    assert got["screen"]["removed"] and got["screen"]["kept"] == [CB]
    # only the winner and MAIN were run: one test, two runs a pair
    assert {tuple(sorted(r.items())) for r in runs} == {
        tuple(sorted(WINNER.items())),
        tuple(sorted(MAIN.items())),
    }
    before, runs_before = _reduce(tmp_path, _main_only, rows, False, monkeypatch)
    assert before["settings"] == MAIN and "screen" not in before
    assert len(runs) < len(runs_before)
    assert got["runs"] == len(runs)


def test_a_second_gain_the_screen_left_out_is_found_by_the_settings_tested_alone(
    tmp_path, monkeypatch
):
    """The trials favour CB only (CW's gain shows only beside CB, in few trials), but CW
    carries 1.5x of its own: the winner is shown better than CB alone, and the reduction
    falls back to one setting at a time, which keeps CW."""

    def rule(s):
        t = _main_only(s)
        return t / 1.5 if s.get(CW) == "disable" and s.get(CB) else t

    rows = _rows(_main_only)  # a search that never measured CW's gain
    got, _ = _reduce(tmp_path, rule, rows, True, monkeypatch)
    assert got["screen"] == {**got["screen"], "kept": [CB], "removed": False}
    assert got["screen"]["cost"] > 1.3
    assert got["settings"] == {CB: "1048576", CW: "disable"}
    assert set(got["removed"]) == {CC}
    assert "with the others" not in got["removed"][CC]


@pytest.mark.parametrize("rows", [None, []])
def test_no_trials_no_screen(tmp_path, monkeypatch, rows):
    got, _ = _reduce(tmp_path, _main_only, rows, True, monkeypatch)
    assert got["settings"] == MAIN and "screen" not in got


def test_every_setting_gaining_is_kept(tmp_path, monkeypatch):
    """Every setting gains 1.5x: the screen keeps the clearest alone (SCREEN_KEEP 1), the
    winner is shown better than it, and the settings tested one at a time all stay."""

    def rule(s):
        return 1.0 / (1.5 ** len(s))

    got, _ = _reduce(tmp_path, rule, _rows(rule), True, monkeypatch)
    assert got["screen"]["removed"] is False and len(got["screen"]["kept"]) == 1
    assert got["settings"] == WINNER


def test_all_singled_out_screens_nothing(tmp_path, monkeypatch):
    """Without the cap on what the screen keeps, every setting stands out: nothing to test."""

    def rule(s):
        return 1.0 / (1.5 ** len(s))

    monkeypatch.setattr(marginal, "SCREEN_KEEP", None)
    assert marginal.carrying(_rows(rule), WINNER, False, 0.05) == WINNER
    got, _ = _reduce(tmp_path, rule, _rows(rule), True, monkeypatch)
    assert "screen" not in got
    assert got["settings"] == WINNER


def test_the_screen_keeps_the_clearest(monkeypatch):
    """Two settings stand out: the one with the clearer effect is kept (SCREEN_KEEP 1)."""

    def rule(s):
        t = 0.4 if s.get(CB) else 1.0
        return t * (0.85 if s.get(CW) else 1.0)

    rows = _rows(rule, n=48)
    monkeypatch.setattr(marginal, "SCREEN_KEEP", None)
    assert marginal.carrying(rows, WINNER, False, 0.05) == {CB: "1048576", CW: "disable"}
    monkeypatch.setattr(marginal, "SCREEN_KEEP", 1)
    assert marginal.carrying(rows, WINNER, False, 0.05) == MAIN


def _space(tmp_path, name, params, tie=None):
    """A grid space of two-valued parameters {name: (non-default, default)}, tie: (name, to)."""
    text = f'name = "{name}"\n' + "".join(
        f'[params.{p}]\nvalues = ["{on}", "{off}"]\ndefault = "{off}"\n'
        for p, (on, off) in params.items()
    )
    if tie:
        text += f'[[constraints]]\ntie = "{tie[0]}"\nto = "{tie[1]}"\n'
    f = tmp_path / f"{name}.toml"
    f.write_text(text)
    return space.load(f)


def test_a_tied_setting_stays_with_the_one_it_is_tied_to(tmp_path, monkeypatch):
    """cb_buffer_size follows striping_unit (sc13-lustre's tie): the screen keeps both."""
    sp = _space(tmp_path, "tied", {"striping_unit": ("1M", "4M"), CW: ("disable", "automatic")},
                ("cb_buffer_size", "striping_unit"))  # fmt: skip
    unit = {"striping_unit": "1048576", "cb_buffer_size": "1048576"}
    winner = {**unit, CW: "disable"}

    def rule(s):
        return 0.5 if s.get("striping_unit") else 1.0

    rng = random.Random(2)
    rows = []
    for i in range(16):
        s = {**(unit if i % 2 else {}), **({CW: "disable"} if i % 4 > 1 else {})}
        rows.append({"settings": s, "value": rule(s) * rng.lognormvariate(0, 0.05)})
    runs: list = []
    cfg = tune_config.TuneConfig(app=["x"], out=tmp_path, space=sp, seed=3, strategy="tpe",
                                 verify_pairs=10)  # fmt: skip
    got = reduction.minimal(cfg, winner, _timed(rule, runs), False, random.Random(0),
                            lambda m: None, rows)  # fmt: skip
    assert sorted(got["screen"]["kept"]) == ["cb_buffer_size", "striping_unit"]
    assert got["settings"] == unit and set(got["removed"]) == {CW}


def _hidden(a=1.12, h=1.06):
    """MAIN 2x, CC a second gain of `a`, CW a loss of `h`: together CC and CW nearly cancel."""

    def rule(s):
        t = _main_only(s)
        if s.get(CC):
            t /= a
        if s.get(CW):
            t *= h
        return t

    return rule


def test_a_second_gain_hidden_by_a_loss_is_tested_alone(tmp_path, monkeypatch):
    """Removing CC and CW together costs 1.12 / 1.06 = 1.06x, too little to show against the
    5 % bar: the others-together test alone removes CC with CW. The screen also tests the next
    clearest setting (CC, favoured by the trials) alone, which keeps it."""
    rule = _hidden()
    rows = _rows(rule, n=48)
    assert marginal.runner_up(rows, WINNER, MAIN, False, 0.05) == (CC, "8388608")
    got, runs = _reduce(tmp_path, rule, rows, True, monkeypatch)
    assert got["screen"]["removed"] and got["screen"]["second"]["kept"]
    assert got["settings"] == {**MAIN, CC: "8388608"} and set(got["removed"]) == {CW}
    monkeypatch.setattr(reduction, "SCREEN_SECOND", False)
    alone, _ = _reduce(tmp_path, rule, rows, True, monkeypatch)
    assert alone["settings"] == MAIN  # what the second test is for


def test_the_screen_for_a_rate(tmp_path, monkeypatch):
    """A maximised objective (bandwidth): larger is better, the same decisions."""

    def rate(s):
        return 1.0 / _main_only(s)

    runs: list = []
    rows = _rows(rate)
    assert marginal.carrying(rows, WINNER, True, 0.05) == MAIN
    assert marginal.carrying(rows, WINNER, False, 0.05) == {}  # read as times: none stands out
    got = reduction.minimal(_cfg(tmp_path), dict(WINNER), _timed(rate, runs), True,
                            random.Random(0), lambda m: None, rows)  # fmt: skip
    assert got["settings"] == MAIN and got["screen"]["removed"]


def test_a_kept_setting_that_never_runs_screens_nothing(tmp_path, monkeypatch):
    """Every run of MAIN alone fails (e.g. the space's rules or the application refuse it):
    nothing was measured, so nothing is removed by the screen."""
    runs: list = []

    def evaluate(settings, cap):
        runs.append(dict(settings))
        if settings == MAIN:
            return Outcome("failed", wall_s=0.1)
        t = _main_only(settings)
        return Outcome("ok", t, "kernel", t)

    got = reduction.minimal(_cfg(tmp_path), dict(WINNER), evaluate, False, random.Random(0),
                            lambda m: None, _rows(_main_only))  # fmt: skip
    assert "screen" not in got
    assert not any("with the others" in why for why in got["removed"].values())


def test_a_rejected_reduction_keeps_the_screens_record(tmp_path):
    """The reduced set lost to the defaults: the whole winner is kept, and summary.json still
    says what the screen measured (its runs were spent)."""
    cfg = _cfg(tmp_path)
    reduced = {"settings": MAIN, "removed": {CC: "x"}, "runs": 10, "screen": {"kept": [CB]}}

    def evaluate(settings, cap):
        return Outcome("ok", 1.0, "kernel", 1.0)  # MAIN no faster than the defaults

    got = reduction.checked_reduction(cfg, dict(WINNER), reduced, evaluate, False,
                                      random.Random(0), lambda m: None)  # fmt: skip
    assert got["settings"] == WINNER and got["rejected"] and got["screen"] == {"kept": [CB]}


BIG_WINNER = {CB: "1048576", CC: "8388608", CW: "disable", "romio_ds_write": "disable",
              "sieve_buf_size": "1048576"}  # fmt: skip


def test_two_gains_found_by_the_screen_in_two_tests(tmp_path, monkeypatch):
    """CB 2x and CC 1.4x, three settings that do nothing: the winner beats CB alone, CC's own
    removal is shown to cost, so the screen tries CB and CC together against the winner, which
    removes the other three at once: fewer runs than the one-at-a-time rounds, the same set."""
    params = {CB: ("1M", "16M"), CC: ("8M", "1M"), CW: ("disable", "automatic"),
              "romio_ds_write": ("disable", "automatic"),
              "sieve_buf_size": ("1M", "64K")}  # fmt: skip
    sp = _space(tmp_path, "five", params)

    def rule(s):
        return (0.5 if s.get(CB) else 1.0) / (1.4 if s.get(CC) else 1.0)

    rng = random.Random(7)
    rows = []
    for i in range(64):
        s = {k: v for j, (k, v) in enumerate(BIG_WINNER.items()) if (i >> (j % 5)) & 1}
        s = {k: v for k, v in s.items() if k in (CB, CC) or rng.random() < 0.5}
        rows.append({"settings": s, "value": rule(s) * rng.lognormvariate(0, 0.05)})
    assert marginal.carrying(rows, BIG_WINNER, False, 0.05) == MAIN
    assert marginal.runner_up(rows, BIG_WINNER, MAIN, False, 0.05) == (CC, "8388608")
    cfg = tune_config.TuneConfig(app=["x"], out=tmp_path, space=sp, seed=3, strategy="tpe",
                                 verify_pairs=10)  # fmt: skip
    counts = {}
    for screen in (True, False):
        monkeypatch.setattr(reduction, "SCREEN", screen)
        runs: list = []
        got = reduction.minimal(cfg, dict(BIG_WINNER), _timed(rule, runs), False, random.Random(0),
                                lambda m: None, rows)  # fmt: skip
        assert got["settings"] == {CB: "1048576", CC: "8388608"}
        counts[screen] = len(runs)
        if screen:
            sc = got["screen"]
            assert not (sc["cost"] < 1.3) and sc["second"]["kept"] and sc["then"]["removed"]
    assert counts[True] < counts[False]


def test_the_next_setting_is_read_beside_the_kept_one():
    """CC gains 1.3x only beside CB and costs 10 % without it (as ROMIO's hints gain only
    beside io=romio321 under Open MPI): over every trial it looks like nothing, among the
    trials that hold CB it stands out, so the screen tests it alone."""

    def rule(s):
        t = _main_only(s)
        if s.get(CC):
            t = t / 1.3 if s.get(CB) else t * 1.1
        return t

    rows = _rows(rule, n=48)
    assert marginal.runner_up(rows, WINNER, MAIN, False, 0.05) == (CC, "8388608")
    over_all = marginal.effects(rows, {}, False, {CC}, within={})
    assert over_all[0].ratio < 1.05  # what reading every trial would have said


def test_two_settings_that_never_run_together_remove_nothing(tmp_path, monkeypatch):
    """The test of the two together measured nothing (every run of CB with CC failed): the
    screen removes nothing and the one-at-a-time rounds decide."""
    rule = _hidden(a=1.5, h=1.0)
    rows = _rows(rule, n=48)
    runs: list = []

    def evaluate(settings, cap):
        runs.append(dict(settings))
        if settings == {**MAIN, CC: "8388608"}:
            return Outcome("failed", wall_s=0.1)
        t = rule(settings)
        return Outcome("ok", t, "kernel", t)

    got = reduction.minimal(_cfg(tmp_path), dict(WINNER), evaluate, False, random.Random(0),
                            lambda m: None, rows)  # fmt: skip
    sc = got["screen"]
    assert sc["second"]["kept"] and sc["then"]["pairs"] == 0 and not sc["removed"]
    assert not any("with the others" in why for why in got["removed"].values())
