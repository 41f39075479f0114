"""A command refused before it runs anything leaves no new file or directory behind (an outside
tester found empty results directories after refused launches: the output directory held by
another run, no such study, a study measured with other options)."""

import multiprocessing
import subprocess
import sys
from pathlib import Path

from iotune import identity

HERE = Path(__file__).resolve().parent
FAKE_OPTS = ["--space", str(HERE / "fake_space.toml"), "--launcher", "none", "--no-preload",
             "--objective", "kernel", "--no-progress", "--no-kb"]  # fmt: skip
FAKE = ["--", sys.executable, str(HERE / "fake_app.py")]


def tune(cwd, *args):
    return subprocess.run([sys.executable, "-m", "iotune.tune_cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd)  # fmt: skip


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _hold(out, ready, release):
    with identity.running_alone(out):
        ready.set()
        release.wait(30)


def test_a_run_refused_for_a_held_output_directory_makes_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold, args=(out, ready, release))
    p.start()
    assert ready.wait(30)
    try:
        before = _tree(tmp_path)
        r = tune(tmp_path, *FAKE_OPTS, "--out", out, "--workdir", tmp_path / "new" / "work",
                 *FAKE)  # fmt: skip
        assert r.returncode == 1 and "another `iotune tune`" in r.stderr, r.stderr
        assert _tree(tmp_path) == before  # the held directory as it was; no --workdir made
    finally:
        release.set()
        p.join(30)


def test_finish_only_of_a_missing_study_makes_no_directory(tmp_path):
    r = tune(tmp_path, *FAKE_OPTS, "--finish-only", "--study", "nosuch")
    assert r.returncode == 1 and "no study 'nosuch'" in r.stderr, r.stderr
    r = tune(tmp_path, *FAKE_OPTS, "--finish-only", "--study", "nosuch", "--out", "a/b/c")
    assert r.returncode == 1 and "no study 'nosuch'" in r.stderr, r.stderr
    assert _tree(tmp_path) == []


def test_a_study_refused_for_other_options_makes_no_directory(tmp_path):
    common = [*FAKE_OPTS, "--study", "s", "--storage", f"sqlite:///{tmp_path}/s.db",
              "--trials", 2, "--search-only"]  # fmt: skip
    r = tune(tmp_path, *common, "--out", tmp_path / "first", *FAKE)
    assert r.returncode == 0, r.stdout + r.stderr
    before = _tree(tmp_path)
    r = tune(tmp_path, *common, "--sync", "--out", tmp_path / "second" / "out", *FAKE)
    assert r.returncode == 1 and "measured with other options" in r.stderr, r.stderr
    assert _tree(tmp_path) == before


def test_a_run_that_ran_the_application_keeps_its_study(tmp_path):
    """The baseline failed: the study stays, so that the corrected command runs it again."""
    r = tune(tmp_path, *FAKE_OPTS, "--out", tmp_path / "o", "--", sys.executable, "-c",
             "import sys; sys.exit('boom')")  # fmt: skip
    assert r.returncode == 1 and "boom" in r.stderr
    assert (tmp_path / "o" / "study.db").is_file()


def test_only_the_directories_made_and_unused_are_removed(tmp_path):
    (tmp_path / "kept").mkdir()
    made = identity.new_directories(tmp_path / "kept" / "a" / "b", tmp_path / "c", None)
    assert made == [tmp_path / "kept" / "a" / "b", tmp_path / "kept" / "a", tmp_path / "c"]
    for d in made:
        d.mkdir(parents=True, exist_ok=True)
    (tmp_path / "c" / "summary.json").write_text("{}")  # a study's: the directory stays
    with identity.running_alone(tmp_path / "kept" / "a" / "b"):
        identity.remove_unused(made)  # held by a run: it stays
    assert (tmp_path / "kept" / "a" / "b" / identity.LOCK).exists()
    (tmp_path / "kept" / "a" / "b" / "scratch").mkdir()
    identity.remove_unused(made)
    assert _tree(tmp_path) == ["c", "c/summary.json", "kept"]
