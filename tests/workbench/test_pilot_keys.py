"""The keyboard paths of every list and table: j/k move, g/G jump to the first and last row,
enter goes deeper, escape comes back; and a view opened by another view's link (its first
visit) lists all its rows."""

from __future__ import annotations

import pytest
from textual.widgets import Input, OptionList, TabbedContent

from tests.workbench.test_pilot_views import SIZE, opened
from workbench.config import Config
from workbench.messages import OpenItem
from workbench.screens.blocks import BlocksScreen
from workbench.screens.graph import GraphScreen
from workbench.screens.imports import DetailPane, ImportsScreen
from workbench.screens.jobs import JobsScreen
from workbench.screens.review import ReviewScreen
from workbench.screens.timeline import TimelineScreen
from workbench.screens.traces import TracesScreen
from workbench.testing import DEMO_PASTE, settle
from workbench.widgets.lists import TextPane


def _cursor(widget) -> tuple[int | None, int]:
    """(position, rows) of a table's cursor or a list's highlight."""
    if isinstance(widget, OptionList):
        return widget.highlighted, widget.option_count
    return widget.cursor_row, widget.row_count


async def moves(pilot, widget) -> None:
    """On the focused ``widget``: g, j, j, k, G, g move its cursor as they should."""
    assert pilot.app.focused is widget
    rows = _cursor(widget)[1]
    assert rows >= 2, f"{widget} needs two rows to show moving"
    await pilot.press("g")
    assert _cursor(widget)[0] == 0
    await pilot.press("j")
    assert _cursor(widget)[0] == 1
    await pilot.press("j")
    assert _cursor(widget)[0] == min(2, rows - 1)
    await pilot.press("k")
    assert _cursor(widget)[0] == min(2, rows - 1) - 1
    await pilot.press("G")
    assert _cursor(widget)[0] == rows - 1  # the last row loaded (a paged list then reads more)
    await pilot.press("g")
    assert _cursor(widget)[0] == 0
    await settle(pilot)


# ---------------------------------------------------------------------- first visit through a link


@pytest.mark.parametrize("prebuild", [True, False], ids=["built-ahead", "built-on-visit"])
async def test_graph_opened_first_through_the_timelines_go_to_lists_every_node(make_app, prebuild):
    async with opened(lambda: make_app(prebuild=prebuild), "2", TimelineScreen) as (app, pilot, screen):
        events = screen.query_one("#events")
        links = screen.query_one("#event-links", OptionList)
        for _ in range(events.row_count):  # the first event that links to graph nodes
            ids = [links.get_option_at_index(i).id or "" for i in range(links.option_count)]
            if any(i.startswith("node:") for i in ids):
                break
            await pilot.press("j")
            await settle(pilot)
        # the node link furthest down: the old list started at the linked node
        index = max(i for i, option in enumerate(ids) if option.startswith("node:"))
        node_id = int(ids[index].split(":")[1])
        await pilot.press("o")
        for _ in range(index):
            await pilot.press("j")
        await pilot.press("enter")
        await settle(pilot)

        assert app.current_mode == "graph"
        graph = app.screen
        nodes = graph.query_one("#nodes")
        listed = [row.id for row in nodes.items]
        assert nodes.current.id == node_id and graph.view.id == node_id
        assert listed.index(node_id) > 0  # nodes before it are listed too
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert [row.id for row in nodes.items] == listed  # nothing more to read on a reload


async def test_timeline_opened_first_from_a_graph_fact_lists_from_the_start(make_app):
    async with opened(make_app, "3", GraphScreen) as (app, pilot, screen):
        await pilot.press("f", *"maya", "enter")
        await settle(pilot)
        await pilot.press("enter")  # into the node's facts
        facts = screen.query_one("#facts-table")
        assert app.focused is facts
        fact = next(f for f in screen._facts if f.source_event_ids)
        facts.move_cursor(row=screen._facts.index(fact))
        await pilot.press("enter")
        await settle(pilot)

        assert app.current_mode == "timeline"
        timeline = app.screen
        events = timeline.query_one("#events")
        event_id = fact.source_event_ids[0]
        assert timeline.detail.card.event.id == event_id and events.current.id == event_id
        listed = [row.id for row in events.items]
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert [row.id for row in events.items][: len(listed)] == listed  # read from its first event


async def test_a_block_link_lists_its_thread_from_the_start(make_app):
    async with opened(make_app, None, BlocksScreen) as (app, pilot, screen):
        rail = screen.query_one("#block-rail")
        first_of_thread: dict[str, int] = {}
        for row in sorted(rail.items, key=lambda r: r.sequence):
            first_of_thread.setdefault(row.thread, row.id)
        block = next(r for r in rail.items if first_of_thread[r.thread] != r.id)
        app.post_message(OpenItem("block", block.id, 5))
        await settle(pilot)
        assert rail.current.id == block.id and rail.cursor_row > 0
        assert rail.items[0].id == first_of_thread[block.thread]
        assert screen.query_one("#block-levels", TabbedContent).active == "level-5"


async def test_review_opens_an_import_item_in_its_batch(make_app, wb_url):
    from core.api import open_store
    from core.services.import_preview import preview_import

    open_store(wb_url, recover=False)
    batch = preview_import("demo", DEMO_PASTE, format="text").batch
    async with opened(make_app, "7", ReviewScreen) as (app, pilot, screen):
        table = screen.query_one("#review")
        table.move_cursor(row=next(i for i, item in enumerate(table.items) if item.kind == "import_item"))
        await pilot.press("enter")
        await settle(pilot)
        assert app.current_mode == "imports"
        imports = app.screen
        assert imports.query_one("#batches").current.id == batch.id
        assert app.focused is imports.query_one("#items")


# ---------------------------------------------------------------------- each view's keys


async def test_blocks_keys(make_app):
    async with opened(make_app, None, BlocksScreen) as (app, pilot, screen):
        rail = screen.query_one("#block-rail")
        await moves(pilot, rail)
        await pilot.press("enter")
        tabs = screen.query_one("#block-levels", TabbedContent)
        assert isinstance(app.focused, TextPane) and app.focused in tabs.active_pane.query(TextPane)
        await pilot.press("escape")
        assert app.focused is rail
        # the thread list: enter shows the thread's blocks and goes to them
        await pilot.press("t")
        threads = screen.query_one("#threads", OptionList)
        await moves(pilot, threads)
        await pilot.press("j", "enter")
        await settle(pilot)
        thread = threads.get_option_at_index(1).id[2:]
        assert screen.thread_filter == thread and {r.thread for r in rail.items} == {thread}
        assert app.focused is rail
        await pilot.press("t", "escape")
        assert app.focused is rail


async def test_timeline_keys(make_app):
    async with opened(make_app, "2", TimelineScreen) as (app, pilot, screen):
        events = screen.query_one("#events")
        await moves(pilot, events)
        assert events.row_count > 50  # G near the end read the next page
        links = screen.query_one("#event-links", OptionList)
        assert links.option_count >= 2
        await pilot.press("enter")  # into the event's Go-to list, its first link highlighted
        assert app.focused is links and links.highlighted == 0
        await moves(pilot, links)
        await pilot.press("escape")
        assert app.focused is events
        # a filter field takes the letters the list moves with
        await pilot.press("f", *"jkgG")
        assert screen.query_one("#f-text", Input).value == "jkgG"
        assert events.cursor_row == 0


async def test_graph_keys(make_app):
    async with opened(make_app, "3", GraphScreen) as (app, pilot, screen):
        nodes = screen.query_one("#nodes")
        await moves(pilot, nodes)
        await pilot.press("f", *"maya", "enter")
        await settle(pilot)
        assert screen.query_one("#g-search", Input).value == "maya"
        await pilot.press("enter")  # into the node's open tab
        facts = screen.query_one("#facts-table")
        await moves(pilot, facts)
        await pilot.press("e")
        edges = screen.query_one("#edges-table")
        await moves(pilot, edges)
        await pilot.press("escape")
        assert app.focused is nodes


async def test_traces_keys(make_app):
    async with opened(make_app, "4", TracesScreen) as (app, pilot, screen):
        traces = screen.query_one("#traces")
        await moves(pilot, traces)
        index = next(i for i, row in enumerate(traces.items) if row.candidate_count >= 2)
        traces.move_cursor(row=index)
        await settle(pilot)
        await pilot.press("enter")  # into the trace's candidates
        candidates = screen.query_one("#candidates")
        await moves(pilot, candidates)
        await pilot.press("escape")
        assert app.focused is traces


async def test_jobs_keys(make_app):
    async with opened(make_app, "6", JobsScreen) as (app, pilot, screen):
        jobs = screen.query_one("#jobs")
        await moves(pilot, jobs)
        await pilot.press("enter")
        assert app.focused is screen.query_one("#job-detail", TextPane)
        await pilot.press("escape")
        assert app.focused is jobs


async def test_review_keys(make_app):
    async with opened(make_app, "7", ReviewScreen) as (app, pilot, screen):
        review = screen.query_one("#review")
        await moves(pilot, review)
        assert screen.current.kind == "record"
        await pilot.press("enter")  # a record without evidence: into its card
        assert app.focused is screen.query_one("#review-detail", TextPane)
        await pilot.press("escape")
        assert app.focused is review


async def test_search_keys(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"passport", "enter")
        await settle(pilot)
        screen = app.screen
        results = screen.query_one("#results")
        await moves(pilot, results)
        await pilot.press("f", *"jk")
        assert screen.query_one("#s-query", Input).value.endswith("jk") and results.cursor_row == 0
        await pilot.press("escape")
        assert app.focused is results


async def test_imports_keys(make_app):
    async with opened(make_app, "5", ImportsScreen) as (app, pilot, screen):
        screen.query_one("#i-format").value = "text"
        await settle(pilot)
        screen.start_preview(text=DEMO_PASTE)
        await settle(pilot)
        batches, items = screen.query_one("#batches"), screen.query_one("#items")
        batches.focus()
        await pilot.press("enter")  # into the batch's items
        await moves(pilot, items)
        await pilot.press("enter")  # into the item's detail
        assert isinstance(app.focused, DetailPane)
        await pilot.press("escape")
        assert app.focused is items
        await pilot.press("escape")
        assert app.focused is batches


async def test_help_keys(make_app):
    from workbench.screens.help import HelpScreen

    async with opened(make_app, "2", TimelineScreen) as (app, pilot, screen):
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        ids = {row[2]: row[3] for row in app.screen.rows}
        assert {ids[i] for i in ("table.down", "table.up", "table.first", "table.last", "table.open")} == {"lists"}
        await moves(pilot, app.screen.query_one("#help-table"))
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen


async def test_the_keymap_remaps_the_list_keys_everywhere(make_app):
    app = make_app(config=Config(theme="strata-dark", path=None, keymap={"table.down": "J"}))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        events, links = screen.query_one("#events"), screen.query_one("#event-links", OptionList)
        await pilot.press("J")
        assert events.cursor_row == 1
        await pilot.press("j")
        assert events.cursor_row == 1
        await settle(pilot)
        await pilot.press("o", "J")
        assert links.highlighted == 1


def test_read_through_stops_at_the_item_the_end_or_the_limit():
    from workbench.widgets.table import read_through

    def read(cursor):  # pages of 3 over 0..9
        start = 0 if cursor is None else cursor
        rows = list(range(start, min(start + 3, 10)))
        return rows, (rows[-1] + 1 if rows[-1] < 9 else None)

    assert read_through(read, lambda row: row == 4) == ([0, 1, 2, 3, 4, 5], 6, True)
    assert read_through(read, lambda row: row == 42) == (list(range(10)), None, False)
    assert read_through(read, lambda row: row == 8, limit=5) == ([0, 1, 2, 3, 4, 5], 6, False)
