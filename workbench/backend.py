"""The workbench's one door to the database.

Screens never call ``core`` services directly: they run them through ``Backend.session``
inside thread workers. The session opens the store on first use (once per app), gives
the worker thread its own connection for that unit of work, and refuses to run on the
event-loop thread, so a slip that would freeze the UI fails loudly instead.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator


class LoopThreadError(RuntimeError):
    """A database call was attempted on the event-loop thread."""


@dataclass(frozen=True)
class StoreInfo:
    url: str
    path: str | None
    schema_version: int


class Backend:
    """Opens the store lazily and hands out per-thread connection contexts."""

    def __init__(self, url: str | None = None) -> None:
        self.url = url
        self.loop_thread: int | None = None
        self._lock = threading.Lock()
        self._info: StoreInfo | None = None

    @property
    def info(self) -> StoreInfo | None:
        return self._info

    def _guard(self) -> None:
        if self.loop_thread is not None and threading.get_ident() == self.loop_thread:
            raise LoopThreadError("database call on the event-loop thread; run it in a thread worker")

    def open(self) -> StoreInfo:
        """Open (create or migrate) the store once; later calls return the same info."""
        self._guard()
        with self._lock:
            if self._info is None:
                from core.db import db
                from core.store import open_store

                store = open_store(self.url, recover=False)
                self._info = StoreInfo(store.url, store.path, store.schema_version)
                db.close()  # the opening thread's connection; sessions open their own
        return self._info

    @contextmanager
    def session(self) -> Iterator[StoreInfo]:
        """A connection for one unit of work on the calling (worker) thread."""
        info = self.open()
        from core.db import db

        self._guard()
        with db.connection_context():
            yield info
