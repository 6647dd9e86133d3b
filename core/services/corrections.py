"""A person's corrections to event cards, each audited and each undoable.

    supersede     the card is wrong: a new card (origin ``review``) states what holds instead and
                  supersedes it, with the cards that only restated it; graph facts and edges that
                  only superseded cards still stated end, for the new card as the reason
    duplicate     the card says what another (kept) card says: it is linked ``same_event`` to the
                  kept card and superseded by it, so readers find the kept card only; graph facts
                  and edges it alone stated cite the kept card too
    participants  the card's participant list is replaced

Each writes one audit row (``AuditEntry``: action, actor, reason) holding what it changed and what
was there before, in the transaction that makes the change. ``undo`` reverts one audited change of
an event (these three, and a forget, pin or unpin) by its audit id, exactly: the corrected cards
get their status, successor and weight cap back, and a card a supersede wrote is withdrawn (status
``revoked``: hidden everywhere, its links gone). An undo is itself audited. It is refused, with
nothing changed, when what it would revert has changed since (the new card was corrected in its
turn, the duplicate was superseded by something else, the participants were edited again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from core.db import bulk_insert, chunks, is_row_id, write_transaction
from core.errors import InvalidInputError, NotFoundError
from core.models import (
    CURRENT,
    LIVE,
    AuditEntry,
    Block,
    Event,
    EventLink,
    EventParticipant,
    EventSource,
    GraphEdge,
    GraphFact,
    GraphNode,
    GraphSource,
    Namespace,
)
from core.search.index import index_events, unindex_events
from core.search.tokenize import normalize as norm_text
from core.services.events import _add_participants, queue_graph_projection, restore_event, write_event
from core.services.governance import _actor, _audit, _event, _reason
from core.services.graph_endings import EndingLog, affected_by, forget_endings_of, settle
from core.services.spaces import bump_revision, get_namespace
from core.timeutil import now_iso
from core.weights import SUPERSEDED_CAP

REVIEW_ORIGIN = "review"  # the origin of a card a person wrote by superseding another
MAX_STATEMENT = 1000
MAX_TITLE = 200
MAX_PARTICIPANTS = 24
MAX_NAME = 255

CORRECTIONS = ("supersede", "duplicate", "participants")
UNDOABLE = (*CORRECTIONS, "forget", "pin", "unpin")
_IMAGE = ("status", "superseded_by", "forced_cap")  # what a correction changes of a card, and undo gives back
_GRAPH = {"fact": GraphFact, "edge": GraphEdge}


@dataclass(frozen=True)
class Correction:
    """One audited change of an event card (or the undo of one)."""

    audit_id: int
    action: str  # supersede | duplicate | participants | undo
    event_id: int  # the card corrected
    status: str  # its status now
    other_id: int | None = None  # supersede: the new card; duplicate: the card kept
    participants: tuple[str, ...] = ()  # the card's participants now
    undoes: int | None = None  # an undo: the audit id of the change it reverted
    undone_action: str | None = None  # … and that change's action
    text: str = ""  # what happened, in a line


@dataclass(frozen=True)
class Undoable:
    """An audited change of an event card that ``undo`` can revert, as a person reads it."""

    audit_id: int
    action: str
    event_id: int
    actor: str
    reason: str | None
    at: str
    text: str


# ----------------------------------------------------------------------------- checks


def _statement(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"the new statement must be text, got {type(value).__name__}")
    text = value.strip()
    if not text:
        raise InvalidInputError("the new statement is empty: say what holds instead")
    if "\x00" in text:
        raise InvalidInputError(f"the new statement contains a NUL character (position {text.index(chr(0))})")
    if len(text) > MAX_STATEMENT:
        raise InvalidInputError(f"the new statement is {len(text)} characters; at most {MAX_STATEMENT}")
    return text


def _names(values: Any) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidInputError("participants must be a list of names")
    out: dict[str, str] = {}
    for value in values:
        if not isinstance(value, str):
            raise InvalidInputError(f"a participant must be a name, got {type(value).__name__}")
        name = " ".join(value.split())
        if not name:
            continue
        if "\x00" in name:
            raise InvalidInputError(f"participant {name!r} contains a NUL character")
        if len(name) > MAX_NAME:
            raise InvalidInputError(f"participant {name[:40]!r}… is {len(name)} characters; at most {MAX_NAME}")
        key = norm_text(name)
        if not key:
            raise InvalidInputError(f"participant {name!r} has no letters or digits")
        out.setdefault(key, name)
    if len(out) > MAX_PARTICIPANTS:
        raise InvalidInputError(f"{len(out)} participants; at most {MAX_PARTICIPANTS}")
    return list(out.values())


def _active(event: Event, what: str) -> None:
    if event.status == "superseded":
        raise InvalidInputError(
            f"event {event.id} is already superseded (by event {event.superseded_by}); {what} applies to a "
            "current card: correct the one that superseded it"
        )
    if event.status != "active":
        raise InvalidInputError(f"event {event.id} is {event.status}; {what} applies to an active card")


def _title(text: str) -> str:
    line = text.splitlines()[0].strip()
    return line if len(line) <= MAX_TITLE else line[: MAX_TITLE - 1].rstrip() + "…"


# ----------------------------------------------------------------------------- reading


def _image(event: Event) -> dict[str, Any]:
    return {"id": event.id, **{k: getattr(event, k) for k in _IMAGE}}


def _restating(event_ids: Sequence[int], namespace_id: int) -> list[Event]:
    """The live cards that only restate one of these (linked ``same_event`` to it)."""
    found: list[Event] = []
    for part in chunks(sorted(set(event_ids))):
        found += list(
            Event.select()
            .join(EventLink, on=(EventLink.event == Event.id))
            .where(
                (EventLink.target.in_(list(part)))
                & (EventLink.kind == "same_event")
                & Event.status.in_(LIVE)
                & (Event.namespace == namespace_id)
            )
            .distinct()
        )
    return sorted({e.id: e for e in found}.values(), key=lambda e: e.id)


def _stated_only_by_history(event_ids: Sequence[int]) -> list[tuple[str, Any]]:
    """The current graph facts and edges these cards cite that no active card states any more."""
    out: list[tuple[str, Any]] = []
    for kind, model in _GRAPH.items():
        ids: set[int] = set()
        for part in chunks(sorted(set(event_ids))):
            ids.update(
                r
                for (r,) in GraphSource.select(GraphSource.record_id)
                .where((GraphSource.kind == kind) & GraphSource.event.in_(list(part)))
                .tuples()
            )
        for part in chunks(sorted(ids)):
            stated = {
                r
                for (r,) in GraphSource.select(GraphSource.record_id)
                .join(Event, on=(GraphSource.event == Event.id))
                .where((GraphSource.kind == kind) & GraphSource.record_id.in_(list(part)) & (Event.status == "active"))
                .tuples()
            }
            out += [
                (kind, record)
                for record in model.select().where(model.id.in_(list(part)) & model.status.in_(CURRENT))
                if record.id not in stated
            ]
    return out


def _namespace_of(event: Event) -> Namespace:
    return Namespace.get_by_id(event.namespace_id)


def _participants(event: Event) -> tuple[str, ...]:
    return tuple(event.participants or ())


# ----------------------------------------------------------------------------- corrections


def supersede(event_id: Any, text: Any, *, actor: Any, reason: Any = None) -> Correction:
    """Replace an active card with a new statement: a new card (origin ``review``, the same source
    messages, block, participants and type, mentioned now) supersedes it and the cards that only
    restated it. Graph facts and edges that only these cards stated end, the new card their reason;
    graph projection is queued for the new card."""
    who, why = _actor(actor), _reason(reason, required=False)
    statement = _statement(text)
    with write_transaction():
        old = _event(event_id)
        _active(old, "supersede")
        ns = _namespace_of(old)
        now = now_iso()
        echoes = _restating([old.id], ns.id)
        before = [_image(old), *(_image(e) for e in echoes)]
        sources = [
            m
            for (m,) in EventSource.select(EventSource.message)
            .where(EventSource.event == old.id)
            .order_by(EventSource.position)
            .tuples()
        ]
        draft = {
            "title": _title(statement),
            "summary": statement,
            "tags": [REVIEW_ORIGIN],
            "quotes": [],
            "scope": old.scope,
            "criticality": old.criticality,
            "temporal": {"participants": list(old.participants or ()), "event_type": old.event_type},
            "source_message_ids": sources,
            "relations": {"supersedes": [old.id]},
        }
        block = Block.get_by_id(old.block_id) if old.block_id is not None else None
        new = write_event(
            ns, draft, block=block, formed_turn=ns.current_turn, origin=REVIEW_ORIGIN, mentioned_fallback=now
        )
        ended = [e for e in before if Event.get_by_id(e["id"]).superseded_by == new.id]
        graph = _end_graph([e["id"] for e in ended], new.id, now)
        queue_graph_projection(ns.id, [new.id])
        bump_revision(ns.id, now)
        audit_id = _audit_row(
            ns.id,
            old.id,
            "supersede",
            old.status,
            "superseded",
            who,
            why,
            now,
            {"new_event": new.id, "ended": ended, "graph_ended": graph, "text": statement},
        )
    return Correction(
        audit_id,
        "supersede",
        old.id,
        "superseded",
        other_id=new.id,
        participants=_participants(old),
        text=f"event {old.id} superseded by new event {new.id}",
    )


def mark_duplicate(event_id: Any, of: Any, *, actor: Any, reason: Any = None) -> Correction:
    """Mark an active card a duplicate of another active card (the one kept): it is linked
    ``same_event`` to the kept card and superseded by it, with the cards that only restated it.
    Graph facts and edges it alone stated cite the kept card too, so they stay current."""
    who, why = _actor(actor), _reason(reason, required=False)
    with write_transaction():
        dup, kept = _event(event_id), _event(of)
        if dup.id == kept.id:
            raise InvalidInputError(f"event {dup.id} cannot be a duplicate of itself: name the card it repeats")
        if dup.namespace_id != kept.namespace_id:
            raise InvalidInputError(f"event {kept.id} is in another namespace than event {dup.id}")
        _active(dup, "marking a duplicate")
        if kept.status != "active":
            raise InvalidInputError(
                f"event {kept.id} is {kept.status}; the card kept must be active"
                + (f" (mark it a duplicate of event {kept.superseded_by})" if kept.superseded_by else "")
            )
        now = now_iso()
        echoes = _restating([dup.id], dup.namespace_id)
        cards = [dup, *(e for e in echoes if e.status == "active" and e.id != kept.id)]
        before = [_image(e) for e in cards]
        linked = (
            not EventLink.select()
            .where((EventLink.event == dup.id) & (EventLink.kind == "same_event") & (EventLink.target == kept.id))
            .exists()
        )
        if linked:
            EventLink.insert(event=dup.id, kind="same_event", target=kept.id).execute()
        ids = [e.id for e in cards]
        for part in chunks(ids):
            Event.update(status="superseded", superseded_by=kept.id, forced_cap=SUPERSEDED_CAP, updated_at=now).where(
                Event.id.in_(list(part))
            ).execute()
        cited = [(kind, record.id) for kind, record in _stated_only_by_history(ids)]
        bulk_insert(
            GraphSource, ["kind", "record_id", "event_id"], [(k, r, kept.id) for k, r in cited], ignore_conflicts=True
        )
        bump_revision(dup.namespace_id, now)
        audit_id = _audit_row(
            dup.namespace_id,
            dup.id,
            "duplicate",
            dup.status,
            "superseded",
            who,
            why,
            now,
            {"of": kept.id, "ended": before, "linked": linked, "cited": [list(c) for c in cited]},
        )
    return Correction(
        audit_id,
        "duplicate",
        dup.id,
        "superseded",
        other_id=kept.id,
        participants=_participants(dup),
        text=f"event {dup.id} marked a duplicate of event {kept.id}",
    )


def set_participants(event_id: Any, names: Any, *, actor: Any, reason: Any = None) -> Correction:
    """Replace a card's participants (names kept as written, one per spelling; an empty list
    leaves it with none). Participant filters and search see the new list at once."""
    who, why = _actor(actor), _reason(reason, required=False)
    wanted = _names(names)
    with write_transaction():
        event = _event(event_id)
        before = list(event.participants or ())
        if before == wanted:
            raise InvalidInputError(f"event {event.id} already has these participants; nothing changed")
        now = now_iso()
        _replace_participants(event, wanted, now)
        audit_id = _audit_row(
            event.namespace_id,
            event.id,
            "participants",
            event.status,
            event.status,
            who,
            why,
            now,
            {"before": before, "after": wanted},
        )
    return Correction(
        audit_id,
        "participants",
        event.id,
        event.status,
        participants=tuple(wanted),
        text=f"event {event.id} participants: {', '.join(wanted) or 'none'}",
    )


def _replace_participants(event: Event, names: list[str], now: str) -> None:
    EventParticipant.delete().where(EventParticipant.event == event.id).execute()
    _add_participants(event.id, names)
    Event.update(participants=names, updated_at=now).where(Event.id == event.id).execute()
    event.participants = names  # the index reads the names from the row
    unindex_events(event.namespace_id, [event.id])
    index_events(event.namespace_id, [event])
    bump_revision(event.namespace_id, now)


def _end_graph(event_ids: Sequence[int], cause: int, now: str) -> list[list[Any]]:
    """End the current facts and edges that only these (now superseded) cards stated, ``cause``
    their reason: while it stands they stay history; withdrawn, they are current again."""
    log = EndingLog(now)
    ended: list[list[Any]] = []
    for kind, record in _stated_only_by_history(event_ids):
        log.add(kind, record.id, [("event", cause)], now, record.status, record.valid_to)
        _GRAPH[kind].update(status="superseded", valid_to=now, updated_at=now).where(
            _GRAPH[kind].id == record.id
        ).execute()
        ended.append([kind, record.id])
    log.flush()
    return ended


def _audit_row(
    namespace_id: int,
    event_id: int,
    action: str,
    before: str | None,
    after: str | None,
    actor: str,
    reason: str | None,
    now: str,
    detail: dict[str, Any],
) -> int:
    return _audit(namespace_id, "event", event_id, action, before, after, actor, reason, now, detail)


# ----------------------------------------------------------------------------- undo


def _entry(audit_id: Any) -> AuditEntry:
    if isinstance(audit_id, str) and audit_id.strip().isdigit():
        audit_id = int(audit_id.strip())
    entry = AuditEntry.get_or_none(AuditEntry.id == audit_id) if is_row_id(audit_id) else None
    if entry is None:
        raise NotFoundError(f"audit entry {audit_id} does not exist (see `strata audit`)")
    return entry


def _undone_by(entry: AuditEntry) -> AuditEntry | None:
    for later in AuditEntry.select().where(
        (AuditEntry.namespace == entry.namespace_id)
        & (AuditEntry.subject == entry.subject)
        & (AuditEntry.subject_id == entry.subject_id)
        & (AuditEntry.action == "undo")
        & (AuditEntry.id > entry.id)
    ):
        if (later.detail or {}).get("undoes") == entry.id:
            return later
    return None


def undo(audit_id: Any, *, actor: Any, reason: Any = None) -> Correction:
    """Revert one audited change of an event card: a supersede, duplicate or participants edit,
    a forget, a pin or an unpin. Refused, with nothing changed, when it was undone already, is not
    a change of an event card, or what it changed has changed again since."""
    who, why = _actor(actor), _reason(reason, required=False)
    with write_transaction():
        entry = _entry(audit_id)
        if entry.subject != "event":
            raise InvalidInputError(
                f"audit entry {entry.id} is a {entry.action} of {entry.subject} {entry.subject_id}; undo takes back "
                "changes of event cards (a record's decisions are taken back in review: restore)"
            )
        if entry.action == "undo":
            raise InvalidInputError(f"audit entry {entry.id} is itself an undo; make the change again instead")
        if entry.action not in UNDOABLE:
            raise InvalidInputError(
                f"audit entry {entry.id} is a {entry.action}; undo takes back {', '.join(UNDOABLE)}"
            )
        done = _undone_by(entry)
        if done is not None:
            raise InvalidInputError(
                f"audit entry {entry.id} was already undone (audit entry {done.id}, {done.at[:19]})"
            )
        event = _event(entry.subject_id)
        now = now_iso()
        before_status = event.status
        later = _later_change(entry)
        if later is not None:
            raise _refusal(
                entry,
                f"audit entry {later.id} ({_describe(later)}) came after it"
                + (": undo that first" if later.action in UNDOABLE else ""),
                later.subject_id,
            )
        try:
            other = _REVERT[entry.action](entry, event, now)
        except _MovedOn as moved:
            raise _refusal(entry, f"{moved.what} since", moved.event_id) from None
        event = Event.get_by_id(event.id)
        bump_revision(event.namespace_id, now)
        audit = _audit_row(
            event.namespace_id,
            event.id,
            "undo",
            before_status,
            event.status,
            who,
            why,
            now,
            {"undoes": entry.id, "action": entry.action},
        )
    return Correction(
        audit,
        "undo",
        event.id,
        event.status,
        other_id=other,
        participants=_participants(event),
        undoes=entry.id,
        undone_action=entry.action,
        text=f"undid {_describe(entry)}",
    )


class _MovedOn(Exception):
    """What an undo would revert has changed since (``what``, of ``event_id``)."""

    def __init__(self, event_id: int, what: str) -> None:
        super().__init__(what)
        self.event_id, self.what = event_id, what


def _moved_on(event_id: int, what: str) -> _MovedOn:
    return _MovedOn(event_id, what)


# The later changes that block an undo: a change of the same card of the same kind, not undone.
_BLOCKED_BY = {
    "participants": ("participants",),
    "pin": ("pin", "unpin"),
    "unpin": ("pin", "unpin"),
    "forget": ("forget", "restore"),
    "supersede": ("supersede", "duplicate", "forget", "restore"),
    "duplicate": ("supersede", "duplicate", "forget", "restore"),
}


def _later_change(entry: AuditEntry) -> AuditEntry | None:
    """The newest change made after ``entry`` to the cards it changed, of a kind that undoing it would
    trample (not undone itself), or None."""
    cards = {entry.subject_id}
    if entry.action == "supersede":
        cards.add((entry.detail or {}).get("new_event"))
    for later in (
        AuditEntry.select()
        .where(
            (AuditEntry.namespace == entry.namespace_id)
            & (AuditEntry.subject == "event")
            & AuditEntry.subject_id.in_(sorted(c for c in cards if isinstance(c, int)))
            & AuditEntry.action.in_(_BLOCKED_BY[entry.action])
            & (AuditEntry.id > entry.id)
        )
        .order_by(AuditEntry.id.desc())
    ):
        if _undone_by(later) is None:
            return later
    return None


def _refusal(entry: AuditEntry, what: str, event_id: int) -> InvalidInputError:
    return InvalidInputError(
        f"cannot undo audit entry {entry.id} ({_describe(entry)}): {what} (see `strata event {event_id}`); "
        "nothing was changed"
    )


def _check_images(images: Sequence[dict[str, Any]], by: int) -> list[Event]:
    cards = []
    for image in images:
        card = Event.get_or_none(Event.id == image["id"])
        if card is None:
            raise _moved_on(image["id"], f"event {image['id']} was removed")
        if card.status != "superseded" or card.superseded_by != by:
            now = f"{card.status}" + (f" by event {card.superseded_by}" if card.superseded_by else "")
            raise _moved_on(card.id, f"event {card.id} changed (it is {now}, not superseded by event {by})")
        cards.append(card)
    return cards


def _put_back(images: Sequence[dict[str, Any]], now: str) -> None:
    for image in images:
        values = {k: image[k] for k in _IMAGE}
        Event.update(**values, updated_at=now).where(Event.id == image["id"]).execute()


def _revert_supersede(entry: AuditEntry, event: Event, now: str) -> int | None:
    detail = entry.detail or {}
    new = Event.get_or_none(Event.id == detail.get("new_event"))
    if new is None:
        raise _moved_on(event.id, f"event {detail.get('new_event')}, the card that superseded it, was removed")
    if new.status != "active":
        raise _moved_on(new.id, f"event {new.id}, the card that superseded it, became {new.status}")
    images = detail.get("ended") or []
    _check_images(images, new.id)
    others = [
        i
        for (i,) in Event.select(Event.id).where((Event.superseded_by == new.id) & Event.status.in_(LIVE)).tuples()
        if i not in {image["id"] for image in images}
    ]
    if others:
        raise _moved_on(new.id, f"event {new.id} has superseded event {others[0]} as well")
    # Read before anything changes: the records the new card ended, stated, or made history behind.
    unsettled = affected_by([new.id, *(image["id"] for image in images)])
    _put_back(images, now)
    EventLink.delete().where(EventLink.event == new.id).execute()
    Event.update(status="revoked", updated_at=now).where(Event.id == new.id).execute()
    removed = _remove_graph_of(new.id)
    settle(unsettled - removed, now)
    return new.id


def _remove_graph_of(event_id: int) -> set[tuple[str, int]]:
    """Delete the graph facts, edges and nodes that only this (withdrawn) card's projection
    stated, with the reasons they ended and the ones they gave; records others cite stay."""
    removed: set[tuple[str, int]] = set()
    for kind, model in (*_GRAPH.items(), ("node", GraphNode)):
        cited = [
            r
            for (r,) in GraphSource.select(GraphSource.record_id)
            .where((GraphSource.kind == kind) & (GraphSource.event == event_id))
            .tuples()
        ]
        sole = [
            r
            for r in cited
            if not GraphSource.select()
            .where((GraphSource.kind == kind) & (GraphSource.record_id == r) & (GraphSource.event != event_id))
            .exists()
        ]
        if kind == "node":  # a node stays while a fact or edge hangs on it
            sole = [
                n
                for n in sole
                if not GraphFact.select().where(GraphFact.node == n).exists()
                and not GraphEdge.select().where((GraphEdge.from_node == n) | (GraphEdge.to_node == n)).exists()
            ]
        else:
            forget_endings_of(kind, sole)
        for part in chunks(sole):
            GraphSource.delete().where((GraphSource.kind == kind) & GraphSource.record_id.in_(list(part))).execute()
            model.delete().where(model.id.in_(list(part))).execute()
        removed.update((kind, r) for r in sole)
    return removed


def _revert_duplicate(entry: AuditEntry, event: Event, now: str) -> int | None:
    detail = entry.detail or {}
    kept = detail.get("of")
    images = detail.get("ended") or []
    _check_images(images, kept)
    _put_back(images, now)
    if detail.get("linked"):
        EventLink.delete().where(
            (EventLink.event == event.id) & (EventLink.kind == "same_event") & (EventLink.target == kept)
        ).execute()
    for kind, record_id in detail.get("cited") or []:
        GraphSource.delete().where(
            (GraphSource.kind == kind) & (GraphSource.record_id == record_id) & (GraphSource.event == kept)
        ).execute()
    return kept


def _revert_participants(entry: AuditEntry, event: Event, now: str) -> int | None:
    detail = entry.detail or {}
    if list(event.participants or ()) != list(detail.get("after") or ()):
        raise _moved_on(event.id, f"the participants of event {event.id} were changed again")
    _replace_participants(event, list(detail.get("before") or ()), now)
    return None


def _revert_forget(entry: AuditEntry, event: Event, now: str) -> int | None:
    if event.status != "forgotten":
        raise _moved_on(event.id, f"event {event.id} was restored (it is {event.status})")
    restore_event(event.id)
    return None


def _revert_pin(entry: AuditEntry, event: Event, now: str) -> int | None:
    pinned = entry.action == "pin"
    if bool(event.pinned) != pinned:
        raise _moved_on(event.id, f"event {event.id} was {'unpinned' if pinned else 'pinned'} again")
    Event.update(pinned=not pinned, updated_at=now).where(Event.id == event.id).execute()
    return None


_REVERT = {
    "supersede": _revert_supersede,
    "duplicate": _revert_duplicate,
    "participants": _revert_participants,
    "forget": _revert_forget,
    "pin": _revert_pin,
    "unpin": _revert_pin,
}


# ----------------------------------------------------------------------------- what can be undone


def _describe(entry: AuditEntry) -> str:
    detail = entry.detail or {}
    n = entry.subject_id
    if entry.action == "supersede":
        return f"the supersede of event {n} by event {detail.get('new_event')}"
    if entry.action == "duplicate":
        return f"marking event {n} a duplicate of event {detail.get('of')}"
    if entry.action == "participants":
        return f"the participants of event {n} ({', '.join(detail.get('before') or ()) or 'none'} → " + (
            f"{', '.join(detail.get('after') or ()) or 'none'})"
        )
    return f"the {entry.action} of event {n}"


def last_correction(namespace: str, *, scan: int = 500) -> Undoable | None:
    """The newest change of an event card in the namespace that has not been undone (among the
    newest ``scan`` audit rows of events), or None."""
    ns = get_namespace(namespace)
    undone: set[int] = set()
    rows = (
        AuditEntry.select()
        .where((AuditEntry.namespace == ns) & (AuditEntry.subject == "event"))
        .order_by(AuditEntry.id.desc())
        .limit(max(1, scan))
    )
    for entry in rows:
        if entry.action == "undo":
            undone.add((entry.detail or {}).get("undoes"))
        elif entry.action in UNDOABLE and entry.id not in undone:
            return Undoable(
                entry.id, entry.action, entry.subject_id, entry.actor, entry.reason, entry.at, _describe(entry)
            )
    return None


__all__ = [
    "CORRECTIONS",
    "REVIEW_ORIGIN",
    "UNDOABLE",
    "Correction",
    "Undoable",
    "last_correction",
    "mark_duplicate",
    "set_participants",
    "supersede",
    "undo",
]
