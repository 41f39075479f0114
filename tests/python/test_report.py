"""The report: trials.csv, figures and report.html from a study, failures included."""

import csv

import optuna

from iotune import report, space
from iotune.search import loop, warmstart
from iotune.trial import Outcome

SPACE = space.parse(
    {
        "params": {
            "cb_buffer_size": {"ladder": ["1M", "16M"], "default": "16M"},
            "fill_time": {"values": ["ifset", "alloc", "never"], "default": "ifset"},
            "romio_cb_write": {"values": ["automatic", "disable"], "default": "automatic"},
        },
        "guesses": [{"name": "no fill", "settings": {"fill_time": "never"}}],
    }
)


def evaluate(settings, cap):
    if settings.get("fill_time") == "alloc":
        return Outcome("crashed", wall_s=0.1)
    if settings.get("romio_cb_write") == "disable":
        return Outcome("capped", wall_s=2.0)
    v = 0.5 if settings.get("fill_time") == "never" else 1.0
    return Outcome("ok", v, "profile", v)


def make_study():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=2))
    warmstart.enqueue(study, SPACE, True)
    loop.run(study, SPACE, evaluate, budget=20)
    return study


SUMMARY = {
    "study": "t",
    "strategy": "default",
    "objective": "io-time",
    "objective_unit": "s",
    "direction": "minimize",
    "command": "mpiexec -n 2 ./app",
    "storage": "sqlite:///x.db",
    "verdict": "tuned settings are 2.00x faster than the defaults (pairs 1.90x..2.10x, "
    "p = 0.031, 5 pairs)",
    "recommended": {"fill_time": "never"},
    "best_settings": {"fill_time": "never"},
    "leaders": {"values": {"fill_time=never": [0.5, 0.52]}},
    "final": {
        "improved": True,
        "speedup": 2.0,
        "p_value": 1 / 32,
        "pair_ratios": [2.0] * 5,
        "variants": {"default": {}, "tuned": {"fill_time": "never"}},
        "rounds": [{"default": 1.0 + i / 100, "tuned": 0.5} for i in range(5)],
        "summary": {
            "default": {"n": 5, "median": 1.02, "min": 1.0, "max": 1.04, "cv": 0.01},
            "tuned": {"n": 5, "median": 0.5, "min": 0.5, "max": 0.5, "cv": 0.0},
        },
        "verdict": "tuned settings are 2.00x faster",
    },
}


def test_report_files(tmp_path):
    study = make_study()
    page = report.write_all(tmp_path, study, SPACE, SUMMARY)
    for name in ("trials.csv", "trials.png", "verify.png", "params.png", "report.html"):
        assert (tmp_path / name).stat().st_size > 0, name
    rows = list(csv.DictReader(open(tmp_path / "trials.csv")))
    assert len(rows) == 20
    assert [r["number"] for r in rows] == [str(i) for i in range(20)]
    statuses = {r["status"] for r in rows}
    assert "ok" in statuses
    for r in rows:
        if r["status"] == "crashed":
            assert r["value"] == "" and r["state"] == "FAIL"
        if r["status"] == "capped":
            assert r["state"] == "PRUNED" and r["capped_bound"] != ""
        assert set(SPACE.names()) <= set(r)
    html = page.read_text()
    assert "2.00x faster" in html and "fill_time" in html
    assert "<img src='trials.png'" in html and "<img src='verify.png'" in html
    if "crashed" in statuses:
        assert "did not finish normally" in html


def test_report_without_improvement(tmp_path):
    study = make_study()
    summary = dict(
        SUMMARY,
        verdict="no better setting found: the stack's defaults were the best measured",
        recommended={},
        final={"improved": False},
    )
    page = report.write_all(tmp_path, study, SPACE, summary)
    html = page.read_text()
    assert "no better setting found" in html and "holds no settings" in html
    assert not (tmp_path / "verify.png").exists()
