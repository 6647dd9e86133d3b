"""The import flow: preview writes nothing, decisions are normalised, commit is atomic and
checked against the previewed revision, undo restores the store exactly."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.db import db
from core.errors import InvalidInputError, NotFoundError
from core.imports.formats import ImportFormatError
from core.models import Block, Event, EventLink, EventSource, ImportBatch, ImportItem, Job, Message, Namespace
from core.providers.scripted import ScriptedProvider
from core.services.blocks import render_block
from core.services.capture import append_messages, append_turn
from core.services.derive import run_pending
from core.services.events import forget_event
from core.text import fingerprint
from core.services.export import export_namespace
from core.services.import_batches import get_batch, list_batches
from core.services.import_choices import decide, reset_choice
from core.services.import_commit import StalePreviewError, commit_batch
from core.services.import_preview import normalize_decision, preview_batch, preview_import, start_import
from core.services.import_undo import undo_batch
from core.services.verify import verify
from tests.stores import close_template, copy_of, drop, fresh_url, on_postgres

ROOT = Path(__file__).resolve().parents[2]
NS = "ns"
FACTS = [
    "Maya lives in Lisbon.",
    "Maya works at Acme as a designer.",
    "Ben has a dog named Rex.",
    "Priya started playing the cello in 2020.",
]
KEYS = ["Lisbon", "Acme", "Rex", "cello"]


def v2(*candidates, **top) -> str:
    body = {
        "schemaVersion": "stratagate.external-memory.v2",
        "sourceType": "external_ai_memory_export",
        "sourceSystem": "OtherAI",
        "exportedAt": "2025-06-01",
        "candidates": list(candidates),
    }
    body.update(top)
    return json.dumps(body)


def c(summary: str, title: str | None = None, **extra) -> dict:
    return {"title": title or summary.rstrip("."), "summary": summary, **extra}


def answer(action, targets=(), confidence=0.95, reason="scripted", **extra):
    return {"action": action, "existing_event_ids": list(targets), "confidence": confidence, "reason": reason, **extra}


def _seed() -> dict[str, int]:
    messages = []
    for i, fact in enumerate(FACTS):
        messages += [
            {"role": "user", "content": fact, "created_at": f"2024-03-0{i + 1}T10:00:00+00:00"},
            {"role": "assistant", "content": "Noted.", "created_at": f"2024-03-0{i + 1}T10:00:05+00:00"},
        ]
    append_messages(NS, "chat", messages, close_turn=True, close_thread=True)
    report = run_pending(NS)
    assert report.failed == 0
    events = {e.summary: e.id for e in Event.select()}
    return {fact: next(i for s, i in events.items() if key in s) for fact, key in zip(FACTS, KEYS)}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A derived store with the four facts, built once and copied for each test."""
    from core.api import open_store

    url = fresh_url(tmp_path_factory.mktemp("import-template"), "seed.db")
    open_store(url)
    ids = _seed()
    close_template()
    yield url, ids
    if on_postgres():
        drop(url)


@pytest.fixture
def seeded_url(template, tmp_path):
    return copy_of(template[0], tmp_path / "strata.db")


@pytest.fixture
def seeded(template, seeded_url):
    from core.api import open_store

    open_store(seeded_url)
    yield template[1]
    if not db.is_closed():
        db.close()


def memory_rows() -> dict[str, int]:
    return {
        "events": Event.select().count(),
        "messages": Message.select().count(),
        "blocks": Block.select().count(),
        "links": EventLink.select().count(),
    }


# ----------------------------------------------------------------------------- preview


def test_preview_writes_no_memory(seeded):
    before, revision = export_namespace(NS), Namespace.get(Namespace.name == NS).revision
    preview = preview_import(NS, v2(c("Maya moved to Porto in 2025."), c("Ravi speaks Hindi.")))
    assert preview.batch.status in ("ready", "awaiting_confirmation") and preview.batch.processed == 2
    assert export_namespace(NS) == before and Namespace.get(Namespace.name == NS).revision == revision
    assert preview.batch.preview_revision == revision


def test_preview_into_a_namespace_that_does_not_exist_yet(store):
    preview = preview_import("fresh", v2(c("Maya lives in Lisbon.")))
    assert Namespace.select().count() == 0 and preview.items[0].action == "add" and preview.items[0].matches == ()
    committed = commit_batch(preview.batch.id)
    assert committed.batch.status == "committed" and Event.select().count() == 1


def test_exact_duplicates_are_skipped_without_a_model_call(seeded):
    stored = Event.get_by_id(seeded["Ben has a dog named Rex."])
    # A provider with no scripted answer fails if it is asked at all.
    provider = ScriptedProvider({"decide_external_memory": [answer("add")]})
    preview = preview_import(
        NS,
        v2(
            c(stored.summary.upper(), title=stored.title.lower() + "!"),  # same wording up to case and punctuation
            c("Ravi speaks Hindi."),
            c("Ravi speaks Hindi.", title="Ravi speaks Hindi"),  # duplicate of the item before, in the same batch
        ),
        provider=provider,
    )
    first, new, again = preview.items
    assert (first.action, first.target_ids, first.confidence, first.duplicate_of_event) == (
        "ignore",
        (stored.id,),
        1.0,
        stored.id,
    )
    assert (again.action, again.duplicate_of_item, again.model_calls) == ("ignore", 2, 0)
    assert [call for call, _ in provider.calls] == ["decide_external_memory"]  # only the new fact
    assert new.model_calls == 1 and not first.requires_confirmation


def test_exact_duplicates_are_looked_up_not_hashed_one_by_one(seeded, monkeypatch):
    """At a million messages hashing every stored event took 19 s per preview: the stored fingerprint
    is looked up, so a preview hashes only its own candidates, and a forgotten event is no duplicate."""
    import core.services.import_preview as import_preview

    stored = Event.get_by_id(seeded["Ben has a dog named Rex."])
    assert stored.fingerprint == fingerprint(stored.title, stored.summary)
    hashed = []
    real = import_preview.fingerprint
    monkeypatch.setattr(
        import_preview, "fingerprint", lambda title, summary: hashed.append(title) or real(title, summary)
    )
    provider = ScriptedProvider({"decide_external_memory": [answer("add")]})
    preview = preview_import(NS, v2(c(stored.summary, title=stored.title), c("Ravi speaks Hindi.")), provider=provider)
    assert preview.items[0].duplicate_of_event == stored.id
    assert len(hashed) == 2 < Event.select().count()
    forget_event(stored.id)
    again = preview_import(
        NS,
        v2(c(stored.summary, title=stored.title)),
        provider=ScriptedProvider({"decide_external_memory": [answer("add")]}),
    )
    assert again.items[0].duplicate_of_event is None


def test_top_k_bounds_the_matches_and_the_targets(seeded):
    outside = 99999
    provider = ScriptedProvider({"decide_external_memory": [answer("supersede", [outside], 0.99)]})
    preview = preview_import(NS, v2(c("Maya moved to Porto.")), provider=provider, top_k=1)
    item = preview.items[0]
    context = provider.calls[0][1]
    assert len(context["matches"]) == 1 and len(item.matches) == 1
    assert (item.action, item.target_ids, item.confidence) == ("ignore", (), 0.5)
    assert "safely downgraded" in item.reason and item.requires_confirmation
    for bad in (0, 21, "5"):
        with pytest.raises(InvalidInputError, match="top_k"):
            start_import(NS, v2(c("x y z")), top_k=bad)


def test_the_decider_is_told_who_the_user_is(store):
    append_turn(NS, "chat", {"role": "user", "content": "I keep my notes in Notion.", "speaker": "Maya"}, "Noted.")
    provider = ScriptedProvider({"decide_external_memory": [answer("add")]})
    preview_import(NS, v2(c("Uses Obsidian for notes.")), provider=provider)
    assert provider.calls[0][1]["user"] == {"names": ["Maya"]}


def test_decision_normalisation_rules():
    def n(raw, **kw):
        return normalize_decision(
            raw, {"title": "t", "summary": "s"}, [1, 2], recovered=kw.get("rec", False), threshold=kw.get("th", 0.85)
        )

    assert n({"action": "MERGE", "existing_event_ids": [2, 7, "1", True], "confidence": 0.9})["target_ids"] == [2]
    weird = n({"action": "delete", "existing_event_ids": [1], "confidence": 0.99})
    assert weird["action"] == "ignore" and "unknown action" in weird["reason"]
    assert n({"action": "add", "existing_event_ids": [1], "confidence": 2})["target_ids"] == []
    assert n({"action": "add", "confidence": 2})["confidence"] == 1.0
    assert n({"action": "add"})["confidence"] == 0.5 and n({"action": "add"})["requires_confirmation"]
    assert len(n({"action": "add", "reason": "r" * 900, "confidence": 1})["reason"]) == 500
    assert n({"action": "add", "confidence": 0.9}, th=0.95)["requires_confirmation"]
    assert not n({"action": "add", "confidence": 0.9}, th=0.8)["requires_confirmation"]
    assert n({"action": "add", "confidence": 1}, rec=True)["requires_confirmation"]
    merged = n(
        {
            "action": "merge",
            "existing_event_ids": [1],
            "confidence": 1,
            "merged_candidate": {"title": "Fuller", "summary": "Fuller summary."},
        }
    )
    assert merged["merged"]["title"] == "Fuller"
    assert n({"action": "merge", "existing_event_ids": [1], "merged_candidate": {"title": "only"}})["merged"] is None


def test_recovered_items_always_need_a_person(seeded):
    text = "Sure! Here is your export:\n" + v2(c("Ravi speaks Hindi.", confidence=1.0)) + "\nLet me know."
    preview = preview_import(NS, text)
    assert preview.batch.recovered and preview.items[0].requires_confirmation
    assert preview.batch.status == "awaiting_confirmation" and preview.items[0].effective_action == "ignore"


def test_rejected_input_writes_nothing(seeded):
    before = export_namespace(NS)
    for text, message in [
        ("this is not json", "not JSON at line 1 column 1"),
        (v2(c("x y"), schemaVersion="v9"), "schemaVersion"),
        (v2({"summary": "no title"}), "candidates[0].title: required"),
    ]:
        with pytest.raises(ImportFormatError, match=re.escape(message)):
            preview_import(NS, text)
    assert ImportBatch.select().count() == 0 and export_namespace(NS) == before
    with pytest.raises(ImportFormatError, match="a plain list of facts .* imports as format 'text'"):
        preview_import(NS, "- Ravi speaks Hindi.\n- Ravi lives in Pune.")
    with pytest.raises(ImportFormatError) as broken:
        preview_import(NS, '{"schemaVersion": "stratagate.external-memory.v2", "candidates": [')
    assert "format 'text'" not in str(broken.value)  # a broken JSON export is not a list of facts


def test_interrupted_preview_resumes_without_repeating_model_calls(seeded):
    boom = RuntimeError("connection reset")
    provider = ScriptedProvider({"decide_external_memory": [answer("add"), boom]})
    batch = start_import(
        NS, v2(c("Ravi speaks Hindi."), c("Omar runs marathons."), c("Lena paints with oils.")), provider=provider
    )
    with pytest.raises(Exception, match="connection reset"):
        preview_batch(batch.id, provider=provider)
    state = get_batch(batch.id)
    assert state.batch.status == "processing" and [i.state for i in state.items] == ["decided", "pending", "pending"]
    assert "connection reset" in state.batch.last_error
    with pytest.raises(InvalidInputError, match="not finished"):
        commit_batch(batch.id)
    # Meanwhile the namespace changes: the finished item is looked at again but its
    # decision is reused because its matches did not change.
    append_turn(NS, "other", "Unrelated words about sailing.", "Ok.")
    resumed = ScriptedProvider({"decide_external_memory": [answer("add"), answer("add")]})
    done = preview_batch(batch.id, provider=resumed)
    assert done.batch.status == "ready" and [i.model_calls for i in done.items] == [1, 1, 1]
    assert len(resumed.calls) == 2


def test_choices_default_to_ignore_and_are_validated(seeded):
    maya = seeded["Maya lives in Lisbon."]
    provider = ScriptedProvider(
        {"decide_external_memory": [answer("supersede", [maya], 0.6), answer("add", confidence=0.7)]}
    )
    preview = preview_import(NS, v2(c("Maya moved to Porto."), c("Omar runs marathons.")), provider=provider)
    assert preview.batch.status == "awaiting_confirmation" and preview.batch.needs_confirmation == 2
    assert [i.effective_action for i in preview.items] == ["ignore", "ignore"]
    with pytest.raises(InvalidInputError, match="neither among item 1's matches .* nor a live event"):
        decide(preview.batch.id, 1, "supersede", [123456])
    with pytest.raises(InvalidInputError, match="action must be one of"):
        decide(preview.batch.id, 1, "destroy")
    with pytest.raises(NotFoundError, match="no item 9"):
        decide(preview.batch.id, 9, "add")
    row = decide(preview.batch.id, 1, "supersede")  # the preview's own target
    assert row.effective_target_ids == (maya,) and row.choice_action == "supersede"
    assert get_batch(preview.batch.id).batch.status == "awaiting_confirmation"
    committed = commit_batch(preview.batch.id)  # item 2 needs confirmation and has no choice: ignored
    assert [i.effective_action for i in committed.items] == ["supersede", "ignore"]
    assert Event.get_by_id(maya).status == "superseded"


def test_a_person_may_choose_several_targets_even_outside_the_matches(seeded):
    maya, work, ben, priya = (seeded[f] for f in FACTS)
    provider = ScriptedProvider({"decide_external_memory": [answer("supersede", [maya], 0.6)] * 3})
    preview = preview_import(NS, v2(c("Maya moved to Porto.")), provider=provider, top_k=1)
    assert [m.event_id for m in preview.items[0].matches] == [maya]
    row = decide(preview.batch.id, 1, "supersede", [maya, work])  # work: the person knows, the search missed it
    assert row.choice_target_ids == (maya, work) and row.effective_target_ids == (maya, work)
    assert [(e.event_id, e.title) for e in row.chosen_events] == [(work, Event.get_by_id(work).title)]
    assert get_batch(preview.batch.id).items[0].chosen_events == row.chosen_events
    forget_event(priya)
    with pytest.raises(InvalidInputError, match=f"event {priya} is neither"):
        decide(preview.batch.id, 1, "conflict", [maya, priya])  # a forgotten event is no target
    append_messages(
        "other",
        "chat",
        [{"role": "user", "content": "Zed likes green tea."}, {"role": "assistant", "content": "Noted."}],
        close_turn=True,
        close_thread=True,
    )
    assert run_pending("other").failed == 0
    elsewhere = Event.select().join(Namespace).where(Namespace.name == "other").first()
    with pytest.raises(InvalidInputError, match="nor a live event of namespace 'ns'"):
        decide(preview.batch.id, 1, "merge", [elsewhere.id])
    # A reset gives the item back to the preview's decision: below the threshold, it waits again.
    reset = reset_choice(preview.batch.id, 1)
    assert reset.items[0].choice_action is None and reset.batch.needs_confirmation == 1
    decide(preview.batch.id, 1, "supersede", [maya, work])
    # The namespace moved since the preview: the refresh keeps the person's outside target.
    append_turn(NS, "later", "Something else entirely.", "Ok.")
    with pytest.raises(StalePreviewError) as info:
        commit_batch(preview.batch.id, provider=provider)
    assert info.value.preview.items[0].choice_target_ids == (maya, work)
    committed = commit_batch(preview.batch.id)
    new = committed.items[0].created_event_id
    assert committed.items[0].effective_target_ids == (maya, work)
    for target in (maya, work):
        assert (Event.get_by_id(target).status, Event.get_by_id(target).superseded_by) == ("superseded", new)
    assert undo_batch(preview.batch.id).restored_event_ids == tuple(sorted((maya, work)))
    assert Event.get_by_id(work).status == "active" and Event.get_by_id(ben).status == "active"


def test_reset_of_every_choice_and_its_limits(seeded):
    provider = ScriptedProvider({"decide_external_memory": [answer("add", confidence=0.6)] * 2})
    preview = preview_import(NS, v2(c("Omar runs marathons."), c("Ravi speaks Hindi.")), provider=provider)
    decide(preview.batch.id, 1, "add")
    decide(preview.batch.id, 2, "ignore")
    assert get_batch(preview.batch.id).batch.status == "ready"
    reset = reset_choice(preview.batch.id)
    assert [i.choice_action for i in reset.items] == [None, None] and reset.batch.status == "awaiting_confirmation"
    with pytest.raises(NotFoundError, match="no item 7"):
        reset_choice(preview.batch.id, 7)
    commit_batch(preview.batch.id)
    with pytest.raises(InvalidInputError, match="committed; its choices cannot change"):
        reset_choice(preview.batch.id, 1)


# ----------------------------------------------------------------------------- commit


def test_commit_writes_source_block_events_links_graph_jobs_and_audit(seeded):
    maya, work, ben, priya = (seeded[f] for f in FACTS)
    provider = ScriptedProvider(
        {
            "decide_external_memory": [
                answer("supersede", [maya]),
                answer(
                    "merge",
                    [work],
                    merged_candidate={
                        "title": "Maya designs at Acme",
                        "summary": "Maya works at Acme as a product designer.",
                    },
                ),
                answer("conflict", [ben]),
                answer("add"),
                answer("ignore", [priya]),
            ]
        }
    )
    text = v2(
        c("Maya moved to Porto in 2025.", temporal={"mentionedAt": "2025-02", "participants": ["Maya"]}),
        c("Maya works at Acme, designing the mobile app."),
        c("Ben does not have a dog."),
        c("Omar runs marathons.", temporal={"happenedStart": "2023-04-02", "precision": "day"}),
        c("Priya is a cellist."),
    )
    preview = preview_import(NS, text, provider=provider)
    result = commit_batch(preview.batch.id)
    batch = result.batch
    assert batch.status == "committed" and batch.imported_count == 4 and batch.source_block_id
    block = Block.get_by_id(batch.source_block_id)
    assert block.status == "ready" and block.l0_tags == ["external-memory-import"] and not block.should_extract
    assert render_block(block.id, 5).content.count("Omar runs marathons.") == 1  # the full text is L5
    source = Message.get(Message.block == block.id)
    assert text in source.content and source.has_time is True  # "in 2025" (the "when" boost reads it)
    created = {i.position: Event.get_by_id(i.created_event_id) for i in result.items if i.created_event_id}
    assert set(created) == {1, 2, 3, 4} and result.items[4].created_event_id is None
    for event in created.values():
        assert event.block_id == block.id and event.origin == "import"
        assert [s.message_id for s in EventSource.select().where(EventSource.event == event)] == [
            Message.get(Message.block == block.id).id
        ]
    assert created[2].title == "Maya designs at Acme"  # the merged candidate
    assert created[1].mentioned_at.startswith("2025-02-01") and created[4].happened_start == "2023-04-02"
    for target, new in ((maya, created[1]), (work, created[2])):
        old = Event.get_by_id(target)
        assert (old.status, old.superseded_by, old.forced_cap) == ("superseded", new.id, 0.1)
    pairs = {(link.event_id, link.kind, link.target_id) for link in EventLink.select()}
    assert (created[3].id, "conflicts", ben) in pairs and (ben, "conflicts", created[3].id) in pairs
    assert Event.get_by_id(ben).status == "active" and Event.get_by_id(priya).status == "active"
    jobs = list(Job.select().where(Job.kind == "import_graph"))
    assert (
        len(jobs) == 1
        and jobs[0].priority == 2000
        and sorted(jobs[0].payload["event_ids"]) == sorted(e.id for e in created.values())
    )
    audit = {i.position: (i.effective_action, i.effective_target_ids) for i in result.items}
    assert audit == {
        1: ("supersede", (maya,)),
        2: ("merge", (work,)),
        3: ("conflict", (ben,)),
        4: ("add", ()),
        5: ("ignore", (priya,)),
    }
    assert run_pending(NS).failed == 0 and verify(NS).ok
    with pytest.raises(InvalidInputError, match="already committed"):
        commit_batch(batch.id)


def test_stale_preview_is_refused_with_nothing_written_and_refreshed(seeded):
    maya = seeded["Maya lives in Lisbon."]
    provider = ScriptedProvider({"decide_external_memory": [answer("supersede", [maya])] * 3})
    preview = preview_import(NS, v2(c("Maya moved to Porto.")), provider=provider)
    append_turn(NS, "later", "Something else entirely.", "Ok.")
    before, rows = export_namespace(NS), memory_rows()
    with pytest.raises(StalePreviewError, match="changed since the preview") as info:
        commit_batch(preview.batch.id, provider=provider)
    assert export_namespace(NS) == before and memory_rows() == rows
    refreshed = info.value.preview
    assert refreshed.batch.preview_revision == Namespace.get(Namespace.name == NS).revision
    assert refreshed.batch.status == "ready" and refreshed.items[0].model_calls == 1  # decision reused
    assert commit_batch(preview.batch.id).batch.status == "committed"


def test_a_forgotten_target_makes_the_preview_stale(seeded):
    maya = seeded["Maya lives in Lisbon."]
    preview = preview_import(
        NS,
        v2(c("Maya moved to Porto.")),
        provider=ScriptedProvider({"decide_external_memory": [answer("supersede", [maya])]}),
    )
    forget_event(maya)
    before = export_namespace(NS)
    with pytest.raises(StalePreviewError) as info:
        commit_batch(preview.batch.id, provider=ScriptedProvider({"decide_external_memory": [answer("add")]}))
    assert export_namespace(NS) == before
    item = info.value.preview.items[0]
    assert maya not in [m.event_id for m in item.matches] and item.action == "add" and item.model_calls == 2
    assert commit_batch(preview.batch.id).batch.status == "committed"


# ----------------------------------------------------------------------------- undo


def test_undo_restores_the_store_exactly_even_after_graph_projection(seeded):
    maya, work, ben, _ = (seeded[f] for f in FACTS)
    before = export_namespace(NS)
    provider = ScriptedProvider(
        {
            "decide_external_memory": [
                answer("supersede", [maya]),
                answer("merge", [work]),
                answer("conflict", [ben]),
                answer("add"),
            ]
        }
    )
    preview = preview_import(
        NS,
        v2(
            c("Maya moved to Porto in 2025.", temporal={"participants": ["Maya"]}),
            c("Maya works at Acme as a senior designer in Lisbon."),
            c("Ben does not have a dog named Rex."),
            c("Ingrid works at Globex in Oslo.", temporal={"participants": ["Ingrid"]}),
        ),
        provider=provider,
    )
    commit_batch(preview.batch.id)
    assert run_pending(NS).succeeded >= 1  # the import's graph projection ran
    assert export_namespace(NS) != before
    result = undo_batch(preview.batch.id)
    assert export_namespace(NS) == before
    assert set(result.restored_event_ids) == {maya, work} and len(result.removed_event_ids) == 4
    assert result.batch.status == "undone" and verify(NS).ok
    with pytest.raises(InvalidInputError, match="already undone"):
        undo_batch(preview.batch.id)
    with pytest.raises(InvalidInputError, match="was undone"):
        commit_batch(preview.batch.id)
    # The audit keeps what the batch did.
    kept = get_batch(preview.batch.id)
    assert [i.effective_action for i in kept.items] == ["supersede", "merge", "conflict", "add"]
    assert all(i.created_event_id for i in kept.items)


def test_an_imported_move_ends_the_old_home_until_forgotten_or_undone(seeded):
    """An imported "moved to Porto" makes an imported Lisbon history; forgetting that event
    brings Lisbon back, restoring it ends Lisbon again, and undo leaves no reason behind."""
    from core.models import GraphEnding, GraphFact, GraphNode
    from core.services.events import restore_event

    def imported(summary: str) -> tuple[int, int]:
        preview = preview_import(
            NS,
            v2(c(summary, temporal={"participants": ["Nora"]})),
            provider=ScriptedProvider({"decide_external_memory": [answer("add")]}),
        )
        event_id = commit_batch(preview.batch.id).items[0].created_event_id
        assert run_pending(NS).failed == 0
        return preview.batch.id, event_id

    def homes() -> dict[str, str]:
        person = GraphNode.get(GraphNode.name == "Nora")
        return {
            f.value: f.status
            for f in GraphFact.select().where((GraphFact.node == person.id) & (GraphFact.key == "lives_in"))
        }

    imported("Nora lives in Lisbon.")
    before = export_namespace(NS)
    batch, _ = imported("Nora moved to Porto.")
    assert homes() == {"Lisbon": "superseded", "Porto": "active"} and GraphEnding.select().count() >= 1
    undo_batch(batch)
    assert homes() == {"Lisbon": "active"} and GraphEnding.select().count() == 0
    assert export_namespace(NS) == before

    batch, moved = imported("Nora moved to Porto.")
    forget_event(moved)
    assert homes() == {"Lisbon": "active", "Porto": "active"}  # Porto cites only the forgotten event
    restore_event(moved)
    assert homes() == {"Lisbon": "superseded", "Porto": "active"}
    undo_batch(batch)
    assert homes() == {"Lisbon": "active"} and GraphEnding.select().count() == 0


def test_undo_keeps_later_writes_and_scrubs_receipts(seeded):
    from core.services.gate import assess, open_batch, refs_for_events
    from core.services.search import search_events

    priya = seeded[FACTS[3]]
    preview = preview_import(
        NS,
        v2(c("Omar runs marathons every spring.")),
        provider=ScriptedProvider({"decide_external_memory": [answer("add")]}),
    )
    committed = commit_batch(preview.batch.id)
    imported = committed.items[0].created_event_id
    append_turn(NS, "later", "Kenji collects stamps from Peru.", "Nice.")
    hits = search_events(NS, "Omar marathons Priya cello", limit=5, track=False)
    assert {imported, priya} <= {h.event.id for h in hits}
    batch = open_batch(NS, "events", "Omar marathons Priya cello", refs_for_events(hits))
    refs = [f"event:{imported}", f"event:{priya}"]
    assess(NS, batch.id, "sufficient", refs, "both answer it", "", "answer")
    from core.services.gate import record_use

    record_use(NS, batch.id, refs, receipt_id="r1")
    assert Event.get_by_id(priya).mention_count == 2
    undo_batch(preview.batch.id)
    from core.models import UsageReceipt

    receipt = UsageReceipt.get(UsageReceipt.receipt_id == "r1")
    assert receipt.event_ids == [priya]  # the imported id left the receipt; the later use of priya stays
    assert Event.get_by_id(priya).mention_count == 2
    assert Message.select().where(Message.content == "Kenji collects stamps from Peru.").exists()
    assert Event.get_or_none(Event.id == imported) is None


def test_undo_and_commit_state_errors(seeded):
    preview = preview_import(
        NS, v2(c("Omar runs marathons.")), provider=ScriptedProvider({"decide_external_memory": [answer("add")]})
    )
    with pytest.raises(InvalidInputError, match="not committed"):
        undo_batch(preview.batch.id)
    with pytest.raises(NotFoundError, match="import batch 404"):
        undo_batch(404)
    with pytest.raises(InvalidInputError, match="must be a number"):
        get_batch("abc")


def test_batches_list_with_status(seeded):
    first = preview_import(NS, v2(c("Omar runs marathons.")))
    second = preview_import(NS, v2(c("Lena paints with oils.")))
    commit_batch(second.batch.id)
    rows = list_batches(NS)
    assert [(r.id, r.status) for r in rows] == [(second.batch.id, "committed"), (first.batch.id, "ready")]
    assert [r.id for r in list_batches(status="committed")] == [second.batch.id]
    with pytest.raises(InvalidInputError, match="import status"):
        list_batches(status="done")


def test_an_import_batch_with_nothing_to_add_still_keeps_its_text(seeded):
    preview = preview_import(NS, v2(c("User said hello to the assistant.")))
    assert preview.items[0].action == "ignore"
    committed = commit_batch(preview.batch.id)
    assert committed.batch.imported_count == 0 and Block.get_by_id(committed.batch.source_block_id)
    before_undo = Event.select().count()
    undo_batch(preview.batch.id)
    assert (
        Event.select().count() == before_undo and Block.get_or_none(Block.id == committed.batch.source_block_id) is None
    )


KILLER = """
import os, signal, sys
from core.api import open_store
import core.services.import_commit as import_commit

open_store(sys.argv[1])
real = import_commit.write_event
calls = []

def dying(*args, **kwargs):
    calls.append(1)
    event = real(*args, **kwargs)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGKILL)  # killed mid-transaction, after two events were written
    return event

import_commit.write_event = dying
import_commit.commit_batch(int(sys.argv[2]))
"""


def test_a_process_killed_during_commit_leaves_all_or_nothing(seeded, seeded_url):
    db_url = seeded_url
    provider = ScriptedProvider({"decide_external_memory": [answer("add")] * 3})
    preview = preview_import(
        NS, v2(c("Omar runs marathons."), c("Lena paints with oils."), c("Kenji collects stamps.")), provider=provider
    )
    before, rows = export_namespace(NS), memory_rows()
    db.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, db_url, str(preview.batch.id)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    from core.api import open_store

    open_store(db_url)
    assert export_namespace(NS) == before and memory_rows() == rows
    assert ImportBatch.get_by_id(preview.batch.id).status == "ready"
    assert ImportItem.select().where(ImportItem.created_event_id.is_null(False)).count() == 0
    assert commit_batch(preview.batch.id).batch.imported_count == 3


def test_migration_from_schema_4_adds_the_import_tables(db_url, store):
    from core.migrations import SCHEMA_VERSION, database_version
    from core.models import ImportChange, SchemaVersion, V5_MODELS
    from core.api import open_store

    db.drop_tables(V5_MODELS)
    SchemaVersion.delete().where(SchemaVersion.version >= 5).execute()
    db.close()
    reopened = open_store(db_url)
    assert reopened.schema_version == SCHEMA_VERSION and database_version(db) == SCHEMA_VERSION
    assert db.table_exists(ImportChange._meta.table_name)


class _TransactionWatcher(ScriptedProvider):
    """Fails the test if the import asks for a model decision inside a database transaction."""

    def decide_external_memory(self, context):
        assert not db.in_transaction(), "model call inside a write transaction"
        return super().decide_external_memory(context)

    def recover_external_memory(self, context):
        assert not db.in_transaction(), "model call inside a write transaction"
        return super().recover_external_memory(context)

    def project_graph(self, context):
        assert not db.in_transaction(), "model call inside a write transaction"
        from core.providers.offline import OfflineProvider

        return OfflineProvider().project_graph(context)


def test_model_calls_run_outside_transactions_and_choices_can_be_passed_to_commit(seeded):
    maya = seeded["Maya lives in Lisbon."]
    watcher = _TransactionWatcher(
        {
            "recover_external_memory": [
                {
                    "reason": "found",
                    "candidates": [
                        {"title": "Maya moved", "summary": "Maya moved to Porto."},
                        {"title": "Omar", "summary": "Omar runs."},
                    ],
                }
            ],
            "decide_external_memory": [answer("supersede", [maya], 0.99), answer("add", confidence=0.99)] * 2,
        }
    )
    preview = preview_import(NS, "Maya moved to Porto. Omar runs. (not JSON)", provider=watcher)
    assert preview.batch.recovered and all(i.requires_confirmation for i in preview.items)
    append_turn(NS, "later", "Sailing is fun.", "Ok.")  # stale: the commit refreshes through the watcher
    with pytest.raises(StalePreviewError):
        commit_batch(preview.batch.id, provider=watcher)
    committed = commit_batch(preview.batch.id, choices={1: ("supersede", [maya]), 2: "add"})
    assert [i.effective_action for i in committed.items] == ["supersede", "add"]
    assert run_pending(NS, provider=watcher).failed == 0  # the import's graph projection


def test_recovered_candidates_with_a_lone_surrogate_are_refused_with_where(seeded):
    provider = ScriptedProvider(
        {
            "recover_external_memory": [
                {
                    "reason": "found",
                    "candidates": [
                        {"title": "Fine", "summary": "Omar runs."},
                        {"title": "Broken", "summary": "Omar \ud800 swims."},
                    ],
                }
            ]
        }
    )
    with pytest.raises(ImportFormatError, match=r"recovered\) candidates: item 1: field 'summary'.*surrogate"):
        preview_import(NS, "Omar runs. Omar swims. (not JSON)", provider=provider)
    assert ImportBatch.select().count() == 0  # nothing stored


# ----------------------------------------------------------------------------- the graph of imported items


def _homes(namespace: str, person: str) -> tuple[dict[str, tuple], dict[str, tuple]]:
    """A person's lives_in facts as the node view shows them: current {value: sources} and
    historical {value: (until, reasons)}."""
    from core.services.graph import find_node, node_view

    view = node_view(find_node(person, namespace))
    return (
        {f.value: f.source_event_ids for f in view.current_facts if f.key == "lives_in"},
        {
            f.value: (f.valid_to, {(r.cause, r.id) for r in f.ended_by})
            for f in view.historical_facts
            if f.key == "lives_in"
        },
    )


def test_the_demo_move_ends_utrecht_with_the_import_as_its_reason_until_undone(demo_template, tmp_path):
    """Issue 31: "Maya moved to Amsterdam", confirmed as a supersede of the card saying she lives in
    Utrecht, makes Amsterdam where she lives once derived and Utrecht history ended by the import;
    the undo gives back the store byte for byte."""
    from core.api import open_store

    open_store(copy_of(demo_template, tmp_path / "demo.db"))
    assert _homes("demo", "Maya")[0].keys() == {"Utrecht"}
    before = export_namespace("demo")
    preview = preview_import(
        "demo",
        v2(
            c(
                "Maya moved from Utrecht to Amsterdam in March 2026.",
                title="Maya moved to Amsterdam",
                temporal={"happenedStart": "2026-03", "precision": "month"},
            )
        ),
    )
    item = preview.items[0]
    utrecht = [m.event_id for m in item.matches if "Utrecht" in m.summary]
    assert item.action == "supersede" and set(item.target_ids) <= set(utrecht) and item.requires_confirmation
    decide(preview.batch.id, 1, "supersede", utrecht)
    moved = commit_batch(preview.batch.id).items[0].created_event_id
    participants = Event.get_by_id(moved).participants
    assert participants[0] == "Maya" and {"Amsterdam", "Utrecht"} <= set(participants)
    assert run_pending("demo").failed == 0
    current, history = _homes("demo", "Maya")
    assert current == {"Amsterdam": (moved,)}
    until, reasons = history["Utrecht"]
    assert until == "2026-03" and ("event", moved) in reasons
    assert verify("demo").ok

    undo_batch(preview.batch.id)
    assert export_namespace("demo") == before
    assert _homes("demo", "Maya")[0].keys() == {"Utrecht"} and verify("demo").ok


def test_an_imported_move_of_someone_else_is_theirs_not_the_users(seeded):
    """ "Ben moved to Oslo" is Ben's move: his Bergen ends (replaced by the imported Oslo), the user's
    Lisbon stays, and the undo brings Bergen back."""
    append_messages(
        NS,
        "ben",
        [
            {"role": "user", "content": "My friend Ben lives in Bergen.", "created_at": "2024-04-01T10:00:00+00:00"},
            {"role": "assistant", "content": "Noted.", "created_at": "2024-04-01T10:00:05+00:00"},
        ],
        close_turn=True,
        close_thread=True,
    )
    assert run_pending(NS).failed == 0
    assert _homes(NS, "Ben")[0].keys() == {"Bergen"}
    maya_before = _homes(NS, "Maya")
    bergen = next(e.id for e in Event.select() if "Bergen" in e.summary)
    before = export_namespace(NS)
    preview = preview_import(
        NS,
        v2(
            c(
                "Ben moved to Oslo in May 2025.",
                title="Ben moved to Oslo",
                temporal={"happenedStart": "2025-05", "precision": "month"},
            )
        ),
    )
    decide(preview.batch.id, 1, "supersede", [bergen])
    moved = commit_batch(preview.batch.id).items[0].created_event_id
    assert Event.get_by_id(moved).participants[:2] == ["Ben", "Oslo"]
    assert run_pending(NS).failed == 0
    current, history = _homes(NS, "Ben")
    assert current == {"Oslo": (moved,)} and history["Bergen"][0] == "2025-05"
    ((cause, fact_id),) = history["Bergen"][1]  # the value that replaced it: Oslo, which the import states
    from core.models import GraphFact, GraphSource

    assert cause == "fact" and GraphFact.get_by_id(fact_id).value == "Oslo"
    assert (
        GraphSource.select()
        .where((GraphSource.kind == "fact") & (GraphSource.record_id == fact_id) & (GraphSource.event == moved))
        .exists()
    )
    assert _homes(NS, "Maya") == maya_before
    undo_batch(preview.batch.id)
    assert export_namespace(NS) == before and _homes(NS, "Ben")[0].keys() == {"Bergen"}


def test_an_imported_add_about_the_user_gives_the_user_a_new_fact(demo_template, tmp_path):
    """An export's statement naming no one ("Adopted a cat named Miso") is about the user, whom the
    demo's conversations name Maya: her graph gains the pet, citing the import, and loses it on undo."""
    from core.services.graph import find_node, node_view
    from core.api import open_store

    open_store(copy_of(demo_template, tmp_path / "demo.db"))

    def pets() -> dict[str, tuple]:
        view = node_view(find_node("Maya", "demo"))
        return {f.value: f.source_event_ids for f in view.current_facts if f.key == "has_pet"}

    before, pets_before = export_namespace("demo"), pets()
    assert "cat Miso" not in pets_before
    preview = preview_import("demo", v2(c("Adopted a cat named Miso in March 2026.", title="Adopted a cat")))
    decide(preview.batch.id, 1, "add")
    added = commit_batch(preview.batch.id).items[0].created_event_id
    assert Event.get_by_id(added).participants[0] == "Maya"
    assert run_pending("demo").failed == 0
    assert pets() == {**pets_before, "cat Miso": (added,)}
    undo_batch(preview.batch.id)
    assert export_namespace("demo") == before and pets() == pets_before


@pytest.mark.parametrize(
    ("title", "summary", "listed", "targets", "users", "expected"),
    [
        ("Moved to Hamburg", "Moved to Hamburg in 2025.", [], [], ["Maya"], ["Maya", "Hamburg"]),
        ("Moved to Hamburg", "The user moved to Hamburg.", [], [], [], ["User", "Hamburg"]),  # nobody has spoken
        # Several people speak as users: the one the replaced card is about (its assistant aside).
        (
            "Moved to Hamburg",
            "Moved to Hamburg.",
            [],
            [["Assistant", "Ben", "Bergen"]],
            ["Maya", "Ben"],
            ["Ben", "Hamburg"],
        ),
        ("Moved to Hamburg", "Moved to Hamburg.", [], [], ["Maya", "Ben"], ["Hamburg"]),  # no one to tell by
        (
            "Ben moved to Oslo",
            "Ben moved from Bergen to Oslo.",
            [],
            [["Maya", "Ben", "Bergen"]],
            ["Maya"],
            ["Ben", "Oslo", "Bergen"],
        ),
        ("Tomás moved to Porto", "Tomás moved to Porto.", ["Tomás", "Ivy"], [], ["Maya"], ["Tomás", "Ivy", "Porto"]),
        ("Mel adopted a cat", "Mel adopted a cat named Miso.", [], [], ["Melanie"], ["Melanie", "Miso"]),
    ],
)
def test_an_imported_item_names_who_it_is_about(title, summary, listed, targets, users, expected):
    from core.services.import_commit import _participants

    candidate = {"title": title, "summary": summary, "temporal": {"participants": listed}}
    assert _participants(candidate, targets, users) == expected
