"""The workbench's one door to the database.

Screens never call ``core`` services directly. Reads go through ``Backend.submit``: one
database thread with one connection that stays open, running them in the order asked
(a read whose view no longer wants it is dropped before it starts). Two queries side by
side in one process slow each other down several times over (SQLite shares its
allocator), and a warm connection keeps its page cache. Writes and long operations
(imports, retries, a lift, search) run in their own thread workers through
``Backend.session``, which gives the thread its own connection for that unit of work.
Both open the store on first use (once per app) and refuse to run on the event-loop
thread, so a slip that would freeze the UI fails loudly instead.
"""

from __future__ import annotations

import itertools
import queue
import threading
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, TypeVar

from core.db import db
from core.errors import StoreUnavailableError

R = TypeVar("R")


class LoopThreadError(RuntimeError):
    """A database call was attempted on the event-loop thread."""


class RetiredError(StoreUnavailableError):
    """A read or session asked of a backend the workbench has left for another database."""


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
        self._lane: threading.Thread | None = None
        self._closing: threading.Thread | None = None  # the database thread after close()
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()
        self._running: tuple[Future, object] | None = None  # the read under way and its connection
        self._running_lock = threading.Lock()
        self._retired = False

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
                # start-up time: the store's tables and migrations load off the event loop; core.store, not
                # core.api (every service, numpy): a view loads the services it reads
                from core.store import open_store

                store = open_store(self.url)
                self._info = StoreInfo(store.url, store.path, store.schema_version)
                db.close()  # the opening thread's connection; sessions open their own
        return self._info

    def submit(self, call: Callable[[], R], priority: int = 1) -> "Future[R]":
        """Run ``call`` on the database thread: lower ``priority`` first, then in the order
        asked. Cancelling the future before it starts drops the read."""
        future: Future[R] = Future()
        if self._retired:
            future.set_exception(RetiredError("the workbench is switching to another database"))
            return future
        if self._lane is None:
            self._lane = threading.Thread(target=self._serve, name="strata-db", daemon=True)
            self._lane.start()
        self._queue.put((priority, next(self._order), future, call))
        return future

    def _serve(self) -> None:

        while True:
            _priority, _order, future, call = self._queue.get()
            if call is None:
                if not db.is_closed():
                    db.close()
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                self.open()
                self._guard()
                if db.is_closed():
                    db.connect()
                with self._running_lock:
                    self._running = (future, db.connection())
                try:
                    result = call()
                finally:
                    with self._running_lock:
                        self._running = None
                future.set_result(result)
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
                future.set_exception(exc)
            finally:
                if not db.is_closed() and db.in_transaction():  # a failed call may leave one
                    db.rollback()

    def interrupt(self, future: Future) -> None:
        """Drop a read nobody wants any more: unstarted, it never runs; running, its current
        query is interrupted (the engine stops it and the read fails, unseen)."""
        if future.cancel():
            return
        with self._running_lock:
            if self._running is not None and self._running[0] is future:
                connection = self._running[1]
                # sqlite3 interrupts; psycopg2 asks the server to cancel the statement.
                stop = getattr(connection, "interrupt", None) or connection.cancel
                stop()

    def close(self, wait: float | None = None) -> bool:
        """Close the database thread's connection once the reads before run, and end it; with
        ``wait``, wait up to that many seconds for it (a read under way is interrupted first, and
        a thread closed earlier is waited for too). True once no connection of it is left."""
        lane = self._lane
        if lane is not None:
            self._lane = None
            self._closing = lane
            self._queue.put((1 << 30, next(self._order), None, None))
        lane = self._closing
        if wait is None or lane is None:
            return lane is None or not lane.is_alive()
        with self._running_lock:
            running = self._running
        if running is not None:
            self.interrupt(running[0])
        lane.join(wait)
        return not lane.is_alive()

    def retire(self) -> None:
        """Leave this database for good (the workbench opens another): the reads already asked
        run, the database thread closes its connection and ends, and this waits for it, so the
        next store is opened with no connection to this one left. Reads and sessions asked
        afterwards fail. Called from a worker thread."""
        self._guard()
        self._retired = True
        lane = self._lane
        self.close()
        if lane is not None:
            lane.join()

    @contextmanager
    def session(self) -> Iterator[StoreInfo]:
        """A connection for one unit of work on the calling (worker) thread."""
        if self._retired:
            raise RetiredError("the workbench is switching to another database")
        info = self.open()

        self._guard()
        with db.connection_context():
            yield info
