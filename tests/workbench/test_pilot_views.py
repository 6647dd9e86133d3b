"""Each view's behaviour: load, filter, drill, expand, follow, retry, search."""

from __future__ import annotations

from contextlib import asynccontextmanager

from textual.widgets import DataTable, Input, Select, Sparkline, Static, TabbedContent

from workbench.messages import OpenItem
from workbench.screens.blocks import BlocksScreen
from workbench.screens.graph import GraphScreen
from workbench.screens.jobs import JobsScreen
from workbench.screens.timeline import TimelineScreen
from workbench.screens.traces import TracesScreen
from workbench.testing import settle

SIZE = (120, 36)


@asynccontextmanager
async def opened(make_app, key: str | None, screen_type, messages: list | None = None):
    """The workbench run headless, on the view ``key`` opens (None: the first), settled:
    (app, pilot, screen)."""
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=messages.append if messages is not None else None) as pilot:
        if key:
            await pilot.press(key)
        await settle(pilot)
        assert isinstance(app.screen, screen_type)
        yield app, pilot, app.screen


def reopen(url):
    from core.api import open_store

    open_store(url, recover=False)


async def test_blocks_load_filter_expand_and_jump(make_app, wb_url):
    messages = []
    async with opened(make_app, None, BlocksScreen, messages) as (app, pilot, screen):
        rail = screen.query_one("#block-rail")
        assert rail.row_count == 13
        first = rail.current
        assert screen.detail.row.id == first.id
        tabs = screen.query_one("#block-levels", TabbedContent)
        assert tabs.active == f"level-{first.current_level}"
        assert "Maya" in str(screen.query_one("#level-text-5", Static).content)
        # L0-L5 all rendered for a ready block
        assert set(screen.detail.views) == set(range(6))
        # thread filter
        screen.query_one("#threads").highlighted = 4
        await pilot.press("t", "enter")
        await settle(pilot)
        assert screen.thread_filter is not None
        assert {r.thread for r in rail.items} == {screen.thread_filter}
        # status filter
        screen.query_one("#status-filter", Select).value = "pending"
        await settle(pilot)
        assert rail.row_count == 0
        screen.query_one("#status-filter", Select).value = "all"
        await settle(pilot)
        # expand one level deeper: recorded as a user lift
        await pilot.press("escape")
        row = rail.current
        before = row.current_level
        await pilot.press("e")
        await settle(pilot)
        expanded = [m for m in messages if isinstance(m, BlocksScreen.BlockExpanded)]
        assert expanded and expanded[-1].block_id == row.id
        # one level deeper, passing over an L4 that shows what its L3 shows (a chat with nothing to fold)
        same = before == 3 and row.tokens[3] == row.tokens[4]
        assert expanded[-1].level == (5 if same else min(5, before + 1))
        assert rail.current.last_lifted_by == "user"
        assert tabs.active == f"level-{expanded[-1].level}"
        # levels with [ and ], side by side with L5
        await pilot.press("left_square_bracket")
        assert tabs.active == f"level-{expanded[-1].level - 1}"
        await pilot.press("v")
        assert screen.has_class("-compare")
        # jump to the block holding a message, at L5
        message_id = 100
        screen.focus_item("message", message_id)
        await settle(pilot)
        assert tabs.active == "level-5"
        assert screen.detail is not None
    reopen(wb_url)
    from core.services.blocks import get_block

    assert get_block(row.id).last_lifted_by == "user"


async def test_timeline_pages_filters_histogram_and_source_jump(make_app):
    messages = []
    async with opened(make_app, "2", TimelineScreen, messages) as (app, pilot, screen):
        table = screen.query_one("#events")
        assert table.row_count == 50 and table.has_more
        assert any(screen.query_one("#histogram", Sparkline).data)
        from core.models import Event

        shown = Event.select().where(Event.status != "forgotten").count()  # the demo's cards, counted apart
        assert shown > 200 and f"{shown} events" in str(screen.query_one("#hist-summary").render())
        # the cursor near the end asks for the next page
        table.move_cursor(row=45)
        await settle(pilot)
        assert table.row_count == 100
        # detail of the highlighted event
        assert screen.detail.card.event.id == table.current.id
        # text filter
        await pilot.press("f", *"passport", "enter")
        await settle(pilot)
        assert 0 < table.row_count < 30
        assert all("passport" in (r.title + r.summary).lower() for r in table.items)
        text = str(screen.query_one("#event-text", Static).render())
        assert "Weight" in text and "Sources" in text and "Time" in text
        # unknown-time lane
        screen.query_one("#f-lane", Select).value = "undated"
        await settle(pilot)
        assert all(r.happened_start is None for r in table.items)
        # participant and dates
        await pilot.press("x")
        await settle(pilot)
        assert table.row_count == 50
        screen.query_one("#f-who", Input).value = "Priya"
        screen.query_one("#f-from", Input).value = "2026-01"
        await pilot.press("f", "enter")
        await settle(pilot)
        assert table.row_count > 0
        assert all(any("priya" in p.lower() for p in r.participants) for r in table.items)
        # bad dates are reported, not fatal
        screen.query_one("#f-from", Input).value = "someday"
        await pilot.press("f", "enter")
        await settle(pilot)
        assert any("from/to" in n.message for n in app._notifications)
        await pilot.press("x")
        await settle(pilot)
        # jump to the source block at L5
        event = table.current
        await pilot.press("b")
        await settle(pilot)
        assert any(isinstance(m, OpenItem) and m.kind == "block" and m.level == 5 for m in messages)
        assert app.current_mode == "blocks"
        assert app.screen.detail.row.id == event.block_id
        assert app.screen.query_one("#block-levels", TabbedContent).active == "level-5"


async def test_graph_search_follow_edges_back_and_forward(make_app):
    async with opened(make_app, "3", GraphScreen) as (app, pilot, screen):
        nodes = screen.query_one("#nodes")
        assert nodes.row_count > 20
        await pilot.press("f", *"maya", "enter")
        await settle(pilot)
        assert [r.name for r in nodes.items] == ["Maya Brennan"]
        maya = screen.view
        assert maya.name == "Maya Brennan" and maya.current_facts
        facts = screen.query_one("#facts-table", DataTable)
        assert facts.row_count == len(maya.current_facts) + len(maya.historical_facts)
        # A past fact says why it ended: Notion when Maya said she moved to Obsidian.
        ended = [f for f in maya.historical_facts if f.ended_by]
        assert ended and all(str(facts.get_cell(f"h{f.id}", "status")).startswith("past · ") for f in ended)
        await pilot.press("e")
        edges = screen.query_one("#edges-table", DataTable)
        assert edges.row_count == len(maya.edges_out) + len(maya.edges_in)
        await pilot.press("enter")
        await settle(pilot)
        other = screen.view
        assert other.id != maya.id and other.id == (maya.edges_out + maya.edges_in)[0].other_id
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.view.id == maya.id
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert screen.view.id == other.id
        # supporting events open in the timeline
        await pilot.press("v", "enter")
        await settle(pilot)
        assert app.current_mode == "timeline"
        assert app.screen.detail.card.event.id == other.events[0].id
        # type filter
        await pilot.press("3")
        await settle(pilot)
        screen.query_one("#g-search", Input).value = ""
        screen.query_one("#g-type", Select).value = "place"
        await settle(pilot)
        assert nodes.row_count > 0 and {r.type for r in nodes.items} == {"place"}


async def test_traces_candidates_assessment_and_drill(make_app):
    async with opened(make_app, "4", TracesScreen) as (app, pilot, screen):
        traces = screen.query_one("#traces")
        assert traces.row_count == 13  # the demo's own agent session (7 traces), then the seeded retrievals (6)
        assert traces.items[0].id > traces.items[-1].id
        # the assessment trace of the first batch: adopted, rejected and used refs
        index = next(i for i, r in enumerate(traces.items) if r.kind == "search" and r.channel == "events")
        traces.move_cursor(row=index)
        await settle(pilot)
        text = str(screen.query_one("#trace-text", Static).render())
        assert "sufficient" in text and "rejected" in text and "event:99999" in text and "Use receipt" in text
        candidates = screen.query_one("#candidates", DataTable)
        states = [str(state) for state in candidates.get_column("used")]
        assert any("used" in s for s in states) and any("adopted" in s for s in states)
        # why was this event (not) recalled: filter by its ref
        ref = screen.candidates[0]["ref"]
        await pilot.press("f", *ref, "enter")
        await settle(pilot)
        assert traces.row_count >= 1
        assert all(r.kind in ("search", "use", "assess") for r in traces.items)
        # drill into a candidate of the search that returned it
        traces.move_cursor(row=next(i for i, r in enumerate(traces.items) if r.kind == "search"))
        await settle(pilot)
        await pilot.press("w", "enter")
        await settle(pilot)
        assert app.current_mode == "timeline"
        assert f"event:{app.screen.detail.card.event.id}" == ref


async def test_jobs_retry_one_and_all(make_app, wb_url):
    messages = []
    async with opened(make_app, "6", JobsScreen, messages) as (app, pilot, screen):
        jobs = screen.query_one("#jobs")
        assert {j.status for j in jobs.items} == {"failed", "pending"}
        failed = next(j for j in jobs.items if j.status == "failed")
        jobs.move_cursor(row=jobs.items.index(failed))
        await settle(pilot)
        assert "provider timeout" in str(screen.query_one("#job-text", Static).render())
        await pilot.press("r")
        await settle(pilot)
        retried = [m for m in messages if isinstance(m, JobsScreen.JobRetried)]
        assert retried and retried[-1].job_ids == [failed.id]
        assert {j.status for j in jobs.items} == {"pending"}
        # show every job, retry all failed (none left: a warning, nothing written)
        screen.query_one("#j-show", Select).value = "all"
        await settle(pilot)
        assert jobs.row_count == 50 and jobs.has_more
        await pilot.press("R")
        assert any("No failed jobs" in n.message for n in app._notifications)
    reopen(wb_url)
    from core.services.jobs import get_job

    job = get_job(failed.id)
    assert job.status == "pending" and job.attempts == 0


async def test_retry_all_asks_first(make_app):
    from workbench.widgets.confirm import ConfirmScreen

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        assert {j.status for j in app.screen.query_one("#jobs").items} == {"failed", "pending"}
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert {j.status for j in app.screen.query_one("#jobs").items} == {"pending"}


async def test_global_search_across_channels_and_open(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"passport", "enter")
        await settle(pilot)
        screen = app.screen
        assert screen.MODE == "search"
        channels = {r.channel for r in screen.results}
        assert {"events", "raw"} <= channels
        await pilot.press("slash", *" Ivy", "enter")
        await settle(pilot)
        assert "graph" in {r.channel for r in screen.results}
        first = screen.results[0]
        await pilot.press("enter")
        await settle(pilot)
        assert app.current_mode == {"event": "timeline", "node": "graph", "message": "blocks"}[first.kind]


async def test_table_cells_show_text_as_typed():
    """Cells are drawn by PagedTable's own one-line renderer, as plain text (never markup)."""
    from textual.app import App

    from workbench.testing import screen_text
    from workbench.widgets.table import PagedTable

    class One(App):
        def compose(self):
            table = PagedTable(id="t")
            table.add_columns("title", "n")
            yield table

    app = One()
    async with app.run_test(size=(60, 6)) as pilot:
        table = app.query_one(PagedTable)
        table.append_page(["a", "b"], [("[b]Atlas[/b] moved [/oops]", "1"), ("plain", "22")], False)
        await pilot.pause()
        text = screen_text(app)
        assert "[b]Atlas[/b] moved [/oops]" in text and "22" in text


async def test_a_filter_applies_once_typing_pauses(make_app):
    import asyncio

    async with opened(make_app, "4", TracesScreen) as (app, pilot, screen):
        traces = screen.query_one("#traces")
        everything = traces.row_count
        await pilot.press("f", *"zzz-no-such-trace")  # no Enter
        await pilot.pause()
        assert traces.row_count == everything  # not while still typing
        await asyncio.sleep(screen.TYPING_PAUSE + 0.2)
        await settle(pilot)
        assert traces.row_count == 0
        # a submitted field applies at once and cancels the pending wait
        screen.query_one("#t-filter", Input).value = ""
        await pilot.press("enter")
        await settle(pilot)
        assert traces.row_count == everything


async def test_timeline_forgets_and_restores_the_selected_event(make_app, wb_url):
    from workbench.widgets.confirm import ConfirmScreen

    async with opened(make_app, "2", TimelineScreen) as (app, pilot, screen):
        table = screen.query_one("#events")
        first = table.current
        assert screen.detail.card.event.id == first.id and first.status != "forgotten"
        await pilot.press("F")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")  # asked first: saying no changes nothing
        await settle(pilot)
        assert screen.detail.card.event.status == first.status
        await pilot.press("F")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert screen.detail.card.event.id == first.id and screen.detail.card.event.status == "forgotten"
        assert next(r for r in table.items if r.id == first.id).status == "forgotten"
        await pilot.press("F")  # restoring asks nothing: it only gives back
        await settle(pilot)
        assert screen.detail.card.event.status == first.status
    reopen(wb_url)
    from core.services.events import get_event

    assert get_event(first.id).event.status == first.status


async def test_a_new_filter_interrupts_the_old_filters_histogram(make_app, monkeypatch):
    """Day counts over a million events take seconds and reads run one at a time: a new filter
    drops the old filter's count, or its list would wait for it (here: for ever)."""
    import time

    from core.db import db
    from core.services import browse

    real = browse.event_day_counts

    def counts(namespace, flt=browse.EventFilter()):
        if flt.text == "passport":  # a count that only ends when interrupted
            db.execute_sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c")
        return real(namespace, flt)

    monkeypatch.setattr(browse, "event_day_counts", counts)
    async with opened(make_app, "2", TimelineScreen) as (app, pilot, screen):
        table = screen.query_one("#events")
        await pilot.press("f", *"passport", "enter")
        deadline = time.monotonic() + 10
        while not any(w.group == "timeline:histogram" and not w.is_finished for w in screen.workers):
            assert time.monotonic() < deadline, "the histogram never started"
            await pilot.pause(0.05)
        screen.query_one("#f-text", Input).value = "lisbon"
        await pilot.press("f", "enter")
        deadline = time.monotonic() + 10
        while not (table.row_count and all("lisbon" in (r.title + r.summary).lower() for r in table.items)):
            assert time.monotonic() < deadline, "the new filter's list waited behind the old histogram"
            await pilot.pause(0.05)


async def test_traces_show_why_a_candidate_was_not_recalled(make_app, wb_url):
    from core.db import db
    from core.services.context import auto_context

    reopen(wb_url)
    built = auto_context("demo", "What did Maya decide about the Atlas launch date?", max_events=1)
    lost = built.excluded[0]
    db.close()
    async with opened(make_app, "4", TracesScreen) as (app, pilot, screen):
        traces = screen.query_one("#traces")
        traces.move_cursor(row=next(i for i, r in enumerate(traces.items) if r.id == built.trace_id))
        await settle(pilot)
        text = str(screen.query_one("#trace-text", Static).render())
        assert "Why not recalled" in text
        candidates = screen.query_one("#candidates", DataTable)
        states = dict(zip(map(str, candidates.get_column("ref")), map(str, candidates.get_column("used"))))
        below = [ref for ref, state in states.items() if state.startswith("not recalled: ")]
        assert below and all(ref not in built.selected for ref in below)
        assert lost["ref"] in text or lost["ref"] in states


async def test_an_event_card_shows_the_cards_it_was_used_with_and_follows_them(make_app, wb_url):
    from core.db import db, write_transaction
    from core.models import Event
    from core.services.associations import reinforce

    reopen(wb_url)
    first, second = (e.id for e in Event.select().where(Event.status == "active").order_by(Event.id).limit(2))
    with write_transaction():
        reinforce(Event.get_by_id(first).namespace_id, {first: 1.0, second: 1.0})
    db.close()
    async with opened(make_app, "2", TimelineScreen) as (app, pilot, screen):
        screen.focus_item("event", first)
        await settle(pilot)
        text = str(screen.query_one("#event-text", Static).render())
        assert "Used together with" in text and f"#{second} " in text and "×1" in text
        links = screen.query_one("#event-links")
        index = next(i for i in range(links.option_count) if links.get_option_at_index(i).id.endswith(":used:"))
        links.highlighted = index
        links.action_select()
        await settle(pilot)
        assert screen.detail.card.event.id == second


async def test_a_block_whose_l3_equals_its_l4_says_so(make_app):
    async with opened(make_app, None, BlocksScreen) as (app, pilot, screen):
        rail = screen.query_one("#block-rail")
        tabs = screen.query_one("#block-levels", TabbedContent)
        seen = set()
        for index in range(rail.row_count):
            rail.move_cursor(row=index)
            await settle(pilot)
            views = screen.detail.views
            same = views.get(3) is not None and views.get(3) == views.get(4)
            label = str(tabs.get_tab("level-3").label)
            assert label == ("L3 = L4" if same else "L3")
            if same:
                assert "Nothing to fold here" in str(screen.query_one("#level-text-3", Static).content)
            seen.add(same)
        assert True in seen  # the demo holds chats with nothing to fold
