"""The Review view from the keyboard: the queue, filters, each decision with its prompt, the card and
its audit trail, and links to the evidence and the Imports view."""

from __future__ import annotations

from contextlib import asynccontextmanager

from textual.widgets import Input, Select, Static

from workbench.screens.review import ReviewScreen
from workbench.testing import settle
from workbench.widgets.prompt import PromptScreen
from workbench.widgets.table import PagedTable

SIZE = (120, 36)


@asynccontextmanager
async def review(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("7")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        yield app, pilot, app.screen


def ids(screen) -> list[str]:
    return [i.id for i in screen.query_one("#review", PagedTable).items]


def card(screen) -> str:
    return str(screen.query_one("#review-text", Static).render())


async def answer(pilot, app, text: str) -> None:
    await settle(pilot)
    assert isinstance(app.screen, PromptScreen)
    app.screen.query_one("#prompt-input", Input).value = text
    await pilot.press("enter")
    await settle(pilot)


def record_status(rid: int) -> str:
    from core.models import MemoryRecord

    return MemoryRecord.get_by_id(rid).status


async def test_the_queue_lists_waiting_records_and_shows_each_card_with_its_trail(make_app):
    async with review(make_app) as (app, pilot, screen):
        assert ids(screen) == ["record:3", "record:2", "record:1"]
        assert "badge PIN" in card(screen) and "capture: - → quarantined by user" in card(screen)
        await pilot.press("j")
        await settle(pilot)
        assert "wiki-sync" in card(screen) and "key atlas.checklist" in card(screen)
        await pilot.press("G")
        await settle(pilot)
        assert "planner-bot" in card(screen)
        await pilot.press("g")
        await pilot.press("n")
        await settle(pilot)
        assert screen.current.id == "record:2"
        await pilot.press("N")
        assert screen.current.id == "record:3"


async def test_filters_by_kind_and_source(make_app):
    async with review(make_app) as (app, pilot, screen):
        screen.query_one("#r-source", Select).value = "agent"
        await settle(pilot)
        assert ids(screen) == ["record:1"]
        screen.query_one("#r-source", Select).value = "all"
        screen.query_one("#r-kind", Select).value = "import_item"
        await settle(pilot)
        assert ids(screen) == [] and "Nothing is waiting" in card(screen)


async def test_approve_asks_for_evidence_then_the_record_leaves_the_queue(make_app):
    async with review(make_app) as (app, pilot, screen):
        await pilot.press("G")  # record 1, the agent's
        await settle(pilot)
        await pilot.press("a")
        await answer(pilot, app, "message:1")
        assert record_status(1) == "promoted" and "record:1" not in ids(screen)
        screen.query_one("#r-show", Select).value = "promoted"
        await settle(pilot)
        assert ids(screen) == ["record:1"] and "promote: verified → promoted" in card(screen)
        await pilot.press("p")  # pin its event
        await settle(pilot)
        from core.models import Event, MemoryRecord

        assert Event.get_by_id(MemoryRecord.get_by_id(1).event_id).pinned
        await pilot.press("v")  # revoke, with a reason
        await answer(pilot, app, "it was Tomás who said it")
        assert record_status(1) == "revoked" and ids(screen) == []
        screen.query_one("#r-show", Select).value = "closed"
        await settle(pilot)
        await pilot.press("u")  # restore
        await settle(pilot)
        assert record_status(1) == "promoted"


async def test_reject_needs_a_reason_and_escape_changes_nothing(make_app):
    async with review(make_app) as (app, pilot, screen):
        await pilot.press("x")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert record_status(3) == "quarantined" and isinstance(app.screen, ReviewScreen)
        await pilot.press("x")
        await answer(pilot, app, "")  # an empty reason is refused: the prompt stays
        assert isinstance(app.screen, PromptScreen)
        await answer(pilot, app, "not a memory to keep")
        assert record_status(3) == "rejected" and "record:3" not in ids(screen)


async def test_approving_without_evidence_says_why(make_app):
    async with review(make_app) as (app, pilot, screen):
        await pilot.press("a")
        await answer(pilot, app, "message:999999")
        assert record_status(3) == "quarantined"
        assert any("no message 999999" in n.message for n in app._notifications)


async def test_evidence_opens_the_records_event_in_the_timeline(make_app):
    from workbench.screens.timeline import TimelineScreen

    async with review(make_app) as (app, pilot, screen):
        await pilot.press("G", "a")
        await answer(pilot, app, "message:1")
        screen.query_one("#r-show", Select).value = "promoted"
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)


async def test_forget_asks_why_and_hides_the_records_event(make_app):
    from core.models import Event, MemoryRecord

    async with review(make_app) as (app, pilot, screen):
        await pilot.press("G", "a")
        await answer(pilot, app, "message:1")
        screen.query_one("#r-show", Select).value = "promoted"
        await settle(pilot)
        await pilot.press("f")
        await answer(pilot, app, "not needed any more")
        assert Event.get_by_id(MemoryRecord.get_by_id(1).event_id).status == "forgotten"


async def test_a_note_in_the_queue_is_approved_from_the_keyboard(make_app, wb_url):
    from core.api import open_store
    from core.services.notes import read_note, write_note

    open_store(wb_url, recover=False)
    note = write_note(
        "demo",
        title="Atlas deploy shortcut",
        summary="Skip the canary on Fridays.",
        keywords=["deploy", "canary"],
        content="…",
        source="agent",
    )
    async with review(make_app) as (app, pilot, screen):
        screen.query_one("#r-kind", Select).value = "note"
        await settle(pilot)
        assert ids(screen) == [f"note:{note.id}"] and "Skip the canary" in card(screen)
        await pilot.press("a")
        await settle(pilot)
        assert read_note(note.id).status == "active" and ids(screen) == []
