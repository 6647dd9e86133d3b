"""Opening a Strata database: pick the engine, check it is ours, create or migrate the schema.

Recovering the work a killed process left behind is the jobs service's (``core.api.open_store``
does both): this layer knows tables, not jobs."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import peewee

from core.db import db, display_url, make_database, resolve_url, sqlite_path
from core.errors import StoreUnavailableError
from core.migrations import migrate
from core.models import ALL_MODELS, SchemaVersion
from core.redact import redact_text


@dataclass
class Store:
    """An open database. One per process: models bind through a shared proxy."""

    url: str
    schema_version: int

    @property
    def path(self) -> str | None:
        path = sqlite_path(self.url)
        return str(path) if path is not None else None

    def close(self) -> None:
        if not db.is_closed():
            db.close()


def open_store(
    url: str | None = None, *, progress: Callable[[int, int, str], None] | None = None, create: bool = True
) -> Store:
    """Open (and create or migrate) the database named by ``url``/``$STRATA_DB``/default.

    ``progress``
    follows the migrations of an older store (see ``core.migrations.migrate``). With ``create``
    False a database that does not exist yet (no SQLite file, or one with no Strata schema; a
    PostgreSQL database without Strata's tables) is refused with StoreUnavailableError, and
    neither a file, a directory nor a table is made: what commands that only read ask for, so a
    mistyped path is an error instead of a new empty store.
    """
    resolved = resolve_url(url)
    if not create:
        require_existing(resolved)
    if not db.is_closed() if db.obj is not None else False:
        db.close()
    try:
        db.initialize(make_database(resolved))
        _connect()
        _refuse_other_encoding(resolved)
        _refuse_foreign(resolved)
        if not create and not _has_schema():
            raise StoreUnavailableError(missing_store_message(resolved))
        version = migrate(progress=progress)
        _require_tables(resolved)
    except BaseException as exc:
        if db.obj is not None and not db.is_closed():
            db.close()  # a refused store is not left open for the next call to use
        if isinstance(exc, (peewee.DatabaseError, peewee.InterfaceError, peewee.ImproperlyConfigured, OSError)):
            raise StoreUnavailableError(unavailable_reason(resolved, exc)) from exc
        raise
    return Store(url=resolved, schema_version=version)


# Switching a new SQLite file to WAL answers "locked" at once, without the busy wait, when another
# process switches it at the same moment; one of six processes opening a new store together hit it.
CONNECT_TRIES = 50
CONNECT_PAUSE = 0.1


def _connect() -> None:
    for attempt in range(CONNECT_TRIES):
        try:
            db.connect(reuse_if_open=True)
            return
        except peewee.OperationalError as exc:
            if "locked" not in str(exc).lower() or attempt == CONNECT_TRIES - 1:
                raise
            if not db.is_closed():
                db.close()
            time.sleep(CONNECT_PAUSE)


def missing_store_message(url: str) -> str:
    path = sqlite_path(url)
    where = str(path) if path is not None else display_url(url)
    return f"no Strata database at {where} (run `strata ingest …` or `strata demo` to make one, or pass --create)"


def require_existing(url: str) -> None:
    """Refuse a SQLite store that is not there, before anything (a directory, the file) is made.
    An empty file is no store either: SQLite would turn it into one."""
    path = sqlite_path(url)
    if path is None or str(path) == ":memory:":
        return  # a server database is looked at once connected (_has_schema)
    try:
        empty = path.is_file() and path.stat().st_size == 0
    except OSError:
        empty = False
    if not path.exists() or empty:
        raise StoreUnavailableError(missing_store_message(url))


def _has_schema() -> bool:

    return SchemaVersion._meta.table_name in set(db.get_tables())


def _refuse_other_encoding(url: str) -> None:
    """A PostgreSQL database must store UTF-8: in a SQL_ASCII (or LATIN1) one the first message
    with an en dash failed deep in the driver with a UnicodeEncodeError."""
    if sqlite_path(url) is not None:
        return
    encoding = db.execute_sql("SHOW server_encoding").fetchone()[0]
    if str(encoding).upper().replace("-", "") != "UTF8":
        raise StoreUnavailableError(
            f"database {display_url(url)} stores text as {encoding}; Strata needs UTF8 "
            "(CREATE DATABASE … ENCODING 'UTF8' TEMPLATE template0)"
        )


def _refuse_foreign(url: str) -> None:
    """A database another program made is not turned into a Strata store: on SQLite one with
    any table but no Strata schema version (a stray --db would add a hundred tables to the
    file); on PostgreSQL, where a team may share one database, one whose tables clash with ours."""

    tables = {t for t in db.get_tables() if not t.startswith("sqlite_")}
    if SchemaVersion._meta.table_name in tables:
        return
    ours = {model._meta.table_name for model in ALL_MODELS}
    clash = sorted(tables & ours) if sqlite_path(url) is None else sorted(tables)
    if clash:
        shown = ", ".join(clash[:5]) + (", …" if len(clash) > 5 else "")
        raise StoreUnavailableError(
            f"database {display_url(url)} holds tables that are not a Strata store's ({shown}); "
            "give Strata a database of its own"
        )


def unavailable_reason(url: str, exc: BaseException) -> str:
    """What an error opening ``url`` means, in words a person can act on (never its password)."""

    text = redact_text(str(exc).strip()) or type(exc).__name__
    lowered = text.lower()
    path = sqlite_path(url)  # make_database read it already: a malformed sqlite:// URL never gets here
    where = str(path) if path is not None else display_url(url)
    if "file is not a database" in lowered or "malformed" in lowered:
        return f"{where} is not a SQLite database, or it is damaged ({text})"
    if "locked" in lowered or "busy" in lowered:
        return f"{where} is locked by another writer (waited 5 s); try again when it is done"
    if "unable to open database file" in lowered:
        if path is not None and path.is_dir():
            return f"{where} is a directory; give a database file path"
        return f"cannot open {where}: check that its directory exists and is writable ({text})"
    if "readonly" in lowered or "read-only" in lowered or isinstance(exc, PermissionError):
        return f"cannot write {where}: it or its directory is read-only ({text})"
    if isinstance(exc, peewee.ImproperlyConfigured) and "psycopg" in lowered:
        return (
            f"PostgreSQL needs the psycopg2 driver to open {where}: pip install 'strata-memory[postgres]' "
            "(from a checkout: pip install -e '.[postgres]')"
        )
    if isinstance(exc, OSError):
        return f"cannot open {where}: {text}"
    return f"cannot open database {where}: {text}"


def _require_tables(url: str) -> None:
    """A store missing one of its tables (dropped by hand, a damaged file) is refused at open
    with the table's name, instead of every command failing later on "no such table"."""

    present = set(db.get_tables())
    missing = sorted(m._meta.table_name for m in ALL_MODELS if m._meta.table_name not in present)
    if missing:
        raise StoreUnavailableError(
            f"database {display_url(url)} is damaged: table{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            "missing; restore it from a backup"
        )
