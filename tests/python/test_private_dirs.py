"""The runtime's per-user marker directory, <tmp>/iotune-<uid> (runtime/src/core/core.c): made with
mode 0700, used only when it is a real directory of this user that no one else can write into,
and cleaned up without ever following a symbolic link. Another user's planted symbolic link
or directory is refused with one message; the run goes on (without markers) and nothing
outside the user's own directory is created or removed.
"""

import os
import time

import pytest
from conftest import run_mpi

BAD = (
    "<Parameters><High_Level_IO_Library>\n<nonsense>1</nonsense>\n"
    "</High_Level_IO_Library></Parameters>\n"
)
REFUSED = "is not a private directory of this user"
DAY = 86400


@pytest.fixture
def place(tmp_path):
    """A TMPDIR, a victim's directory holding old empty directories, and a control file whose
    one mistake makes the runtime say something (which needs its markers)."""
    tmp, victim, work = tmp_path / "tmp", tmp_path / "victim", tmp_path / "work"
    for d in (tmp, victim / "old1", victim / "old2", work):
        d.mkdir(parents=True)
    old = time.time() - 3 * DAY
    for d in (victim / "old1", victim / "old2"):
        os.utime(d, (old, old))
    (work / "bad.xml").write_text(BAD)
    return tmp, victim, work


def run(kernel, libiotune, place, env=None):
    tmp, _, work = place
    env = {"TMPDIR": str(tmp), "IOTUNE_PROFILE": str(work / "p.json"), **(env or {})}
    argv = [kernel("gcrmio"), "--cells", "256", "--levels", "2", "--chunk-cells", "64"]
    proc = run_mpi(1, argv, cwd=work, preload=libiotune, config=work / "bad.xml", env=env)
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("iotune: ")]
    assert "gcrmio write" in proc.stdout  # the application ran to its end
    assert sum("unknown parameter" in ln for ln in said) == 1, said  # the run's own message
    return said


def mine(tmp):
    return tmp / f"iotune-{os.getuid()}"


def intact(victim):
    assert sorted(p.name for p in victim.iterdir()) == ["old1", "old2"]


def test_a_private_directory_is_made_0700_and_left_clean(kernel, libiotune, place):
    tmp, _, _ = place
    said = run(kernel, libiotune, place)
    assert not [ln for ln in said if REFUSED in ln]
    st = os.lstat(mine(tmp))
    assert oct(st.st_mode & 0o777) == "0o700" and st.st_uid == os.geteuid()
    assert list(mine(tmp).iterdir()) == []  # the run's markers removed at its end


def test_a_planted_symbolic_link_is_neither_used_nor_deleted_through(kernel, libiotune, place):
    tmp, victim, _ = place
    mine(tmp).symlink_to(victim)
    said = run(kernel, libiotune, place)
    assert [ln for ln in said if REFUSED in ln] == [
        f"iotune: {mine(tmp)} is not a private directory of this user (a symbolic link, another "
        "user's, or writable by others): refused; the run goes on without it, and a message "
        "meant once per run may come once per process"
    ]
    intact(victim)  # old directories there were not pruned, no session made there
    assert mine(tmp).is_symlink()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a directory of another user")
def test_another_users_directory_is_refused(kernel, libiotune, place):
    tmp, _, _ = place
    mine(tmp).mkdir(mode=0o700)
    (mine(tmp) / "old").mkdir()
    old = time.time() - 3 * DAY
    os.utime(mine(tmp) / "old", (old, old))
    os.chown(mine(tmp), 65534, 65534)
    said = run(kernel, libiotune, place)
    assert sum(REFUSED in ln for ln in said) == 1, said
    assert [p.name for p in mine(tmp).iterdir()] == ["old"]  # neither used nor pruned


def test_a_directory_others_can_write_into_is_refused(kernel, libiotune, place):
    tmp, _, _ = place
    mine(tmp).mkdir()
    os.chmod(mine(tmp), 0o777)
    said = run(kernel, libiotune, place)
    assert sum(REFUSED in ln for ln in said) == 1, said
    assert list(mine(tmp).iterdir()) == []


def test_clean_up_never_follows_a_link_inside_the_private_directory(kernel, libiotune, place):
    tmp, victim, _ = place
    mine(tmp).mkdir(mode=0o700)
    (mine(tmp) / "stale-run").mkdir()  # a run of last week that left its markers
    (mine(tmp) / "stale-run" / "0123456789abcdef").mkdir()
    old = time.time() - 7 * DAY
    for d in (mine(tmp) / "stale-run" / "0123456789abcdef", mine(tmp) / "stale-run"):
        os.utime(d, (old, old))
    (mine(tmp) / "link-run").symlink_to(victim)  # as old as any run, but a link
    os.utime(mine(tmp) / "link-run", (old, old), follow_symlinks=False)
    os.utime(victim, (old, old))  # and what it points to looks like a stale run too
    said = run(kernel, libiotune, place)
    assert not [ln for ln in said if REFUSED in ln]
    assert sorted(p.name for p in mine(tmp).iterdir()) == ["link-run"]  # stale run pruned
    intact(victim)


def test_a_session_directory_planted_as_a_link_is_not_used(kernel, libiotune, place):
    tmp, victim, _ = place
    mine(tmp).mkdir(mode=0o700)
    (mine(tmp) / "planted-session").symlink_to(victim)
    run(kernel, libiotune, place, env={"IOTUNE_SESSION": "planted-session"})
    intact(victim)  # no marker made through the link
