"""Governed records: capture into quarantine, evidence, promotion by a named actor, revoke and restore,
what readers may see, the audit trail and the namespace policy."""

from __future__ import annotations

import pytest

from core.errors import InvalidInputError, NotFoundError
from core.models import AuditEntry, Event, Job, MemoryRecord
from core.services import governance as gov
from core.services.capture import append_turn
from core.services.derive import run_pending
from core.services.policy import Policy, read_policy_text, set_policy
from core.services.retrieval import default_retrieval
from core.services.search import search_events, search_raw

NS = "me"


@pytest.fixture
def said(store):
    """A conversation turn the records can cite as evidence; returns its user message id."""
    append_turn(NS, "chat", "I always book an aisle seat when I fly.", "Noted: aisle seats.")
    return 1


def _visible(query: str, *, for_agent: bool = False) -> dict[str, list[int]]:
    return {
        "events": [h.event.id for h in search_events(NS, query, for_agent=for_agent)],
        "raw": [h.message.id for h in search_raw(NS, query, for_agent=for_agent)],
        "ask": [m.message_id for m in default_retrieval(NS, query, for_agent=for_agent)],
    }


def _record_hits(record_id: int, query: str, *, for_agent: bool = False) -> bool:
    r = MemoryRecord.get_by_id(record_id)
    seen = _visible(query, for_agent=for_agent)
    return (r.event_id in seen["events"]) or (r.message_id in seen["raw"]) or (r.message_id in seen["ask"])


def test_a_record_waits_in_quarantine_and_nobody_reads_it(said):
    before = _visible("window seat trains")
    done = gov.remember(NS, "Maya prefers a window seat on trains.", source="agent", actor="planner")
    assert done.record.status == "quarantined" and done.record.actor == "planner"
    assert done.record.event_id is None and done.record.message_id is None
    assert _visible("window seat trains") == before  # nothing was written that a reader could find
    assert Event.select().count() == 0
    (row,) = gov.audit_trail(NS)
    assert (row.action, row.from_status, row.to_status, row.actor) == ("capture", None, "quarantined", "planner")


def test_approval_needs_evidence_and_a_named_actor_then_readers_find_it(said):
    rid = gov.remember(NS, "Maya prefers a window seat on trains.", source="agent").record.id
    with pytest.raises(InvalidInputError, match="no evidence"):
        gov.approve_record(rid, actor="alice")
    with pytest.raises(InvalidInputError, match="actor"):
        gov.approve_record(rid, actor="  ", evidence=[f"message:{said}"])
    with pytest.raises(InvalidInputError, match="no message 999"):
        gov.approve_record(rid, actor="alice", evidence=["message:999"])
    record = gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"], reason="she said so")
    assert record.status == "promoted" and record.evidence == (f"message:{said}",)
    assert _record_hits(rid, "window seat trains")
    event = Event.get_by_id(record.event_id)
    assert event.origin == "governed" and event.status == "active"
    cited = gov._evidence_messages([f"event:{record.event_id}"])
    assert record.message_id in cited and said in cited  # the card cites its own text and the evidence
    assert Job.select().where(Job.kind == "graph").count() == 1
    actions = [
        (a.action, a.to_status, a.actor, a.reason) for a in gov.audit_trail(NS, subject="record", subject_id=rid)
    ]
    assert actions == [
        ("capture", "quarantined", "agent", None),
        ("verify", "verified", "alice", "she said so"),
        ("promote", "promoted", "alice", "she said so"),
    ]


def test_revoke_hides_it_everywhere_and_restore_brings_it_back(said):
    rid = gov.remember(NS, "Maya prefers a window seat on trains.").record.id
    gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"])
    run_pending(NS)
    with pytest.raises(InvalidInputError, match="reason"):
        gov.revoke_record(rid, actor="alice", reason="")
    revoked = gov.revoke_record(rid, actor="bob", reason="it was about Tomás")
    assert revoked.status == "revoked" and Event.get_by_id(revoked.event_id).status == "revoked"
    assert not _record_hits(rid, "window seat trains")
    restored = gov.restore_record(rid, actor="bob")
    assert restored.status == "promoted" and Event.get_by_id(restored.event_id).status == "active"
    assert _record_hits(rid, "window seat trains")
    trail = [(a.action, a.from_status, a.to_status, a.actor) for a in gov.audit_trail(NS, subject="record")]
    assert trail[-2:] == [("revoke", "promoted", "revoked", "bob"), ("restore", "revoked", "promoted", "bob")]


def test_transitions_only_from_the_states_they_name(said):
    rid = gov.remember(NS, "Maya prefers a window seat on trains.").record.id
    with pytest.raises(InvalidInputError, match="quarantined; revoke applies to promoted"):
        gov.revoke_record(rid, actor="alice", reason="x")
    with pytest.raises(InvalidInputError, match="reason"):
        gov.reject_record(rid, actor="alice", reason=None)
    assert gov.reject_record(rid, actor="alice", reason="not true").status == "rejected"
    with pytest.raises(InvalidInputError, match="rejected; approve applies"):
        gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"])
    assert gov.restore_record(rid, actor="alice").status == "quarantined"
    with pytest.raises(NotFoundError):
        gov.get_record(4242)
    with pytest.raises(InvalidInputError):
        gov.get_record("record:x")


def test_exact_duplicates_are_refused_and_near_ones_linked(said):
    first = gov.remember(NS, "Maya prefers a window seat on trains.").record.id
    with pytest.raises(gov.DuplicateRecordError, match=f"record {first}") as caught:
        gov.remember(NS, "  maya PREFERS a window seat, on trains ")
    assert caught.value.existing_id == first
    near = gov.remember(NS, "Maya prefers a window seat on long trains.")
    assert near.near_duplicate_of == first and near.record.near_duplicate_of == first
    gov.reject_record(first, actor="alice", reason="wrong")
    again = gov.remember(NS, "Maya prefers a window seat on trains.")  # a rejected record is no longer standing
    assert again.record.id not in (first, near.record.id)


def test_bad_input_is_refused_naming_the_field(store):
    for kwargs, field in (
        ({"source": "robot"}, "source"),
        ({"privacy": "public"}, "privacy"),
        ({"expires": "next week"}, "expires"),
        ({"review_by": "2026-13-01"}, "review-by"),
        ({"key": "k" * 161}, "key"),
        ({"evidence": ["blob:3"]}, "evidence"),
    ):
        with pytest.raises(InvalidInputError, match=field):
            gov.remember(NS, "A fact.", **kwargs)
    for text, what in (("", "empty"), ("x" * 4001, "4001 characters"), ("a\x00b", "NUL"), (3, "must be text")):
        with pytest.raises(InvalidInputError, match=what):
            gov.remember(NS, text)
    assert MemoryRecord.select().count() == 0


def test_secret_records_never_reach_an_agent(said):
    rid = gov.remember(NS, "Maya's passport number is X1234567.", source="user", privacy="secret").record.id
    gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"])
    assert rid in [r.id for r in gov.list_records(NS, status="promoted")]  # kept for the person
    assert not _record_hits(rid, "passport number", for_agent=True)
    assert Job.select().where(Job.kind == "graph").count() == 0  # nor does the graph agents read
    record = MemoryRecord.get_by_id(rid)
    codes = gov.withheld(message_ids=[record.message_id], event_ids=[record.event_id], for_agent=True)
    assert record.message_id is None and set(codes.values()) == {"privacy_denied"}
    person = [h.event.id for h in search_events(NS, "passport number")]
    assert record.event_id in person and record.event_id not in [
        h.event.id for h in search_events(NS, "passport number", for_agent=True)
    ]


def test_expired_stale_and_key_conflicts_are_withheld_with_their_reason(said):
    def promoted(text: str, **kw) -> MemoryRecord:
        rid = gov.remember(NS, text, **kw).record.id
        gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"])
        return MemoryRecord.get_by_id(rid)

    expired = promoted("The office wifi password rotates on Fridays.", expires="2026-01-01")
    stale = promoted("Maya's manager is Priya.", review_by="2026-02-01")
    home_a = promoted("Maya lives in Utrecht.", key="maya.home")
    home_b = promoted("Maya lives in Amsterdam.", key="maya.home")
    ok = promoted("Maya drinks oat flat whites.")
    codes = gov.withheld(event_ids=[r.event_id for r in (expired, stale, home_a, home_b, ok)], today="2026-06-01")
    codes = {k: v for k, v in codes.items() if k[0] == "event"}  # their messages are withheld alike
    assert codes == {
        ("event", expired.event_id): "expired",
        ("event", stale.event_id): "stale",
        ("event", home_a.event_id): "key_conflict",
        ("event", home_b.event_id): "key_conflict",
    }
    assert set(gov.withheld(event_ids=[expired.event_id], today="2025-12-31")) == set()
    queue = gov.review_queue(NS, today="2026-06-01")
    kinds = {(i.kind, i.id) for i in queue}
    assert ("key_conflict", "key:maya.home") in kinds and ("stale", f"record:{stale.id}") in kinds
    gov.revoke_record(home_b.id, actor="alice", reason="moved back")
    assert gov.withheld(event_ids=[home_a.event_id], today="2026-06-01") == {}


def test_the_review_queue_lists_what_waits(said):
    waiting = gov.remember(NS, "Maya is allergic to penicillin.", source="tool").record.id
    promoted = gov.remember(NS, "Maya drinks oat flat whites.").record.id
    gov.approve_record(promoted, actor="alice", evidence=[f"message:{said}"])
    ids = [i.id for i in gov.review_queue(NS)]
    assert ids == [f"record:{waiting}"]


def test_a_trusted_source_skips_quarantine(said):
    set_policy(NS, read_policy_text("trust: [user]\n", "policy.yaml"))
    user = gov.remember(NS, "I take the 8:12 train on weekdays.", source="user")
    agent = gov.remember(NS, "Maya commutes by train.", source="agent")
    assert user.record.status == "promoted" and agent.record.status == "quarantined"
    promote = [a for a in gov.audit_trail(NS, subject="record", subject_id=user.record.id) if a.action == "promote"]
    assert promote[0].actor == "policy"


@pytest.mark.parametrize(
    "text, message",
    [
        ("trust: [robots]", "unknown source 'robots'"),
        ("trust: user", "must be a list"),
        ("trusts: [user]", "unknown key 'trusts'"),
        ("trust: [user\n  - x", "not valid YAML at line"),
        ("- user", "expected a mapping"),
    ],
)
def test_a_bad_policy_says_what_and_where(text, message):
    with pytest.raises(InvalidInputError, match=message):
        read_policy_text(text, "policy.yaml")
    assert Policy().trusts("user") is False


def test_forget_restore_pin_and_unpin_are_audited(said):
    rid = gov.remember(NS, "Maya drinks oat flat whites.").record.id
    event_id = gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"]).event_id
    gov.set_pinned(event_id, True, actor="alice", reason="keep it")
    assert Event.get_by_id(event_id).pinned
    gov.set_pinned(event_id, True, actor="alice")  # already pinned: nothing to record
    gov.forget(event_id, actor="bob", reason="private")
    assert Event.get_by_id(event_id).status == "forgotten"
    gov.restore(event_id, actor="bob")
    gov.set_pinned(event_id, False, actor="alice")
    trail = [
        (a.action, a.from_status, a.to_status, a.actor, a.reason)
        for a in gov.audit_trail(NS, subject="event", subject_id=event_id)
    ]
    assert trail == [
        ("pin", "active", "active", "alice", "keep it"),
        ("forget", "active", "forgotten", "bob", "private"),
        ("restore", "forgotten", "active", "bob", None),
        ("unpin", "active", "active", "alice", None),
    ]


def test_audit_rows_are_only_ever_added(said):
    rid = gov.remember(NS, "Maya drinks oat flat whites.").record.id
    gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"])
    first = [(a.id, a.action, a.at) for a in AuditEntry.select().order_by(AuditEntry.id)]
    gov.revoke_record(rid, actor="alice", reason="no")
    after = [(a.id, a.action, a.at) for a in AuditEntry.select().order_by(AuditEntry.id)]
    assert after[: len(first)] == first and len(after) == len(first) + 1


def test_an_agent_writes_through_its_tool_and_reads_only_what_was_promoted(said):
    import json

    from core.agent_tools import MemoryTools

    tools = MemoryTools(NS, session="agent-7", budget=None)
    wrote = tools.call("remember", {"text": "Maya prefers a window seat on trains.", "key": "maya.seat"})
    assert wrote["status"] == "quarantined" and "quarantine" in wrote["note"]
    rid = int(wrote["record_id"].split(":")[1])
    assert gov.get_record(rid).actor == "agent-7" and gov.get_record(rid).source == "agent"
    assert tools.call_safe("remember", {"text": "maya prefers a window seat on trains"})["error"]["code"] == "duplicate"

    readers = iter(range(100))

    def seen() -> str:  # a fresh session each time: the gate's round rules are not under test here
        reader = MemoryTools(NS, session=f"reader-{next(readers)}", budget=None)
        return json.dumps(
            [
                reader.call("search_events", {"query": "window seat trains"}),
                reader.call("search_raw", {"query": "window seat trains"}),
                reader.call("get_blocks", {"scope": "namespace"}),
            ]
        )

    assert "window seat on trains" not in seen()
    gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"])
    assert "window seat on trains" in seen()
    gov.revoke_record(rid, actor="alice", reason="about Tomás")
    assert "window seat on trains" not in seen()


def test_a_secret_never_appears_in_any_agent_tool_output(said):
    import json

    from core.agent_tools import MemoryTools

    rid = gov.remember(NS, "Maya's passport number is X1234567.", source="user", privacy="secret").record.id
    event_id = gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"]).event_id
    run_pending(NS)
    tools = MemoryTools(NS, session="agent-8", budget=None)
    outputs = [
        tools.call_safe(name, args)
        for name, args in (
            ("search_events", {"query": "passport number"}),
            ("search_raw", {"query": "passport number X1234567"}),
            ("search_graph", {"query": "passport"}),
            ("get_blocks", {"scope": "namespace"}),
            ("expand_event", {"id": event_id}),
        )
    ]
    assert "X1234567" not in json.dumps(outputs)
    assert outputs[-1]["error"]["code"] == "not_found"


def test_traces_keep_what_a_search_withheld_and_why(said):
    from core.agent_tools import MemoryTools
    from core.services.trace_view import get_trace
    from core.services.traces import list_traces

    rid = gov.remember(NS, "Maya's passport number is X1234567.", privacy="secret").record.id
    event_id = gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"]).event_id
    MemoryTools(NS, session="agent-9", budget=None).call("search_events", {"query": "passport number"})
    (trace,) = [t for t in list_traces(NS) if t.kind == "search"]
    assert get_trace(trace.id).detail["excluded"] == [{"ref": f"event:{event_id}", "reason": "privacy_denied"}]


def test_each_context_build_writes_a_ledger_row_with_reasons(said):
    from core.services.context import auto_context
    from core.services.ledger import list_ledger

    secret = gov.remember(NS, "Maya's seat preference code is AISLE-7.", privacy="secret").record.id
    secret_event = gov.approve_record(secret, actor="alice", evidence=[f"message:{said}"]).event_id
    shown = gov.remember(NS, "Maya wants an aisle seat on every flight.").record.id
    shown_event = gov.approve_record(shown, actor="alice", evidence=[f"message:{said}"]).event_id
    gov.set_pinned(secret_event, True, actor="alice")  # pinned events join without a search: still withheld
    ctx = auto_context(NS, "which seat does Maya want on a flight", token_budget=900)
    assert shown_event in ctx.event_ids and secret_event not in ctx.event_ids
    (row,) = list_ledger(NS, kind="context")
    assert row.id == ctx.ledger_id and row.tokens == ctx.tokens and row.budget == 900
    assert f"event:{shown_event}" in row.selected
    assert {"ref": f"event:{secret_event}", "reason": "privacy_denied"} in row.excluded
    tight = auto_context(NS, "which seat does Maya want on a flight", token_budget=10)
    assert tight.event_ids == () and {e["reason"] for e in list_ledger(NS)[0].excluded} >= {"over_budget"}


def test_a_cost_preflight_allows_mitigates_or_blocks_and_ledgers_each(store):
    from core.services.ledger import list_ledger
    from core.services.preflight import preflight, spent_today

    append_turn(NS, "chat", "hello", "hi")
    assert preflight(NS, 5000, purpose="summary").decision == "allow"  # no budget set
    set_policy(NS, read_policy_text("budgets: {session_tokens: 3000, daily_tokens: 8000}", "p.yaml"))
    first = preflight(NS, 2500, purpose="summary job 1")
    assert (first.decision, first.allowed, first.remaining_session) == ("allow", 2500, 3000)
    shrunk = preflight(NS, 2500, purpose="import decision", session_spent=2500, can_shrink_to=400)
    assert (shrunk.decision, shrunk.allowed) == ("mitigate", 500)
    blocked = preflight(NS, 2500, purpose="graph job 3", session_spent=3000)
    assert blocked.decision == "block" and "session budget" in blocked.reason and blocked.allowed == 0
    assert spent_today(get_ns_id()) == 2500 + 5000 + 500
    rows = list_ledger(NS, kind="preflight")
    assert [r.decision for r in rows] == ["block", "mitigate", "allow", "allow"] and all(r.reason for r in rows)


def get_ns_id() -> int:
    from core.services.spaces import get_namespace

    return get_namespace(NS).id


def test_derivation_with_a_model_stops_at_the_budget_and_leaves_the_job_pending(store):
    from core.providers.offline import OfflineProvider
    from core.services.spaces import configure_namespace

    class Metered(OfflineProvider):
        model_backed = True  # as a model-backed provider: every request goes through the preflight

    configure_namespace(NS, block_turn_size=1)
    for i in range(3):
        append_turn(NS, "chat", f"We moved the launch to March {i + 3}.", "Noted.")
    set_policy(NS, read_policy_text("budgets: {session_tokens: 2500}", "p.yaml"))
    report = run_pending(NS, provider=Metered())
    assert report.blocked and "session budget" in report.blocked
    assert 0 < report.tokens_allowed <= 2500
    assert Job.select().where(Job.status == "pending").count() >= 1
    assert Job.select().where(Job.status == "running").count() == 0  # the blocked job was given back
    set_policy(NS, read_policy_text("trust: []", "p.yaml"))
    assert run_pending(NS, provider=Metered()).blocked is None


def test_a_note_an_agent_wrote_waits_in_the_review_queue(said):
    from core.services.notes import approve_note, read_note, write_note

    note = write_note(
        NS,
        title="Atlas deploy shortcut",
        summary="Skip the canary on Fridays.",
        keywords=["deploy", "canary"],
        content="…",
        source="agent",
        actor="deployer",
    )
    queue = gov.review_queue(NS)
    (item,) = [i for i in queue if i.kind == "note"]
    assert item.id == f"note:{note.id}" and item.source == "agent" and "deployer" in item.detail
    approve_note(note.id, actor="alice")
    assert read_note(note.id).status == "active" and not [i for i in gov.review_queue(NS) if i.kind == "note"]


def test_a_session_scoped_record_reaches_only_the_session_that_wrote_it(said):
    import json

    from core.agent_tools import MemoryTools

    writer = MemoryTools(NS, session="agent-a", budget=None)
    rid = int(
        writer.call("remember", {"text": "This session's draft uses the codename Kestrel.", "scope": "session"})[
            "record_id"
        ].split(":")[1]
    )
    gov.approve_record(rid, actor="alice", evidence=[f"message:{said}"])
    mine = MemoryTools(NS, session="agent-a", budget=None).call("search_events", {"query": "codename Kestrel"})
    theirs = MemoryTools(NS, session="agent-b", budget=None).call("search_events", {"query": "codename Kestrel"})
    assert "Kestrel" in json.dumps(mine) and "Kestrel" not in json.dumps(theirs)
    event_id = gov.get_record(rid).event_id
    codes = gov.withheld(event_ids=[event_id], for_agent=True, session="agent-b")
    assert codes[("event", event_id)] == "out_of_scope" and set(codes.values()) == {"out_of_scope"}
    assert gov.withheld(event_ids=[event_id]) == {}  # a person sees it
