"""Fuzzing the profile reader (`iotune show`, iotune.profile.load and summary): the checked-in
corpus tests/data/fuzz/profile/ replayed (ok_*: shown; bad_*: one message, exit 1), then
Hypothesis mutations of the ok_ seeds (tests/python/fuzzing.py). The only outcomes allowed: a
summary, or one line `iotune: ...` naming the file; never another exception."""

import argparse
import contextlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from fuzzing import EXAMPLES, encoded, load_seed, mutated, seeds
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iotune import cli
from iotune.cli import main
from iotune.inputs import InputError

SEEDS = seeds("profile")
GOOD = [load_seed(p) for p in seeds("profile", "ok_")]


def _show(path: Path, *options: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["show", *options, str(path)])
    return status, out.getvalue(), err.getvalue()


def _cmd_show(path: Path, files: bool) -> tuple[int, str, str]:
    """`iotune show` without building the argument parser each time (the fuzz loop's cost):
    the command itself, and main()'s one-line message for an InputError."""
    args = argparse.Namespace(profile=str(path), json=False, files=files, top=10)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.cmd_show(args)
        except InputError as e:
            print(f"iotune: {e}", file=err)
            status = 2
    return status, out.getvalue(), err.getvalue()


def test_the_corpus_is_there():
    assert len(SEEDS) >= 10 and len(GOOD) >= 3


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name)
def test_corpus_replay(path):
    for options in ((), ("--files",)):
        status, out, err = _show(path, *options)
        if path.name.startswith("ok_"):
            assert status == 0 and out and not err, err
        else:
            assert status == 1 and not out and err.count("\n") == 1 and str(path) in err, err
    if path.name.startswith("ok_"):
        assert _show(path, "--json")[0] == 0


@st.composite
def profiles(draw):
    doc = draw(st.sampled_from(GOOD))
    return draw(encoded(draw(mutated(doc))))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=profiles(), files=st.booleans())
def test_mutated_profiles_are_shown_or_refused_in_one_line(data, files):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "profile.json"
        path.write_bytes(data)
        status, out, err = _cmd_show(path, files)
    assert status in (0, 1), (status, err)
    event("shown" if status == 0 else "refused")
    if status == 0:
        assert out and not err
    else:
        assert not out and err.count("\n") == 1 and err.startswith("iotune: ") and str(path) in err


_VALUES = st.one_of(
    st.integers(min_value=-(2**65), max_value=2**65),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from(["", "ext4"]),
    st.lists(st.integers(), max_size=1),
)
_OBJECTS = st.dictionaries(st.sampled_from(["writes", "sizes", "start_s", "end_s", "mean"]),
                           st.one_of(_VALUES, st.dictionaries(st.sampled_from(["1K-10K", "0-100"]),
                                                              _VALUES, max_size=2)),
                           max_size=4)  # fmt: skip
_FILES = st.fixed_dictionaries(
    {"name": st.sampled_from(["/a.h5", 3, None])},
    optional={k: st.one_of(_VALUES, _OBJECTS) for k in ("fs", "system", "ranks", "phase",
                                                         "time_s", "hints", "applied", "hdf5",
                                                         "mpiio", "posix", "stdio")},
)  # fmt: skip


@settings(max_examples=4 * EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(f=_FILES)
def test_the_fast_shape_check_accepts_only_what_the_full_check_accepts(f):
    """profile_schema._file_ok (once per file of 10^6, without naming each key) may pass a
    file only when _file, which names what is wrong, passes it too."""
    from iotune import profile_schema

    fast = profile_schema._file_ok(f)
    try:
        profile_schema._file(f, "files[0]")
        full = True
    except profile_schema._Bad:
        full = False
    event("accepted" if fast else "given to the full check")
    assert full or not fast, f


# names the rule table (data/system_files.tsv) matches and does not, pieced together
_PARTS = st.sampled_from(["/proc/", "/usr/", "/etc/", "/scratch/", "lib/python3.11/", "x.py",
                          "pyvenv.cfg", "a.so", "a.so.1", "out.h5", "app", "site-packages/",
                          "__pycache__/", "chk.locktest.3", "/dev/shm/", ".pyc", ""])  # fmt: skip
_ARGV = st.sampled_from([None, ["/usr/bin/app"], ["/usr/bin/python3", "x.py"],
                         ["python", "/scratch/app"], ["/bin/sh", "run.sh"]])  # fmt: skip


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    parts=st.lists(_PARTS, min_size=1, max_size=4),
    written=st.sampled_from(
        [
            None,
            {"posix": {"bytes_written": 8}},
            {"hdf5": {"file_creates": 1}},
            {"posix": {"reads": 2}},
        ]
    ),  # fmt: skip
    argv=_ARGV,
)
def test_marking_the_files_on_loading_is_what_classify_says(parts, written, argv):
    """profile.parse() marks a file's class in one regular-expression match per name and asks
    whether it was written only when the matching rule depends on it: the same class as
    classify(name, was_written(f)) for every name, access and program (a script's rule too)."""
    from iotune import profile as prof

    name = "".join(parts)
    f = {"name": name, **(written or {})}
    script = prof.script_of(argv)
    rule = prof.classify(name, prof.was_written(f), script=script)
    event("system" if rule else "data")
    assert prof._marker(script)(f) == ({**f, "system": rule.cls} if rule else f)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    parts=st.lists(st.one_of(_PARTS, st.text("/.ab[]*?0", max_size=6)), min_size=1, max_size=5),
    patterns=st.lists(st.text("/.ab[]*?!0-", max_size=8), max_size=4),
    written=st.booleans(),
)
def test_the_name_test_before_the_rule_table_never_hides_a_match(parts, patterns, written):
    """classify() tries the table's regular expression only on a name that a quick test (what
    a pattern's text needs: start, end, a piece between) lets through: the first rule that
    fnmatchcase() matches, for the shipped table and for tables of arbitrary patterns."""
    import fnmatch

    from iotune import profile as prof

    name = "".join(parts)
    extra = tuple(prof.FileRule(p, "file", "system", False, "x") for p in patterns if p)
    for table in (prof.system_rules(), extra + prof.system_rules()):
        first = next((r for r in table if r.match == "file" and not (r.read_only and written)
                      and fnmatch.fnmatchcase(name, r.pattern)), None)  # fmt: skip
        assert prof.classify(name, written, rules=table) == first, (name, patterns)


def test_a_program_name_with_a_line_break_is_shown_escaped(tmp_path):
    """An outside tester's program name with a newline printed raw by `iotune show`: a line
    break (or an escape sequence) in a name could forge a line of the summary."""
    doc = json.loads(json.dumps(GOOD[0]))
    doc["argv"] = ["./app\nranks     forged", "-x"]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    status, out, err = _show(path)
    assert status == 0, err
    assert "forged" in out and not any(line.startswith("ranks     forged")
                                       for line in out.splitlines())  # fmt: skip
