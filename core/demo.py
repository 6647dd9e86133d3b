"""The demo memory: a bundled sample conversation, ingested and derived."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from dataclasses import dataclass, replace
from importlib.resources import files
from pathlib import Path
from typing import Callable

import peewee

from core.agent_tools import MemoryTools
from core.api import open_store
from core.db import db, display_url, make_database, sqlite_path
from core.errors import InvalidInputError
from core.ingest import ingest
from core.models import Namespace, SchemaVersion, Thread, UsageReceipt
from core.services.capture import close_thread
from core.services.context import auto_context
from core.services.derive import run_pending
from core.services.spaces import get_namespace
from core.services.stats import stats

DEMO_NAMESPACE = "demo"
DEMO_SESSION = "demo-agent"  # the scripted agent session whose retrievals the demo's Traces view shows

# The scripted session: per round the tool, the question, what the agent adopts (the results whose
# text says all of these words; the first result when none does), why, and its receipt id.
AGENT_ROUNDS = (
    (
        "search_events",
        "When is the Atlas launch?",
        ("moved", "17"),
        "the launch moved to Tuesday, March 17",
        "demo:atlas-launch",
    ),
    (
        "search_raw",
        "Ivy passport appointment",
        ("Stadskantoor",),
        "the appointment was on Thursday, February 5 at the Stadskantoor",
        "demo:passport-appointment",
    ),
)
CONTEXT_QUESTION = "What should Maya pack for the Lisbon trip?"


@dataclass(frozen=True)
class DemoResult:
    path: str | None
    namespace: str
    messages: int
    threads: int
    blocks_ready: int
    blocks_pending: int
    open_tail_turns: int
    beside: str | None = None  # the earlier demo, still open elsewhere, that this one was built beside


def demo_source() -> Path:
    return Path(str(files("core") / "demo_data" / "demo.jsonl"))


def _stored_namespaces(path: Path) -> list[str] | None:
    """The namespace names in the SQLite file at ``path``; None when it is not a Strata database.
    Read with plain sqlite3: opening it as a store would migrate (write to) a file that may not be ours."""

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
    """Refuse to build the demo over anything but an earlier demo: the build replaces the file."""

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
        raise InvalidInputError(
            f"{path} holds namespace(s) other than {DEMO_NAMESPACE!r} ({', '.join(map(repr, others))}); {hint}"
        )


def check_server_replaceable(url: str) -> None:
    """On a server database nothing is replaced, so the demo is built only into one that holds no
    namespace but ``demo``: ingesting the sample into a person's own memory could not be undone.
    Read without migrating; a database that cannot be read is left for ``open_store`` to name."""

    database = make_database(url)
    try:
        database.connect()
        if Namespace._meta.table_name not in database.get_tables():
            return
        names = [row[0] for row in database.execute_sql(f'SELECT name FROM "{Namespace._meta.table_name}"')]
    except (peewee.DatabaseError, peewee.InterfaceError, peewee.ImproperlyConfigured):
        return
    finally:
        database.close()
    others = sorted(name for name in names if name != DEMO_NAMESPACE)
    if others:
        raise InvalidInputError(
            f"{display_url(url)} holds namespace(s) other than {DEMO_NAMESPACE!r} "
            f"({', '.join(map(repr, others))}); give the demo a database of its own"
        )


def build_demo(url: str, progress: Callable[[int, int, str], None] | None = None) -> DemoResult:
    """Build the demo database from scratch for ``url``. A file there is replaced only if it is an
    earlier demo store (a Strata database with no namespace but ``demo``): anything else is refused
    with InvalidInputError and left as it was.

    An earlier demo is never deleted under a program that has it open (a workbench would go on
    reading a deleted file, or write into the new one's journal): the new demo is built under a
    temporary name beside it and moved over it only when no other connection holds it; otherwise
    it is kept beside, as ``demo-<time>.db``, and ``DemoResult.path`` names that file."""

    path = sqlite_path(url)
    if path is None:
        check_server_replaceable(url)
        return _build(url, progress)
    check_replaceable(path)
    if db.obj is not None and not db.is_closed():
        db.close()
    if not os.path.lexists(path):
        return _build(url, progress)
    building = path.with_name(f".{path.name}.building-{os.getpid()}")
    _remove_database(building)
    try:
        result = _build(f"sqlite:///{building}", progress)
        db.close()
        _fold_journal(building)
        final = _switch(building, path)
    except BaseException:
        if db.obj is not None and not db.is_closed():
            db.close()
        _remove_database(building)
        raise
    return replace(result, path=str(final), beside=str(path) if final != path else None)


def _build(url: str, progress: Callable[[int, int, str], None] | None) -> DemoResult:

    path = sqlite_path(url)
    open_store(url)
    ingest("jsonl", demo_source(), namespace=DEMO_NAMESPACE)

    # The sample conversations are finished: seal their short tails so everything is derived.
    # In id order: without one PostgreSQL returns rows in no fixed order, and the tails' block ids would vary.
    for thread in Thread.select().where(Thread.namespace == get_namespace(DEMO_NAMESPACE)).order_by(Thread.id):
        close_thread(DEMO_NAMESPACE, thread.name)
    run_pending(DEMO_NAMESPACE, progress=progress)
    agent_session()
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


def agent_session() -> None:
    """A short agent session over the derived demo, through the agent tools as a harness calls
    them: each round searches, assesses the batch sufficient with the results it adopts, and
    records their use; then one automatic context build. The Traces view and the context ledger
    then show real retrievals. The same every time: fixed session, questions and receipt ids."""

    receipts = [receipt for *_, receipt in AGENT_ROUNDS]
    ns = Namespace.get_or_none(Namespace.name == DEMO_NAMESPACE)
    if (
        ns is not None
        and UsageReceipt.select().where((UsageReceipt.namespace == ns) & UsageReceipt.receipt_id.in_(receipts)).exists()
    ):
        return  # a demo rebuilt in place on a server: the session was run by the earlier build
    tools = MemoryTools(DEMO_NAMESPACE, session=DEMO_SESSION, budget=None)
    for tool, question, words, fit, receipt in AGENT_ROUNDS:
        found = tools.call(tool, {"query": question})
        results = found["results"]
        adopted = [r["ref"] for r in results if all(w in _result_text(r) for w in words)][:2]
        adopted = adopted or [r["ref"] for r in results[:1]]
        tools.call(
            "assess",
            {
                "batch_id": found["batch_id"],
                "verdict": "sufficient",
                "evidence_refs": adopted,
                "fit": fit,
                "missing": "",
                "next_strategy": "answer",
            },
        )
        tools.call("record_use", {"batch_id": found["batch_id"], "evidence_refs": adopted, "receipt_id": receipt})
    auto_context(DEMO_NAMESPACE, CONTEXT_QUESTION, session=DEMO_SESSION)


def _result_text(result: dict) -> str:
    message = result.get("message") or {}
    return " ".join(str(x) for x in (result.get("title"), result.get("summary"), message.get("content")) if x)


_JOURNALS = ("-wal", "-shm", "-journal")


def _remove_database(path: Path) -> None:

    for suffix in ("", *_JOURNALS):
        Path(str(path) + suffix).unlink(missing_ok=True)
    shutil.rmtree(f"{path}.search", ignore_errors=True)


def _fold_journal(path: Path) -> None:
    """Checkpoint what a connection still open in this process (a worker thread's) left in the
    write-ahead log into the file itself, so the file moves alone."""

    connection = sqlite3.connect(str(path), timeout=5)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


def _switch(building: Path, path: Path) -> Path:
    """Move the finished demo at ``building`` to ``path`` when no other connection holds the earlier
    demo there; else to a new name beside it. Returns where it is."""

    holder = _exclusive(path)
    if holder is None:
        target = _free_name(path)
        os.rename(building, target)
        for suffix in _JOURNALS:
            Path(str(building) + suffix).unlink(missing_ok=True)
        shutil.rmtree(f"{building}.search", ignore_errors=True)
        return target
    # Nobody else has the earlier demo open: closing the lock's connection folds its log back, and
    # the leftover -wal/-shm go before the move so the new file never meets the old one's journal.
    holder.close()
    for suffix in _JOURNALS:
        Path(str(path) + suffix).unlink(missing_ok=True)
        Path(str(building) + suffix).unlink(missing_ok=True)
    os.replace(building, path)
    shutil.rmtree(f"{path}.search", ignore_errors=True)  # the old demo's index copies
    shutil.rmtree(f"{building}.search", ignore_errors=True)
    return path


def _exclusive(path: Path):
    """A sqlite3 connection holding an exclusive lock on ``path``; None when another connection (a
    workbench, in this process or another) holds any lock on it, or it cannot be locked at all."""

    try:
        connection = sqlite3.connect(str(path), timeout=0, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        connection.execute("PRAGMA locking_mode=EXCLUSIVE")
        connection.execute("BEGIN EXCLUSIVE")
        connection.execute("ROLLBACK")  # exclusive locking mode keeps the lock until close
    except sqlite3.Error:
        connection.close()
        return None
    return connection


def _free_name(path: Path) -> Path:

    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        candidate = path.with_name(f"{path.stem}-{stamp}{'' if n == 1 else f'-{n}'}{path.suffix}")
        if not os.path.lexists(candidate):
            return candidate
    raise FileExistsError(f"no free name beside {path}")
