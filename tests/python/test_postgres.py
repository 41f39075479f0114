"""A study shared through a real PostgreSQL server (started here, thrown away after): two
`iotune tune --search-only` workers and a finishing one on a tiny kernel run, with the password
given each way iotune accepts it, and never found in any output."""

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from conftest import PG_PASSWORD as PASSWORD

from iotune import storage

TIMEOUT = 120


@pytest.fixture
def pg(pg_server):
    return pg_server


def tune_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "iotune.tune_cli", *map(str, args)]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "PGPASSFILE")}
    env.pop(storage.PASSWORD_ENV, None)
    return {**env, **extra}


def tiny_kernel(kernel) -> list[str]:
    """GCRM-IO at 1/16 of its usual size: a trial takes ~0.1 s."""
    return [str(kernel("gcrmio")), "--cells", "2048", "--levels", "8", "--chunk-cells", "1024"]


def assert_nowhere(secret: str, texts: list[str], roots: list[Path]) -> None:
    for i, t in enumerate(texts):
        assert secret not in t, f"console output {i} shows the password:\n{t}"
    for root in roots:
        for p in root.rglob("*"):
            if p.is_file():
                assert secret.encode() not in p.read_bytes(), f"{p} holds the password"


def test_two_workers_and_a_finisher_share_a_postgresql_study(pg, kernel, libiotune, tmp_path):
    study = "pg-shared"
    # each trial lasts 0.3 s or more, so that the study outlasts what a worker may wait when it
    # joins (study.SETUP_GRACE_S, 5 s, if it sees a trial being set up) and both take trials
    budget = 20
    app = ["sh", "-c", 'sleep 0.3; exec "$0" "$@"', *tiny_kernel(kernel)]
    common = ["--study", study, "--trials", budget, "-n", 1, "--no-progress", "--seed", 3,
              "--cap", 0, "--search-only", "--", *app]  # fmt: skip
    env = clean_env(IOTUNE_LIB=str(libiotune))
    # the tables exist (made at once by many workers: test_workers_create_the_tables_at_once),
    # so that the two workers start together and both take trials
    storage.open_storage(pg.url())
    # worker 1 takes the password from IOTUNE_STORAGE_PASSWORD, worker 2 from its command line
    # (masked in what it prints)
    w1 = subprocess.Popen(
        tune_cmd("--storage", pg.url(with_password=False), "--out", tmp_path / "w1", *common),
        env={**env, storage.PASSWORD_ENV: PASSWORD}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    w2 = subprocess.Popen(
        tune_cmd("--storage", pg.url(), "--out", tmp_path / "w2", *common),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    texts = [w.communicate(timeout=TIMEOUT)[0] for w in (w1, w2)]
    assert [w1.returncode, w2.returncode] == [0, 0], texts

    # the finisher has the password in its URL: masked in everything it writes
    fin = subprocess.run(
        tune_cmd("--storage", pg.url(), "--study", study, "--finish-only",
                 "--out", tmp_path / "final", "--leaders", 2, "--repeat", 1,
                 "--verify-pairs", 5, "--no-partial", "--no-progress"),
        env=env, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    texts += [fin.stdout, fin.stderr]
    assert fin.returncode == 0, fin.stdout + fin.stderr

    s = optuna.load_study(study_name=study, storage=pg.url())
    counted = [t for t in s.trials if t.state.name != "WAITING"]
    assert budget <= len(counted) <= budget + 1, [(t.number, t.state.name) for t in counted]
    assert all(t.state.name in ("COMPLETE", "PRUNED", "FAIL") for t in counted)
    assert sorted("(new)" in t for t in texts[:2]) == [False, True], texts  # one made it
    assert len({t.user_attrs["worker"] for t in counted}) == 2, texts  # both took trials
    assert [t.user_attrs.get("origin") for t in counted].count("defaults") == 1
    statuses = [t.user_attrs.get("status") for t in counted]
    # some random configurations fail on this tiny file (e.g. a chunk larger than a dataset):
    # failures are recorded as such, never as fast
    assert statuses.count("ok") >= budget // 2, [t.user_attrs for t in counted]
    assert set(statuses) <= {"ok", "failed", "forbidden"}, statuses
    summary = json.loads((tmp_path / "final" / "summary.json").read_text())
    masked = pg.url(with_password=False).replace(f"{pg.user}@", f"{pg.user}:***@")
    assert summary["storage"] == masked
    assert masked in (tmp_path / "final" / "report.html").read_text()
    # nothing written, printed or stored in the study shows the password
    exported = json.dumps([s.user_attrs, [t.user_attrs for t in s.trials]])
    assert_nowhere(PASSWORD, [*texts, exported], [tmp_path])


def test_password_from_pgpassword_or_pgpass_file(pg, tmp_path):
    """libpq's PGPASSWORD and password file work as they do for psql; without them the server
    says no, in one line."""
    home = tmp_path / "home"
    home.mkdir()

    def args(name: str) -> list[str]:  # a new name each time (a study per try)
        return tune_cmd("--storage", pg.url(with_password=False), "--study", name,
                        "--finish-only", "--out", tmp_path / "o")  # fmt: skip

    r = subprocess.run(args("absent1"), env=clean_env(HOME=str(home), PGPASSWORD=PASSWORD),
                       capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
    assert r.returncode == 1 and "no study 'absent1'" in r.stderr, r.stderr  # it connected
    pgpass = home / ".pgpass"
    pgpass.write_text(f"{pg.host}:{pg.port}:*:{pg.user}:{PASSWORD}\n")
    pgpass.chmod(0o600)  # libpq ignores a password file others can read
    r = subprocess.run(args("absent2"), env=clean_env(HOME=str(home)), capture_output=True,
                       text=True, timeout=TIMEOUT)  # fmt: skip
    assert r.returncode == 1 and "no study 'absent2'" in r.stderr, r.stderr  # it connected
    pgpass.unlink()
    r = subprocess.run(args("absent3"), env=clean_env(HOME=str(home)), capture_output=True,
                       text=True, timeout=TIMEOUT)  # fmt: skip
    assert r.returncode == 1 and "cannot open it" in r.stderr and "password" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr  # one clear line, no traceback


def test_wrong_password_is_refused_and_never_echoed(pg, tmp_path):
    wrong = "Wr0ng-pw-also-secret"
    url = pg.url(with_password=False).replace(f"{pg.user}@", f"{pg.user}:{wrong}@")
    r = subprocess.run(
        tune_cmd("--storage", url, "--study", "x", "--finish-only", "--out", tmp_path / "o"),
        env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert r.returncode == 1 and "password authentication failed" in r.stderr, r.stderr
    assert "***" in r.stderr
    assert_nowhere(wrong, [r.stdout, r.stderr], [tmp_path])


def test_workers_create_the_tables_at_once(pg):
    """Workers started together on an empty database all try to create Optuna's tables: all
    but one see "already exists" or a unique-key violation, and retry."""
    import psycopg

    with psycopg.connect(pg.url(), autocommit=True) as c:
        c.execute("CREATE DATABASE race")
    url = pg.url(database="race")
    code = "import sys; from iotune import storage; storage.open_storage(sys.argv[1])"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, url], stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    errors = [p.communicate(timeout=TIMEOUT)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
