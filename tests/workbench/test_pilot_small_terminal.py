"""Every view at 80×24 and 160×48: side panes collapse and come back through each view's keys, tables
keep their short columns whole (status, why a record ended) with the long text taking the room left,
filter bars fit, lists keep rows, and a row line names what a narrow list leaves out."""

from __future__ import annotations

from contextlib import asynccontextmanager

from textual.widgets import DataTable

from workbench.testing import screen_text, settle
from workbench.views import VIEWS

SMALL = (80, 24)
LARGE = (160, 48)


@asynccontextmanager
async def running(make_app, size, key: str | None = None):
    """The workbench at ``size`` on the view ``key`` shows (None: the first), settled: (app, pilot, screen)."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        if key:
            await pilot.press(key)
        await settle(pilot)
        yield app, pilot, app.screen


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def shown(screen, selector: str) -> bool:
    """The widget and every container above it are displayed, and it has room on screen."""
    widget = screen.query_one(selector)
    return all(node.display for node in widget.ancestors_with_self if node is not screen.app) and bool(
        widget.region.area
    )


def column_spans(table: DataTable) -> list[tuple[str, int, int]]:
    """(label, first cell, end) of each column, from the table's left edge (scrolled to the start)."""
    spans, x = [], 0
    for column in table.ordered_columns:
        width = column.get_render_width(table)
        spans.append((str(column.label), x, x + width))
        x += width
    return spans


def whole_columns(table: DataTable) -> list[str]:
    room = table.scrollable_content_region.width
    return [label for label, _, end in column_spans(table) if end <= room]


def cut_columns(table: DataTable) -> list[str]:
    """Columns the table's right edge cuts through (only its flexible column may be)."""
    room = table.scrollable_content_region.width
    return [label for label, start, end in column_spans(table) if start < room < end]


async def test_every_view_gets_the_size_classes_and_follows_a_resize(make_app):
    async with running(make_app, SMALL) as (app, pilot, screen):
        for view in VIEWS:
            await press(pilot, view.key)
            assert {"-narrow", "-short"} <= app.screen.classes, view.id
        await pilot.resize_terminal(*LARGE)
        await settle(pilot)
        assert {"-roomy", "-tall"} <= app.screen.classes
        for view in VIEWS:  # views not shown during the resize catch up when shown again
            await press(pilot, view.key)
            assert {"-roomy", "-tall"} <= app.screen.classes and "-narrow" not in app.screen.classes, view.id


async def test_blocks_threads_pane_collapses_and_t_brings_it_back(make_app):
    async with running(make_app, SMALL) as (app, pilot, screen):
        rail = screen.query_one("#block-rail", DataTable)
        assert not shown(screen, "#threads-pane") and rail.region.width >= SMALL[0] - 1
        assert whole_columns(rail)[:5] == ["#", "status", "level", "turns", "thread"]
        assert cut_columns(rail) in ([], ["title"])
        assert "% of L5" in str(screen.query_one("#block-meta").render())  # the columns left out, whole
        await press(pilot, "t")
        assert app.focused.id == "threads" and shown(screen, "#threads-pane")
        await press(pilot, "j", "enter")
        assert app.focused is rail and not shown(screen, "#threads-pane")
        assert {r.thread for r in rail.items} == {screen.thread_filter}
        await press(pilot, "t", "escape")
        assert app.focused is rail and not shown(screen, "#threads-pane")


async def test_timeline_list_then_record_then_back(make_app):
    async with running(make_app, SMALL, "2") as (app, pilot, screen):
        events = screen.query_one("#events", DataTable)
        assert shown(screen, "#events") and not shown(screen, "#event-side")
        assert whole_columns(events)[:3] == ["when", "~", "status"] and cut_columns(events) in ([], ["title"])
        row = events.items[0]
        line = str(screen.query_one("#event-line").render())
        assert line.startswith(f"#{row.id} · {row.event_type} · {row.status} · weight")
        await press(pilot, "j")
        assert str(screen.query_one("#event-line").render()).startswith(f"#{events.items[1].id} ")
        # the filters wrap onto two rows and every one of them keeps room
        for field in screen.query("#timeline-filters > *"):
            assert field.region.right <= SMALL[0] and field.region.width >= 10, field.id
        await press(pilot, "enter")
        assert shown(screen, "#event-side") and not shown(screen, "#events")
        assert screen.query_one("#event-side").region.width >= SMALL[0] - 1
        assert "Go to (o, enter)" in screen_text(app)
        await press(pilot, "escape")
        assert app.focused is events and shown(screen, "#events") and not shown(screen, "#event-side")
        await press(pilot, "o")
        assert shown(screen, "#event-side")
        await press(pilot, "escape")
        assert not shown(screen, "#event-side")


async def test_timeline_status_is_whole_on_a_wide_terminal(make_app):
    async with running(make_app, LARGE, "2") as (app, pilot, screen):
        events = screen.query_one("#events", DataTable)
        assert shown(screen, "#event-side") and not shown(screen, "#event-line")
        assert "status" in whole_columns(events) and cut_columns(events) in ([], ["title"])
        status = next(column for column in events.ordered_columns if str(column.label) == "status")
        assert status.get_render_width(events) >= len("superseded") + 2


async def test_graph_node_opens_in_place_of_the_list_and_says_why_a_fact_ended(make_app):
    async with running(make_app, SMALL, "3") as (app, pilot, screen):
        assert shown(screen, "#nodes") and not shown(screen, "#node-side")
        await press(pilot, "f", *"maya", "enter")
        assert [r.name for r in screen.query_one("#nodes").items] == ["Maya Brennan"]
        await press(pilot, "enter")
        facts = screen.query_one("#facts-table", DataTable)
        assert app.focused is facts and shown(screen, "#node-side") and not shown(screen, "#nodes")
        assert whole_columns(facts)[:2] == ["key", "value"] and cut_columns(facts) in ([], ["status"])
        await press(pilot, "G")  # the last fact is a past one
        line = str(screen.query_one("#row-line").render())
        assert " · past · " in line and ("said ended in event" in line or "replaced by" in line), line
        await press(pilot, "e")
        assert whole_columns(screen.query_one("#edges-table", DataTable))[:3] == ["dir", "relation", "other node"]
        await press(pilot, "escape")
        assert shown(screen, "#nodes") and not shown(screen, "#node-side")


async def test_graph_why_it_ended_is_in_view_on_a_wide_terminal(make_app):
    async with running(make_app, LARGE, "3") as (app, pilot, screen):
        await press(pilot, "f", *"maya", "enter", "enter")
        facts = screen.query_one("#facts-table", DataTable)
        assert whole_columns(facts)[:3] == ["key", "value", "status"] or cut_columns(facts) == ["status"]
        status = next(span for span in column_spans(facts) if span[0] == "status")
        assert status[2] - status[1] >= 50  # "past · said ended in event 82 “Noted: you live in…": no → needed
        assert shown(screen, "#nodes") and shown(screen, "#node-side")


async def test_traces_candidates_take_the_place_of_the_record(make_app):
    async with running(make_app, SMALL, "4") as (app, pilot, screen):
        traces = screen.query_one("#traces", DataTable)
        assert whole_columns(traces)[:4] == ["#", "kind", "channel", "verdict"]
        assert shown(screen, "#trace-info") and not shown(screen, "#candidate-side")
        await press(pilot, "enter")
        assert app.focused.id == "candidates" and shown(screen, "#candidate-side")
        assert not shown(screen, "#trace-info")
        await press(pilot, "escape")
        assert app.focused is traces and shown(screen, "#trace-info") and not shown(screen, "#candidate-side")
        await press(pilot, "w")
        assert shown(screen, "#candidate-side")
        await press(pilot, "escape")


async def test_imports_batches_give_way_to_the_items(make_app, monkeypatch):
    import core.services.import_preview as service
    from tests.workbench.test_pilot_imports import FACTS, Decider

    provider = Decider()
    monkeypatch.setattr(service, "get_provider", lambda name=None: provider)
    async with running(make_app, SMALL, "5") as (app, pilot, screen):
        assert app.focused.id == "batches" and shown(screen, "#batch-side")
        screen.query_one("#i-format").value = "text"
        await settle(pilot)
        screen.start_preview(text=FACTS)  # pasted
        await settle(pilot)
        await press(pilot, "enter")
        items = screen.query_one("#items", DataTable)
        assert app.focused is items and not shown(screen, "#batch-side")
        assert items.size.height >= 5  # a header and four items, with the detail under them
        assert cut_columns(items) in ([], ["candidate"]) and "target" in whole_columns(items)
        await press(pilot, "enter")
        assert app.focused.id == "item-detail"
        await press(pilot, "escape", "left")
        assert app.focused.id == "batches" and shown(screen, "#batch-side")
        await press(pilot, "enter")
        assert app.focused is items and not shown(screen, "#batch-side")


async def test_jobs_review_and_search_keep_list_and_detail_in_view(make_app):
    async with running(make_app, SMALL, "6") as (app, pilot, screen):
        jobs = screen.query_one("#jobs", DataTable)
        assert jobs.size.height >= 6 and shown(screen, "#job-detail")
        assert whole_columns(jobs)[:2] == ["#", "status"] and cut_columns(jobs) in ([], ["error"])
        await press(pilot, "enter")
        assert app.focused.id == "job-detail"
        await press(pilot, "escape")
        assert app.focused is jobs
        await press(pilot, "7")
        review = app.screen.query_one("#review", DataTable)
        assert review.size.height >= 6 and shown(app.screen, "#review-detail")
        assert whole_columns(review)[:2] == ["id", "status"] and cut_columns(review) in ([], ["title"])
        for field in app.screen.query(".filter-bar > *"):
            assert field.region.right <= SMALL[0], field.id
        await press(pilot, "slash", *"passport", "enter")
        results, preview = app.screen.query_one("#results"), app.screen.query_one("#result-preview")
        assert results.row_count and shown(app.screen, "#results") and shown(app.screen, "#result-preview")
        assert preview.region.y >= results.region.bottom and results.region.width >= SMALL[0] - 1


async def test_help_fits_a_small_terminal(make_app):
    async with running(make_app, SMALL) as (app, pilot, screen):
        await press(pilot, "question_mark")
        dialog = app.screen.query_one("#help-dialog")
        assert dialog.region.x >= 0 and dialog.region.right <= SMALL[0]
        await press(pilot, "escape")
