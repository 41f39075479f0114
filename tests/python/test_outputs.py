"""iotune.outputs: the one output writer, printable names, a failing standard output."""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iotune.outputs import (
    OutputError,
    printable,
    printable_lines,
    shell_join,
    shell_word,
    write_output,
)

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


def test_a_fifo_is_written_for_its_reader_and_refused_without_one(tmp_path, monkeypatch):
    """A FIFO was refused ("not a regular file"): now written in place for a reader that
    starts before or after the writer, and refused, not waited on forever, without one."""
    import threading
    import time

    from iotune import outputs

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []

    def read_later():
        time.sleep(0.3)  # the reader starts second, as in `iotune ... -o fifo & cat fifo`
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=read_later, daemon=True)
    reader.start()
    data = "x" * (1 << 20)  # more than a pipe holds: written as the reader reads
    try:
        assert write_output(fifo, data, "page") is False
    finally:
        reader.join(10)
        if reader.is_alive():  # the reader still waits for a writer: let it go
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert got == [data.encode()] and fifo.is_fifo()
    monkeypatch.setattr(outputs, "FIFO_WAIT_S", 0.2)
    with pytest.raises(OutputError, match=r"fifo: cannot write the page: no process opened the "
                       r"FIFO for reading within 0.2 s$"):  # fmt: skip
        write_output(fifo, "x", "page")
    assert fifo.is_fifo()


def test_devices_written_in_place_never_replaced(tmp_path):
    assert write_output("/dev/null", "x", "export") is False
    assert Path("/dev/null").is_char_device()
    if os.path.exists("/dev/full"):
        with pytest.raises(OutputError, match="^/dev/full: cannot write the export: No space"):
            write_output("/dev/full", "x", "export")
        assert Path("/dev/full").is_char_device()
    with pytest.raises(OutputError, match="cannot write the export: a directory"):
        write_output(tmp_path, "x", "export")
    blocks = [p for p in Path("/dev").iterdir() if p.is_block_device()]
    if blocks:
        with pytest.raises(OutputError, match="cannot write the export: a block device"):
            write_output(blocks[0], "x", "export")


def test_own_descriptors_are_named_through_their_links(tmp_path):
    from iotune.outputs import own_descriptor

    assert own_descriptor("/dev/stdout") == 1 and own_descriptor("/dev/stderr") == 2
    assert own_descriptor("/dev/fd/2") == 2 and own_descriptor("/proc/self/fd/7") == 7
    assert own_descriptor(f"/proc/{os.getpid()}/fd/1") == 1
    link = tmp_path / "err"
    link.symlink_to("/dev/stderr")
    assert own_descriptor(link) == 2
    assert own_descriptor(tmp_path / "file") is None and own_descriptor("/dev/null") is None
    assert own_descriptor("/proc/1/fd/1") is None or os.getpid() == 1


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


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_shell_word_pastes_into_bash_as_the_very_name():
    """A name with terminal controls was shown escaped (\\x1b) in a command to paste, which
    then named another file: now bash's $'...' quoting, printable and read back exactly; an
    ordinary name is shlex.quote's."""
    names = ["plain.xml", "with space's.xml", "ctl\x1b]0;t\x07\n\\x.xml", "caf\u00e9\u202e.h5",
             "bad\udcff\x7f.h5", "\x9bq'\\"]  # fmt: skip
    assert shell_word("plain.xml") == "plain.xml"
    assert shell_word("with space's.xml") == shlex.quote("with space's.xml")
    assert shell_word("a\x1bb") == "$'a\\x1bb'"
    for name in names:
        word = shell_word(name)
        assert printable(word) == word, word
        r = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True)
        assert r.stdout == name.encode("utf-8", "surrogateescape"), word
    line = shell_join(["iotune", "check", names[2]])
    assert printable(line) == line and line.startswith("iotune check $'ctl\\x1b]0;t")


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


@pytest.mark.parametrize("out", ["/dev/stdout", "/dev/fd/1", "-", "/proc/self/fd/1"])
def test_kb_export_to_standard_output_by_any_name(tmp_path, out):
    """`kb export -o /dev/stdout` into a pipe failed ("No such file or directory": the path
    was resolved to pipe:[N] for a temporary file renamed over it)."""
    from iotune import kb

    env_kb = tmp_path / "kb.sqlite"
    kb.KnowledgeBase(kb.resolve_url(str(env_kb))).close()
    r = _cli("kb", "--kb", str(env_kb), "export", "-o", out, stdout=subprocess.PIPE)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert json.loads(r.stdout)["schema"] == "iotune-kb-export"


def test_kb_export_to_stdout_appended_to_a_file_and_to_dev_null(tmp_path):
    """Redirected with >>, /dev/stdout appends: a file renamed over the target replaced what
    was there (and the shell's own descriptor then wrote to a deleted file)."""
    from iotune import kb

    env_kb = tmp_path / "kb.sqlite"
    kb.KnowledgeBase(kb.resolve_url(str(env_kb))).close()
    log = tmp_path / "log"
    log.write_text("before\n")
    with open(log, "a") as f:
        r = _cli("kb", "--kb", str(env_kb), "export", "-o", "/dev/stdout", stdout=f)
    assert r.returncode == 0, r.stderr
    head, rest = log.read_text().split("\n", 1)
    assert head == "before" and json.loads(rest)["entries"] == []
    r = _cli("kb", "--kb", str(env_kb), "export", "-o", "/dev/null", stdout=subprocess.PIPE)
    assert r.returncode == 0 and r.stdout == "" and Path("/dev/null").is_char_device()


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


def test_skel_params_onto_standard_output_holds_the_parameters_only(tmp_path):
    desc = tmp_path / "d.yaml"
    desc.write_text(SKEL)
    r = _cli("skel", "params", str(desc), "-o", "/dev/stdout", stdout=subprocess.PIPE)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "written to" not in r.stdout and "n" in r.stdout
    r2 = _cli("skel", "params", str(desc), "-o", "-", stdout=subprocess.PIPE)
    assert r2.stdout == r.stdout


TIMING = {
    "schema": "iotune-skel-timing", "skeleton": "x", "method": "posix", "ranks": 2,
    "per_rank": [{"rank": 0, "steps": [[0.1, 0.0, 0.2, 0.01]]},
                 {"rank": 1, "steps": [[0.1, 0.3, 0.2, 0.01]]}],
}  # fmt: skip


def test_skel_plot_onto_standard_output_holds_the_png_only(tmp_path):
    """`skel plot` saved through matplotlib, not the output writer: `-o -` made a file named
    "-" and `-o /dev/stdout` got "plot written to" mixed into the image."""
    timing = tmp_path / "timing.json"
    timing.write_text(json.dumps(TIMING))
    env = dict(os.environ, PYTHONPATH=SRC)
    got = []
    for out in ("/dev/stdout", "-", "/dev/fd/1"):
        r = subprocess.run([sys.executable, "-m", "iotune", "skel", "plot", str(timing), "-o", out],
                           capture_output=True, env=env, cwd=tmp_path, timeout=120)  # fmt: skip
        assert r.returncode == 0 and r.stderr == b"", r.stderr
        assert r.stdout.startswith(b"\x89PNG") and b"written to" not in r.stdout
        got.append(r.stdout)
    assert got[0] == got[1] == got[2] and sorted(os.listdir(tmp_path)) == ["timing.json"]
    r = _cli("skel", "plot", str(timing), "-o", str(tmp_path), stdout=subprocess.PIPE)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().endswith(f"{tmp_path}: cannot write the plot: a directory (write to "
                                     "standard output, -o -, and redirect it instead)")  # fmt: skip


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


@pytest.mark.parametrize("cmd", [["kernels"], ["check", "--list"]])
def test_a_closed_standard_output_is_one_line_not_a_traceback(cmd):
    """Started with standard output closed (`>&-`), Python leaves sys.stdout None: the first
    write was an AttributeError's traceback (an outside tester's finding)."""
    line = shlex.join([sys.executable, "-m", "iotune", *cmd]) + " >&-"
    r = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip() == "iotune: cannot write the output: standard output is closed"


def test_an_input_error_naming_a_file_with_terminal_controls_is_escaped(tmp_path):
    """`iotune kb import` printed the names and keys of its messages raw (an outside tester):
    a file whose name holds an escape sequence, refused, is named escaped."""
    export = tmp_path / "\x1b[31mkb.json"
    export.write_text("{not json")
    r = subprocess.run(
        [sys.executable, "-m", "iotune", "kb", "--kb", str(tmp_path / "k.db"), "import",
         str(export)], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode != 0 and "kb.json" in r.stderr, r.stderr
    assert "\x1b" not in r.stderr and "\\x1b[31mkb.json" in r.stderr, r.stderr
