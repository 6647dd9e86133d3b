"""Read paths for browsing a memory page by page (the workbench's data source).

Every function here reads a bounded slice: keyset pages for long lists (events in time
order, graph nodes by name, traces and jobs newest first), a day-level aggregate for the
event histogram, and small per-item lookups. Nothing hydrates a whole namespace, so a
screen costs the same on a store with a hundred events or a hundred thousand. All return
frozen dataclasses (or DTOs of the other services); none writes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Sequence

from peewee import JOIN, Case, SqliteDatabase, fn

from core.db import all_of, clamp, db
from core.errors import InvalidInputError, NotFoundError
from core.models import (
    CURRENT,
    EVENT_CHRONOLOGY,
    Block,
    Event,
    GraphNode,
    Job,
    Namespace,
    RetrievalBatch,
    RetrievalTrace,
    Thread,
    UsageReceipt,
)
from core.search.tokenize import normalize as norm_text
from core.services.events import (
    EventRow,
    event_row,
    after_in_chronology,
    event_weight,
    filter_events,
    text_words,
)
from core.services.graph import NodeRow, compute_views
from core.services.jobs import JobRow, job_row
from core.services.spaces import get_namespace
from core.services.traces import TraceRow, trace_row
from core.vocab import HIDDEN_EVENT_STATUSES

LANES = ("all", "dated", "undated")
DAY = 86400.0
MAX_PAGE = 1000


def _limit(limit: int) -> int:
    return clamp(limit, 1, MAX_PAGE, MAX_PAGE)


# ----------------------------------------------------------------------------- threads


def namespace_names() -> list[str]:
    """The namespaces of the store by name (no per-namespace counts)."""
    return [name for (name,) in Namespace.select(Namespace.name).order_by(Namespace.name).tuples()]


@dataclass(frozen=True)
class ThreadRow:
    """A conversation of a namespace with its block and open-tail counts."""

    id: int
    name: str
    messages: int
    turns: int
    sealed_turns: int
    blocks: int
    ready_blocks: int

    @property
    def open_turns(self) -> int:
        return max(0, self.turns - self.sealed_turns)


def list_threads(namespace: str, limit: int = 500) -> list[ThreadRow]:
    """Threads of a namespace by name (their counters are stored, so this is one query)."""
    ns = get_namespace(namespace)
    query = Thread.select().where(Thread.namespace == ns).order_by(Thread.name).limit(_limit(limit))
    return [
        ThreadRow(t.id, t.name, t.message_count, t.turn_count, t.sealed_turns, t.block_count, t.ready_count)
        for t in query
    ]


# ----------------------------------------------------------------------------- events


@dataclass(frozen=True)
class EventFilter:
    """What the timeline shows: every field narrows; empty fields do not filter.

    ``lane`` picks events with a known happened time (``dated``), those placed only by
    when they were mentioned (``undated``), or both (``all``).
    """

    text: str = ""
    participant: str = ""
    event_type: str = ""
    status: str = ""
    date_from: str = ""
    date_to: str = ""
    lane: str = "all"


@dataclass(frozen=True)
class EventPage:
    rows: tuple[EventRow, ...]
    cursor: tuple[float, int] | None  # pass as ``after`` for the next page; None at the end


@dataclass(frozen=True)
class DayCounts:
    """Events per day of a filtered timeline, by lane: the histogram of every lane comes from
    one of these (so it is computed once per filter, not once per lane)."""

    dated: tuple[tuple[int, int], ...]  # (day, events with a happened time)
    undated: tuple[tuple[int, int], ...]  # (day, events placed by mention time)
    timeless: int = 0  # events with neither time: counted, not placed


@dataclass(frozen=True)
class Histogram:
    """Event counts over time (happened time, else mention time) in equal buckets."""

    start_ts: float | None
    end_ts: float | None
    counts: tuple[int, ...]
    dated: int  # events with a happened time that pass the filter
    undated: int  # events placed only by mention time
    total: int


def _filtered(query, ns: Namespace, flt: EventFilter, *, walk: bool = False):
    """``query`` narrowed to ``flt``; ``walk`` when it reads one page in timeline order."""
    if flt.lane not in LANES:
        raise InvalidInputError(f"lane must be one of {', '.join(LANES)}, got {flt.lane!r}")
    return filter_events(
        query,
        ns.id,
        event_type=flt.event_type,
        status=flt.status,
        date_from=flt.date_from,
        date_to=flt.date_to,
        dated={"dated": True, "undated": False}.get(flt.lane),
        text=flt.text,
        participant=flt.participant,
        walk=walk,
    )


def event_page(
    namespace: str, flt: EventFilter = EventFilter(), *, after: tuple[float, int] | None = None, limit: int = 100
) -> EventPage:
    """Events in time order (happened time, else mention time, then id), one keyset page."""
    ns = get_namespace(namespace)
    limit = _limit(limit)
    chron = EVENT_CHRONOLOGY
    query = _filtered(
        Event.select(Event, Thread.name, chron.alias("chron")).join(Thread, JOIN.LEFT_OUTER), ns, flt, walk=True
    )
    if after is not None:
        query = query.where(after_in_chronology(*after))
    rows = list(query.order_by(chron, Event.id).limit(limit + 1))
    more = len(rows) > limit
    rows = rows[:limit]
    out = tuple(event_row(e, ns, e.thread.name if e.thread_id else None) for e in rows)
    cursor = (float(rows[-1].chron or 0), rows[-1].id) if more and rows else None
    return EventPage(out, cursor)


def event_position(namespace: str, event_id: int, flt: EventFilter = EventFilter()) -> tuple[float, int] | None:
    """The keyset cursor just before ``event_id`` (to open a page starting at it), or None
    when the event is not in the filtered timeline."""
    ns = get_namespace(namespace)
    chron = EVENT_CHRONOLOGY
    row = _filtered(Event.select(Event.id, chron.alias("chron")), ns, flt).where(Event.id == event_id).first()
    if row is None:
        return None
    return (float(row.chron or 0), row.id - 1)


def _grouped_rows(query) -> list[tuple]:
    """The rows of a grouped query of integers. On SQLite they come back as one text value:
    a thousand rows read one by one each hand the GIL back and forth, which costs more than
    the aggregate when another thread (the UI) is busy."""

    if not isinstance(db.obj, SqliteDatabase):
        return list(query.tuples())
    sql, params = query.sql()
    packed = db.execute_sql(
        f"SELECT group_concat(COALESCE(CAST(day AS TEXT), '') || ',' || lane || ',' || n, ';') FROM ({sql})", params
    ).fetchone()[0]
    rows = []
    for item in (packed or "").split(";") if packed else ():
        d, kind, n = item.split(",")
        rows.append((int(d) if d else None, int(kind), int(n)))
    return rows


def event_day_counts(namespace: str, flt: EventFilter = EventFilter()) -> DayCounts:
    """Events per day and lane of the filtered timeline: one grouped query over the filter."""
    ns = get_namespace(namespace)
    chron = EVENT_CHRONOLOGY
    # Integer division of an integer epoch gives the day on SQLite and PostgreSQL alike.
    day = chron.cast("INTEGER") / 86400
    lane = Case(None, [(Event.happened_start_ts.is_null(False), 0), (Event.mentioned_ts.is_null(False), 1)], 2)
    query = _filtered(Event.select(day.alias("day"), lane.alias("lane"), fn.COUNT(Event.id).alias("n")), ns, flt)
    query = query.group_by(day, lane)
    dated: list[tuple[int, int]] = []
    undated: list[tuple[int, int]] = []
    timeless = 0
    for d, kind, n in _grouped_rows(query):
        if kind == 2 or d is None:
            timeless += n
        else:
            (dated if kind == 0 else undated).append((int(d), n))
    return DayCounts(tuple(sorted(dated)), tuple(sorted(undated)), timeless)


def histogram_of(counts: DayCounts, lane: str = "all", buckets: int = 60) -> Histogram:
    """The histogram of one lane (``all``, ``dated`` or ``undated``) of ``counts``, in
    ``buckets`` equal spans from its first to its last day."""
    if lane not in LANES:
        raise InvalidInputError(f"lane must be one of {', '.join(LANES)}, got {lane!r}")
    buckets = max(1, min(int(buckets), 500))
    dated = counts.dated if lane != "undated" else ()
    undated = counts.undated if lane != "dated" else ()
    n_dated = sum(n for _, n in dated)
    n_undated = sum(n for _, n in undated) + (counts.timeless if lane != "dated" else 0)
    per_day: dict[int, int] = {}
    for d, n in (*dated, *undated):
        per_day[d] = per_day.get(d, 0) + n
    if not per_day:
        return Histogram(None, None, (0,) * buckets, n_dated, n_undated, n_dated + n_undated)
    first, last = min(per_day), max(per_day)
    span = last - first + 1
    out = [0] * buckets
    for d, n in per_day.items():
        out[min(buckets - 1, (d - first) * buckets // span)] += n
    return Histogram(first * DAY, (last + 1) * DAY, tuple(out), n_dated, n_undated, n_dated + n_undated)


def event_histogram(namespace: str, flt: EventFilter = EventFilter(), buckets: int = 60) -> Histogram:
    """Counts per time bucket for the filtered timeline, from one aggregate by day."""
    return histogram_of(event_day_counts(namespace, flt), "all", buckets)


@dataclass(frozen=True)
class WeightStep:
    """One thing that changed an event's weight (formed, used, superseded, …)."""

    at: str | None
    what: str


@dataclass(frozen=True)
class WeightInfo:
    weight: float
    floor: float
    cap: float | None
    pinned: bool
    mention_count: int
    formed_turn: int
    last_adopted_turn: int
    current_turn: int
    history: tuple[WeightStep, ...] = field(default_factory=tuple)


def event_weight_info(event_id: int, max_uses: int = 50) -> WeightInfo:
    """The event's current weight, what it is made of, and the recorded uses behind it."""
    event = Event.get_or_none(Event.id == event_id)
    if event is None:
        raise NotFoundError(f"event {event_id} does not exist")
    ns = Namespace.get_by_id(event.namespace_id)
    steps = [
        WeightStep(
            event.created_at,
            f"formed at turn {event.formed_turn} ({event.origin}, {event.criticality}: floor {event.floor_weight:g})",
        )
    ]
    needle = str(event_id)
    receipts = (
        UsageReceipt.select(UsageReceipt, RetrievalBatch.sequence)
        .join(RetrievalBatch, JOIN.LEFT_OUTER)
        .where((UsageReceipt.namespace == ns) & fn.COALESCE(UsageReceipt.event_ids, "").contains(needle))
        .order_by(UsageReceipt.id)
        .limit(max_uses * 4)
    )
    uses = 0
    for receipt in receipts:
        if event_id not in (receipt.event_ids or ()):
            continue
        batch = f" from batch #{receipt.batch_id}" if receipt.batch_id else ""
        steps.append(WeightStep(receipt.created_at, f"used (receipt {receipt.receipt_id}{batch})"))
        uses += 1
        if uses >= max_uses:
            break
    if event.superseded_by:
        steps.append(
            WeightStep(
                event.updated_at,
                f"superseded by event {event.superseded_by}: capped at "
                f"{event.forced_cap if event.forced_cap is not None else '-'}",
            )
        )
    if event.status in HIDDEN_EVENT_STATUSES:
        steps.append(WeightStep(event.updated_at, f"{event.status}: weight 0"))
    if event.pinned:
        steps.append(WeightStep(event.updated_at, "pinned: weight 1"))
    return WeightInfo(
        weight=round(event_weight(event, ns.current_turn), 6),
        floor=event.floor_weight,
        cap=event.forced_cap,
        pinned=event.pinned,
        mention_count=event.mention_count,
        formed_turn=event.formed_turn,
        last_adopted_turn=event.last_adopted_turn,
        current_turn=ns.current_turn,
        history=tuple(steps),
    )


# ----------------------------------------------------------------------------- graph


@dataclass(frozen=True)
class NodePage:
    rows: tuple[NodeRow, ...]
    cursor: tuple[str, int] | None


def node_type_counts(namespace: str) -> dict[str, int]:
    """Stored current nodes per type (visibility is checked per page, not here)."""
    ns = get_namespace(namespace)
    query = (
        GraphNode.select(GraphNode.type, fn.COUNT(GraphNode.id))
        .where((GraphNode.namespace == ns) & GraphNode.status.in_(CURRENT))
        .group_by(GraphNode.type)
    )
    return dict(sorted(query.tuples()))


def node_page(
    namespace: str,
    type: str | None = None,
    query: str | None = None,
    *,
    after: tuple[str, int] | None = None,
    limit: int = 100,
) -> NodePage:
    """Visible graph nodes by name, one keyset page; ``query`` matches name or alias text.

    Visibility (a node whose every source was forgotten is hidden) is decided for the
    candidates of this page only, in a few chunked queries.
    """
    ns = get_namespace(namespace)
    limit = _limit(limit)
    needle = norm_text(query) if query and query.strip() else ""
    base = GraphNode.select().where((GraphNode.namespace == ns) & GraphNode.status.in_(CURRENT))
    if type:
        base = base.where(GraphNode.type == type)
    if needle:
        base = base.where(
            GraphNode.name_norm.contains(needle)
            | fn.LOWER(fn.COALESCE(GraphNode.aliases, "")).contains(query.strip().lower())
        )
    rows: list[NodeRow] = []
    cursor = after
    exhausted = False
    while len(rows) < limit and not exhausted:
        select = base
        if cursor is not None:
            select = select.where(
                (GraphNode.name_norm > cursor[0]) | ((GraphNode.name_norm == cursor[0]) & (GraphNode.id > cursor[1]))
            )
        # A few more than the page: views are the cost here, and a node is rarely hidden.
        want = limit - len(rows) + max(8, limit // 4)
        chunk = list(select.order_by(GraphNode.name_norm, GraphNode.id).limit(want))
        exhausted = len(chunk) < want
        views = compute_views(chunk)
        for node in chunk:
            cursor = (node.name_norm, node.id)
            view = views.get(node.id)
            if view is None or not view.visible:
                continue
            if needle and not any(needle in norm_text(v) for v in [node.name, *view.aliases]):
                continue
            rows.append(
                NodeRow(
                    id=node.id,
                    namespace=ns.name,
                    name=node.name,
                    type=node.type,
                    aliases=tuple(view.aliases),
                    facts=len(view.current_facts),
                    edges=len(view.current_edges) + len(view.historical_edges),
                    events=len(view.all_sources()),
                    events_more=view.sources_more,
                )
            )
            if len(rows) >= limit:
                exhausted = exhausted and node.id == chunk[-1].id
                break
    return NodePage(tuple(rows), None if exhausted else cursor)


def node_position(node_id: int) -> tuple[str, int] | None:
    """The keyset cursor just before ``node_id`` in the name order (to open a page at it)."""
    row = GraphNode.select(GraphNode.id, GraphNode.name_norm).where(GraphNode.id == node_id).first()
    return None if row is None else (row.name_norm, row.id - 1)


# ----------------------------------------------------------------------------- traces

_REF = re.compile(r"^[a-z-]+:[\w:.-]+$")


def trace_page(
    namespace: str, text: str = "", kind: str | None = None, *, before_id: int | None = None, limit: int = 100
) -> list[TraceRow]:
    """Traces newest first, one keyset page. ``text`` matches the query, or, when it looks
    like an evidence ref (``event:12``), the traces that returned or selected that ref."""
    ns = get_namespace(namespace)
    query = RetrievalTrace.select().where(RetrievalTrace.namespace == ns)
    if kind:
        query = query.where(RetrievalTrace.kind == kind)
    if before_id is not None:
        query = query.where(RetrievalTrace.id < before_id)
    text = text.strip()
    if text:
        if _REF.match(text):
            quoted = json.dumps(text)
            query = query.where(
                fn.COALESCE(RetrievalTrace.candidates, "").contains(f'"ref":{quoted}')
                | fn.COALESCE(RetrievalTrace.selected, "").contains(quoted)
            )
        else:
            query = query.where(all_of([RetrievalTrace.query.contains(word) for word in text_words(text)]))
    rows = list(query.order_by(RetrievalTrace.id.desc()).limit(_limit(limit)))
    return [trace_row(r, {ns.id: ns.name}) for r in rows]


# ----------------------------------------------------------------------------- jobs


def job_page(
    namespace: str | None = None, statuses: Sequence[str] = (), *, before_id: int | None = None, limit: int = 100
) -> list[JobRow]:
    """Jobs newest first, one keyset page, optionally only some statuses."""
    query = Job.select(Job, Namespace).join(Namespace)
    if namespace is not None:
        query = query.where(Job.namespace == get_namespace(namespace))
    if statuses:
        query = query.where(Job.status.in_(list(statuses)))
    if before_id is not None:
        query = query.where(Job.id < before_id)
    return [job_row(j) for j in query.order_by(Job.id.desc()).limit(_limit(limit))]


def block_jobs(block_id: int) -> list[JobRow]:
    """The derivation jobs of one block (summary, extraction), oldest first."""
    if Block.get_or_none(Block.id == block_id) is None:
        raise NotFoundError(f"block {block_id} does not exist")
    query = Job.select(Job, Namespace).join(Namespace).where(Job.block == block_id).order_by(Job.id)
    return [job_row(j) for j in query]


__all__ = [
    "DayCounts",
    "EventFilter",
    "EventPage",
    "Histogram",
    "LANES",
    "NodePage",
    "ThreadRow",
    "WeightInfo",
    "WeightStep",
    "block_jobs",
    "event_day_counts",
    "event_histogram",
    "histogram_of",
    "event_page",
    "event_position",
    "event_weight_info",
    "job_page",
    "list_threads",
    "namespace_names",
    "node_page",
    "node_position",
    "node_type_counts",
    "trace_page",
]
