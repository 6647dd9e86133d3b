"""The agent tool set: schemas, every tool on a small store, and the gate loop end to end."""

from __future__ import annotations

import itertools
import json

import pytest
from jsonschema import Draft202012Validator

from core.agent_schemas import TOOL_NAMES, ToolError, check_arguments
from core.agent_tools import CONTENT_LIMIT, SUMMARY_LIMIT, MemoryTools
from core.models import Block, Event, Namespace, RetrievalBatch, Thread, UsageReceipt
from core.services.blocks import get_block
from core.services.capture import append_turn
from core.services.derive import run_pending
from core.services.events import forget_event, get_event
from core.services.graph import list_nodes
from core.services.spaces import configure_namespace

LONG = "The migration plan for the billing database " + "covers schema, backfill and cut-over steps " * 40

TURNS = [
    ("I moved to Lisbon in 2021 and I work at Kestrel as a designer.", "Nice, Lisbon is lovely."),
    ("We decided to use PostgreSQL for the billing service.", "Noted: PostgreSQL for billing."),
    ("Last week I adopted a cat named Miso.", "Congrats on Miso!"),
    (LONG, "Understood, that is a thorough plan."),
]
LATER = [
    ("The weather was grey today.", "Hope it clears up."),
    ("I watched a documentary about volcanoes.", "Sounds fascinating."),
    ("Tomorrow I have a dentist appointment.", "Good luck."),
    ("I bought new running shoes.", "Enjoy them."),
]


@pytest.fixture
def memory(store):
    """Two conversations in namespace 'ns' (block size 2), derived, then aged by later turns."""
    configure_namespace("ns", block_turn_size=2)
    for user, assistant in TURNS:
        append_turn(
            "ns",
            "chat-1",
            {"role": "user", "content": user, "speaker": "Caroline"},
            {"role": "assistant", "content": assistant, "speaker": "Bot"},
        )
    append_turn("ns", "chat-2", "The cat Miso needs a vet visit in May.", "I will remind you.")
    append_turn("ns", "chat-2", "Other thread chatter.", "Sure.")
    assert run_pending("ns").failed == 0
    for user, assistant in LATER:
        append_turn("ns", "chat-1", user, assistant)
    assert run_pending("ns").failed == 0
    return store


def tools(session: str | None = "chat-1", **kw) -> MemoryTools:
    return MemoryTools("ns", session=session, **kw)


_probes = itertools.count()


def once() -> MemoryTools:
    """Tools on conversation chat-1 under a fresh session, so earlier batches (budget,
    strategy switching) never get in the way of the call under test."""
    return MemoryTools("ns", session=f"probe-{next(_probes)}", thread="chat-1")


# ----------------------------------------------------------------------------- schemas


def test_schemas_are_valid_json_schema_objects():
    schemas = MemoryTools.schemas()
    assert [s["name"] for s in schemas] == list(TOOL_NAMES)
    assert set(TOOL_NAMES) == {
        "search_events",
        "search_graph",
        "search_raw",
        "get_blocks",
        "expand_block",
        "expand_event",
        "expand_graph_node",
        "assess",
        "record_use",
        "remember",
        "capture_turn",
        "close_thread",
        "get_context",
        "note_write",
        "note_read",
        "note_search",
        "note_replace",
        "note_delete",
    }
    for spec in schemas:
        assert set(spec) == {"name", "description", "inputSchema"} and len(spec["description"]) > 40
        schema = spec["inputSchema"]
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        json.dumps(spec)  # JSON-ready
    by_name = {s["name"]: s["inputSchema"] for s in schemas}
    assert by_name["search_events"]["required"] == ["query"]
    assert by_name["search_events"]["properties"]["limit"]["maximum"] == 20
    assert by_name["search_events"]["properties"]["temporal_intent"]["enum"] == ["first", "latest"]
    assert by_name["search_raw"]["properties"]["scope"]["enum"] == ["namespace", "session"]
    assert by_name["get_blocks"]["properties"]["scope"]["enum"] == ["session", "namespace"]
    assert by_name["expand_block"]["required"] == ["id"]
    assert by_name["assess"]["required"] == ["verdict", "evidence_refs", "fit", "missing", "next_strategy"]
    assert by_name["record_use"]["required"] == ["evidence_refs"]
    assert "batch_id" in by_name["record_use"]["properties"] and "receipt_id" in by_name["record_use"]["properties"]
    # Schemas are copies: editing one does not change the tool set.
    schemas[0]["inputSchema"]["properties"].clear()
    assert MemoryTools.schemas()[0]["inputSchema"]["properties"]


def test_example_calls_validate_against_their_schema():
    examples = {
        "search_events": {"query": "billing", "limit": 3, "temporal_intent": "latest", "participants": ["Caroline"]},
        "search_graph": {"query": "Lisbon"},
        "search_raw": {"query": "cat", "scope": "session"},
        "get_blocks": {},
        "expand_block": {"id": "block:1:level:3", "target": "raw"},
        "expand_event": {"id": 3},
        "expand_graph_node": {"id": "graph-node:1"},
        "assess": {
            "batch_id": "batch_1",
            "verdict": "partial",
            "evidence_refs": [],
            "fit": "",
            "missing": "x",
            "next_strategy": "search_raw",
        },
        "record_use": {"evidence_refs": []},
        "remember": {"text": "Prefers short answers.", "privacy": "normal", "evidence_refs": ["event:3"]},
        "capture_turn": {"user": "hi", "assistant": "hello", "receipt_id": "s:turn:1", "tool_calls": []},
        "close_thread": {},
        "get_context": {"question": "When is the launch?", "recent_turns": ["we talked"], "budget": 600},
        "note_write": {
            "title": "Pool fixed",
            "summary": "Max 50.",
            "keywords": ["pool", "timeout"],
            "content": "db/pool.py",
            "kind": "task",
            "related_paths": ["db/pool.py"],
        },
        "note_read": {"id": "3f2a9c1", "expand": True},
        "note_search": {"keywords": ["pool"], "mode": "count", "limit": 5, "skip": 0, "snapshot": "1.4"},
        "note_replace": {"id": "3f2a9c1", "summary": "Max 60.", "reason": "load grew"},
        "note_delete": {"id": "3f2a9c1", "reason": "reverted"},
    }
    for spec in MemoryTools.schemas():
        Draft202012Validator(spec["inputSchema"]).validate(examples[spec["name"]])
        check_arguments(spec["name"], examples[spec["name"]])


@pytest.mark.parametrize(
    "name, args, field",
    [
        ("search_events", {}, "query"),
        ("search_events", {"query": "x", "limit": 0}, "limit"),
        ("search_events", {"query": "x", "limit": "lots"}, "limit"),
        ("search_events", {"query": "x", "temporal_intent": "soon"}, "temporal_intent"),
        ("search_events", {"query": "x", "participants": "Caroline"}, "participants"),
        ("search_events", {"query": "x", "participants": ["Caroline", 3]}, "participants[1]"),
        ("search_events", {"query": 5}, "query"),
        ("search_events", {"query": "x", "when": "now"}, "when"),
        ("search_raw", {"query": "x", "scope": "everywhere"}, "scope"),
        ("expand_event", {}, "id"),
        ("expand_event", {"id": "graph-node:x"}, "id"),
        ("expand_block", {"id": 1, "target": [1]}, "target"),
        ("expand_block", {"id": 1, "target": "inf"}, "target"),
        ("expand_block", {"id": 1, "target": "L9"}, "target"),
        ("expand_block", {"id": 1, "target": 7}, "target"),
        ("assess", {"verdict": "partial", "evidence_refs": [], "fit": "", "missing": ""}, "next_strategy"),
        (
            "assess",
            {
                "batch_id": "b-one",
                "verdict": "partial",
                "evidence_refs": [],
                "fit": "",
                "missing": "",
                "next_strategy": "search_events",
            },
            "batch_id",
        ),
        ("record_use", {"evidence_refs": {"a": 1}}, "evidence_refs"),
    ],
)
def test_bad_arguments_name_the_field(memory, name, args, field):
    with pytest.raises(ToolError) as caught:
        tools().call(name, args)
    assert caught.value.code == "invalid_arguments" and caught.value.field == field
    assert field.split("[")[0] in str(caught.value)
    error = tools().call_safe(name, args)["error"]
    assert error["field"] == field and error["tool"] == name and error["message"]


def test_unknown_tool_and_non_object_arguments(memory):
    assert tools().call_safe("memory_search_elements", {})["error"]["code"] == "unknown_tool"
    assert tools().call_safe("search_events", ["billing"])["error"]["code"] == "invalid_arguments"
    # A date filter that cannot be read is refused with its own field name.
    error = tools().call_safe("search_events", {"query": "x", "happened_to": "last spring"})["error"]
    assert error["field"] == "happened_to"


# ----------------------------------------------------------------------------- retrieval tools


def test_search_events_returns_a_batch_with_compact_events(memory):
    out = tools().call("search_events", {"query": "PostgreSQL billing service", "limit": 3})
    assert out["batch_id"].startswith("batch_") and out["count"] == len(out["results"]) >= 1
    top = out["results"][0]
    assert "PostgreSQL" in top["title"] and top["ref"] == f"event:{top['id']}"
    assert out["evidence_refs"] == [r["ref"] for r in out["results"]]
    assert set(top["temporal"]) == {
        "mentioned_at",
        "happened_start",
        "happened_end",
        "precision",
        "status",
        "event_type",
    }
    assert top["source_block_id"] is not None and top["source_time"]
    assert top["status"] == "active" and top["criticality"] and top["scope"]
    assert isinstance(top["rank_score"], float) and "not a confidence" in out["score_meaning"]
    json.dumps(out)
    batch = RetrievalBatch.get_by_id(int(out["batch_id"].split("_")[1]))
    assert batch.channel == "events" and batch.session == "chat-1" and batch.status == "unresolved"


def test_search_events_clips_long_summaries_and_accepts_filters(memory):
    out = once().call("search_events", {"query": "migration plan billing database schema backfill"})
    long_hit = next(r for r in out["results"] if r["title"].startswith("The migration plan"))
    assert len(long_hit["title"]) <= 240 and len(long_hit["summary"]) <= SUMMARY_LIMIT
    assert long_hit["summary"].endswith("…")
    filtered = once().call("search_events", {"query": "", "participants": ["Caroline"], "temporal_intent": "first"})
    assert filtered["results"] and all("Caroline" in r["participants"] for r in filtered["results"])
    with pytest.raises(ToolError) as caught:
        once().call("search_events", {"query": "   "})
    assert caught.value.field == "query"


def test_search_graph_returns_compact_nodes(memory):
    out = tools().call("search_graph", {"query": "Lisbon", "limit": 5})
    assert out["results"], list_nodes("ns")
    node = out["results"][0]
    assert node["ref"] == f"graph-node:{node['id']}" and node["name"]
    assert set(node) >= {
        "type",
        "aliases",
        "current_state",
        "status",
        "rank_score",
        "matched_fields",
        "match_reason",
        "match_type",
    }
    assert len(node["current_state"]) <= 500 and sum(map(len, node["aliases"])) <= 160
    assert out["evidence_refs"] == [r["ref"] for r in out["results"]]


def test_search_raw_scopes_and_clips_content(memory):
    everywhere = once().call("search_raw", {"query": "cat Miso"})
    assert everywhere["scope"] == "namespace"
    assert {r["message"]["thread"] for r in everywhere["results"]} == {"chat-1", "chat-2"}
    mine = once().call("search_raw", {"query": "cat Miso", "scope": "session"})
    assert mine["thread"] == "chat-1" and {r["message"]["thread"] for r in mine["results"]} == {"chat-1"}
    hit = mine["results"][0]
    assert hit["ref"].startswith("raw:") and hit["block_id"] and hit["turn_range"]
    assert hit["source_time"] == hit["message"]["created_at"] and "expand_block" in hit["detail_hint"]
    long = once().call("search_raw", {"query": "backfill cut-over", "limit": 1})["results"][0]
    assert len(long["message"]["content"]) <= CONTENT_LIMIT and long["message"]["content"].endswith("…")
    # No session: 'session' scope cannot mean anything.
    with pytest.raises(ToolError) as caught:
        MemoryTools("ns").call("search_raw", {"query": "cat", "scope": "session"})
    assert caught.value.field == "scope"
    # A session that has stored nothing yet finds nothing, with a reason.
    fresh = MemoryTools("ns", session="new-chat").call("search_raw", {"query": "cat", "scope": "session"})
    assert fresh["results"] == [] and fresh["empty_reason"]


def test_get_blocks_lists_decayed_blocks(memory):
    out = tools().call("get_blocks", {})
    assert out["scope"] == "session" and out["thread"] == "chat-1" and out["namespace"] == "ns"
    ids = [b.id for b in Block.select().join(Thread).where(Thread.name == "chat-1").order_by(Block.sequence)]
    assert [r["id"] for r in out["results"]] == ids and out["counts"]["ready"] == len(ids)
    levels = [r["level"] for r in out["results"]]
    assert levels == sorted(levels) and levels[0] < 5  # older blocks have decayed further
    first = out["results"][0]
    assert first["ref"] == f"block:{first['id']}:level:{first['level']}" and first["content"]
    assert "empty_reason" not in out
    everything = once().call("get_blocks", {"scope": "namespace"})
    assert {r["thread"] for r in everything["results"]} == {"chat-1", "chat-2"}
    empty = MemoryTools("ns", session="nobody").call("get_blocks", {})
    assert empty["results"] == [] and empty["empty_reason"] and empty["evidence_refs"] == []


def test_get_blocks_lists_a_long_memory_newest_first_a_page_at_a_time(store, monkeypatch):
    """A million messages make ~28k blocks: one call lists the newest that fit a token budget and says
    how to page back; paging lists every ready block once, each page oldest first."""
    import core.agent_tools as agent_tools

    configure_namespace("long", block_turn_size=1)
    for i in range(14):
        append_turn("long", "chat", f"Day {i}: we reviewed the Lisbon budget item {i}.", f"Noted item {i}.")
    assert run_pending("long").failed == 0
    ready = [b.id for b in Block.select().where(Block.status == "ready").order_by(Block.sequence)]
    assert len(ready) >= 12
    monkeypatch.setattr(agent_tools, "BLOCK_LIST_TOKENS", 120)
    pages, before = [], None
    while True:
        args = {"scope": "namespace"} if before is None else {"scope": "namespace", "before": before}
        out = MemoryTools("long").call("get_blocks", args)
        if not out["results"]:
            assert before is not None and "oldest" in out["empty_reason"]
            break
        ids = [r["id"] for r in out["results"]]
        assert ids == sorted(ids, key=ready.index)  # oldest first within a page
        assert out["counts"]["ready"] == len(ready)
        assert len(ids) == 1 or sum(len(r["content"]) // 4 for r in out["results"]) <= 120 + 4 * len(ids)
        pages.append(ids)
        if "older" not in out:
            break
        assert out["older"]["blocks"] == ready.index(ids[0])
        before = out["older"]["before"]
    assert len(pages) > 2 and pages[0][-1] == ready[-1]  # the first call shows the newest
    assert [i for page in reversed(pages) for i in page] == ready
    with pytest.raises(ToolError) as caught:
        MemoryTools("long").call("get_blocks", {"before": 0, "scope": "namespace"})
    assert caught.value.field == "before"


def test_a_namespace_nothing_was_captured_into_is_not_found_and_not_created(memory):
    """A mistyped namespace used to be created by the first read, which answered "nothing found"
    and left a second namespace behind (every command without --namespace then failed)."""
    typo = MemoryTools("nss", session="s")
    for name, args in [
        ("search_events", {"query": "PostgreSQL"}),
        ("get_blocks", {"scope": "namespace"}),
        ("record_use", {"evidence_refs": []}),
    ]:
        error = typo.call_safe(name, args)["error"]
        assert error["code"] == "not_found" and error["tool"] == name
        assert "namespace 'nss' does not exist yet" in error["message"] and "ns" in error["message"]
    assert [n.name for n in Namespace.select()] == ["ns"]


def test_a_new_namespace_starts_with_its_first_captured_turn(store):
    """An agent harness starts the tools on a new namespace of an empty store, then captures turns:
    the same tool set works once the first turn is in (capture creates the namespace)."""
    fresh = MemoryTools("brand-new", session="s")
    error = fresh.call_safe("get_blocks", {"scope": "namespace"})["error"]
    assert error["code"] == "not_found" and "the store has no namespace yet" in error["message"]
    assert Namespace.select().count() == 0
    append_turn("brand-new", "s", "We picked Postgres for billing.", "Noted.")
    out = fresh.call("get_blocks", {"scope": "namespace"})
    assert out["results"] == [] and "No block" in out["empty_reason"]
    found = fresh.call("search_raw", {"query": "Postgres", "scope": "session"})
    assert found["results"] and found["batch_id"].startswith("batch_")


@pytest.mark.parametrize(
    "name, args",
    [
        ("expand_block", {"id": 10**30}),
        ("expand_block", {"id": "block:99999999999999999999"}),
        ("expand_event", {"id": 10**30}),
        ("expand_graph_node", {"id": "graph-node:99999999999999999999"}),
        ("record_use", {"batch_id": 10**30, "evidence_refs": []}),
        (
            "assess",
            {
                "batch_id": "batch_99999999999999999999",
                "verdict": "partial",
                "evidence_refs": [],
                "fit": "",
                "missing": "",
                "next_strategy": "search_raw",
            },
        ),
    ],
)
def test_ids_past_64_bits_are_not_found(memory, name, args):
    error = tools().call_safe(name, args)["error"]
    assert error["code"] == "not_found" and "does not exist" in error["message"]


def test_get_blocks_before_past_64_bits_lists_the_newest(memory):
    newest = tools().call("get_blocks", {"scope": "namespace"})["evidence_refs"]
    assert once().call("get_blocks", {"scope": "namespace", "before": 10**30})["evidence_refs"] == newest


def test_expand_block_lifts_and_reanchors(memory):
    block_id = next(r["id"] for r in tools().call("get_blocks", {})["results"] if r["level"] < 5)
    before = get_block(block_id).current_level
    out = tools().call("expand_block", {"id": f"block:{block_id}:level:{before}", "target": "raw"})
    entry = out["results"][0]
    assert entry["level"] == 5 and entry["previous_level"] == before and entry["label"].startswith("L5")
    assert out["evidence_refs"] == [f"block:{block_id}:level:5"]
    assert get_block(block_id).current_level == 5 and get_block(block_id).last_lifted_by == "agent"
    with pytest.raises(ToolError) as caught:  # expanding only lifts: L2 would re-anchor the decay lower
        once().call("expand_block", {"id": block_id, "target": "L2"})
    assert caught.value.code == "invalid_arguments" and caught.value.field == "target"
    assert "shown at L5" in str(caught.value) and get_block(block_id).current_level == 5
    assert once().call("expand_block", {"id": block_id, "target": "next"})["results"][0]["level"] == 5


def test_expand_block_shows_a_pending_block_raw(memory):
    append_turn("ns", "chat-1", "One more about the billing cut-over.", "ok")
    append_turn("ns", "chat-1", "And the rollback plan.", "ok")
    pending = Block.select().where(Block.status == "pending").get()
    out = tools().call("expand_block", {"id": pending.id})
    entry = out["results"][0]
    assert entry["level"] == 5 and "rollback plan" in entry["content"] and "not summarized" in entry["note"]


def test_expand_event_returns_the_full_card(memory):
    hit = tools().call("search_events", {"query": "PostgreSQL billing"})["results"][0]
    out = tools().call("expand_event", {"id": hit["ref"]})
    card = out["results"][0]
    assert out["evidence_refs"] == [hit["ref"]] and card["id"] == hit["id"]
    assert card["quotes"] and card["source_message_ids"] and card["source_block_id"] == hit["source_block_id"]
    assert {"links", "weight", "mention_count", "temporal", "participants", "detail_hint"} <= set(card)
    assert f"expand_block id={card['source_block_id']}" in card["detail_hint"]
    forget_event(hit["id"])
    with pytest.raises(ToolError) as caught:
        once().call("expand_event", {"id": hit["id"]})
    assert caught.value.code == "not_found"
    with pytest.raises(ToolError) as caught:
        once().call("expand_event", {"id": 99999})
    assert caught.value.code == "not_found"


def test_expand_graph_node_returns_effective_view(memory):
    node = list_nodes("ns")[0]
    out = tools().call("expand_graph_node", {"id": f"graph-node:{node.id}"})
    assert out["evidence_refs"] == [f"graph-node:{node.id}:expanded"]
    view = out["results"][0]
    assert view["node"]["name"] == node.name and view["supporting_events"]
    assert {"current_facts", "historical_facts", "edges"} <= set(view)
    assert all(e["direction"] in ("in", "out") and e["other"]["name"] for e in view["edges"])
    with pytest.raises(ToolError) as caught:
        once().call("expand_graph_node", {"id": 99999})
    assert caught.value.code == "not_found"


def test_a_historical_record_says_why_it_ended():
    from core.agent_tools import _fact
    from core.services.graph import FactView
    from core.services.graph_endings import EndedBy

    fact = FactView(
        id=1,
        key="lives_in",
        value="Oslo",
        status="superseded",
        valid_from="2024",
        valid_to="2025",
        confidence=0.8,
        source_event_ids=(3,),
        ended_by=(EndedBy("fact", 9, "Paris"),),
    )
    assert _fact(fact)["ended_by"] == [{"cause": "fact", "id": 9, "text": "Paris"}]
    current = FactView(
        id=2,
        key="lives_in",
        value="Paris",
        status="active",
        valid_from="2025",
        valid_to=None,
        confidence=0.8,
        source_event_ids=(4,),
    )
    assert "ended_by" not in _fact(current)


def test_ids_from_another_namespace_are_not_found(memory):
    configure_namespace("other", block_turn_size=1)
    append_turn("other", "t", "We decided to adopt Rust for the parser.", "ok")
    run_pending("other")
    foreign = Event.select().join(Namespace).where(Namespace.name == "other").get()
    with pytest.raises(ToolError) as caught:
        tools().call("expand_event", {"id": foreign.id})
    assert caught.value.code == "not_found"


# ----------------------------------------------------------------------------- the gate loop


def test_full_loop_reinforces_the_used_event(memory):
    t = tools()
    out = t.call("search_events", {"query": "PostgreSQL billing"})
    ref, event_id = out["evidence_refs"][0], out["results"][0]["id"]
    before = get_event(event_id)
    assert before.event.weight < 1 and before.mention_count == 1

    judged = t.call(
        "assess",
        {
            "batch_id": out["batch_id"],
            "verdict": "sufficient",
            "evidence_refs": [ref],
            "fit": "states the database decision",
            "missing": "",
            "next_strategy": "answer",
        },
    )
    assert judged["verdict"] == "sufficient" and judged["evidence_refs"] == [ref]
    assert judged["batch_status"] == "assessed" and judged["unresolved_batch_ids"] == [out["batch_id"]]
    assert get_event(event_id).mention_count == 1  # assessing alone never reinforces

    used = t.call("record_use", {"batch_id": out["batch_id"], "evidence_refs": [ref]})
    assert used["batch_status"] == "recorded" and used["event_ids"] == [event_id] and used["incremented"] == 1
    assert used["receipt_id"] == t.default_receipt_id(int(out["batch_id"].split("_")[1]))
    assert used["citations"][0]["evidence_ref"] == ref and used["unresolved_batch_ids"] == []
    after = get_event(event_id)
    assert after.event.weight == 1.0 and after.mention_count == 2

    # Replaying the same call is a no-op (deterministic receipt), not a second reinforcement.
    again = t.call("record_use", {"batch_id": out["batch_id"], "evidence_refs": [ref]})
    assert again["replayed"] is True and get_event(event_id).mention_count == 2
    assert UsageReceipt.select().count() == 1
    # Closing the same batch with other refs is refused with a clear reason.
    with pytest.raises(ToolError) as caught:
        t.call("record_use", {"batch_id": out["batch_id"], "evidence_refs": []})
    assert caught.value.code == "batch_closed"


def test_assess_rejects_refs_not_in_the_batch(memory):
    t = tools()
    out = t.call("search_events", {"query": "PostgreSQL billing"})
    judged = t.call(
        "assess",
        {
            "batch_id": out["batch_id"],
            "verdict": "sufficient",
            "evidence_refs": ["event:424242", out["evidence_refs"][0]],
            "fit": "ok",
            "missing": "",
            "next_strategy": "answer",
        },
    )
    assert [(r["ref"], r["reason"]) for r in judged["rejected_evidence_refs"]] == [("event:424242", "not_in_batch")]
    assert judged["evidence_refs"] == [out["evidence_refs"][0]] and judged["verdict"] == "sufficient"
    only_foreign = t.call(
        "assess",
        {
            "verdict": "sufficient",
            "evidence_refs": ["event:424242"],
            "fit": "ok",
            "missing": "",
            "next_strategy": "answer",
        },
    )
    assert only_foreign["batch_id"] == out["batch_id"]  # batch_id omitted: this session's latest batch
    assert only_foreign["verdict"] == "partial" and only_foreign["next_strategy"] != "answer"
    assert only_foreign["missing"]  # the default "still missing" text


def test_assess_speaks_tool_names_for_strategies(memory):
    t = tools()
    out = t.call("search_events", {"query": "PostgreSQL"})
    judged = t.call(
        "assess",
        {
            "batch_id": out["batch_id"],
            "verdict": "partial",
            "evidence_refs": [],
            "fit": "",
            "missing": "the exact wording",
            "next_strategy": "search_raw",
        },
    )
    assert judged["next_strategy"] == "search_raw" and judged["verdict"] == "partial"
    odd = t.call(
        "assess",
        {
            "batch_id": out["batch_id"],
            "verdict": "great",
            "evidence_refs": [],
            "fit": "",
            "missing": "",
            "next_strategy": "ask_a_friend",
        },
    )
    assert odd["verdict"] == "partial" and odd["next_strategy"] == "search_events"  # §8.1 normalization


def test_record_use_refuses_refs_not_adopted(memory):
    t = tools()
    out = t.call("search_events", {"query": "Miso cat", "limit": 5})
    assert len(out["evidence_refs"]) >= 1
    adopted = out["evidence_refs"][0]
    t.call(
        "assess",
        {
            "batch_id": out["batch_id"],
            "verdict": "partial",
            "evidence_refs": [adopted],
            "fit": "related",
            "missing": "when",
            "next_strategy": "search_raw",
        },
    )
    event_id = out["results"][0]["id"]
    with pytest.raises(ToolError) as caught:
        t.call("record_use", {"batch_id": out["batch_id"], "evidence_refs": [adopted]})
    error = caught.value.to_dict()["error"]
    assert error["code"] == "use_refused" and error["field"] == "evidence_refs"
    assert [i["reason"] for i in error["issues"]] == ["not_adopted"]
    assert error["available_refs"] == out["evidence_refs"] and error["adopted_refs"] == []
    assert "nothing was recorded" in error["message"]
    assert get_event(event_id).mention_count == 1 and UsageReceipt.select().count() == 0
    # [] still closes the batch, with nothing reinforced.
    closed = t.call("record_use", {"batch_id": out["batch_id"], "evidence_refs": []})
    assert closed["batch_status"] == "recorded" and closed["incremented"] == 0
    assert get_event(event_id).mention_count == 1


def test_a_refused_search_marks_no_event_retrieved(memory):
    """The gate refuses a repeated channel after the search has run: the events it found stay as
    they were (a refusal writes nothing)."""
    t = once()
    first = t.call("search_events", {"query": "PostgreSQL billing"})
    t.call("search_events", {"query": "PostgreSQL billing"})  # the same evidence again: no new evidence
    stamps = {e.id: e.last_retrieved_at for e in Event.select()}
    assert first["results"] and any(stamps.values())
    with pytest.raises(ToolError) as caught:
        t.call("search_events", {"query": "PostgreSQL billing"})
    assert caught.value.code == "strategy_repeat"
    assert {e.id: e.last_retrieved_at for e in Event.select()} == stamps


def test_budget_and_strategy_errors_tell_the_agent_what_to_do(memory):
    t = tools()
    t.call("search_events", {"query": "zebra quasar"})  # nothing found
    with pytest.raises(ToolError) as caught:
        t.call("search_events", {"query": "another empty try xyzzy"})
    error = caught.value.to_dict()["error"]
    assert error["code"] == "strategy_repeat" and "search_raw" in error["alternatives"]
    assert "search_raw_memory" not in error["message"] and "Switch" in error["message"]
    t.call("search_raw", {"query": "volcanoes"})
    t.call("search_graph", {"query": "Kestrel"})
    t.call("get_blocks", {})
    with pytest.raises(ToolError) as caught:
        t.call("search_graph", {"query": "Lisbon"})
    error = caught.value.to_dict()["error"]
    assert error["code"] == "budget_exhausted" and error["budget"] == 4 and len(error["open_batch_ids"]) == 4
    assert "answer" in error["message"] and "record_use" in error["message"]
    # Closing the open batches starts a new round.
    for batch_id in error["open_batch_ids"]:
        t.call("record_use", {"batch_id": batch_id, "evidence_refs": []})
    assert t.call("search_graph", {"query": "Lisbon"})["batch_id"]


def test_sessions_keep_their_own_batches(memory):
    a, b = tools("chat-1"), tools("chat-2")
    first = a.call("search_events", {"query": "PostgreSQL"})
    b.call("search_events", {"query": "vet visit"})
    judged = a.call(
        "assess", {"verdict": "wrong", "evidence_refs": [], "fit": "", "missing": "", "next_strategy": "search_graph"}
    )
    assert judged["batch_id"] == first["batch_id"]
    closed = a.call("record_use", {"evidence_refs": []})
    assert closed["batch_id"] == first["batch_id"] and closed["receipt_id"].startswith("strata:chat-1:")
