"""The graph job: what the projector sees of a batch of events, and the derive handler that asks
the provider for a projection and applies it (``core.services.graph_apply``)."""

from __future__ import annotations

from typing import Any, Sequence

from peewee import fn

from core.db import Prepared, chunks, update_by_id, write_transaction
from core.models import CURRENT, LIVE, Event, EventSource, GraphEdge, GraphFact, GraphNode, GraphSource, Job, Message
from core.providers.base import UNNAMED_USER, ProviderOutputError
from core.services import jobs as jobsvc
from core.services.events import name_mentions
from core.services.graph import (
    NODES_BY_ID,
    Computed,
    event_statuses,
    newest_sources,
    render_state,
    visible_metadata,
)
from core.services.graph_apply import apply_projection, as_id, clip
from core.services.graph_names import entity_key, node_names, padded
from core.services.spaces import bump_revision
from core.timeutil import now_iso

PROJECTOR_VERSION = 1
MAX_REASON = 500

# Context limits for the projector (§4.4).
CONTEXT_NODES = 32
CONTEXT_EDGES = 60
CONTEXT_LIST = 12
CONTEXT_STATE_CHARS = 600
CONTEXT_FACTS = 12
CONTEXT_VALUE_CHARS = 400
CONTEXT_VALUE_ITEMS = 12
CONTEXT_ITEM_CHARS = 160
CONTEXT_SOURCES = 16

_LIVE_BATCH_EVENTS = Prepared(
    lambda ids, ns: (
        Event.select().where(Event.id.in_(ids) & (Event.namespace == ns) & Event.status.in_(LIVE)).order_by(Event.id)
    )
)


# ----------------------------------------------------------------------------- what the projector sees


def _newest_facts(node_ids):
    """The newest current facts per node, ranked in SQL so a hub's fact list is not hydrated."""
    rank = fn.ROW_NUMBER().over(partition_by=[GraphFact.node], order_by=[GraphFact.id.desc()])
    inner = GraphFact.select(GraphFact, rank.alias("rank")).where(
        GraphFact.node.in_(node_ids) & GraphFact.status.in_(CURRENT)
    )
    newest = GraphFact.select(inner.c.id).from_(inner).where(inner.c.rank <= CONTEXT_FACTS * 2)
    return GraphFact.select().where(GraphFact.id.in_(newest)).order_by(GraphFact.id)


_NEWEST_FACTS = Prepared(_newest_facts)
_EDGES_AMONG = Prepared(
    lambda sources, targets: (
        GraphEdge.select()
        .where(GraphEdge.from_node.in_(sources) & GraphEdge.to_node.in_(targets) & GraphEdge.status.in_(CURRENT))
        .order_by(GraphEdge.id)
        .limit(CONTEXT_EDGES * 4)
    )
)


def _cited_by_active_query(model, kind: str):
    def build(ids):
        # EXISTS stops at a record's first active citation; selecting the distinct record ids of
        # the active citations read every citation of a hub (thousands, more every day).
        active = (
            GraphSource.select(GraphSource.id)
            .join(Event, on=(GraphSource.event == Event.id))
            .where((GraphSource.kind == kind) & (GraphSource.record_id == model.id) & (Event.status == "active"))
        )
        return model.select(model.id).where(model.id.in_(ids) & fn.EXISTS(active)).tuples()

    return Prepared(build)


_CITED_BY_ACTIVE = {
    kind: _cited_by_active_query(model, kind) for kind, model in (("fact", GraphFact), ("edge", GraphEdge))
}


def _metadata_statuses(nodes: Sequence[GraphNode]) -> dict[int, str]:
    """Event statuses enough to tell which alias and tag entries of the nodes have a live source
    (``visible_metadata``): each entry's newest source, then every source only of entries whose
    newest is not live. A hub's entries cite up to 64 events each, nearly always the newest live."""
    entries = [
        ids
        for n in nodes
        if isinstance(n.provenance, dict)
        for kind in ("aliases", "tags")
        for entry in n.provenance.get(kind, [])
        if isinstance(entry, dict)
        for ids in [[i for i in entry.get("source_event_ids", []) if isinstance(i, int)]]
        if ids
    ]
    statuses = event_statuses(max(ids) for ids in entries)
    statuses.update(event_statuses(i for ids in entries if statuses.get(max(ids)) not in LIVE for i in ids))
    return statuses


def _context_views(nodes: Sequence[GraphNode]) -> dict[int, Computed]:
    """Bounded views for the projector's context: newest sources, newest current facts and
    the current edges among ``nodes``. Unlike ``compute_views`` (the full effective view a
    person reads) nothing here grows with how often a node has been cited."""
    ids = [n.id for n in nodes]
    if not ids:
        return {}
    out = {n.id: Computed(node=n) for n in nodes}
    statuses = _metadata_statuses(nodes)
    for node in nodes:
        view = out[node.id]
        view.node_sources = newest_sources("node", node.id, LIVE, CONTEXT_SOURCES)
        own = [(i, "active") for i in view.node_sources]  # only consulted for legacy nodes without provenance
        view.aliases = visible_metadata(node, "aliases", own, statuses)
        view.tags = visible_metadata(node, "tags", own, statuses)
    for part in chunks(ids):
        facts = _NEWEST_FACTS.rows(list(part))
        shown = _cited_by_active("fact", [f.id for f in facts])
        for fact in facts:
            if fact.id in shown:
                out[fact.node_id].current_facts.append((fact, []))
    for part in chunks(ids):
        edges = _EDGES_AMONG.rows(list(part), ids)
        shown = _cited_by_active("edge", [e.id for e in edges])
        for edge in edges:
            if edge.id in shown:
                for node_id in (edge.from_node_id, edge.to_node_id):
                    out[node_id].current_edges.append((edge, []))
    for view in out.values():
        view.current_facts = view.current_facts[-CONTEXT_FACTS:]
        view.visible = view.node.status in CURRENT and bool(
            view.node_sources or view.current_facts or view.current_edges
        )
    return out


def _cited_by_active(kind: str, record_ids: Sequence[int]) -> set[int]:
    """Which of the records cite at least one active event (what makes a current record visible)."""
    found: set[int] = set()
    for part in chunks(list(record_ids)):
        found.update(r for (r,) in _CITED_BY_ACTIVE[kind].rows(list(part)))
    return found


def _event_item(event: Event) -> dict[str, Any]:
    temporal = {
        key: value
        for key, value in (
            ("mentioned_at", event.mentioned_at),
            ("happened_start", event.happened_start),
            ("happened_end", event.happened_end),
            ("original_text", event.original_text),
            ("precision", event.precision),
            ("basis", event.basis),
            ("status", event.time_status),
            ("event_type", event.event_type),
            ("participants", list(event.participants or [])),
        )
        if value not in (None, "")
    }
    return {
        "id": event.id,
        "title": event.title,
        "summary": event.summary,
        "tags": list(event.tags or []),
        "quotes": list(event.quotes or []),
        "temporal": temporal,
        "participants": list(event.participants or []),
        "event_type": event.event_type,
        "scope": event.scope,
        "criticality": event.criticality,
        "status": event.status,
    }


def _related_nodes(namespace_id: int, events: Sequence[Event]) -> list[GraphNode]:
    """Existing nodes most related to the events: participant matches, then text mentions."""
    participants = {entity_key(p) for e in events for p in (e.participants or []) if isinstance(p, str)}
    text = padded(
        " ".join(" ".join([e.title, e.summary, " ".join(e.quotes or []), " ".join(e.tags or [])]) for e in events)
    )
    names = node_names(namespace_id)
    named = names.with_keys(participants, first_names=True)  # "Priya" finds "Priya Raman"
    scored = [(2, i) for i in named] + [(1, i) for i in names.mentioned_in(text) - named]
    scored.sort(key=lambda item: (-item[0], -item[1]))
    chosen = [node_id for _, node_id in scored[: CONTEXT_NODES + CONTEXT_NODES // 2]]
    by_id = {n.id: n for n in NODES_BY_ID.rows(chosen)} if chosen else {}
    return [by_id[i] for i in chosen if i in by_id]


def _context_value(value: Any) -> Any:
    if isinstance(value, list):
        return [clip(v, CONTEXT_ITEM_CHARS) for v in value[:CONTEXT_VALUE_ITEMS]]
    return clip(str(value), CONTEXT_VALUE_CHARS)


def projection_context(
    job_id: int | None, namespace_id: int, events: Sequence[Event], *, mentions: bool = False
) -> dict[str, Any]:
    """What the projector sees: the events and the visible nodes and edges they likely touch.

    With ``mentions`` (a provider that reads its context in process), ``context["mentions"]`` is
    a function from a name to what other live events say with it (``name_mentions``), asked only
    for the names the batch cannot place."""
    candidates = _related_nodes(namespace_id, events)
    views = _context_views(candidates)
    chosen = [views[n.id] for n in candidates if n.id in views and views[n.id].visible][:CONTEXT_NODES]
    chosen_ids = {v.node.id for v in chosen}
    nodes = []
    edges: dict[int, dict[str, Any]] = {}
    for view in chosen:
        facts = view.current_facts[-CONTEXT_FACTS:]
        nodes.append(
            {
                "id": view.node.id,
                "name": view.node.name,
                "type": view.node.type,
                "aliases": view.aliases[:CONTEXT_LIST],
                "tags": view.tags[:CONTEXT_LIST],
                "current_state": clip(render_state(view.current_facts), CONTEXT_STATE_CHARS),
                "facts": [{"key": f.key, "value": _context_value(f.value), "status": f.status} for f, _ in facts],
                "source_event_ids": view.all_sources()[:CONTEXT_SOURCES],
            }
        )
        for edge, _ in view.current_edges:
            if edge.from_node_id in chosen_ids and edge.to_node_id in chosen_ids and len(edges) < CONTEXT_EDGES:
                edges.setdefault(
                    edge.id,
                    {
                        "id": edge.id,
                        "from_node_id": edge.from_node_id,
                        "to_node_id": edge.to_node_id,
                        "relation": edge.relation,
                        "status": edge.status,
                    },
                )
    context = {
        "job_id": job_id,
        "projector_version": PROJECTOR_VERSION,
        "events": [_event_item(e) for e in events],
        "nodes": nodes,
        "edges": list(edges.values()),
        "speakers": _speakers(events),
    }
    if mentions:
        batch = [e.id for e in events]
        context["mentions"] = lambda name: name_mentions(namespace_id, name, batch)
    return context


_SPEAKERS = Prepared(
    lambda event_ids: (
        Message.select(Message.speaker, Message.role)
        .distinct()
        .join(EventSource, on=(EventSource.message == Message.id))
        .where(EventSource.event.in_(event_ids) & Message.role.in_(["user", "assistant"]))
        .tuples()
    )
)


def _speakers(events: Sequence[Event]) -> list[str]:
    """Speakers of the messages these events cite: people by definition. A user message with no
    speaker is the person the memory is about, so its speaker is ``UNNAMED_USER`` (the name the
    event cards already use); an unnamed assistant is nobody."""
    if not events:
        return []
    names = set()
    for part in chunks([e.id for e in events]):
        for speaker, role in _SPEAKERS.rows(list(part)):
            named = speaker and speaker.strip().casefold() not in ("assistant", "user")
            names.add(speaker if named else UNNAMED_USER if role == "user" else None)
    return sorted(name for name in names if name)


def _reason(warnings: Sequence[str], model_reason: Any) -> str:
    parts = []
    if warnings:
        parts.append("Validation: " + "; ".join(warnings))
    if isinstance(model_reason, str) and model_reason.strip():
        parts.append(model_reason.strip())
    return clip(" | ".join(parts), MAX_REASON)


def propose_projection(job: Job, provider: Any) -> tuple[list[int], dict[str, Any]]:
    """(the job's event ids, the provider's proposal for those still live). Call outside any
    transaction: this is the model call."""
    batch = [i for i in (as_id(v) for v in (job.payload or {}).get("event_ids", []) or []) if i is not None]
    events = []
    for part in chunks(batch):
        events.extend(_LIVE_BATCH_EVENTS.rows(list(part), job.namespace_id))
    proposal: Any = {"reason": "no live events in this batch", "nodes": [], "edges": []}
    if events:
        proposal = provider.project_graph(
            projection_context(
                job.id, job.namespace_id, events, mentions=getattr(provider, "reads_context_lazily", False)
            )
        )
        if not isinstance(proposal, dict):
            raise ProviderOutputError("graph projection result is not an object")
    return batch, proposal


def run_graph_job(job: Job, provider: Any, report: Any) -> None:
    """Derive handler for ``kind == "graph"``: project one batch of events.

    The provider call runs outside any transaction; the proposal is applied in one write
    transaction, only while the job is still ours. Any failure raises, so the derive loop
    records it with backoff and the store stays untouched.
    """
    payload = dict(job.payload or {})
    batch, proposal = propose_projection(job, provider)
    with write_transaction():
        if not jobsvc.still_claimed(job):
            return
        result = apply_projection(job.namespace_id, batch, proposal)
        payload.update(
            {
                "projector_version": PROJECTOR_VERSION,
                "node_ids": result.node_ids,
                "edge_ids": result.edge_ids,
                "reason": _reason(result.warnings, proposal.get("reason")),
            }
        )
        now = now_iso()
        update_by_id(
            Job, job.id, dict(status="succeeded", last_error=None, next_retry_at=None, payload=payload, updated_at=now)
        )
        if result.node_ids or result.edge_ids:
            bump_revision(job.namespace_id, now)
    report.succeeded += 1


__all__ = ["PROJECTOR_VERSION", "projection_context", "propose_projection", "run_graph_job"]
