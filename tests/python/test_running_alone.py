"""One `iotune tune` at a time writes a study's results (an outside tester started the same
command twice: both ran trials on the same files under each other's load, and the last to
finish overwrote the other's report)."""

import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from iotune import identity

HERE = Path(__file__).resolve().parent


def _hold(out, ready, release):
    with identity.running_alone(out):
        ready.set()
        release.wait(30)


def _holder(out):
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold, args=(out, ready, release))
    p.start()
    assert ready.wait(30)
    return p, release


def test_a_second_run_with_the_same_out_is_refused_until_the_first_ends(tmp_path):
    p, release = _holder(tmp_path)
    try:
        with pytest.raises(identity.Busy, match=rf"process {p.pid}\) is writing its results"):
            with identity.running_alone(tmp_path):
                pass
    finally:
        release.set()
        p.join(30)
    with identity.running_alone(tmp_path):  # free again once the first has ended
        pass
    with identity.running_alone(tmp_path):  # and again: the holder lets go when it leaves
        pass


def test_another_out_is_not_held(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    p, release = _holder(tmp_path / "a")
    try:
        with identity.running_alone(tmp_path / "b"):
            pass
    finally:
        release.set()
        p.join(30)


def test_tune_refuses_a_second_run_of_the_same_study_with_one_message(tmp_path):
    (tmp_path / "out").mkdir()
    p, release = _holder(tmp_path / "out")
    try:
        r = subprocess.run(
            [sys.executable, "-m", "iotune", "tune", "--space", HERE / "fake_space.toml",
             "--launcher", "none", "--no-preload", "--no-progress", "--no-kb", "--trials", "2",
             "--out", tmp_path / "out", "--", sys.executable, HERE / "fake_app.py"],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
    finally:
        release.set()
        p.join(30)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "another `iotune tune`" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out" / "trials.csv").exists()
