"""Derivation that does not depend on how it is run: one run, concurrent runs, N workers, a run
killed and resumed all derive the same memory; claims follow indexes; a store opened by several
processes at once is created once."""

from __future__ import annotations

import subprocess
import sys

import pytest

from core.db import db
from core.models import Block, Job
from core.services import jobs as jobsvc
from core.services.capture import append_messages, close_thread
from core.services.derive import run_pending
from core.services.derive_workers import run_workers
from core.services.export import comparable_memory
from core.services.spaces import configure_namespace
from core.api import open_store
from tests.stores import close_template, copy_of

# Two people over several weeks: moves, a pet, jobs and plans, so extraction reads earlier blocks'
# events, corrections supersede, and one-value graph facts change value.
SAID = [
    ("Maya", "I live in Utrecht with my partner Tom."),
    ("Maya", "My dog Rex turned three last week."),
    ("Maya", "I started a new job at Acme as a data engineer."),
    ("Maya", "We are planning a trip to Lisbon on March 14."),
    ("Maya", "Tom works at Globex as a designer."),
    ("Maya", "I moved to Berlin for the new role."),
    ("Maya", "Actually the Lisbon trip moved to March 21."),
    ("Maya", "I no longer work at Acme; I joined Initech."),
    ("Maya", "We finally moved to Oslo in May."),
    ("Maya", "Rex loves the snow here."),
    ("Maya", "My sister Ana visits us in June."),
    ("Maya", "I am vegetarian now."),
]


def _build(namespaces: tuple[str, ...] = ("ns-a", "ns-b")) -> None:
    for n, name in enumerate(namespaces):
        configure_namespace(name, block_turn_size=2)
        messages = []
        for i, (speaker, text) in enumerate(SAID[n:] + SAID[:n]):
            day = f"2026-0{1 + i // 6}-{10 + i % 6:02d}"
            messages.append(
                {"role": "user", "speaker": speaker, "content": text, "created_at": f"{day}T10:00:00+00:00"}
            )
            messages.append(
                {
                    "role": "assistant",
                    "speaker": "Assistant",
                    "content": f"Noted: {text.lower()}",
                    "created_at": f"{day}T10:00:05+00:00",
                }
            )
        append_messages(name, "t", messages)
        close_thread(name, "t")


@pytest.fixture
def built(tmp_path, db_url):
    """A captured, underived store (closed) and a way to get private copies of it."""
    open_store(db_url)
    _build()
    close_template()

    def fresh(name: str) -> str:
        return copy_of(db_url, tmp_path / f"{name}.db")

    return fresh


def _memory(url: str) -> dict:
    open_store(url)
    try:
        return {name: comparable_memory(name) for name in ("ns-a", "ns-b")}
    finally:
        db.close()


_DERIVE = "import sys; from workbench.cli import main; sys.exit(main(['derive', '--db', sys.argv[1], '--json']))"


def test_workers_and_concurrent_runs_derive_what_one_run_derives(built):
    one = built("one")
    open_store(one)
    assert run_pending().failed == 0
    db.close()
    expected = _memory(one)
    assert expected["ns-a"]["events"] and expected["ns-a"]["graph"]["facts"]

    workers = built("workers")
    open_store(workers)
    report = run_workers(workers, workers=2)
    db.close()
    assert report.failed == 0 and _memory(workers) == expected

    both = built("both")
    runs = [subprocess.Popen([sys.executable, "-c", _DERIVE, both], stdout=subprocess.DEVNULL) for _ in range(2)]
    assert [run.wait(timeout=120) for run in runs] == [0, 0]
    assert _memory(both) == expected


class KilledAfter:
    """Offline derivation that stops the run (as a kill would) when the ``n``-th job of ``kind``
    is half done: the model has answered, nothing is committed."""

    def __init__(self, kind: str, n: int) -> None:
        from core.providers.offline import OfflineProvider

        self.inner, self.kind, self.left = OfflineProvider(), kind, n

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _maybe_die(self, kind: str) -> None:
        if kind == self.kind:
            self.left -= 1
            if self.left == 0:
                raise KeyboardInterrupt  # not an Exception: the job stays running, as after kill -9

    def summarize_block(self, messages):
        self._maybe_die("summary")
        return self.inner.summarize_block(messages)

    def extract_events(self, context):
        self._maybe_die("extraction")
        return self.inner.extract_events(context)


@pytest.mark.parametrize("kind,n", [("summary", 3), ("extraction", 2), ("extraction", 5)])
def test_a_run_killed_and_resumed_derives_what_an_unkilled_run_derives(built, kind, n, monkeypatch):
    one = built("one")
    open_store(one)
    run_pending()
    db.close()
    expected = _memory(one)

    killed = built("killed")
    open_store(killed)
    with pytest.raises(KeyboardInterrupt):
        run_pending(provider=KilledAfter(kind, n))
    assert Job.select().where(Job.status == "running").count() == 1
    db.close()
    # The next process finds the job's claimant gone (this test process is alive, so say so).
    monkeypatch.setattr(jobsvc, "abandoned", lambda *_: True)
    open_store(killed)
    monkeypatch.undo()
    assert run_pending().failed == 0
    db.close()
    assert _memory(killed) == expected


def test_blocks_become_ready_in_their_order_whatever_finishes_first(store):
    _build(("ns-a",))
    # Summaries of later blocks first, as a second worker may well do.
    for job in Job.select().where(Job.kind == "summary").order_by(Job.id.desc()):
        Job.update(priority=job.id).where(Job.id == job.id).execute()
    run_pending()
    blocks = list(Block.select().order_by(Block.sequence))
    assert [b.ready_position for b in blocks] == list(range(1, len(blocks) + 1))


def test_an_extraction_waits_for_the_blocks_before_it(store, monkeypatch):
    _build(("ns-a",))
    run_pending(kinds=["summary"])
    first, second = Block.select().order_by(Block.sequence).limit(2)
    held = jobsvc.claim_next(kinds=("extraction",))
    assert held.block_id == first.id
    # While the first block's extraction runs elsewhere, nothing else of the namespace may start.
    assert jobsvc.claim_next(kinds=("extraction", "graph")) is None
    jobsvc.fail(held, "ConnectionError: reset", transient=True)
    jobsvc.recover_interrupted()
    again = jobsvc.claim_next(kinds=("extraction",))
    assert again is None or again.block_id == first.id  # due after its backoff, never the second block


@pytest.mark.sqlite_only(reason="reads SQLite's query plans")
def test_claims_follow_indexes(store):
    def plan(prepared, *args, params=None):
        sql, bound = prepared.build(*args).sql()
        return " ".join(str(row) for row in db.execute_sql(f"EXPLAIN QUERY PLAN {sql}", params or bound).fetchall())

    assert "block_namespace_id_status_sequence" in plan(jobsvc._HEAD_BLOCK, 1)
    assert "job_namespace_id_kind_status_priority_id" in plan(jobsvc._FIRST_OF, 1, "graph", "pending")
    assert "job_kind_status_priority_id" in plan(jobsvc._PENDING, None, ["summary"])
    assert "block_thread_id_sequence" in plan(jobsvc._NEXT_IN_THREAD, 1, 3)


_OPEN = "import sys; from core.store import open_store; open_store(sys.argv[1]); print('ok')"


def test_several_processes_opening_a_new_store_at_once_create_it_once(tmp_path):
    from tests.stores import fresh_url

    for round_ in range(3):
        url = fresh_url(tmp_path, f"new{round_}.db", empty=True)
        openers = [
            subprocess.Popen(
                [sys.executable, "-c", _OPEN, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(5)
        ]
        results = [opener.communicate(timeout=60) for opener in openers]
        assert [out.strip() for out, _ in results] == ["ok"] * 5, [err for _, err in results if err]
    open_store(url)
    from core.migrations import SCHEMA_VERSION, database_version

    assert database_version(db) == SCHEMA_VERSION
    db.close()


def test_comparable_memory_relabels_the_message_ids_a_receipt_names(tmp_path):
    """Two stores holding the same conversation under other message ids compare equal."""
    from core.services.capture import append_turn
    from tests.stores import fresh_url

    memories = []
    for name, detour in (("plain", False), ("detour", True)):
        open_store(fresh_url(tmp_path, f"{name}.db"))
        if detour:  # other rows first: the same turns get other ids
            append_turn("elsewhere", "x", "unrelated", "ok")
        append_turn(
            "ns", "t", "The launch is on March 3.", "Noted.", receipt_id="r1", created_at="2026-01-10T10:00:00+00:00"
        )
        memories.append(comparable_memory("ns"))
        db.close()
    assert memories[0]["receipts"]["ingestion"][0]["result"]["message_ids"] == [1, 2]
    assert memories[0] == memories[1]
