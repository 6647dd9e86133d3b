"""Small helpers the test modules share (fixtures live in conftest.py).

The suite runs on SQLite, or on PostgreSQL when ``STRATA_TEST_DB`` holds a server URL
(``postgresql://postgres@127.0.0.1:5432/postgres``: a role that may create databases, and a
database to connect to for that). Tests get their stores through ``fresh_url`` and ``copy_of``
so they follow that switch: on PostgreSQL each is a database of its own, made here and dropped
when the test (or the fixture that made it) ends.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path
from urllib.parse import urlparse, urlunparse

TEST_DB = os.environ.get("STRATA_TEST_DB", "").strip()


def on_postgres() -> bool:
    return TEST_DB.startswith(("postgresql://", "postgres://"))


def engine_name() -> str:
    return "postgresql" if on_postgres() else "sqlite"


_admin = None
_numbers = itertools.count(1)
_created: list[str] = []  # databases this process made, oldest first


def _admin_cursor():
    """A cursor on the ``STRATA_TEST_DB`` database, in autocommit (CREATE DATABASE needs it)."""
    global _admin
    if _admin is None or _admin.closed:
        import psycopg2

        _admin = psycopg2.connect(TEST_DB)
        _admin.autocommit = True
    return _admin.cursor()


def _url_of(name: str) -> str:
    parts = urlparse(TEST_DB)
    return urlunparse(parts._replace(path=f"/{name}"))


def _name_of(url: str) -> str:
    return urlparse(url).path.lstrip("/")


def _create(template: str = "template0") -> str:
    name = f"strata_t_{os.getpid()}_{next(_numbers)}"
    cursor = _admin_cursor()
    if template != "template0":
        # CREATE DATABASE … TEMPLATE needs the template to have no other sessions, and a
        # workbench worker thread may have left one open.
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = %s AND pid <> pg_backend_pid()", (template,))
    # FILE_COPY (PostgreSQL 15+) copies the template's few files instead of logging every
    # page: about 8 ms a database instead of 25 ms.
    strategy = " STRATEGY FILE_COPY" if _admin.server_version >= 150000 else ""
    cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"{strategy}')
    _created.append(name)
    return _url_of(name)


def drop(url: str) -> None:
    """Drop a database made by ``fresh_url``/``copy_of``, whoever is still connected to it."""
    name = _name_of(url)
    if name in _created:
        _created.remove(name)
        _admin_cursor().execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def mark() -> int:
    return len(_created)


def drop_since(position: int) -> None:
    """Drop the databases made after ``mark()`` returned ``position``."""
    for name in list(reversed(_created[position:])):
        drop(_url_of(name))


def fresh_url(tmp_path: Path, name: str = "strata.db") -> str:
    """The URL of a new, empty store for the engine under test (nothing is created on SQLite:
    the file appears when the store is opened)."""
    if on_postgres():
        return _create()
    return f"sqlite:///{tmp_path / name}"


def close_template() -> None:
    """Close the open store so it can be copied: on SQLite with its WAL folded into the file
    first, on PostgreSQL so that no session is left on a database used as a template."""
    from core.db import db, is_sqlite

    if db.obj is not None and not db.is_closed():
        if is_sqlite():
            db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()


def copy_of(template: Path | str, target: Path) -> str:
    """A private copy of a closed template store (see the ``demo_template`` fixture); its URL.
    ``template`` is a SQLite file (or its URL), or on PostgreSQL the template database's URL,
    cloned into a new database (``target`` then only names nothing)."""
    if isinstance(template, str) and template.startswith(("postgresql://", "postgres://")):
        return _create(_name_of(template))
    source = Path(template[len("sqlite:///"):]) if isinstance(template, str) else template
    shutil.copy(source, target)
    return f"sqlite:///{target}"


def say_and_derive(namespace: str, said: list[tuple[str, str]], *, first_day: str = "2026-01-10",
                   close_turn: bool = False) -> None:
    """Store ``said`` ((role, text) pairs: Maya the user, the Assistant) in thread "t", one day apart
    from ``first_day``, close the thread and derive it offline (with no failed job)."""
    from datetime import date, timedelta

    from core.services.capture import append_messages, close_thread
    from core.services.derive import run_pending

    start = date.fromisoformat(first_day)
    append_messages(namespace, "t", [
        {"role": role, "content": text, "speaker": "Maya" if role == "user" else "Assistant",
         "created_at": f"{start + timedelta(days=i)}T10:00:00+00:00"} for i, (role, text) in enumerate(said)],
        close_turn=close_turn)
    close_thread(namespace, "t")
    assert run_pending(namespace, provider="offline").failed == 0


def query_plan(sql: str, params=()) -> str:
    """The plan the engine picks for ``sql``, as one string: SQLite's EXPLAIN QUERY PLAN, or
    PostgreSQL's EXPLAIN with sequential scans priced out (a test's few rows would be scanned
    whatever the indexes), so that it names an index whenever one can serve the query."""
    from core.db import db, is_sqlite

    if is_sqlite():
        return " ".join(str(row) for row in db.execute_sql("EXPLAIN QUERY PLAN " + sql, params).fetchall())
    with db.atomic():
        db.execute_sql("SET LOCAL enable_seqscan = off")
        return " ".join(row[0] for row in db.execute_sql("EXPLAIN " + sql, params).fetchall())
