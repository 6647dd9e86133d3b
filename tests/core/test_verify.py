"""`strata verify`: each check finds what it is for, in the namespace asked about only."""

from __future__ import annotations

import pytest

from core.db import db
from core.models import Block, Event, EventSource, GraphFact, GraphSource, Message
from core.services.spaces import get_namespace
from core.services.verify import verify
from core.api import open_store
from tests.stores import copy_of


@pytest.fixture
def demo(demo_template, tmp_path):
    open_store(copy_of(demo_template, tmp_path / "demo.db"), recover=False)
    yield "demo"
    db.close()


def _two_events_of_different_blocks() -> tuple[Event, Event]:
    first = Event.select().where(Event.block.is_null(False)).order_by(Event.id).first()
    other = (
        Event.select().where(Event.block.is_null(False) & (Event.block != first.block_id)).order_by(Event.id).first()
    )
    return first, other


def test_a_sound_store_passes_every_check_and_reports_progress(demo):
    seen = []
    report = verify(demo, progress=lambda done, total, label: seen.append((done, total, label)))
    assert report.ok and report.events == Event.select().count() > 0 and report.blocks_ready > 0
    assert report.graph_records > 0
    assert [done for done, _, _ in seen] == list(range(len(seen))) and seen[-1][0] == seen[-1][1] > 3


def test_uncited_events_and_citations_outside_their_block_are_reported(demo):
    uncited, moved = _two_events_of_different_blocks()
    EventSource.delete().where(EventSource.event == uncited.id).execute()
    stray = Message.select().where(Message.block != moved.block_id).order_by(Message.id).first()
    EventSource.insert(event=moved.id, message=stray.id, position=99).execute()
    loose = Message.select().where(Message.block.is_null(False)).order_by(Message.id.desc()).first()
    Message.update(block=None).where(Message.id == loose.id).execute()  # a cited message in no block
    cites_loose = EventSource.select().where(EventSource.message == loose.id).first()

    problems = verify(demo).problems
    assert f"event {uncited.id} cites no message" in problems
    assert f"event {moved.id} cites message {stray.id} outside its source block" in problems
    if cites_loose is not None:
        assert f"event {cites_loose.event_id} cites message {loose.id} outside its source block" in problems
    assert verify(None).problems == problems  # the whole store: the same, the demo being all of it

    # Another namespace sees none of it.
    from core.services.capture import append_turn

    append_turn("elsewhere", "chat", {"role": "user", "content": "hello"}, "hi")
    assert get_namespace("elsewhere") and verify("elsewhere").ok


def test_graph_records_without_evidence_are_reported(demo):
    fact = GraphFact.select().where(GraphFact.status == "active").order_by(GraphFact.id).first()
    GraphSource.delete().where((GraphSource.kind == "fact") & (GraphSource.record_id == fact.id)).execute()
    problems = verify(demo).problems
    assert f"graph fact {fact.id} cites no event" in problems
    assert f"graph fact {fact.id} is current but cites no existing event" in problems


def test_blocks_are_counted_by_state(demo):
    report = verify(demo)
    assert report.blocks == Block.select().count()
    assert report.blocks == report.blocks_ready + report.blocks_failed + report.blocks_waiting


def test_a_store_missing_a_table_is_refused_at_open_with_its_name(demo_template, tmp_path):
    from core.errors import StoreUnavailableError

    url = copy_of(demo_template, tmp_path / "demo.db")
    open_store(url, recover=False)
    db.execute_sql("DROP TABLE graphfact")
    db.close()
    with pytest.raises(StoreUnavailableError, match="damaged: table graphfact missing"):
        open_store(url)


def test_duplicate_cards_and_orphans_are_reported(demo):
    from core.db import insert_one
    from core.models import GraphNode, Job

    original = Event.select().where(Event.status == "active").order_by(Event.id).first()
    data = {k: v for k, v in original.__data__.items() if k != "id"}
    twin = insert_one(Event, data)  # what a job run twice would leave
    for source in EventSource.select().where(EventSource.event == original.id):
        EventSource.insert(event=twin.id, message=source.message_id, position=source.position).execute()
    # Same text citing other messages is no duplicate: two mentions of one thing.
    other_text = insert_one(Event, dict(data, block=original.block_id))
    EventSource.insert(
        event=other_text.id, message=Message.select().order_by(Message.id.desc()).first().id, position=0
    ).execute()

    block = Block.select().order_by(Block.id.desc()).first()
    Job.delete().where(Job.block == block.id).execute()
    Block.update(status="pending").where(Block.id == block.id).execute()  # waiting, with no job to derive it
    node = GraphNode.select().order_by(GraphNode.id.desc()).first()
    GraphSource.insert(kind="node", record_id=node.id + 1000, event=original.id).execute()

    problems = verify(demo).problems
    assert f"event {twin.id} duplicates event {original.id} (same text, same messages)" in problems
    assert not any(f"event {other_text.id} duplicates" in p for p in problems)
    assert f"block {block.id} waits for derivation but has no job (it would never be derived)" in problems
    assert f"a citation of graph node {node.id + 1000}, which does not exist" in problems


def test_current_truth_contradicted_by_a_later_statement_is_reported(demo):
    from core.models import EventLink, GraphNode

    assert not [p for p in verify(demo).problems if "superseded" in p or "current values" in p]
    # A correction whose target stayed current, an echo of a superseded statement left current.
    old, new = _two_events_of_different_blocks()
    EventLink.insert(event=new.id, target=old.id, kind="supersedes").execute()
    stated = Event.select().where(Event.status == "superseded").order_by(Event.id).first()
    echo = Event.select().where((Event.status == "active") & (Event.id != new.id)).order_by(Event.id.desc()).first()
    EventLink.insert(event=echo.id, target=stated.id, kind="same_event").execute()
    # A fact citing only superseded statements, and two current values of a one-value key.
    fact = GraphFact.select().where(GraphFact.status == "active").order_by(GraphFact.id).first()
    GraphSource.delete().where((GraphSource.kind == "fact") & (GraphSource.record_id == fact.id)).execute()
    GraphSource.insert(kind="fact", record_id=fact.id, event=stated.id).execute()
    node = GraphNode.select().order_by(GraphNode.id).first()
    for age in ("6", "7"):
        GraphFact.insert(node=node.id, key="age", value=age, status="active", created_at="x", updated_at="x").execute()
    problems = verify(demo).problems
    assert f"event {old.id} is current though event {new.id} superseded it" in problems
    assert any(p.startswith(f"event {echo.id} is current though it restates event {stated.id}") for p in problems)
    assert any(
        p.startswith(f"graph fact {fact.id} ") and "every statement it cites was superseded" in p for p in problems
    )
    assert f"graph node {node.id} holds 2 current values of the one-value key 'age'" in problems
