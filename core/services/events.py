"""Event cards: validation of extracted events, writing them with their sources and
links, the lifecycle (supersede, conflict, forget, restore) and reading them back."""

from __future__ import annotations

import copy
from collections import Counter, UserList
from dataclasses import dataclass
from datetime import timezone
from typing import Any, Callable, Iterable, Sequence

from peewee import JOIN, SQL, fn

from core.db import (
    LIST_MAX,
    MAX_ROW_ID,
    Prepared,
    all_of,
    bulk_insert,
    chunks,
    clamp,
    distinct_values,
    insert_one,
    is_row_id,
    update_by_id,
    write_transaction,
)
from core.dto import RawMessage
from core.errors import InvalidInputError, NotFoundError
from core.eventtypes import (
    filter_event_type,
    normalize_criticality,
    normalize_event_type,
    normalize_scope,
    normalize_temporal,
)
from core.models import (
    EVENT_CHRONOLOGY,
    LIVE,
    Block,
    Event,
    EventLink,
    EventParticipant,
    EventSource,
    Job,
    Message,
    Namespace,
    Thread,
)
from core.search.analyze import analyze
from core.search.index import bm25_top_kept, index_events
from core.search.tokenize import normalize as norm_text
from core.services.associations import AssociationRow, associations_of
from core.services.capture import raw_from_row
from core.services.graph_endings import reconsider
from core.services.jobs import create_job
from core.services.spaces import get_namespace
from core.text import fingerprint
from core.timeutil import now_iso, parse_timestamp, period_bounds, range_bounds, to_epoch
from core.weights import SUPERSEDED_CAP, floor_for, memory_weight

LINK_KINDS = ("supersedes", "conflicts", "same_event", "before", "after", "related")
# How a link reads from the card it points at: "superseded by 12", "restated by 14" (never "supersedes by").
LINKED_FROM = {
    "supersedes": "superseded by",
    "same_event": "restated by",
    "conflicts": "in conflict with",
    "before": "after",
    "after": "before",
    "related": "related to",
}
GRAPH_BATCH = 8
# Same as summaries and extractions: claim order is then creation order, so graph jobs
# wait behind the extractions already queued and fill their batches meanwhile.
GRAPH_PRIORITY = 0
_RELATION_FIELDS = {
    "supersedes_event_ids": "supersedes",
    "conflicts_with_event_ids": "conflicts",
    "before_event_ids": "before",
    "after_event_ids": "after",
    "related_event_ids": "related",
}


@dataclass(frozen=True)
class EventRow:
    id: int
    namespace: str
    title: str
    summary: str
    event_type: str
    status: str
    participants: tuple[str, ...]
    tags: tuple[str, ...]
    mentioned_at: str | None
    happened_start: str | None
    happened_end: str | None
    precision: str
    basis: str
    time_status: str
    original_text: str | None
    criticality: str
    scope: str
    block_id: int | None
    thread: str | None
    weight: float


@dataclass(frozen=True)
class LinkedEvent:
    id: int
    title: str
    status: str


@dataclass(frozen=True)
class EventCard:
    event: EventRow
    quotes: tuple[str, ...]
    sources: tuple[RawMessage, ...]
    links: dict[str, tuple[LinkedEvent, ...]]
    linked_from: dict[str, tuple[LinkedEvent, ...]]
    superseded_by: int | None
    formed_turn: int
    mention_count: int
    last_adopted_turn: int
    last_retrieved_at: str | None
    pinned: bool
    floor_weight: float
    forced_cap: float | None
    participant_node_ids: tuple[int, ...]
    # Why a correction this card states changed nothing: {subject, prev, new, why} (None when it did,
    # or states none).
    correction_unchanged: dict[str, str] | None = None
    used_with: tuple[AssociationRow, ...] = ()  # cards used together with this one, strongest first


# The key of an extraction job's outcome listing the corrections that changed nothing, and why.
UNCHANGED_CORRECTIONS = "unchanged_corrections"


# ----------------------------------------------------------------------------- validation


def _clean_strings(value: Any, limit: int, each: int = 500) -> list[str]:
    if not isinstance(value, list):
        return []
    out = [v.strip()[:each] for v in value if isinstance(v, str) and v.strip()]
    return list(dict.fromkeys(out))[:limit]


def validate_extracted(
    raw_events: Iterable[dict[str, Any]],
    *,
    allowed_message_ids: Sequence[int],
    timeline_ids: Iterable[int] = (),
) -> tuple[list[dict[str, Any]], list[str]]:
    """Keep the events that pass every rule; return (drafts, warnings).

    An event is dropped when its title or summary is empty, it cites no message, or it
    cites any message outside the target block. Relation ids survive only when they are
    timeline ids (the service re-checks their status at commit).
    """
    allowed = set(allowed_message_ids)
    known: set[int] | None = None

    def in_timeline(event_id: Any) -> bool:
        nonlocal known  # read only when an event cites one: the timeline may be lazy
        if known is None:
            known = set(timeline_ids)
        return event_id in known

    drafts: list[dict[str, Any]] = []
    warnings: list[str] = []
    kept_as: dict[int, int] = {}  # position in raw_events -> position in drafts
    for index, raw in enumerate(raw_events):
        title = raw.get("title") if isinstance(raw.get("title"), str) else ""
        summary = raw.get("summary") if isinstance(raw.get("summary"), str) else ""
        if not title.strip() or not summary.strip():
            warnings.append(f"event {index}: dropped, empty title or summary")
            continue
        sources = raw.get("source_message_ids")
        if not isinstance(sources, list) or not sources:
            warnings.append(f"event {index}: dropped, no source messages")
            continue
        ids = [s for s in sources if isinstance(s, int) and not isinstance(s, bool)]
        if len(ids) != len(sources) or any(s not in allowed for s in ids):
            warnings.append(f"event {index}: dropped, cites a message outside its block")
            continue
        temporal = normalize_temporal(raw.get("temporal"))
        relations = {}
        for field, kind in _RELATION_FIELDS.items():
            kept = [i for i in temporal.pop(field, []) if in_timeline(i)]
            if kept:
                relations[kind] = kept
        same = temporal.pop("same_event_id", None)
        if same is not None and in_timeline(same):
            relations["same_event"] = [same]
        # Earlier events of this same extraction it corrects ("moved my appointment to March 10"
        # after "my appointment is on March 3"), as positions among the drafts: the writer turns
        # them into ids once those are written (relations hold event ids only).
        earlier = [kept_as[i] for i in temporal.pop("supersedes_earlier", []) if i in kept_as]
        # ... and the one it restates ("Noted: …" after the statement): it ends with that one.
        restates = [kept_as[i] for i in temporal.pop("restates_earlier", []) if i in kept_as]
        # ... and a later statement already stored that corrects it (derived out of time order).
        # It need not be in the block's timeline (it is looked up apart); write_event checks it is a live
        # event of the same namespace.
        later = list(temporal.pop("superseded_by_event_ids", []))[:8]
        # ... and why a correction it states changed nothing (the target was ambiguous, not found, or
        # the correction was only a possibility): kept with the extraction job's outcome.
        unchanged = temporal.pop("correction_unchanged", None)
        unchanged = (
            {str(k)[:20]: v.strip()[:300] for k, v in unchanged.items() if isinstance(v, str) and v.strip()}
            if isinstance(unchanged, dict)
            else None
        )
        kept_as[index] = len(drafts)
        drafts.append(
            {
                "title": title.strip()[:200],
                "summary": summary.strip()[:1000],
                "tags": _clean_strings(raw.get("tags"), 12, 80),
                "quotes": _clean_strings(raw.get("quotes"), 12, 500),
                "source_message_ids": list(dict.fromkeys(ids)),
                "temporal": temporal,
                "relations": relations,
                "supersedes_earlier": earlier,
                "restates_earlier": restates,
                **({"superseded_by_later": later} if later else {}),
                **({"correction_unchanged": unchanged} if unchanged and unchanged.get("why") else {}),
                "scope": normalize_scope(raw.get("scope")),
                "criticality": normalize_criticality(raw.get("criticality")),
            }
        )
    return drafts, warnings


# ----------------------------------------------------------------------------- writing


def _time_fields(temporal: dict[str, Any], fallback_mentioned: str | None) -> dict[str, Any]:
    mentioned = temporal.get("mentioned_at") or fallback_mentioned or now_iso()
    tz = timezone.utc
    mentioned_ts = None
    if mentioned:
        try:
            stamp = parse_timestamp(mentioned)
            tz = stamp.tzinfo or timezone.utc
            mentioned_ts = to_epoch(stamp)
        except InvalidInputError:
            mentioned, mentioned_ts = fallback_mentioned, None
    start, end = temporal.get("happened_start"), temporal.get("happened_end")
    start_b = period_bounds(start or end, tz)
    end_b = period_bounds(end or start, tz)
    if (start or end) and (start_b is None or end_b is None):
        start = end = None  # unparseable dates are dropped, not guessed
        start_b = end_b = None
    return {
        "mentioned_at": mentioned,
        "mentioned_ts": mentioned_ts,
        "happened_start": start,
        "happened_end": end,
        "happened_start_ts": start_b[0] if start_b else None,
        "happened_end_ts": end_b[1] if end_b else None,
        "original_text": temporal.get("original_text"),
        "precision": temporal.get("precision", "unknown") if (start or end) else "unknown",
        "basis": temporal.get("basis", "unknown") if (start or end) else "unknown",
        "time_status": temporal.get("status", "unknown"),
    }


def _add_participants(event_id: int, names: Sequence[str]) -> None:
    rows: dict[str, tuple] = {}
    for name in names:
        key = norm_text(name)
        if key and key not in rows:
            rows[key] = (event_id, name[:255], key[:255])
    bulk_insert(EventParticipant, ["event_id", "name", "name_norm"], list(rows.values()))


_LINK = Prepared(
    lambda event_id, kind, target_id: EventLink.insert(event=event_id, kind=kind, target=target_id).on_conflict_ignore()
)
_LIVE_TARGETS = Prepared(
    lambda ids, ns: Event.select().where(Event.id.in_(ids) & Event.status.in_(LIVE) & (Event.namespace == ns))
)
_SUPERSEDE = Prepared(
    lambda by, now, target: Event.update(
        status="superseded", superseded_by=by, forced_cap=SUPERSEDED_CAP, updated_at=now
    ).where(Event.id == target)
)

_RESTATING = Prepared(
    lambda target, ns: (
        EventLink.select(EventLink.event)
        .join(Event, on=(EventLink.event == Event.id))
        .where(
            (EventLink.target == target)
            & (EventLink.kind == "same_event")
            & Event.status.in_(LIVE)
            & (Event.namespace == ns)
        )
        .tuples()
    )
)


def _link(event_id: int, kind: str, target_id: int) -> None:
    _LINK.execute(event_id, kind, target_id)


def write_event(
    namespace: Namespace | int,
    draft: dict[str, Any],
    *,
    block: Block | None,
    formed_turn: int,
    origin: str = "extraction",
    mentioned_fallback: str | None = None,
    index: bool = True,
) -> Event:
    """Insert one validated event with its sources, participants and links.

    Must run inside the caller's write transaction. Superseded targets get status
    ``superseded``, ``superseded_by`` and the weight cap; conflicts are linked both ways.
    Relation targets that are no longer active or superseded are dropped here. A caller
    writing several events may pass ``index=False`` and index them together afterwards
    with ``index_events`` (one corpus-statistics update instead of one per event).
    ``block`` must be ready by the end of that transaction (the timeline's recency walk
    looks for events in ready blocks only).
    """
    temporal = draft.get("temporal", {})
    now = now_iso()
    criticality = draft.get("criticality", "routine")
    participants = temporal.get("participants", [])
    event = insert_one(
        Event,
        dict(
            namespace=namespace,
            block=block,
            thread=block.thread_id if block is not None else None,
            title=draft["title"],
            summary=draft["summary"],
            tags=draft.get("tags", []),
            quotes=draft.get("quotes", []),
            participants=participants,
            event_type=normalize_event_type(temporal.get("event_type")),
            scope=draft.get("scope", "project"),
            criticality=criticality,
            formed_turn=formed_turn,
            last_adopted_turn=formed_turn,
            floor_weight=floor_for(criticality),
            origin=origin,
            fingerprint=fingerprint(draft["title"], draft["summary"]),
            created_at=now,
            updated_at=now,
            **_time_fields(temporal, mentioned_fallback),
        ),
    )
    sources = draft.get("source_message_ids", [])
    bulk_insert(EventSource, ["event_id", "message_id", "position"], [(event.id, m, i) for i, m in enumerate(sources)])
    _add_participants(event.id, participants)
    if index:
        index_events(event.namespace_id, [event])
    relations = draft.get("relations", {})
    later = list(draft.get("superseded_by_later", []))
    targets = {i for ids in relations.values() for i in ids} | set(later)
    live = {e.id: e for e in _LIVE_TARGETS.rows(sorted(targets), event.namespace_id)} if targets else {}
    for kind, ids in relations.items():
        if kind not in LINK_KINDS:
            continue  # a kind of link events do not have is never written
        for target_id in ids:
            if target_id not in live or target_id == event.id:
                continue
            _link(event.id, kind, target_id)
            if kind == "conflicts":
                _link(target_id, "conflicts", event.id)
            if kind == "supersedes":
                _SUPERSEDE.execute(event.id, now, target_id)
                # What only restated the target (an assistant's "Noted: …", linked as the same event) ends with it.
                for (echo_id,) in _RESTATING.rows(target_id, event.namespace_id):
                    if echo_id != event.id:
                        _link(event.id, "supersedes", echo_id)
                        _SUPERSEDE.execute(event.id, now, echo_id)
            if kind == "same_event" and live[target_id].status == "superseded" and live[target_id].superseded_by:
                # A receipt of a statement already ended ends with it.
                by = live[target_id].superseded_by
                _link(by, "supersedes", event.id)
                _SUPERSEDE.execute(by, now, event.id)
    # A later statement stored before this one corrects it: it ends now, as it would have then.
    for by in later:
        if by in live and live[by].status == "active" and by != event.id:
            _link(by, "supersedes", event.id)
            _SUPERSEDE.execute(by, now, event.id)
            break
    return event


_OPEN_GRAPH_JOB = Prepared(
    lambda ns, priority: (
        Job.select()
        .where(
            (Job.namespace == ns)
            & (Job.kind == "graph")
            & (Job.status == "pending")
            & (Job.attempts == 0)
            & (Job.priority == priority)
        )
        .order_by(Job.id.desc())
        .limit(1)
    )
)


def queue_graph_projection(namespace_id: int, event_ids: Sequence[int], priority: int = GRAPH_PRIORITY) -> None:
    """Graph work for new events, in batches of at most eight.

    New events first top up the namespace's newest graph job that nobody has claimed yet:
    extraction queues a few events per block, and a projection's fixed cost (reading the
    related nodes and their views) is paid per job, so full batches cost far less per event.
    Call inside the write transaction that wrote the events.
    """
    ids = list(dict.fromkeys(event_ids))
    if not ids:
        return
    open_job = _OPEN_GRAPH_JOB.first(namespace_id, priority)
    if open_job is not None:
        queued = list((open_job.payload or {}).get("event_ids") or [])
        room = GRAPH_BATCH - len(queued)
        if room > 0:
            payload = dict(open_job.payload or {})
            payload["event_ids"] = queued + [i for i in ids[:room] if i not in queued]
            update_by_id(Job, open_job.id, dict(payload=payload, updated_at=now_iso()))
            ids = ids[room:]
    for start in range(0, len(ids), GRAPH_BATCH):
        create_job(
            namespace_id, "graph", None, priority=priority, payload={"event_ids": ids[start : start + GRAPH_BATCH]}
        )


# ----------------------------------------------------------------------------- lifecycle


def forget_event(event_id: int) -> EventRow:
    """Hide an event from search and context; reversible, provenance kept."""
    with write_transaction():
        event = _get(event_id)
        if event.status != "forgotten":
            event.status = "forgotten"
            event.updated_at = now_iso()
            event.save()
            reconsider(event_ids=[event.id], namespace_id=event.namespace_id)
    return get_event(event_id).event


def restore_event(event_id: int) -> EventRow:
    """Undo a forget. An event that a still-visible event supersedes comes back as
    superseded, not active (the reference revived it as current)."""
    with write_transaction():
        event = _get(event_id)
        if event.status != "forgotten":
            raise InvalidInputError(f"event {event_id} is {event.status}; only forgotten events can be restored")
        successor = Event.get_or_none(Event.id == event.superseded_by) if event.superseded_by else None
        event.status = "superseded" if successor is not None and successor.status in LIVE else "active"
        event.updated_at = now_iso()
        event.save()
        reconsider(event_ids=[event.id], namespace_id=event.namespace_id)
    return get_event(event_id).event


# ----------------------------------------------------------------------------- reading


def _get(event_id: int) -> Event:
    event = Event.get_or_none(Event.id == event_id) if is_row_id(event_id) else None
    if event is None:
        raise NotFoundError(f"event {event_id} does not exist (see `strata events`)")
    return event


def event_weight(event: Event, current_turn: int) -> float:
    return memory_weight(
        status=event.status,
        current_turn=current_turn,
        last_adopted_turn=event.last_adopted_turn,
        mention_count=event.mention_count,
        floor_weight=event.floor_weight,
        forced_cap=event.forced_cap,
        pinned=event.pinned,
    )


def event_row(event: Event, ns: Namespace, thread_name: str | None) -> EventRow:
    return EventRow(
        id=event.id,
        namespace=ns.name,
        title=event.title,
        summary=event.summary,
        event_type=event.event_type,
        status=event.status,
        participants=tuple(event.participants or ()),
        tags=tuple(event.tags or ()),
        mentioned_at=event.mentioned_at,
        happened_start=event.happened_start,
        happened_end=event.happened_end,
        precision=event.precision,
        basis=event.basis,
        time_status=event.time_status,
        original_text=event.original_text,
        criticality=event.criticality,
        scope=event.scope,
        block_id=event.block_id,
        thread=thread_name,
        weight=round(event_weight(event, ns.current_turn), 6),
    )


# Distinct words a text filter may require: each is two LIKE tests, so this bounds the statement's
# bound parameters well under every engine's limit.
TEXT_WORDS_MAX = 200


def text_words(text: str | None) -> list[str]:
    """The distinct words of a text filter (every one must appear), at most TEXT_WORDS_MAX."""
    words = list(dict.fromkeys((text or "").split()))
    if len(words) > TEXT_WORDS_MAX:
        raise InvalidInputError(
            f"the text filter has {len(words)} distinct words; at most {TEXT_WORDS_MAX} can be "
            "required (fewer, more distinctive words find the same events)"
        )
    return words


TYPE_LIST_MAX = 2000  # events of a type from which the filter is the type itself, not a list of ids


def event_type_clause(event_type: str, namespace_id: int | None):
    """Events of a type. A type with few events is listed first through the type index and matched
    by id: a page walking the timeline, or the day counts, would otherwise read every event's row to
    find them (0.9 s at 866k events for one incident). A common type is found within its first rows."""
    kind = filter_event_type(event_type)
    few = Event.select(Event.id).where(Event.event_type == kind)
    if namespace_id is not None:  # "+ 0": through the type index, not the namespace's (all its events)
        few = few.where((Event.namespace + 0) == namespace_id)
    ids = [i for (i,) in few.limit(TYPE_LIST_MAX + 1).tuples()]
    if len(ids) <= TYPE_LIST_MAX:
        return Event.id.in_(ids) if ids else (Event.id < 0)
    return Event.event_type == kind


def after_in_chronology(chron: float, event_id: int):
    """Events after (chron, event_id) in time order: a keyset page along event_chronology."""
    return (EVENT_CHRONOLOGY > chron) | ((EVENT_CHRONOLOGY == chron) & (Event.id > event_id))


# A participant filter matching more rows than this is checked per event while walking the
# timeline (stops after a page); fewer are listed first and looked up by id.
PARTICIPANT_LIST_MAX = 2000


def _participant_clause(text: str, walk: bool):
    """Events with a participant whose name contains ``text``.

    The matching names come from the distinct names (an index skip-scan), so the test is
    an index lookup rather than a substring scan of every participant row. For a page
    (``walk``) of a common name each event of the walk is probed (the walk stops after a
    page); a rare name, or an aggregate, lists its events first."""
    key = norm_text(text)
    names = [name for name in distinct_values(EventParticipant.name_norm) if key in name]
    if not names:
        return SQL("1 = 0")  # false on every engine: PostgreSQL takes no integer for a condition
    rows = EventParticipant.select(EventParticipant.event).where(EventParticipant.name_norm.in_(names))
    if walk and rows.limit(PARTICIPANT_LIST_MAX + 1).count() > PARTICIPANT_LIST_MAX:
        probe = EventParticipant.alias("p")
        return fn.EXISTS(probe.select(SQL("1")).where((probe.event == Event.id) & probe.name_norm.in_(names)))
    return Event.id.in_(rows)


def filter_events(
    query,
    namespace_id: int | None,
    *,
    event_type: str | None = None,
    status: str | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    dated: bool | None = None,
    text: str | None = None,
    participant: str | None = None,
    walk: bool = False,
):
    """``query`` over events narrowed to one namespace (None: all) and the filters a person sets
    in `strata events` and the workbench timeline; ``walk`` when it reads one page in time order.

    A date filter keeps events whose happened range overlaps [from, to]; events with no known
    happened time never match one. ``dated`` keeps only events with (True) or without (False) one."""
    if namespace_id is not None:
        query = query.where(Event.namespace == namespace_id)
    if event_type:
        query = query.where(event_type_clause(event_type, namespace_id))
    if status:
        query = query.where(Event.status == status)
    low, high = range_bounds(date_from, date_to)
    if low is not None or high is not None:
        query = query.where(Event.happened_start_ts.is_null(False))
        if low is not None:
            # No bound on the index for the start: an event that began before the range and
            # ends in it (a span) is in it, and sorts before it.
            query = query.where(Event.happened_end_ts >= low)
        if high is not None:
            # A dated event sorts by its start, so a walk along event_chronology stops here.
            query = query.where((Event.happened_start_ts <= high) & (EVENT_CHRONOLOGY <= high))
    if dated is not None:
        query = query.where(Event.happened_start_ts.is_null(not dated))
    words = text_words(text)
    if words:
        query = query.where(all_of([Event.title.contains(w) | Event.summary.contains(w) for w in words]))
    if participant and participant.strip():  # last: a probe per event is the dearest test of a walk
        query = query.where(_participant_clause(participant, walk))
    return query


def list_events(
    namespace: str | None = None,
    *,
    event_type: str | None = None,
    participant: str | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    status: str | None = None,
    text: str | None = None,
    limit: int = 100,
    offset: int = 0,
    after_event: int | None = None,
) -> list[EventRow]:
    """Events in chronological order (happened time, else mention time, then id), filtered.

    A time filter keeps events whose happened range overlaps [from, to]; events with no
    known happened time never match one. ``after_event`` starts after that event's place in
    the order (the next page, read along the event_chronology index; ``offset`` counts its way
    there: 3.8 s at half a million events).
    """
    query = Event.select(Event, Namespace, Thread.name).join(Namespace).switch(Event).join(Thread, JOIN.LEFT_OUTER)
    ns = get_namespace(namespace) if namespace is not None else None
    query = filter_events(
        query,
        ns.id if ns is not None else None,
        event_type=event_type,
        status=status,
        date_from=date_from,
        date_to=date_to,
        text=text,
        participant=participant,
        walk=True,
    )
    if after_event is not None:
        anchor = (
            Event.select(EVENT_CHRONOLOGY.alias("chron")).where(Event.id == after_event).first()
            if is_row_id(after_event)
            else None
        )
        if anchor is None:
            raise NotFoundError(f"event {after_event} does not exist (see `strata events`)")
        query = query.where(after_in_chronology(anchor.chron, after_event))
    query = (
        query.order_by(EVENT_CHRONOLOGY, Event.id)
        .limit(clamp(limit, 1, LIST_MAX, 100))
        .offset(clamp(offset, 0, MAX_ROW_ID, 0))
    )
    return [event_row(e, e.namespace, e.thread.name if e.thread_id else None) for e in query]


def _linked(rows: Iterable[tuple[str, Event]]) -> dict[str, tuple[LinkedEvent, ...]]:
    out: dict[str, list[LinkedEvent]] = {}
    for kind, other in rows:
        out.setdefault(kind, []).append(LinkedEvent(other.id, other.title, other.status))
    return {k: tuple(v) for k, v in out.items()}


def get_event(event_id: int) -> EventCard:
    event = _get(event_id)
    ns = Namespace.get_by_id(event.namespace_id)
    thread = Thread.get_by_id(event.thread_id).name if event.thread_id else None
    sources = (
        Message.select(Message, Thread.name)
        .join(EventSource, on=(EventSource.message == Message.id))
        .switch(Message)
        .join(Thread)
        .where(EventSource.event == event)
        .order_by(EventSource.position)
    )
    out_links = [
        (link.kind, link.target)
        for link in EventLink.select(EventLink, Event)
        .join(Event, on=(EventLink.target == Event.id))
        .where(EventLink.event == event)
    ]
    in_links = [
        (link.kind, link.event)
        for link in EventLink.select(EventLink, Event)
        .join(Event, on=(EventLink.event == Event.id))
        .where(EventLink.target == event)
    ]
    return EventCard(
        event=event_row(event, ns, thread),
        quotes=tuple(event.quotes or ()),
        sources=tuple(raw_from_row(m, m.thread.name) for m in sources),
        links=_linked(out_links),
        linked_from=_linked(in_links),
        superseded_by=event.superseded_by,
        formed_turn=event.formed_turn,
        mention_count=event.mention_count,
        last_adopted_turn=event.last_adopted_turn,
        last_retrieved_at=event.last_retrieved_at,
        pinned=event.pinned,
        floor_weight=event.floor_weight,
        forced_cap=event.forced_cap,
        participant_node_ids=tuple(event.participant_node_ids or ()),
        correction_unchanged=_unchanged_correction(event),
        used_with=tuple(associations_of(event.id)),
    )


def _unchanged_correction(event: Event) -> dict[str, str] | None:
    if event.block_id is None:
        return None
    jobs = Job.select(Job.payload).where(
        (Job.block == event.block_id) & (Job.kind == "extraction") & Job.payload.is_null(False)
    )
    for (payload,) in jobs.tuples():
        for note in (payload or {}).get(UNCHANGED_CORRECTIONS, []) if isinstance(payload, dict) else []:
            if isinstance(note, dict) and note.get("event") == event.id:
                return {k: v for k, v in note.items() if k != "event"}
    return None


# ----------------------------------------------------------------------------- timeline


class LazyTimeline(UserList):
    """A timeline read on first use, for a provider that looks at it only now and then.

    The offline extractor consults the timeline only for a statement that says something
    changed; on a large store the relevance search behind it was a third of derivation.
    A deep copy (the provider gets one) reads through the original, so the search runs at
    most once, and copies what it returns.

    ``look_for(text)`` adds the live events that best match a few words a correction names
    ("the Atlas launch", "Notion") when the block's own timeline does not hold what it corrects;
    they join the timeline (on the original too), so a link to one of them is a link into it."""

    def __init__(
        self,
        read: Callable[[], list[dict[str, Any]]],
        lookup: Callable[[str], list[dict[str, Any]]] | None = None,
        peek: Callable[[str], list[dict[str, Any]]] | None = None,
    ) -> None:
        # no super().__init__: it sets data to []
        self._read = read
        self._lookup = lookup
        self._peek = peek
        self._data: list[dict[str, Any]] | None = None

    def look_for(self, text: str) -> list[dict[str, Any]]:
        """The events found for ``text`` (added to the timeline); none without a lookup."""
        if self._lookup is None:
            return []
        found = self._lookup(text)
        held = {item["id"] for item in self.data}
        self.data.extend(item for item in found if item["id"] not in held)
        return found

    def peek_for(self, text: str) -> list[dict[str, Any]]:
        """The events found for ``text``, left out of the timeline: what the extractor reads without
        linking into it (a later correction of a statement is found this way; the link it makes is
        checked when it is written, so a replay of the answer writes the same store)."""
        if self._peek is not None:
            return self._peek(text)
        return [] if self._lookup is None else self._lookup(text)

    @property
    def data(self) -> list[dict[str, Any]]:
        if self._data is None:
            self._data = self._read()
        return self._data

    @data.setter
    def data(self, value: list[dict[str, Any]]) -> None:
        self._data = value

    def __deepcopy__(self, memo) -> "LazyTimeline":
        return LazyTimeline(
            lambda: copy.deepcopy(self.data),
            None if self._lookup is None else lambda text: copy.deepcopy(self.look_for(text)),
            None if self._lookup is None else lambda text: copy.deepcopy(self.peek_for(text)),
        )


RELEVANT_LIMIT = 8
RECENT_LIMIT = 4
TIMELINE_QUERY_TERMS = 24


def _live(query, namespace_id, exclude_block):
    """What the extraction timeline may show: live events of the namespace, not of the block
    being extracted."""
    query = query.where((Event.namespace == namespace_id) & (Event.status.in_(LIVE)))
    if exclude_block is not None:
        query = query.where((Event.block.is_null()) | (Event.block != exclude_block))
    return query


_KEYED = (Event.id, Event.block, Event.formed_turn, Event.created_at)


def _ready_blocks(namespace_id, below, window):
    query = Block.select(Block.id, Block.sequence).where((Block.namespace == namespace_id) & (Block.status == "ready"))
    if below is not None:
        query = query.where(Block.sequence < below)
    return query.order_by(Block.sequence.desc()).limit(window).tuples()


_READY_BLOCKS = Prepared(_ready_blocks)
# By block alone: with the namespace and status in the WHERE clause SQLite walked the
# (namespace, status) index, every live event of the namespace, to find a few blocks' events.
_KEYS_IN_BLOCKS = Prepared(lambda ids: Event.select(*_KEYED, Event.status).where(Event.block.in_(ids)).tuples())
_LIVE_ORPHAN_KEYS = Prepared(
    lambda ns, exclude, limit: (
        _live(Event.select(*_KEYED).where(Event.block.is_null()), ns, exclude)
        .order_by(Event.formed_turn.desc(), Event.created_at.desc(), Event.id.desc())
        .limit(limit)
        .tuples()
    )
)
_LIVE_IDS = Prepared(
    lambda ids, ns, exclude: _live(Event.select(Event.id).where(Event.id.in_(ids)), ns, exclude).tuples()
)
EVENTS_BY_ID = Prepared(lambda ids: Event.select().where(Event.id.in_(ids)))


def live_event_ids(ids: Sequence[int], namespace_id: int, exclude_block: int | None = None) -> set[int]:
    """Which of the events are live in the namespace (and not of ``exclude_block``)."""
    return {i for part in chunks(list(ids)) for (i,) in _LIVE_IDS.rows(list(part), namespace_id, exclude_block)}


def _recent_events(namespace_id: int, exclude_block: int | None) -> list[Event]:
    """The RECENT_LIMIT newest live events by source block order (then turn, time, id);
    events without a block (imports) count as oldest.

    Walks blocks newest first in growing windows instead of sorting every event of the
    namespace, so the cost does not grow with the namespace. It skips blocks not derived yet
    (a backlog may be most of them) and reads only the sort keys; the few winners are read
    whole at the end.
    """
    found: list[tuple[tuple, int]] = []
    window, below = RECENT_LIMIT * 2, None
    while len(found) < RECENT_LIMIT:
        # Only a ready block has events (they are written in the transaction that makes it ready).
        sequences = dict(_READY_BLOCKS.rows(namespace_id, below, window))
        if not sequences:
            break
        ids = [i for i in sequences if i != exclude_block]  # the namespace's blocks
        if ids:
            found.extend(
                ((sequences[block], turn or 0, created or "", eid), eid)
                for eid, block, turn, created, status in _KEYS_IN_BLOCKS.rows(ids)
                if status in LIVE
            )
        below, window = min(sequences.values()), window * 2
    if len(found) < RECENT_LIMIT:
        orphans = _LIVE_ORPHAN_KEYS.rows(namespace_id, exclude_block, RECENT_LIMIT)
        found.extend(((0, turn or 0, created or "", eid), eid) for eid, _block, turn, created in orphans)
    found.sort(key=lambda item: item[0], reverse=True)
    winners = [eid for _, eid in found[:RECENT_LIMIT]]
    by_id = {e.id: e for e in EVENTS_BY_ID.rows(winners)} if winners else {}
    return [by_id[eid] for eid in winners]


def extraction_timeline(namespace_id: int, query: str, *, exclude_block: int | None = None) -> list[dict[str, Any]]:
    """Up to 8 relevant plus 4 most recent live events, relevant first, no duplicates.

    Relevance is BM25 over the event index (no corpus is rebuilt per block); recency is by
    source block order, not creation time. Forgotten and archived events never appear;
    superseded ones do (history matters for relations).
    """

    # The block's own most repeated terms are enough to find related events; a long query
    # would fetch the postings of every word of a whole summary.
    terms = [t for t, _ in Counter(analyze(query)).most_common(TIMELINE_QUERY_TERMS)]
    relevant = _best_live(namespace_id, terms, RELEVANT_LIMIT, exclude_block)
    recent = _recent_events(namespace_id, exclude_block)
    chosen_ids = {e.id for e in relevant}
    chosen = relevant + [e for e in recent if e.id not in chosen_ids]
    ending = (
        {
            i
            for (i,) in EventLink.select(EventLink.event)
            .where((EventLink.kind == "supersedes") & EventLink.event.in_([e.id for e in chosen]))
            .tuples()
        }
        if chosen
        else set()
    )
    return [_timeline_item(e, e.id in ending) for e in chosen]


CORRECTION_LOOKUP_LIMIT = 4


def correction_lookup(namespace_id: int, text: str, *, exclude_block: int | None = None) -> list[dict[str, Any]]:
    """The live events (outside ``exclude_block``) that best match the few words a correction names
    (``LazyTimeline.look_for``): at most ``CORRECTION_LOOKUP_LIMIT``, by BM25 over the event index."""

    terms = list(dict.fromkeys(analyze(text)))
    return [_timeline_item(e) for e in _best_live(namespace_id, terms, CORRECTION_LOOKUP_LIMIT, exclude_block)]


NAME_MENTIONS_LIMIT = 3


def name_mentions(namespace_id: int, name: str, exclude: Iterable[int] = ()) -> list[str]:
    """What other live events say with ``name`` in it (title and summary of the best
    ``NAME_MENTIONS_LIMIT`` by BM25, none of ``exclude``): the offline graph projector reads them
    when its batch alone cannot tell whether a name is a person ("KLM from Schiphol" beside
    "the taxi to Schiphol" said elsewhere)."""

    skip = set(exclude)
    terms = list(dict.fromkeys(analyze(name)))
    found = _best_live(namespace_id, terms, NAME_MENTIONS_LIMIT, None, skip)
    return [f"{e.title}\n{e.summary}" for e in found]


def _best_live(
    namespace_id: int, terms: list[str], limit: int, exclude_block: int | None, exclude: set[int] = frozenset()
) -> list[Event]:
    """The ``limit`` live events (outside ``exclude_block`` and ``exclude``) that score best for
    ``terms``, best first."""

    if not terms:
        return []
    # Ids first: hydrating the events to keep eight was most of the cost.
    ids = bm25_top_kept(
        "event",
        namespace_id,
        terms,
        limit,
        lambda found: live_event_ids([i for i in found if i not in exclude], namespace_id, exclude_block),
    )
    by_id = {e.id: e for e in EVENTS_BY_ID.rows(ids)} if ids else {}
    return [by_id[i] for i in ids if i in by_id]


def _timeline_item(e: Event, ends: bool = False) -> dict[str, Any]:
    return {
        "ends": ends,  # it already ended another card (a correction ends one card at most)
        "id": e.id,
        "title": e.title,
        "summary": e.summary,
        "participants": list(e.participants or ()),
        "event_type": e.event_type,
        "status": e.status,
        "happened_start": e.happened_start,
        "mentioned_at": e.mentioned_at,
    }
