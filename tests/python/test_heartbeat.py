"""A worker killed without a word on another host (SIGKILL: no handler runs, nobody on this host
knows its process id) must not leave its trial running forever: its heartbeat stops and the
next worker fails it; the budget still holds. On SQLite, a journal file and PostgreSQL.

"Another host" is real as far as iotune can tell: the victim runs in a UTS namespace of its own
(unshare --uts) with another host name, so this host's process-id check cannot see it."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from iotune import storage
from iotune.report import table

HERE = Path(__file__).resolve().parent
FAKE = [sys.executable, str(HERE / "fake_app.py")]
BEAT = 1  # s; a trial is lost after storage.GRACE_BEATS of them
GRACE = storage.GRACE_BEATS * BEAT


def _url(kind: str, request, tmp_path: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'shared' / 'study.db'}"
    if kind == "journal":
        return f"journal:{tmp_path / 'shared' / 'study.journal'}"
    return request.getfixturevalue("pg_server").url()


def _args(url: str, study: str, budget: int) -> list[str]:
    return ["--storage", url, "--study", study, "--space", str(HERE / "fake_space.toml"),
            "--launcher", "none", "--no-preload", "--objective", "kernel", "--cap", "0",
            "--no-progress", "--trials", str(budget), "--heartbeat", str(BEAT),
            "--timeout", "300"]  # fmt: skip


def _other_host() -> list[str]:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare (util-linux) to give the victim another host name")
    probe = subprocess.run(["unshare", "--uts", "hostname", "elsewhere"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare --uts is not allowed here: {probe.stderr.decode().strip()}")
    return ["unshare", "--uts", "sh", "-c", 'hostname elsewhere && exec "$@"', "sh"]


@pytest.mark.parametrize("kind", ["sqlite", "journal", "postgresql"])
def test_a_worker_killed_on_another_host_has_its_trial_failed(kind, request, tmp_path):
    url = _url(kind, request, tmp_path)
    (tmp_path / "shared").mkdir(exist_ok=True)
    budget, name = 6, f"lost-{kind}"
    pids = tmp_path / "app.pids"
    victim = subprocess.Popen(
        [*_other_host(), sys.executable, "-m", "iotune.tune_cli", *_args(url, name, budget),
         "--search-only", "--out", str(tmp_path / "victim"), "--", *FAKE],
        env={**os.environ, "FAKE_APP_PAUSE": "300", "FAKE_APP_PIDS": str(pids)},
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not (pids.exists() and pids.read_text().strip()):
            assert victim.poll() is None and time.monotonic() < deadline, victim.stdout.read()
            time.sleep(0.1)
        time.sleep(2 * BEAT)  # a few heartbeats into its first trial
    finally:  # the host is gone: the worker and its application, with no warning
        if victim.poll() is None:
            os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        for pid in pids.read_text().split() if pids.exists() else []:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass

    store = storage.open_storage(url)
    running = optuna.load_study(study_name=name, storage=store).get_trials(
        states=(optuna.trial.TrialState.RUNNING,)
    )
    assert len(running) == 1 and running[0].user_attrs["worker"].startswith("elsewhere:")
    lost = running[0].number

    time.sleep(GRACE + 1.5)  # its last heartbeat is now older than the grace
    worker = subprocess.run(
        [sys.executable, "-m", "iotune.tune_cli", *_args(url, name, budget), "--search-only",
         "--out", str(tmp_path / "worker"), "--", *FAKE],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stdout + worker.stderr
    assert "1 trial(s) of a stopped or lost worker marked as failed" in worker.stdout

    s = optuna.load_study(study_name=name, storage=storage.open_storage(url))
    counted = [t for t in s.trials if t.state.name != "WAITING"]
    assert not [t for t in counted if t.state.name == "RUNNING"]
    assert len(counted) == budget, [(t.number, t.state.name) for t in counted]  # it counts once
    rows = {r["number"]: r for r in table.trial_rows(s, _space())}
    assert s.trials[lost].state.name == "FAIL" and rows[lost]["status"] == table.LOST
    assert all(t.user_attrs["worker"].startswith("elsewhere:") == (t.number == lost)
               for t in counted if "worker" in t.user_attrs)  # fmt: skip

    if kind != "sqlite":  # finishing reads the study as every backend gives it: once is enough
        return
    fin = subprocess.run(
        [sys.executable, "-m", "iotune.tune_cli", *_args(url, name, budget), "--finish-only",
         "--leaders", "2", "--repeat", "1", "--verify-pairs", "5", "--no-partial", "--out",
         str(tmp_path / "final")],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert fin.returncode == 0, fin.stdout + fin.stderr
    assert (tmp_path / "final" / "report.html").is_file()


def _space():
    from iotune import space

    return space.load(str(HERE / "fake_space.toml"))


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_beating_trial_is_never_failed_and_a_silent_one_is(kind, tmp_path):
    """A trial that runs longer than the grace keeps its heartbeat and stays running; once its
    beats stop, the next check fails it."""
    (tmp_path / "shared").mkdir()
    url = _url(kind, None, tmp_path)
    study = optuna.create_study(study_name="beat", storage=storage.open_storage(url, BEAT))
    trial = study.ask()
    with storage.heartbeat(study, trial):
        time.sleep(GRACE + 1.5)
        assert storage.fail_lost(study) == 0
        assert storage.still_running(study, trial)
    time.sleep(GRACE + 1.5)
    assert storage.fail_lost(study) == 1
    assert not storage.still_running(study, trial)
    assert study.trials[0].state.name == "FAIL"


def test_without_heartbeats_nothing_is_failed(tmp_path):
    study = optuna.create_study(
        study_name="quiet",
        storage=storage.open_storage(f"sqlite:///{tmp_path / 'q.db'}", heartbeat_s=None),
    )
    trial = study.ask()
    with storage.heartbeat(study, trial):
        pass
    assert storage.fail_lost(study) == 0 and storage.still_running(study, trial)


def test_a_result_that_comes_after_its_trial_was_failed_is_dropped(tmp_path):
    """A worker whose beats came too late (its trial failed as lost by another worker) finishes
    the run: its result is dropped, not told twice (Optuna would refuse it) or counted again."""
    from iotune.search import loop
    from iotune.trial import Outcome

    study = optuna.create_study(
        study_name="late", storage=storage.open_storage(f"sqlite:///{tmp_path / 'l.db'}")
    )
    trial = study.ask()
    storage.fail(study, trial, "interrupted")  # what another worker does to a silent trial
    loop.record(study, trial, Outcome("ok", 0.5, wall_s=0.5), None, maximize=False)
    (t,) = study.trials
    assert t.state.name == "FAIL" and t.user_attrs["status"] == "interrupted"
