"""Several processes writing one store at once (on the engine under test): nothing lost, nothing
stored twice, every job claimed by one worker, and no driver error reaching a caller."""

from __future__ import annotations

import json
import subprocess
import sys

from core.db import db
from core.models import IngestionReceipt, Job, Message, Thread
from core.services.capture import append_turn
from core.services.spaces import configure_namespace
from core.api import open_store

_APPEND = """
import json, sys
from core.api import open_store
from core.services.capture import append_turn
open_store(sys.argv[1])
errors = []
for i in range(int(sys.argv[3])):
    try:
        append_turn("ns", sys.argv[4], f"{sys.argv[2]} says number {i}", "ok",
                    receipt_id=f"{sys.argv[5]}:{i}", created_at="2026-01-10T10:00:00+00:00")
    except Exception as exc:
        errors.append(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")
print(json.dumps(errors))
"""


def _run(db_url: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _APPEND, db_url, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _errors(processes: list[subprocess.Popen]) -> list[str]:
    errors = []
    for process in processes:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err
        errors += json.loads(out)
    return errors


def test_two_processes_appending_to_one_thread_lose_and_repeat_nothing(store, db_url):
    configure_namespace("ns", block_turn_size=4)
    db.close()
    writers = [_run(db_url, name, "150", "shared", name) for name in ("ana", "ben")]
    assert _errors(writers) == []
    open_store(db_url)
    thread = Thread.get(Thread.name == "shared")
    positions = [
        p
        for (p,) in Message.select(Message.position).where(Message.thread == thread).order_by(Message.position).tuples()
    ]
    assert positions == list(range(1, 601))  # 2 writers x 150 turns x 2 messages, no gap, no clash
    said = [c for (c,) in Message.select(Message.content).where(Message.role == "user").tuples()]
    assert sorted(said) == sorted(f"{who} says number {i}" for who in ("ana", "ben") for i in range(150))
    turns = [
        t for (t,) in Message.select(Message.ns_turn).where(Message.role == "user").order_by(Message.ns_turn).tuples()
    ]
    assert turns == list(range(1, 301))


def test_a_receipt_replayed_by_two_processes_at_once_is_stored_once(store, db_url):
    append_turn("ns", "t", "warm-up", "ok")
    db.close()
    # Both replay the same receipts (same content: the speaker part of the text is the same).
    replayers = [_run(db_url, "same", "120", "t", "turn") for _ in range(2)]
    assert _errors(replayers) == []
    open_store(db_url)
    assert IngestionReceipt.select().where(IngestionReceipt.receipt_id.startswith("turn:")).count() == 120
    assert Message.select().where(Message.role == "user").count() == 121


_CLAIM = """
import json, sys
from core.api import open_store
from core.services import jobs
open_store(sys.argv[1])
claimed = []
while (job := jobs.claim_next(kinds=("summary",))) is not None:
    claimed.append(job.id)
print(json.dumps(claimed), flush=True)
sys.stdin.readline()  # alive until every worker is done: a finished worker's claims would be recovered
"""


def test_each_job_is_claimed_by_exactly_one_of_several_workers(store, db_url):
    configure_namespace("ns", block_turn_size=1)
    for i in range(60):
        append_turn("ns", "t", f"turn {i} about the harbour", "ok")
    db.close()
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _CLAIM, db_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    claimed = []
    for worker in workers:
        line = worker.stdout.readline()
        assert line, worker.stderr.read()
        claimed += json.loads(line)
    for worker in workers:
        worker.communicate("go\n", timeout=60)
        assert worker.returncode == 0
    open_store(db_url, recover=False)
    summaries = [j for (j,) in Job.select(Job.id).where(Job.kind == "summary").tuples()]
    assert sorted(claimed) == sorted(summaries)  # every one claimed, none twice


def test_a_store_failing_under_a_read_is_a_strata_error_not_a_driver_error(store, db_url, capsys, monkeypatch):
    """A server gone or a disk error while reading reaches the caller as a StrataError (the CLI's one
    error line, the tools' store_unavailable), never as the driver's exception."""
    import peewee

    from core.agent_tools import MemoryTools
    from workbench.cli import main

    append_turn("ns", "t", "The launch is on March 3.", "Noted.")

    def gone(*args, **kwargs):
        raise peewee.OperationalError("server closed the connection unexpectedly")

    tools = MemoryTools("ns")
    monkeypatch.setattr(tools, "_handlers", {**tools._handlers, "search_events": gone})
    answer = tools.call_safe("search_events", {"query": "launch"})
    assert answer["error"]["code"] == "store_unavailable"
    assert "server closed the connection" in answer["error"]["message"]

    monkeypatch.setattr("core.services.stats.stats", gone)
    assert main(["stats", "--db", db_url]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "the database failed: server closed the connection" in err


def test_a_write_waiting_past_the_lock_timeout_is_store_unavailable_for_a_tool(store, monkeypatch):
    from core.agent_tools import MemoryTools
    from core.errors import StoreUnavailableError

    append_turn("ns", "t", "The launch is on March 3.", "Noted.")
    tools = MemoryTools("ns")

    def locked(*args, **kwargs):
        raise StoreUnavailableError("the database is locked by another writer (waited 5 s)")

    monkeypatch.setattr(tools, "_handlers", {**tools._handlers, "search_events": locked})
    assert tools.call_safe("search_events", {"query": "launch"})["error"]["code"] == "store_unavailable"
