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
import threading
from pathlib import Path
from urllib.parse import urlparse, urlunparse

TEST_DB = os.environ.get("STRATA_TEST_DB", "").strip()


def on_postgres() -> bool:
    return TEST_DB.startswith(("postgresql://", "postgres://"))


def engine_name() -> str:
    return "postgresql" if on_postgres() else "sqlite"


_admin = None
_numbers = itertools.count(1)
_created: list[str] = []  # databases this process made and has not dropped, oldest first


def _connect():
    import psycopg2

    connection = psycopg2.connect(TEST_DB)
    connection.autocommit = True  # CREATE and DROP DATABASE run outside transactions
    return connection


def _admin_cursor():
    """A cursor on the ``STRATA_TEST_DB`` database."""
    global _admin
    if _admin is None or _admin.closed:
        _admin = _connect()
    return _admin.cursor()


def _url_of(name: str) -> str:
    parts = urlparse(TEST_DB)
    return urlunparse(parts._replace(path=f"/{name}"))


def _name_of(url: str) -> str:
    return urlparse(url).path.lstrip("/")


def _new_name() -> str:
    return f"strata_t_{os.getpid()}_{next(_numbers)}"


def _clone(cursor, name: str, template: str) -> None:
    # FILE_COPY (PostgreSQL 15+) copies the template's files instead of writing every page to
    # the WAL: 6 ms instead of 40 for template0.
    strategy = " STRATEGY FILE_COPY" if cursor.connection.server_version >= 150000 else ""
    cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"{strategy}')


def _create(template: str = "template0") -> str:
    name = _new_name()
    cursor = _admin_cursor()
    if template != "template0":
        # CREATE DATABASE … TEMPLATE needs the template to have no other sessions, and a
        # workbench worker thread may have left one open.
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (template,),
        )
    _clone(cursor, name, template)
    _created.append(name)
    return _url_of(name)


def database_encoded_as(encoding: str) -> str:
    """A new, empty PostgreSQL database storing text as ``encoding`` (dropped with the test)."""
    name = _new_name()
    _admin_cursor().execute(
        f"CREATE DATABASE \"{name}\" ENCODING '{encoding}' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
    )
    _created.append(name)
    return _url_of(name)


class _Spares:
    """Clones of the schema template made, and finished databases dropped, on a thread of its own.

    A clone takes 10-60 ms (FILE_COPY checkpoints, so it costs more the more the last test
    wrote) and a DROP right after a test often waits 100 ms for the test's server process to
    exit: done in line, that was most of a PostgreSQL pass's extra time. The thread keeps a few
    clones ready and drops what tests are done with while they run."""

    SPARE = 3

    def __init__(self, template: str) -> None:
        self.template = template
        self.ready: list[str] = []
        self.doomed: list[str] = []
        self.stopping = False
        self.failure: BaseException | None = None
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="strata-test-databases", daemon=True)
        self.thread.start()

    def take(self) -> str | None:
        with self.changed:
            name = self.ready.pop(0) if self.ready else None
            self.changed.notify()
            return name

    def discard(self, name: str) -> None:
        with self.changed:
            self.doomed.append(name)
            self.changed.notify()

    def _run(self) -> None:
        try:
            cursor = _connect().cursor()
            while True:
                with self.changed:
                    while not (self.stopping or self.doomed or len(self.ready) < self.SPARE):
                        self.changed.wait()
                    if self.stopping:
                        break
                    doomed, self.doomed = self.doomed, []
                    wanted = len(self.ready) < self.SPARE
                for name in doomed:
                    cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                if wanted:
                    name = _new_name()
                    _clone(cursor, name, self.template)
                    with self.changed:
                        self.ready.append(name)
            cursor.connection.close()
        except BaseException as exc:  # noqa: BLE001 - the tests fall back to making their own
            self.failure = exc

    def close(self) -> None:
        """Stop the thread and drop every database it still holds."""
        with self.changed:
            self.stopping = True
            self.changed.notify()
        self.thread.join(timeout=60)
        cursor = _admin_cursor()
        for name in self.doomed + self.ready:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.doomed, self.ready = [], []


_spares: _Spares | None = None


def drop(url: str) -> None:
    """Drop a database made by ``fresh_url``/``copy_of``, whoever is still connected to it."""
    name = _name_of(url)
    if name in _created:
        _created.remove(name)
        if _spares is not None and _spares.failure is None:
            _spares.discard(name)
        else:
            _admin_cursor().execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def mark() -> int:
    return len(_created)


def drop_since(position: int) -> None:
    """Drop the databases made after ``mark()`` returned ``position``."""
    for name in list(reversed(_created[position:])):
        drop(_url_of(name))


def start_session() -> None:
    """Make the database new stores are cloned from on PostgreSQL (empty, with the current
    schema: creating a store's tables and indexes takes ~50 ms, cloning them a fraction of that)
    and start keeping clones of it ready. Call before any test opens a store: this opens one
    through the shared connection."""
    global _spares
    from core.db import db
    from core.api import open_store

    if _spares is None:
        url = _create()
        open_store(url, recover=False)
        db.close()
        _spares = _Spares(_name_of(url))


def end_session() -> None:
    global _spares
    if _spares is not None:
        _spares.close()
        _spares = None
    drop_since(0)


def fresh_url(tmp_path: Path, name: str = "strata.db", *, empty: bool = False) -> str:
    """The URL of a new store for the engine under test: on SQLite a file not made yet (it appears
    when the store is opened); on PostgreSQL a new database holding the current schema and no
    rows (opening it is then a version check), or nothing at all with ``empty``."""
    if not on_postgres():
        return f"sqlite:///{tmp_path / name}"
    if empty or _spares is None:
        return _create()
    spare = _spares.take()
    if spare is None:
        return _create(_spares.template)
    _created.append(spare)
    return _url_of(spare)


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
    source = Path(template[len("sqlite:///") :]) if isinstance(template, str) else template
    shutil.copy(source, target)
    return f"sqlite:///{target}"


def say_and_derive(
    namespace: str, said: list[tuple[str, str]], *, first_day: str = "2026-01-10", close_turn: bool = False
) -> None:
    """Store ``said`` ((role, text) pairs: Maya the user, the Assistant) in thread "t", one day apart
    from ``first_day``, close the thread and derive it offline (with no failed job)."""
    from datetime import date, timedelta

    from core.services.capture import append_messages, close_thread
    from core.services.derive import run_pending

    start = date.fromisoformat(first_day)
    append_messages(
        namespace,
        "t",
        [
            {
                "role": role,
                "content": text,
                "speaker": "Maya" if role == "user" else "Assistant",
                "created_at": f"{start + timedelta(days=i)}T10:00:00+00:00",
            }
            for i, (role, text) in enumerate(said)
        ],
        close_turn=close_turn,
    )
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
