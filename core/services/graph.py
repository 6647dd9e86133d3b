"""The effective graph view: what a person (and the search over the graph) sees of nodes, facts and
edges, decided from the events they cite.

A record shows only while at least one event behind it is still visible: a current fact or
edge needs an active source, a historical one a live source. The projection that writes the
records is ``core.services.graph_apply``; the job that runs it is ``core.services.graph_job``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from peewee import fn

from core.db import LIST_MAX, Prepared, any_of, chunks, clamp, db, is_row_id, is_sqlite
from core.errors import InvalidInputError, NotFoundError
from core.models import (
    CURRENT,
    EVENT_STATUS_INDEX,
    LIVE,
    Event,
    GraphEdge,
    GraphFact,
    GraphNode,
    GraphSource,
    Namespace,
)
from core.vocab import COUNTED_FACT_KEYS, NODE_TYPES
from core.search.tokenize import normalize as norm_text
from core.services.graph_endings import EndedBy, reasons
from core.services.graph_vocab import render_value
from core.services.graph_names import entity_key
from core.services.spaces import get_namespace

GRAPH_PROVENANCE_LIMIT = 6

# Reads the projection shares with the view, rendered once (see core.db.Prepared).
_STATUSES = Prepared(lambda ids: Event.select(Event.id, Event.status).where(Event.id.in_(ids)).tuples())
NODES_BY_ID = Prepared(lambda ids: GraphNode.select().where(GraphNode.id.in_(ids)))
# What an edge shows of its other end (no JSON columns decoded for a hub's hundred neighbours).
_NODE_NAMES = Prepared(
    lambda ids: GraphNode.select(GraphNode.id, GraphNode.name, GraphNode.type).where(GraphNode.id.in_(ids)).tuples()
)


def event_statuses(ids: Iterable[int]) -> dict[int, str]:
    ids = list(dict.fromkeys(ids))
    out: dict[int, str] = {}
    for part in chunks(ids):
        for event_id, status in _STATUSES.rows(list(part)):
            out[event_id] = status
    return out


# ----------------------------------------------------------------------------- effective view


@dataclass(frozen=True)
class FactView:
    id: int
    key: str
    value: str | list[str]
    status: str
    valid_from: str | None
    valid_to: str | None
    confidence: float
    source_event_ids: tuple[int, ...]
    ended_by: tuple[EndedBy, ...] = ()  # why a historical fact ended, where that is known and visible


@dataclass(frozen=True)
class EdgeView:
    id: int
    relation: str
    status: str
    current: bool
    other_id: int
    other_name: str
    other_type: str
    valid_from: str | None
    valid_to: str | None
    confidence: float
    source_event_ids: tuple[int, ...]
    ended_by: tuple[EndedBy, ...] = ()


@dataclass(frozen=True)
class EventRef:
    id: int
    title: str
    status: str
    happened_start: str | None


@dataclass(frozen=True)
class NodeView:
    id: int
    namespace: str
    name: str
    type: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    status: str
    confidence: float
    current_state: str
    current_facts: tuple[FactView, ...]
    historical_facts: tuple[FactView, ...]
    edges_out: tuple[EdgeView, ...]
    edges_in: tuple[EdgeView, ...]
    events: tuple[EventRef, ...]


@dataclass(frozen=True)
class NodeRow:
    id: int
    namespace: str
    name: str
    type: str
    aliases: tuple[str, ...]
    facts: int
    edges: int
    events: int
    events_more: bool = False  # some record had more citations than were read: ``events`` is a floor

    @property
    def events_text(self) -> str:
        return f"{self.events}+" if self.events_more else str(self.events)


@dataclass
class Computed:
    """The effective view of one node before it is turned into DTOs."""

    node: GraphNode
    visible: bool = False
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    node_sources: list[int] = field(default_factory=list)
    current_facts: list[tuple[GraphFact, list[int]]] = field(default_factory=list)
    historical_facts: list[tuple[GraphFact, list[int]]] = field(default_factory=list)
    current_edges: list[tuple[GraphEdge, list[int]]] = field(default_factory=list)
    historical_edges: list[tuple[GraphEdge, list[int]]] = field(default_factory=list)
    sources_more: bool = False  # a record of this node had more citations than its window

    def all_sources(self) -> list[int]:
        """Every visible event behind the node, newest first."""
        ids = set(self.node_sources)
        for _, srcs in self.current_facts + self.historical_facts + self.current_edges + self.historical_edges:
            ids.update(srcs)
        return sorted(ids, reverse=True)


def _classify(status: str, sources: list[tuple[int, str]]) -> tuple[str, list[int]] | None:
    """('current', active ids) or ('historical', live ids) or None when the record is hidden."""
    if status in CURRENT:
        active = [i for i, s in sources if s == "active"]
        return ("current", active) if active else None
    if status == "superseded":
        live = [i for i, s in sources if s in LIVE]
        return ("historical", live) if live else None
    return None


# Citations read per record, newest first, for an effective view: the provenance a view shows
# (GRAPH_PROVENANCE_LIMIT) with room for hidden ones. Classification is exact whatever the window
# (_sources_of reads further back when the window holds no active source); counts past it are
# shown as floors ("21+"). Each citation costs a lookup in the event table, and a cold view of a
# hub reads this many for each of its hundreds of edges: 64 made graph search's cold views the
# slowest thing it did at a million messages.
SOURCE_WINDOW = 16


def _all_sources_of(kind: str, record_ids: Sequence[int]) -> dict[int, list[tuple[int, str]]]:
    """Every (event, status) citing each record, newest first."""
    out: dict[int, list[tuple[int, str]]] = {}
    for part in chunks(list(record_ids)):
        for record_id, event_id, status in _ALL_SOURCES.rows(kind, list(part)):
            out.setdefault(record_id, []).append((event_id, status))
    return out


_WINDOW_SQL: dict[tuple, str] = {}


def _sources_of(kind: str, record_ids: Sequence[int], more: set[int] | None = None) -> dict[int, list[tuple[int, str]]]:
    """(event, status) of each record's newest SOURCE_WINDOW citations, newest first; a record
    whose window holds no active source but has more citations also gets its newest active
    and live ones. That decides current / historical / hidden exactly (``_classify``) while a
    record cited by thousands of events costs what a rarely cited one does; the source lists
    are the qualifying ones among those read (views show at most GRAPH_PROVENANCE_LIMIT).
    Records whose window was full are added to ``more``."""
    database = db.obj
    out: dict[int, list[tuple[int, str]]] = {}
    ids = list(dict.fromkeys(record_ids))
    for start in range(0, len(ids), 200):  # SQLite allows 500 terms in a compound select
        part = ids[start : start + 200]
        key = (len(part), SOURCE_WINDOW, type(database))
        sql = _WINDOW_SQL.get(key)
        if sql is None:
            q = database.quote[0] + "{}" + database.quote[1]
            hint = f" INDEXED BY {EVENT_STATUS_INDEX}" if is_sqlite() else ""  # see the index's note
            term = (
                f"SELECT * FROM (SELECT s.{q.format('record_id')}, s.{q.format('event_id')}, "
                f"e.{q.format('status')} "
                f"FROM {q.format(GraphSource._meta.table_name)} s JOIN {q.format(Event._meta.table_name)} e{hint} "
                f"ON e.{q.format('id')} = s.{q.format('event_id')} WHERE s.{q.format('kind')} = {database.param} "
                f"AND s.{q.format('record_id')} = {database.param} ORDER BY s.{q.format('event_id')} DESC "
                f"LIMIT {SOURCE_WINDOW + 1}) AS w{{}}"
            )
            sql = _WINDOW_SQL[key] = " UNION ALL ".join(term.format(i) for i in range(len(part)))
        params = [value for record_id in part for value in (kind, record_id)]
        for record_id, event_id, status in database.execute_sql(sql, params):
            out.setdefault(record_id, []).append((event_id, status))
    for record_id, sources in out.items():
        sources.sort(key=lambda pair: -pair[0])
        truncated = len(sources) > SOURCE_WINDOW  # one row past the window says there is more
        del sources[SOURCE_WINDOW:]
        if truncated and more is not None:
            more.add(record_id)
        if truncated and not any(status == "active" for _, status in sources):
            seen = {event_id for event_id, _ in sources}
            extra = [(i, "active") for i in newest_sources(kind, record_id, ("active",), SOURCE_WINDOW)]
            if not extra:
                live = newest_sources(kind, record_id, LIVE, SOURCE_WINDOW)
                extra = [(i, "superseded") for i in live]  # no active one exists: every live one is superseded
            sources.extend(pair for pair in extra if pair[0] not in seen)
            sources.sort(key=lambda pair: -pair[0])
    return out


def visible_metadata(
    node: GraphNode, kind: str, node_sources: list[tuple[int, str]], statuses: dict[int, str]
) -> list[str]:
    prov = node.provenance if isinstance(node.provenance, dict) else {}
    values = [v for v in (node.aliases if kind == "aliases" else node.tags) or [] if isinstance(v, str)]
    if not prov:
        exposed = bool(node_sources) and all(s in LIVE for _, s in node_sources)
        return values if exposed else []
    shown = {
        entity_key(entry.get("value", ""))
        for entry in prov.get(kind, [])
        if isinstance(entry, dict) and any(statuses.get(i) in LIVE for i in entry.get("source_event_ids", []))
    }
    return [v for v in values if entity_key(v) in shown]


# What a person's view of some nodes reads (node_view, list_nodes, search_graph): rendered once each.
_FACTS_OF_NODES = Prepared(lambda ids: GraphFact.select().where(GraphFact.node.in_(ids)).order_by(GraphFact.id))
_EDGES_TOUCHING = Prepared(
    lambda ids: (
        GraphEdge.select().where(GraphEdge.from_node.in_(ids) | GraphEdge.to_node.in_(ids)).order_by(GraphEdge.id)
    )
)
_NODE_STATUSES = Prepared(
    lambda ids: GraphNode.select(GraphNode.id, GraphNode.status).where(GraphNode.id.in_(ids)).tuples()
)
_ALL_SOURCES = Prepared(
    lambda kind, ids: (
        GraphSource.select(GraphSource.record_id, GraphSource.event, Event.status)
        .join(Event, on=(GraphSource.event == Event.id))
        .where((GraphSource.kind == kind) & GraphSource.record_id.in_(ids))
        .order_by(GraphSource.event.desc())
        .tuples()
    )
)
_EVENT_REFS = Prepared(
    lambda ids: Event.select(Event.id, Event.title, Event.status, Event.happened_start).where(Event.id.in_(ids))
)
_NAMESPACE = Prepared(lambda namespace_id: Namespace.select().where(Namespace.id == namespace_id))


def compute_views(nodes: Sequence[GraphNode]) -> dict[int, Computed]:
    """Effective views of ``nodes`` in a handful of queries (chunked, no per-node queries)."""
    by_id = {n.id: n for n in nodes}
    ids = list(by_id)
    if not ids:
        return {}
    facts: dict[int, list[GraphFact]] = {}
    for part in chunks(ids):
        for fact in _FACTS_OF_NODES.rows(list(part)):
            facts.setdefault(fact.node_id, []).append(fact)
    edges: dict[int, GraphEdge] = {}
    for part in chunks(ids):
        for edge in _EDGES_TOUCHING.rows(list(part)):
            edges[edge.id] = edge
    others = {i for e in edges.values() for i in (e.from_node_id, e.to_node_id)} - set(ids)
    status_of = {n.id: n.status for n in nodes}
    for part in chunks(list(others)):
        for node_id, status in _NODE_STATUSES.rows(list(part)):
            status_of[node_id] = status
    more: dict[str, set[int]] = {"node": set(), "fact": set(), "edge": set()}
    # A legacy node (no field provenance) shows its aliases only while every source is live: read them all.
    legacy = {n.id for n in nodes if not (isinstance(n.provenance, dict) and n.provenance)}
    node_sources = _sources_of("node", [i for i in ids if i not in legacy], more["node"])
    node_sources.update(_all_sources_of("node", list(legacy)))
    fact_sources = _sources_of("fact", [f.id for fs in facts.values() for f in fs], more["fact"])
    edge_sources = _sources_of("edge", list(edges), more["edge"])
    statuses = {i: s for srcs in node_sources.values() for i, s in srcs}
    missing = set()
    for node in nodes:
        prov = node.provenance if isinstance(node.provenance, dict) else {}
        for kind in ("aliases", "tags"):
            for entry in prov.get(kind, []):
                if isinstance(entry, dict):
                    missing.update(i for i in entry.get("source_event_ids", []) if isinstance(i, int))
    statuses.update(event_statuses(missing - set(statuses)))

    out: dict[int, Computed] = {}
    for node in nodes:
        view = Computed(node=node)
        own = node_sources.get(node.id, [])
        view.node_sources = [i for i, s in own if s in LIVE]
        view.aliases = visible_metadata(node, "aliases", own, statuses)
        view.tags = visible_metadata(node, "tags", own, statuses)
        view.sources_more = node.id in more["node"]
        for fact in facts.get(node.id, []):
            view.sources_more = view.sources_more or fact.id in more["fact"]
            cls = _classify(fact.status, fact_sources.get(fact.id, []))
            if cls:
                (view.current_facts if cls[0] == "current" else view.historical_facts).append((fact, cls[1]))
        out[node.id] = view
    for edge in edges.values():
        if status_of.get(edge.from_node_id) not in CURRENT or status_of.get(edge.to_node_id) not in CURRENT:
            continue
        cls = _classify(edge.status, edge_sources.get(edge.id, []))
        if not cls:
            continue
        for node_id in (edge.from_node_id, edge.to_node_id):
            if node_id in out:
                out[node_id].sources_more = out[node_id].sources_more or edge.id in more["edge"]
                (out[node_id].current_edges if cls[0] == "current" else out[node_id].historical_edges).append(
                    (edge, cls[1])
                )
    for view in out.values():
        view.visible = view.node.status in CURRENT and bool(
            view.node_sources
            or view.current_facts
            or view.historical_facts
            or view.current_edges
            or view.historical_edges
        )
    return out


_NEWEST_SOURCES = Prepared(
    lambda kind, record_id, statuses, limit: (
        GraphSource.select(GraphSource.event)
        .join(Event, on=(GraphSource.event == Event.id))
        .where((GraphSource.kind == kind) & (GraphSource.record_id == record_id) & Event.status.in_(statuses))
        .order_by(GraphSource.event.desc())
        .limit(limit)
        .tuples()
    )
)


def newest_sources(kind: str, record_id: int, statuses: Sequence[str], limit: int) -> list[int]:
    """The newest ``limit`` events citing one record whose status is in ``statuses``.

    Walks the (kind, record_id, event) index from the newest citation and stops at ``limit``,
    so a record cited by thousands of events costs what a rarely cited one does.
    """
    return [event_id for (event_id,) in _NEWEST_SOURCES.rows(kind, record_id, list(statuses), limit)]


def first_mention(records: dict[str, Sequence[int]], statuses: Sequence[str]) -> int | None:
    """Of the events citing any of the records (ids by kind), the one said first (by mention
    time, then id), whose status is in ``statuses``; None when none does.

    Event ids follow derivation order, which is not the order things were said when threads
    were stored one after another; this sorts every citation of the records, so it is for
    occasional reads (where a node was introduced), not for every projection."""
    cited = [(GraphSource.kind == kind) & GraphSource.record_id.in_(list(ids)) for kind, ids in records.items() if ids]
    if not cited:
        return None
    first = (
        GraphSource.select(GraphSource.event)
        .join(Event, on=(GraphSource.event == Event.id))
        .where(any_of(cited) & Event.status.in_(list(statuses)))
        .order_by(fn.COALESCE(Event.mentioned_ts, 0), Event.id)
        .limit(1)
        .tuples()
        .first()
    )
    return first[0] if first else None


def render_state(current: Sequence[tuple[GraphFact, list[int]]]) -> str:
    lines = []
    for fact, _ in current:
        suffix = " [disputed]" if fact.status == "disputed" else ""
        if fact.key in COUNTED_FACT_KEYS and fact.valid_from:
            suffix = f" (as of {fact.valid_from[:10]}){suffix}"
        lines.append(f"{fact.key}: {render_value(fact.value)}{suffix}")
    return "\n".join(lines)


def _fact_view(fact: GraphFact, sources: list[int], ended_by: tuple[EndedBy, ...] = ()) -> FactView:
    return FactView(
        id=fact.id,
        key=fact.key,
        value=fact.value,
        status=fact.status,
        valid_from=fact.valid_from,
        valid_to=fact.valid_to,
        confidence=fact.confidence,
        source_event_ids=tuple(sorted(sources, reverse=True)[:GRAPH_PROVENANCE_LIMIT]),
        ended_by=ended_by,
    )


def node_view(node_id: int) -> NodeView:
    """The Event-authoritative view of one node (§6.3); hidden nodes do not exist here."""
    found = node_views([node_id]).get(node_id) if is_row_id(node_id) else None
    if found is None:
        raise NotFoundError(f"graph node {node_id} does not exist or has no visible evidence (see `strata graph`)")
    return found


def node_views(node_ids: Sequence[int]) -> dict[int, NodeView]:
    """``node_view`` of several nodes from one set of reads: nodes that are linked (a person and
    the people, tools and places around them) share their edges and those edges' citations.
    Nodes that do not exist or have no visible evidence are left out."""
    nodes = [n for part in chunks(list(dict.fromkeys(node_ids))) for n in NODES_BY_ID.rows(list(part))]
    views = {i: v for i, v in compute_views(nodes).items() if v.visible}
    other_ids = {
        i
        for v in views.values()
        for e, _ in v.current_edges + v.historical_edges
        for i in (e.from_node_id, e.to_node_id)
    }
    others = {i: (name, kind) for part in chunks(list(other_ids)) for i, name, kind in _NODE_NAMES.rows(list(part))}
    support = {i: v.all_sources()[:GRAPH_PROVENANCE_LIMIT] for i, v in views.items()}
    wanted = sorted({e for ids in support.values() for e in ids})
    refs = {r.id: r for part in chunks(wanted) for r in _EVENT_REFS.rows(list(part))}
    namespaces = {ns_id: _NAMESPACE.get(ns_id).name for ns_id in {n.namespace_id for n in nodes}}
    ended = {
        "fact": reasons("fact", [f.id for v in views.values() for f, _ in v.historical_facts]),
        "edge": reasons("edge", [e.id for v in views.values() for e, _ in v.historical_edges]),
    }
    out = {}
    for node in nodes:
        view = views.get(node.id)
        if view is not None:
            out[node.id] = _node_view(node, view, others, refs, support[node.id], namespaces[node.namespace_id], ended)
    return out


def _node_view(
    node: GraphNode,
    view: Computed,
    others: dict[int, tuple[str, str]],
    refs: dict[int, Event],
    support: list[int],
    namespace: str,
    ended: dict[str, dict[int, tuple[EndedBy, ...]]],
) -> NodeView:
    node_id = node.id

    def edge_view(edge: GraphEdge, sources: list[int], current: bool) -> EdgeView:
        other_id = edge.to_node_id if edge.from_node_id == node_id else edge.from_node_id
        other_name, other_type = others[other_id]
        return EdgeView(
            id=edge.id,
            relation=edge.relation,
            status=edge.status,
            current=current,
            other_id=other_id,
            other_name=other_name,
            other_type=other_type,
            valid_from=edge.valid_from,
            valid_to=edge.valid_to,
            confidence=edge.confidence,
            source_event_ids=tuple(sorted(sources, reverse=True)[:GRAPH_PROVENANCE_LIMIT]),
            ended_by=() if current else ended["edge"].get(edge.id, ()),
        )

    ordered = [(e, s, True) for e, s in view.current_edges] + [
        (e, s, False) for e, s in sorted(view.historical_edges, key=lambda p: -p[0].id)
    ]
    edges_out = tuple(edge_view(e, s, c) for e, s, c in ordered if e.from_node_id == node_id)
    edges_in = tuple(edge_view(e, s, c) for e, s, c in ordered if e.to_node_id == node_id)
    events = [
        EventRef(r.id, r.title, r.status, r.happened_start)
        for r in (refs.get(i) for i in support)
        if r is not None and r.status in LIVE
    ]
    return NodeView(
        id=node.id,
        namespace=namespace,
        name=node.name,
        type=node.type,
        aliases=tuple(view.aliases),
        tags=tuple(view.tags),
        status=node.status,
        confidence=node.confidence,
        current_state=render_state(view.current_facts),
        current_facts=tuple(_fact_view(f, s) for f, s in view.current_facts),
        historical_facts=tuple(
            _fact_view(f, s, ended["fact"].get(f.id, ()))
            for f, s in sorted(view.historical_facts, key=lambda p: -p[0].id)
        ),
        edges_out=edges_out,
        edges_in=edges_in,
        events=tuple(events),
    )


def list_nodes(
    namespace: str | None = None, type: str | None = None, query: str | None = None, limit: int = 200
) -> list[NodeRow]:
    """Visible nodes, best supported first; ``query`` matches a substring of name or aliases."""
    if type is not None and type not in NODE_TYPES:
        raise InvalidInputError(f"node type must be one of {', '.join(NODE_TYPES)}, got {type!r}")
    select = GraphNode.select().where(GraphNode.status.in_(CURRENT))
    if namespace is not None:
        select = select.where(GraphNode.namespace == get_namespace(namespace))
    if type is not None:
        select = select.where(GraphNode.type == type)
    nodes = list(select.order_by(GraphNode.id))
    names = {n.id: n.name for n in Namespace.select(Namespace.id, Namespace.name)}
    needle = norm_text(query) if query and query.strip() else None
    if needle:  # cheap pre-filter on the stored names; visibility of aliases is checked below
        nodes = [
            n
            for n in nodes
            if any(needle in norm_text(v) for v in [n.name, *(a for a in n.aliases or [] if isinstance(a, str))])
        ]
    rows = []
    for view in compute_views(nodes).values():
        if not view.visible:
            continue
        if needle and not any(needle in norm_text(v) for v in [view.node.name, *view.aliases]):
            continue
        rows.append(
            NodeRow(
                id=view.node.id,
                namespace=names.get(view.node.namespace_id, ""),
                name=view.node.name,
                type=view.node.type,
                aliases=tuple(view.aliases),
                facts=len(view.current_facts),
                edges=len(view.current_edges) + len(view.historical_edges),
                events=len(view.all_sources()),
                events_more=view.sources_more,
            )
        )
    rows.sort(key=lambda r: (-r.events, -r.facts - r.edges, r.name.casefold(), r.id))
    return rows[: clamp(limit, 1, LIST_MAX, 200)]


def find_node(ref: str | int, namespace: str | None = None) -> int:
    """The id of the node ``ref`` names: an id, or a visible node's name or alias (any case). A name
    that several nodes answer to is an error listing them; so is one no visible node has."""
    if isinstance(ref, int) or (isinstance(ref, str) and ref.strip().isdigit()):
        return int(ref)
    text = " ".join(str(ref).split())
    if not text:
        raise InvalidInputError("a node is named by its id or its name")
    rows = list_nodes(namespace, query=text, limit=LIST_MAX)
    wanted = entity_key(text)
    exact = [r for r in rows if wanted in {entity_key(v) for v in (r.name, *r.aliases)}]
    found = exact or rows
    if len(found) == 1:
        return found[0].id
    if not found:
        where = f" in namespace {namespace!r}" if namespace else ""
        raise NotFoundError(f"no visible graph node is named {text!r}{where} (`strata graph --query` lists them)")
    listed = ", ".join(f"{r.name} ({r.type} {r.id})" for r in found[:8]) + (", …" if len(found) > 8 else "")
    raise InvalidInputError(f"{len(found)} nodes answer to {text!r}: {listed}; give the id")


__all__ = [
    "Computed",
    "EdgeView",
    "EventRef",
    "FactView",
    "GRAPH_PROVENANCE_LIMIT",
    "NODES_BY_ID",
    "NodeRow",
    "NodeView",
    "compute_views",
    "event_statuses",
    "find_node",
    "first_mention",
    "list_nodes",
    "newest_sources",
    "node_view",
    "node_views",
    "render_state",
    "visible_metadata",
]
