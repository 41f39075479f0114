"""Concurrent workers of one study (issue 23): races between workers end in no traceback and
lose nothing. SQLite transactions start IMMEDIATE (two workers never claim the same queued
trial); a trial failed by another worker while it is still being set up is dropped quietly."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import optuna

from iotune import space as space_mod
from iotune import storage
from iotune.search import loop
from iotune.trial import Outcome

HERE = Path(__file__).resolve().parent
SRC = HERE.parent.parent / "src"

POP = textwrap.dedent(
    """
    import sys, time
    import optuna
    from iotune import storage
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    url, start, n, out = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    study = optuna.load_study(study_name="s", storage=storage.open_storage(url, None))
    time.sleep(max(0.0, start - time.time()))  # every worker at once
    got = []
    for _ in range(n):
        t = study.ask()  # pops a queued (WAITING) trial
        got.append(t.number)
    open(out, "w").write(" ".join(map(str, got)))
    """
)


def test_concurrent_workers_never_claim_the_same_queued_trial(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=storage.open_storage(url, None))
    workers, each = 4, 8
    for i in range(workers * each):
        study.enqueue_trial({"x": i}, skip_if_exists=False)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    start = time.time() + 6  # after every interpreter has started
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", POP, url, str(start), str(each), str(tmp_path / f"w{i}")],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for i in range(workers)
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * workers, errors
    got = [int(n) for i in range(workers) for n in (tmp_path / f"w{i}").read_text().split()]
    assert len(got) == len(set(got)) == workers * each, sorted(got)


def test_a_trial_failed_by_another_worker_while_being_set_up_is_dropped():
    """Another worker's recover_stale took this worker's new trial, not yet claimed (a slow
    set-up on a loaded host), for an orphan and failed it: the worker asks for another trial
    instead of dying with UpdateFinishedTrialError; the budget holds."""
    sp = space_mod.load(str(HERE / "fake_space.toml"))
    study = optuna.create_study()
    real_ask, asked = study.ask, []

    def ask(*args, **kwargs):
        t = real_ask(*args, **kwargs)
        if not asked:
            assert storage.fail(study, t, "interrupted")  # what the other worker does
        asked.append(t.number)
        return t

    study.ask = ask
    loop.run(study, sp, lambda settings, cap: Outcome("ok", 1.0, "kernel", 0.1), budget=4)
    states = [(t.state.name, t.user_attrs.get("status")) for t in study.trials]
    assert states[0] == ("FAIL", "interrupted")
    assert len(states) == 4 and all(s in ("COMPLETE", "PRUNED") for s, _ in states[1:])
    assert storage.fail(study, study.trials[1], "interrupted") is False  # finished: left alone


def test_a_study_whose_creator_died_before_setting_it_up_is_set_up_by_the_next(
    tmp_path, monkeypatch
):
    """A worker that created the study and died before writing its metadata and queueing the
    baseline: the next worker waits out the set-up grace, then does it; a worker that finds it
    set up (the usual case: it was created a moment ago by another) goes on at once."""
    from iotune import study as study_mod
    from iotune import tune_config

    url = f"sqlite:///{tmp_path / 'study.db'}"
    optuna.create_study(study_name="s", storage=storage.open_storage(url, None))  # and died
    cfg = tune_config.TuneConfig(
        app=["./app"], out=tmp_path, space=space_mod.load(str(HERE / "fake_space.toml")),
        launcher="none", study_name="s", storage=url, preload=False,
    )  # fmt: skip
    monkeypatch.setattr(study_mod, "SETUP_GRACE_S", 0.5)
    s, created = study_mod.open_study(cfg)
    assert not created
    assert s.user_attrs["strategy"] == "tpe" and s.user_attrs["command_text"]
    origins = [t.user_attrs.get("origin") for t in s.trials]
    assert origins == ["defaults"]
    monkeypatch.setattr(study_mod, "SETUP_GRACE_S", 60)
    start = time.monotonic()
    s, _ = study_mod.open_study(cfg)  # set up now: no wait, nothing queued twice
    assert time.monotonic() - start < 30
    assert [t.user_attrs.get("origin") for t in s.trials] == ["defaults"]


def test_storage_faults_are_told_apart_from_bugs():
    """storage.fault: the one reading of a write that failed (tune and defaults print it);
    anything else is not taken for one."""
    import errno
    import sqlite3

    url = "postgresql://me:secret@host/db"
    try:
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as inner:
            raise optuna.exceptions.StorageInternalError("commit failed") from inner
    except Exception as e:
        said = storage.fault(e, url)
    assert (
        said
        == "cannot write the study storage postgresql://me:***@host/db: database or disk is full"
    )
    full = OSError(errno.ENOSPC, "No space left on device", "/x/report.html")
    assert storage.fault(full, url) == "cannot write /x/report.html: No space left on device"
    assert "Read-only" in storage.fault(OSError(errno.EROFS, "Read-only file system"), url)
    assert storage.fault(ValueError("a bug"), url) is None
    assert storage.fault(OSError(errno.ENOENT, "No such file"), url) is None
