"""Event cards: validation rules, lifecycle, links, timeline and the weight formula."""

from __future__ import annotations

import copy
import math

import pytest

from core.db import write_transaction
from core.errors import InvalidInputError
from core.eventtypes import normalize_event_type, normalize_temporal
from core.models import Block, Event, EventLink, Job
from core.providers.offline import OfflineProvider
from core.providers.scripted import ScriptedProvider
from core.services.capture import append_turn
from core.services.derive import extraction_context, run_pending
from core.services.events import (
    LazyTimeline,
    extraction_timeline,
    forget_event,
    get_event,
    list_events,
    restore_event,
    validate_extracted,
    write_event,
)
from core.services.spaces import configure_namespace, get_namespace
from tests.stores import say_and_derive
from core.weights import memory_weight


def _event(ns_id: int, title: str, **temporal) -> Event:
    draft = {
        "title": title,
        "summary": f"{title}.",
        "source_message_ids": [],
        "temporal": temporal,
        "relations": temporal.pop("relations", {}),
    }
    with write_transaction():
        return write_event(ns_id, draft, block=None, formed_turn=0)


@pytest.fixture
def ns(store):
    configure_namespace("ns", block_turn_size=1)
    return get_namespace("ns").id


# ----------------------------------------------------------------------------- validation


def test_validation_drops_bad_events_and_keeps_good_ones():
    raw = [
        {"title": "", "summary": "s", "source_message_ids": [1]},
        {"title": "t", "summary": "s", "source_message_ids": []},
        {"title": "t", "summary": "s", "source_message_ids": [1, 99]},
        {"title": "t", "summary": "s", "source_message_ids": ["1"]},
        {
            "title": " Good ",
            "summary": " kept ",
            "source_message_ids": [2, 2, 1],
            "scope": "galaxy",
            "criticality": "urgent",
            "tags": ["a", "a", "b", 3],
            "temporal": {"event_type": "版本发布"},
        },
    ]
    drafts, warnings = validate_extracted(raw, allowed_message_ids=[1, 2])
    assert len(drafts) == 1 and len(warnings) == 4
    good = drafts[0]
    assert (good["title"], good["summary"], good["source_message_ids"]) == ("Good", "kept", [2, 1])
    assert (good["scope"], good["criticality"], good["tags"]) == ("project", "routine", ["a", "b"])
    assert good["temporal"]["event_type"] == "release"


def test_validation_clamps_lengths():
    raw = [
        {"title": "t" * 500, "summary": "s" * 5000, "source_message_ids": [1], "quotes": [f"q{i}" for i in range(30)]}
    ]
    draft = validate_extracted(raw, allowed_message_ids=[1])[0][0]
    assert len(draft["title"]) == 200 and len(draft["summary"]) == 1000 and len(draft["quotes"]) == 12


def test_relation_ids_are_bounded_to_the_timeline():
    raw = [
        {
            "title": "t",
            "summary": "s",
            "source_message_ids": [1],
            "temporal": {
                "supersedes_event_ids": [5, 6],
                "conflicts_with_event_ids": [7],
                "same_event_id": 9,
                "related_event_ids": ["5"],
                "before_event_ids": [],
            },
        }
    ]
    draft = validate_extracted(raw, allowed_message_ids=[1], timeline_ids=[5, 9])[0][0]
    assert draft["relations"] == {"supersedes": [5], "same_event": [9]}
    draft = validate_extracted(raw, allowed_message_ids=[1], timeline_ids=[])[0][0]
    assert draft["relations"] == {}


@pytest.mark.parametrize(
    "value, expected",
    [
        ("Release", "release"),
        ("版本发布", "release"),
        ("task-completed", "task_completed"),
        ("Task_Completed", "task_completed"),
        ("决定", "decision"),
        ("CANCELED", "cancellation"),
        ("迁移", "migration"),
        ("birthday", "other"),
        (None, "other"),
    ],
)
def test_event_type_normalization(value, expected):
    assert normalize_event_type(value) == expected


def test_temporal_normalization_drops_bad_fields_not_the_event():
    out = normalize_temporal(
        {
            "participants": ["Ann", 3],
            "happened_start": 2023,
            "precision": "day",
            "basis": "explicit",
            "original_text": "yesterday",
            "supersedes_event_ids": [1, "x"],
            "status": "done",
        }
    )
    assert "participants" not in out and "supersedes_event_ids" not in out and "status" not in out
    assert out["original_text"] == "yesterday"
    unknown = normalize_temporal({"happened_start": "2024", "precision": "unknown", "basis": "relative"})
    assert "happened_start" not in unknown and unknown["precision"] == "unknown"
    assert normalize_temporal("nonsense") == {}


# ----------------------------------------------------------------------------- lifecycle


def test_supersede_caps_the_old_event_and_links_it(ns):
    old = _event(ns, "Maya keeps notes in Notion", participants=["Maya"])
    new = _event(ns, "Maya switched to Obsidian", relations={"supersedes": [old.id]})
    old = Event.get_by_id(old.id)
    assert (old.status, old.superseded_by, old.forced_cap) == ("superseded", new.id, 0.1)
    card = get_event(new.id)
    assert [x.id for x in card.links["supersedes"]] == [old.id]
    assert [x.id for x in get_event(old.id).linked_from["supersedes"]] == [new.id]
    assert get_event(old.id).event.weight <= 0.1


def test_conflicts_are_linked_both_ways(ns):
    a = _event(ns, "The launch is on March 3")
    b = _event(ns, "The launch is on March 17", relations={"conflicts": [a.id]})
    assert {(link.event_id, link.target_id) for link in EventLink.select()} == {(b.id, a.id), (a.id, b.id)}
    assert Event.get_by_id(a.id).status == "active"


def test_relation_to_a_forgotten_event_is_dropped_at_commit(ns):
    a = _event(ns, "Old fact")
    forget_event(a.id)
    b = _event(ns, "New fact", relations={"supersedes": [a.id]})
    assert EventLink.select().count() == 0 and Event.get_by_id(a.id).status == "forgotten"
    assert b.status == "active"


def test_forget_and_restore(ns):
    a = _event(ns, "A plain fact")
    assert forget_event(a.id).status == "forgotten"
    assert get_event(a.id).event.weight == 0.0
    assert restore_event(a.id).status == "active"
    with pytest.raises(InvalidInputError):
        restore_event(a.id)


def test_restore_does_not_revive_a_superseded_event(ns):
    old = _event(ns, "Lives in Dublin")
    _event(ns, "Moved to Utrecht", relations={"supersedes": [old.id]})
    forget_event(old.id)
    assert restore_event(old.id).status == "superseded"


def test_restore_is_active_when_its_successor_is_gone(ns):
    old = _event(ns, "Lives in Dublin")
    new = _event(ns, "Moved to Utrecht", relations={"supersedes": [old.id]})
    forget_event(new.id)
    forget_event(old.id)
    assert restore_event(old.id).status == "active"


def test_list_events_filters(ns):
    _event(
        ns,
        "Dentist",
        participants=["Maya"],
        event_type="meeting",
        happened_start="2026-02-10",
        happened_end="2026-02-10",
        precision="day",
        basis="explicit",
    )
    _event(
        ns,
        "Trip",
        participants=["Tomás"],
        event_type="plan",
        happened_start="2026-04",
        happened_end="2026-04",
        precision="month",
        basis="explicit",
    )
    _event(ns, "No date", participants=["Maya"])
    assert [e.title for e in list_events("ns", participant="maya")] == ["Dentist", "No date"]
    assert [e.title for e in list_events("ns", event_type="plan")] == ["Trip"]
    assert [e.title for e in list_events("ns", date_from="2026-04-15", date_to="2026-05")] == ["Trip"]
    assert [e.title for e in list_events("ns", date_from="2026-02")] == ["Dentist", "Trip"]
    with pytest.raises(InvalidInputError):
        list_events("ns", date_from="soon")


def test_a_type_filter_names_a_known_type(ns):
    """A provider's unknown type is stored as "other"; a filter's is an error listing the types
    (it used to be read as "other" and answer with those events)."""
    _event(ns, "Trip", event_type="plan")
    _event(ns, "Birthday", event_type="birthday")
    assert [e.event_type for e in list_events("ns")] == ["plan", "other"]
    assert [e.title for e in list_events("ns", event_type="planned")] == ["Trip"]  # an alias still works
    assert [e.title for e in list_events("ns", event_type="Other")] == ["Birthday"]
    for unknown in ("birthday", "nosuch"):
        with pytest.raises(InvalidInputError, match="unknown event type .*decision, release, task_completed"):
            list_events("ns", event_type=unknown)
    from core.services.search import search_events

    with pytest.raises(InvalidInputError, match="unknown event type 'nosuch'"):
        search_events("ns", "trip", event_type="nosuch")
    assert [h.event.title for h in search_events("ns", "trip", event_type="plan")] == ["Trip"]


def test_a_long_text_filter_is_one_flat_condition(ns):
    """Every word of --text must appear. One nested condition per word overflowed SQLite's parser
    stack at about 90 words and Python's recursion limit at a few hundred."""
    _event(ns, "Maya booked flights to Lisbon for April")
    _event(ns, "Tomás booked a hotel")
    words = " ".join(f"w{i}" for i in range(150))
    assert list_events("ns", text=words) == []
    assert [e.title for e in list_events("ns", text="lisbon " * 500 + "maya booked")] == [
        "Maya booked flights to Lisbon for April"
    ]
    with pytest.raises(InvalidInputError, match="201 distinct words; at most 200"):
        list_events("ns", text=" ".join(f"w{i}" for i in range(201)))


# ----------------------------------------------------------------------------- timeline


def _block_with_events(ns_name: str, text: str, titles: list[str]) -> Block:
    append_turn(ns_name, "t", text, "ok")
    from core.services.derive import mark_ready

    block = Block.select().order_by(Block.sequence.desc()).first()
    with write_transaction():  # as extraction does: a block's events and its ready state together
        for title in titles:
            write_event(
                block.namespace_id,
                {"title": title, "summary": title, "source_message_ids": [], "temporal": {}},
                block=block,
                formed_turn=0,
            )
        mark_ready(block)
    return block


def test_timeline_is_eight_relevant_plus_four_recent_without_forgotten(ns):
    for i in range(10):
        _block_with_events("ns", f"turn {i}", [f"garden tomatoes note {i}"])
    for i in range(6):
        _block_with_events("ns", f"later {i}", [f"unrelated chess item {i}"])
    forget_event(Event.get(Event.title == "garden tomatoes note 9").id)
    timeline = extraction_timeline(ns, "garden tomatoes")
    titles = [t["title"] for t in timeline]
    assert len(titles) == 12
    assert all("garden" in t for t in titles[:8]) and "garden tomatoes note 9" not in titles
    assert titles[8:] == [f"unrelated chess item {i}" for i in (5, 4, 3, 2)]  # newest blocks first


def test_timeline_recency_reaches_past_blocks_without_live_events(ns):
    with write_transaction():
        orphan = write_event(
            ns,
            {"title": "imported fact", "summary": "imported fact", "source_message_ids": [], "temporal": {}},
            block=None,
            formed_turn=0,
        )
    old = [_block_with_events("ns", f"early {i}", [f"early item {i}"]) for i in range(3)]
    for i in range(20):  # newer blocks whose events are all forgotten: the walk must go past them
        block = _block_with_events("ns", f"noise {i}", [f"noise {i}"])
        forget_event(Event.get(Event.block == block.id).id)
    newest = _block_with_events("ns", "newest", ["newest item"])
    titles = [t["title"] for t in extraction_timeline(ns, "zzz", exclude_block=newest.id)]
    assert titles == ["early item 2", "early item 1", "early item 0", "imported fact"]
    assert old and orphan.block_id is None


def test_timeline_includes_superseded_history(ns):
    old = _event(ns, "Maya keeps notes in Notion")
    _event(ns, "Maya writes notes in Obsidian now", relations={"supersedes": [old.id]})
    assert {t["title"] for t in extraction_timeline(ns, "notes")} == {
        "Maya keeps notes in Notion",
        "Maya writes notes in Obsidian now",
    }


class Meddler(OfflineProvider):
    def extract_events(self, context):
        context["allowed_source_message_ids"].append(10**9)
        context["timeline"].append({"id": 10**9})
        return super().extract_events(context)


def test_extractor_cannot_widen_its_permissions(ns):
    append_turn("ns", "t", "I adopted a beagle called Biscuit last week.", "Lovely!")
    run_pending("ns", provider=Meddler())
    block = Block.get()
    assert 10**9 not in extraction_context(block)["allowed_source_message_ids"]
    assert Event.select().count() >= 1


def test_a_lazy_timeline_is_read_once_and_its_copies_do_not_write_back():
    reads = []
    timeline = LazyTimeline(lambda: reads.append(1) or [{"id": 1, "title": "a"}])
    copied = copy.deepcopy(timeline)
    assert reads == []  # copying reads nothing
    copied.append({"id": 2})
    copied[0]["title"] = "changed"
    assert [item["id"] for item in copied] == [1, 2] and reads == [1]
    assert list(timeline) == [{"id": 1, "title": "a"}] and reads == [1]


def test_the_offline_extractor_reads_the_timeline_only_for_a_change(ns, monkeypatch):
    """The relevance search behind the timeline runs only for a block whose statement says something
    changed, and the supersede link it finds is the same as with the timeline read up front."""
    import core.services.derive as derive

    searched = []
    real = derive.extraction_timeline
    monkeypatch.setattr(derive, "extraction_timeline", lambda *a, **k: searched.append(a) or real(*a, **k))
    append_turn("ns", "t", "I keep all my meeting notes in Notion these days.", "Noted.")
    run_pending("ns", provider="offline")
    assert searched == []
    append_turn("ns", "t", "I no longer keep my meeting notes in Notion, I switched to Obsidian.", "Got it.")
    run_pending("ns", provider="offline")
    assert len(searched) == 1
    old = Event.get(Event.title.contains("all"))
    assert old.status == "superseded" and "Obsidian" in Event.get_by_id(old.superseded_by).title


# ----------------------------------------------------------------------------- derivation paths


def test_malformed_extraction_fails_the_job_and_keeps_the_store(ns, monkeypatch):
    monkeypatch.setattr("core.services.jobs.wall", lambda: 1e9)
    append_turn("ns", "t", "We decided to use Postgres.", "Good.")
    provider = ScriptedProvider(
        {
            "summarize_block": [
                {"title": "db", "summary": "chose postgres", "tags": [], "keypoints": [], "should_extract": True}
            ],
            "extract_events": [{"should_extract": "maybe", "events": []}],
        }
    )
    run_pending("ns", provider=provider, wait_for_retries=False)
    job = Job.get(Job.kind == "extraction")
    assert job.status == "failed" and "should_extract" in job.last_error and job.next_retry_at == 1e9 + 1
    assert Event.select().count() == 0 and Block.get().status == "pending"


def test_valid_empty_extraction_is_skipped_and_terminal(ns):
    append_turn("ns", "t", "ok", "thanks")
    provider = ScriptedProvider(
        {
            "summarize_block": [
                {"title": "chat", "summary": "small talk", "tags": [], "keypoints": [], "should_extract": True}
            ],
            "extract_events": [{"should_extract": False, "reason": "noise", "events": []}],
        }
    )
    run_pending("ns", provider=provider)
    assert Job.get(Job.kind == "extraction").status == "skipped" and Block.get().status == "ready"


def test_formed_turn_uses_the_namespace_clock(ns):
    configure_namespace("ns", block_turn_size=2)
    for i in range(3):
        append_turn("ns", "other", f"other thread turn {i}", "fine")
    append_turn("ns", "t", "I bought a red bike yesterday.", "Nice!")
    append_turn("ns", "t", "I named the bike Rocket.", "Great name!")
    run_pending("ns")
    event = Event.get(Event.title.contains("bike"))
    assert event.formed_turn == 5  # namespace-wide clock, not the thread-local turn 2


# ----------------------------------------------------------------------------- weights


def test_weight_formula():
    assert memory_weight(status="active", current_turn=10, last_adopted_turn=10, mention_count=1) == 1.0
    assert memory_weight(status="active", current_turn=20, last_adopted_turn=10, mention_count=1) == pytest.approx(
        math.exp(-1.5)
    )
    slower = 0.15 / (1 + 1.5 * math.log(3))
    assert memory_weight(status="active", current_turn=20, last_adopted_turn=10, mention_count=3) == pytest.approx(
        math.exp(-slower * 10)
    )
    assert (
        memory_weight(status="active", current_turn=1000, last_adopted_turn=0, mention_count=1, floor_weight=0.9) == 0.9
    )
    assert (
        memory_weight(status="superseded", current_turn=0, last_adopted_turn=0, mention_count=1, forced_cap=0.1) == 0.1
    )
    assert memory_weight(status="active", current_turn=999, last_adopted_turn=0, mention_count=1, pinned=True) == 1.0
    assert memory_weight(status="forgotten", current_turn=0, last_adopted_turn=0, mention_count=1, pinned=True) == 0.0


def test_an_event_may_supersede_an_earlier_one_of_the_same_extraction():
    """Positions refer to earlier events of the same list; they become draft positions (dropped
    events do not count), and a position that is not earlier, or was dropped, is ignored."""
    raw = [
        {"title": "Dentist on March 3", "summary": "s", "source_message_ids": [1]},
        {"title": "", "summary": "dropped", "source_message_ids": [1]},
        {
            "title": "Dentist moved to March 10",
            "summary": "s",
            "source_message_ids": [2],
            "temporal": {"supersedes_earlier": [0, 1, 2, 7]},
        },
    ]
    drafts, _ = validate_extracted(raw, allowed_message_ids=[1, 2])
    assert [d["title"] for d in drafts] == ["Dentist on March 3", "Dentist moved to March 10"]
    assert (drafts[1]["supersedes_earlier"], drafts[1]["relations"]) == ([0], {})
    assert drafts[0]["supersedes_earlier"] == []


def test_a_relation_kind_write_event_does_not_know_is_no_link(ns):
    old = _event(ns, "an old plan")
    new = _event(ns, "a new plan", relations={"supersedes_draft": [old.id], "unknown": [old.id]})
    assert not EventLink.select().where(EventLink.event == new.id).exists()
    assert Event.get_by_id(old.id).status == "active"


def test_a_correction_later_in_the_same_block_supersedes_the_earlier_card(store):
    """'my appointment is on March 3' then 'moved my appointment to March 10' in one block: the
    first card is superseded by the second (it used to stay active beside it)."""
    say_and_derive(
        "ns",
        [
            ("user", "My dentist appointment is on March 3 at 9am."),
            ("assistant", "Noted."),
            ("user", "The dentist moved my appointment to March 10, same time."),
            ("assistant", "Updated."),
        ],
        first_day="2026-02-20",
    )
    first, second = (Event.get(Event.title.contains(word)) for word in ("March 3", "March 10"))
    assert (first.status, second.status) == ("superseded", "active")
    assert (
        EventLink.select()
        .where((EventLink.event == second.id) & (EventLink.target == first.id) & (EventLink.kind == "supersedes"))
        .exists()
    )


@pytest.mark.parametrize("lookup", [True, False])
def test_a_correction_finds_what_it_names_beyond_the_blocks_timeline(store, monkeypatch, lookup):
    """The block's timeline holds nothing here (as when its summary's words do not reach an old card);
    "I no longer use Notion" and "we moved the launch to March 17" still find the cards they correct by
    the names they give - and without the lookup they cannot."""
    from core.services import derive

    configure_namespace("ns", block_turn_size=2)
    monkeypatch.setattr(derive, "extraction_timeline", lambda *args, **kwargs: [])
    if not lookup:
        monkeypatch.setattr(derive, "correction_lookup", lambda *args, **kwargs: [])
    say_and_derive(
        "ns",
        [
            ("user", "I keep all my meeting notes in Notion."),
            ("assistant", "Noted."),
            ("user", "We're targeting a customer launch on Tuesday, March 3rd."),
            ("assistant", "Great."),
            ("user", "By the way, I no longer use Notion, I switched to Obsidian."),
            ("assistant", "Updated."),
            ("user", "Update: we moved the launch to Tuesday, March 17."),
            ("assistant", "Updated."),
        ],
        close_turn=True,
    )
    notion, launch = (Event.get(Event.title.contains(words)) for words in ("notes in Notion", "customer launch"))
    assert (notion.status, launch.status) == (("superseded", "superseded") if lookup else ("active", "active"))
    if lookup:
        assert "Obsidian" in Event.get_by_id(notion.superseded_by).title
        assert "March 17" in Event.get_by_id(launch.superseded_by).title
