"""The study's headline (iotune.verdict): the speedup of exactly what best.xml holds, with an
interval from the paired ratios and the pairs won, the same in the console, report.html,
summary.json and the knowledge base; the full winner's figure only labelled as such."""

import html
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from iotune import controlfile, reduction, space, study, tune_config, verdict
from iotune.search import sequential
from iotune.trial import Outcome

HERE = Path(__file__).resolve().parent


# ----------------------------------------------------------------------------- the interval


def test_hodges_lehmann_of_known_pairs():
    d = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    est, low, high = verdict.hodges_lehmann(d, sequential.design(5, 20).level)
    assert est == 4.0  # the median of the 28 Walsh averages
    # 7 pairs: only W+ = 28 (p = 1/128) is below the level 0.0151: the extreme averages
    assert (low, high) == (1.0, 7.0)
    est, low, high = verdict.hodges_lehmann([0.5, 0.1, 0.3], 0.0151)
    assert est == pytest.approx(0.3) and low is None and high is None  # 3 pairs cannot
    with pytest.raises(ValueError):
        verdict.hodges_lehmann([], 0.05)


def test_the_interval_excludes_one_exactly_when_the_sequential_test_says_so():
    """The interval's ends are at the test's per-look level, so that they never disagree: a
    headline "established" beside a test that is not (or the reverse) cannot happen."""
    d = sequential.design(5, 20)
    rng = random.Random(11)
    agree = 0
    for _ in range(400):
        n = rng.randint(5, 20)
        gain = rng.choice([1.0, 1.1, 1.3, 2.0])
        noise = rng.choice([0.05, 0.2, 0.5])
        a = [rng.lognormvariate(0, noise) for _ in range(n)]
        b = [rng.lognormvariate(0, noise) / gain for _ in range(n)]
        v = sequential.verdict(a, b, d)
        level = d.level_at(n)  # six pairs: the early look's 1/64 (a clean sweep)
        _, low, high = verdict.hodges_lehmann(verdict.log_ratios(a, b, False), level)
        assert (low is not None and low > 0) == v.significant
        agree += v.significant
        if low is not None:
            assert low <= high
    assert 50 < agree < 350  # both outcomes were tried


def _verification(default, tuned, settings, level=0.0151):
    return {
        "rounds": [{"default": x, "tuned": y} for x, y in zip(default, tuned, strict=True)],
        "design": {"min": 5, "max": 20, "level": level},
        "variants": {"default": {}, "tuned": dict(settings)},
        "improved": True,
        "p_nominal": 0.01,
    }


def test_a_headline_never_contradicts_its_pairs():
    """6 of 14 pairs won with a ratio of medians above 1 (as seen with a real study): the
    headline says the pairs and that the gain is not established; best.xml keeps the defaults."""
    rng = random.Random(3)
    default = [1.0 + 0.02 * i for i in range(14)]
    tuned = [x * (0.7 if i < 6 else 1.1) * rng.uniform(0.99, 1.01) for i, x in enumerate(default)]
    rec = {"fill_time": "never"}
    head = verdict.headline(rec, _verification(default, tuned, rec), maximize=False)
    assert head["wins"] == 6 and head["pairs"] == 14
    assert not head["established"] and head["settings"] == {}
    assert head["candidate"] == rec
    assert head["low"] <= 1.0 <= head["high"]
    text = head["text"]
    assert "not established" in text and "faster in 6 of 14 pairs" in text
    assert "the interval includes 1.0" in text and "keep the defaults" in text
    with pytest.raises(ValueError):  # a verdict is measured on the recommended settings only
        verdict.headline({"cb_buffer_size": "1048576"}, _verification(default, tuned, rec), False)


def test_an_established_gain_is_said_with_its_interval_and_pairs():
    default = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 1.02, 0.98]
    tuned = [
        x / g for x, g in zip(default, [2.9, 3.1, 3.0, 2.8, 3.2, 3.05, 2.95, 3.0], strict=True)
    ]
    rec = {"cb_buffer_size": "1048576"}
    head = verdict.headline(rec, _verification(default, tuned, rec), maximize=False)
    assert head["established"] and head["settings"] == rec
    assert 2.8 <= head["low"] < head["speedup"] < head["high"] <= 3.2
    assert head["text"] == (
        f"best.xml (1 setting) is {head['speedup']:.2f}x faster than the defaults (90% interval "
        f"{head['low']:.2f}-{head['high']:.2f}x; faster in 8 of 8 pairs)"
    )
    # a throughput (maximised): the same pairs inverted give the same verdict
    up = verdict.headline(
        rec, _verification([1 / x for x in default], [1 / x for x in tuned], rec), maximize=True
    )
    assert up["speedup"] == pytest.approx(head["speedup"]) and up["established"]


# ----------------------------------------------------------------------------- study.finish


def _cfg(tmp_path, **kw):
    # the strategy that reduces its winner one setting at a time (the default strategy's race
    # prefers fewer settings instead: tests/python/test_search_local.py)
    kw.setdefault("strategy", "tpe")
    sp = space.load(HERE / "fake_space.toml")
    return tune_config.TuneConfig(app=["x"], out=tmp_path, space=sp, seed=3, remember=False, **kw)


def _study_of(cfg, winner):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    s.enqueue_trial(cfg.space.trial_params_for(winner))
    return s


def test_the_headline_is_measured_on_best_xml_not_on_the_full_winner(tmp_path):
    """A 3-setting winner of which one setting carries the gain: best.xml holds that setting,
    and the headline's pairs are runs of exactly it (not of the winner)."""
    from iotune.search import loop

    cfg = _cfg(tmp_path, leaders=1, repeat=0, verify_pairs=10)
    winner = {"cb_buffer_size": "1048576", "chunk_cache_bytes": "8388608",
              "romio_cb_write": "disable"}  # fmt: skip
    s = _study_of(cfg, winner)
    rng = random.Random(7)
    runs = []

    def evaluate(settings, cap):
        t = (0.4 if settings.get("cb_buffer_size") == "1048576" else 1.0) * rng.lognormvariate(
            0, 0.08
        )
        if settings.get("romio_cb_write") == "disable":
            t *= 0.9  # a small share of the winner's gain: real, but not what is kept
        runs.append((dict(settings), t))
        return Outcome("ok", t, "kernel", t)

    loop.run(s, cfg.space, evaluate, budget=1)
    summary = study.finish(cfg, s, evaluate, log=lambda m: None)
    head = summary["headline"]
    rec = summary["recommended"]
    assert summary["best_settings"] == winner and 0 < len(rec) < len(winner)
    best = controlfile.parse_file(tmp_path / "best.xml")
    assert {x.name: x.value for x in best.settings} == rec == head["settings"]
    assert head["established"] and head["variants"]["tuned"] == rec
    of_rec = {t for st, t in runs if st == rec}
    assert head["rounds"] and all(r["tuned"] in of_rec for r in head["rounds"])
    assert summary["verdict"] == head["text"]
    assert head["text"].startswith(f"best.xml ({len(rec)} setting")
    assert head["low"] <= head["speedup"] <= head["high"] and head["low"] > 1.0
    full = head["full_winner"]
    assert full["settings"] == winner
    assert full["text"].startswith("full winner (3 settings), not recommended: ")
    assert full["speedup"] != head["speedup"]
    page = (tmp_path / "report.html").read_text()
    assert html.escape(head["text"]) in page and html.escape(full["text"]) in page
    assert page.index(html.escape(head["text"])) < page.index(html.escape(full["text"]))
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["headline"]["speedup"] == head["speedup"]


def test_best_xml_holds_the_defaults_when_its_own_pairs_do_not_establish_a_gain(
    tmp_path, monkeypatch
):
    """The winner is verified, but the set meant for best.xml, measured on its own, shows no
    gain: best.xml keeps the defaults, the candidate goes to candidate.xml, and the report has
    no "Recommended settings" heading over it."""
    from iotune.search import loop

    cfg = _cfg(tmp_path, leaders=1, repeat=0, verify_pairs=8)
    winner = {"cb_buffer_size": "1048576", "romio_cb_write": "disable"}
    s = _study_of(cfg, winner)
    alone = {"cb_buffer_size": "1048576"}
    # a reduction whose own check went missing: finish measures best.xml's set itself
    reduced = {"settings": dict(alone), "contributions": {}, "removed": {"romio_cb_write": "-"}}
    monkeypatch.setattr(reduction, "minimal", lambda *a, **k: reduced)
    monkeypatch.setattr(reduction, "checked_reduction", lambda cfg, eff, reduced, *a, **k: reduced)
    rng = random.Random(8)

    def evaluate(settings, cap):  # only both together are faster
        both = settings.get("cb_buffer_size") and settings.get("romio_cb_write")
        t = (0.5 if both else 1.0) * rng.lognormvariate(0, 0.2)
        return Outcome("ok", t, "kernel", t)

    loop.run(s, cfg.space, evaluate, budget=1)
    summary = study.finish(cfg, s, evaluate, log=lambda m: None)
    assert summary["final"]["improved"]  # the winner's gain was real
    head = summary["headline"]
    assert not head["established"] and summary["recommended"] == {} == head["settings"]
    assert head["variants"]["tuned"] == alone and head["candidate"] == alone
    assert "not established" in summary["verdict"] and "keep the defaults" in summary["verdict"]
    assert controlfile.parse_file(tmp_path / "best.xml").settings == []
    cand = controlfile.parse_file(tmp_path / "candidate.xml")
    assert {x.name: x.value for x in cand.settings} == alone
    page = (tmp_path / "report.html").read_text()
    assert "Recommended settings" not in page and "not recommended" in page


# ----------------------------------------------------------------------------- end to end

APP = """import json, os, random, re, sys
from pathlib import Path
settings = {}
if os.environ.get("IOTUNE_CONFIG"):
    text = Path(os.environ["IOTUNE_CONFIG"]).read_text()
    settings = dict(re.findall(r"<(\\w+)>([^<]*)</\\1>", text))
count = Path(__file__).with_name("count")  # runs in order: a deterministic noise
n = int(count.read_text()) if count.exists() else 0
count.write_text(str(n + 1))
t = 0.02 if settings.get("cb_buffer_size") == "1048576" else 0.06
t *= random.Random(n).lognormvariate(0, 0.1)
print("IOTUNE_RESULT " + json.dumps({"kernel": "app", "phase": "write", "ranks": 1,
                                     "bytes": 10**6, "total_s": t}))
"""

SPACE = """name = "headline"
[params.cb_buffer_size]
values = ["1M", "16M"]
default = "16M"
[params.chunk_cache_bytes]
values = ["1M", "8M"]
default = "1M"
[params.romio_ds_write]
values = ["automatic", "enable"]
default = "automatic"
[[guesses]]
name = "all three"
settings = { cb_buffer_size = "1M", chunk_cache_bytes = "8M", romio_ds_write = "enable" }
"""


def test_console_report_summary_and_kb_show_give_the_same_headline(tmp_path):
    """A real `iotune tune` (a small application whose time only cb_buffer_size changes; its
    3-setting guess wins), filed in a knowledge base: the console's last verdict line, the
    report, summary.json and `kb show`/`kb list` give best.xml's speedup and interval."""
    from iotune import kb

    (tmp_path / "app").mkdir()
    app = tmp_path / "app" / "app.py"
    app.write_text(APP)
    (tmp_path / "space.toml").write_text(SPACE)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    r = subprocess.run(
        [sys.executable, "-m", "iotune.tune_cli", "--space", tmp_path / "space.toml",
         "--strategy", "tpe", "--launcher", "none", "--no-preload", "--objective", "kernel",
         "--no-progress", "--trials", "2", "--cap", "0", "--verify-pairs", "8", "--seed", "1",
         "--out", out, "--study", "h", "--no-kb", "--", sys.executable, app],  # fmt: skip
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((out / "summary.json").read_text())
    head = summary["headline"]
    assert summary["best_settings"] == {"cb_buffer_size": "1048576", "chunk_cache_bytes":
                                        "8388608", "romio_ds_write": "enable"}  # fmt: skip
    assert summary["recommended"] == {"cb_buffer_size": "1048576"} == head["settings"]
    assert head["established"] and head["variants"]["tuned"] == summary["recommended"]
    figure = (f"{head['speedup']:.2f}x faster than the defaults (90% interval "
              f"{head['low']:.2f}-{head['high']:.2f}x; faster in {head['wins']} of "
              f"{head['pairs']} pairs)")  # fmt: skip
    assert head["text"] == f"best.xml (1 setting) is {figure}"
    # the console: the headline is the verdict line; the winner's figure only labelled
    said = [x for x in r.stdout.splitlines() if x.startswith("iotune tune: best.xml (")]
    assert said == [f"iotune tune: {head['text']}"], r.stdout
    full = [x.strip() for x in r.stdout.splitlines() if "full winner" in x]
    assert full == [head["full_winner"]["text"]]
    assert full[0].startswith("full winner (3 settings), not recommended: ")
    # the report
    page = (out / "report.html").read_text()
    assert f"<p class='verdict'>{html.escape(head['text'])}</p>" in page
    assert f"Speedup {head['speedup']:.2f}x (90% interval {head['low']:.2f}-" in page
    # the knowledge base: the entry `iotune tune` files, shown by `kb show` and `kb list`
    from iotune.kb.signature import Signature

    sig = Signature(motif={"ops": "write"}, scale={"ranks": 1}, platform={"fs": "ext4"})
    base = kb.KnowledgeBase(f"sqlite:///{tmp_path / 'kb.sqlite'}")
    rid, _ = base.add(kb.entry_from_summary(summary, sig, str(out)))
    base.close()
    show = subprocess.run([sys.executable, "-m", "iotune", "kb", "--kb", tmp_path / "kb.sqlite",
                           "show", str(rid)], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip
    assert show.returncode == 0, show.stderr
    entry = json.loads(show.stdout)
    assert entry["speedup"] == head["speedup"] and entry["improved"]
    assert entry["settings"] == summary["recommended"]
    assert (entry["verdict"]["low"], entry["verdict"]["high"]) == (head["low"], head["high"])
    assert (entry["verdict"]["wins"], entry["verdict"]["pairs"]) == (head["wins"], head["pairs"])
    assert entry["verdict"]["text"] == head["text"]
    listed = subprocess.run([sys.executable, "-m", "iotune", "kb", "--kb", tmp_path /
                             "kb.sqlite", "list"], capture_output=True, text=True, env=env,
                            timeout=120)  # fmt: skip
    assert verdict.figure(head) in listed.stdout, listed.stdout
    # the headline is the Hodges-Lehmann estimate of its own pairs
    own = verdict.log_ratios([x["default"] for x in head["rounds"]],
                             [x["tuned"] for x in head["rounds"]], False)  # fmt: skip
    assert head["speedup"] == pytest.approx(math.exp(verdict.hodges_lehmann(own, head["level"])[0]))


def test_kb_suggest_gives_the_entry_s_headline():
    """`kb suggest`'s evidence shows the speedup with its interval and pairs, as the study's
    console did; an entry of an older iotune (no verdict) shows its speedup alone."""
    from iotune import kb
    from iotune.kb import cli as kb_cli
    from iotune.kb.signature import Signature

    sig = Signature(motif={"io_mix": "write"}, scale={"ranks": 2}, platform={"fs": "ext4"})
    head = {"low": 1.62, "high": 2.21, "confidence": 0.9, "wins": 9, "pairs": 9}
    e = kb.Entry(signature=sig, settings={"fill_time": "never"}, speedup=1.9, improved=True,
                 verdict=head)  # fmt: skip
    e.id, e.created = 1, "2026-11-26T00:00:00Z"
    lines = kb_cli.evidence_lines(kb.suggest([e], sig))
    assert any("verified 1.90x (90% interval 1.62-2.21x; faster in 9 of 9 pairs)" in x
               for x in lines), lines  # fmt: skip
    old = kb.Entry(signature=sig, settings={"fill_time": "never"}, speedup=1.9, improved=True)
    assert kb_cli.headline(old) == "1.90x"


REAL_SPACE = """name = "headline-real"
[params.fill_time]
values = ["ifset", "never"]
default = "ifset"
[params.mdc_initial_size]
values = ["2M", "16M"]
default = "2M"
[params.sieve_buf_size]
values = ["64K", "1M"]
default = "64K"
[[guesses]]
name = "three"
settings = { fill_time = "never", mdc_initial_size = "16M", sieve_buf_size = "1M" }
"""


def test_a_real_kernel_study_gives_best_xml_s_own_speedup(tmp_path, libiotune, kernel):
    """GCRM-IO under mpiexec -n 2 with the runtime: a 3-setting winner of which fill_time=never
    carries the gain (about 1.7x here; the other two are inert for it). Whatever the noise
    decides, the headline is measured on best.xml's settings, the console and the report say
    it, and a winner with more settings than best.xml is shown only as the full winner.
    (Seen here: best.xml fill_time=never 1.69x [1.26-2.07], full winner 1.46x.)"""
    kernel("gcrmio")
    (tmp_path / "space.toml").write_text(REAL_SPACE)
    r = subprocess.run(
        [sys.executable, "-m", "iotune.tune_cli", "--kernel", "gcrmio", "--strategy", "tpe",
         "--space", tmp_path / "space.toml", "--trials", "2", "--leaders", "2", "--repeat", "1",
         "--verify-pairs", "6", "--seed", "0", "--no-kb", "--no-progress", "--out", "out"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "IOTUNE_LIB": str(libiotune)},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    head, rec, winner = summary["headline"], summary["recommended"], summary["best_settings"]
    # under load the noise may let the defaults win the search (seen once at load 10): the
    # outputs must agree all the same (the deterministic case is the fake application's above)
    assert winner in ({}, {"fill_time": "never", "mdc_initial_size": "16777216",
                           "sieve_buf_size": "1048576"}), summary["verdict"]  # fmt: skip
    assert set(rec) <= set(winner) and rec == head["settings"]
    best = controlfile.parse_file(tmp_path / "out" / "best.xml")
    assert {x.name: x.value for x in best.settings} == rec
    assert head["variants"]["tuned"] == (rec or head["candidate"])
    said = [x.removeprefix("iotune tune: ") for x in r.stdout.splitlines()]
    assert head["text"] in said and summary["verdict"] == head["text"]
    page = (tmp_path / "out" / "report.html").read_text()
    assert html.escape(head["text"]) in page
    if rec:
        assert head["established"] and head["low"] > 1.0 and "fill_time" in rec
        assert head["text"].startswith(f"best.xml ({len(rec)} setting")
    if rec and rec != winner:
        full = head["full_winner"]["text"]
        assert full.startswith("full winner (3 settings), not recommended: ")
        assert full in r.stdout and html.escape(full) in page


def test_a_finish_stopped_before_its_report_leaves_no_fresh_best_xml(tmp_path, monkeypatch):
    """best.xml is written last: a finish interrupted while writing the report (SIGTERM) does
    not leave a new best.xml beside no summary and no report."""
    from iotune import report
    from iotune.search import loop

    cfg = _cfg(tmp_path, leaders=1, repeat=0, verify_pairs=10, partial=False)
    s = _study_of(cfg, {"cb_buffer_size": "1048576"})
    rng = random.Random(3)

    def evaluate(settings, cap):
        t = (0.4 if settings else 1.0) * rng.lognormvariate(0, 0.05)
        return Outcome("ok", t, "kernel", t)

    def stopped(*a, **k):
        raise KeyboardInterrupt

    loop.run(s, cfg.space, evaluate, budget=1)
    monkeypatch.setattr(report, "write_all", stopped)
    with pytest.raises(KeyboardInterrupt):
        study.finish(cfg, s, evaluate, log=lambda m: None)
    assert not (tmp_path / "best.xml").exists()
    monkeypatch.undo()
    study.finish(cfg, s, evaluate, log=lambda m: None)
    assert (tmp_path / "best.xml").exists() and (tmp_path / "summary.json").exists()
