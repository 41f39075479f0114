"""iotune.outputs: the one output writer, printable names, a failing standard output."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from iotune.outputs import OutputError, printable, printable_lines, write_output

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_new_and_regular_file_written(tmp_path):
    p = tmp_path / "out.txt"
    write_output(p, "one\n")
    assert p.read_text() == "one\n"
    p.chmod(0o640)
    write_output(p, "two\n")
    assert p.read_text() == "two\n"
    assert p.stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["out.txt"]  # no temporary file left


def test_symlink_followed_link_kept(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_output(link, "new")
    assert link.is_symlink()
    assert target.read_text() == "new"


def test_fifo_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="not a regular file"):
        write_output(fifo, "x", "page")
    assert fifo.is_fifo()


def test_device_refused_not_replaced():
    with pytest.raises(OutputError, match="/dev/null: cannot write the export"):
        write_output("/dev/null", "x", "export")
    assert Path("/dev/null").is_char_device()


def test_missing_directory_one_error(tmp_path):
    with pytest.raises(OutputError, match="cannot write the output"):
        write_output(tmp_path / "no" / "x", "x")


def test_printable():
    assert printable("plain name.h5") == "plain name.h5"
    assert printable("a\x1b[2Jb\x07") == "a\\x1b[2Jb\\x07"
    assert printable("x\nforged line") == "x\\nforged line"
    assert printable(b"\xff".decode("utf-8", "surrogateescape")) == "\\xff"
    assert printable("\u202eevil") == "\\u202eevil"
    assert printable_lines("a\x1b\nb") == "a\\x1b\nb"


def _cli(*args, stdout):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run(
        [sys.executable, "-m", "iotune", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["check", "--list"], ["kernels"]])
def test_full_stdout_one_line(args):
    with open("/dev/full", "w") as full:
        r = _cli(*args, stdout=full)
    assert r.returncode == 1
    assert r.stderr == "iotune: cannot write the output: No space left on device\n"


def test_kb_export_to_device_refused(tmp_path):
    from iotune import kb

    env_kb = tmp_path / "kb.sqlite"
    kb.KnowledgeBase(kb.resolve_url(str(env_kb))).close()
    r = _cli("kb", "--kb", str(env_kb), "export", "-o", "/dev/null", stdout=subprocess.PIPE)
    assert "Traceback" not in r.stderr
    assert r.returncode == 1, r.stderr
    assert "/dev/null: cannot write the knowledge-base export: not a regular file" in r.stderr


SKEL = """\
skel: 1
name: small
ranks: 1
parameters: {n: 4}
files:
  - name: out.dat
    api: posix
    writes:
      - {offset: 0, size: n}
"""


def test_skel_generate_onto_a_file_one_line(tmp_path):
    desc = tmp_path / "d.yaml"
    desc.write_text(SKEL)
    existing = tmp_path / "taken"
    existing.write_text("keep")
    r = _cli("skel", "generate", str(desc), "-o", str(existing), stdout=subprocess.PIPE)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    assert f"{existing}: cannot write the skeleton" in r.stderr
    assert existing.read_text() == "keep"


def test_skel_params_onto_a_device_refused(tmp_path):
    desc = tmp_path / "d.yaml"
    desc.write_text(SKEL)
    r = _cli("skel", "params", str(desc), "-o", "/dev/null", stdout=subprocess.PIPE)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "/dev/null: cannot write the parameters: not a regular file" in r.stderr


def test_show_files_prints_file_names_escaped(tmp_path):
    import json

    seed = sorted((Path(__file__).parent.parent / "data/fuzz/profile").glob("ok_*.json"))[0]
    data = json.loads(seed.read_text())
    assert data["files"], seed
    data["files"][0]["name"] = "/x/\x1b[31mred\x07\nforged line.h5"
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps(data))
    r = _cli("show", "--files", str(prof), stdout=subprocess.PIPE)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "\\x1b[31mred\\x07\\nforged line.h5" in r.stdout


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_tune_cli_entry_full_stdout_one_line():
    env = dict(os.environ, PYTHONPATH=SRC)
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "iotune.tune_cli", "--show-space"], stdout=full,
                           stderr=subprocess.PIPE, text=True, env=env, timeout=60)  # fmt: skip
    assert r.returncode == 1
    assert r.stderr == "iotune: cannot write the output: No space left on device\n"
