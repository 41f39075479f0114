"""bench/demo_verdicts/demo_verdicts.py's own logic: the interval taken from summary.json where it
has one,
else a bootstrap of the pair ratios; the verdicts and intervals compared across runs."""

import pytest
from conftest import bench_module


@pytest.fixture(scope="module")
def dv():
    return bench_module("demo_verdicts")


def _run(improved, recommended, ratios, **final):
    summary = {"recommended": recommended, "verdict": "v",
               "final": {"improved": improved, "speedup": 1.3, "pairs": len(ratios),
                         "pair_ratios": ratios, **final}}  # fmt: skip
    return {"hold": True, "result": DV.verdict_of(summary)}


DV = bench_module("demo_verdicts")


def test_the_summarys_own_interval_is_used_where_there_is_one(dv):
    s = {"final": {"pair_ratios": [1.2, 1.3, 1.4], "speedup_interval": [1.1, 1.5]}}
    assert dv.verdict_of(s)["interval"] == [1.1, 1.5]
    assert dv.verdict_of(s)["interval_from"] == "summary.json"
    # iotune's headline (iotune.verdict): best.xml's own speedup and interval, not the final's
    s = {"headline": {"low": 1.1, "high": 2.0, "speedup": 1.4, "pairs": 10, "established": True},
         "final": {"speedup": 3.0, "improved": False}}  # fmt: skip
    r = dv.verdict_of(s)
    assert r["interval"] == [1.1, 2.0] and r["speedup"] == 1.4 and r["improved"] is True
    assert r["interval_from"].startswith("summary.json headline")


def test_without_one_a_bootstrap_interval_of_the_median_ratio(dv):
    r = dv.verdict_of({"final": {"pair_ratios": [1.2, 1.25, 1.3, 1.35, 1.4, 1.45]}})
    lo, hi = r["interval"]
    assert 1.2 <= lo <= 1.325 <= hi <= 1.45 and r["interval_from"].startswith("bootstrap")
    assert dv.bootstrap_interval([1.0, 2.0]) is None  # too few pairs


def test_agreement_counts_the_same_decision_and_settings_and_interval_overlap(dv):
    runs = [
        _run(True, {"fill_time": "never"}, [1.3, 1.4, 1.5, 1.35]),
        _run(True, {"fill_time": "never"}, [1.25, 1.3, 1.45, 1.4]),
        _run(True, {"fill_time": "never", "alignment": "1M"}, [1.3, 1.4, 1.5]),
        _run(False, {}, [0.9, 1.0, 1.1]),
        {"hold": True, "returncode": 1},  # a failed run counts as a run, not as agreeing
    ]
    a = dv.agree(runs)
    assert a["runs"] == 5 and a["finished"] == 4 and a["same_verdict"] == 2
    assert a["commonest_verdict"] == [True, {"fill_time": "never"}]
    assert a["intervals_share_a_value"] is False  # the keep-defaults run's lies below
    assert dv.agree(runs[:2])["intervals_share_a_value"] is True


def test_the_strategy_is_given_to_tune_and_the_runs_are_kept(dv, monkeypatch, tmp_path):
    import subprocess

    seen = []

    def fake_run(cmd, **kw):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "failed")

    monkeypatch.setattr(dv.subprocess, "run", fake_run)
    rec = dv.one_demo(True, tmp_path, 5.0, "local")
    assert seen[0][-3:] == ["--hold-freed-memory", "--strategy", "local"]
    assert rec["returncode"] == 1 and "result" not in rec
    dv.one_demo(False, tmp_path, 5.0)
    assert "--strategy" not in seen[1] and "--hold-freed-memory" not in seen[1]
    r = dv.verdict_of({"runs": {"total": 31, "search": 9}, "stopped": "no progress"})
    assert r["runs"]["total"] == 31 and r["stopped"] == "no progress"


def test_runs_appended_one_invocation_at_a_time_are_merged(dv, monkeypatch, tmp_path):
    """--append: one demo per invocation (each under a lock of its own), the file keeps all."""
    import json
    import sys

    n = iter(range(1, 10))

    def fake_demo(hold, workdir, timeout, strategy=None):
        i = next(n)
        final = {"improved": True, "speedup": 1.5, "pairs": 3, "pair_ratios": [1.4, 1.5, 1.6]}
        s = {"recommended": {"fill_time": "never"}, "verdict": "v", "final": final}
        return {"hold": hold, "load_before": (1.0, 1, 1), "load_after": (1.0, 1, 1),
                "min_free_ms_before": "0", "min_free_ms_after": "0", "seconds": float(i),
                "returncode": 0, "summary": s, "result": dv.verdict_of(s)}  # fmt: skip

    monkeypatch.setattr(dv, "one_demo", fake_demo)
    argv = ["demo_verdicts.py", "--runs", "1", "--append", "--tag", "t", "--out", str(tmp_path)]
    for _ in range(3):
        monkeypatch.setattr(sys, "argv", argv)
        assert dv.main() == 0
    data = json.loads((tmp_path / "demo_verdicts-t.json").read_text())
    assert [r["seconds"] for r in data["runs"]] == [1.0, 2.0, 3.0]
    assert len(data["meta"]["invocations"]) == 3
    assert data["agreement"]["runs"] == 3 and data["agreement"]["same_verdict"] == 3
    # without --append the file starts again
    monkeypatch.setattr(sys, "argv", [a for a in argv if a != "--append"])
    assert dv.main() == 0
    data = json.loads((tmp_path / "demo_verdicts-t.json").read_text())
    assert len(data["runs"]) == 1 and len(data["meta"]["invocations"]) == 1
