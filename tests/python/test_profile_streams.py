"""Where the profile goes when IOTUNE_PROFILE (or `iotune profile -o`) names something other
than a regular file (an outside tester's findings): a FIFO nobody reads hung the job in
MPI_Finalize, and a character device, a FIFO or a symbolic link was replaced by a regular file
(as root, /dev/null or /dev/full broken for the whole machine). Now a FIFO or character device
is written in place, a FIFO's reader is waited for a bounded time, and a link stays a link."""

import json
import os
import stat
import subprocess
import sys
import threading
import time

import pytest

ROOT = os.geteuid() == 0


def run(mpirun, test_prog, libiotune, tmp_path, profile, timeout=60):
    return mpirun(2, [test_prog("h5probe"), tmp_path / "u.h5"], cwd=tmp_path, preload=libiotune,
                  env={"IOTUNE_PROFILE": str(profile)}, timeout=timeout)  # fmt: skip


def read_fifo_later(path, delay, into):
    def reader():
        time.sleep(delay)
        with open(path, "rb") as f:
            into.append(f.read())

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    return t


def test_a_fifo_nobody_reads_is_given_up_on_not_waited_for_forever(
    mpirun, test_prog, libiotune, tmp_path
):
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    proc = run(mpirun, test_prog, libiotune, tmp_path, fifo)
    assert time.monotonic() - started < 40
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still a FIFO
    assert "no process opened the FIFO for reading within 10 s" in proc.stderr, proc.stderr
    assert not [p for p in tmp_path.iterdir() if ".tmp." in p.name]


def test_a_fifo_whose_reader_starts_second_gets_the_profile(mpirun, test_prog, libiotune, tmp_path):
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    got = []
    reader = read_fifo_later(fifo, 1.0, got)
    proc = run(mpirun, test_prog, libiotune, tmp_path, fifo)
    reader.join(30)
    assert "iotune" not in proc.stderr, proc.stderr
    profile = json.loads(got[0])
    assert profile["schema"] == "iotune-profile" and profile["ranks"] == 2
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.skipif(not ROOT, reason="mknod of a character device needs root")
def test_character_devices_are_written_in_place(mpirun, test_prog, libiotune, tmp_path):
    null, full = tmp_path / "null", tmp_path / "full"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    proc = run(mpirun, test_prog, libiotune, tmp_path, null)
    assert proc.stderr == "" and stat.S_ISCHR(os.stat(null).st_mode)
    proc = run(mpirun, test_prog, libiotune, tmp_path, full)
    assert stat.S_ISCHR(os.stat(full).st_mode)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0], proc.stderr
    linked = tmp_path / "to-null"
    linked.symlink_to(null)
    run(mpirun, test_prog, libiotune, tmp_path, linked)
    assert linked.is_symlink() and stat.S_ISCHR(os.stat(null).st_mode)


def test_a_symbolic_link_stays_and_its_target_gets_the_profile(
    mpirun, test_prog, libiotune, tmp_path
):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "p.json"
    link.symlink_to(target.name)  # relative, as `ln -s` makes it
    run(mpirun, test_prog, libiotune, tmp_path, link)
    assert link.is_symlink() and json.loads(target.read_text())["schema"] == "iotune-profile"
    dangling = tmp_path / "q.json"
    dangling.symlink_to("later.json")  # a link to a file not there yet
    run(mpirun, test_prog, libiotune, tmp_path, dangling)
    assert dangling.is_symlink()
    assert json.loads((tmp_path / "later.json").read_text())["ranks"] == 2


def iotune_profile(tmp_path, out, *extra, env=None):
    from conftest import launcher

    prog = tmp_path / "h5probe"
    cmd = [sys.executable, "-m", "iotune", "profile", "-o", str(out), *extra, "--",
           *launcher(), "2", str(prog), str(tmp_path / "u.h5")]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, **(env or {})})  # fmt: skip


def test_iotune_profile_writes_a_stream_in_place_and_keeps_a_link(test_prog, tmp_path):
    os.symlink(test_prog("h5probe"), tmp_path / "h5probe")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = read_fifo_later(fifo, 0.0, got)
    proc = iotune_profile(tmp_path, fifo)
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(got[0])["schema"] == "iotune-profile"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert "profile saved" not in proc.stdout  # not a file: nothing was saved anywhere
    proc = iotune_profile(tmp_path, "-")
    assert proc.returncode == 0 and '"schema": "iotune-profile"' in proc.stdout
    # --trace writes a folder beside the profile: refused for a stream, before the run
    proc = iotune_profile(tmp_path, fifo, "--trace")
    assert proc.returncode == 2 and "--trace needs a file for --out" in proc.stderr
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "p.json"
    link.symlink_to(target.name)
    proc = iotune_profile(tmp_path, link)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and json.loads(target.read_text())["ranks"] == 2
    assert f"profile saved to {link}" in proc.stdout


@pytest.mark.skipif(not ROOT, reason="mknod of a character device needs root")
def test_iotune_profile_leaves_a_device_a_device(test_prog, tmp_path):
    os.symlink(test_prog("h5probe"), tmp_path / "h5probe")
    full = tmp_path / "full"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    proc = iotune_profile(tmp_path, full)
    assert stat.S_ISCHR(os.stat(full).st_mode)  # was unlinked, then made a regular file
    assert proc.returncode == 1 and "No space left on device" in proc.stderr
