"""Study storage URLs: passwords masked in everything shown, without any server running."""

import os
import subprocess
import sys

import pytest

from iotune import storage

SECRET = "S3cr3t-p@ss:word"


@pytest.mark.parametrize(
    "url, shown",
    [
        ("postgresql://me:pw@db.site:5432/iotune", "postgresql://me:***@db.site:5432/iotune"),
        ("postgresql+psycopg2://me:p@ss@h/d", "postgresql+psycopg2://me:***@h/d"),
        ("mysql://u:x/y@h/d", "mysql://u:x/y@h/d"),  # a '/' ends the user part: no password
        (
            "postgresql://me@h/d?password=pw&sslmode=require",
            "postgresql://me@h/d?password=***&sslmode=require",
        ),  # noqa: E501
        ("host=h user=me password='a b' dbname=d", "host=h user=me password=*** dbname=d"),
        ("postgresql://me@h/d", "postgresql://me@h/d"),
        ("journal:/scratch/me/study.journal", "journal:/scratch/me/study.journal"),
        ("sqlite:////tmp/x:y@z/study.db", "sqlite:////tmp/x:y@z/study.db"),
    ],
)
def test_redact(url, shown):
    assert storage.redact(url) == shown


def test_password_of():
    assert storage.password_of(f"postgresql://me:{SECRET}@h/d") == SECRET
    assert storage.password_of("postgresql://me@h/d") is None


def tune(*args, env=None):
    """In a directory of its own: trials (not isolated) run where it is started, and a study
    running its trials in the same directory refuses it (identity.trials_alone)."""
    import tempfile

    return subprocess.run(
        [sys.executable, "-m", "iotune.tune_cli", *map(str, args)],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
        cwd=tempfile.mkdtemp(prefix="tune-cwd-"),
    )  # fmt: skip


@pytest.mark.parametrize("driver", ["postgresql+pg8000", "postgresql+psycopg2", "postgresql"])
def test_no_password_in_errors(driver, tmp_path):
    """No driver (pg8000, psycopg2: not installed by iotune) or no server (port 1): one line
    that says why, the password masked."""
    url = f"{driver}://me:{SECRET}@127.0.0.1:1/db"
    r = tune("--storage", url, "--study", "s", "--finish-only", "--out", tmp_path / "o")
    assert r.returncode == 1, r.stdout + r.stderr
    assert SECRET not in r.stdout + r.stderr
    assert f"{driver}://me:***@127.0.0.1:1/db" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not any(SECRET.encode() in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_password_from_the_environment_is_scrubbed_from_errors(tmp_path):
    r = tune("--storage", "postgresql://me@127.0.0.1:1/db", "--study", "s", "--finish-only",
             "--out", tmp_path / "o", env={storage.PASSWORD_ENV: SECRET})  # fmt: skip
    assert r.returncode == 1 and SECRET not in r.stdout + r.stderr


def test_finish_only_of_an_absent_study_creates_nothing(tmp_path):
    """--finish-only adopts an existing study: a wrong name is an error, not a new empty study
    that a later run would then adopt."""
    import optuna

    url = f"sqlite:///{tmp_path / 's.db'}"
    r = tune("--storage", url, "--study", "nope", "--finish-only", "--out", tmp_path / "o")
    assert r.returncode == 1 and "no study 'nope'" in r.stderr, r.stdout + r.stderr
    assert optuna.get_all_study_names(url) == []


def _open_sqlite(url: str) -> str:
    from iotune import storage

    try:
        storage.open_storage(url)
        return "ok"
    except Exception as e:  # noqa: BLE001 - the test reports whatever a worker saw
        return f"{type(e).__name__}: {e}".splitlines()[0]


def test_workers_starting_at_once_on_a_new_sqlite_file(tmp_path):
    """Six workers open one new SQLite study file at the same moment: all but one lose the race
    to create the tables ("table studies already exists") and must simply open it."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(6) as pool:
        for i in range(4):
            url = f"sqlite:///{tmp_path / f's{i}.db'}"
            seen = pool.map(_open_sqlite, [url] * 6)
            assert seen == ["ok"] * 6, seen


def test_a_short_password_is_masked_only_where_it_stands_alone():
    """An outside tester's password "on": every "on" of the driver's message was masked
    ("c***necti*** refused"), garbling it and telling which strings the password was."""
    url = "postgresql://admin:on@127.0.0.1:1/db"
    said = storage.scrub("connection to 127.0.0.1 failed: Connection refused", url)
    assert said == "connection to 127.0.0.1 failed: Connection refused"
    said = storage.scrub(f"bad login admin/on at {url}", url)
    assert "on@" not in said and said.startswith("bad login admin/*** at ")
    assert storage.scrub("p4ss-W0rd!", "mysql://u:p4ss-W0rd!@h/db") == "***"


@pytest.mark.parametrize(
    "content",
    [
        b"garbage\0\xff\xfe\n",
        b'not json at all\n{"op_code": 999}\n',  # a last line alone may be a torn write
        b'{"op_code": 0, "worker_id": "w"}\n{"op_code": 1, "worker_id": "w", "study_id": 99}\n',
        b'{"op_code": 0, "worker_id": "w", "study_name": "s", "directions": ["x"]}\n',
        b"[" * 100_000 + b"\n",
    ],
)
def test_a_damaged_journal_is_one_message_not_a_traceback(tmp_path, content):
    """An outside tester's damaged journal files (a journal lives on a shared file system any
    worker can write): each gave a raw traceback of Optuna's replay."""
    path = tmp_path / "study.journal"
    path.write_bytes(content)
    with pytest.raises(storage.StorageError, match="is not a readable Optuna journal"):
        storage.open_storage(f"journal:{path}")


def test_a_foreign_or_unreachable_sqlite_store_gets_advice_that_fits(tmp_path):
    """An outside tester's corrupt SQLite file and missing directory were both told "what was
    saved before stays ... make room (or make it writable)", true of neither."""
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(5000))
    cases = ((junk, "damaged or not an SQLite database"),
             (tmp_path / "nodir" / "x.db", "check that its directory exists"))  # fmt: skip
    for db, advice in cases:
        proc = subprocess.run(
            [sys.executable, "-m", "iotune", "tune", "--storage", f"sqlite:///{db}",
             "--launcher", "none", "--trials", "1", "--no-progress", "--out",
             str(tmp_path / "out"), "--", "/bin/true"],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 1 and advice in proc.stderr, proc.stderr
        assert "what was saved before stays" not in proc.stderr
        assert "Traceback" not in proc.stderr
