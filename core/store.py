"""Opening a Strata database: pick the engine, migrate, recover interrupted work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from core.db import db, make_database, resolve_url, sqlite_path
from core.migrations import migrate


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


def open_store(url: str | None = None, *, recover: bool = True,
               progress: Callable[[int, int, str], None] | None = None) -> Store:
    """Open (and create or migrate) the database named by ``url``/``$STRATA_DB``/default.

    Jobs left ``running`` by a killed process become failed-and-retryable here. ``progress``
    follows the migrations of an older store (see ``core.migrations.migrate``).
    """
    resolved = resolve_url(url)
    if not db.is_closed() if db.obj is not None else False:
        db.close()
    db.initialize(make_database(resolved))
    db.connect(reuse_if_open=True)
    version = migrate(progress=progress)
    store = Store(url=resolved, schema_version=version)
    if recover:
        from core.services.jobs import recover_interrupted

        recover_interrupted()
    return store
