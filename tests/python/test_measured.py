"""A study knows how it was measured (iotune.measured): the options recorded when it is created,
a rerun with other ones refused naming each difference (never reusing trials silently), a rerun
with the same ones resumed with its trials reused, --restart, studies made before the record,
the options in summary.json and the report, and one knowledge-base entry per study."""

import json
import random
import sys
from pathlib import Path

import optuna
import pytest
from test_study import FAKE, SPACE, load, tune

from iotune import kb, measured, space, study, tune_config
from iotune.kb import signature, store
from iotune.search import loop, warmstart
from iotune.trial import Outcome

HERE = Path(__file__).resolve().parent
QUICK = ["--space", SPACE, "--launcher", "none", "--no-preload", "--objective", "kernel",
         "--no-progress", "--no-kb", "--verify-pairs", 5, "--leaders", 2, "--repeat", 1,
         "--no-partial", "--study", "m"]  # fmt: skip


def _trials(out: Path) -> dict[int, tuple[str, object]]:
    """{number: (state, start time)} of the study's trials that ran."""
    return {t.number: (t.state.name, t.datetime_start) for t in load(out, "m").trials
            if t.state.name != "WAITING"}  # fmt: skip


def test_a_rerun_with_other_measurement_options_is_refused_and_with_the_same_resumed(tmp_path):
    out = tmp_path / "out"
    args = [*QUICK, "--out", out]
    r = tune(*args, "--trials", 3, "--", *FAKE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "measured with: objective kernel" in r.stdout
    first = _trials(out)
    assert len(first) == 3
    uid = load(out, "m").user_attrs[study.STUDY_UID]

    # other options: refused in one message naming each difference, nothing run or changed
    r = tune(*args, "--trials", 5, "--drop-caches", "--sync", "--", *FAKE)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "study 'm' was measured with other options than this run's" in r.stderr
    assert "page cache dropped (--drop-caches): no -> yes" in r.stderr
    assert "sync before close (--sync): no -> yes" in r.stderr
    assert "--restart" in r.stderr and "--study" in r.stderr
    assert _trials(out) == first

    # the same options (a final-phase option changed): continued, its trials reused
    r = tune(*args, "--trials", 5, "--warmup", 1, "--", *FAKE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "study 'm' (continued)" in r.stdout
    assert "warm-up runs (--warmup): 0 at the last finish -> 1" in r.stdout
    again = _trials(out)
    assert len(again) == 5 and {n: again[n] for n in first} == first  # kept, not redone
    summary = json.loads((out / "summary.json").read_text())
    block = summary[measured.ATTR]
    assert block["recorded"] and block["options"]["drop_caches"] is False
    assert block["options"]["sync"] is False and block["options"]["runtime"] == "none"
    assert block["final"]["warmup"] == 1
    html = (out / "report.html").read_text()
    assert "How it was measured" in html and "page cache dropped (--drop-caches)" in html

    # --restart: the study started again with the new options, its earlier trials gone
    r = tune(*args, "--trials", 3, "--sync", "--restart", "--", *FAKE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "study 'm' started again (--restart): its 5 trial(s) discarded" in r.stdout
    s = load(out, "m")
    restarted = _trials(out)
    assert len(restarted) == 3
    assert min(t for _, t in restarted.values()) > max(t for _, t in again.values())
    assert s.user_attrs[measured.ATTR]["options"]["sync"] is True
    assert s.user_attrs[study.STUDY_UID] == uid  # the same study, started again
    summary = json.loads((out / "summary.json").read_text())
    assert summary[measured.ATTR]["options"]["sync"] is True and summary["study_uid"] == uid


def test_restart_is_refused_with_finish_only_and_search_only(tmp_path):
    for flag in ("--finish-only", "--search-only"):
        r = tune(*QUICK, "--out", tmp_path, "--restart", flag, "--", *FAKE)
        assert r.returncode == 2 and f"--restart with {flag}" in r.stderr, r.stderr
        assert not (tmp_path / "study.db").exists()


def _cfg(tmp_path, **kw):
    sp = space.load(HERE / "fake_space.toml")
    kw = {"study_name": "m", "launcher": "none", "preload": False, "objective": "kernel",
          "storage": f"sqlite:///{tmp_path / 'study.db'}", **kw}  # fmt: skip
    return tune_config.TuneConfig(app=[sys.executable, "app.py"], out=tmp_path, space=sp, **kw)


def _evaluate(seed, gain=2.0):
    rng = random.Random(seed)

    def evaluate(settings, cap):
        t = (1 / gain if settings.get("cb_buffer_size") == "1048576" else 1.0) * rng.lognormvariate(
            0, 0.05
        )
        return Outcome("ok", t, "kernel", t)

    return evaluate


def test_a_study_made_before_the_record_is_continued_saying_what_is_unknown(tmp_path):
    cfg = _cfg(tmp_path)
    # a study as an older iotune made it: its metadata, no record of how it was measured
    s = optuna.create_study(study_name="m", storage=cfg.storage)
    for k, v in study._meta(cfg).items():
        s.set_user_attr(k, v)
    warmstart.enqueue(s, cfg.space, True)
    loop.run(s, cfg.space, _evaluate(1), budget=3)
    said = []
    s, created = study.open_study(_cfg(tmp_path), log=said.append)
    assert not created
    assert len(said) == 1 and "older iotune" in said[0] and "unknown for its 3 trial(s)" in said[0]
    assert "page cache dropped" in said[0] and "runtime" in said[0]
    assert "objective" not in said[0]  # kept with the study: known
    rec = s.user_attrs[measured.ATTR]
    assert rec["unknown_before"]["drop_caches"] == 3 and "objective" not in rec["unknown_before"]
    # from now on it is compared; what the older study kept was compared already
    with pytest.raises(study.StudyError, match=r"page cache dropped.*no -> yes"):
        study.open_study(_cfg(tmp_path, drop_caches=True))
    rows = measured.rows(measured.summary(rec, measured.final(cfg)))
    assert ["page cache dropped (--drop-caches)", "no (not recorded for the first 3 trials)"] == (
        rows[4][:2]
    )
    # a summary without any record (an older study's summary.json): said, no crash
    assert measured.rows(None)[0][1] == "unknown"
    assert measured.rows(measured.summary(None, {"warmup": 0}))[0][1] == "unknown"
    # a summary.json from elsewhere (iotune compare reads two): whatever it holds, no crash
    odd = {"recorded": True, "options": [1], "changed": "x", "final": 3, "unknown_before": None}
    assert measured.rows(odd) == []
    assert measured.rows({"recorded": True, "options": {"cap": "y"}})[0][1] == "y"


def test_an_older_study_with_another_objective_is_refused(tmp_path):
    cfg = _cfg(tmp_path)
    s = optuna.create_study(study_name="m", storage=cfg.storage)
    for k, v in study._meta(cfg).items():
        s.set_user_attr(k, v)
    warmstart.enqueue(s, cfg.space, True)
    with pytest.raises(study.StudyError, match="objective: kernel -> wall"):
        study.open_study(_cfg(tmp_path, objective="wall"))


def test_a_rerun_without_leaders_given_says_nothing_of_them(tmp_path):
    """--leaders never given: the strategy's number, recorded at the first finish, is the same
    at the next (it was said to change from 3 to "unknown" at every rerun)."""
    quick = [a for a in QUICK if a not in ("--leaders", 2)]
    args = [*quick, "--out", tmp_path / "out", "--trials", 3, "--", *FAKE]
    assert tune(*args).returncode == 0
    r = tune(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(continued)" in r.stdout and "leaders re-measured" not in r.stdout, r.stdout


def test_finish_only_measures_as_the_study_was_measured(tmp_path):
    study.open_study(_cfg(tmp_path, sync=True, drop_caches=True, timeout=60.0))
    cfg = _cfg(tmp_path, finish_only=True, preload=True)
    study.open_study(cfg, adopt=True)
    assert cfg.sync and cfg.drop_caches and cfg.timeout == 60.0 and not cfg.preload


def test_finish_only_says_an_objective_it_does_not_take(tmp_path):
    first = _cfg(tmp_path)
    study.open_study(first)
    said = []
    cfg = _cfg(tmp_path, finish_only=True, objective="wall")
    study.open_study(cfg, adopt=True, log=said.append)
    assert cfg.objective == first.objective
    assert any("--objective wall ignored" in x and first.objective in x for x in said), said


def test_timeout_and_cap_changes_are_said_and_recorded_not_refused(tmp_path):
    study.open_study(_cfg(tmp_path))
    said = []
    s, _ = study.open_study(_cfg(tmp_path, timeout=30.0), log=said.append)
    assert said and "timeout per trial: 600 s -> 30 s from trial 0 on" in said[0]
    changed = s.user_attrs[measured.ATTR]["changed"]
    assert changed == [{"option": "timeout", "old": 600.0, "new": 30.0, "from_trial": 0}]
    said.clear()
    study.open_study(_cfg(tmp_path, timeout=30.0), log=said.append)
    assert not said  # said once


def _sig():
    m = {"interface": "hdf5", "transfer_mode": "collective", "access_pattern": "sequential",
         "size_class": "large", "file_mode": "shared", "io_mix": "write", "layout": "chunked",
         "filters": "no", "fs_kind": "local"}  # fmt: skip
    return signature.Signature(m, {"ranks": 2}, {"host": "x86_64:vm"})


def _finished(tmp_path, name, seeds, kb_path):
    cfg = _cfg(tmp_path, study_name=name, kb=str(kb_path), signature=_sig(), leaders=1,
               repeat=0, verify_pairs=6, partial=False, seed=1)  # fmt: skip
    s, _ = study.open_study(cfg)
    loop.run(s, cfg.space, _evaluate(0), budget=3)
    said, summaries = [], []
    for seed in seeds:  # finished again: measured afresh, other numbers
        summaries.append(study.finish(cfg, s, _evaluate(seed, 2.0 + seed), log=said.append))
    return s, summaries, said


def test_the_knowledge_base_holds_one_entry_per_study_updated_when_it_is_finished_again(tmp_path):
    kb_path = tmp_path / "kb.sqlite"
    s, summaries, said = _finished(tmp_path, "m", [1, 2], kb_path)
    assert summaries[0]["final"]["speedup"] != summaries[1]["final"]["speedup"]
    assert any(line.startswith("stored in the knowledge base") for line in said), said
    assert any(line.startswith("updated in the knowledge base") for line in said), said
    base = kb.KnowledgeBase(kb.resolve_url(str(kb_path)))
    got = base.entries()
    assert len(got) == 1
    assert got[0].study_uid == s.user_attrs[study.STUDY_UID] == summaries[1]["study_uid"]
    assert got[0].speedup == pytest.approx(summaries[1]["headline"]["speedup"])
    base.close()
    _finished(tmp_path, "other", [1], kb_path)  # another study: an entry of its own
    base = kb.KnowledgeBase(kb.resolve_url(str(kb_path)))
    assert len(base.entries()) == 2
    base.close()


def _entry(study_uid="", speedup=1.5, created=""):
    return store.Entry(signature=_sig(), settings={"fill_time": "never"}, space="local",
                       speedup=speedup, p_value=0.01, improved=True, study="s",
                       study_uid=study_uid, created=created)  # fmt: skip


def test_an_older_entry_of_a_study_never_replaces_a_newer_one(tmp_path):
    base = kb.KnowledgeBase(kb.resolve_url(str(tmp_path / "kb.sqlite")))
    uid = "ab" * 16
    new = _entry(uid, 2.0, "2026-11-26T10:00:00Z")
    rid, status = base.put(new)
    assert status == store.STORED
    assert base.put(_entry(uid, 1.2, "2026-11-20T10:00:00Z")) == (rid, store.KEPT)
    assert base.put(new) == (rid, store.ALREADY)
    assert base.put(_entry(uid, 3.0, "2026-11-27T10:00:00Z")) == (rid, store.UPDATED)
    assert [e.speedup for e in base.entries()] == [3.0]
    # entries without a study uid are never merged: each content is an entry of its own
    base.put(_entry("", 1.1))
    base.put(_entry("", 1.3))
    assert len(base.entries()) == 3
    base.close()


def test_a_study_uid_is_part_of_the_entry_and_checked():
    from iotune.inputs import InputError
    from iotune.kb import validate

    plain = _entry()
    assert "study_uid" not in plain.to_json()  # an entry of before keeps its uid
    owned = _entry("cd" * 16)
    assert owned.uid != plain.uid
    back = validate.entry(owned.to_json(), "x")
    assert back.study_uid == owned.study_uid and back.uid == owned.uid
    for bad in ("../x", 5, "XYZ", "ab"):
        data = {**owned.to_json(), "study_uid": bad}
        with pytest.raises(InputError, match="study_uid"):
            validate.entry(data, "export.json: entry 0", require_uid=False)
    tampered = {**owned.to_json(), "study_uid": "ef" * 16}
    with pytest.raises(InputError, match="does not match its content"):
        validate.entry(tampered, "export.json: entry 0")


MOUNTINFO = """\
22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
30 22 0:26 / /tmp rw,nosuid shared:5 - tmpfs tmpfs rw
41 22 0:40 / /lus/scratch rw shared:9 - lustre 10.0.0.1@tcp:/scratch rw
42 41 0:41 / /lus/scratch/my\\040data rw shared:10 - fuse.ceph-fuse ceph-fuse rw
"""


def test_the_file_system_of_the_trials_directory_is_its_mount(tmp_path, monkeypatch):
    table = tmp_path / "mountinfo"
    table.write_text(MOUNTINFO)

    def fs(path):
        return measured.file_system(Path(path), str(table))

    assert fs("/lus/scratch/run/not-made-yet") == "lustre at /lus/scratch"
    assert fs("/lus/scratch") == "lustre at /lus/scratch"
    assert fs("/lus/scratchy") == "ext4 at /"  # a prefix of a name is not a parent
    assert fs("/lus/scratch/my data/x") == "fuse.ceph-fuse at /lus/scratch/my data"
    assert fs("/tmp/a/b") == "tmpfs at /tmp"
    assert measured.file_system(Path("/"), str(tmp_path / "none")) is None
    # on this machine: the real table names some mount for the test's directory
    assert " at /" in (measured.file_system(tmp_path) or " at /")


def test_another_file_system_is_a_compared_option():
    old = {"objective": "io", "file_system": "ext4 at /"}
    assert measured.differences(old, {**old, "file_system": "lustre at /lus"}) == [
        ("file_system", "ext4 at /", "lustre at /lus")
    ]
    assert measured.differences(old, {**old, "file_system": None}) == []  # not known: kept
    assert measured.differences({"objective": "io"}, old) == []  # an older record lacks it


def test_the_options_name_the_file_system_of_the_directory_the_trials_run_in(tmp_path):
    cfg = tune_config.TuneConfig(
        app=["true"], out=tmp_path / "out", space=space.load(SPACE), cwd=tmp_path, preload=False
    )
    here = measured.file_system(tmp_path)
    assert measured.options(cfg)["file_system"] == here
    cfg.isolate, cfg.workdir = True, Path("/dev/shm/iotune-x")
    if Path("/dev/shm").is_dir():
        assert measured.options(cfg)["file_system"] == measured.file_system(Path("/dev/shm"))


def test_min_gain_is_shown_as_the_option_takes_it():
    assert measured.show("min_gain", 0.05) == "5 %"  # --min-gain 5, not 0.05
    assert measured.show("min_gain", 0.125) == "12.5 %"


def test_finish_only_of_a_missing_study_makes_no_storage(tmp_path):
    cfg = _cfg(tmp_path, finish_only=True, storage=None)
    s, created = study.open_study(cfg, adopt=True)
    assert s is None and created
    assert not (tmp_path / "study.db").exists()  # an empty SQLite file was left behind
