"""Faults around the commands (issue 23): FIFOs and other hostile file arguments never hang a
command nor leave a copy behind; SIGTERM, SIGINT and SIGHUP stop what a command started (the
launched application's whole process group) and clean up, exit status 128 + signal."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from iotune import cli, cmdline, interrupt, launch

HERE = Path(__file__).resolve().parent
SRC = HERE.parent.parent / "src"
XML = (
    "<Parameters>\n  <Middleware_Layer>\n    <cb_buffer_size>1048576</cb_buffer_size>\n"
    "  </Middleware_Layer>\n</Parameters>\n"
)


@pytest.fixture(scope="module")
def dummy_lib(tmp_path_factory) -> Path:
    """A shared library with nothing in it: preloading it is harmless, and `iotune run` needs
    no built runtime to be tested for what it does around the command."""
    d = tmp_path_factory.mktemp("dummy")
    (d / "d.c").write_text("int iotune_test_dummy;\n")
    try:
        subprocess.run(["cc", "-shared", "-fPIC", "-o", d / "libdummy.so", d / "d.c"], check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no C compiler for the dummy preload")
    return d / "libdummy.so"


def _env(lib: Path, **more) -> dict[str, str]:
    path = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "IOTUNE_LIB": str(lib), **more}


def _copies(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if "iotune-config-" in p.name)


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while _alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


# ----------------------------------------------------------------------------- FIFOs


def test_a_fifo_without_a_writer_does_not_hang_run_and_leaves_no_copy(
    tmp_path, monkeypatch, dummy_lib, capsys
):
    fifo = tmp_path / "c.xml"
    os.mkfifo(fifo)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IOTUNE_LIB", str(dummy_lib))
    monkeypatch.setattr(cmdline, "PIPE_WAIT_S", 0.5)
    ran = tmp_path / "ran"
    start = time.monotonic()
    status = cli.main(["run", "--config", str(fifo), "--", "touch", str(ran)])
    assert time.monotonic() - start < 5
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(fifo) in err[0] and "within 0.5 s" in err[0], err
    assert not ran.exists()  # refused before the command
    assert _copies(tmp_path) == []


def test_a_fifo_without_a_writer_does_not_hang_check(tmp_path, monkeypatch, capsys):
    fifo = tmp_path / "c.xml"
    os.mkfifo(fifo)
    monkeypatch.setattr(cmdline, "PIPE_WAIT_S", 0.5)
    assert cli.main(["check", str(fifo)]) == 1  # as its help says: 1 when there are errors
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and str(fifo) in err[0], err
    assert err[1] == "1 error(s); nothing applies"


def test_a_fifo_whose_writer_comes_late_is_read(tmp_path, monkeypatch, capsys):
    fifo = tmp_path / "c.xml"
    os.mkfifo(fifo)

    def writer():
        time.sleep(0.5)
        with open(fifo, "w") as f:
            f.write(XML[:20])
            f.flush()
            time.sleep(0.3)  # a pause in the middle: waited for, not taken for the end
            f.write(XML[20:])

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert cli.main(["check", str(fifo)]) == 0
    finally:
        t.join()
    assert "1048576" in capsys.readouterr().out


def test_process_substitution_still_works(tmp_path, dummy_lib):
    """`iotune run --config <(...)`: the ranks get a private copy; it is removed afterwards."""
    (tmp_path / "c.xml").write_text(XML)
    script = (
        f"{sys.executable} -m iotune run --config <(cat c.xml) -- "
        'sh -c \'echo "config=$IOTUNE_CONFIG"; cat "$IOTUNE_CONFIG"\''
    )
    r = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=_env(dummy_lib), capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "<cb_buffer_size>1048576</cb_buffer_size>" in r.stdout
    assert ".iotune-config-" in r.stdout
    assert _copies(tmp_path) == []


@pytest.mark.parametrize("kind", ["directory", "device"])
def test_run_refuses_a_directory_or_device_as_control_file_at_once(
    kind, tmp_path, monkeypatch, dummy_lib, capsys
):
    config = str(tmp_path) if kind == "directory" else "/dev/zero"
    monkeypatch.setenv("IOTUNE_LIB", str(dummy_lib))
    ran = tmp_path / "ran"
    assert cli.main(["run", "--config", config, "--", "touch", str(ran)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and config in err[0], err
    assert not ran.exists()


def test_check_hints_never_read_a_device(capsys):
    """`iotune check /dev/zero` says it is not a regular file, at once (no 1 MiB read for
    did-you-mean hints, no hang on a terminal)."""
    assert cli.main(["check", "/dev/zero"]) == 1
    assert "not a regular file" in capsys.readouterr().err


# ----------------------------------------------------------------------------- signals

# a command whose grandchild would outlive a plain kill of the child: the whole group must go
TREE = 'sleep 300 & echo $! > "$1"; sleep 300'


def _start(args, cwd, env, stdin=subprocess.DEVNULL):
    return subprocess.Popen(
        [sys.executable, "-m", "iotune", *args], cwd=cwd, env=env, stdin=stdin,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_for(path: Path, proc, within: float = 60.0) -> int:
    end = time.monotonic() + within
    while not (path.is_file() and path.read_text().strip()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "the command did not start"
        time.sleep(0.05)
    return int(path.read_text())


@pytest.mark.parametrize(
    "sig,status", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)]
)
def test_a_signal_to_run_stops_the_whole_application_and_removes_the_copy(
    sig, status, tmp_path, dummy_lib
):
    fifo = tmp_path / "c.fifo"
    os.mkfifo(fifo)
    pidfile = tmp_path / "grandchild"
    proc = _start(
        ["run", "--config", str(fifo), "--", "sh", "-c", TREE, "sh", str(pidfile)],
        tmp_path, _env(dummy_lib),
    )  # fmt: skip
    with open(fifo, "w") as f:  # a pipe with a writer: copied for the ranks
        f.write(XML)
    grandchild = _wait_for(pidfile, proc)
    assert len(_copies(tmp_path)) == 1
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert "Traceback" not in err and err.strip().splitlines() == [
        f"iotune: stopped by {signal.Signals(sig).name}"
    ]
    assert _gone(grandchild), "the application's grandchild outlived iotune"
    assert _copies(tmp_path) == []


def test_sigterm_to_profile_stops_the_application(tmp_path, dummy_lib):
    pidfile = tmp_path / "grandchild"
    proc = _start(
        ["profile", "--out", str(tmp_path / "p.json"), "--", "sh", "-c", TREE, "sh",
         str(pidfile)],
        tmp_path, _env(dummy_lib),
    )  # fmt: skip
    grandchild = _wait_for(pidfile, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert _gone(grandchild)


def test_an_application_that_ignores_sigterm_is_killed_after_the_grace(tmp_path, dummy_lib):
    pidfile = tmp_path / "grandchild"
    tree = "trap '' TERM; " + TREE.replace("sleep 300 &", "(trap '' TERM; sleep 300) &")
    env = _env(dummy_lib)
    code = (
        "import sys; from iotune import launch, cli; launch.GRACE_S = 1.0; "
        "sys.exit(cli.main(sys.argv[1:]))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "run", "--", "sh", "-c", tree, "sh", str(pidfile)],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    grandchild = _wait_for(pidfile, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert _gone(grandchild)


def test_run_captured_stops_its_group_when_interrupted(tmp_path):
    """The one runner of captured commands (kb capture for tune --warm-start kb and defaults,
    skel run's build and launch): SIGTERM stops the command's whole group."""
    pidfile = tmp_path / "grandchild"
    code = textwrap.dedent(
        f"""
        import sys
        from iotune import interrupt, launch
        with interrupt.handlers():
            try:
                launch.run_captured(["sh", "-c", {TREE!r}, "sh", {str(pidfile)!r}], timeout=300)
            except KeyboardInterrupt as e:
                sys.exit(interrupt.exit_status(e))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, text=True
    )
    grandchild = _wait_for(pidfile, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert _gone(grandchild)


def test_run_captured_kills_its_group_on_timeout(tmp_path):
    pidfile = tmp_path / "grandchild"
    with pytest.raises(subprocess.TimeoutExpired):
        launch.run_captured(["sh", "-c", TREE, "sh", str(pidfile)], timeout=1.0)
    assert _gone(int(pidfile.read_text()))


def test_interrupt_handlers_raise_once_and_are_restored():
    before = signal.getsignal(signal.SIGTERM)
    with interrupt.handlers():
        with pytest.raises(interrupt.Interrupted) as e:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        assert e.value.signum == signal.SIGTERM and interrupt.exit_status(e.value) == 143
        os.kill(os.getpid(), signal.SIGTERM)  # a second one: the clean-up goes on
        time.sleep(0.1)
        assert interrupt.pending() == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before


# ----------------------------------------------------------------------------- full, read-only

FAKE = [sys.executable, str(HERE / "fake_app.py")]
TUNE = ["--space", str(HERE / "fake_space.toml"), "--launcher", "none", "--no-preload",
        "--objective", "kernel", "--no-progress", "--verify-pairs", "6", "--no-kb",
        "--study", "s"]  # fmt: skip


def _tune(out: Path, *more, cwd: Path):
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    args = [*TUNE, "--out", str(out), *map(str, more), "--", *FAKE]
    return subprocess.run(
        [sys.executable, "-m", "iotune", "tune", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.fixture
def tmpfs(tmp_path):
    """A tiny tmpfs of our own (root only), unmounted afterwards."""
    where = tmp_path / "fs"
    where.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(where)], capture_output=True
        ).returncode
    ):
        pytest.skip("needs root to mount a tmpfs")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def _study_rows(db: Path) -> list:
    import sqlite3

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert con.execute("pragma integrity_check").fetchall() == [("ok",)]
        return con.execute("select number, state from trials order by number").fetchall()
    finally:
        con.close()


def test_a_full_file_system_gives_one_message_and_loses_nothing(tmpfs, tmp_path):
    out = tmpfs / "out"
    r = _tune(out, "--trials", 10, cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "No space left on device" in r.stderr or "disk is full" in r.stderr, r.stderr
    assert "run the same command again" in r.stderr
    before = _study_rows(out / "study.db") if (out / "study.db").exists() else []
    # room again: the same command continues the study where it stopped
    subprocess.run(["mount", "-o", "remount,size=4m", str(tmpfs)], check=True)
    r = _tune(out, "--trials", 10, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    after = _study_rows(out / "study.db")
    assert after[: len(before)] == before  # every trial saved before is still there, unchanged
    assert (out / "best.xml").is_file()


@pytest.mark.parametrize("how", ["read-only file", "read-only file system"])
def test_a_read_only_study_gives_one_message(how, tmpfs, tmp_path):
    out = tmpfs / "out"
    subprocess.run(["mount", "-o", "remount,size=4m", str(tmpfs)], check=True)
    r = _tune(out, "--trials", 3, "--search-only", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    before = _study_rows(out / "study.db")
    db = str(out / "study.db")
    if how == "read-only file":  # root ignores permissions: a read-only bind mount of the file
        subprocess.run(["mount", "--bind", "-o", "ro", db, db], check=True)
    else:
        subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    try:
        r = _tune(out, "--trials", 6, "--search-only", cwd=tmp_path)
    finally:
        if how == "read-only file":
            subprocess.run(["umount", db], check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and "run the same command again" in lines[1], lines
    assert "readonly database" in lines[0] or "Read-only file system" in lines[0], lines
    assert _study_rows(out / "study.db") == before


# ----------------------------------------------------------------------------- tune's arguments


@pytest.mark.parametrize(
    "kind,args,said",
    [
        ("file", ["--out", "{file}"], "is not a directory"),
        ("file", ["--workdir", "{file}"], "is not a directory"),
        ("fifo", ["--storage", "journal:{fifo}"], "not a regular file"),
        ("fifo", ["--storage", "sqlite:///{fifo}"], "not a regular file"),
        ("dir", ["--storage", "sqlite:///{dir}"], "is a directory"),
        ("fifo", ["--space", "{fifo}"], "cannot read the space: not a regular file"),
        ("binary", ["--space", "{binary}"], "not UTF-8"),
        ("deep", ["--space", "{deep}"], "nested too deeply"),
    ],
)
def test_tune_refuses_hostile_file_arguments_at_once(kind, args, said, tmp_path):
    paths = {k: tmp_path / k for k in ("file", "fifo", "dir", "binary", "deep")}
    paths["file"].write_text("x")
    os.mkfifo(paths["fifo"])
    paths["dir"].mkdir()
    paths["binary"].write_bytes(b"\xff\xfe\x00 = 1\n")
    paths["deep"].write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    args = [a.format(**paths) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "out")]
    start = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    space = [] if "--space" in args else ["--space", str(HERE / "fake_space.toml")]
    r = subprocess.run(
        [sys.executable, "-m", "iotune", "tune", *space, "--launcher", "none", "--no-preload",
         "--no-progress", "--no-kb", "--study", "s", *args, "--", *FAKE],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert time.monotonic() - start < 60
    assert r.returncode in (1, 2), r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert said in r.stderr, r.stderr


def test_ctrl_c_on_a_terminal_reaches_the_command_and_stops_the_rest(tmp_path, dummy_lib):
    """`iotune run` in a terminal's foreground: the command shares the terminal (it could read
    it), Ctrl-C reaches it directly, and what ignores SIGINT (a background job of sh) goes too."""
    import pty

    pidfile = tmp_path / "grandchild"
    pid, master = pty.fork()
    if pid == 0:  # the child: a session of its own with the pty as its terminal
        try:
            os.chdir(tmp_path)
            os.environ.update(_env(dummy_lib))
            os.execv(sys.executable, [sys.executable, "-m", "iotune", "run", "--", "sh", "-c",
                                      TREE, "sh", str(pidfile)])  # fmt: skip
        finally:
            os._exit(127)
    try:
        end = time.monotonic() + 60
        while not (pidfile.is_file() and pidfile.read_text().strip()):
            assert time.monotonic() < end, "the command did not start"
            time.sleep(0.05)
        grandchild = int(pidfile.read_text())
        time.sleep(0.3)
        os.write(master, b"\x03")  # Ctrl-C
        end = time.monotonic() + 60
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
            assert time.monotonic() < end, "iotune did not end after Ctrl-C"
            time.sleep(0.05)
        assert os.waitstatus_to_exitcode(done[1]) == 130
        assert _gone(grandchild)
    finally:
        os.close(master)


def test_a_pipe_that_goes_silent_without_closing_is_given_up(tmp_path, monkeypatch, capsys):
    fifo = tmp_path / "c.xml"
    os.mkfifo(fifo)
    monkeypatch.setattr(cmdline, "PIPE_WAIT_S", 0.5)
    release = threading.Event()

    def writer():
        with open(fifo, "w") as f:
            f.write(XML[:20])
            f.flush()
            release.wait(30)  # open, silent

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert cli.main(["check", str(fifo)]) == 1
    finally:
        release.set()
        t.join()
    err = capsys.readouterr().err
    assert "sent 20 bytes but did not close within 0.5 s" in err, err


def test_a_pipe_that_trickles_forever_is_given_up_at_a_total_deadline(
    tmp_path, monkeypatch, capsys
):
    fifo = tmp_path / "c.xml"
    os.mkfifo(fifo)
    monkeypatch.setattr(cmdline, "PIPE_WAIT_S", 1.0)
    stop = threading.Event()

    def writer():  # a comment every 0.2 s: never silent for the limit, never done
        with open(fifo, "w") as f:
            while not stop.is_set():
                f.write("<!-- -->\n")
                f.flush()
                time.sleep(0.2)

    t = threading.Thread(target=writer)
    t.start()
    start = time.monotonic()
    try:
        assert cli.main(["check", str(fifo)]) == 1
    finally:
        stop.set()
        t.join(10)
    assert time.monotonic() - start < 5
    err = capsys.readouterr().err.strip().splitlines()
    assert str(fifo) in err[0] and "did not close within 1 s" in err[0], err
