"""Studies end to end through `iotune tune` (python -m iotune.tune_cli): a full study with a
fake application, resume after a killed tuner, crashing and hanging trials, two workers
sharing one study, and a real short study of a kernel under mpiexec -n 2 with the runtime."""

import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import pytest

from iotune import controlfile

HERE = Path(__file__).resolve().parent
FAKE = [sys.executable, str(HERE / "fake_app.py")]
SPACE = str(HERE / "fake_space.toml")
FAKE_OPTS = ["--launcher", "none", "--no-preload", "--objective", "kernel", "--no-progress",
             "--verify-pairs", "6"]  # fmt: skip
# for tests of what happens around a study, not of its final phases: one leader, no reduction
QUICK_FINISH = ["--leaders", 1, "--no-partial"]


def tune(*args, env=None, timeout=120, cwd=None, **kw):
    """`iotune tune ARGS` in cwd (default: a fresh directory: trials run where the tuner is
    started, and the fake application writes its files there)."""
    cmd = [sys.executable, "-m", "iotune.tune_cli", *map(str, args)]
    full_env = {**os.environ, **(env or {})}
    cwd = cwd or tempfile.mkdtemp(prefix="tune-cwd-")
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd, **kw
    )


def start(*args, env=None, cwd=None):
    cmd = [sys.executable, "-m", "iotune.tune_cli", *map(str, args)]
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd or tempfile.mkdtemp(prefix="tune-cwd-"),
    )


def load(out: Path, name: str, storage: str | None = None):
    return optuna.load_study(study_name=name, storage=storage or f"sqlite:///{out}/study.db")


def test_full_study_with_a_fake_app(tmp_path):
    out = tmp_path / "out"
    r = tune(
        "--space",
        SPACE,
        *FAKE_OPTS,
        "--trials",
        14,
        "--out",
        out,
        "--study",
        "s",
        "--seed",
        1,
        "--",
        *FAKE,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    for name in (
        "best.xml",
        "trials.csv",
        "report.html",
        "trials.png",
        "verify.png",
        "params.png",
        "summary.json",
    ):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    # the fake app is 3x faster with cb_buffer_size=1M (a rule-based guess): it must be found,
    # verified as significant and written to best.xml
    assert summary["final"]["improved"], summary["verdict"]
    best = controlfile.parse_file(out / "best.xml")
    assert {s.name: s.value for s in best.settings}.get("cb_buffer_size") == "1048576"
    assert summary["final"]["speedup"] > 1.5
    assert "faster than the defaults" in summary["verdict"]
    rows = list(csv.DictReader(open(out / "trials.csv")))
    assert len(rows) <= 14 and rows[0]["origin"] == "defaults"
    assert summary["trials"] == len(rows)  # those run, not guesses still queued
    # it stops early or at its budget, and says why; every application run is counted
    assert summary["stopped"].startswith(("local optimum", "no progress")) or len(rows) == 14
    runs = summary["runs"]
    assert runs["search"] == sum(1 for r in rows if r["status"] != "forbidden")
    assert runs["total"] == sum(v for k, v in runs.items() if k != "total")
    assert runs["verification"] >= 2 * summary["final"]["pairs"]
    assert rows[1]["origin"] == "guess: small buffer"
    # slow trials (romio_cb_write=disable: 3 s) are capped, never completed as fast
    for row in rows:
        if row["romio_cb_write"] == "disable":
            assert row["status"] in ("capped", "forbidden"), row
    assert list((out / "scratch").iterdir()) == []
    assert "faster than the defaults" in (out / "report.html").read_text()


def test_no_better_setting_is_said_plainly(tmp_path):
    space = tmp_path / "flat.toml"  # nothing in this space changes the fake app's time
    space.write_text(
        '[params.romio_ds_write]\nvalues = ["automatic", "enable"]\ndefault = "automatic"\n'
    )
    out = tmp_path / "out"
    r = tune(
        "--space",
        space,
        *FAKE_OPTS,
        "--trials",
        4,
        "--out",
        out,
        "--study",
        "flat",
        "--repeat",
        1,
        "--",
        *FAKE,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert not summary["final"]["improved"]
    assert summary["verdict"].startswith("no better setting found")
    assert controlfile.parse_file(out / "best.xml").settings == []
    assert "no better setting found" in r.stdout


def test_crashing_and_hanging_trials_are_failures(tmp_path):
    space = tmp_path / "bad.toml"
    space.write_text(
        '[params.fill_time]\nvalues = ["ifset", "alloc", "never"]\ndefault = "ifset"\n'
        '[params.cb_buffer_size]\nvalues = ["1M", "16M"]\ndefault = "16M"\n'
        '[[guesses]]\nname = "crash"\nsettings = { fill_time = "alloc" }\n'
        '[[guesses]]\nname = "hang"\nsettings = { fill_time = "never" }\n'
    )
    out = tmp_path / "out"
    r = tune(
        "--space",
        space,
        *FAKE_OPTS,
        "--trials",
        4,
        "--timeout",
        2,
        "--cap",
        0,
        "--out",
        out,
        "--study",
        "bad",
        "--repeat",
        1,
        "--",
        *FAKE,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {row["origin"]: row for row in csv.DictReader(open(out / "trials.csv"))}
    assert rows["guess: crash"]["status"] == "crashed"
    assert rows["guess: crash"]["state"] == "FAIL" and rows["guess: crash"]["value"] == ""
    assert rows["guess: hang"]["status"] == "timeout"
    assert rows["guess: hang"]["state"] == "FAIL"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["best_settings"].get("fill_time") is None
    assert list((out / "scratch").iterdir()) == []


def test_resume_after_the_tuner_is_killed(tmp_path):
    out = tmp_path / "out"
    log = tmp_path / "runs.log"
    args = [
        "--space",
        SPACE,
        *FAKE_OPTS,
        "--trials",
        10,
        "--out",
        out,
        "--study",
        "r",
        "--cap",
        0,
        "--repeat",
        1,
        *QUICK_FINISH,  # the resume is checked; the final phases: test_full_study_with_a_fake_app
        "--",
        *FAKE,
    ]
    env = {"FAKE_APP_LOG": str(log), "SLOW_S": "0.5"}
    # killed in the middle of a trial (its application paused): a kill between two trials
    # can leave one not yet claimed, which the resume waits SETUP_GRACE_S for (30 s; that
    # case: test_trial_orphaned_before_it_was_claimed_is_recovered)
    pids = tmp_path / "app.pids"
    proc = start(*args, env={**env, "FAKE_APP_PAUSE": "0.4", "FAKE_APP_PIDS": str(pids)})
    deadline = time.monotonic() + 60
    done, launched = 0, None
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if launched is not None and len(_lines(pids)) > launched:
            break  # the next trial's application is running
        if launched is None and (out / "study.db").exists():
            try:
                s = load(out, "r")
                done = sum(t.state.name == "COMPLETE" for t in s.trials)
            except Exception:  # noqa: BLE001 - the database is being created
                done = 0
            if done >= 4:
                launched = len(_lines(pids))
    assert proc.poll() is None, proc.stdout.read()
    os.kill(proc.pid, signal.SIGKILL)  # no chance to clean up
    proc.wait()
    before = {t.number: t.state.name for t in load(out, "r").trials}
    assert sum(st == "COMPLETE" for st in before.values()) >= 4
    r = tune(*args, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "continued" in r.stdout
    after = load(out, "r").trials
    counted = [t for t in after if t.state.name != "WAITING"]
    assert len(counted) == 10
    assert all(t.state.name in ("COMPLETE", "PRUNED", "FAIL") for t in after), [
        (t.number, t.state.name, t.user_attrs) for t in after
    ]
    for t in after:  # what was done before the kill is kept, not redone
        if before.get(t.number) == "COMPLETE":
            assert t.state.name == "COMPLETE"
    origins = [t.user_attrs.get("origin") for t in after]
    assert origins.count("defaults") == 1 and origins.count("guess: small buffer") == 1
    assert (out / "report.html").is_file()
    assert list((out / "scratch").iterdir()) == []  # the killed run's scratch is gone too


def test_two_workers_share_one_study(tmp_path):
    journal = tmp_path / "shared" / "study.journal"
    common = [
        "--space",
        SPACE,
        *FAKE_OPTS,
        "--trials",
        16,
        "--storage",
        f"journal:{journal}",
        "--study",
        "shared",
        "--search-only",
        "--cap",
        0,
        "--",
        *FAKE,
    ]
    workers = [start("--out", tmp_path / f"w{i}", *common) for i in range(2)]
    outputs = [w.communicate(timeout=120)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    s = optuna.load_study(
        study_name="shared", storage=JournalStorage(JournalFileBackend(str(journal)))
    )
    trials = [t for t in s.trials if t.state.name != "WAITING"]
    assert 16 <= len(trials) <= 17  # each worker checks the budget before asking
    assert len({t.user_attrs["worker"] for t in trials}) == 2
    origins = [t.user_attrs.get("origin") for t in trials]
    assert origins.count("defaults") == 1
    # then one of them (or anyone) verifies and reports
    r = tune(
        "--storage",
        f"journal:{journal}",
        "--study",
        "shared",
        "--space",
        SPACE,
        "--finish-only",
        "--out",
        tmp_path / "final",
        "--repeat",
        1,
        *QUICK_FINISH,  # a shared study finished; final phases: test_full_study_with_a_fake_app
        "--launcher",
        "none",
        "--no-preload",
        "--no-progress",
        "--objective",
        "kernel",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "final" / "report.html").is_file()


def test_real_kernel_study_under_mpiexec(tmp_path, libiotune, kernel):
    kernel("gcrmio")
    out = Path("out")  # relative, as users give it: the profile must still be found
    start_t = time.monotonic()
    r = tune(
        "--kernel",
        "gcrmio",
        "--trials",
        8,
        "--out",
        out,
        "--study",
        "real",
        "--leaders",
        2,
        "--repeat",
        2,
        "--verify-pairs",
        5,
        "--no-partial",
        "--no-progress",
        "--seed",
        0,
        env={"IOTUNE_LIB": str(libiotune)},
        timeout=180,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert time.monotonic() - start_t < 120
    out = tmp_path / out
    rows = list(csv.DictReader(open(out / "trials.csv")))
    assert len(rows) == 8
    ok = [row for row in rows if row["status"] == "ok"]
    assert len(ok) >= 5
    assert {row["source"] for row in ok} == {"profile"}  # the runtime's io.time_s
    assert rows[1]["config"] == "fill_time=never"  # the first rule-based guess
    assert (out / "report.html").is_file() and (out / "trials.png").is_file()
    assert controlfile.parse_file(out / "best.xml").ok
    assert list((out / "scratch").iterdir()) == []
    assert not list(out.rglob("*.h5"))


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_stops_the_running_trial_and_cleans_up(tmp_path, sig, status):
    """Ctrl-C, or SIGTERM (a job's time limit): the trial's application is stopped, the trial
    recorded as interrupted, its scratch directory removed; exit status 128 + the signal."""
    space = tmp_path / "slow.toml"
    space.write_text(
        '[params.romio_cb_write]\nvalues = ["automatic", "disable"]\ndefault = "automatic"\n'
        '[[guesses]]\nname = "slow"\nsettings = { romio_cb_write = "disable" }\n'
    )
    out = tmp_path / "out"
    pids = tmp_path / "pids"
    args = ["--space", space, *FAKE_OPTS, "--trials", 3, "--cap", 0, "--out", out,
            "--study", "c", "--", *FAKE]  # fmt: skip
    proc = start(*args, env={"SLOW_S": "60", "FAKE_APP_PIDS": str(pids)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(_lines(pids)) < 2:
        time.sleep(0.1)  # the defaults ran; the slow guess is running
    assert len(_lines(pids)) == 2, proc.stdout.read() if proc.poll() is not None else ""
    time.sleep(0.5)
    proc.send_signal(sig)
    text = proc.communicate(timeout=30)[0]
    assert proc.returncode == status, text
    assert "run the same command again" in text
    slow = load(out, "c").trials[1]
    assert slow.state.name == "FAIL" and slow.user_attrs["status"] == "interrupted"
    time.sleep(0.5)
    assert not Path(f"/proc/{_lines(pids)[1]}").exists()  # the application was stopped
    assert list((out / "scratch").iterdir()) == []
    if sig != signal.SIGTERM:
        return
    # continued: the stopped guess runs again and did not count against the budget
    r = tune(*QUICK_FINISH, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the trials a signal stopped are run again" in r.stdout
    trials = load(out, "c").trials
    done = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(done) == 3, [(t.number, t.state.name) for t in trials]
    again = [t for t in done if t.user_attrs.get("requeued_from") == slow.number]
    assert len(again) == 1 and again[0].params == slow.params


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_trial_orphaned_before_it_was_claimed_is_recovered(monkeypatch):
    """A tuner killed between creating a trial and naming its worker leaves a RUNNING trial
    with no owner: the next run waits out the set-up grace, then marks it interrupted. A
    trial claimed by a live worker (this process) is left alone."""
    from iotune import study as study_mod
    from iotune.search import loop

    monkeypatch.setattr(study_mod, "SETUP_GRACE_S", 0.2)
    s = optuna.create_study()
    orphan = s.ask()
    owned = s.ask()
    owned.set_user_attr("worker", loop.WORKER)
    assert study_mod.recover_stale(s) == 1
    states = {t.number: (t.state.name, t.user_attrs.get("status")) for t in s.trials}
    assert states[orphan.number] == ("FAIL", "interrupted")
    assert states[owned.number] == ("RUNNING", None)


def _app_script(where: Path, body: str = "") -> Path:
    """An executable ./app in `where`: the fake application, run as users run theirs."""
    app = where / "app"
    app.write_text(f"#!{sys.executable}\n{body}" + (HERE / "fake_app.py").read_text())
    app.chmod(0o755)
    return app


def test_relative_program_runs_from_the_users_directory(tmp_path):
    """`cd somewhere && iotune tune -- ./app`: trials run where the command was given, so the
    relative program is found (trials in scratch directories all failed and the study called
    the defaults best)."""
    somewhere = tmp_path / "somewhere"
    somewhere.mkdir()
    _app_script(somewhere)
    r = tune("--space", SPACE, *FAKE_OPTS, *QUICK_FINISH, "--trials", 6, "--repeat", 1, "--",
             "./app", cwd=somewhere)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"each trial runs in {somewhere}" in r.stdout
    (out,) = (somewhere / "iotune-results").iterdir()
    assert out.name.startswith("app-")  # named after the application, not the launcher
    rows = list(csv.DictReader(open(out / "trials.csv")))
    assert rows[0]["status"] == "ok", rows[0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ran_in"] == str(somewhere)
    assert (somewhere / "data.out").is_file()  # its files land where it ran


def test_isolated_trials_resolve_the_relative_program(tmp_path):
    somewhere = tmp_path / "somewhere"
    somewhere.mkdir()
    _app_script(somewhere)
    r = tune("--space", SPACE, *FAKE_OPTS, "--trials", 3, "--repeat", 1, "--isolate",
             "--out", tmp_path / "out", "--", "./app", cwd=somewhere)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert str(somewhere / "app") in r.stdout and "scratch directories" in r.stdout
    assert not (somewhere / "data.out").exists()
    assert list((tmp_path / "out" / "scratch").iterdir()) == []


def test_a_failing_application_stops_the_study_with_its_message(tmp_path):
    _app_script(tmp_path, 'import sys\nsys.exit("app: cannot open input.cfg")\n')
    r = tune("--space", SPACE, *FAKE_OPTS, "--trials", 6, "--out", tmp_path / "out",
             "--", "./app", cwd=tmp_path)  # fmt: skip
    assert r.returncode != 0
    assert "cannot open input.cfg" in r.stderr and "exit status 1" in r.stderr
    assert "no better setting" not in r.stdout + r.stderr
    s = optuna.load_study(study_name=None, storage=f"sqlite:///{tmp_path}/out/study.db")
    assert [t.state.name for t in s.trials if t.state.name != "WAITING"] == ["FAIL"]


def test_an_error_the_application_prints_on_stdout_is_shown(tmp_path):
    # IOR and other MPI benchmarks print their argument errors on standard output, then abort
    body = 'import sys\nprint("ERROR: block size must be a multiple")\n'
    _app_script(tmp_path, body + 'sys.stderr.write("Abort(-1) on node 0\\n")\nsys.exit(255)\n')
    r = tune("--space", SPACE, *FAKE_OPTS, "--trials", 6, "--out", tmp_path / "out",
             "--", "./app", cwd=tmp_path)  # fmt: skip
    assert r.returncode != 0
    assert "ERROR: block size must be a multiple" in r.stderr, r.stderr
    assert "Abort(-1) on node 0" in r.stderr and "exit status 255" in r.stderr


def test_another_command_into_the_same_output_directory_is_refused(tmp_path):
    out = tmp_path / "out"
    common = ["--space", SPACE, *FAKE_OPTS, *QUICK_FINISH, "--trials", 3, "--repeat", 1,
              "--out", out]  # fmt: skip
    r = tune(*common, "--", *FAKE)
    assert r.returncode == 0, r.stdout + r.stderr
    r = tune(*common, "--", *FAKE, "--other-input")
    assert r.returncode != 0
    assert "another command" in r.stderr
    assert "--other-input" in r.stderr and FAKE[1] in r.stderr  # both commands named
    r = tune(*common, "--allow-other-command", "--", *FAKE, "--other-input")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_same_study_name_with_another_command_is_refused(tmp_path):
    common = ["--space", SPACE, *FAKE_OPTS, *QUICK_FINISH, "--trials", 3, "--repeat", 1,
              "--study", "x"]  # fmt: skip
    r = tune(*common, "--out", tmp_path / "a", "--storage", f"sqlite:///{tmp_path}/s.db",
             "--", *FAKE)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    r = tune(*common, "--out", tmp_path / "b", "--storage", f"sqlite:///{tmp_path}/s.db",
             "--", *FAKE, "2")  # fmt: skip
    assert r.returncode != 0 and "study 'x' was made by another command" in r.stderr


def test_verify_pairs_that_can_never_show_a_gain_are_refused(tmp_path):
    r = tune("--space", SPACE, *FAKE_OPTS, "--verify-pairs", 4, "--out", tmp_path, "--", *FAKE)
    assert r.returncode == 2 and "can never show a gain" in r.stderr
    assert not (tmp_path / "study.db").exists()


@pytest.mark.parametrize("pairs", [0, -3])
def test_verify_pairs_below_one_are_refused_in_one_line(tmp_path, pairs):
    """--verify-pairs 0 was a ValueError traceback from search/sequential.py."""
    r = tune("--space", SPACE, *FAKE_OPTS, "--verify-pairs", pairs, "--out", tmp_path, "--", *FAKE)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and f"--verify-pairs {pairs}" in r.stderr
    assert not (tmp_path / "study.db").exists()


def test_mpiio_only_application_is_not_tuned_for_hdf5(tmp_path, libiotune, test_prog):
    """A plain MPI-IO program: no HDF5 parameter in the searched space or in best.xml."""
    from iotune import params

    probe = test_prog("mpiio_probe")
    out = tmp_path / "out"
    r = tune("--trials", 6, "--leaders", 2, "--repeat", 1, "--verify-pairs", 5, "--no-progress",
             "--out", out, "--seed", 0, "--", probe, "probe.dat",
             env={"IOTUNE_LIB": str(libiotune)}, timeout=240, cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((out / "summary.json").read_text())
    hdf5 = {n for n in summary["space_params"] if params.get(n).layer == "hdf5"}
    assert hdf5 and hdf5 <= set(summary["not_searched"]), summary["not_searched"]
    assert "made no HDF5 calls" in r.stdout
    s = optuna.load_study(study_name=summary["study"], storage=summary["storage"])
    for t in s.trials[1:]:
        assert not hdf5 & set(t.user_attrs.get("settings", {})), t.user_attrs
    best = controlfile.parse_file(out / "best.xml")
    assert not {x.name for x in best.settings} & hdf5


def test_a_study_stopped_by_a_failed_baseline_runs_it_again(tmp_path):
    _app_script(tmp_path, 'import os, sys\nif os.environ.get("APP_FAIL"):\n    sys.exit("boom")\n')
    args = ["--space", SPACE, *FAKE_OPTS, *QUICK_FINISH, "--trials", 4, "--repeat", 1, "--out",
            tmp_path / "o", "--", "./app"]  # fmt: skip
    assert tune(*args, env={"APP_FAIL": "1"}, cwd=tmp_path).returncode != 0
    r = tune(*args, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = list(csv.DictReader(open(tmp_path / "o" / "trials.csv")))
    assert [row["origin"] for row in rows[:2]] == ["defaults", "defaults"]
    assert [row["status"] for row in rows[:2]] == ["failed", "ok"]


@pytest.mark.parametrize("gain", ["-1", "100", "nan"])
def test_min_gain_outside_0_to_100_is_refused_in_one_line(tmp_path, gain):
    r = tune("--space", SPACE, *FAKE_OPTS, "--min-gain", gain, "--out", tmp_path, "--", *FAKE)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and f"--min-gain {gain}" in r.stderr
    assert not (tmp_path / "study.db").exists()
