"""The demo memory: a bundled sample conversation, ingested and derived."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Callable

DEMO_NAMESPACE = "demo"


@dataclass(frozen=True)
class DemoResult:
    path: str | None
    namespace: str
    messages: int
    threads: int
    blocks_ready: int
    blocks_pending: int
    open_tail_turns: int


def demo_source() -> Path:
    return Path(str(files("core") / "demo_data" / "demo.jsonl"))


def _stored_namespaces(path: Path) -> list[str] | None:
    """The namespace names in the SQLite file at ``path``; None when it is not a Strata database.
    Read with plain sqlite3: opening it as a store would migrate (write to) a file that may not be ours."""
    import sqlite3

    from core.models import Namespace, SchemaVersion

    try:
        connection = sqlite3.connect(str(path))
    except sqlite3.Error:
        return None
    try:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return []  # an empty file or database (an interrupted build): nothing to lose
        if SchemaVersion._meta.table_name not in tables or Namespace._meta.table_name not in tables:
            return None
        return [row[0] for row in connection.execute(f'SELECT name FROM "{Namespace._meta.table_name}"')]
    except sqlite3.Error:  # "file is not a database"
        return None
    finally:
        connection.close()


def check_replaceable(path: Path) -> None:
    """Refuse to build the demo over anything but an earlier demo: the build deletes the file first."""
    from core.errors import InvalidInputError

    if not os.path.lexists(path):
        return
    hint = "the demo rebuilds its database from scratch; give it another --db, or remove the file yourself"
    if not path.is_file():
        raise InvalidInputError(f"{path} exists and is not a regular file; {hint}")
    names = _stored_namespaces(path)
    if names is None:
        raise InvalidInputError(f"{path} exists and is not a Strata database; {hint}")
    others = sorted(name for name in names if name != DEMO_NAMESPACE)
    if others:
        raise InvalidInputError(f"{path} holds namespace(s) other than {DEMO_NAMESPACE!r} "
                                f"({', '.join(map(repr, others))}); {hint}")


def build_demo(url: str, progress: Callable[[int, int, str], None] | None = None) -> DemoResult:
    """Build the demo database from scratch at ``url``. A file there is replaced only if it is an
    earlier demo store (a Strata database with no namespace but ``demo``): anything else is refused
    with InvalidInputError and left as it was."""
    from core.db import db, sqlite_path
    from core.ingest import ingest
    from core.services.derive import run_pending
    from core.services.stats import stats
    from core.store import open_store

    path = sqlite_path(url)
    if path is not None:
        check_replaceable(path)
        if db.obj is not None and not db.is_closed():
            db.close()
        for suffix in ("", "-wal", "-shm"):
            candidate = Path(str(path) + suffix)
            if candidate.exists():
                candidate.unlink()
    open_store(url)
    ingest("jsonl", demo_source(), namespace=DEMO_NAMESPACE)
    from core.models import Thread
    from core.services.capture import close_thread
    from core.services.spaces import get_namespace

    # The sample conversations are finished: seal their short tails so everything is derived.
    for thread in Thread.select().where(Thread.namespace == get_namespace(DEMO_NAMESPACE)):
        close_thread(DEMO_NAMESPACE, thread.name)
    run_pending(DEMO_NAMESPACE, progress=progress)
    result = stats(DEMO_NAMESPACE)
    return DemoResult(
        path=str(path) if path is not None else url,
        namespace=DEMO_NAMESPACE,
        messages=result.messages,
        threads=result.threads,
        blocks_ready=result.blocks_ready,
        blocks_pending=result.blocks_pending,
        open_tail_turns=result.open_tail_turns,
    )
