"""Why graph facts and edges ended, and whether those reasons still stand.

A fact or edge becomes history for a reason: an event said it ended ("moved out of Berlin"),
or a newer value took its one-at-a-time slot ("lives in Oslo" after "lives in Berlin"). The
projector writes each reason down (``GraphEnding``). Whenever events change visibility
(forget, restore, import undo) the records those events ended, or whose newer rivals they
prove, are settled again: a record whose every reason has gone is current again, with the
status and end it had before; one whose reason is back ends again where that reason said.

A reason stands while its cause is visible: an ending event that is not forgotten (a
superseded event is still history that happened), or a rival record that still cites a live
event. A record stays history when a rival in its one-at-a-time slot is current, so forgetting
one value in a chain never gives a slot two current values.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timezone
from typing import Iterable, Sequence

from core.db import bulk_insert, chunks, save_one
from core.models import CURRENT, LIVE, Event, GraphEdge, GraphEnding, GraphFact, GraphNode, GraphSource
from core.services.graph_vocab import is_functional, render_value
from core.services.spaces import bump_revision
from core.text import clip
from core.timeutil import now_iso, period_bounds

MODELS = {"fact": GraphFact, "edge": GraphEdge}
_COLUMNS = ["kind", "record_id", "cause_kind", "cause_id", "valid_to", "prior_status", "prior_valid_to", "created_at"]


class EndingLog:
    """The reasons one projection ends records with, written in one statement by ``flush``."""

    def __init__(self, now: str) -> None:
        self.now = now
        self._rows: dict[tuple[str, int, str, int], tuple] = {}
        self._overruled: set[tuple[str, int, str, int]] = set()
        self._restated: dict[tuple[str, int], float] = {}

    def add(
        self,
        kind: str,
        record_id: int,
        causes: Iterable[tuple[str, int]],
        valid_to: str | None,
        prior_status: str | None,
        prior_valid_to: str | None,
    ) -> None:
        """``prior_status`` is what the record was before it ended (None when it already was history:
        the reason is added to the ones it has, and only the first reason says what to go back to)."""
        for cause_kind, cause_id in causes:
            key = (kind, record_id, cause_kind, cause_id)
            if key not in self._rows:
                self._rows[key] = (*key, valid_to, prior_status, prior_valid_to, self.now)
            if cause_kind == kind:
                # The newer statement wins: a value that replaces this record again is no longer
                # ended by it (else each would end the other once both are shown).
                self._overruled.add((cause_kind, cause_id, kind, record_id))

    def restated(self, kind: str, record_id: int, since: str) -> None:
        """A current record said again, holding from ``since``: reasons it ended before then are
        overruled (restoring a forgotten "stopped using Vim" must not end a use said since)."""
        bounds = period_bounds(since, timezone.utc)
        if bounds:
            key = (kind, record_id)
            self._restated[key] = max(self._restated.get(key, bounds[0]), bounds[0])

    def flush(self) -> None:
        for kind in MODELS:
            said = {r: t for (k, r), t in self._restated.items() if k == kind}
            for part in chunks(sorted(said)):
                stale = [
                    e.id
                    for e in GraphEnding.select(GraphEnding.id, GraphEnding.record_id, GraphEnding.valid_to).where(
                        (GraphEnding.kind == kind) & GraphEnding.record_id.in_(part)
                    )
                    if _ended_by_then(e.valid_to, said[e.record_id])
                ]
                if stale:
                    GraphEnding.delete().where(GraphEnding.id.in_(stale)).execute()
        self._restated.clear()
        for kind, record_id, cause_kind, cause_id in sorted(self._overruled - set(self._rows)):
            GraphEnding.delete().where(
                (GraphEnding.kind == kind)
                & (GraphEnding.record_id == record_id)
                & (GraphEnding.cause_kind == cause_kind)
                & (GraphEnding.cause_id == cause_id)
            ).execute()
        self._overruled.clear()
        bulk_insert(GraphEnding, _COLUMNS, list(self._rows.values()), ignore_conflicts=True)
        self._rows.clear()


def _ended_by_then(valid_to: str | None, since: float) -> bool:
    bounds = period_bounds(valid_to, timezone.utc) if valid_to else None
    return bounds is not None and bounds[0] <= since


@dataclass(frozen=True)
class EndedBy:
    """A reason a fact or edge is history, as a reader sees it: the event that said it ended
    ("event", its id and title) or the value that replaced it ("fact"/"edge", its id and value or
    the node it points to). Only reasons whose cause is visible are shown."""

    cause: str
    id: int
    text: str


def describe(ended_by: Iterable[EndedBy], limit: int = 60) -> str:
    """One line for people: 'said ended in event 12 “Ann stopped using Vim”; replaced by Oslo'
    (each text clipped to ``limit`` characters)."""
    parts = [
        f"said ended in event {r.id} “{clip(r.text, limit)}”"
        if r.cause == "event"
        else f"replaced by {clip(r.text, limit)}"
        for r in ended_by
    ]
    return "; ".join(parts)


@dataclass
class Settled:
    revived: list[tuple[str, int]]
    ended: list[tuple[str, int]]

    @property
    def changed(self) -> bool:
        return bool(self.revived or self.ended)


def affected_by(event_ids: Iterable[int]) -> set[tuple[str, int]]:
    """Records whose endings may have changed when these events changed visibility: the ones
    the events ended, the ones the events cite (shown again, an ended one may be current), and
    down each chain of values the records ended (forgetting Oslo after Berlin reaches Paris)."""
    ids = sorted(set(event_ids))
    found: set[tuple[str, int]] = set()
    for part in chunks(ids):
        found.update(
            GraphEnding.select(GraphEnding.kind, GraphEnding.record_id)
            .where((GraphEnding.cause_kind == "event") & GraphEnding.cause_id.in_(part))
            .tuples()
        )
        found.update(
            GraphSource.select(GraphSource.kind, GraphSource.record_id)
            .where(GraphSource.event.in_(part) & GraphSource.kind.in_(list(MODELS)))
            .tuples()
        )
    frontier = set(found)
    while frontier:
        reached: set[tuple[str, int]] = set()
        for kind in MODELS:
            for part in chunks(sorted(r for k, r in frontier if k == kind)):
                reached.update(
                    GraphEnding.select(GraphEnding.kind, GraphEnding.record_id)
                    .where((GraphEnding.cause_kind == kind) & GraphEnding.cause_id.in_(part))
                    .tuples()
                )
        frontier = reached - found
        found |= frontier
    return found


def _cited_by(kind: str, record_ids: Iterable[int], statuses: Sequence[str]) -> set[int]:
    """Which of the records cite at least one event with one of ``statuses``."""
    out: set[int] = set()
    for part in chunks(sorted(set(record_ids))):
        out.update(
            r
            for (r,) in GraphSource.select(GraphSource.record_id)
            .distinct()
            .join(Event, on=(GraphSource.event == Event.id))
            .where((GraphSource.kind == kind) & GraphSource.record_id.in_(part) & Event.status.in_(list(statuses)))
            .tuples()
        )
    return out


def _slot(kind: str, record) -> tuple | None:
    """The one-at-a-time slot a record fills, or None when its key or relation accumulates."""
    if kind == "fact":
        return ("fact", record.node_id, record.key) if is_functional(record.key) else None
    return ("edge", record.from_node_id, record.relation) if is_functional(record.relation) else None


def _current_in_slot(slot: tuple) -> bool:
    """Whether another record of the slot is current and shown (it cites an active event)."""
    kind, owner, key = slot
    model = MODELS[kind]
    if kind == "fact":
        query = GraphFact.select(GraphFact.id).where((GraphFact.node == owner) & (GraphFact.key == key))
    else:
        query = GraphEdge.select(GraphEdge.id).where((GraphEdge.from_node == owner) & (GraphEdge.relation == key))
    ids = [i for (i,) in query.where(model.status.in_(CURRENT)).tuples()]
    return bool(ids) and bool(_cited_by(kind, ids, ("active",)))


def settle(records: Iterable[tuple[str, int]], now: str) -> Settled:
    """End again the records a standing reason ends; make current again the history whose every
    reason has fallen (newest first within a slot, never beside a current rival). Run inside the
    write transaction that changed the events."""
    wanted: dict[str, list[int]] = {"fact": [], "edge": []}
    for kind, record_id in set(records):
        if kind in wanted:
            wanted[kind].append(record_id)
    settled = Settled([], [])
    for kind, ids in wanted.items():
        endings: dict[int, list[GraphEnding]] = {}
        rows: dict[int, object] = {}
        for part in chunks(sorted(ids)):
            for ending in (
                GraphEnding.select()
                .where((GraphEnding.kind == kind) & GraphEnding.record_id.in_(part))
                .order_by(GraphEnding.id)
            ):
                endings.setdefault(ending.record_id, []).append(ending)
            rows.update({r.id: r for r in MODELS[kind].select().where(MODELS[kind].id.in_(part))})
        event_causes = [e.cause_id for es in endings.values() for e in es if e.cause_kind == "event"]
        live_events = {
            i
            for part in chunks(sorted(set(event_causes)))
            for (i,) in Event.select(Event.id).where(Event.id.in_(part) & Event.status.in_(LIVE)).tuples()
        }
        rivals: dict[str, set[int]] = {}
        for es in endings.values():
            for e in es:
                if e.cause_kind in MODELS:
                    rivals.setdefault(e.cause_kind, set()).add(e.cause_id)
        live_rivals = {k: _cited_by(k, v, LIVE) for k, v in rivals.items()}

        def stands(ending: GraphEnding) -> bool:
            if ending.cause_kind == "event":
                return ending.cause_id in live_events
            return ending.cause_id in live_rivals.get(ending.cause_kind, set())

        revivable = []
        for record_id, es in endings.items():
            record = rows.get(record_id)
            if record is None:
                continue
            standing = [e for e in es if stands(e)]
            if standing and record.status in CURRENT:
                ends = [e.valid_to for e in standing if e.valid_to]
                record.status, record.valid_to, record.updated_at = "superseded", min(ends) if ends else None, now
                save_one(record)
                settled.ended.append((kind, record_id))
            elif not standing and record.status == "superseded" and es[0].prior_status:
                revivable.append((record, es[0]))
        # Only a record an active event still states can be current again (else it would be a
        # current value nobody states, filling its slot ahead of an older one that is stated).
        shown = _cited_by(kind, [record.id for record, _ in revivable], ("active",))
        revivable = [pair for pair in revivable if pair[0].id in shown]
        # Newest first, so a slot goes back to its latest value that still stands.
        revivable.sort(key=lambda pair: (pair[0].valid_from or "", pair[0].id), reverse=True)
        filled: set[tuple] = set()
        for record, first in revivable:
            slot = _slot(kind, record)
            if slot is not None and (slot in filled or _current_in_slot(slot)):
                continue
            record.status, record.valid_to, record.updated_at = first.prior_status, first.prior_valid_to, now
            save_one(record)
            settled.revived.append((kind, record.id))
            if slot is not None:
                filled.add(slot)
    return settled


def reasons(kind: str, record_ids: Iterable[int]) -> dict[int, tuple[EndedBy, ...]]:
    """The visible reasons each record is history: ending events that are not forgotten (newest
    first), then replacing records that still cite a live event."""

    rows: dict[int, list[GraphEnding]] = {}
    for part in chunks(sorted(set(record_ids))):
        for ending in GraphEnding.select().where((GraphEnding.kind == kind) & GraphEnding.record_id.in_(part)):
            rows.setdefault(ending.record_id, []).append(ending)
    events = {e.cause_id for es in rows.values() for e in es if e.cause_kind == "event"}
    titles = {
        i: t
        for part in chunks(sorted(events))
        for i, t in Event.select(Event.id, Event.title).where(Event.id.in_(part) & Event.status.in_(LIVE)).tuples()
    }
    rivals = {k: {e.cause_id for es in rows.values() for e in es if e.cause_kind == k} for k in MODELS}
    live = {k: _cited_by(k, ids, LIVE) for k, ids in rivals.items()}
    texts: dict[tuple[str, int], str] = {}
    for part in chunks(sorted(live["fact"])):
        texts.update((("fact", f.id), render_value(f.value)) for f in GraphFact.select().where(GraphFact.id.in_(part)))
    for part in chunks(sorted(live["edge"])):
        query = (
            GraphEdge.select(GraphEdge.id, GraphNode.name)
            .join(GraphNode, on=(GraphEdge.to_node == GraphNode.id))
            .where(GraphEdge.id.in_(part))
            .tuples()
        )
        texts.update((("edge", i), name) for i, name in query)
    out: dict[int, tuple[EndedBy, ...]] = {}
    for record_id, es in rows.items():
        shown = [
            EndedBy("event", e.cause_id, titles[e.cause_id])
            for e in sorted(es, key=lambda e: -e.cause_id)
            if e.cause_kind == "event" and e.cause_id in titles
        ]
        shown += [
            EndedBy(e.cause_kind, e.cause_id, texts[(e.cause_kind, e.cause_id)])
            for e in es
            if (e.cause_kind, e.cause_id) in texts
        ]
        if shown:
            out[record_id] = tuple(shown)
    return out


def reconsider(event_ids: Iterable[int], namespace_id: int) -> Settled:
    """Settle the records these events' change of visibility may have revived or ended again
    (inside the write transaction that changed them); a change counts as a new revision."""
    now = now_iso()
    settled = settle(affected_by(event_ids), now)
    if settled.changed:
        bump_revision(namespace_id, now)
    return settled


def forget_endings_of(kind: str, record_ids: Sequence[int]) -> None:
    """Drop the endings of records that are being deleted and the endings they caused."""
    for part in chunks(sorted(set(record_ids))):
        GraphEnding.delete().where((GraphEnding.kind == kind) & GraphEnding.record_id.in_(part)).execute()
        GraphEnding.delete().where((GraphEnding.cause_kind == kind) & GraphEnding.cause_id.in_(part)).execute()


def forget_endings_by_events(event_ids: Sequence[int]) -> None:
    """Drop the endings caused by events that are being deleted."""
    for part in chunks(sorted(set(event_ids))):
        GraphEnding.delete().where((GraphEnding.cause_kind == "event") & GraphEnding.cause_id.in_(part)).execute()
