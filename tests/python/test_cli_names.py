"""Names and exits (issue 24 item 6): a script's name for interpreter studies, every option's
default stated in --help (each subcommand walked, so that none can regress), one meaning per
option name (`adapt --kb` renamed --kb-file, the old name deprecated but working)."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iotune import cli, identity


def options():
    """(command path, action) of every option of every subcommand."""

    def walk(p, path):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    yield from walk(sub, [*path, name])
            elif a.option_strings and a.help != argparse.SUPPRESS:
                yield " ".join(path), a, p

    yield from walk(cli.build_parser(), ["iotune"])


def test_every_option_with_a_value_states_its_default():
    """An option that takes a value says what happens without it ("default ..."), and one
    with a value as default names that value."""
    missing, wrong = [], []
    for where, a, parser in options():
        if a.nargs == 0 or isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            continue  # flags: off unless given
        text = parser._get_formatter()._expand_help(a) if a.help else ""
        if "default" not in text.lower():
            missing.append(f"{where} {a.option_strings[0]}")
        elif isinstance(a.default, (int, float, str, Path)) and a.default not in ("", None):
            shown = f"{a.default:g}" if isinstance(a.default, float) else str(a.default)
            if shown not in text:
                wrong.append(f"{where} {a.option_strings[0]}: {a.default!r} not in {text!r}")
    assert not missing, "no default stated:\n" + "\n".join(missing)
    assert not wrong, "\n".join(wrong)


def test_the_walk_sees_every_subcommand():
    seen = {where for where, _, _ in options()}
    for cmd in ("iotune tune", "iotune skel compare", "iotune skel run", "iotune kb suggest",
                "iotune adapt", "iotune advise", "iotune profile", "iotune run"):  # fmt: skip
        assert cmd in seen


@pytest.mark.parametrize(
    "command,name",
    [
        (["python3", "script.py", "-n", "2"], "script.py"),
        (["mpiexec.mpich", "-n", "2", "python3", "-u", "/a/b/train.py", "x"], "train.py"),
        (["/usr/bin/python3.11", "-W", "ignore", "t.py"], "t.py"),
        (["python3", "-m", "pkg.tool", "a"], "pkg.tool"),
        (["python3", "-c", "print(1)"], "python3"),
        (["sh", "run.sh"], "run.sh"),
        (["mpirun.openmpi", "-np", "2", "./vpicio", "x.py"], "vpicio"),
    ],
)
def test_interpreter_studies_are_named_after_their_script(command, name):
    got = identity.default_name(command)
    assert got.rsplit("-", 1)[0] == name and len(got.rsplit("-", 1)[1]) == 8


def test_adapt_kb_is_kb_file_and_the_old_name_still_works_and_says_so_once(tmp_path):
    def adapt(*args):
        return subprocess.run([sys.executable, "-m", "iotune", "adapt", *map(str, args), "--",
                               "true"], capture_output=True, text=True, timeout=60)  # fmt: skip

    new = adapt("--kb-file", tmp_path)
    assert new.returncode == 2 and new.stderr.strip() == f"iotune adapt: --kb-file {tmp_path}: " \
        "a directory"  # fmt: skip
    old = adapt("--kb", tmp_path / "x", "--kb", tmp_path)  # the last one counts, as before
    lines = old.stderr.strip().splitlines()
    assert old.returncode == 2 and len(lines) == 2, old.stderr
    assert "--kb is deprecated: use --kb-file" in lines[0]
    assert lines[1] == f"iotune adapt: --kb-file {tmp_path}: a directory"
    assert "--kb-file" in subprocess.run([sys.executable, "-m", "iotune", "adapt", "--help"],
                                         capture_output=True, text=True).stdout  # fmt: skip


def test_sigterm_in_the_final_phases_of_tune_exits_143(tmp_path):
    """SIGTERM (a job's time limit) exits 128 + 15 in every phase; once 130 came from a fixed
    `return 130` in tune's handler. The search phase is tested in test_study.py; this is the
    re-measurement of the leaders."""
    import os
    import signal
    import time

    here = Path(__file__).resolve().parent
    space = tmp_path / "s.toml"
    space.write_text('[params.cb_buffer_size]\nvalues = ["1M", "16M"]\ndefault = "16M"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "iotune", "tune", "--space", str(space), "--launcher", "none",
         "--no-preload", "--objective", "kernel", "--no-progress", "--no-kb", "--trials", "2",
         "--out", str(tmp_path / "out"), "--", sys.executable, str(here / "fake_app.py")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "FAKE_APP_PAUSE": "0.5"},
    )  # fmt: skip
    seen = []
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        seen.append(line)
        if "re-measuring" in line or time.monotonic() > deadline:
            break
    assert "re-measuring" in seen[-1], "".join(seen)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 143, "".join(seen) + rest
    assert "stopped by SIGTERM" in rest


def test_tune_takes_o_for_out_as_profile_does():
    """`iotune profile -o` and `iotune tune --out`: tune takes -o too (no other option of tune
    is -o), and its --help says so."""
    from iotune.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["tune", "-o", "res", "--", "./app"])
    assert str(args.out) == "res"
    env = {**os.environ, "COLUMNS": "200"}
    cmd = [sys.executable, "-m", "iotune", "tune", "--help"]
    text = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env).stdout
    assert "-o OUT, --out OUT" in text
