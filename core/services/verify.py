"""Checking the store's invariants: what `strata verify` reports.

Each check is one query that finds violations, so a large store is verified without
loading it into memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from peewee import JOIN, SQL, fn

from core.models import (
    CURRENT,
    LIVE,
    Block,
    Event,
    EventLink,
    EventSource,
    GraphEdge,
    GraphEnding,
    GraphFact,
    GraphNode,
    GraphSource,
    Job,
    Message,
    Namespace,
)
from core.search import segment
from core.services.graph_vocab import FUNCTIONAL_RELATIONS, render_value
from core.services.jobs import BLOCK_KINDS
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


def verify(
    namespace: str | None = None, *, limit: int = 50, progress: Callable[[int, int, str], None] | None = None
) -> VerifyReport:
    """Run every check (``progress(done, total, label)`` before each: at a million messages the
    whole takes ~16 s, most of it reading the citations)."""
    ns = get_namespace(namespace) if namespace else None
    report = VerifyReport(namespace=namespace)
    steps = [
        ("blocks and jobs", _check_blocks),
        ("events cite messages", _check_uncited),
        ("citations inside their blocks", _check_outside),
        ("graph records cite events", _check_graph),
        ("current facts cite events", _check_current_facts),
        ("why records ended", _check_endings),
        ("duplicate event cards", _check_duplicates),
        ("current truth", _check_current_truth),
        ("orphans", _check_orphans),
        ("saved search copies", _check_search_copies),
    ]
    for done, (label, step) in enumerate(steps):
        if progress:
            progress(done, len(steps), label)
        step(report, ns, limit)
    if progress:
        progress(len(steps), len(steps), "done")
    return report


def _check_blocks(report: VerifyReport, ns, limit: int) -> None:
    report.blocks = _scope(Block.select(), Block, ns).count()
    report.blocks_ready = _scope(Block.select().where(Block.status == "ready"), Block, ns).count()
    failed = Job.select(Job.block).where((Job.status == "failed") & Job.block.is_null(False))
    report.blocks_failed = _scope(
        Block.select().where((Block.status == "failed") | ((Block.status == "pending") & Block.id.in_(failed))),
        Block,
        ns,
    ).count()
    report.blocks_waiting = report.blocks - report.blocks_ready - report.blocks_failed
    for job in _scope(Job.select().where((Job.status == "failed") & Job.last_error.is_null()), Job, ns).limit(limit):
        report.problems.append(f"job {job.id} failed without an error message")


def _check_uncited(report: VerifyReport, ns, limit: int) -> None:
    report.events = _scope(Event.select(), Event, ns).count()
    # Walked from the blocks: the event ids of a block, its citations and the messages' blocks are all
    # read from indexes. From the events, each needed its row (its block) and the walk over a
    # namespace's events fetched 866k of them at random (13 s at a million messages; now 0.3 s).
    uncited = _scope(
        Block.select(Event.id)
        .join(Event, on=(Event.block == Block.id))
        .join(EventSource, JOIN.LEFT_OUTER, on=(EventSource.event == Event.id))
        .where(EventSource.id.is_null()),
        Block,
        ns,
    )
    # Sorted here, not by the query: the walk from the blocks is what keeps it fast, and without an
    # order PostgreSQL returns the rows in whatever order its plan (scoped or not) meets them.
    for (event_id,) in sorted(uncited.tuples().limit(limit)):
        report.problems.append(f"event {event_id} cites no message")


def _check_outside(report: VerifyReport, ns, limit: int) -> None:
    inside = Message.alias("inside")
    outside = _scope(
        Block.select(Event.id, EventSource.message)
        .join(Event, on=(Event.block == Block.id))
        .join(EventSource, on=(EventSource.event == Event.id))
        .where(
            ~fn.EXISTS(inside.select(SQL("1")).where((inside.id == EventSource.message) & (inside.block == Block.id)))
        ),
        Block,
        ns,
    )
    for event_id, message_id in sorted(outside.tuples().limit(limit)):  # sorted: see _check_uncited
        report.problems.append(f"event {event_id} cites message {message_id} outside its source block")


def _check_graph(report: VerifyReport, ns, limit: int) -> None:
    for kind, model in (("node", GraphNode), ("fact", GraphFact), ("edge", GraphEdge)):
        query = model.select(model.id)
        if ns is not None:
            query = query.join(GraphNode, on=(model.node == GraphNode.id)) if model is GraphFact else query
            query = query.where((GraphNode.namespace if model is not GraphEdge else model.namespace) == ns)
        cited = GraphSource.select(GraphSource.record_id).where(GraphSource.kind == kind)
        report.graph_records += query.count()
        for row in query.where(model.id.not_in(cited)).limit(limit):
            report.problems.append(f"graph {kind} {row.id} cites no event")


def _check_current_facts(report: VerifyReport, ns, limit: int) -> None:
    current_without_active = (
        GraphFact.select(GraphFact.id)
        .where(GraphFact.status.in_(CURRENT))
        .where(
            ~fn.EXISTS(
                GraphSource.select(GraphSource.id)
                .join(Event, on=(GraphSource.event == Event.id))
                .where(
                    (GraphSource.kind == "fact")
                    & (GraphSource.record_id == GraphFact.id)
                    & (Event.status != "archived")
                )
            )
        )
    )
    for row in current_without_active.limit(limit):
        report.problems.append(f"graph fact {row.id} is current but cites no existing event")


def _check_endings(report: VerifyReport, ns, limit: int) -> None:
    """Why records ended (schema 14): every reason belongs to a record that exists, and no current
    record has a reason that still stands in an event that is not forgotten."""
    for kind, model in (("fact", GraphFact), ("edge", GraphEdge)):
        dangling = (
            GraphEnding.select(GraphEnding.record_id)
            .distinct()
            .where((GraphEnding.kind == kind) & GraphEnding.record_id.not_in(model.select(model.id)))
        )
        for (record_id,) in dangling.tuples().limit(limit):
            report.problems.append(f"graph ending of {kind} {record_id}, which does not exist")
        standing = (
            model.select(model.id, GraphEnding.cause_id)
            .join(
                GraphEnding,
                on=(
                    (GraphEnding.kind == kind)
                    & (GraphEnding.record_id == model.id)
                    & (GraphEnding.cause_kind == "event")
                ),
            )
            .join(Event, on=(GraphEnding.cause_id == Event.id))
            .where(model.status.in_(CURRENT) & Event.status.in_(LIVE))
        )
        if ns is not None:
            standing = (
                standing.switch(model).join(GraphNode, on=(model.node == GraphNode.id)).where(GraphNode.namespace == ns)
                if model is GraphFact
                else standing.where(model.namespace == ns)
            )
        for record_id, event_id in standing.tuples().limit(limit):
            report.problems.append(f"graph {kind} {record_id} is current though event {event_id} says it ended")


def _check_duplicates(report: VerifyReport, ns, limit: int) -> None:
    """Two live cards with the same wording (fingerprint) citing the same messages: what a job run
    twice, or by two workers at once, would leave."""
    groups = (
        Event.select(Event.namespace, Event.fingerprint)
        .where(Event.status.in_(LIVE) & Event.fingerprint.is_null(False))
        .group_by(Event.namespace, Event.fingerprint)
        .having(fn.COUNT(Event.id) > 1)
    )
    found = 0
    for namespace_id, print_ in _scope(groups, Event, ns).tuples().iterator():
        ids = [
            i
            for (i,) in Event.select(Event.id)
            .where((Event.namespace == namespace_id) & (Event.fingerprint == print_) & Event.status.in_(LIVE))
            .order_by(Event.id)
            .tuples()
        ]
        cites: dict[tuple[int, ...], int] = {}
        for event_id in ids:
            sources = tuple(
                sorted(
                    m for (m,) in EventSource.select(EventSource.message).where(EventSource.event == event_id).tuples()
                )
            )
            if not sources:
                continue  # citing nothing is its own problem (and a hand-made event's right)
            first = cites.setdefault(sources, event_id)
            if first != event_id and found < limit:
                found += 1
                report.problems.append(f"event {event_id} duplicates event {first} (same text, same messages)")


def _check_current_truth(report: VerifyReport, ns, limit: int) -> None:
    """Nothing current that a later statement contradicts: a card a later one superseded (or whose
    statement it restates was superseded) still active, a graph fact every citing card of which was
    superseded, two current values of a one-value key."""
    found = 0

    def problem(text: str) -> bool:
        nonlocal found
        found += 1
        if found <= limit:
            report.problems.append(text)
        return found < limit

    target = Event.alias("target")

    def links(kind: str, target_status, source_status):
        """(source, target, the target's superseded_by) of the ``kind`` links between such events."""
        query = (
            EventLink.select(EventLink.event, EventLink.target, target.superseded_by)
            .join(target, on=(EventLink.target == target.id))
            .where((EventLink.kind == kind) & target_status)
            .join_from(EventLink, Event, on=(EventLink.event == Event.id))
            .where(source_status)
        )
        return _scope(query, Event, ns).tuples().limit(limit)

    # A card a later one superseded, still current.
    ended = [
        (old, f"event {old} is current though event {new} superseded it")
        for new, old, _ in links("supersedes", target.status == "active", Event.status.in_(LIVE))
    ]
    # A receipt (the link's source) of a statement that was superseded, still current.
    echoes = [
        (echo, f"event {echo} is current though it restates event {old}, which event {by or '?'} superseded")
        for echo, old, by in links("same_event", target.status == "superseded", Event.status == "active")
    ]
    for _, text in [*sorted(ended), *sorted(echoes)]:
        if not problem(text):
            return

    current = GraphFact.select(GraphFact.id, GraphFact.node, GraphFact.key, GraphFact.value).where(
        GraphFact.status.in_(CURRENT)
    )
    if ns is not None:
        current = current.join(GraphNode, on=(GraphFact.node == GraphNode.id)).where(GraphNode.namespace == ns)
    stale_only = current.where(
        fn.EXISTS(
            GraphSource.select(SQL("1")).where((GraphSource.kind == "fact") & (GraphSource.record_id == GraphFact.id))
        )
        & ~fn.EXISTS(
            GraphSource.select(SQL("1"))
            .join(Event, on=(GraphSource.event == Event.id))
            .where(
                (GraphSource.kind == "fact") & (GraphSource.record_id == GraphFact.id) & (Event.status != "superseded")
            )
        )
    )
    for fact_id, node_id, key, value in stale_only.tuples().limit(limit):
        if not problem(
            f"graph fact {fact_id} ({key}: {render_value(value)}, node {node_id}) is current but every "
            "statement it cites was superseded by a later one"
        ):
            return

    doubled = (
        GraphFact.select(GraphFact.node, GraphFact.key, fn.COUNT(GraphFact.id))
        .where(GraphFact.status.in_(CURRENT) & GraphFact.key.in_(sorted(FUNCTIONAL_RELATIONS)))
        .group_by(GraphFact.node, GraphFact.key)
        .having(fn.COUNT(GraphFact.id) > 1)
    )
    if ns is not None:
        doubled = doubled.join(GraphNode, on=(GraphFact.node == GraphNode.id)).where(GraphNode.namespace == ns)
    for node_id, key, count in doubled.tuples().limit(limit):
        if not problem(f"graph node {node_id} holds {count} current values of the one-value key {key!r}"):
            return


def _check_orphans(report: VerifyReport, ns, limit: int) -> None:
    """Rows nothing can reach or that point at nothing: a block without messages, a block waiting
    for derivation with no job to derive it, graph citations of records that do not exist."""
    empty = _scope(
        Block.select(Block.id).where(~fn.EXISTS(Message.select(SQL("1")).where(Message.block == Block.id))), Block, ns
    )
    for (block_id,) in empty.tuples().limit(limit):
        report.problems.append(f"block {block_id} holds no messages")
    jobless = _scope(
        Block.select(Block.id).where(
            (Block.status == "pending")
            & ~fn.EXISTS(Job.select(SQL("1")).where((Job.block == Block.id) & Job.kind.in_(BLOCK_KINDS)))
        ),
        Block,
        ns,
    )
    for (block_id,) in jobless.tuples().limit(limit):
        report.problems.append(f"block {block_id} waits for derivation but has no job (it would never be derived)")
    for kind, model in (("node", GraphNode), ("fact", GraphFact), ("edge", GraphEdge)):
        dangling = (
            GraphSource.select(GraphSource.record_id)
            .distinct()
            .where((GraphSource.kind == kind) & GraphSource.record_id.not_in(model.select(model.id)))
        )
        if ns is not None:
            dangling = dangling.join(Event, on=(GraphSource.event == Event.id)).where(Event.namespace == ns)
        for (record_id,) in dangling.tuples().limit(limit):
            report.problems.append(f"a citation of graph {kind} {record_id}, which does not exist")


def _check_search_copies(report: VerifyReport, ns, limit: int) -> None:
    """The search index's saved copies (``<db>.search``): a posting damaged inside a file is
    found here by reading every one (a search process that meets it builds the copy again)."""

    spaces = [ns] if ns is not None else list(Namespace.select())
    for space in spaces:
        for kind in ("message", "event"):
            saved = segment.load(kind, space.id, space.created_at)
            wrong = segment.postings_in_range(saved) if saved is not None else None
            if wrong and len(report.problems) < limit:
                report.problems.append(
                    f"saved search copy of namespace {space.name!r}'s {kind}s: {wrong}; delete "
                    f"{segment.saved_folder()} and it is built again from the database"
                )
