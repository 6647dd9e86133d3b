"""Database selection and connection setup.

Models bind to one ``DatabaseProxy``; ``open_database`` picks the engine from a URL
(``sqlite:///path``, a bare path, or ``postgresql://…``) and initialises the proxy.
SQLite is the embedded default, in WAL mode in the platform data dir.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from peewee import Database, DatabaseProxy, PostgresqlDatabase, SqliteDatabase

from core.errors import InvalidInputError

db = DatabaseProxy()

SQLITE_PRAGMAS = {
    "journal_mode": "wal",
    "foreign_keys": 1,
    "busy_timeout": 5000,
    "synchronous": "normal",
    "cache_size": -64000,
}

ENV_VAR = "STRATA_DB"


def default_sqlite_path() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("strata", appauthor=False)) / "strata.db"


def resolve_url(url: str | None) -> str:
    """The URL to open: the argument, else ``$STRATA_DB``, else the platform default."""
    chosen = url or os.environ.get(ENV_VAR)
    if chosen:
        return chosen
    return f"sqlite:///{default_sqlite_path()}"


def sqlite_path(url: str) -> Path | None:
    """The file path behind a SQLite URL or bare path; None for other engines."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///"):])
    if url.startswith("sqlite://"):
        raise InvalidInputError(f"database URL {url!r}: use sqlite:///relative/path or sqlite:////absolute/path")
    if "://" in url:
        return None
    return Path(url)


def make_database(url: str) -> Database:
    path = sqlite_path(url)
    if path is not None:
        if str(path) == ":memory:":
            # Thread workers would each see a separate empty database.
            raise InvalidInputError("in-memory SQLite is not supported; give a file path")
        path.parent.mkdir(parents=True, exist_ok=True)
        return SqliteDatabase(str(path), pragmas=SQLITE_PRAGMAS, timeout=5)
    if url.startswith(("postgres://", "postgresql://")):
        from urllib.parse import urlparse

        parts = urlparse(url)
        return PostgresqlDatabase(
            parts.path.lstrip("/"),
            user=parts.username,
            password=parts.password,
            host=parts.hostname,
            port=parts.port or 5432,
        )
    raise InvalidInputError(f"database URL {url!r}: unsupported scheme (use sqlite:/// or postgresql://)")


def is_sqlite() -> bool:
    return isinstance(db.obj, SqliteDatabase)


@contextmanager
def write_transaction() -> Iterator[None]:
    """A write transaction that takes the write lock up front on SQLite.

    BEGIN IMMEDIATE makes a second writer wait (busy timeout) at the start rather
    than fail half-way with a lock upgrade error.
    """
    if is_sqlite() and not db.in_transaction():
        with db.atomic("IMMEDIATE"):
            yield
    else:
        with db.atomic():
            yield


def bulk_insert(model, columns: list[str], rows: list[tuple], *, ignore_conflicts: bool = False) -> None:
    """Insert many rows with one prepared statement (executemany).

    peewee's insert_many builds SQL value by value, which dominated index writes; this
    keeps the statement portable by using the engine's own parameter marker. With
    ``ignore_conflicts`` a row that breaks a unique index is skipped (SQLite's OR IGNORE,
    PostgreSQL's ON CONFLICT DO NOTHING).
    """
    if not rows:
        return
    database = db.obj
    table = model._meta.table_name
    marker = database.param
    left, right = database.quote[0], database.quote[1]
    quoted = ", ".join(f"{left}{c}{right}" for c in columns)
    sqlite = is_sqlite()
    verb = "INSERT OR IGNORE" if ignore_conflicts and sqlite else "INSERT"
    tail = " ON CONFLICT DO NOTHING" if ignore_conflicts and not sqlite else ""
    sql = f"{verb} INTO {left}{table}{right} ({quoted}) VALUES ({', '.join([marker] * len(columns))}){tail}"
    cursor = database.cursor()
    cursor.executemany(sql, rows)


_INSERT_SQL: dict[tuple, str] = {}


def insert_one(model, values: dict):
    """Insert one row and return it as a model instance, like ``model.create`` (field
    defaults included) but without building the statement anew each time: peewee's SQL
    generation cost more than SQLite's insert on the derivation hot paths.
    """
    meta = model._meta
    instance = model(**values)
    data = {name: value for name, value in instance.__data__.items()
            if not (name == meta.primary_key.name and value is None)}
    fields = [meta.fields[name] for name in data]
    database = db.obj
    key = (meta.table_name, tuple(data), type(database))
    sql = _INSERT_SQL.get(key)
    if sql is None:
        left, right = database.quote[0], database.quote[1]
        columns = ", ".join(f"{left}{f.column_name}{right}" for f in fields)
        markers = ", ".join([database.param] * len(fields))
        returning = "" if is_sqlite() else f" RETURNING {left}{meta.primary_key.column_name}{right}"
        sql = _INSERT_SQL[key] = f"INSERT INTO {left}{meta.table_name}{right} ({columns}) VALUES ({markers}){returning}"
    cursor = database.execute_sql(sql, [f.db_value(v) for f, v in zip(fields, data.values())])
    setattr(instance, meta.primary_key.name, cursor.lastrowid if is_sqlite() else cursor.fetchone()[0])
    instance._dirty.clear()
    return instance
