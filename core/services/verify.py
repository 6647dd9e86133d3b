"""Checking the store's invariants: what `strata verify` reports.

Each check is one query that finds violations, so a large store is verified without
loading it into memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from peewee import JOIN, fn

from core.models import (
    CURRENT, LIVE, Block, Event, EventSource, GraphEdge, GraphEnding, GraphFact, GraphNode, GraphSource, Job, Message,
)
from core.services.spaces import get_namespace


@dataclass
class VerifyReport:
    namespace: str | None
    blocks: int = 0
    blocks_ready: int = 0
    blocks_failed: int = 0
    blocks_waiting: int = 0
    events: int = 0
    graph_records: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _scope(query, model, ns):
    return query.where(model.namespace == ns) if ns is not None else query


def verify(namespace: str | None = None, *, limit: int = 50) -> VerifyReport:
    ns = get_namespace(namespace) if namespace else None
    report = VerifyReport(namespace=namespace)

    report.blocks = _scope(Block.select(), Block, ns).count()
    report.blocks_ready = _scope(Block.select().where(Block.status == "ready"), Block, ns).count()
    failed = Job.select(Job.block).where((Job.status == "failed") & Job.block.is_null(False))
    report.blocks_failed = _scope(Block.select().where((Block.status == "pending") & Block.id.in_(failed)), Block, ns).count()
    report.blocks_waiting = report.blocks - report.blocks_ready - report.blocks_failed
    for job in _scope(Job.select().where((Job.status == "failed") & Job.last_error.is_null()), Job, ns).limit(limit):
        report.problems.append(f"job {job.id} failed without an error message")

    report.events = _scope(Event.select(), Event, ns).count()
    uncited = _scope(
        Event.select(Event.id).join(EventSource, JOIN.LEFT_OUTER)
        .where(Event.block.is_null(False) & EventSource.id.is_null()), Event, ns,
    )
    for event in uncited.limit(limit):
        report.problems.append(f"event {event.id} cites no message")
    outside = _scope(
        Event.select(Event.id, Message.id.alias("mid")).join(EventSource).join(Message)
        .where(Event.block.is_null(False) & ((Message.block.is_null()) | (Message.block != Event.block))),
        Event, ns,
    )
    for row in outside.dicts().limit(limit):
        report.problems.append(f"event {row['id']} cites message {row['mid']} outside its source block")

    for kind, model in (("node", GraphNode), ("fact", GraphFact), ("edge", GraphEdge)):
        query = model.select(model.id)
        if ns is not None:
            query = query.join(GraphNode, on=(model.node == GraphNode.id)) if model is GraphFact else query
            query = query.where((GraphNode.namespace if model is not GraphEdge else model.namespace) == ns)
        cited = GraphSource.select(GraphSource.record_id).where(GraphSource.kind == kind)
        report.graph_records += query.count()
        for row in query.where(model.id.not_in(cited)).limit(limit):
            report.problems.append(f"graph {kind} {row.id} cites no event")
    current_without_active = (
        GraphFact.select(GraphFact.id)
        .where(GraphFact.status.in_(CURRENT))
        .where(~fn.EXISTS(
            GraphSource.select(GraphSource.id).join(Event, on=(GraphSource.event == Event.id))
            .where((GraphSource.kind == "fact") & (GraphSource.record_id == GraphFact.id) & (Event.status != "archived"))
        ))
    )
    for row in current_without_active.limit(limit):
        report.problems.append(f"graph fact {row.id} is current but cites no existing event")
    _check_endings(report, ns, limit)
    return report


def _check_endings(report: VerifyReport, ns, limit: int) -> None:
    """Why records ended (schema 14): every reason belongs to a record that exists, and no current
    record has a reason that still stands in an event that is not forgotten."""
    for kind, model in (("fact", GraphFact), ("edge", GraphEdge)):
        dangling = GraphEnding.select(GraphEnding.record_id).distinct().where(
            (GraphEnding.kind == kind) & GraphEnding.record_id.not_in(model.select(model.id)))
        for (record_id,) in dangling.tuples().limit(limit):
            report.problems.append(f"graph ending of {kind} {record_id}, which does not exist")
        standing = (model.select(model.id, GraphEnding.cause_id).join(GraphEnding, on=(
            (GraphEnding.kind == kind) & (GraphEnding.record_id == model.id) & (GraphEnding.cause_kind == "event")))
            .join(Event, on=(GraphEnding.cause_id == Event.id))
            .where(model.status.in_(CURRENT) & Event.status.in_(LIVE)))
        if ns is not None:
            standing = (standing.switch(model).join(GraphNode, on=(model.node == GraphNode.id))
                        .where(GraphNode.namespace == ns) if model is GraphFact else standing.where(model.namespace == ns))
        for record_id, event_id in standing.tuples().limit(limit):
            report.problems.append(f"graph {kind} {record_id} is current though event {event_id} says it ended")
