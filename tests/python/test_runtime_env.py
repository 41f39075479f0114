"""The runtime's IOTUNE_* variables: a value that is not one the variable takes is said once per
run, naming the variable and the value, and the default is used (an outside tester: "abc",
"-5", "10XB", "yes please" were taken silently, and IOTUNE_SESSION=.. named a directory)."""

import os
import subprocess

import pytest

from iotune import profile as prof
from iotune import trace as iotrace


def run(argv, tmp_path, libiotune, env):
    full = dict(os.environ, LD_PRELOAD=str(libiotune), IOTUNE_PROFILE=str(tmp_path / "p.json"))
    for key in [k for k in full if k.startswith("IOTUNE_") and k != "IOTUNE_PROFILE"]:
        full.pop(key)
    full["TMPDIR"] = str(tmp_path)  # the run's markers: a session's are not a former test's
    full.update(env)
    return subprocess.run([str(a) for a in argv], cwd=tmp_path, env=full, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip


BAD = [
    ("IOTUNE_TRACE_LIMIT", "abc", "not a whole number from 1 to 2147483647; the default"),
    ("IOTUNE_TRACE_LIMIT", "-5", "not a whole number"),
    ("IOTUNE_TRACE_LIMIT", "10XB", "not a whole number"),
    ("IOTUNE_TRACE_LIMIT", "0", "not a whole number"),
    ("IOTUNE_TRACE_LIMIT", "99999999999999999999", "not a whole number"),
    ("IOTUNE_TRACE", "yes please", "not 0, 1, 2, all or a flag"),
    ("IOTUNE_VERBOSE", "yes please", "quiet (0) is used"),
    ("IOTUNE_VERBOSE", "7x", "quiet (0) is used"),
    ("IOTUNE_DISABLE", "maybe", "not a flag"),
    ("IOTUNE_SYNC", "2", "not a flag"),
    ("IOTUNE_TRACE_FILES", "hosts", "not host, rank or both"),
]


@pytest.mark.parametrize(("name", "value", "said"), BAD)
def test_a_bad_value_is_said_once_for_a_shell_and_its_programs(
    test_prog, libiotune, tmp_path, name, value, said
):
    """A shell that starts programs (each loads the runtime): one line for the run, the
    variable emptied for the programs (as unset), and the profile written as without it. (sh:
    dash; bash has a getenv of its own that does not see TMPDIR at start-up.)"""
    probe = test_prog("posix_probe")
    script = f"{probe} a 3 4096; {probe} b 2 4096; true"
    proc = run(["sh", "-c", script], tmp_path, libiotune, {name: value})
    lines = proc.stderr.splitlines()
    assert lines == [ln for ln in lines if ln.startswith(f"iotune: {name}={value}: ")], proc.stderr
    assert len(lines) == 1 and said in lines[0], proc.stderr
    assert [f["name"] for f in prof.load(tmp_path / "p.json").files] == ["a"]


@pytest.mark.parametrize(
    ("name", "value"),
    [("IOTUNE_TRACE_LIMIT", "1000"), ("IOTUNE_TRACE", "all"), ("IOTUNE_TRACE", "on"),
     ("IOTUNE_VERBOSE", "2"), ("IOTUNE_VERBOSE", "yes"), ("IOTUNE_DISABLE", "0"),
     ("IOTUNE_SYNC", "TRUE"), ("IOTUNE_TRACE_FILES", "host"), ("IOTUNE_SESSION", "a-b_c.d:1")],
)  # fmt: skip
def test_good_values_say_nothing(test_prog, libiotune, tmp_path, name, value):
    proc = run([test_prog("posix_probe"), "a", 2, 4096], tmp_path, libiotune, {name: value})
    assert proc.stderr == ""


def test_trace_limit_in_words_keeps_the_default(test_prog, libiotune, tmp_path):
    """IOTUNE_TRACE_LIMIT=10XB was read as 10 (atoll): the trace kept 10 runs. Now the default."""
    argv = [test_prog("capture_probe"), "random", tmp_path / "r.dat", 200]
    run(argv, tmp_path, libiotune, {"IOTUNE_TRACE": "1", "IOTUNE_TRACE_LIMIT": "10XB"})
    tr = iotrace.load(tmp_path / "p.json")[0]
    assert tr["truncated"] is False and tr["limits"]["runs"] == 1 << 20


@pytest.mark.parametrize("value", ["..", ".", "a/../../b", "../x", "x" * 64, "a b"])
def test_a_session_that_is_no_directory_name_is_replaced_once(
    test_prog, libiotune, tmp_path, value
):
    """IOTUNE_SESSION names the run's marker directory (<tmp>/iotune-<uid>/<session>) and is
    copied into the profile: a value that is no plain name is replaced by one made from it, the
    same in every process of the run (one line, and the profile says the replacement)."""
    probe = test_prog("posix_probe")
    script = f"{probe} a 3 4096; {probe} b 2 4096; true"
    proc = run(["sh", "-c", script], tmp_path, libiotune, {"IOTUNE_SESSION": value})
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"iotune: IOTUNE_SESSION={value}: "), lines
    session = prof.load(tmp_path / "p.json").data["session"]
    assert session.startswith("x") and len(session) == 17 and f"the session {session}" in lines[0]


def test_a_bad_value_is_said_once_per_job(mpirun, kernel, libiotune, tmp_path):
    """An MPI job: the launcher and every rank read the variable; one line for the job."""
    env = {"IOTUNE_PROFILE": str(tmp_path / "p.json"), "IOTUNE_TRACE_LIMIT": "10XB",
           "IOTUNE_TRACE": "1"}  # fmt: skip
    proc = mpirun(2, [kernel("vpicio"), "--particles", 1024], cwd=tmp_path, preload=libiotune,
                  env=env)  # fmt: skip
    lines = proc.stderr.splitlines()
    assert proc.returncode == 0 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("iotune: IOTUNE_TRACE_LIMIT=10XB: not a whole number"), lines
    assert iotrace.load(tmp_path / "p.json")[0]["limits"]["runs"] == 1 << 20
