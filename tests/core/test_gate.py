"""Evidence gate: batches, assessment normalization, loop rules and use-only reinforcement."""

from __future__ import annotations

import pytest

from core.db import db, write_transaction
from core.errors import ReceiptConflictError
from core.models import BatchRef, GraphNode, GraphSource, Namespace, RetrievalBatch, UsageReceipt
from core.services.capture import append_turn
from core.services.events import forget_event, get_event, write_event
from core.services.gate import (
    DEFAULT_MISSING,
    BatchClosedError,
    BudgetExhaustedError,
    RefSpec,
    StrategyRepeatError,
    UseRefusedError,
    assess,
    block_ref,
    check_batch_allowed,
    event_ref,
    get_batch,
    node_ref,
    normalize_assessment,
    open_batch,
    raw_ref,
    record_use,
    refs_for_events,
    refs_for_nodes,
    refs_for_raw,
    unresolved_batches,
)
from core.services.search import search_events, search_raw
from core.services.spaces import configure_namespace, get_namespace
from core.api import open_store
from core.timeutil import now_iso


@pytest.fixture
def ns(store):
    configure_namespace("ns", block_turn_size=1)
    return get_namespace("ns").id


def _event(ns_id: int, title: str, summary: str | None = None) -> int:
    draft = {"title": title, "summary": summary or f"{title}.", "source_message_ids": [], "temporal": {}}
    with write_transaction():
        return write_event(ns_id, draft, block=None, formed_turn=0).id


def _set_turn(ns_id: int, turn: int) -> None:
    with write_transaction():
        Namespace.update(current_turn=turn).where(Namespace.id == ns_id).execute()


def _mentions(event_id: int) -> int:
    return get_event(event_id).mention_count


def _events_batch(ids, *, session="s1", query="q"):
    return open_batch("ns", "search_events", query, refs_for_events(ids), session=session)


# ----------------------------------------------------------------------------- §8.1 normalization


def test_every_assessment_rejection_reason_with_its_input_index():
    available = [f"event:{i}" for i in range(1, 11)]
    refs = ["event:1", "", None, "event:1", "event:99", 7, "  "] + [f"event:{i}" for i in range(2, 11)]
    result = normalize_assessment("sufficient", refs, "fit", "gap", "answer", available)
    reasons = [(r.input_index, r.reason) for r in result["rejected"]]
    assert reasons == [
        (1, "invalid_ref"),
        (2, "invalid_ref"),
        (3, "duplicate"),
        (4, "not_in_batch"),
        (5, "invalid_ref"),
        (6, "invalid_ref"),
        (14, "limit_exceeded"),
        (15, "limit_exceeded"),
    ]
    assert result["evidence_refs"] == [f"event:{i}" for i in range(1, 9)]
    assert result["verdict"] == "sufficient" and result["missing"] == "" and result["next_strategy"] == "answer"


def test_duplicate_of_a_rejected_ref_is_still_a_duplicate():
    result = normalize_assessment("partial", ["event:99", "event:99"], "", "", "search_events", ["event:1"])
    assert [r.reason for r in result["rejected"]] == ["not_in_batch", "duplicate"]


def test_fit_and_missing_are_trimmed_collapsed_and_cut():
    long = "  word \n\t " * 100
    result = normalize_assessment("partial", [], long, "  a \n  b  ", "search_raw_memory", [])
    assert result["fit"].startswith("word word") and len(result["fit"]) <= 160 and "  " not in result["fit"]
    assert result["missing"] == "a b"
    assert normalize_assessment("partial", [], None, 42, "search_graph", [])["fit"] == ""


@pytest.mark.parametrize(
    "verdict, refs, strategy, expected, next_expected",
    [
        ("sufficient", ["event:1"], "answer", "sufficient", "answer"),
        ("sufficient", [], "answer", "partial", "search_events"),  # no accepted ref
        ("sufficient", ["event:9"], "answer", "partial", "search_events"),  # ref not in batch
        ("sufficient", ["event:1"], "search_graph", "partial", "search_graph"),  # next is not answer
        ("sufficient", ["event:1"], "teleport", "partial", "search_events"),  # unknown strategy
        ("wrong", ["event:1"], "answer", "wrong", "search_events"),
        ("maybe", ["event:1"], "answer", "partial", "search_events"),  # unknown verdict
        ("partial", ["event:1"], "expand_event", "partial", "expand_event"),
    ],
)
def test_sufficient_only_with_fresh_evidence_and_answer(verdict, refs, strategy, expected, next_expected):
    result = normalize_assessment(verdict, refs, "f", "", strategy, ["event:1"])
    assert result["verdict"] == expected
    assert result["next_strategy"] == next_expected
    assert result["missing"] == ("" if expected == "sufficient" else DEFAULT_MISSING)


def test_sufficient_clears_missing():
    result = normalize_assessment("sufficient", ["event:1"], "f", "something", "answer", ["event:1"])
    assert result["missing"] == ""


# ----------------------------------------------------------------------------- batches and assess


def test_open_batch_persists_refs_and_counts_new_refs(ns):
    a, b = _event(ns, "Alpha launch"), _event(ns, "Beta launch")
    first = _events_batch([a])
    second = _events_batch([a, b], query="other")
    assert (first.sequence, second.sequence) == (1, 2)
    assert first.status == "unresolved" and first.new_refs == 1 and second.new_refs == 1
    assert second.available_refs == (event_ref(a), event_ref(b))
    ref = second.refs[1]
    assert ref.event_ids == (b,)
    assert ref.citation["evidence_ref"] == event_ref(b) and ref.citation["batch_id"] == second.id
    assert ref.citation["title"] == "Beta launch"
    # another session starts from scratch
    assert _events_batch([a], session="s2").new_refs == 1


def test_assess_stores_assessment_and_defaults_to_latest_batch(ns):
    a = _event(ns, "Alpha")
    _events_batch([a])
    latest = _events_batch([a], query="again")
    result = assess("ns", None, "sufficient", [event_ref(a)], "direct", "", "answer", session="s1")
    assert result.batch_id == latest.id and result.latest_batch_id == latest.id
    assert result.verdict == "sufficient" and result.batch_status == "assessed"
    stored = get_batch(latest.id)
    assert stored.status == "assessed" and stored.assessment["evidence_refs"] == [event_ref(a)]
    assert stored.adopted_refs == (event_ref(a),)
    assert set(result.unresolved_batch_ids) == {latest.id, latest.id - 1}
    # batch ids are also accepted as "batch_<id>"
    assert assess("ns", f"batch_{latest.id}", "partial", [], "", "", "search_raw_memory").batch_id == latest.id


def test_recorded_batch_cannot_be_assessed_or_recorded_again(ns):
    batch = _events_batch([_event(ns, "Alpha")])
    record_use("ns", batch.id, [], receipt_id="r1")
    with pytest.raises(BatchClosedError):
        assess("ns", batch.id, "partial", [], "", "", "search_events")
    with pytest.raises(BatchClosedError):
        record_use("ns", batch.id, [], receipt_id="r2")


def test_strategy_is_rewritten_when_the_batch_added_nothing(ns):
    a = _event(ns, "Alpha")
    _events_batch([a])
    empty = open_batch("ns", "search_events", "nothing", [], session="s1")
    assert empty.new_refs == 0
    result = assess("ns", empty.id, "partial", [], "", "no hit", "search_events", session="s1")
    assert result.strategy_rewritten_from == "search_events"
    assert result.next_strategy == "search_raw_memory"
    assert any("rewritten" in note for note in result.notes)
    assert get_batch(empty.id).assessment["next_strategy"] == "search_raw_memory"
    # "answer" on a non-sufficient verdict becomes search_events, which is spent too
    again = assess("ns", empty.id, "wrong", [], "", "", "answer", session="s1")
    assert again.verdict == "wrong" and again.next_strategy == "search_raw_memory"


def test_strategy_kept_when_the_batch_added_evidence(ns):
    batch = _events_batch([_event(ns, "Alpha")])
    result = assess("ns", batch.id, "partial", [], "", "", "search_events", session="s1")
    assert result.next_strategy == "search_events" and result.strategy_rewritten_from is None


# ----------------------------------------------------------------------------- loop rules (§8.3)


def test_repeat_of_a_zero_delta_channel_is_refused(ns):
    a = _event(ns, "Alpha")
    _events_batch([a])
    _events_batch([a], query="rephrased")  # allowed, but adds nothing
    with pytest.raises(StrategyRepeatError) as info:
        _events_batch([a], query="rephrased again")
    assert "search_raw_memory" in str(info.value) and "search_raw_memory" in info.value.alternatives
    assert RetrievalBatch.select().count() == 2  # refused before any write
    # other channels stay open, and other sessions are unaffected
    open_batch("ns", "search_raw_memory", "alpha", [], session="s1")
    _events_batch([a], session="s2")


def test_expansions_refuse_only_the_same_target(ns):
    a, b = _event(ns, "Alpha"), _event(ns, "Beta")
    _events_batch([a, b])
    first = open_batch("ns", "expand_event", "", refs_for_events([a]), session="s1")
    assert first.new_refs == 0 and first.channel == "event_detail"
    open_batch("ns", "expand_event", "", refs_for_events([b]), session="s1")  # a different target
    open_batch("ns", "expand_event", "", refs_for_events([a]), session="s1")
    with pytest.raises(StrategyRepeatError):
        check_batch_allowed("ns", "expand_event", [event_ref(a)], session="s1", budget=None)
    with pytest.raises(BudgetExhaustedError):  # expansions count as rounds too
        check_batch_allowed("ns", "expand_event", [event_ref(a)], session="s1")


def test_budget_exhausted_after_four_batches_and_reset_by_a_recorded_batch(ns):
    ids = [_event(ns, f"Event {i}") for i in range(6)]
    batches = [_events_batch([ids[i]], query=f"q{i}") for i in range(4)]
    with pytest.raises(BudgetExhaustedError) as info:
        open_batch("ns", "search_raw_memory", "more", [], session="s1")
    assert "uncertainty" in str(info.value) and info.value.budget == 4
    assert set(info.value.open_batch_ids) == {b.id for b in batches}
    with pytest.raises(BudgetExhaustedError):
        check_batch_allowed("ns", "search_graph", session="s1")
    assert RetrievalBatch.select().count() == 4
    # another session has its own budget
    _events_batch([ids[0]], session="s2")
    assessed = assess("ns", batches[-1].id, "sufficient", [event_ref(ids[3])], "", "", "answer", session="s1")
    assert assessed.verdict == "sufficient"
    record_use("ns", batches[-1].id, [event_ref(ids[3])], receipt_id="close")
    fresh = _events_batch([ids[4]], query="next question")
    assert fresh.new_refs == 1
    # a custom budget is honoured
    with pytest.raises(BudgetExhaustedError):
        open_batch("ns", "search_graph", "x", [], session="s1", budget=1)


def test_batches_survive_a_restart(ns, store, db_url):
    a = _event(ns, "Alpha")
    batch = _events_batch([a])
    store.close()
    open_store(db_url)
    assert [b.id for b in unresolved_batches("ns", "s1")] == [batch.id]
    assess("ns", batch.id, "sufficient", [event_ref(a)], "direct", "", "answer")
    store.close()
    open_store(db_url)
    result = record_use("ns", batch.id, [event_ref(a)], receipt_id="after-restart")
    assert result.event_ids == (a,)
    assert unresolved_batches("ns", "s1") == []
    # a replay after another restart is still a no-op
    db.close()
    open_store(db_url)
    assert record_use("ns", batch.id, [event_ref(a)], receipt_id="after-restart").replayed
    assert _mentions(a) == 2


# ----------------------------------------------------------------------------- record_use (§8.2)


def test_record_use_reports_every_issue_and_records_nothing(ns):
    a, b, c = _event(ns, "Alpha"), _event(ns, "Beta"), _event(ns, "Gamma")
    batch = _events_batch([a, b, c])
    assess("ns", batch.id, "sufficient", [event_ref(a), event_ref(b)], "fits", "", "answer")
    with pytest.raises(UseRefusedError) as info:
        record_use(
            "ns", batch.id, [event_ref(a), "", "  ", event_ref(a), "event:999", event_ref(c), 5], receipt_id="bad"
        )
    err = info.value
    assert [(i.input_index, i.reason) for i in err.issues] == [
        (1, "invalid_ref"),
        (2, "invalid_ref"),
        (4, "not_in_batch"),
        (5, "not_adopted"),
        (6, "invalid_ref"),
    ]
    assert err.duplicate_refs == (event_ref(a),)
    assert err.available_refs == (event_ref(a), event_ref(b), event_ref(c))
    assert err.adopted_refs == (event_ref(a), event_ref(b))
    assert err.batch_status == "assessed"
    assert "not_adopted" in str(err) and "event:999" in str(err)
    assert _mentions(a) == 1 and UsageReceipt.select().count() == 0
    assert get_batch(batch.id).status == "assessed"


def test_refs_need_a_sufficient_assessment(ns):
    a = _event(ns, "Alpha")
    batch = _events_batch([a])
    with pytest.raises(UseRefusedError) as info:  # never assessed
        record_use("ns", batch.id, [event_ref(a)], receipt_id="r")
    assert [i.reason for i in info.value.issues] == ["not_adopted"]
    assess("ns", batch.id, "partial", [event_ref(a)], "", "", "search_raw_memory")
    with pytest.raises(UseRefusedError):  # adopted only by a partial assessment
        record_use("ns", batch.id, [event_ref(a)], receipt_id="r")


def test_duplicates_are_reported_not_refused(ns):
    a = _event(ns, "Alpha")
    batch = _events_batch([a])
    assess("ns", batch.id, "sufficient", [event_ref(a)], "", "", "answer")
    result = record_use("ns", batch.id, [event_ref(a), f" {event_ref(a)} "], receipt_id="dup")
    assert result.duplicate_refs == (event_ref(a),) and result.evidence_refs == (event_ref(a),)
    assert result.incremented == 1 and _mentions(a) == 2


def test_empty_use_closes_the_batch_with_zero_increments(ns):
    a = _event(ns, "Alpha")
    batch = _events_batch([a])
    result = record_use("ns", batch.id, [], receipt_id="zero", audit={"turn": 3})
    assert result.batch_status == "recorded" and result.incremented == 0 and result.event_ids == ()
    assert len(result.retrieved) == 1 and result.citations == ()
    stored = get_batch(batch.id)
    assert stored.status == "recorded"
    assert stored.receipt.event_ids == () and stored.receipt.audit["batch_id"] == batch.id
    assert stored.receipt.audit["turn"] == 3
    assert _mentions(a) == 1


def test_record_use_reinforces_and_resets_the_turn_distance(ns):
    a, b = _event(ns, "Alpha"), _event(ns, "Beta")
    _set_turn(ns, 20)
    assert get_event(a).event.weight < 1.0
    batch = _events_batch([a, b])
    assess("ns", batch.id, "sufficient", [event_ref(a)], "", "", "answer")
    result = record_use("ns", batch.id, [event_ref(a)], receipt_id="use-1")
    assert result.event_ids == (a,) and result.incremented == 1
    assert result.citations[0]["evidence_ref"] == event_ref(a)
    card = get_event(a)
    assert card.mention_count == 2 and card.last_adopted_turn == 20 and card.event.weight == 1.0
    assert _mentions(b) == 1 and get_event(b).event.weight < 1.0
    assert get_namespace("ns").revision > 0


def test_receipts_are_idempotent_and_conflicts_refused(ns):
    a = _event(ns, "Alpha")
    batch = _events_batch([a])
    assess("ns", batch.id, "sufficient", [event_ref(a)], "", "", "answer")
    first = record_use("ns", batch.id, [event_ref(a)], receipt_id="dsh:s1:tool:1", audit={"turn": 1})
    again = record_use("ns", batch.id, [event_ref(a)], receipt_id="dsh:s1:tool:1", audit={"turn": 1})
    assert again.replayed and not first.replayed
    assert again.event_ids == first.event_ids and again.incremented == first.incremented
    assert _mentions(a) == 2 and UsageReceipt.select().count() == 1
    with pytest.raises(ReceiptConflictError):
        record_use("ns", batch.id, [event_ref(a)], receipt_id="dsh:s1:tool:1", audit={"turn": 2})
    with pytest.raises(ReceiptConflictError):
        record_use("ns", batch.id, [], receipt_id="dsh:s1:tool:1", audit={"turn": 1})
    other = _events_batch([a], session="s2")
    with pytest.raises(ReceiptConflictError):
        record_use("ns", other.id, [], receipt_id="dsh:s1:tool:1", audit={"turn": 1})
    assert _mentions(a) == 2


def test_forgotten_events_are_not_reinforced(ns):
    a, b = _event(ns, "Alpha"), _event(ns, "Beta")
    batch = _events_batch([a, b])
    assess("ns", batch.id, "sufficient", [event_ref(a), event_ref(b)], "", "", "answer")
    forget_event(b)
    result = record_use("ns", batch.id, [event_ref(a), event_ref(b)], receipt_id="r")
    assert result.event_ids == (a,)
    assert _mentions(b) == 1 and _mentions(a) == 2


def test_graph_node_refs_reinforce_the_node_source_events(ns):
    a, b, c = _event(ns, "Alice joined"), _event(ns, "Alice moved"), _event(ns, "Unrelated")
    now = now_iso()
    with write_transaction():
        node = GraphNode.create(
            namespace=ns, name="Alice", name_norm="alice", type="person", created_at=now, updated_at=now
        )
        for event_id in (a, b):
            GraphSource.create(kind="node", record_id=node.id, event=event_id)
    specs = refs_for_nodes([node.id])
    assert specs[0].ref == node_ref(node.id) and set(specs[0].event_ids) == {a, b}
    assert specs[0].citation["title"] == "Alice"
    assert refs_for_nodes([node.id], expanded=True)[0].ref == f"graph-node:{node.id}:expanded"
    batch = open_batch("ns", "search_graph", "alice", specs, session="g")
    assess("ns", batch.id, "sufficient", [node_ref(node.id)], "", "", "answer", session="g")
    result = record_use("ns", None, [node_ref(node.id)], receipt_id="g1", session="g")
    assert set(result.event_ids) == {a, b}
    assert (_mentions(a), _mentions(b), _mentions(c)) == (2, 2, 1)


def test_a_node_ref_stands_for_its_newest_live_sources(ns, monkeypatch):
    """A person named in tens of thousands of events is evidence through the newest few of them."""
    import core.services.gate as gate
    from core.models import GraphEdge

    monkeypatch.setattr(gate, "NODE_REF_EVENTS", 3)
    ids = [_event(ns, f"Alice note {i}") for i in range(6)]
    met = [_event(ns, f"Alice met Bo {i}") for i in range(5)]
    now = now_iso()
    with write_transaction():
        alice = GraphNode.create(
            namespace=ns, name="Alice", name_norm="alice", type="person", created_at=now, updated_at=now
        )
        bo = GraphNode.create(namespace=ns, name="Bo", name_norm="bo", type="person", created_at=now, updated_at=now)
        edge = GraphEdge.create(
            namespace=ns, from_node=alice, to_node=bo, relation="knows", status="active", created_at=now, updated_at=now
        )
        for event_id in ids:
            GraphSource.create(kind="node", record_id=alice.id, event=event_id)
        for event_id in met:
            GraphSource.create(kind="edge", record_id=edge.id, event=event_id)
    forget_event(ids[-1])
    assert refs_for_nodes([alice.id])[0].event_ids == (ids[4], ids[3], ids[2])  # newest live first
    expanded = refs_for_nodes([alice.id], expanded=True)[0]
    assert expanded.event_ids == (met[4], met[3], met[2], ids[4], ids[3], ids[2])
    assert refs_for_nodes([bo.id], expanded=True)[0].event_ids == (met[4], met[3], met[2])


def test_raw_and_block_refs_carry_no_events(ns):
    append_turn("ns", "t", "We chose Postgres for the ledger", "Noted: Postgres.")
    hits = search_raw("ns", "postgres ledger")
    specs = refs_for_raw(hits)
    message = hits[0].message
    assert specs[0].ref == raw_ref(hits[0].block_id, message.id, message.position)
    assert all(s.event_ids == () for s in specs)
    assert block_ref(4, 2) == "block:4:level:2" and raw_ref(None, 7, 1) == "raw:0:7:1"
    batch = open_batch("ns", "search_raw_memory", "postgres", specs + [RefSpec(block_ref(1, 5))], session="r")
    assess("ns", batch.id, "sufficient", [specs[0].ref], "", "", "answer", session="r")
    result = record_use("ns", batch.id, [specs[0].ref], receipt_id="raw")
    assert result.incremented == 0 and result.batch_status == "recorded"
    assert BatchRef.select().where(BatchRef.batch == batch.id).count() == len(specs) + 1


# ----------------------------------------------------------------------------- search never reinforces


def test_search_never_changes_mention_count_or_weight(ns):
    a = _event(ns, "Postgres migration", "We migrated the ledger to Postgres.")
    append_turn("ns", "t", "The Postgres migration is done", "Great.")
    _set_turn(ns, 5)
    before = get_event(a)
    for _ in range(3):
        hits = search_events("ns", "postgres migration")
        assert [h.event.id for h in hits] == [a]
        assert search_raw("ns", "postgres migration")
    open_batch("ns", "search_events", "postgres", refs_for_events(hits), session=None)
    after = get_event(a)
    assert after.mention_count == before.mention_count == 1
    assert after.last_adopted_turn == before.last_adopted_turn
    assert after.event.weight == before.event.weight
    assert after.last_retrieved_at is not None
