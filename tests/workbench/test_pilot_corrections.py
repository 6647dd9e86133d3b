"""Correcting memory from the timeline by keyboard: supersede with a new statement (s), mark a
duplicate (m), edit participants (p), forget (F), and undo the last correction (u); each audited."""

from __future__ import annotations

from textual.widgets import Input, Static

from contextlib import asynccontextmanager

from tests.workbench.test_pilot_views import SIZE, reopen
from workbench.config import Config
from workbench.screens.help import HelpScreen
from workbench.screens.timeline import TimelineScreen
from workbench.testing import settle
from workbench.widgets.confirm import ConfirmScreen
from workbench.widgets.prompt import PromptScreen


@asynccontextmanager
async def opened(make_app, key: str, screen_type):
    """The workbench run headless (notifications kept) on the view ``key`` opens: (app, pilot, screen)."""
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press(key)
        await settle(pilot)
        assert isinstance(app.screen, screen_type)
        yield app, pilot, app.screen


def _active_titled(url: str, start: str) -> int:
    from core.db import db
    from core.models import Event

    reopen(url)
    found = Event.get(Event.title.startswith(start) & (Event.status == "active")).id
    db.close()
    return found


def _state(url: str, *event_ids: int) -> dict:
    """Each event's status, successor and participants, and the audit trail's (action, actor)."""
    from core.db import db
    from core.models import AuditEntry, Event

    reopen(url)
    cards = {
        i: (e.status, e.superseded_by, tuple(e.participants or ())) for i in event_ids for e in [Event.get_by_id(i)]
    }
    trail = [
        (a.action, a.actor) for a in AuditEntry.select().where(AuditEntry.subject == "event").order_by(AuditEntry.id)
    ]
    db.close()
    return {"cards": cards, "audit": trail}


async def _at(pilot, screen, event_id: int) -> None:
    screen.focus_item("event", event_id)
    await settle(pilot)
    assert screen.detail.card.event.id == event_id


async def _answer(pilot, text: str) -> None:
    """Type ``text`` into the open prompt (replacing what is there) and press enter."""
    assert isinstance(pilot.app.screen, PromptScreen)
    pilot.app.screen.query_one("#prompt-input", Input).value = ""
    await pilot.press(*text, "enter")
    await settle(pilot)


async def _undo(pilot, *, confirm: bool = True) -> None:
    await pilot.press("u")
    await settle(pilot)
    assert isinstance(pilot.app.screen, ConfirmScreen)
    await pilot.press("y" if confirm else "n")
    await settle(pilot)


async def test_s_supersedes_the_event_with_a_typed_statement_and_u_takes_it_back(make_app, wb_url, monkeypatch):
    monkeypatch.setenv("STRATA_ACTOR", "reviewer")
    old = _active_titled(wb_url, "Maya lives in Utrecht")
    async with opened(make_app, "2", TimelineScreen) as (app, pilot, screen):
        await _at(pilot, screen, old)
        await pilot.press("s")
        await settle(pilot)
        prompt = app.screen
        assert isinstance(prompt, PromptScreen) and "Utrecht" in prompt.query_one("#prompt-input", Input).value
        await pilot.press("escape")  # leaves everything as it is
        await settle(pilot)
        assert app.screen is screen and screen.detail.card.event.status == "active"

        await pilot.press("s")
        await settle(pilot)
        await _answer(pilot, "Maya lives in Amsterdam now.")
        new = screen.detail.card.event
        assert new.id != old and new.summary == "Maya lives in Amsterdam now." and new.status == "active"
        assert [e.id for e in screen.detail.card.links["supersedes"]][0] == old
        assert "Amsterdam now" in str(screen.query_one("#event-text", Static).render())
        assert any(r.id == new.id for r in screen.query_one("#events").items)

        await _undo(pilot, confirm=False)  # asked first: no changes nothing
        assert screen.detail.card.event.id == new.id and screen.detail.card.event.status == "active"
        await _undo(pilot)
        assert screen.detail.card.event.id == old and screen.detail.card.event.status == "active"
    state = _state(wb_url, old, new.id)
    assert state["cards"][old][:2] == ("active", None) and state["cards"][new.id][0] == "revoked"
    assert state["audit"] == [("supersede", "reviewer"), ("undo", "reviewer")]


async def test_m_marks_the_event_a_duplicate_of_the_one_named_and_u_gives_it_back(make_app, wb_url):
    dup = _active_titled(wb_url, "Updated: the Atlas launch is now")
    kept = _active_titled(wb_url, "Update: we moved the Atlas launch")
    async with opened(make_app, "2", TimelineScreen) as (app, pilot, screen):
        await _at(pilot, screen, dup)
        await pilot.press("m")
        await settle(pilot)
        await _answer(pilot, "Atlas")  # not an id: said so, nothing changed
        assert any("not an event id" in n.message for n in app._notifications)
        assert screen.detail.card.event.status == "active"

        await pilot.press("m")
        await settle(pilot)
        await _answer(pilot, f"#{kept}")
        card = screen.detail.card
        assert card.event.id == dup and card.event.status == "superseded" and card.superseded_by == kept
        assert [e.id for e in card.links["same_event"]] == [kept]
        assert next(r for r in screen.query_one("#events").items if r.id == dup).status == "superseded"

        await pilot.press("m")  # a superseded event is not marked again
        await settle(pilot)
        assert app.screen is screen

        await _undo(pilot)
        assert screen.detail.card.event.status == "active" and "same_event" not in screen.detail.card.links
    assert [a for a, _ in _state(wb_url)["audit"]] == ["duplicate", "undo"]


async def test_p_replaces_the_participants_and_u_puts_them_back(make_app, wb_url):
    card = _active_titled(wb_url, "Update: we moved the Atlas launch")
    before = _state(wb_url, card)["cards"][card][2]
    async with opened(make_app, "2", TimelineScreen) as (app, pilot, screen):
        await _at(pilot, screen, card)
        await pilot.press("p")
        await settle(pilot)
        assert app.screen.query_one("#prompt-input", Input).value == ", ".join(before)
        await _answer(pilot, "Maya, Priya Raman")
        assert screen.detail.card.event.participants == ("Maya", "Priya Raman")
        assert "Maya, Priya Raman" in str(screen.query_one("#event-text", Static).render())
        row = next(r for r in screen.query_one("#events").items if r.id == card)
        assert row.participants == ("Maya", "Priya Raman")

        await pilot.press("p")
        await settle(pilot)
        await _answer(pilot, "")  # empty: nobody
        assert screen.detail.card.event.participants == ()

        await _undo(pilot)
        assert screen.detail.card.event.participants == ("Maya", "Priya Raman")
        await _undo(pilot)
        assert screen.detail.card.event.participants == before
    assert [a for a, _ in _state(wb_url)["audit"]] == ["participants", "participants", "undo", "undo"]


async def test_a_forget_is_audited_and_u_restores_it_and_says_when_nothing_is_left(make_app, wb_url):
    card = _active_titled(wb_url, "Update: we moved the Atlas launch")
    async with opened(make_app, "2", TimelineScreen) as (app, pilot, screen):
        await pilot.press("u")
        await settle(pilot)
        assert app.screen is screen and any("No correction" in n.message for n in app._notifications)
        await _at(pilot, screen, card)
        await pilot.press("F")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert screen.detail.card.event.status == "forgotten"
        await _undo(pilot)
        assert screen.detail.card.event.status == "active"
    assert [a for a, _ in _state(wb_url)["audit"]] == ["forget", "undo"]


async def test_an_undo_refused_says_why_and_changes_nothing(make_app, wb_url):
    from core.db import db
    from core.models import Event

    card = _active_titled(wb_url, "Update: we moved the Atlas launch")
    async with opened(make_app, "2", TimelineScreen) as (app, pilot, screen):
        await _at(pilot, screen, card)
        await pilot.press("s")
        await settle(pilot)
        await _answer(pilot, "The Atlas launch is on March 24.")
        new = screen.detail.card.event.id
        reopen(wb_url)
        Event.update(status="forgotten").where(Event.id == new).execute()  # moved on behind the view's back
        db.close()
        await _undo(pilot)
        assert any("Nothing was changed" == n.title and "forgotten" in n.message for n in app._notifications)
    assert _state(wb_url, card)["cards"][card][0] == "superseded"


async def test_the_correction_keys_have_ids_in_help_and_follow_the_keymap(make_app, wb_url):
    card = _active_titled(wb_url, "Update: we moved the Atlas launch")
    keymap = {"timeline.supersede": "S", "timeline.undo": "ctrl+z"}
    app = make_app(config=Config(theme="strata-dark", path=None, keymap=keymap))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        await _at(pilot, screen, card)
        await pilot.press("S")
        await settle(pilot)
        await _answer(pilot, "The Atlas launch is on March 24.")
        assert screen.detail.card.event.id != card
        await pilot.press("ctrl+z")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert screen.detail.card.event.id == card and screen.detail.card.event.status == "active"
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        keys = {row[2]: row[0] for row in app.screen.rows}
        assert keys["timeline.supersede"] == "S" and keys["timeline.undo"] == "ctrl+z"
        assert {"timeline.duplicate", "timeline.participants", "timeline.forget"} <= set(keys)
