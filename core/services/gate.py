"""The evidence gate: retrieval batches, their assessment and the use receipt that closes them.

Every retrieval an agent makes opens a *batch* that lists the evidence refs it returned
(``event:12``, ``graph-node:3``, ``raw:4:88:7``, ``block:4:level:2``). The agent then
assesses the batch with five bounded fields (§8.1) and closes it with ``record_use``
(§8.2). Only refs adopted by a ``sufficient`` assessment and then actually used
reinforce memory (§9.1); searching never changes weight.

Batches are rows, so an unresolved batch survives a restart (the reference kept them in
memory). Two loop rules the reference left to its benchmark harness are enforced here
(§8.3): a per-session round budget, and strategy switching — a channel whose last batch
in the current round added no new evidence may not be queried again in that round.

A *round* is the run of a scope's batches opened after its last recorded batch. The
scope is the session, or — for batches opened without one — the namespace's
session-less batches.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from peewee import fn

from core.db import is_row_id, write_transaction
from core.errors import InvalidInputError, NotFoundError, ReceiptConflictError, StrataError
from core.models import (
    LIVE,
    BatchRef,
    Event,
    GraphEdge,
    GraphNode,
    Namespace,
    RetrievalBatch,
    UsageReceipt,
)
from core.redact import redact_text
from core.services.graph import newest_sources
from core.services.associations import reinforce
from core.services.spaces import bump_revision, get_namespace
from core.services.traces import record_trace
from core.timeutil import now_iso
from core.vocab import HIDDEN_EVENT_STATUSES

# ----------------------------------------------------------------------------- vocabulary

STRATEGIES = (
    "answer",
    "search_events",
    "expand_event",
    "search_graph",
    "expand_graph_node",
    "search_raw_memory",
    "expand_block",
    "get_blocks",
)

# Which retrieval channel each strategy uses ("answer" retrieves nothing).
CHANNEL_OF_STRATEGY: dict[str, str] = {
    "search_events": "events",
    "expand_event": "event_detail",
    "search_graph": "graph",
    "expand_graph_node": "graph_detail",
    "search_raw_memory": "raw",
    "expand_block": "block_detail",
    "get_blocks": "blocks",
}
STRATEGY_OF_CHANNEL: dict[str, str] = {c: s for s, c in CHANNEL_OF_STRATEGY.items()}
CHANNELS = tuple(CHANNEL_OF_STRATEGY.values())

# Expansions read one named target. Re-reading a ref seen earlier adds no *new* ref, yet
# expanding a different target is real progress, so for these channels only a repeat of
# the same target after a zero-delta batch is refused.
DETAIL_CHANNELS = frozenset({"event_detail", "graph_detail", "block_detail"})

# Where to go next when a channel is spent, best first.
SWITCH_ORDER: dict[str, tuple[str, ...]] = {
    "events": ("search_raw_memory", "search_graph", "get_blocks"),
    "graph": ("search_events", "search_raw_memory", "get_blocks"),
    "raw": ("search_events", "search_graph", "get_blocks"),
    "blocks": ("search_raw_memory", "search_events", "search_graph"),
    "event_detail": ("search_raw_memory", "search_graph", "search_events"),
    "graph_detail": ("search_events", "search_raw_memory", "search_graph"),
    "block_detail": ("search_raw_memory", "search_events", "search_graph"),
}

VERDICTS = ("sufficient", "partial", "wrong")
DEFAULT_BUDGET = 4
MAX_ACCEPTED_REFS = 8
TEXT_LIMIT = 160
DEFAULT_MISSING = "Direct evidence required to answer the question is still missing."
OPEN_STATUSES = ("unresolved", "assessed")
INELIGIBLE = HIDDEN_EVENT_STATUSES
MAX_REF_CHARS = 255

# ----------------------------------------------------------------------------- errors


class BudgetExhaustedError(StrataError):
    """The session used its retrieval rounds; the agent must answer with what it has."""

    def __init__(self, message: str, *, session: str | None, budget: int, open_batch_ids: Sequence[int]):
        super().__init__(message)
        self.session = session
        self.budget = budget
        self.open_batch_ids = tuple(open_batch_ids)


class StrategyRepeatError(StrataError):
    """The channel's previous batch in this round added no new evidence."""

    def __init__(self, message: str, *, channel: str, batch_id: int, alternatives: Sequence[str]):
        super().__init__(message)
        self.channel = channel
        self.batch_id = batch_id
        self.alternatives = tuple(alternatives)


class BatchClosedError(StrataError):
    """The batch already has a use receipt; it cannot be assessed or recorded again."""


class UseRefusedError(StrataError):
    """``record_use`` found problems with the refs; nothing was recorded."""

    def __init__(
        self,
        message: str,
        *,
        batch_id: int,
        batch_status: str,
        issues: Sequence["UseIssue"],
        duplicate_refs: Sequence[str],
        available_refs: Sequence[str],
        adopted_refs: Sequence[str],
    ):
        super().__init__(message)
        self.batch_id = batch_id
        self.batch_status = batch_status
        self.issues = tuple(issues)
        self.duplicate_refs = tuple(duplicate_refs)
        self.available_refs = tuple(available_refs)
        self.adopted_refs = tuple(adopted_refs)


# ----------------------------------------------------------------------------- data


class RefSpec(NamedTuple):
    """One evidence ref a retrieval returned, before it is stored on a batch.

    ``event_ids`` are the events a recorded use of this ref reinforces (none for raw and
    block refs). ``score``/``components`` only feed the retrieval trace.
    """

    ref: str
    event_ids: Sequence[int] = ()
    citation: Mapping[str, Any] | None = None
    score: float | None = None
    components: Mapping[str, float] | None = None


@dataclass(frozen=True)
class BatchRefInfo:
    ref: str
    position: int
    event_ids: tuple[int, ...]
    citation: dict[str, Any] | None


@dataclass(frozen=True)
class ReceiptInfo:
    receipt_id: str
    event_ids: tuple[int, ...]
    audit: dict[str, Any] | None
    created_at: str


@dataclass(frozen=True)
class BatchInfo:
    id: int
    namespace: str
    session: str | None
    sequence: int
    channel: str
    query: str
    params: dict[str, Any] | None
    status: str  # unresolved | assessed | recorded
    new_refs: int
    refs: tuple[BatchRefInfo, ...]
    assessment: dict[str, Any] | None  # the stored normalized assessment (see Assessment.to_json)
    receipt: ReceiptInfo | None
    created_at: str
    updated_at: str

    @property
    def label(self) -> str:
        return batch_label(self.id)

    @property
    def available_refs(self) -> tuple[str, ...]:
        return tuple(r.ref for r in self.refs)

    @property
    def adopted_refs(self) -> tuple[str, ...]:
        """Refs a later ``record_use`` may cite: those of a sufficient assessment."""
        return _adopted(self.assessment)


@dataclass(frozen=True)
class RejectedRef:
    input_index: int
    ref: Any
    reason: str  # invalid_ref | duplicate | not_in_batch | limit_exceeded
    detail: str


@dataclass(frozen=True)
class Assessment:
    batch_id: int
    batch_status: str
    latest_batch_id: int | None
    verdict: str
    requested_verdict: str
    evidence_refs: tuple[str, ...]
    rejected_evidence_refs: tuple[RejectedRef, ...]
    fit: str
    missing: str
    next_strategy: str
    strategy_rewritten_from: str | None
    notes: tuple[str, ...]
    unresolved_batch_ids: tuple[int, ...]
    assessed_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "requested_verdict": self.requested_verdict,
            "evidence_refs": list(self.evidence_refs),
            "rejected_evidence_refs": [
                {"input_index": r.input_index, "ref": r.ref, "reason": r.reason, "detail": r.detail}
                for r in self.rejected_evidence_refs
            ],
            "fit": self.fit,
            "missing": self.missing,
            "next_strategy": self.next_strategy,
            "strategy_rewritten_from": self.strategy_rewritten_from,
            "notes": list(self.notes),
            "assessed_at": self.assessed_at,
        }


@dataclass(frozen=True)
class UseIssue:
    input_index: int
    ref: Any
    reason: str  # invalid_ref | not_in_batch | not_adopted
    detail: str


@dataclass(frozen=True)
class UseResult:
    batch_id: int
    receipt_id: str
    batch_status: str
    evidence_refs: tuple[str, ...]  # the distinct refs used
    duplicate_refs: tuple[str, ...]
    event_ids: tuple[int, ...]  # events reinforced (eligible ones only)
    incremented: int
    citations: tuple[dict[str, Any], ...]  # citations of the used refs
    retrieved: tuple[dict[str, Any], ...]  # citations of every ref the batch returned
    unresolved_batch_ids: tuple[int, ...]
    replayed: bool = False


# ----------------------------------------------------------------------------- ref builders


def event_ref(event_id: int) -> str:
    return f"event:{int(event_id)}"


def node_ref(node_id: int, expanded: bool = False) -> str:
    return f"graph-node:{int(node_id)}" + (":expanded" if expanded else "")


def raw_ref(block_id: int | None, message_id: int, index: int) -> str:
    """``raw:<block>:<message>:<index>``; block 0 for a message still in an open tail."""
    return f"raw:{int(block_id or 0)}:{int(message_id)}:{int(index)}"


def block_ref(block_id: int, level: int) -> str:
    return f"block:{int(block_id)}:level:{int(level)}"


def batch_label(batch_id: int) -> str:
    return f"batch_{batch_id}"


def refs_for_events(items: Iterable[Any]) -> list[RefSpec]:
    """Refs for event search hits, event rows/cards or bare ids (each maps to its own event)."""
    parsed = []
    for item in items:
        score = getattr(item, "rank_score", None)
        if hasattr(item, "event"):
            item = item.event
        if isinstance(item, int) and not isinstance(item, bool):
            parsed.append((item, None, None, score))
        else:
            parsed.append((item.id, getattr(item, "title", None), getattr(item, "weight", None), score))
    missing = [i for i, title, _, _ in parsed if title is None]
    titles = dict(Event.select(Event.id, Event.title).where(Event.id.in_(missing)).tuples()) if missing else {}
    out = []
    for event_id, title, weight, score in parsed:
        title = title if title is not None else titles.get(event_id)
        components = {k: v for k, v in (("rrf", score), ("weight", weight)) if v is not None}
        out.append(
            RefSpec(
                event_ref(event_id),
                (event_id,),
                {"kind": "event", "id": event_id, "title": title, "detail_kind": "event_id"},
                score,
                components,
            )
        )
    return out


NODE_REF_EVENTS = 64  # newest live sources a node ref stands for (and as many more from its edges when expanded)


def _node_event_ids(node_ids: Sequence[int], expanded: bool) -> dict[int, list[int]]:
    """Live source events behind each node (plus its edges' sources when expanded), newest first:
    the newest NODE_REF_EVENTS of each. A person named in 38,000 events of a million messages is
    not evidence 38,000 times over; reading and later reinforcing them all took over a second per
    graph search."""

    out: dict[int, list[int]] = {}
    for node_id in dict.fromkeys(node_ids):
        own = set(newest_sources("node", node_id, LIVE, NODE_REF_EVENTS))
        if expanded:
            edges = GraphEdge.select(GraphEdge.id).where(
                (GraphEdge.from_node == node_id) | (GraphEdge.to_node == node_id)
            )
            around = {
                e for (edge_id,) in edges.tuples() for e in newest_sources("edge", edge_id, LIVE, NODE_REF_EVENTS)
            }
            own |= set(sorted(around, reverse=True)[:NODE_REF_EVENTS])
        out[node_id] = sorted(own, reverse=True)
    return out


def refs_for_nodes(items: Iterable[Any], *, expanded: bool = False) -> list[RefSpec]:
    """Refs for graph nodes (views, rows, search hits with ``.node`` or ``.node_id``, or ids).

    A node ref maps to the node's own live source events; an expanded ref also to the
    sources of the node's edges (§7.7)."""
    nodes: list[tuple[int, str | None, float | None]] = []
    for item in items:
        score = getattr(item, "rank_score", getattr(item, "score", None))
        if hasattr(item, "node"):
            item = item.node
        if isinstance(item, int) and not isinstance(item, bool):
            nodes.append((item, None, score))
        elif hasattr(item, "node_id"):  # a search_graph hit
            nodes.append((item.node_id, getattr(item, "name", None), score))
        else:
            nodes.append((item.id, getattr(item, "name", None), score))
    missing = [i for i, name, _ in nodes if name is None]
    names = (
        dict(GraphNode.select(GraphNode.id, GraphNode.name).where(GraphNode.id.in_(missing)).tuples())
        if missing
        else {}
    )
    events = _node_event_ids([i for i, _, _ in nodes], expanded)
    out = []
    for node_id, name, score in nodes:
        out.append(
            RefSpec(
                node_ref(node_id, expanded),
                tuple(events.get(node_id, ())),
                {
                    "kind": "graph",
                    "id": node_id,
                    "title": name if name is not None else names.get(node_id),
                    "detail_kind": "node_id",
                    "expanded": expanded,
                },
                score,
                {"bm25": score} if score is not None else {},
            )
        )
    return out


def refs_for_raw(hits: Iterable[Any]) -> list[RefSpec]:
    """Refs for raw-message hits; the index is the message's position in its thread.
    Raw refs carry no events: using raw evidence reinforces nothing."""
    out = []
    for hit in hits:
        message = hit.message
        snippet = " ".join(message.content.split())[:80]
        out.append(
            RefSpec(
                raw_ref(hit.block_id, message.id, message.position),
                (),
                {
                    "kind": "raw",
                    "id": message.id,
                    "title": snippet,
                    "detail_kind": "message_id",
                    "block_id": hit.block_id,
                    "thread": message.thread,
                },
                hit.score,
                {"bm25": hit.score},
            )
        )
    return out


def refs_for_blocks(views: Iterable[Any]) -> list[RefSpec]:
    """Refs for rendered blocks (``BlockView``); block refs carry no events."""
    out = []
    for view in views:
        out.append(
            RefSpec(
                block_ref(view.id, view.level),
                (),
                {
                    "kind": "block",
                    "id": view.id,
                    "title": f"{view.thread} turns {view.start_turn}-{view.end_turn}",
                    "detail_kind": "block_id",
                    "level": view.level,
                },
            )
        )
    return out


# ----------------------------------------------------------------------------- helpers


def _session(session: object) -> str | None:
    if session is None:
        return None
    if not isinstance(session, str) or not session.strip() or len(session) > 255:
        raise InvalidInputError(f"session must be a non-empty string of at most 255 characters, got {session!r}")
    return session


def normalize_channel(channel: object) -> str:
    """A channel name, also accepting the strategy that uses it (``search_events`` → ``events``)."""
    if isinstance(channel, str):
        if channel in CHANNEL_OF_STRATEGY.values():
            return channel
        if channel in CHANNEL_OF_STRATEGY:
            return CHANNEL_OF_STRATEGY[channel]
    raise InvalidInputError(f"channel must be one of {', '.join(CHANNELS)} (or a retrieval strategy), got {channel!r}")


def _parse_batch_id(value: object) -> int:
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        match = re.fullmatch(r"\s*(?:batch_)?(\d+)\s*", value)
        if match:
            number = int(match.group(1))
    if number is None:
        raise InvalidInputError(f"batch_id must be a batch id like 12 or 'batch_12', got {value!r}")
    if not is_row_id(number):
        raise NotFoundError(f"retrieval batch {value!r} does not exist")
    return number


def _json_safe(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, sort_keys=True))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be JSON-serializable: {exc}") from exc


def _specs(refs: Iterable[Any]) -> list[RefSpec]:
    out: dict[str, RefSpec] = {}
    for index, item in enumerate(refs or ()):
        if isinstance(item, str):
            item = RefSpec(item)
        elif not isinstance(item, RefSpec):
            if not isinstance(item, (tuple, list)) or not 1 <= len(item) <= 5:
                raise InvalidInputError(
                    f"refs[{index}]: expected a RefSpec or (ref, event_ids, citation), got {item!r}"
                )
            item = RefSpec(*item)
        ref = item.ref.strip() if isinstance(item.ref, str) else ""
        if not ref or len(ref) > MAX_REF_CHARS:
            raise InvalidInputError(
                f"refs[{index}]: ref must be a non-empty string of at most {MAX_REF_CHARS} characters"
            )
        ids = list(item.event_ids or ())
        if any(not isinstance(i, int) or isinstance(i, bool) for i in ids):
            raise InvalidInputError(f"refs[{index}]: event_ids must be integers, got {ids!r}")
        if ref not in out:
            out[ref] = item._replace(ref=ref, event_ids=tuple(dict.fromkeys(ids)))
    return list(out.values())


def _scope(namespace_id: int, session: str | None):
    cond = RetrievalBatch.namespace == namespace_id
    return cond & (RetrievalBatch.session.is_null() if session is None else RetrievalBatch.session == session)


def _round(namespace_id: int, session: str | None) -> list[RetrievalBatch]:
    """Open batches of the scope opened after its last recorded batch, oldest first."""
    scope = _scope(namespace_id, session)
    last = (
        RetrievalBatch.select(fn.MAX(RetrievalBatch.sequence))
        .where(scope & (RetrievalBatch.status == "recorded"))
        .scalar()
    ) or 0
    return list(
        RetrievalBatch.select().where(scope & (RetrievalBatch.sequence > last)).order_by(RetrievalBatch.sequence)
    )


def _spent(round_batches: Sequence[RetrievalBatch]) -> dict[str, RetrievalBatch]:
    """Channels whose latest batch in the round added no new ref (detail channels excluded)."""
    latest: dict[str, RetrievalBatch] = {}
    for batch in round_batches:
        latest[batch.channel] = batch
    return {c: b for c, b in latest.items() if b.new_refs == 0 and c not in DETAIL_CHANNELS}


def _alternatives(channel: str, spent: Iterable[str]) -> list[str]:
    blocked = set(spent) | {channel}
    order = SWITCH_ORDER.get(channel, ("search_events", "search_raw_memory", "search_graph"))
    fresh = [s for s in order if CHANNEL_OF_STRATEGY[s] not in blocked]
    return fresh or list(order)


def _refs_of(batch_ids: Sequence[int]) -> dict[int, list[BatchRef]]:
    out: dict[int, list[BatchRef]] = {i: [] for i in batch_ids}
    if batch_ids:
        for row in BatchRef.select().where(BatchRef.batch.in_(list(batch_ids))).order_by(BatchRef.position):
            out[row.batch_id].append(row)
    return out


def _check(
    ns: Namespace,
    channel: str,
    session: str | None,
    refs: Sequence[str] | None,
    budget: int | None,
    round_batches: Sequence[RetrievalBatch],
) -> None:
    who = f"session {session!r}" if session is not None else f"namespace {ns.name!r} (no session)"
    if budget is not None and len(round_batches) >= budget:
        ids = [b.id for b in round_batches]
        raise BudgetExhaustedError(
            f"retrieval budget exhausted: {who} already opened {len(round_batches)} retrieval batches "
            f"(budget {budget}) since its last recorded use. Do not search again: answer now with explicit "
            f"uncertainty, "
            f"using only the evidence you already have and saying what is still missing, and close the open batches "
            f"with record_use ({', '.join(batch_label(i) for i in ids)}).",
            session=session,
            budget=budget,
            open_batch_ids=ids,
        )
    previous = next((b for b in reversed(round_batches) if b.channel == channel), None)
    if previous is None or previous.new_refs != 0:
        return
    if channel in DETAIL_CHANNELS:
        seen = {r.ref for r in _refs_of([previous.id])[previous.id]}
        if refs is None or not set(refs) <= seen:
            return
    spent = _spent(round_batches)
    alternatives = _alternatives(channel, spent)
    what = "that same target" if channel in DETAIL_CHANNELS else f"the {channel!r} channel"
    raise StrategyRepeatError(
        f"strategy switch required: the previous {channel!r} batch of {who} ({batch_label(previous.id)}) "
        f"added no new evidence, so {what} may not be queried again in this round. "
        f"Switch strategy: try {', '.join(alternatives)}.",
        channel=channel,
        batch_id=previous.id,
        alternatives=alternatives,
    )


def check_batch_allowed(
    namespace: str,
    channel: str,
    refs: Sequence[str] | None = None,
    *,
    session: str | None = None,
    budget: int | None = DEFAULT_BUDGET,
) -> None:
    """Raise BudgetExhaustedError / StrategyRepeatError if ``open_batch`` would refuse.

    Call it before a retrieval that writes (``expand_block`` re-anchors decay), so a
    refused batch changes nothing. ``refs`` (the target refs) matter for expansions only.
    """
    ns = get_namespace(namespace)
    session = _session(session)
    channel = normalize_channel(channel)
    _check(ns, channel, session, list(refs) if refs is not None else None, budget, _round(ns.id, session))


# ----------------------------------------------------------------------------- batches


def _adopted(assessment: Mapping[str, Any] | None) -> tuple[str, ...]:
    if not assessment or assessment.get("verdict") != "sufficient":
        return ()
    return tuple(assessment.get("evidence_refs") or ())


def _info(batch: RetrievalBatch, ns_name: str | None = None, refs: list[BatchRef] | None = None) -> BatchInfo:
    if ns_name is None:
        ns_name = Namespace.get_by_id(batch.namespace_id).name
    if refs is None:
        refs = _refs_of([batch.id])[batch.id]
    receipt = UsageReceipt.select().where(UsageReceipt.batch == batch.id).order_by(UsageReceipt.id).first()
    return BatchInfo(
        id=batch.id,
        namespace=ns_name,
        session=batch.session,
        sequence=batch.sequence,
        channel=batch.channel,
        query=batch.query,
        params=batch.params,
        status=batch.status,
        new_refs=batch.new_refs,
        refs=tuple(BatchRefInfo(r.ref, r.position, tuple(r.event_ids or ()), r.citation) for r in refs),
        assessment=batch.assessment,
        receipt=ReceiptInfo(receipt.receipt_id, tuple(receipt.event_ids or ()), receipt.audit, receipt.created_at)
        if receipt is not None
        else None,
        created_at=batch.created_at,
        updated_at=batch.updated_at,
    )


def get_batch(batch_id: int | str) -> BatchInfo:
    """A batch with its refs, assessment and receipt."""
    batch = RetrievalBatch.get_or_none(RetrievalBatch.id == _parse_batch_id(batch_id))
    if batch is None:
        raise NotFoundError(f"retrieval batch {batch_id!r} does not exist")
    return _info(batch)


def unresolved_batches(namespace: str, session: str | None = None) -> list[BatchInfo]:
    """Batches not yet closed by ``record_use`` (unresolved or assessed), oldest first.

    ``session=None`` lists every session of the namespace."""
    ns = get_namespace(namespace)
    query = RetrievalBatch.select().where((RetrievalBatch.namespace == ns) & RetrievalBatch.status.in_(OPEN_STATUSES))
    if session is not None:
        query = query.where(RetrievalBatch.session == session)
    batches = list(query.order_by(RetrievalBatch.sequence))
    refs = _refs_of([b.id for b in batches])
    return [_info(b, ns.name, refs[b.id]) for b in batches]


def _open_ids(namespace_id: int, session: str | None) -> tuple[int, ...]:
    return tuple(
        i
        for (i,) in RetrievalBatch.select(RetrievalBatch.id)
        .where(_scope(namespace_id, session) & RetrievalBatch.status.in_(OPEN_STATUSES))
        .order_by(RetrievalBatch.sequence)
        .tuples()
    )


def open_batch(
    namespace: str,
    channel: str,
    query: str,
    refs: Sequence[RefSpec | tuple | str],
    *,
    session: str | None = None,
    params: Mapping[str, Any] | None = None,
    budget: int | None = DEFAULT_BUDGET,
    elapsed_ms: float = 0.0,
    excluded: Sequence[Mapping[str, str]] = (),
    not_recalled: Sequence[Mapping[str, Any]] = (),
) -> BatchInfo:
    """Persist one retrieval as a batch (and its refs) and write a ``search`` trace.

    Refused before any write when the round budget is used up (BudgetExhaustedError) or
    the channel's previous batch in this round added no new ref (StrategyRepeatError).
    ``channel`` is a channel name or the strategy that uses it. ``budget=None`` disables
    the round cap (tests, batch tools that are not agent loops). ``excluded`` lists what the search
    withheld, each ``{"ref", "reason"}`` with a reason code; ``not_recalled`` the best few ranked
    below the cut (``{"ref", "score", "reason"}``); the trace keeps both.
    """
    channel = normalize_channel(channel)
    session = _session(session)
    if budget is not None and (not isinstance(budget, int) or budget < 1):
        raise InvalidInputError(f"budget must be a positive integer or None, got {budget!r}")
    specs = _specs(refs)
    params = _json_safe(dict(params), "params") if params is not None else None
    query = query if isinstance(query, str) else ""
    with write_transaction():
        ns = get_namespace(namespace)
        round_batches = _round(ns.id, session)
        _check(ns, channel, session, [s.ref for s in specs], budget, round_batches)
        seen = {r.ref for rows in _refs_of([b.id for b in round_batches]).values() for r in rows}
        new_refs = sum(1 for s in specs if s.ref not in seen)
        sequence = (
            RetrievalBatch.select(fn.MAX(RetrievalBatch.sequence)).where(RetrievalBatch.namespace == ns).scalar() or 0
        ) + 1
        now = now_iso()
        batch = RetrievalBatch.create(
            namespace=ns,
            session=session,
            sequence=sequence,
            channel=channel,
            query=query,
            params=params,
            status="unresolved",
            new_refs=new_refs,
            created_at=now,
            updated_at=now,
        )
        if specs:
            rows = []
            for position, spec in enumerate(specs):
                citation = _json_safe(dict(spec.citation or {}), f"citation of {spec.ref}")
                citation.update(evidence_ref=spec.ref, batch_id=batch.id)
                rows.append(
                    {
                        "batch": batch.id,
                        "ref": spec.ref,
                        "position": position,
                        "event_ids": list(spec.event_ids),
                        "citation": citation,
                    }
                )
            BatchRef.insert_many(rows).execute()
        record_trace(
            ns.id,
            "search",
            batch_id=batch.id,
            channel=channel,
            query=query,
            candidates=[{"ref": s.ref, "score": s.score, "components": dict(s.components or {})} for s in specs],
            selected=[s.ref for s in specs],
            detail={
                "session": session,
                "sequence": sequence,
                "new_refs": new_refs,
                "params": params,
                "round_position": len(round_batches) + 1,
                "budget": budget,
                **({"excluded": [dict(e) for e in excluded]} if excluded else {}),
                **({"not_recalled": [dict(e) for e in not_recalled]} if not_recalled else {}),
            },
            elapsed_ms=elapsed_ms,
        )
    return get_batch(batch.id)


def _resolve(ns: Namespace, batch_id: object, session: str | None) -> RetrievalBatch:
    if batch_id is None:
        batch = RetrievalBatch.select().where(_scope(ns.id, session)).order_by(RetrievalBatch.sequence.desc()).first()
        if batch is None:
            who = f"session {session!r}" if session is not None else "this namespace (no session)"
            raise NotFoundError(f"no retrieval batch exists for {who}; search first")
        return batch
    batch = RetrievalBatch.get_or_none(
        (RetrievalBatch.id == _parse_batch_id(batch_id)) & (RetrievalBatch.namespace == ns)
    )
    if batch is None:
        raise NotFoundError(f"retrieval batch {batch_id!r} does not exist in namespace {ns.name!r}")
    return batch


# ----------------------------------------------------------------------------- assessment


def _clean_text(value: object) -> str:
    if not isinstance(value, str):
        return ""
    # An agent's own words, kept as a note: a secret in them is masked before the cut leaves half of it.
    return " ".join(redact_text(value).split())[:TEXT_LIMIT].strip()


def _as_list(value: object, what: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return list(value)
    raise InvalidInputError(f"{what} must be a list of evidence refs, got {type(value).__name__}")


def _shown(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int, float, bool)) else repr(value)


def normalize_assessment(
    verdict: object,
    evidence_refs: object,
    fit: object,
    missing: object,
    next_strategy: object,
    available: Sequence[str],
) -> dict[str, Any]:
    """§8.1 rules 1–6, pure: the normalized fields plus rejected refs and notes."""
    requested = verdict if verdict in VERDICTS else "partial"
    available_set = set(available)
    accepted: list[str] = []
    rejected: list[RejectedRef] = []
    first_seen: dict[str, int] = {}
    for index, raw in enumerate(_as_list(evidence_refs, "evidence_refs")):
        ref = raw.strip() if isinstance(raw, str) else ""
        if not ref:
            rejected.append(
                RejectedRef(index, _shown(raw), "invalid_ref", "an evidence ref must be a non-empty string")
            )
        elif ref in first_seen:
            rejected.append(RejectedRef(index, ref, "duplicate", f"already listed at index {first_seen[ref]}"))
        elif ref not in available_set:
            first_seen[ref] = index
            rejected.append(RejectedRef(index, ref, "not_in_batch", "the assessed batch did not return this ref"))
        elif len(accepted) >= MAX_ACCEPTED_REFS:
            first_seen[ref] = index
            rejected.append(RejectedRef(index, ref, "limit_exceeded", f"at most {MAX_ACCEPTED_REFS} refs are accepted"))
        else:
            first_seen[ref] = index
            accepted.append(ref)
    strategy = next_strategy if next_strategy in STRATEGIES else "search_events"
    notes: list[str] = []
    if next_strategy not in STRATEGIES:
        notes.append(f"unknown next_strategy {next_strategy!r} replaced by 'search_events'")
    sufficient = requested == "sufficient" and bool(accepted) and strategy == "answer"
    if requested == "sufficient" and not sufficient:
        why = "no accepted evidence ref" if not accepted else "next_strategy is not 'answer'"
        notes.append(f"verdict 'sufficient' downgraded to 'partial': {why}")
    final = "sufficient" if sufficient else ("wrong" if requested == "wrong" else "partial")
    cleaned_missing = _clean_text(missing)
    if sufficient:
        cleaned_missing, strategy = "", "answer"
    else:
        cleaned_missing = cleaned_missing or DEFAULT_MISSING
        if strategy == "answer":
            strategy = "search_events"
            notes.append("next_strategy 'answer' needs a sufficient verdict; replaced by 'search_events'")
    return {
        "verdict": final,
        "requested_verdict": verdict if isinstance(verdict, str) else repr(verdict),
        "evidence_refs": accepted,
        "rejected": rejected,
        "fit": _clean_text(fit),
        "missing": cleaned_missing,
        "next_strategy": strategy,
        "notes": notes,
    }


def assess(
    namespace: str,
    batch_id: int | str | None,
    verdict: str,
    evidence_refs: Sequence[str],
    fit: str = "",
    missing: str = "",
    next_strategy: str = "search_events",
    *,
    session: str | None = None,
) -> Assessment:
    """Normalize and store the agent's assessment of a batch (status ``assessed``).

    ``batch_id=None`` picks the latest batch of the session (or of the session-less
    batches). Re-assessing an assessed batch replaces its assessment; a recorded batch
    raises BatchClosedError. When the verdict is not sufficient and ``next_strategy``
    would repeat a spent channel, it is rewritten to another channel
    (``strategy_rewritten_from`` says which one was asked for).
    """
    session = _session(session)
    with write_transaction():
        ns = get_namespace(namespace)
        batch = _resolve(ns, batch_id, session)
        if batch.status == "recorded":
            raise BatchClosedError(
                f"{batch_label(batch.id)} was already closed by record_use; it cannot be assessed again. "
                "Search again for a new batch."
            )
        refs = _refs_of([batch.id])[batch.id]
        result = normalize_assessment(verdict, evidence_refs, fit, missing, next_strategy, [r.ref for r in refs])
        notes = list(result["notes"])
        rewritten_from = None
        strategy = result["next_strategy"]
        target = CHANNEL_OF_STRATEGY.get(strategy)
        if result["verdict"] != "sufficient" and target is not None and target not in DETAIL_CHANNELS:
            spent = _spent(_round(ns.id, batch.session))
            own_empty = target == batch.channel and batch.new_refs == 0
            if target in spent or own_empty:
                blocked = set(spent) | ({batch.channel} if batch.new_refs == 0 else set())
                replacement = _alternatives(target, blocked)[0]
                rewritten_from, strategy = strategy, replacement
                notes.append(
                    f"next_strategy {rewritten_from!r} rewritten to {replacement!r}: the {target!r} "
                    "channel added no new evidence in this round; switch channel"
                )
        now = now_iso()
        assessment = Assessment(
            batch_id=batch.id,
            batch_status="assessed",
            latest_batch_id=None,
            verdict=result["verdict"],
            requested_verdict=result["requested_verdict"],
            evidence_refs=tuple(result["evidence_refs"]),
            rejected_evidence_refs=tuple(result["rejected"]),
            fit=result["fit"],
            missing=result["missing"],
            next_strategy=strategy,
            strategy_rewritten_from=rewritten_from,
            notes=tuple(notes),
            unresolved_batch_ids=(),
            assessed_at=now,
        )
        stored = _json_safe(assessment.to_json(), "assessment")
        RetrievalBatch.update(assessment=stored, status="assessed", updated_at=now).where(
            RetrievalBatch.id == batch.id
        ).execute()
        record_trace(
            ns.id,
            "assess",
            batch_id=batch.id,
            channel=batch.channel,
            query=batch.query,
            selected=list(assessment.evidence_refs),
            verdict=assessment.verdict,
            detail={k: v for k, v in stored.items() if k not in ("evidence_refs", "verdict")},
        )
        latest = (
            RetrievalBatch.select(RetrievalBatch.id)
            .where(_scope(ns.id, batch.session))
            .order_by(RetrievalBatch.sequence.desc())
            .scalar()
        )
        open_ids = _open_ids(ns.id, batch.session)
    return Assessment(**{**assessment.__dict__, "latest_batch_id": latest, "unresolved_batch_ids": open_ids})


# ----------------------------------------------------------------------------- use receipts


def _audit_payload(batch: RetrievalBatch, refs: Sequence[str], audit: Mapping[str, Any] | None) -> dict[str, Any]:
    payload = dict(audit or {})
    payload["batch_id"] = batch.id
    payload["evidence_refs"] = list(refs)
    assessment = batch.assessment or {}
    payload.setdefault("session", batch.session)
    for key in ("verdict", "fit", "missing", "next_strategy"):
        payload.setdefault(key, assessment.get(key))
    return _json_safe(payload, "audit")


def _citations(rows: Sequence[BatchRef], refs: Iterable[str] | None = None) -> tuple[dict[str, Any], ...]:
    by_ref = {r.ref: r for r in rows}
    chosen = [by_ref[r] for r in refs if r in by_ref] if refs is not None else list(rows)
    return tuple(dict(r.citation or {"evidence_ref": r.ref}) for r in chosen)


def record_use(
    namespace: str,
    batch_id: int | str | None,
    evidence_refs: Sequence[str],
    *,
    receipt_id: str,
    audit: Mapping[str, Any] | None = None,
    session: str | None = None,
) -> UseResult:
    """Close a batch with a use receipt and reinforce the events behind the used refs (§8.2, §9.1).

    Every ref must be in the batch and adopted by its sufficient assessment; otherwise
    UseRefusedError lists all issues and nothing is recorded. ``[]`` closes the batch
    with a zero-increment receipt. A replay of the same ``receipt_id`` with the same
    refs and audit returns the original result; a different payload raises
    ReceiptConflictError. ``batch_id=None`` picks the session's latest batch.
    """
    session = _session(session)
    if not isinstance(receipt_id, str) or not receipt_id.strip() or len(receipt_id) > 500:
        raise InvalidInputError("record_use needs a receipt_id: a non-empty string of at most 500 characters")
    if audit is not None and not isinstance(audit, Mapping):
        raise InvalidInputError(f"audit must be a mapping, got {type(audit).__name__}")
    items = _as_list(evidence_refs, "evidence_refs")
    with write_transaction():
        ns = get_namespace(namespace)
        batch = _resolve(ns, batch_id, session)
        rows = _refs_of([batch.id])[batch.id]
        available = [r.ref for r in rows]
        adopted = _adopted(batch.assessment)
        issues: list[UseIssue] = []
        used: list[str] = []
        duplicates: list[str] = []
        for index, raw in enumerate(items):
            ref = raw.strip() if isinstance(raw, str) else ""
            if not ref:
                issues.append(UseIssue(index, _shown(raw), "invalid_ref", "an evidence ref must be a non-empty string"))
            elif ref in used or ref in duplicates:
                if ref not in duplicates:
                    duplicates.append(ref)
            elif ref not in available:
                used.append(ref)
                issues.append(UseIssue(index, ref, "not_in_batch", f"{batch_label(batch.id)} did not return this ref"))
            elif ref not in adopted:
                used.append(ref)
                issues.append(
                    UseIssue(index, ref, "not_adopted", "not adopted by a sufficient assessment of this batch")
                )
            else:
                used.append(ref)
        payload = _audit_payload(batch, used, audit)

        existing = UsageReceipt.get_or_none((UsageReceipt.namespace == ns) & (UsageReceipt.receipt_id == receipt_id))
        if existing is not None:
            if existing.batch_id != batch.id or existing.audit != payload:
                raise ReceiptConflictError(
                    f"use receipt {receipt_id!r} in namespace {ns.name!r} was already recorded with different "
                    "memory refs or audit"
                )
            return UseResult(
                batch_id=batch.id,
                receipt_id=receipt_id,
                batch_status=batch.status,
                evidence_refs=tuple(used),
                duplicate_refs=tuple(duplicates),
                event_ids=tuple(existing.event_ids or ()),
                incremented=len(existing.event_ids or ()),
                citations=_citations(rows, used),
                retrieved=_citations(rows),
                unresolved_batch_ids=_open_ids(ns.id, batch.session),
                replayed=True,
            )
        if batch.status == "recorded":
            raise BatchClosedError(
                f"{batch_label(batch.id)} was already closed by record_use; it cannot be recorded again"
            )
        if issues:
            listed = "; ".join(f"[{i.input_index}] {i.ref!r}: {i.reason}" for i in issues)
            raise UseRefusedError(
                f"record_use refused for {batch_label(batch.id)} (status {batch.status}); nothing was recorded. "
                f"Issues: {listed}. Available refs: {', '.join(available) or '(none)'}. "
                f"Adopted refs: {', '.join(adopted) or '(none: assess the batch as sufficient first, or pass [])'}.",
                batch_id=batch.id,
                batch_status=batch.status,
                issues=issues,
                duplicate_refs=duplicates,
                available_refs=available,
                adopted_refs=adopted,
            )

        by_ref = {r.ref: r for r in rows}
        wanted = list(dict.fromkeys(i for ref in used for i in (by_ref[ref].event_ids or ())))
        eligible = (
            [
                i
                for (i,) in Event.select(Event.id)
                .where((Event.id.in_(wanted)) & (Event.namespace == ns) & (Event.status.not_in(INELIGIBLE)))
                .tuples()
            ]
            if wanted
            else []
        )
        order = {i: n for n, i in enumerate(wanted)}
        eligible.sort(key=order.__getitem__)
        now = now_iso()
        if eligible:
            Event.update(
                mention_count=Event.mention_count + 1,
                last_adopted_turn=ns.current_turn,
                updated_at=now,
            ).where(Event.id.in_(eligible)).execute()
            # Cards used together are linked: an adopted ref counts as fully active.
            reinforce(ns.id, {i: 1.0 for i in eligible}, now)
            bump_revision(ns.id, now)
        UsageReceipt.create(
            namespace=ns, receipt_id=receipt_id, batch=batch.id, event_ids=eligible, audit=payload, created_at=now
        )
        RetrievalBatch.update(status="recorded", updated_at=now).where(RetrievalBatch.id == batch.id).execute()
        record_trace(
            ns.id,
            "use",
            batch_id=batch.id,
            channel=batch.channel,
            query=batch.query,
            selected=used,
            verdict=(batch.assessment or {}).get("verdict"),
            detail={
                "receipt_id": receipt_id,
                "event_ids": eligible,
                "skipped_event_ids": [i for i in wanted if i not in set(eligible)],
                "duplicate_refs": duplicates,
            },
        )
        open_ids = _open_ids(ns.id, batch.session)
    return UseResult(
        batch_id=batch.id,
        receipt_id=receipt_id,
        batch_status="recorded",
        evidence_refs=tuple(used),
        duplicate_refs=tuple(duplicates),
        event_ids=tuple(eligible),
        incremented=len(eligible),
        citations=_citations(rows, used),
        retrieved=_citations(rows),
        unresolved_batch_ids=open_ids,
    )


__all__ = [
    "Assessment",
    "BatchClosedError",
    "BatchInfo",
    "BatchRefInfo",
    "BudgetExhaustedError",
    "CHANNELS",
    "CHANNEL_OF_STRATEGY",
    "DEFAULT_BUDGET",
    "DEFAULT_MISSING",
    "DETAIL_CHANNELS",
    "MAX_ACCEPTED_REFS",
    "ReceiptInfo",
    "RefSpec",
    "RejectedRef",
    "STRATEGIES",
    "STRATEGY_OF_CHANNEL",
    "StrategyRepeatError",
    "UseIssue",
    "UseRefusedError",
    "UseResult",
    "assess",
    "batch_label",
    "block_ref",
    "check_batch_allowed",
    "event_ref",
    "get_batch",
    "node_ref",
    "normalize_assessment",
    "normalize_channel",
    "open_batch",
    "raw_ref",
    "record_use",
    "refs_for_blocks",
    "refs_for_events",
    "refs_for_nodes",
    "refs_for_raw",
    "unresolved_batches",
]
