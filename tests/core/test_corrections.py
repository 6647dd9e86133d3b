"""A person's corrections of event cards (supersede with a new statement, mark a duplicate, edit the
participants): each audited, each undone exactly by its audit id, an undo refused once what it would
revert has changed."""

from __future__ import annotations

import pytest

from core.api import open_store
from core.db import db
from core.errors import InvalidInputError, NotFoundError
from core.models import AuditEntry, Event, EventLink, EventParticipant, EventSource, GraphFact, GraphSource
from core.services import corrections, governance
from core.services.events import get_event, list_events
from core.services.governance import audit_trail
from core.services.search import search_events
from core.services.verify import verify
from core.weights import SUPERSEDED_CAP
from tests.stores import copy_of


@pytest.fixture
def demo(demo_template, tmp_path):
    open_store(copy_of(demo_template, tmp_path / "demo.db"), recover=False)
    yield "demo"
    db.close()


def _card(title_start: str) -> Event:
    return Event.get(Event.title.startswith(title_start))


def _echoes(event: Event) -> list[int]:
    return sorted(
        link.event_id
        for link in EventLink.select().where((EventLink.target == event.id) & (EventLink.kind == "same_event"))
    )


def _image(event_id: int) -> tuple:
    e = Event.get_by_id(event_id)
    return e.status, e.superseded_by, e.forced_cap, tuple(e.participants or ()), e.pinned


def _lives_in(value: str) -> GraphFact:
    return GraphFact.get((GraphFact.key == "lives_in") & (GraphFact.value == value))


def test_supersede_writes_a_review_card_that_ends_the_card_its_echoes_and_what_only_they_stated(demo):
    home = _card("Maya lives in Utrecht")
    echoes = _echoes(home)
    assert echoes and _lives_in("Utrecht").status == "active"
    sources = [s.message_id for s in EventSource.select().where(EventSource.event == home.id)]

    done = corrections.supersede(
        home.id, "Maya lives in Amsterdam with Tomás and Ivy.", actor="carol", reason="they moved"
    )

    new = Event.get_by_id(done.other_id)
    assert (done.action, done.event_id, done.status) == ("supersede", home.id, "superseded")
    assert new.origin == corrections.REVIEW_ORIGIN and new.status == "active"
    assert new.summary == "Maya lives in Amsterdam with Tomás and Ivy." and new.block_id == home.block_id
    assert [s.message_id for s in EventSource.select().where(EventSource.event == new.id)] == sources
    assert list(new.participants) == list(home.participants)
    for ended in [home.id, *echoes]:
        assert _image(ended)[:3] == ("superseded", new.id, SUPERSEDED_CAP)
    card = get_event(new.id)
    assert {e.id for e in card.links["supersedes"]} == {home.id, *echoes}
    assert _lives_in("Utrecht").status == "superseded"  # only the ended cards stated it
    assert search_events(demo, "Maya Amsterdam", 3)[0].event.id == new.id
    (row,) = [a for a in audit_trail(demo, subject="event", subject_id=home.id) if a.action == "supersede"]
    assert (row.id, row.actor, row.reason, row.from_status, row.to_status) == (
        done.audit_id,
        "carol",
        "they moved",
        "active",
        "superseded",
    )
    assert verify(demo).ok


def test_undoing_a_supersede_gives_every_card_and_graph_record_back_and_withdraws_the_new_card(demo):
    from core.services.derive import run_pending

    home = _card("Maya lives in Utrecht")
    cards = [home.id, *_echoes(home)]
    before = {i: _image(i) for i in cards}
    done = corrections.supersede(home.id, "Maya lives in Amsterdam with Tomás and Ivy.", actor="carol")
    run_pending(demo)  # the new card's graph projection: Amsterdam replaces Utrecht
    assert GraphFact.select().where((GraphFact.key == "lives_in") & (GraphFact.status == "active")).count() == 1
    assert verify(demo).ok

    undone = corrections.undo(done.audit_id, actor="dave", reason="wrong card")

    assert (undone.action, undone.undoes, undone.undone_action, undone.event_id) == (
        "undo",
        done.audit_id,
        "supersede",
        home.id,
    )
    assert {i: _image(i) for i in cards} == before
    new = Event.get_by_id(done.other_id)
    assert new.status == "revoked" and not EventLink.select().where(EventLink.event == new.id).exists()
    assert _lives_in("Utrecht").status == "active"
    assert not GraphSource.select().where((GraphSource.kind == "fact") & (GraphSource.event == new.id)).exists()
    assert all(h.event.id != new.id for h in search_events(demo, "Maya Amsterdam", 10))
    assert verify(demo).ok
    with pytest.raises(InvalidInputError, match="already undone"):
        corrections.undo(done.audit_id, actor="dave")
    assert AuditEntry.get_by_id(undone.audit_id).detail == {"undoes": done.audit_id, "action": "supersede"}


def test_an_undo_is_refused_with_nothing_changed_once_the_new_card_was_corrected_in_its_turn(demo):
    home = _card("Maya lives in Utrecht")
    first = corrections.supersede(home.id, "Maya lives in Amsterdam.", actor="carol")
    second = corrections.supersede(first.other_id, "Maya lives in Rotterdam.", actor="carol")
    state = {i: _image(i) for i in (home.id, first.other_id, second.other_id)}
    audits = AuditEntry.select().count()

    with pytest.raises(InvalidInputError, match=f"audit entry {second.audit_id} .* undo that first"):
        corrections.undo(first.audit_id, actor="dave")
    assert {i: _image(i) for i in state} == state and AuditEntry.select().count() == audits

    # Moved on without an audited change (the new card forgotten underneath): refused all the same.
    corrections.undo(second.audit_id, actor="dave")
    Event.update(status="forgotten").where(Event.id == first.other_id).execute()
    with pytest.raises(InvalidInputError, match="became forgotten since"):
        corrections.undo(first.audit_id, actor="dave")
    Event.update(status="active").where(Event.id == first.other_id).execute()
    corrections.undo(first.audit_id, actor="dave")
    assert Event.get_by_id(home.id).status == "active"


def test_supersede_refuses_what_it_cannot_apply_to_and_writes_nothing(demo):
    ended = Event.get(Event.status == "superseded")
    active = Event.get(Event.status == "active")
    events, audits = Event.select().count(), AuditEntry.select().count()
    with pytest.raises(InvalidInputError, match="already superseded"):
        corrections.supersede(ended.id, "something else", actor="carol")
    with pytest.raises(InvalidInputError, match="empty"):
        corrections.supersede(active.id, "   ", actor="carol")
    with pytest.raises(InvalidInputError, match="at most"):
        corrections.supersede(active.id, "x" * 1001, actor="carol")
    with pytest.raises(NotFoundError):
        corrections.supersede(10**9, "something", actor="carol")
    assert (Event.select().count(), AuditEntry.select().count()) == (events, audits)


def test_a_duplicate_steps_aside_for_the_card_kept_and_comes_back_on_undo(demo):
    dup, kept = _card("Updated: the Atlas launch is now"), _card("Update: we moved the Atlas launch")
    before = _image(dup.id)

    done = corrections.mark_duplicate(dup.id, kept.id, actor="carol", reason="same statement")

    assert (done.action, done.status, done.other_id) == ("duplicate", "superseded", kept.id)
    assert _image(dup.id)[:3] == ("superseded", kept.id, SUPERSEDED_CAP)
    card = get_event(dup.id)
    assert [e.id for e in card.links["same_event"]] == [kept.id]
    assert Event.get_by_id(kept.id).status == "active"
    assert all(h.event.id != dup.id for h in search_events(demo, "Atlas launch March 17", 10))
    assert verify(demo).ok

    corrections.undo(done.audit_id, actor="carol")
    assert _image(dup.id) == before
    assert "same_event" not in get_event(dup.id).links
    assert verify(demo).ok


def test_a_duplicates_graph_records_it_alone_stated_cite_the_card_kept(demo):
    home = _card("Maya lives in Utrecht")
    kept = Event.get((Event.status == "active") & (Event.id != home.id) & Event.id.not_in(_echoes(home)))
    utrecht = _lives_in("Utrecht")
    cites_kept = GraphSource.select().where(
        (GraphSource.kind == "fact") & (GraphSource.record_id == utrecht.id) & (GraphSource.event == kept.id)
    )
    assert not cites_kept.exists()
    done = corrections.mark_duplicate(home.id, kept.id, actor="carol")
    assert _lives_in("Utrecht").status == "active" and cites_kept.exists()
    assert all(Event.get_by_id(i).status == "superseded" for i in _echoes(home))  # its echoes step aside too
    assert verify(demo).ok
    corrections.undo(done.audit_id, actor="carol")
    assert not cites_kept.exists()
    assert all(Event.get_by_id(i).status == "active" for i in _echoes(home))
    assert verify(demo).ok


def test_marking_a_duplicate_is_refused_for_itself_and_for_a_card_kept_that_is_not_current(demo):
    active = Event.get(Event.status == "active")
    ended = Event.get(Event.status == "superseded")
    with pytest.raises(InvalidInputError, match="itself"):
        corrections.mark_duplicate(active.id, active.id, actor="carol")
    with pytest.raises(InvalidInputError, match=f"mark it a duplicate of event {ended.superseded_by}"):
        corrections.mark_duplicate(active.id, ended.id, actor="carol")
    assert Event.get_by_id(active.id).status == "active" and not AuditEntry.select().exists()


def test_participants_are_replaced_for_filters_and_search_and_put_back_on_undo(demo):
    card = _card("Update: we moved the Atlas launch")
    before = list(card.participants)
    done = corrections.set_participants(card.id, ["Maya", " Priya  Raman ", "priya raman", ""], actor="carol")

    assert done.participants == ("Maya", "Priya Raman")
    assert list(Event.get_by_id(card.id).participants) == ["Maya", "Priya Raman"]
    rows = EventParticipant.select().where(EventParticipant.event == card.id)
    assert sorted(r.name for r in rows) == ["Maya", "Priya Raman"]
    assert card.id in [e.id for e in list_events(demo, participant="Priya Raman")]
    assert card.id in [h.event.id for h in search_events(demo, "Priya Raman launch moved", 5)]
    with pytest.raises(InvalidInputError, match="nothing changed"):
        corrections.set_participants(card.id, ["Maya", "Priya Raman"], actor="carol")

    again = corrections.set_participants(card.id, [], actor="carol")
    with pytest.raises(InvalidInputError, match=f"audit entry {again.audit_id} .* undo that first"):
        corrections.undo(done.audit_id, actor="carol")
    corrections.undo(again.audit_id, actor="carol")
    corrections.undo(done.audit_id, actor="carol")
    assert list(Event.get_by_id(card.id).participants) == before
    assert card.id not in [e.id for e in list_events(demo, participant="Priya Raman")]


def test_undo_takes_back_a_forget_and_a_pin_and_nothing_but_changes_of_event_cards(demo):
    card = Event.get(Event.status == "active")
    governance.forget(card.id, actor="carol", reason="private")
    governance.set_pinned(card.id, True, actor="carol")
    pinned = corrections.last_correction(demo)
    assert (pinned.action, pinned.event_id) == ("pin", card.id)
    corrections.undo(pinned.audit_id, actor="carol")
    forgot = corrections.last_correction(demo)
    assert forgot.action == "forget"
    corrections.undo(forgot.audit_id, actor="carol")
    assert _image(card.id)[0] == "active" and not Event.get_by_id(card.id).pinned
    assert corrections.last_correction(demo) is None

    record = governance.remember(demo, "Maya likes oat milk.", source="agent").record
    (capture,) = [a for a in audit_trail(demo, subject="record", subject_id=record.id)]
    with pytest.raises(InvalidInputError, match="in review"):
        corrections.undo(capture.id, actor="carol")
    undo_row = audit_trail(demo, subject="event", subject_id=card.id)[-1]
    with pytest.raises(InvalidInputError, match="itself an undo"):
        corrections.undo(undo_row.id, actor="carol")
    with pytest.raises(NotFoundError):
        corrections.undo(10**9, actor="carol")


def test_a_forget_followed_by_a_restore_is_not_undone(demo):
    card = Event.get(Event.status == "active")
    governance.forget(card.id, actor="carol", reason="private")
    forgot = corrections.last_correction(demo)
    governance.restore(card.id, actor="carol")
    with pytest.raises(InvalidInputError, match=r"restore of event \d+\) came after it \(see"):
        corrections.undo(forgot.audit_id, actor="carol")
