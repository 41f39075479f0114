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
"""

from __future__ import annotations

import os
import re
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
    removed wherever they appear, then redacted."""
    for secret in (password_of(url), os.environ.get(PASSWORD_ENV)):
        if secret:
            text = text.replace(secret, MASK)
    return redact(text)


def _is_server_url(url: str) -> bool:
    return not (url.startswith("journal:") or url.startswith("sqlite:"))


def open_storage(url: str) -> Any:
    """An Optuna storage for url (see the module's docstring). Raises StorageError."""

    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        path = Path(url[len("journal:") :]).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite:"):
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 120}}
    elif os.environ.get(PASSWORD_ENV) and password_of(url) is None:
        # to the driver directly: the URL (which Optuna and SQLAlchemy may show) stays clean
        kwargs["engine_kwargs"] = {"connect_args": {"password": os.environ[PASSWORD_ENV]}}
    try:
        return _rdb_storage(url, kwargs)
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


CREATE_TRIES = 6


# SQLite reports a CREATE TABLE lost to another worker as an OperationalError
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
            return optuna.storages.RDBStorage(url, **kwargs)
        except (IntegrityError, ProgrammingError, StorageInternalError, OperationalError) as e:
            busy = not isinstance(e, OperationalError) or any(b in str(e) for b in BUSY)
            if not busy or attempt == CREATE_TRIES - 1:
                raise
            time.sleep(random.uniform(0.2, 1.0) * (attempt + 1))
    raise AssertionError("unreachable")


def fresh(study: Any, trial: Any) -> Any:
    """The trial as the storage holds it now (another worker may have changed it)."""
    return study._storage.get_trial(trial._trial_id)


def fail(study: Any, trial: Any, status: str) -> None:
    """Records a trial that no worker will finish (its worker died) as failed, with a status."""
    from optuna.trial import TrialState

    study._storage.set_trial_user_attr(trial._trial_id, "status", status)
    study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
