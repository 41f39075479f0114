"""A worker that joins a study while another runs its baseline waits for it (an outside
tester's second `--search-only` worker started its trials at once: without the baseline's
insights, its guesses and the cap that the incumbent gives, and compared with nothing)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pytest
from optuna.storages.journal import JournalFileBackend, JournalStorage

from iotune import space
from iotune.search import loop, warmstart

HERE = Path(__file__).resolve().parent
APP = """
import json, os, re, sys, time
settings = {}
path = os.environ.get("IOTUNE_CONFIG")
if path:
    with open(path, encoding="utf-8") as f:
        found = re.findall(r"<(\\w+)>([^<]*)</\\1>", f.read())
        settings = {k: v for k, v in found if k != "Parameters"}
def note(what):
    with open(os.environ["RUNS_LOG"], "a", encoding="utf-8") as f:
        f.write(json.dumps([what, time.time(), os.getpid(), settings]) + "\\n")
note("start")
release = os.environ.get("RELEASE")  # the baseline runs until this file exists (60 s at most)
until = time.time() + 60
while not settings and release and not os.path.exists(release) and time.time() < until:
    time.sleep(0.05)
time.sleep(0.05)
note("end")
t = 0.02 if settings.get("cb_buffer_size") == "1048576" else 0.06
print("IOTUNE_RESULT " + json.dumps({"kernel": "fake", "phase": "write", "ranks": 1,
                                      "bytes": 10**6, "total_s": t}))
"""


class Worker:
    """A `--search-only` worker whose output is read as it comes."""

    def __init__(self, tmp_path, name, env, trials=8):
        self.proc = _worker(tmp_path, name, env, trials)
        self.lines = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout))
        self.reader.start()

    def says(self, text):
        return any(text in line for line in self.lines)

    def end(self):
        self.proc.wait(120)
        self.reader.join(30)
        return self.proc.returncode, "".join(self.lines)

    def kill(self):
        self.proc.kill()
        self.reader.join(30)


def _worker(tmp_path, name, env, trials=8):
    app = tmp_path / "app.py"
    app.write_text(APP)
    cmd = [sys.executable, "-m", "iotune.tune_cli", "--space", str(HERE / "fake_space.toml"),
           "--launcher", "none", "--no-preload", "--objective", "kernel", "--no-progress",
           "--trials", str(trials), "--storage", f"journal:{tmp_path / 'j.journal'}",
           "--study", "s", "--search-only", "--out", str(tmp_path / name), "--",
           sys.executable, str(app)]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=tmp_path, env={**os.environ, "RUNS_LOG": str(tmp_path / "runs"),
                                               **env})  # fmt: skip


def _runs(tmp_path):
    path = tmp_path / "runs"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def _study(tmp_path):
    store = JournalStorage(JournalFileBackend(str(tmp_path / "j.journal")))
    return optuna.load_study(study_name="s", storage=store)


def _until(what, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.1)
    return False


def _baseline_started(tmp_path):
    return any(what == "start" and not s for what, _, _, s in _runs(tmp_path))


def _no_trial_before_the_baseline(tmp_path):
    runs = _runs(tmp_path)
    ended = min(t for what, t, _, s in runs if what == "end" and not s)
    early = [s for what, t, _, s in runs if what == "start" and s and t < ended]
    assert not early, f"trials ran before the baseline had ended: {early}"
    # every configuration the study holds was run (one proposed again is not rerun: the
    # starts are not one per trial; a CI run had 7 for 8 trials)
    done = [t for t in _study(tmp_path).trials if t.state == optuna.trial.TrialState.COMPLETE]
    keys = {t.user_attrs.get("key") for t in done}
    assert len(keys) >= 2 and sum(1 for what, *_ in runs if what == "start") >= len(keys)


def test_a_worker_started_during_the_baseline_waits_for_it(tmp_path):
    env = {"RELEASE": str(tmp_path / "release")}
    first = Worker(tmp_path, "w1", env)
    second = None
    try:
        assert _until(lambda: _baseline_started(tmp_path)), first.end()
        second = Worker(tmp_path, "w2", env)
        assert _until(lambda: second.says("waiting for the baseline, run by worker")), second.lines
        time.sleep(1)  # the second worker runs nothing meanwhile
        (tmp_path / "release").touch()
        (rc2, out2), (rc1, out1) = second.end(), first.end()
    finally:
        for w in (first, second):
            if w is not None:
                w.kill()
    assert (rc1, rc2) == (0, 0), out1 + out2
    assert "the baseline has run (trial 0): searching" in out2
    _no_trial_before_the_baseline(tmp_path)
    origins = [t.user_attrs.get("origin") for t in _study(tmp_path).trials]
    assert origins.count("defaults") == 1 and "guess: small buffer" in origins


def test_workers_started_together_run_no_trial_before_the_baseline(tmp_path):
    env = {"RELEASE": str(tmp_path / "release")}
    workers = [Worker(tmp_path, f"w{i}", env) for i in range(2)]
    try:
        assert _until(lambda: _baseline_started(tmp_path) and all(
            w.says("study 's'") for w in workers))  # fmt: skip
        time.sleep(2)  # both in their search: one runs the baseline, the other waits
        (tmp_path / "release").touch()
        ends = [w.end() for w in workers]
    finally:
        for w in workers:
            w.kill()
    assert [rc for rc, _ in ends] == [0, 0], ends
    _no_trial_before_the_baseline(tmp_path)


def test_the_baseline_of_a_killed_worker_is_run_by_the_waiting_one(tmp_path):
    first = Worker(tmp_path, "w1", {"RELEASE": str(tmp_path / "never")})
    second = None
    try:
        assert _until(lambda: _baseline_started(tmp_path)), first.end()
        second = Worker(tmp_path, "w2", {}, trials=4)
        assert _until(lambda: second.says("waiting for the baseline")), second.lines
        first.proc.send_signal(signal.SIGKILL)  # no chance to say anything
        first.proc.wait()  # reaped, as its shell or batch system would
        rc2, out2 = second.end()
    finally:
        for what, _, pid, s in _runs(tmp_path):
            if what == "start" and not s:
                try:
                    os.kill(pid, signal.SIGKILL)  # the killed worker's application
                except ProcessLookupError:
                    pass
        for w in (first, second):
            if w is not None:
                w.kill()
    assert rc2 == 0, out2
    assert "this worker runs it" in out2, out2
    base = [t for t in _study(tmp_path).trials if t.user_attrs.get("origin") == "defaults"]
    assert [(t.state.name, t.user_attrs.get("status")) for t in base] == [
        ("FAIL", "interrupted"),
        ("COMPLETE", "ok"),
    ]
    assert base[1].user_attrs["worker"].endswith(f":{second.proc.pid}")


def test_a_baseline_that_failed_in_another_worker_stops_the_waiting_one():
    sp = space.load(HERE / "fake_space.toml")
    study = optuna.create_study()
    warmstart.enqueue(study, sp, True)
    other = study.ask()  # another worker of this host (alive: this process) runs it
    other.set_user_attr("worker", f"{loop.socket.gethostname()}:{os.getpid()}")

    def fail():
        time.sleep(0.5)
        other.set_user_attr("status", "failed")
        other.set_user_attr("message", "app: cannot open input.cfg")
        study.tell(other, state=optuna.trial.TrialState.FAIL)

    threading.Thread(target=fail).start()
    said = []
    with pytest.raises(loop.BaselineFailed) as e:
        loop.wait_for_baseline(study, sp, True, {}, said.append, 30)
    assert e.value.outcome.message == "app: cannot open input.cfg"
    assert e.value.where == f"trial 0, worker {loop.socket.gethostname()}:{os.getpid()}"
    assert said and said[0].startswith("waiting for the baseline")


def test_a_worker_waits_for_the_baseline_only_so_long(monkeypatch):
    sp = space.load(HERE / "fake_space.toml")
    study = optuna.create_study()
    warmstart.enqueue(study, sp, True)
    study.ask().set_user_attr("worker", f"{loop.socket.gethostname()}:{os.getpid()}")
    monkeypatch.setattr(loop, "BASELINE_POLL_S", 0.05)
    with pytest.raises(loop.BaselineWait, match="nothing was run here"):
        loop.wait_for_baseline(study, sp, True, {}, None, 0.3)


def test_a_baseline_whose_worker_died_before_queueing_the_guesses_is_not_waited_for():
    """A tuner killed (SIGKILL) after its baseline ran but before it queued the guesses: a
    worker of the same host queues them at once, not after AFTER_BASELINE_S (30 s)."""
    sp = space.load(HERE / "fake_space.toml")
    study = optuna.create_study()
    warmstart.enqueue(study, sp, True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    base = study.ask()
    base.set_user_attr("worker", f"{loop.socket.gethostname()}:{dead.pid}")
    study.set_user_attr(warmstart.PENDING, True)
    study.tell(base, 0.05)
    start = time.monotonic()
    loop.wait_for_baseline(study, sp, True, {}, None, 60)
    assert time.monotonic() - start < 5
    assert not study.user_attrs.get(warmstart.PENDING)
