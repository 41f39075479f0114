"""Study storage, the one place that knows how Optuna stores studies: opening a storage from
a URL with its password kept out of every output, and the two things Optuna's public API does
not offer (reading a trial afresh from another worker's writes, and finishing a trial this
process did not ask for). Everything else uses the public Study API.

URLs: journal:PATH (a journal file, fine on shared file systems), sqlite:///PATH,
postgresql://USER[:PASSWORD]@HOST[:PORT]/DB (needs psycopg 3: pip install "psycopg[binary]")
or any other SQLAlchemy URL.

A password on the command line is seen by everyone on the host (ps) and ends up in shell
histories and job scripts, so it can come from elsewhere instead, tried in this order:
  1. IOTUNE_STORAGE_PASSWORD in the environment (given to the driver, never put into the URL);
  2. libpq's own PGPASSWORD or password file (~/.pgpass, or PGPASSFILE), which the PostgreSQL
     driver reads by itself when the URL names no password.
Whatever the URL holds, what iotune prints, logs or writes (messages, summary.json, the report)
shows it through redact(): the password is replaced by ***.

Heartbeats: a worker killed without warning (SIGKILL, a node lost) cannot mark its running trial
failed, and on another host nobody can tell from its process id that it is gone. So a worker
records a heartbeat for its running trial every `heartbeat_s` seconds (Optuna's heartbeat: the
RDB storages' `heartbeat_interval`/`grace_period`; for the journal, which offers none, the same
protocol with the beat kept as a trial system attribute), and every worker and finisher fails
the trials whose last beat is older than GRACE_BEATS intervals (`optuna.storages.
fail_stale_trials`) before it asks for a trial. RDB storages compare the database server's
clock with itself; a journal shared between hosts compares the hosts' clocks, which must
agree to well within the grace (NTP).
"""

from __future__ import annotations

import errno
import os
import re
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PASSWORD_ENV = "IOTUNE_STORAGE_PASSWORD"
MASK = "***"

# scheme://user:password@ : the password runs to the last '@' before the host part
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/?#@:]*):(?P<pw>[^/?#]*)@")
# password=... in a query string or a libpq key=value connection string
_KEYWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<pw>'[^']*'|[^&\s]+)", re.IGNORECASE)


class StorageError(RuntimeError):
    """A storage that cannot be opened; str() says why, with any password masked."""


def redact(text: str) -> str:
    """text with the password of every URL or password=... in it replaced by ***."""
    text = _USERINFO.sub(lambda m: f"{m['head']}:{MASK}@", text)
    return _KEYWORD.sub(lambda m: f"{m['head']}{MASK}", text)


def password_of(url: str) -> str | None:
    """The password written in a storage URL, or None."""
    m = _USERINFO.search(url)
    if m:
        return m["pw"]
    m = _KEYWORD.search(url)
    return m["pw"].strip("'") if m else None


def scrub(text: str, url: str) -> str:
    """text (e.g. a driver's error message) with the URL's and the environment's password
    removed wherever they appear as a word of their own, then redacted. Not inside other
    words: a password "on" made "c***necti*** refused" of "connection refused", garbled the
    message and told which short strings the password was."""
    for secret in (password_of(url), os.environ.get(PASSWORD_ENV)):
        if secret:
            alone = rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])"
            text = re.sub(alone, lambda _: MASK, text)
    return redact(text)


def _is_server_url(url: str) -> bool:
    return not (url.startswith("journal:") or url.startswith("sqlite:"))


HEARTBEAT_S = 30  # default seconds between a running trial's heartbeats
GRACE_BEATS = 4  # a trial whose last heartbeat is older than this many intervals is lost
BEAT_ATTR = "iotune:heartbeat"  # journal: the trial system attribute holding the last beat


def open_storage(url: str, heartbeat_s: int | None = HEARTBEAT_S) -> Any:
    """An Optuna storage for url (see the module's docstring). heartbeat_s: seconds between
    the heartbeats of a running trial (None: no heartbeats). Raises StorageError."""

    if heartbeat_s:  # iotune beats from its own ask-and-tell loop (search/loop.py), not optimize()
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")
    _check_file(url)
    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend

        path = Path(url[len("journal:") :]).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StorageError(f"storage {url}: cannot make {path.parent}: {e.strerror}") from None
        try:
            journal = _journal_storage(JournalFileBackend(str(path)), heartbeat_s)
            journal.get_all_studies()  # the whole log replayed now, inside this try
            return journal
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError) as e:
            # Optuna replays the journal as it opens it: a damaged line raises whatever the
            # replay met (UnicodeDecodeError and JSONDecodeError are ValueErrors)
            from iotune.outputs import printable

            what = printable(str(e))[:200] or type(e).__name__
            raise StorageError(
                f"storage {url}: {path} is not a readable Optuna journal (damaged or not a "
                f"journal: {type(e).__name__}: {what}); give another file, or repair or "
                "remove it"
            ) from None
    kwargs: dict[str, Any] = {}
    if heartbeat_s:
        kwargs["heartbeat_interval"] = int(heartbeat_s)
        kwargs["grace_period"] = GRACE_BEATS * int(heartbeat_s)
    if url.startswith("sqlite:"):  # the driver's own transactions off: see _immediate()
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 120, "isolation_level": None}}
    elif os.environ.get(PASSWORD_ENV) and password_of(url) is None:
        # to the driver directly: the URL (which Optuna and SQLAlchemy may show) stays clean
        kwargs["engine_kwargs"] = {"connect_args": {"password": os.environ[PASSWORD_ENV]}}
    try:
        store = _rdb_storage(url, kwargs)
        if url.startswith("sqlite:"):
            _immediate(store.engine)
        return store
    except ImportError as e:
        hint = ' (for PostgreSQL: pip install "psycopg[binary]")' if "postgres" in url else ""
        raise StorageError(
            scrub(f"storage {url}: a database driver is missing{hint}: {e}", url)
        ) from None
    except Exception as e:  # noqa: BLE001 - any driver's error, shown once without secrets
        if not _is_server_url(url):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise StorageError(scrub(f"storage {url}: cannot open it: {first}", url)) from None


def _check_file(url: str) -> None:
    """A journal or SQLite file that exists must be a regular file: a FIFO would block every
    worker, a device or directory fail later with a misleading message (StorageError)."""
    import stat

    if url.startswith("journal:"):
        name = url[len("journal:") :]
    elif url.startswith("sqlite:///"):
        name = url[len("sqlite:///") :].split("?", 1)[0]
        if not name or name == ":memory:":
            return
    else:
        return
    try:
        mode = os.stat(Path(name).expanduser()).st_mode
    except OSError:
        return  # not there yet: made by the storage (its own error otherwise)
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO or device?)"
        raise StorageError(f"storage {url}: {name} is {kind}")


CREATE_TRIES = 6


def _immediate(engine: Any) -> None:
    """Every transaction on a SQLite study starts with BEGIN IMMEDIATE (it waits for the write
    lock, up to the connection's timeout, before it reads). With SQLite's default deferred
    transactions concurrent workers raced: two read the same queued (WAITING) trial and both
    claimed it (SQLite has no SELECT ... FOR UPDATE, which Optuna relies on), so one of them
    later failed to finish it; and a transaction that read first and then wanted to write met
    another's write lock and failed at once with "database is locked", whatever the timeout."""
    from sqlalchemy import event

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


# a server at its limit, or (SQLite: an OperationalError) another process creating the tables
BUSY = ("too many clients", "starting up", "remaining connection slots", "already exists")


def _rdb_storage(url: str, kwargs: dict[str, Any]) -> Any:
    """RDBStorage, tried again (with a growing random pause) when many workers start at once:
    on an empty database all but one see "already exists" or a unique-key violation from
    CREATE TABLE/TYPE, or a failed commit; a server at its connection limit says "too many
    clients". Any other error (a wrong password, no server) is raised at once."""
    import random
    import time

    import optuna
    from optuna.exceptions import StorageInternalError
    from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

    for attempt in range(CREATE_TRIES):
        try:
            with warnings.catch_warnings():  # heartbeat_interval is "experimental"
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(url, **kwargs)
        except (IntegrityError, ProgrammingError, StorageInternalError, OperationalError) as e:
            busy = not isinstance(e, OperationalError) or any(b in str(e) for b in BUSY)
            if not busy or attempt == CREATE_TRIES - 1:
                raise
            time.sleep(random.uniform(0.2, 1.0) * (attempt + 1))
    raise AssertionError("unreachable")


# SQLite's words for a store it cannot write (its error codes, as sqlite3 says them)
_SQLITE_FAULTS = (
    "database or disk is full",
    "readonly database",
    "unable to open database file",
    "disk i/o error",
    "database is locked",
    "database disk image is malformed",
    "file is not a database",
)
_OS_FAULTS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}


def fault(exc: BaseException, url: str) -> str | None:
    """One line saying why the study (or an output file) cannot be written, when exc is such
    a fault: a full file system, a read-only or unwritable store, a locked or damaged
    database, anywhere in its chain of causes; None for anything else."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _OS_FAULTS:
            where = exc.filename or "an output file"
            return f"cannot write {where}: {exc.strerror or exc}"
        text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        first = text[0] if text else ""
        if type(exc).__module__.startswith(("sqlite3", "sqlalchemy")) and any(
            f in first.lower() for f in _SQLITE_FAULTS
        ):
            return scrub(f"cannot write the study storage {url}: {first}", url)
        exc = exc.__cause__ or exc.__context__
    return None


def fresh(study: Any, trial: Any) -> Any:
    """The trial as the storage holds it now (another worker may have changed it)."""
    return study._storage.get_trial(trial._trial_id)


def fail(study: Any, trial: Any, status: str) -> bool:
    """Records a trial that no worker will finish (its worker died) as failed, with a status.
    False when it has finished meanwhile (another worker or its own was quicker)."""
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    try:
        study._storage.set_trial_user_attr(trial._trial_id, "status", status)
        study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    except UpdateFinishedTrialError:
        return False
    return True


def _journal_storage(backend: Any, heartbeat_s: int | None) -> Any:
    """A JournalStorage that also speaks Optuna's heartbeat protocol (BaseHeartbeat), which
    Optuna implements for its RDB storages only: the beat is a wall-clock time kept as a trial
    system attribute, so optuna.storages.fail_stale_trials works on it unchanged."""
    from optuna.storages._heartbeat import BaseHeartbeat
    from optuna.storages.journal import JournalStorage
    from optuna.trial import TrialState

    if not heartbeat_s:
        return JournalStorage(backend)

    class HeartbeatJournalStorage(JournalStorage, BaseHeartbeat):
        def record_heartbeat(self, trial_id: int) -> None:
            self.set_trial_system_attr(trial_id, BEAT_ATTR, time.time())

        def _get_stale_trial_ids(self, study_id: int) -> list[int]:
            now = time.time()
            running = self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,))
            return [
                t._trial_id
                for t in running
                if BEAT_ATTR in t.system_attrs
                and now - float(t.system_attrs[BEAT_ATTR]) > GRACE_BEATS * int(heartbeat_s)
            ]

        def get_heartbeat_interval(self) -> int | None:
            return int(heartbeat_s)

        def get_heartbeat_stale_trial_callback(self) -> Any:
            return None

        def get_failed_trial_callback(self) -> Any:  # the same, by its Optuna 3 name
            return None

    return HeartbeatJournalStorage(backend)


def _heartbeat_interval(study: Any) -> int | None:
    get = getattr(study._storage, "get_heartbeat_interval", None)
    return get() if get is not None else None


@contextmanager
def heartbeat(study: Any, trial: Any) -> Iterator[None]:
    """Records the running trial's heartbeat now and then every interval until the block ends
    (nothing for a storage without heartbeats, e.g. the in-memory one of bench/replay/replay.py)."""
    interval = _heartbeat_interval(study)
    if not interval:
        yield
        return
    store, trial_id, stop = study._storage, trial._trial_id, threading.Event()

    def beat() -> None:
        while True:
            try:
                store.record_heartbeat(trial_id)
            except Exception:  # noqa: BLE001 - a missed beat is no failure; GRACE_BEATS allow some
                pass
            if stop.wait(interval):
                return

    thread = threading.Thread(target=beat, name=f"heartbeat-{trial_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def fail_lost(study: Any) -> int:
    """Marks as failed the running trials whose heartbeat stopped (their worker is gone, on
    any host); returns how many. Their status reads "lost" (report/table.py): Optuna lets no
    attribute be set on a trial once it has failed."""
    import optuna
    from optuna.trial import TrialState

    if not _heartbeat_interval(study):
        return 0
    before = {t._trial_id for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))}
    with warnings.catch_warnings():  # fail_stale_trials is "experimental"
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    after = {t._trial_id for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))}
    return len(after - before)


def still_running(study: Any, trial: Any) -> bool:
    """False when another worker has meanwhile failed this trial as lost (its heartbeat came
    too late): its result is then dropped rather than told twice."""
    from optuna.trial import TrialState

    return fresh(study, trial).state == TrialState.RUNNING
