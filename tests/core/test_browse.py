"""Paged read paths of the workbench (core.services.browse) on the demo memory."""

from __future__ import annotations

import pytest

from core.db import db
from core.errors import InvalidInputError
from core.api import open_store
from tests.stores import copy_of


def test_event_pages_follow_time_order_without_gaps(demo):
    from core.services.browse import event_page
    from core.services.events import list_events

    expected = [e.id for e in list_events(demo, limit=1000)]
    seen, cursor = [], None
    while True:
        page = event_page(demo, after=cursor, limit=37)
        seen.extend(r.id for r in page.rows)
        if page.cursor is None:
            break
        cursor = page.cursor
    assert seen == expected


@pytest.mark.parametrize(
    "filters",
    [
        {"participant": "maya"},
        {"event_type": "plan"},
        {"status": "superseded"},
        {"date_from": "2026-02"},
        {"date_to": "2026-02-07"},
        {"date_from": "2026-02-01", "date_to": "2026-03-31"},
        {"text": "plan"},
        {"participant": "maya", "date_from": "2026", "text": "a"},
    ],
    ids=lambda f: ",".join(f),
)
def test_cli_listing_and_timeline_pages_filter_alike(demo, filters):
    """`strata events` and the workbench timeline read through one filter builder."""
    from core.services.browse import EventFilter, event_page
    from core.services.events import list_events

    listed = [e.id for e in list_events(demo, limit=1000, **filters)]
    assert 0 < len(listed) < len(list_events(demo, limit=1000))  # the filter narrows
    assert listed == [r.id for r in event_page(demo, EventFilter(**filters), limit=1000).rows]


def test_event_filters_and_lanes(demo):
    from core.services.browse import EventFilter, event_histogram, event_page

    undated = event_page(demo, EventFilter(lane="undated"), limit=1000).rows
    dated = event_page(demo, EventFilter(lane="dated"), limit=1000).rows
    assert undated and dated
    assert all(r.happened_start is None for r in undated)
    assert all(r.happened_start is not None for r in dated)
    hist = event_histogram(demo, buckets=30)
    assert len(hist.counts) == 30
    assert hist.total == len(undated) + len(dated)
    assert hist.undated == len(undated)
    assert sum(hist.counts) == hist.total  # every demo event has a mention time
    maya = event_page(demo, EventFilter(participant="maya", text="Atlas"), limit=1000).rows
    assert maya and all("atlas" in (r.title + r.summary).lower() for r in maya)
    with pytest.raises(InvalidInputError):
        event_page(demo, EventFilter(date_from="not a date"))
    with pytest.raises(InvalidInputError):
        event_page(demo, EventFilter(lane="sideways"))


def test_one_day_count_gives_the_histogram_of_every_lane(demo):
    from core.services.browse import LANES, EventFilter, event_day_counts, event_histogram, histogram_of

    counts = event_day_counts(demo, EventFilter(text="Atlas"))
    for lane in LANES:
        assert histogram_of(counts, lane, 40) == event_histogram(demo, EventFilter(text="Atlas", lane=lane), 40)
    assert histogram_of(counts, "dated", 40).undated == 0


def test_participant_filter_probes_or_lists_alike(demo, monkeypatch):
    from core.services import events
    from core.services.browse import EventFilter, event_page

    def ids(flt):
        return [r.id for r in event_page(demo, flt, limit=1000).rows]

    listed = {name: ids(EventFilter(participant=name)) for name in ("maya", "ay", "nobody-at-all")}
    monkeypatch.setattr(events, "PARTICIPANT_LIST_MAX", 0)  # every page probes per event
    assert {name: ids(EventFilter(participant=name)) for name in listed} == listed
    assert listed["maya"] and set(listed["maya"]) <= set(listed["ay"]) and not listed["nobody-at-all"]


def test_event_position_opens_a_page_at_the_event(demo):
    from core.services.browse import event_page, event_position

    rows = event_page(demo, limit=50).rows
    target = rows[20]
    page = event_page(demo, after=event_position(demo, target.id), limit=5)
    assert page.rows[0].id == target.id


def test_node_pages_are_sorted_visible_and_searchable(demo):
    from core.services.browse import node_page, node_type_counts
    from core.services.graph import list_nodes

    every = {n.id for n in list_nodes(demo, limit=10_000)}
    seen, cursor = [], None
    while True:
        page = node_page(demo, after=cursor, limit=7)
        seen.extend(page.rows)
        if page.cursor is None:
            break
        cursor = page.cursor
    assert {n.id for n in seen} == every
    assert [n.name.casefold() for n in seen] == sorted(n.name.casefold() for n in seen)
    assert sum(node_type_counts(demo).values()) >= len(every)
    people = node_page(demo, type="person", limit=100).rows
    assert people and all(n.type == "person" for n in people)
    hits = node_page(demo, query="maya").rows
    assert any("Maya" in n.name for n in hits)


def test_threads_jobs_weight_and_traces(demo):
    from core.agent_tools import MemoryTools
    from core.services.blocks import list_blocks
    from core.services.browse import block_jobs, event_weight_info, job_page, list_threads, namespace_names, trace_page

    assert namespace_names() == ["demo"]
    threads = list_threads(demo)
    assert {t.name for t in threads} >= {"work-planning", "trip-to-lisbon"}
    block = list_blocks(demo, limit=1)[0]
    assert {j.kind for j in block_jobs(block.id)} >= {"summary"}
    jobs = job_page(demo, limit=5)
    assert [j.id for j in jobs] == sorted((j.id for j in jobs), reverse=True)
    older = job_page(demo, before_id=jobs[-1].id, limit=5)
    assert all(j.id < jobs[-1].id for j in older)

    tools = MemoryTools(demo, session="s1", budget=None)
    found = tools.call("search_events", {"query": "Atlas launch date"})
    ref = found["evidence_refs"][0]
    tools.call(
        "assess",
        {"verdict": "sufficient", "evidence_refs": [ref], "fit": "direct", "missing": "", "next_strategy": "answer"},
    )
    tools.call("record_use", {"evidence_refs": [ref]})
    traces = trace_page(demo)
    assert traces and traces[0].id > traces[-1].id
    assert trace_page(demo, text=ref)
    assert trace_page(demo, text="Atlas")
    assert not trace_page(demo, text="zebra-quartz")
    # The workbench's filter box takes a pasted paragraph: its words are one flat condition.
    assert trace_page(demo, text="Atlas " * 300) and not trace_page(demo, text=" ".join(f"w{i}" for i in range(150)))
    event_id = int(ref.split(":")[1])
    info = event_weight_info(event_id)
    assert any("used" in step.what for step in info.history)
    assert info.mention_count >= 2


def test_a_type_filter_lists_a_rare_type_by_id_with_the_same_result(demo_template, tmp_path, monkeypatch):
    """A type with few events is matched by id (found through the type index), a common one by the
    type itself: the same pages, day counts and CLI listing either way, and only this namespace's."""
    import core.services.events as events
    from core.db import write_transaction

    open_store(copy_of(demo_template, tmp_path / "demo.db"), recover=False)  # changed below: a copy of its own
    demo = "demo"
    from core.models import Event
    from core.services.browse import EventFilter, event_day_counts, event_page
    from core.services.capture import append_turn
    from core.services.events import list_events, write_event
    from core.services.spaces import get_namespace

    append_turn("other-space", "chat", {"role": "user", "content": "hello"}, "hi")
    other = get_namespace("other-space")
    with write_transaction():  # another namespace's event of every type the demo has: never listed here
        for kind in {e.event_type for e in Event.select(Event.event_type)}:
            write_event(
                other.id,
                {
                    "title": f"elsewhere {kind}",
                    "summary": "elsewhere",
                    "participants": [],
                    "source_message_ids": [],
                    "event_type": kind,
                    "temporal": {},
                },
                block=None,
                formed_turn=0,
            )

    def everything(kind: str):
        flt = EventFilter(event_type=kind)
        days = event_day_counts(demo, flt)
        return (
            [r.id for r in event_page(demo, flt, limit=1000).rows],
            days.dated,
            days.undated,
            [e.id for e in list_events(demo, event_type=kind, limit=1000)],
        )

    kinds = sorted({e.event_type for e in Event.select(Event.event_type).where(Event.namespace == get_namespace(demo))})
    assert len(kinds) >= 3
    by_id = {kind: everything(kind) for kind in kinds}
    monkeypatch.setattr(events, "TYPE_LIST_MAX", 0)  # every type counts as common: matched by the type itself
    assert {kind: everything(kind) for kind in kinds} == by_id
    for kind, (page, _, _, listed) in by_id.items():
        assert page == listed and page and all(Event.get_by_id(i).event_type == kind for i in page)
    from core.eventtypes import EVENT_TYPES

    absent = next(kind for kind in EVENT_TYPES if kind not in kinds)
    assert everything(absent) == ([], (), (), [])
    db.close()
