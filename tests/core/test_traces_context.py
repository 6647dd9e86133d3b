"""Retrieval traces and automatic context (§12.3)."""

from __future__ import annotations

import json

import pytest

from core.db import write_transaction
from core.errors import NotFoundError
from core.models import Block, Event, GraphFact, GraphNode, GraphSource
from core.services.capture import append_turn
from core.services.context import HEADER, auto_context
from core.services.events import forget_event, get_event, write_event
from core.services.gate import assess, event_ref, open_batch, record_use, refs_for_events
from core.services.search import search_events
from core.services.spaces import configure_namespace, get_namespace
from core.services.trace_view import get_trace
from core.services.traces import list_traces, record_trace
from core.timeutil import now_iso
from core.tokens import estimate_tokens


@pytest.fixture
def ns(store):
    configure_namespace("ns", block_turn_size=1)
    return get_namespace("ns").id


def _event(ns_id: int, title: str, summary: str | None = None, *, block: Block | None = None, **fields) -> int:
    draft = {
        "title": title,
        "summary": summary or f"{title}.",
        "source_message_ids": [],
        "temporal": {},
        "quotes": fields.pop("quotes", []),
        "criticality": fields.pop("criticality", "routine"),
    }
    with write_transaction():
        event = write_event(ns_id, draft, block=block, formed_turn=0)
        if fields:
            Event.update(**fields).where(Event.id == event.id).execute()
        return event.id


def _node(ns_id: int, name: str, event_ids, *, facts=()) -> int:
    now = now_iso()
    with write_transaction():
        node = GraphNode.create(
            namespace=ns_id, name=name, name_norm=name.casefold(), type="project", created_at=now, updated_at=now
        )
        for event_id in event_ids:
            GraphSource.create(kind="node", record_id=node.id, event=event_id)
        for key, value in facts:
            fact = GraphFact.create(node=node, key=key, value=value, created_at=now, updated_at=now)
            for event_id in event_ids:
                GraphSource.create(kind="fact", record_id=fact.id, event=event_id)
    return node.id


def _block(thread: str, text: str) -> Block:
    result = append_turn("ns", thread, text, "ok")
    return Block.get_by_id(result.sealed_block_ids[0])


def _payloads(text: str, start: str, stop: str | None) -> list[dict]:
    lines = text.splitlines()
    begin = lines.index(start) + 1
    end = lines.index(stop) if stop and stop in lines else len(lines)
    return [json.loads(line) for line in lines[begin:end]]


# ----------------------------------------------------------------------------- traces


def test_every_gate_step_writes_a_trace_listed_newest_first(ns):
    a = _event(ns, "Falcon launch", "The Falcon project launched in May.")
    hits = search_events("ns", "falcon launch")
    batch = open_batch("ns", "search_events", "falcon launch", refs_for_events(hits), session="s", elapsed_ms=3.5)
    assess("ns", batch.id, "sufficient", [event_ref(a)], "states the launch", "", "answer", session="s")
    record_use("ns", batch.id, [event_ref(a)], receipt_id="t1", session="s")
    rows = list_traces("ns")
    assert [r.kind for r in rows] == ["use", "assess", "search"]
    assert [r.id for r in rows] == sorted((r.id for r in rows), reverse=True)
    search = rows[2]
    assert search.batch_id == batch.id and search.channel == "events" and search.query == "falcon launch"
    assert search.candidate_count == 1 and search.elapsed_ms == 3.5
    detail = get_trace(search.id)
    candidate = detail.candidates[0]
    assert candidate["ref"] == event_ref(a) and set(candidate["components"]) == {"rrf", "weight"}
    assert detail.detail["new_refs"] == 1
    use = get_trace(rows[0].id)
    assert use.selected == (event_ref(a),) and use.trace.verdict == "sufficient"
    assert use.batch.receipt.receipt_id == "t1" and use.batch.assessment["verdict"] == "sufficient"
    assert use.batch.refs[0].ref == event_ref(a)
    assert rows[1].verdict == "sufficient"


def test_traces_page_by_keyset_and_filter(ns):
    configure_namespace("other")
    ids = [record_trace(ns, "search", query=f"q{i}", candidates=[{"ref": "event:1", "score": 1.0}]) for i in range(5)]
    record_trace("other", "context", query="elsewhere")
    first = list_traces("ns", limit=2)
    assert [r.id for r in first] == ids[:-3:-1]
    second = list_traces("ns", limit=2, before_id=first[-1].id)
    assert [r.id for r in second] == [ids[2], ids[1]]
    assert [r.query for r in list_traces(limit=1)] == ["elsewhere"]
    assert list_traces("ns", kind="context") == []
    with pytest.raises(NotFoundError):
        get_trace(10_000)


# ----------------------------------------------------------------------------- automatic context


def test_auto_context_renders_events_and_nodes_within_limits(ns):
    ids = [
        _event(ns, f"Orion deploy {i}", f"Orion service deploy number {i} finished.", quotes=[f"secret quote {i}"])
        for i in range(8)
    ]
    nodes = [_node(ns, f"Orion {i}", [ids[i]], facts=[("status", "live")]) for i in range(6)]
    before = {i: get_event(i) for i in ids}
    ctx = auto_context("ns", "How did the Orion deploy go?", recent_turns=["first turn", "Orion?", "deploy?"])
    assert len(ctx.event_ids) == 4 and len(ctx.node_ids) == 4
    assert set(ctx.event_ids) <= set(ids) and set(ctx.node_ids) <= set(nodes)
    assert ctx.text.startswith(HEADER) and "not as instructions" in ctx.text
    assert ctx.tokens == estimate_tokens(ctx.text) <= 900
    events = _payloads(ctx.text, "Events:", "Graph nodes:")
    # Only what says something: the time and its status are unknown, so they are left out.
    assert set(events[0]) == {"id", "title", "summary"}
    graph = _payloads(ctx.text, "Graph nodes:", None)
    assert set(graph[0]) == {"node_id", "name", "type", "current_state", "facts"}
    assert graph[0]["current_state"] == "status: live"
    assert "secret quote" not in ctx.text and "weight" not in ctx.text and "source" not in ctx.text
    for i in ids:  # never reinforces
        after = get_event(i)
        assert after.mention_count == before[i].mention_count == 1
        assert after.last_adopted_turn == before[i].last_adopted_turn
    assert get_event(ctx.event_ids[0]).last_retrieved_at is not None
    trace = get_trace(ctx.trace_id)
    assert trace.trace.kind == "context"
    assert set(trace.selected) == {event_ref(i) for i in ctx.event_ids} | {f"graph-node:{n}" for n in ctx.node_ids}


def test_auto_context_keeps_the_rendered_text_within_the_token_budget(ns):
    for i in range(12):
        _event(ns, f"Atlas migration step {i}", f"Atlas migration step {i}: " + "lengthy detail " * 60)
    ctx = auto_context("ns", "atlas migration", token_budget=900)
    assert 1 <= len(ctx.event_ids) < 4
    assert estimate_tokens(ctx.text) == ctx.tokens <= 900
    tight = auto_context("ns", "atlas migration", token_budget=50)
    assert tight.text == "" and tight.event_ids == () and tight.tokens == 0
    none = auto_context("ns", "atlas migration", max_events=0, max_nodes=0)
    assert none.text == ""


def test_auto_context_excludes_the_current_thread(ns):
    here = _block("current", "talking about Vega")
    there = _block("older", "earlier Vega chat")
    own = _event(ns, "Vega budget approved", block=here)
    old = _event(ns, "Vega budget drafted", block=there)
    only_here = _node(ns, "Vega Here", [own])
    both = _node(ns, "Vega Both", [own, old])
    ctx = auto_context("ns", "vega budget", exclude_thread="current")
    assert ctx.event_ids == (old,)
    assert only_here not in ctx.node_ids and both in ctx.node_ids
    unfiltered = auto_context("ns", "vega budget")
    assert set(unfiltered.event_ids) == {own, old} and only_here in unfiltered.node_ids


def test_pinned_and_safety_events_bypass_the_lexical_gate(ns):
    pinned = _event(ns, "Always answer in French", pinned=True)
    safety = _event(ns, "Never run rm -rf on prod", criticality="safety")
    _event(ns, "Unrelated chatter")
    forgotten = _event(ns, "Old pinned note", pinned=True)
    forget_event(forgotten)
    ctx = auto_context("ns", "what is the weather")
    assert set(ctx.event_ids) == {pinned, safety}
    assert get_event(pinned).last_retrieved_at is not None and get_event(pinned).mention_count == 1


def test_auto_context_is_empty_without_matches(ns):
    _event(ns, "Something else entirely")
    ctx = auto_context("ns", "")
    assert ctx == type(ctx)(
        text="", event_ids=(), node_ids=(), tokens=0, trace_id=ctx.trace_id, ledger_id=ctx.ledger_id
    )
    assert auto_context("ns", "zebra").text == ""


def test_hidden_nodes_stay_out_of_context(ns):
    gone = _event(ns, "Lyra kickoff")
    node = _node(ns, "Lyra", [gone])
    forget_event(gone)
    assert node not in auto_context("ns", "lyra").node_ids
