"""The one place that knows how Optuna stores studies: opening a storage from a URL, and the
two things Optuna's public API does not offer (reading a trial afresh from another worker's
writes, and finishing a trial this process did not ask for). Everything else uses the public
Study API."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class StorageError(RuntimeError):
    """A storage that cannot be opened; str() says why and what to install."""


def open_storage(url: str) -> Any:
    """An Optuna storage: journal:PATH (a journal file, fine on shared file systems),
    sqlite:///PATH, postgresql://... (needs psycopg 3) or any SQLAlchemy URL."""
    import optuna

    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        path = Path(url[len("journal:") :]).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite:"):
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 120}}
    try:
        return optuna.storages.RDBStorage(url, **kwargs)
    except ImportError as e:
        hint = ' (for PostgreSQL: pip install "psycopg[binary]")' if "postgres" in url else ""
        raise StorageError(f"storage {url}: a database driver is missing{hint}: {e}") from None


def fresh(study: Any, trial: Any) -> Any:
    """The trial as the storage holds it now (another worker may have changed it)."""
    return study._storage.get_trial(trial._trial_id)


def fail(study: Any, trial: Any, status: str) -> None:
    """Records a trial that no worker will finish (its worker died) as failed, with a status."""
    from optuna.trial import TrialState

    study._storage.set_trial_user_attr(trial._trial_id, "status", status)
    study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
