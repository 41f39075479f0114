"""The knowledge base: finished studies (motif signature, space, recommended settings, verified
speedup with its p-value and spread, platform, date) in a database.

One code path (SQLAlchemy, which Optuna already needs) serves an SQLite file, the default, and
a PostgreSQL server shared by a centre (the same one a shared study uses). The tables carry an
`iotune_kb_` prefix so they can live beside Optuna's. Each entry has a uid computed from its
content: adding or importing the same entry twice stores it once, and concurrent writers
(several studies finishing at once) each write in a transaction of their own.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from iotune.kb.entry import Entry

SCHEMA = "iotune-kb"
SCHEMA_VERSION = 1
EXPORT_SCHEMA = "iotune-kb-export"
ENV = "IOTUNE_KB"
SQLITE_TIMEOUT_S = 120  # a writer waits this long for another's transaction


# what KnowledgeBase.put did
STORED, UPDATED, ALREADY, KEPT = "stored", "updated", "already", "kept"


class KBError(RuntimeError):
    """A knowledge base that cannot be opened, read or written; str() says why."""


def default_path() -> Path:
    """$XDG_DATA_HOME/iotune/kb.sqlite (default ~/.local/share/iotune/kb.sqlite)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                           "share")  # fmt: skip
    return Path(base) / "iotune" / "kb.sqlite"


def resolve_url(given: str | None = None, study_storage: str | None = None) -> str:
    """The knowledge base's URL: as given (--kb), else $IOTUNE_KB, else the PostgreSQL server
    of a shared study, else the default SQLite file. A plain path means an SQLite file."""
    chosen = given or os.environ.get(ENV)
    if not chosen and study_storage and study_storage.startswith("postgresql"):
        chosen = study_storage
    if not chosen:
        chosen = str(default_path())
    if "://" not in chosen:
        chosen = f"sqlite:///{Path(chosen).expanduser().resolve()}"
    return chosen


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _tables():
    import sqlalchemy as sa

    md = sa.MetaData()
    meta = sa.Table(
        "iotune_kb_meta",
        md,
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.String(256), nullable=False),
    )
    entries = sa.Table(
        "iotune_kb_entries",
        md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uid", sa.String(40), nullable=False, unique=True),
        sa.Column("created", sa.String(32), nullable=False),
        sa.Column("signature_key", sa.String(32), nullable=False, index=True),
        sa.Column("signature_version", sa.Integer, nullable=False),
        sa.Column("data", sa.Text, nullable=False),  # the entry as JSON (Entry.to_json)
    )
    return md, meta, entries


class KnowledgeBase:
    """A knowledge base at a URL (resolve_url). Opening it creates its tables when the
    database is new; a database that belongs to something else is refused."""

    def __init__(self, url: str, create: bool = True):
        """create=False (the commands that only read): a knowledge base that does not exist is
        an error, and nothing (directory, file, table) is created."""
        import sqlalchemy as sa

        self.url = url
        self.create = create
        self._md, self._meta, self._entries = _tables()
        kwargs: dict[str, Any] = {}
        if url.startswith("sqlite:"):
            path = url.split("///", 1)[-1]
            self.where = path
            if path and path != ":memory:":
                _check_sqlite_path(Path(path), create)
                if create:
                    Path(path).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"timeout": SQLITE_TIMEOUT_S}
        else:
            from iotune import storage

            self.where = storage.redact(url)
            # the password the shared study uses, kept out of the URL (docs/cluster.md)
            if os.environ.get(storage.PASSWORD_ENV) and storage.password_of(url) is None:
                kwargs["connect_args"] = {"password": os.environ[storage.PASSWORD_ENV]}
        try:
            self.engine = sa.create_engine(url, **kwargs)
        except ImportError as e:
            hint = ' (pip install "psycopg[binary]")' if "postgres" in url else ""
            raise KBError(f"knowledge base {self.where}: a database driver is missing{hint}: "
                          f"{e}") from None  # fmt: skip
        except sa.exc.ArgumentError:
            raise KBError(f"knowledge base {self.where}: not a database URL") from None
        self._open()

    def _open(self) -> None:
        import sqlalchemy as sa

        try:
            names = set(sa.inspect(self.engine).get_table_names())
            ours = {"iotune_kb_meta", "iotune_kb_entries"}
            if self.url.startswith("sqlite:") and names and not names & ours:
                raise KBError(
                    f"knowledge base {self.where}: an SQLite database of something else (tables "
                    f"{', '.join(sorted(names)[:5])}): not an iotune knowledge base; give "
                    f"another file with --kb or ${ENV}"
                )
            if not ours <= names:
                if not self.create:
                    raise KBError(f"knowledge base {self.where}: does not exist (nothing has been "
                                  "stored there yet)")  # fmt: skip
                self._create()
            rows = self._read_meta()
            if not rows and self.create:
                # another process created the tables and has not stamped them yet (or died
                # between the two): stamping is idempotent
                self._stamp()
                rows = self._read_meta()
        except sa.exc.DatabaseError as e:
            raise KBError(f"knowledge base {self.where}: cannot be read as a database "
                          f"({_first_line(e)})") from None  # fmt: skip
        if rows.get("schema") != SCHEMA:
            raise KBError(f"knowledge base {self.where}: its tables are not iotune's (schema "
                          f"{rows.get('schema')!r})")  # fmt: skip
        if int(rows.get("version", 0)) > SCHEMA_VERSION:
            raise KBError(
                f"knowledge base {self.where}: made by a newer iotune (schema version "
                f"{rows['version']}, this one reads {SCHEMA_VERSION})"
            )

    def _read_meta(self) -> dict[str, str]:
        import sqlalchemy as sa

        with self.engine.connect() as c:
            return dict(c.execute(sa.select(self._meta.c.key, self._meta.c.value)).all())

    CREATE_TRIES = 10

    def _create(self) -> None:
        """Creates the tables and stamps them; a concurrent creator may win the race."""
        import sqlalchemy as sa

        # create_all stops at the first table another process made between its check and its
        # CREATE: the tables after it would be missing, so it runs again (it skips what exists)
        for attempt in range(self.CREATE_TRIES):
            try:
                self._md.create_all(self.engine)
                break
            except sa.exc.OperationalError as e:
                if "already exists" not in str(e) or attempt == self.CREATE_TRIES - 1:
                    raise
        self._stamp()

    def _stamp(self) -> None:
        import sqlalchemy as sa

        for key, value in (("schema", SCHEMA), ("version", str(SCHEMA_VERSION))):
            try:
                with self.engine.begin() as c:
                    c.execute(self._meta.insert().values(key=key, value=value))
            except sa.exc.IntegrityError:
                pass  # another writer stamped it first

    # ------------------------------------------------------------------------- writing

    def add(self, entry: Entry) -> tuple[int, bool]:
        """Stores an entry; (its id, True) when stored or when it replaced the entry of the same
        study, (the stored one's id, False) when the same entry (or a newer one of its study)
        was stored before. put() says which."""
        rid, status = self.put(entry)
        return rid, status in (STORED, UPDATED)

    def put(self, entry: Entry) -> tuple[int, str]:
        """Stores an entry: (id, STORED) when new; (id, ALREADY) when the same entry was stored
        before; an entry of a study already in the knowledge base (the same study_uid: the
        study finished again) replaces it in place, (its id, UPDATED), unless the stored one
        is newer (an older export imported): (its id, KEPT). One entry per study."""
        import sqlalchemy as sa

        from iotune.inputs import InputError
        from iotune.kb import validate

        if not entry.created:
            entry.created = now()
        try:
            validate.check(entry, f"knowledge base {self.where}: entry not stored")
        except InputError as e:
            raise KBError(str(e)) from None
        uid = entry.uid
        row = {
            "uid": uid,
            "created": entry.created,
            "signature_key": entry.signature.key,
            "signature_version": entry.signature.version,
            "data": json.dumps(entry.to_json(), sort_keys=True),
        }
        t = self._entries
        try:
            with self.engine.begin() as c:
                same = c.execute(sa.select(t.c.id).where(t.c.uid == uid)).scalar()
                if same is not None:
                    return int(same), ALREADY
                olds = self._of_study(c, entry.study_uid) if entry.study_uid else []
                if olds:
                    keep, created = olds[-1]
                    if created > entry.created:
                        return keep, KEPT
                    c.execute(t.update().where(t.c.id == keep).values(**row))
                    for rid, _ in olds[:-1]:  # (two finishers at once could have left two)
                        c.execute(t.delete().where(t.c.id == rid))
                    return keep, UPDATED
                result = c.execute(t.insert().values(**row))
                return int(result.inserted_primary_key[0]), STORED
        except sa.exc.IntegrityError:
            with self.engine.connect() as c:
                old = c.execute(sa.select(t.c.id).where(t.c.uid == uid)).scalar()
            return int(old), ALREADY
        except sa.exc.DatabaseError as e:
            raise KBError(f"knowledge base {self.where}: cannot write ({_first_line(e)})") from None

    def _of_study(self, c: Any, study_uid: str) -> list[tuple[int, str]]:
        """(id, created) of the stored entries of a study, oldest id first."""
        import sqlalchemy as sa

        t = self._entries
        # the JSON is written with sort_keys and the default separators; the uid is hex
        # (kb.validate), so it holds no LIKE wildcard
        rows = c.execute(
            sa.select(t.c.id, t.c.created, t.c.data)
            .where(t.c.data.like(f'%"study_uid": "{study_uid}"%'))
            .order_by(t.c.id)
        ).all()
        out = []
        for rid, created, data in rows:
            try:
                if json.loads(data).get("study_uid") == study_uid:
                    out.append((int(rid), str(created)))
            except (ValueError, AttributeError):
                continue  # an unreadable row is skipped, as entries() does
        return out

    def add_all(self, entries: Iterable[Entry]) -> tuple[int, int]:
        """(added, already there)."""
        added = same = 0
        for e in entries:
            _, new = self.add(e)
            added, same = added + new, same + (not new)
        return added, same

    # ------------------------------------------------------------------------- reading

    def entries(self) -> list[Entry]:
        """Every entry, oldest first. Rows that cannot be read are skipped (and counted in
        self.unreadable)."""
        import sqlalchemy as sa

        out = []
        self.unreadable = 0
        try:
            with self.engine.connect() as c:
                rows = c.execute(
                    sa.select(self._entries.c.id, self._entries.c.data).order_by(self._entries.c.id)
                ).all()
        except sa.exc.DatabaseError as e:
            raise KBError(
                f"knowledge base {self.where}: cannot be read ({_first_line(e)})"
            ) from None
        from iotune.inputs import InputError, parse_json
        from iotune.kb import validate

        for rid, data in rows:
            where = f"knowledge base {self.where}: entry {rid}"
            try:  # a row another program wrote is checked as an import would be
                e = validate.entry(parse_json(data, where, "entry"), where)
            except InputError:
                self.unreadable += 1
                continue
            e.id = int(rid)
            out.append(e)
        return out

    def get(self, ident: int | str) -> Entry | None:
        """An entry by id or by (a prefix of) its uid."""
        for e in self.entries():
            if str(e.id) == str(ident) or (len(str(ident)) >= 4 and e.uid.startswith(str(ident))):
                return e
        return None

    def close(self) -> None:
        self.engine.dispose()


def _first_line(e: Exception) -> str:
    text = str(getattr(e, "orig", None) or e)
    return text.splitlines()[0] if text else type(e).__name__


# ----------------------------------------------------------------------------- JSON exchange


def export_json(entries: Iterable[Entry]) -> dict[str, Any]:
    return {
        "schema": EXPORT_SCHEMA,
        "version": SCHEMA_VERSION,
        "exported": now(),
        "entries": [e.to_json() for e in entries],
    }


def import_json(data: Any, where: str) -> list[Entry]:
    """The entries of an exported knowledge base, every one checked in full (kb.validate:
    types, finite numbers in range, valid settings, its uid against its content) before any is
    returned; one InputError naming the file and the entry when one is not."""
    from iotune.inputs import InputError
    from iotune.kb import validate

    if not isinstance(data, Mapping) or data.get("schema") != EXPORT_SCHEMA:
        got = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
        raise InputError(f"{where}: not an iotune knowledge-base export (schema {got!r}, "
                         f"expected {EXPORT_SCHEMA!r})")  # fmt: skip
    version = data.get("version", SCHEMA_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InputError(f"{where}: its version {version!r} is not one iotune writes")
    if version > SCHEMA_VERSION:
        raise InputError(f"{where}: made by a newer iotune (version {version})")
    raw = data.get("entries")
    if not isinstance(raw, list):
        raise InputError(f"{where}: 'entries' must be a list")
    out = []
    for i, item in enumerate(raw):
        e = validate.entry(item, f"{where}: entry {i}")
        e.source = e.source or where
        out.append(e)
    return out


def _check_sqlite_path(path: Path, create: bool) -> None:
    """An SQLite knowledge base's path: a regular file (SQLite would block on a FIFO), or
    absent when it may be created."""
    import stat

    try:
        st = path.stat()
    except FileNotFoundError:
        if not create:
            raise KBError(f"knowledge base {path}: does not exist (nothing has been stored "
                          "there yet)") from None  # fmt: skip
        return
    except OSError as e:
        raise KBError(f"knowledge base {path}: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise KBError(f"knowledge base {path}: is a directory, not a database file")
    if not stat.S_ISREG(st.st_mode):
        raise KBError(f"knowledge base {path}: not a regular file")
