"""Graph projection: events become nodes, facts and edges that cite them.

A graph job hands a batch of events (plus the nodes and edges they most likely touch) to
the provider, then validates and applies the proposal in one write transaction. Events
stay the only truth: every record cites the events behind it, and the effective view
shows a record only while at least one of those events is still visible.

Deliberate deviation from the reference: only *functional* keys and relations (one
value at a time, such as ``lives_in`` or ``works_at``) supersede the previous value. A
person who uses two tools keeps both ``uses`` facts and edges current.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import timezone
from typing import Any, Callable, Iterable, Sequence

from peewee import Value, fn

from core.db import (
    LIST_MAX,
    Prepared,
    any_of,
    bulk_insert,
    chunks,
    clamp,
    db,
    insert_one,
    is_row_id,
    is_sqlite,
    save_one,
    update_by_id,
    write_transaction,
)
from core.errors import InvalidInputError, NotFoundError
from core.models import (
    CURRENT, EVENT_STATUS_INDEX, LIVE, Event, EventSource, GraphEdge, GraphFact, GraphNode, GraphSource, Job, Message,
    Namespace,
)
from core.providers.base import UNNAMED_USER, ProviderOutputError
from core.vocab import NODE_TYPES, RECORD_STATUSES
from core.search.tokenize import normalize as norm_text
from core.services import jobs as jobsvc
from core.services.graph_endings import EndedBy, EndingLog, reasons
from core.services.graph_vocab import FUNCTIONAL_RELATIONS, is_functional, relation_key, render_value
from core.services.graph_names import entity_key, node_names, padded
from core.services.spaces import bump_revision, get_namespace
from core.timeutil import now_iso, parse_timestamp, period_bounds

PROJECTOR_VERSION = 1

MAX_NODES = 24
MAX_EDGES = 32
MAX_SOURCES = 64
MAX_ALIASES = 20
MAX_TAGS = 12
MAX_FACT_KEY = 160
MAX_FACT_CHARS = 1200
MAX_FACT_ITEMS = 40
MAX_RELATION = 100
MAX_REASON = 500
DEFAULT_CONFIDENCE = 0.8
GRAPH_PROVENANCE_LIMIT = 6

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

def _value_key(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(sorted(norm_text(v) for v in value))
    return norm_text(str(value))


def _as_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _status_of(node: GraphNode) -> str:
    """The status a node's new current fact gets: the node's own."""
    return node.status if node.status in RECORD_STATUSES else "active"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


# The statements derivation runs for every job, rendered once (see core.db.Prepared).
_STATUSES = Prepared(lambda ids: Event.select(Event.id, Event.status).where(Event.id.in_(ids)).tuples())
_NODES = Prepared(lambda ids: GraphNode.select().where(GraphNode.id.in_(ids)))
# What an edge shows of its other end (no JSON columns decoded for a hub's hundred neighbours).
_NODE_NAMES = Prepared(lambda ids: GraphNode.select(GraphNode.id, GraphNode.name, GraphNode.type).where(
    GraphNode.id.in_(ids)).tuples())
_BATCH_EVENTS = Prepared(lambda ids, ns: Event.select().where(Event.id.in_(ids) & (Event.namespace == ns)))
_LIVE_BATCH_EVENTS = Prepared(lambda ids, ns: Event.select().where(
    Event.id.in_(ids) & (Event.namespace == ns) & Event.status.in_(LIVE)).order_by(Event.id))
_FACTS_OF = Prepared(lambda node, key: GraphFact.select().where(
    (GraphFact.node == node) & (GraphFact.key == key)).order_by(GraphFact.id))
_EDGES_FROM = Prepared(lambda source, relation, target, to_target, current: GraphEdge.select().where(
    (GraphEdge.from_node == source) & (GraphEdge.relation == relation) & (
        ((GraphEdge.to_node == target) | GraphEdge.status.in_(CURRENT)) if to_target and current
        else (GraphEdge.to_node == target) if to_target else GraphEdge.status.in_(CURRENT))))
_SET_PARTICIPANTS = Prepared(lambda stored, event_id: Event.update(
    {Event.participant_node_ids: Value(stored)}).where(Event.id == event_id))
_TOUCH = {model: Prepared(lambda now, ids, model=model: model.update(updated_at=now).where(model.id.in_(ids)))
          for model in (GraphFact, GraphEdge)}


def _event_statuses(ids: Iterable[int]) -> dict[int, str]:
    ids = list(dict.fromkeys(ids))
    out: dict[int, str] = {}
    for part in chunks(ids):
        for event_id, status in _STATUSES.rows(list(part)):
            out[event_id] = status
    return out


def _chronology(event: Event) -> tuple[float, str] | None:
    """(epoch, text) of happened start, else happened end, else mentioned, else created."""
    for text in (event.happened_start, event.happened_end):
        bounds = period_bounds(text, timezone.utc) if text else None
        if bounds:
            return bounds[0], text
    if event.mentioned_at:
        if event.mentioned_ts is not None:
            return event.mentioned_ts, event.mentioned_at
        bounds = period_bounds(event.mentioned_at, timezone.utc)
        if bounds:
            return bounds[0], event.mentioned_at
    try:
        return parse_timestamp(event.created_at).timestamp(), event.created_at
    except Exception:  # a malformed legacy timestamp only loses its ordering
        return None


def _latest(event: Event) -> float | None:
    """The latest instant an event's own time can mean: the end of the period it happened in
    ("last week" is the whole week), else its chronology instant."""
    for text in (event.happened_end, event.happened_start):
        bounds = period_bounds(text, timezone.utc) if text else None
        if bounds:
            return bounds[1]
    known = _chronology(event)
    return known[0] if known else None


def _edge_slot(source_id: int, relation: str, target_id: int, functional: bool) -> list[GraphEdge]:
    """Every edge that says where an edge's slot stood: all edges of a one-value relation from the
    source, else the ones to the edge's target."""
    query = GraphEdge.select().where((GraphEdge.from_node == source_id) & (GraphEdge.relation == relation))
    if not functional:
        query = query.where(GraphEdge.to_node == target_id)
    return list(query)


def _given_time(value: Any) -> str | None:
    """A time a proposal gives itself (``valid_from``, ``valid_to``), when it gives one."""
    return value.strip()[:64] if isinstance(value, str) and value.strip() else None


def _epoch(text: str | None) -> float | None:
    bounds = period_bounds(text, timezone.utc) if text else None
    return bounds[0] if bounds else None


# ----------------------------------------------------------------------------- applying


@dataclass
class ApplyResult:
    node_ids: list[int] = field(default_factory=list)
    edge_ids: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _NodePlan:
    index: int
    raw: dict[str, Any]
    ref: str
    name: str
    type: str
    sources: list[int]
    name_sources: list[int]


def _metadata_provenance(entries: Any, sources_of) -> dict[str, list[int]]:
    """Provenance entries {value, source_event_ids} as normalised value -> valid sources."""
    out: dict[str, list[int]] = {}
    if not isinstance(entries, list):
        return out
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("value"), str):
            continue
        key = entity_key(entry["value"])
        ids = sources_of(entry.get("source_event_ids"))
        if key and ids:
            out[key] = list(dict.fromkeys(out.get(key, []) + ids))
    return out


def _merge_ids(*lists: Iterable[int]) -> list[int]:
    return list(dict.fromkeys(i for ids in lists for i in ids))


# Field provenance keeps the newest ids only: GraphSource holds every citation, and a node
# named in thousands of events must not carry (and rewrite) all their ids in its row.
PROVENANCE_IDS = 64


def _provenance_ids(*lists: Iterable[int]) -> list[int]:
    return sorted(set(_merge_ids(*lists)))[-PROVENANCE_IDS:]


_NODE_COLUMNS = ("namespace", "name", "name_norm", "type", "aliases", "tags", "provenance", "status", "confidence",
                 "created_at", "updated_at")


class _Applier:
    """Applies one validated proposal; must run inside a write transaction."""

    def __init__(self, namespace_id: int, batch_event_ids: Sequence[int]) -> None:
        self.namespace_id = namespace_id
        batch = [i for i in (_as_id(v) for v in batch_event_ids) if i is not None]
        self.events: dict[int, Event] = {}
        for part in chunks(list(dict.fromkeys(batch))):
            for event in _BATCH_EVENTS.rows(list(part), namespace_id):
                self.events[event.id] = event
        self.live = {i for i, e in self.events.items() if e.status in LIVE}
        self.active = {i for i, e in self.events.items() if e.status == "active"}
        self.now = now_iso()
        self.result = ApplyResult()
        self.names = node_names(namespace_id)
        self._loaded: dict[int, GraphNode] = {}
        self._cites: dict[int, set[int]] = {}  # event id -> node ids citing it
        self._citations: dict[tuple[str, int, int], None] = {}  # written in one statement by flush()
        self._touched: dict[type, set[int]] = {GraphFact: set(), GraphEdge: set()}  # re-stated, gets updated_at
        self._edges: dict[tuple[int, str], dict[int, GraphEdge]] = {}  # (from, relation) -> loaded edges
        self._edge_reads: set[tuple[int, str, int | None]] = set()  # (from, relation, to or None=current)
        self._live_known: dict[int, bool] = {}  # event id -> live, read by resolve()
        self._endings = EndingLog(self.now)  # why records end, so a forgotten reason revives them

    def warn(self, text: str) -> None:
        self.result.warnings.append(text)

    def sources(self, cited: Any) -> list[int]:
        """All cited ids (deduplicated, at most 64) must be batch events that are still live."""
        if not isinstance(cited, list):
            return []
        ids: list[int] = []
        for value in cited:
            event_id = _as_id(value)
            if event_id is None:
                return []
            ids.append(event_id)
        ids = list(dict.fromkeys(ids))[:MAX_SOURCES]
        if not ids or any(i not in self.live for i in ids):
            return []
        return ids

    def valid_from(self, given: Any, sources: Sequence[int]) -> str:
        if (stated := _given_time(given)) is not None:
            return stated
        keys = [k for k in (_chronology(self.events[i]) for i in sources if i in self.events) if k]
        return max(keys)[1] if keys else self.now

    def latest(self, given: Any, sources: Sequence[int]) -> float | None:
        """The latest instant the statement's time can mean, for ordering it against other values:
        a date stated at week or month precision may fall after a value begun inside that period."""
        if (stated := _given_time(given)) is not None:
            bounds = period_bounds(stated, timezone.utc)
            return bounds[1] if bounds else None
        ends = [e for e in (_latest(self.events[i]) for i in sources if i in self.events) if e is not None]
        return max(ends) if ends else _epoch(self.now)

    # -- pre-pass -----------------------------------------------------------------

    def plan_nodes(self, raw_nodes: list[Any]) -> list[_NodePlan]:
        if len(raw_nodes) > MAX_NODES:
            self.warn(f"kept the first {MAX_NODES} of {len(raw_nodes)} nodes")
        plans: list[_NodePlan] = []
        seen_refs: set[str] = set()
        for index, raw in enumerate(raw_nodes[:MAX_NODES]):
            if not isinstance(raw, dict):
                self.warn(f"node {index} dropped: not an object")
                continue
            ref = raw.get("ref").strip() if isinstance(raw.get("ref"), str) else ""
            name = " ".join(raw.get("name").split())[:255] if isinstance(raw.get("name"), str) else ""
            node_type = raw.get("type").strip().lower() if isinstance(raw.get("type"), str) else ""
            if not ref or not name or node_type not in NODE_TYPES:
                self.warn(f"node {index} dropped: needs ref, name and a type among {', '.join(NODE_TYPES)}")
                continue
            if ref in seen_refs:
                self.warn(f"node {ref!r} dropped: duplicate ref")
                continue
            sources = self.sources(raw.get("source_event_ids"))
            if not sources:
                raise ProviderOutputError(
                    f"graph projection: node {ref!r} ({name}) has no valid source events; its provenance "
                    "must cite only events of this batch that are still active or superseded"
                )
            provenance = raw.get("provenance") if isinstance(raw.get("provenance"), dict) else {}
            name_sources = self.sources(provenance.get("name"))
            if not name_sources:
                raise ProviderOutputError(
                    f"graph projection: node {ref!r} ({name}) has no valid provenance.name; the events "
                    "giving its name must be live events of this batch"
                )
            seen_refs.add(ref)
            plans.append(_NodePlan(index, raw, ref, name, node_type, sources, name_sources))
        return plans

    # -- nodes --------------------------------------------------------------------

    def _clean_values(self, values: Any, limit: int, each: int, exclude: set[str]) -> list[str]:
        if not isinstance(values, list):
            return []
        out: dict[str, str] = {}
        for value in values:
            if not isinstance(value, str) or not value.strip():
                continue
            text = " ".join(value.split())[:each]
            key = entity_key(text)
            if key and key not in exclude and key not in out:
                out[key] = text
        return list(out.values())[:limit]

    def _proven(self, kind: str, ref: str, values: list[str], provenance: dict[str, list[int]]) -> list[tuple[str, list[int]]]:
        kept = []
        for value in values:
            ids = provenance.get(entity_key(value))
            if ids:
                kept.append((value, ids))
            else:
                self.warn(f"Dropped metadata value {kind} {value!r} of node {ref!r}: no provenance with valid sources")
        return kept

    @staticmethod
    def _legacy_keys(node: GraphNode) -> tuple[set[str], set[str]]:
        """(name keys, alias keys) resolution may match on a legacy node (no field provenance):
        its name while any source is visible, its aliases only while all of them are."""
        ids = [s for (s,) in GraphSource.select(GraphSource.event).where(
            (GraphSource.kind == "node") & (GraphSource.record_id == node.id)).tuples()]
        known = _event_statuses(ids)
        names = {entity_key(node.name)} if any(known.get(i) in LIVE for i in ids) else set()
        if not ids or not all(known.get(i) in LIVE for i in ids):
            return names, set()
        return names, {entity_key(a) for a in node.aliases or [] if isinstance(a, str)}

    def _index_node(self, node: GraphNode) -> None:
        """Make a created or re-aliased node visible to the rest of this projection (and later ones)."""
        self._loaded[node.id] = node
        self.names.note(node.id, node.name, node.aliases or [], node.type, node.status, node.updated_at)

    def resolve(self, node_type: str, keys: list[str]) -> GraphNode | None:
        """An existing node of the same type whose visible name or alias equals one of ``keys``."""
        wanted = set(keys)
        ids = sorted(self.names.with_keys(wanted, node_type))
        missing = [i for i in ids if i not in self._loaded]
        if missing:
            for node in _NODES.rows(missing):
                self._loaded[node.id] = node
        raw_hits = [self._loaded[i] for i in ids if i in self._loaded and self._loaded[i].status in CURRENT]
        by_name, by_alias = None, None
        for node in raw_hits:
            # Same choice as testing every node's exposed keys, but only the keys asked for are
            # checked, and a key is visible as soon as one of its sources is (newest first).
            if by_name is None and self._shows_name(node, wanted):
                by_name = node
            elif by_alias is None and self._shows_alias(node, wanted):
                by_alias = node
            if by_name is not None:
                break
        return by_name or by_alias

    def _any_live(self, ids: Any) -> bool:
        """Whether any of the event ids is live; reads newest first, a few at a time, cached
        for this projection (it changes no event's status)."""
        wanted = [i for i in reversed(ids or []) if isinstance(i, int) and not isinstance(i, bool)]
        if any(self._live_known.get(i) for i in wanted):
            return True
        unknown = [i for i in dict.fromkeys(wanted) if i not in self._live_known]
        step = 8
        while unknown:
            part, unknown = unknown[:step], unknown[step:]
            step *= 4
            statuses = _event_statuses(part)
            for i in part:
                self._live_known[i] = statuses.get(i) in LIVE
            if any(self._live_known[i] for i in part):
                return True
        return False

    def _shows_name(self, node: GraphNode, wanted: set[str]) -> bool:
        if entity_key(node.name) not in wanted:
            return False
        prov = node.provenance if isinstance(node.provenance, dict) else {}
        return self._any_live(prov.get("name", [])) if prov else bool(self._legacy_keys(node)[0] & wanted)

    def _shows_alias(self, node: GraphNode, wanted: set[str]) -> bool:
        prov = node.provenance if isinstance(node.provenance, dict) else {}
        if not prov:
            return bool(self._legacy_keys(node)[1] & wanted)
        return any(
            isinstance(entry, dict) and entity_key(entry.get("value", "")) in wanted
            and self._any_live(entry.get("source_event_ids", []))
            for entry in prov.get("aliases", [])
        )

    def apply_node(self, plan: _NodePlan) -> GraphNode:
        raw = plan.raw
        provenance = raw.get("provenance") if isinstance(raw.get("provenance"), dict) else {}
        name_key = entity_key(plan.name)
        aliases = self._clean_values(raw.get("aliases"), MAX_ALIASES, 255, {name_key})
        tags = self._clean_values(raw.get("tags"), MAX_TAGS, 80, set())
        kept_aliases = self._proven("alias", plan.ref, aliases, _metadata_provenance(provenance.get("aliases"), self.sources))
        kept_tags = self._proven("tag", plan.ref, tags, _metadata_provenance(provenance.get("tags"), self.sources))
        confidence = raw.get("confidence")
        if not isinstance(confidence, (int, float)) or isinstance(confidence, bool) or not 0 <= confidence <= 1:
            confidence = DEFAULT_CONFIDENCE

        node = self._renamed(plan, name_key, kept_aliases) or self.resolve(
            plan.type, [name_key] + [entity_key(a) for a, _ in kept_aliases])
        if node is None:
            # Built in memory and inserted once with its metadata.
            node = GraphNode(
                namespace=self.namespace_id,
                name=plan.name,
                name_norm=name_key[:255],
                type=plan.type,
                aliases=[],
                tags=[],
                provenance={"name": list(plan.name_sources), "aliases": [], "tags": []},
                status="active",
                confidence=float(confidence),
                created_at=self.now,
                updated_at=self.now,
            )
            self._add_metadata(node, plan.ref, kept_aliases, kept_tags)
            node = insert_one(GraphNode, {name: node.__data__[name] for name in _NODE_COLUMNS})
        else:
            prov = node.provenance if isinstance(node.provenance, dict) and node.provenance else None
            if prov is None:
                prov = self._seed_provenance(node)
            prov.setdefault("name", [])
            prov.setdefault("aliases", [])
            prov.setdefault("tags", [])
            node.provenance = prov
            if entity_key(node.name) == name_key:
                prov["name"] = _provenance_ids(prov["name"], plan.name_sources)
            else:
                # A differing proposal name becomes an alias proven by the name's provenance.
                kept_aliases.insert(0, (plan.name, list(plan.name_sources)))
            self._add_metadata(node, plan.ref, kept_aliases, kept_tags)
            node.updated_at = self.now
            save_one(node)
        self._index_node(node)

        cited = _merge_ids(plan.sources, plan.name_sources, *(ids for _, ids in kept_aliases),
                           *(ids for _, ids in kept_tags))
        self._cite("node", node.id, cited)
        for event_id in cited:
            self._cites.setdefault(event_id, set()).add(node.id)
        if node.id not in self.result.node_ids:
            self.result.node_ids.append(node.id)
        return node

    def _renamed(self, plan: _NodePlan, name_key: str, kept_aliases: list[tuple[str, list[int]]]) -> GraphNode | None:
        """A stored node the proposal says was named wrongly (``renames``), now under the plan's
        name, with the wrong name kept as an alias (old events still say it); None when there is
        none, or when a node already bears the right name (the two are not merged)."""
        raw = plan.raw.get("renames")
        wrong = [entity_key(v) for v in raw[:MAX_ALIASES] if isinstance(v, str) and v.strip()] if isinstance(
            raw, list) else []
        if not wrong or self.resolve(plan.type, [name_key]) is not None:
            return None
        node = self.resolve(plan.type, wrong)
        if node is None or entity_key(node.name) not in wrong:
            return None
        prov = node.provenance if isinstance(node.provenance, dict) and node.provenance else self._seed_provenance(node)
        kept_aliases.insert(0, (node.name, list(prov.get("name") or plan.name_sources)))
        prov["name"] = []  # the applier adds the plan's name sources
        node.provenance = prov
        node.name, node.name_norm = plan.name, name_key[:255]
        return node

    @staticmethod
    def _seed_provenance(node: GraphNode) -> dict[str, Any]:
        """Field provenance for a legacy node: every metadata value cites the node's sources."""
        ids = [i for (i,) in GraphSource.select(GraphSource.event).where(
            (GraphSource.kind == "node") & (GraphSource.record_id == node.id)).order_by(GraphSource.event).tuples()]
        return {
            "name": list(ids),
            "aliases": [{"value": a, "source_event_ids": list(ids)} for a in node.aliases or [] if isinstance(a, str)],
            "tags": [{"value": t, "source_event_ids": list(ids)} for t in node.tags or [] if isinstance(t, str)],
        }

    def _add_metadata(self, node: GraphNode, ref: str, aliases: list[tuple[str, list[int]]],
                      tags: list[tuple[str, list[int]]]) -> None:
        prov = node.provenance
        name_key = entity_key(node.name)
        current_aliases = list(node.aliases or [])
        for value, ids in aliases:
            key = entity_key(value)
            if key == name_key:
                prov["name"] = _provenance_ids(prov["name"], ids)
                continue
            entry = next((e for e in prov["aliases"] if entity_key(e.get("value", "")) == key), None)
            if entry is None and any(entity_key(a) == key for a in current_aliases):
                entry = {"value": value, "source_event_ids": []}
                prov["aliases"].append(entry)
            if entry is None:
                if len(current_aliases) >= MAX_ALIASES:
                    self.warn(f"Dropped metadata value alias {value!r} of node {ref!r}: the node has {MAX_ALIASES} aliases")
                    continue
                prov["aliases"].append({"value": value, "source_event_ids": list(ids)})
                current_aliases.append(value)
            else:
                entry["source_event_ids"] = _provenance_ids(entry.get("source_event_ids", []), ids)
        current_tags = list(node.tags or [])
        for value, ids in tags:
            key = entity_key(value)
            entry = next((e for e in prov["tags"] if entity_key(e.get("value", "")) == key), None)
            if entry is None and any(entity_key(t) == key for t in current_tags):
                entry = {"value": value, "source_event_ids": []}
                prov["tags"].append(entry)
            if entry is None:
                if len(current_tags) >= MAX_TAGS:
                    self.warn(f"Dropped metadata value tag {value!r} of node {ref!r}: the node has {MAX_TAGS} tags")
                    continue
                prov["tags"].append({"value": value, "source_event_ids": list(ids)})
                current_tags.append(value)
            else:
                entry["source_event_ids"] = _provenance_ids(entry.get("source_event_ids", []), ids)
        node.aliases = current_aliases
        node.tags = current_tags
        node.provenance = dict(prov)

    def _cite(self, kind: str, record_id: int, event_ids: Iterable[int]) -> None:
        for event_id in event_ids:
            self._citations[(kind, record_id, event_id)] = None

    def flush(self) -> None:
        """Write the collected citations and touches (nothing in a projection reads them back)."""
        bulk_insert(GraphSource, ["kind", "record_id", "event_id"], list(self._citations), ignore_conflicts=True)
        self._citations.clear()
        self._endings.flush()
        for model, ids in self._touched.items():
            for part in chunks(sorted(ids)):
                _TOUCH[model].execute(self.now, list(part))
            ids.clear()

    # -- facts --------------------------------------------------------------------

    def _clean_fact_value(self, value: Any) -> str | list[str] | None:
        if isinstance(value, str):
            text = value.strip()
            return _clip(text, MAX_FACT_CHARS) if text else None
        if isinstance(value, list):
            items = [_clip(v.strip(), MAX_FACT_CHARS) for v in value if isinstance(v, str) and v.strip()]
            items = list(dict.fromkeys(items))[:MAX_FACT_ITEMS]
            return items or None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        return None

    def apply_facts(self, plan: _NodePlan, node: GraphNode) -> None:
        raw = plan.raw
        facts = list(raw.get("facts")) if isinstance(raw.get("facts"), list) else []
        if isinstance(raw.get("state"), str) and raw["state"].strip():
            facts.insert(0, {"key": "state", "value": raw["state"], "source_event_ids": plan.sources})
        for index, fact in enumerate(facts):
            where = f"fact {index} of node {plan.ref!r}"
            if not isinstance(fact, dict) or not isinstance(fact.get("key"), str):
                self.warn(f"{where} dropped: needs a key")
                continue
            key = relation_key(fact["key"])[:MAX_FACT_KEY]
            value = self._clean_fact_value(fact.get("value"))
            if not key or value is None:
                self.warn(f"{where} dropped: empty key or value")
                continue
            sources = self.sources(fact.get("source_event_ids"))
            if not sources:
                self.warn(f"{where} ({key}) dropped: no valid source events")
                continue
            ended = fact.get("status") == "superseded"
            if node.status in CURRENT and not ended and not any(i in self.active for i in sources):
                self.warn(f"{where} ({key}) dropped: a current fact needs an active source event")
                continue
            given = fact.get("valid_from") or raw.get("valid_from")
            valid_from, latest = self.valid_from(given, sources), self.latest(given, sources)
            if ended:
                self._end_fact(node, key, value, sources, valid_from, latest, _given_time(fact.get("valid_to")))
            else:
                self._write_fact(node, key, value, sources, valid_from, latest)

    def _end_fact(self, node: GraphNode, key: str, value: Any, sources: list[int], stated: str,
                  latest: float | None, valid_to: str | None) -> None:
        """A fact stated as ended ("stopped using Vim"): the current fact with that value ends
        when the statement says (``valid_to``, else the time of its events); with none current,
        it is kept as history. A current fact that began after the statement is left alone."""
        wanted = _value_key(value)
        same = [f for f in _FACTS_OF.rows(node.id, key) if _value_key(f.value) == wanted]
        if self._end("fact", same, stated, latest, valid_to, sources):
            return
        fact = next((f for f in same if f.status == "superseded"), None)
        created = fact is None
        if fact is None:
            fact = insert_one(GraphFact, dict(
                node=node.id, key=key, value=value, status="superseded", valid_from=None,  # start unknown
                valid_to=valid_to or stated, confidence=node.confidence, created_at=self.now, updated_at=self.now,
            ))
        else:
            self._touched[GraphFact].add(fact.id)
        self._history("fact", fact, created, [("event", i) for i in sources], _status_of(node))
        self._cite("fact", fact.id, sources)

    def _write_fact(self, node: GraphNode, key: str, value: Any, sources: list[int], valid_from: str,
                    latest: float | None) -> None:
        status = _status_of(node)
        valid_to = None
        newer: list[GraphFact] = []  # the current values an older one arriving late is history behind
        # One read serves both the rivals (current values) and the record to update.
        known = _FACTS_OF.rows(node.id, key)
        current = [f for f in known if f.status in CURRENT]
        wanted = _value_key(value)
        same = [f for f in known if _value_key(f.value) == wanted]

        def slot() -> list[GraphFact]:  # the records a start moving back must not pass
            return known if is_functional(key) else same

        if status in CURRENT and (stretch := self._stretch_of(same, latest)) is not None:
            self._touched[GraphFact].add(stretch.id)
            self._held_earlier(stretch, valid_from, slot)
            self._cite("fact", stretch.id, sources)
            return
        rivals = [f for f in current if _value_key(f.value) != wanted] if is_functional(key) else []
        if rivals and status in CURRENT:
            valid_to = self._older_than(latest, [f.valid_from for f in rivals])
            if valid_to is not None:
                status, rivals, newer = "superseded", [], rivals
        fact = next((f for f in same if f.status == status), None)
        created = fact is None
        if fact is None:
            fact = insert_one(GraphFact, dict(
                node=node.id, key=key, value=value, status=status, valid_from=valid_from, valid_to=valid_to,
                confidence=node.confidence, created_at=self.now, updated_at=self.now,
            ))
        else:
            self._touched[GraphFact].add(fact.id)
            if status in CURRENT:
                self._endings.restated("fact", fact.id, valid_from)
            self._held_earlier(fact, valid_from, slot)
        if newer:
            self._history("fact", fact, created, [("fact", f.id) for f in newer], _status_of(node))
        for rival in rivals:
            self._supersede("fact", rival, valid_from, [("fact", fact.id)])
        self._cite("fact", fact.id, sources)

    def _end(self, kind: str, records: list, stated: str, latest: float | None, valid_to: str | None,
             sources: list[int]) -> list:
        """End the current ``records`` a statement says have ended (one begun after the statement
        stays): superseded at ``valid_to``, else the statement's time, citing the statement."""
        ending = [r for r in records if r.status in CURRENT and self._older_than(latest, [r.valid_from]) is None]
        for record in ending:
            self._supersede(kind, record, valid_to or stated, [("event", i) for i in sources])
            self._cite(kind, record.id, sources)
        return ending

    def _supersede(self, kind: str, record: GraphFact | GraphEdge, valid_to: str,
                   causes: list[tuple[str, int]]) -> None:
        """A current fact or edge becomes history, ending at ``valid_to`` because of ``causes``.

        It never ends before it began: a change dated "last week" ends a value said to hold on a
        day of that week when that value was said, not at the start of the week."""
        began, ends = _epoch(record.valid_from), _epoch(valid_to)
        if began is not None and ends is not None and ends < began:
            valid_to = record.valid_from
        self._endings.add(kind, record.id, causes, valid_to, record.status, record.valid_to)
        record.status, record.valid_to, record.updated_at = "superseded", valid_to, self.now
        save_one(record)

    def _history(self, kind: str, record: GraphFact | GraphEdge, created: bool, causes: list[tuple[str, int]],
                 would_be: str) -> None:
        """Note why a record written as history is history. A new one could have been ``would_be``
        (what it goes back to once no reason stands); an old one only gains another reason."""
        self._endings.add(kind, record.id, causes, record.valid_to, would_be if created else None, None)

    @staticmethod
    def _older_than(latest: float | None, rival_froms: list[str | None]) -> str | None:
        """When a new value is strictly older than every current one (even at the latest its own
        time can mean) it is history, not news: return the valid_to it gets (the earliest rival
        start); else None."""
        theirs = [(_epoch(t), t) for t in rival_froms]
        if latest is None or not theirs or any(e is None for e, _ in theirs):
            return None
        earliest = min(theirs)
        return earliest[1] if latest < earliest[0] else None

    @staticmethod
    def _stretch_of(records: Sequence, latest: float | None):
        """The ended stretch of a value that a statement older than its end falls in ("I'm vegetarian"
        said in January, read after "not vegetarian since February"): the superseded record that
        ended soonest after the statement, unless a current record of the value had begun by then."""
        if latest is None:
            return None
        if any(r.status in CURRENT and (_epoch(r.valid_from) or 0.0) <= latest for r in records):
            return None
        ended = [(e, r.id, r) for r in records if r.status == "superseded"
                 and (e := _epoch(r.valid_to)) is not None and latest < e]
        return min(ended)[2] if ended else None

    def _held_earlier(self, record: GraphFact | GraphEdge, valid_from: str,
                      others: Callable[[], Sequence[GraphFact | GraphEdge]]) -> None:
        """A record said again by an older statement held since then: its start moves back, unless
        an ended record among ``others()`` (another value of a one-value slot, or another stretch of
        this value; read only when the start would move) overlaps the time between."""
        new, old = _epoch(valid_from), _epoch(record.valid_from)
        if new is None or old is None or new >= old:
            return
        for other in others():
            began, ended = _epoch(other.valid_from), _epoch(other.valid_to)
            if other.id != record.id and ended is not None and ended > new and (began is None or began < old):
                return
        record.valid_from = valid_from
        save_one(record)

    # -- edges --------------------------------------------------------------------

    def apply_edges(self, raw_edges: list[Any], refs: dict[str, GraphNode]) -> None:
        if len(raw_edges) > MAX_EDGES:
            self.warn(f"kept the first {MAX_EDGES} of {len(raw_edges)} edges")
        for index, raw in enumerate(raw_edges[:MAX_EDGES]):
            where = f"edge {index}"
            if not isinstance(raw, dict):
                self.warn(f"{where} dropped: not an object")
                continue
            source, target = refs.get(raw.get("from_ref")), refs.get(raw.get("to_ref"))
            if source is None or target is None:
                self.warn(f"{where} dropped: from_ref and to_ref must be nodes of this projection")
                continue
            if source.id == target.id:
                self.warn(f"{where} dropped: self-loop on node {source.id}")
                continue
            relation = relation_key(raw["relation"])[:MAX_RELATION] if isinstance(raw.get("relation"), str) else ""
            if not relation:
                self.warn(f"{where} dropped: empty relation")
                continue
            sources = self.sources(raw.get("source_event_ids"))
            if not sources:
                self.warn(f"{where} ({relation}) dropped: no valid source events")
                continue
            status = raw.get("status") if raw.get("status") in RECORD_STATUSES else "active"
            if status in CURRENT and not any(i in self.active for i in sources):
                self.warn(f"{where} ({relation}) dropped: a current edge needs an active source event")
                continue
            confidence = raw.get("confidence")
            if not isinstance(confidence, (int, float)) or isinstance(confidence, bool) or not 0 <= confidence <= 1:
                confidence = DEFAULT_CONFIDENCE
            valid_to = _given_time(raw.get("valid_to"))
            edge = self._write_edge(source, target, relation, status, sources,
                                    self.valid_from(raw.get("valid_from"), sources),
                                    self.latest(raw.get("valid_from"), sources), valid_to, float(confidence),
                                    given_from=_given_time(raw.get("valid_from")))
            if edge.id not in self.result.edge_ids:
                self.result.edge_ids.append(edge.id)

    def _write_edge(self, source: GraphNode, target: GraphNode, relation: str, status: str, sources: list[int],
                    valid_from: str, latest: float | None, valid_to: str | None, confidence: float,
                    given_from: str | None = None) -> GraphEdge:
        # Read only what the decision needs — the edges to this target and, for a functional
        # relation, the current ones — never every edge of a much-connected node. The loaded
        # edges are kept for the rest of the projection and follow its own writes.
        functional = is_functional(relation)
        loaded = self._edges.setdefault((source.id, relation), {})
        to_target = (source.id, relation, target.id) not in self._edge_reads
        current = functional and (source.id, relation, None) not in self._edge_reads
        if to_target:
            self._edge_reads.add((source.id, relation, target.id))
        if current:
            self._edge_reads.add((source.id, relation, None))
        if to_target or current:
            for edge in _EDGES_FROM.rows(source.id, relation, target.id if to_target else None, to_target, current):
                loaded.setdefault(edge.id, edge)
        known = sorted(loaded.values(), key=lambda e: e.id)
        if status == "superseded":
            # Stated as ended ("no longer works at Acme"): the current edge to that target ends
            # when the statement says, unless it began after the statement (it started again).
            ending = self._end("edge", [e for e in known if e.to_node_id == target.id], valid_from, latest, valid_to,
                               sources)
            if ending:
                return ending[0]
            # History only: it ended when stated; when it began is unknown unless the proposal says.
            valid_to, valid_from = valid_to or valid_from, given_from

        def slot() -> list[GraphEdge]:
            return _edge_slot(source.id, relation, target.id, functional)

        if status in CURRENT and (stretch := self._stretch_of([e for e in known if e.to_node_id == target.id],
                                                               latest)) is not None:
            self._touched[GraphEdge].add(stretch.id)
            self._held_earlier(stretch, valid_from, slot)
            self._cite("edge", stretch.id, sources)
            return stretch
        rivals: list[GraphEdge] = []
        causes = [("event", i) for i in sources] if status == "superseded" else []
        would_be = "active"
        if status in CURRENT and functional:
            rivals = [e for e in known if e.status in CURRENT and e.to_node_id != target.id]
            older = self._older_than(latest, [e.valid_from for e in rivals]) if rivals else None
            if older is not None:
                causes, would_be = [("edge", e.id) for e in rivals], status
                status, valid_to, rivals = "superseded", older, []
        edge = next((e for e in known if e.to_node_id == target.id and e.status == status), None)
        created = edge is None
        if edge is None:
            edge = insert_one(GraphEdge, dict(
                namespace=self.namespace_id, from_node=source.id, to_node=target.id, relation=relation,
                status=status, valid_from=valid_from, valid_to=valid_to, confidence=confidence,
                created_at=self.now, updated_at=self.now,
            ))
            loaded[edge.id] = edge
        else:
            self._touched[GraphEdge].add(edge.id)
            if status in CURRENT:
                self._endings.restated("edge", edge.id, valid_from)
            if valid_from:
                self._held_earlier(edge, valid_from, slot)
        if causes:
            self._history("edge", edge, created, causes, would_be)
        for rival in rivals:
            self._supersede("edge", rival, valid_from, [("edge", edge.id)])
        self._cite("edge", edge.id, sources)
        return edge

    # -- events -------------------------------------------------------------------

    def link_participants(self) -> None:
        for event_id, node_ids in self._cites.items():
            event = self.events.get(event_id)
            if event is None:
                continue
            current = list(event.participant_node_ids or [])
            merged = current + sorted(n for n in node_ids if n not in current)
            if merged != current:
                _SET_PARTICIPANTS.execute(Event.participant_node_ids.db_value(merged), event_id)
                event.participant_node_ids = merged


def apply_projection(namespace_id: int, batch_event_ids: Sequence[int], proposal: Any) -> ApplyResult:
    """Validate a projector proposal against its batch and write it (§6.2).

    Raises ProviderOutputError, with nothing written, when the proposal is malformed or a
    node lacks valid sources or name provenance; smaller defects are dropped with a
    warning in the result.
    """
    if not isinstance(proposal, dict):
        raise ProviderOutputError("graph projection result is not an object")
    raw_nodes = proposal.get("nodes", [])
    raw_edges = proposal.get("edges", [])
    if not isinstance(raw_nodes, list) or not isinstance(raw_edges, list):
        raise ProviderOutputError("graph projection: nodes and edges must be lists")
    with write_transaction():
        applier = _Applier(namespace_id, batch_event_ids)
        plans = applier.plan_nodes(raw_nodes)  # raises before any write
        refs: dict[str, GraphNode] = {}
        for plan in plans:
            node = applier.apply_node(plan)
            refs[plan.ref] = node
            applier.apply_facts(plan, node)
        applier.apply_edges(raw_edges, refs)
        applier.link_participants()
        applier.flush()
    return applier.result


# ----------------------------------------------------------------------------- the job


def _event_item(event: Event) -> dict[str, Any]:
    temporal = {
        key: value for key, value in (
            ("mentioned_at", event.mentioned_at),
            ("happened_start", event.happened_start),
            ("happened_end", event.happened_end),
            ("original_text", event.original_text),
            ("precision", event.precision),
            ("basis", event.basis),
            ("status", event.time_status),
            ("event_type", event.event_type),
            ("participants", list(event.participants or [])),
        ) if value not in (None, "")
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
    text = padded(" ".join(
        " ".join([e.title, e.summary, " ".join(e.quotes or []), " ".join(e.tags or [])]) for e in events
    ))
    names = node_names(namespace_id)
    named = names.with_keys(participants, first_names=True)  # "Priya" finds "Priya Raman"
    scored = [(2, i) for i in named] + [(1, i) for i in names.mentioned_in(text) - named]
    scored.sort(key=lambda item: (-item[0], -item[1]))
    chosen = [node_id for _, node_id in scored[: CONTEXT_NODES + CONTEXT_NODES // 2]]
    by_id = {n.id: n for n in _NODES.rows(chosen)} if chosen else {}
    return [by_id[i] for i in chosen if i in by_id]


def _context_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_clip(v, CONTEXT_ITEM_CHARS) for v in value[:CONTEXT_VALUE_ITEMS]]
    return _clip(str(value), CONTEXT_VALUE_CHARS)


def projection_context(job_id: int | None, namespace_id: int, events: Sequence[Event], *,
                       mentions: bool = False) -> dict[str, Any]:
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
        nodes.append({
            "id": view.node.id,
            "name": view.node.name,
            "type": view.node.type,
            "aliases": view.aliases[:CONTEXT_LIST],
            "tags": view.tags[:CONTEXT_LIST],
            "current_state": _clip(_render_state(view.current_facts), CONTEXT_STATE_CHARS),
            "facts": [{"key": f.key, "value": _context_value(f.value), "status": f.status} for f, _ in facts],
            "source_event_ids": view.all_sources()[:CONTEXT_SOURCES],
        })
        for edge, _ in view.current_edges:
            if edge.from_node_id in chosen_ids and edge.to_node_id in chosen_ids and len(edges) < CONTEXT_EDGES:
                edges.setdefault(edge.id, {
                    "id": edge.id,
                    "from_node_id": edge.from_node_id,
                    "to_node_id": edge.to_node_id,
                    "relation": edge.relation,
                    "status": edge.status,
                })
    context = {
        "job_id": job_id,
        "projector_version": PROJECTOR_VERSION,
        "events": [_event_item(e) for e in events],
        "nodes": nodes,
        "edges": list(edges.values()),
        "speakers": _speakers(events),
    }
    if mentions:
        from core.services.events import name_mentions

        batch = [e.id for e in events]
        context["mentions"] = lambda name: name_mentions(namespace_id, name, batch)
    return context


_SPEAKERS = Prepared(lambda event_ids: Message.select(Message.speaker, Message.role).distinct().join(
    EventSource, on=(EventSource.message == Message.id)).where(
    EventSource.event.in_(event_ids) & Message.role.in_(["user", "assistant"])
).tuples())


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
    return _clip(" | ".join(parts), MAX_REASON)


def propose_projection(job: Job, provider: Any) -> tuple[list[int], dict[str, Any]]:
    """(the job's event ids, the provider's proposal for those still live). Call outside any
    transaction: this is the model call."""
    batch = [i for i in (_as_id(v) for v in (job.payload or {}).get("event_ids", []) or []) if i is not None]
    events = []
    for part in chunks(batch):
        events.extend(_LIVE_BATCH_EVENTS.rows(list(part), job.namespace_id))
    proposal: Any = {"reason": "no live events in this batch", "nodes": [], "edges": []}
    if events:
        proposal = provider.project_graph(projection_context(
            job.id, job.namespace_id, events, mentions=getattr(provider, "reads_context_lazily", False)))
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
        payload.update({
            "projector_version": PROJECTOR_VERSION,
            "node_ids": result.node_ids,
            "edge_ids": result.edge_ids,
            "reason": _reason(result.warnings, proposal.get("reason")),
        })
        now = now_iso()
        update_by_id(Job, job.id, dict(status="succeeded", last_error=None, next_retry_at=None, payload=payload,
                                       updated_at=now))
        if result.node_ids or result.edge_ids:
            bump_revision(job.namespace_id, now)
    report.succeeded += 1


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
class _Computed:
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
        part = ids[start:start + 200]
        key = (len(part), SOURCE_WINDOW, type(database))
        sql = _WINDOW_SQL.get(key)
        if sql is None:
            q = database.quote[0] + "{}" + database.quote[1]
            hint = f" INDEXED BY {EVENT_STATUS_INDEX}" if is_sqlite() else ""  # see the index's note
            term = (f"SELECT * FROM (SELECT s.{q.format('record_id')}, s.{q.format('event_id')}, e.{q.format('status')} "
                    f"FROM {q.format(GraphSource._meta.table_name)} s JOIN {q.format(Event._meta.table_name)} e{hint} "
                    f"ON e.{q.format('id')} = s.{q.format('event_id')} WHERE s.{q.format('kind')} = {database.param} "
                    f"AND s.{q.format('record_id')} = {database.param} ORDER BY s.{q.format('event_id')} DESC "
                    f"LIMIT {SOURCE_WINDOW + 1}) AS w{{}}")
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


def _visible_metadata(node: GraphNode, kind: str, node_sources: list[tuple[int, str]],
                      statuses: dict[int, str]) -> list[str]:
    prov = node.provenance if isinstance(node.provenance, dict) else {}
    values = [v for v in (node.aliases if kind == "aliases" else node.tags) or [] if isinstance(v, str)]
    if not prov:
        exposed = bool(node_sources) and all(s in LIVE for _, s in node_sources)
        return values if exposed else []
    shown = {
        entity_key(entry.get("value", "")) for entry in prov.get(kind, [])
        if isinstance(entry, dict) and any(statuses.get(i) in LIVE for i in entry.get("source_event_ids", []))
    }
    return [v for v in values if entity_key(v) in shown]


# What a person's view of some nodes reads (node_view, list_nodes, search_graph): rendered once each.
_FACTS_OF_NODES = Prepared(lambda ids: GraphFact.select().where(GraphFact.node.in_(ids)).order_by(GraphFact.id))
_EDGES_TOUCHING = Prepared(lambda ids: GraphEdge.select().where(
    GraphEdge.from_node.in_(ids) | GraphEdge.to_node.in_(ids)).order_by(GraphEdge.id))
_NODE_STATUSES = Prepared(lambda ids: GraphNode.select(GraphNode.id, GraphNode.status).where(
    GraphNode.id.in_(ids)).tuples())
_ALL_SOURCES = Prepared(lambda kind, ids: GraphSource.select(GraphSource.record_id, GraphSource.event, Event.status)
                        .join(Event, on=(GraphSource.event == Event.id))
                        .where((GraphSource.kind == kind) & GraphSource.record_id.in_(ids))
                        .order_by(GraphSource.event.desc()).tuples())
_EVENT_REFS = Prepared(lambda ids: Event.select(Event.id, Event.title, Event.status, Event.happened_start).where(
    Event.id.in_(ids)))
_NAMESPACE = Prepared(lambda namespace_id: Namespace.select().where(Namespace.id == namespace_id))


def compute_views(nodes: Sequence[GraphNode]) -> dict[int, _Computed]:
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
    statuses.update(_event_statuses(missing - set(statuses)))

    out: dict[int, _Computed] = {}
    for node in nodes:
        view = _Computed(node=node)
        own = node_sources.get(node.id, [])
        view.node_sources = [i for i, s in own if s in LIVE]
        view.aliases = _visible_metadata(node, "aliases", own, statuses)
        view.tags = _visible_metadata(node, "tags", own, statuses)
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
            view.node_sources or view.current_facts or view.historical_facts
            or view.current_edges or view.historical_edges
        )
    return out


_NEWEST_SOURCES = Prepared(lambda kind, record_id, statuses, limit: GraphSource.select(GraphSource.event).join(
    Event, on=(GraphSource.event == Event.id)).where(
    (GraphSource.kind == kind) & (GraphSource.record_id == record_id) & Event.status.in_(statuses)
).order_by(GraphSource.event.desc()).limit(limit).tuples())


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
    first = (GraphSource.select(GraphSource.event).join(Event, on=(GraphSource.event == Event.id))
             .where(any_of(cited) & Event.status.in_(list(statuses)))
             .order_by(fn.COALESCE(Event.mentioned_ts, 0), Event.id).limit(1).tuples().first())
    return first[0] if first else None


def _newest_facts(node_ids):
    """The newest current facts per node, ranked in SQL so a hub's fact list is not hydrated."""
    rank = fn.ROW_NUMBER().over(partition_by=[GraphFact.node], order_by=[GraphFact.id.desc()])
    inner = (GraphFact.select(GraphFact, rank.alias("rank"))
             .where(GraphFact.node.in_(node_ids) & GraphFact.status.in_(CURRENT)))
    newest = GraphFact.select(inner.c.id).from_(inner).where(inner.c.rank <= CONTEXT_FACTS * 2)
    return GraphFact.select().where(GraphFact.id.in_(newest)).order_by(GraphFact.id)


_NEWEST_FACTS = Prepared(_newest_facts)
_EDGES_AMONG = Prepared(lambda sources, targets: GraphEdge.select().where(
    GraphEdge.from_node.in_(sources) & GraphEdge.to_node.in_(targets) & GraphEdge.status.in_(CURRENT)
).order_by(GraphEdge.id).limit(CONTEXT_EDGES * 4))


def _cited_by_active_query(model, kind: str):
    def build(ids):
        # EXISTS stops at a record's first active citation; selecting the distinct record ids of
        # the active citations read every citation of a hub (thousands, more every day).
        active = GraphSource.select(GraphSource.id).join(Event, on=(GraphSource.event == Event.id)).where(
            (GraphSource.kind == kind) & (GraphSource.record_id == model.id) & (Event.status == "active"))
        return model.select(model.id).where(model.id.in_(ids) & fn.EXISTS(active)).tuples()
    return Prepared(build)


_CITED_BY_ACTIVE = {kind: _cited_by_active_query(model, kind) for kind, model in (("fact", GraphFact),
                                                                                  ("edge", GraphEdge))}


def _metadata_statuses(nodes: Sequence[GraphNode]) -> dict[int, str]:
    """Event statuses enough to tell which alias and tag entries of the nodes have a live source
    (``_visible_metadata``): each entry's newest source, then every source only of entries whose
    newest is not live. A hub's entries cite up to 64 events each, nearly always the newest live."""
    entries = [ids for n in nodes if isinstance(n.provenance, dict)
               for kind in ("aliases", "tags") for entry in n.provenance.get(kind, []) if isinstance(entry, dict)
               for ids in [[i for i in entry.get("source_event_ids", []) if isinstance(i, int)]] if ids]
    statuses = _event_statuses(max(ids) for ids in entries)
    statuses.update(_event_statuses(i for ids in entries if statuses.get(max(ids)) not in LIVE for i in ids))
    return statuses


def _context_views(nodes: Sequence[GraphNode]) -> dict[int, _Computed]:
    """Bounded views for the projector's context: newest sources, newest current facts and
    the current edges among ``nodes``. Unlike ``compute_views`` (the full effective view a
    person reads) nothing here grows with how often a node has been cited."""
    ids = [n.id for n in nodes]
    if not ids:
        return {}
    out = {n.id: _Computed(node=n) for n in nodes}
    statuses = _metadata_statuses(nodes)
    for node in nodes:
        view = out[node.id]
        view.node_sources = newest_sources("node", node.id, LIVE, CONTEXT_SOURCES)
        own = [(i, "active") for i in view.node_sources]  # only consulted for legacy nodes without provenance
        view.aliases = _visible_metadata(node, "aliases", own, statuses)
        view.tags = _visible_metadata(node, "tags", own, statuses)
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
            view.node_sources or view.current_facts or view.current_edges)
    return out


def _cited_by_active(kind: str, record_ids: Sequence[int]) -> set[int]:
    """Which of the records cite at least one active event (what makes a current record visible)."""
    found: set[int] = set()
    for part in chunks(list(record_ids)):
        found.update(r for (r,) in _CITED_BY_ACTIVE[kind].rows(list(part)))
    return found


# Facts that go stale by themselves: "age: 34" said two years ago is no longer the age, so the
# state says when it was true and a reader can count on from there.
DATED_KEYS = frozenset({"age"})


def _render_state(current: Sequence[tuple[GraphFact, list[int]]]) -> str:
    lines = []
    for fact, _ in current:
        suffix = " [disputed]" if fact.status == "disputed" else ""
        if fact.key in DATED_KEYS and fact.valid_from:
            suffix = f" (as of {fact.valid_from[:10]}){suffix}"
        lines.append(f"{fact.key}: {render_value(fact.value)}{suffix}")
    return "\n".join(lines)


def _fact_view(fact: GraphFact, sources: list[int], ended_by: tuple[EndedBy, ...] = ()) -> FactView:
    return FactView(
        id=fact.id, key=fact.key, value=fact.value, status=fact.status, valid_from=fact.valid_from,
        valid_to=fact.valid_to, confidence=fact.confidence,
        source_event_ids=tuple(sorted(sources, reverse=True)[:GRAPH_PROVENANCE_LIMIT]), ended_by=ended_by,
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
    nodes = [n for part in chunks(list(dict.fromkeys(node_ids))) for n in _NODES.rows(list(part))]
    views = {i: v for i, v in compute_views(nodes).items() if v.visible}
    other_ids = {i for v in views.values() for e, _ in v.current_edges + v.historical_edges
                 for i in (e.from_node_id, e.to_node_id)}
    others = {i: (name, kind) for part in chunks(list(other_ids)) for i, name, kind in _NODE_NAMES.rows(list(part))}
    support = {i: v.all_sources()[:GRAPH_PROVENANCE_LIMIT] for i, v in views.items()}
    wanted = sorted({e for ids in support.values() for e in ids})
    refs = {r.id: r for part in chunks(wanted) for r in _EVENT_REFS.rows(list(part))}
    namespaces = {ns_id: _NAMESPACE.get(ns_id).name for ns_id in {n.namespace_id for n in nodes}}
    ended = {"fact": reasons("fact", [f.id for v in views.values() for f, _ in v.historical_facts]),
             "edge": reasons("edge", [e.id for v in views.values() for e, _ in v.historical_edges])}
    out = {}
    for node in nodes:
        view = views.get(node.id)
        if view is not None:
            out[node.id] = _node_view(node, view, others, refs, support[node.id], namespaces[node.namespace_id],
                                      ended)
    return out


def _node_view(node: GraphNode, view: _Computed, others: dict[int, tuple[str, str]], refs: dict[int, Event],
               support: list[int], namespace: str, ended: dict[str, dict[int, tuple[EndedBy, ...]]]) -> NodeView:
    node_id = node.id

    def edge_view(edge: GraphEdge, sources: list[int], current: bool) -> EdgeView:
        other_id = edge.to_node_id if edge.from_node_id == node_id else edge.from_node_id
        other_name, other_type = others[other_id]
        return EdgeView(
            id=edge.id, relation=edge.relation, status=edge.status, current=current, other_id=other_id,
            other_name=other_name, other_type=other_type, valid_from=edge.valid_from, valid_to=edge.valid_to,
            confidence=edge.confidence, source_event_ids=tuple(sorted(sources, reverse=True)[:GRAPH_PROVENANCE_LIMIT]),
            ended_by=() if current else ended["edge"].get(edge.id, ()),
        )

    ordered = [(e, s, True) for e, s in view.current_edges] + [
        (e, s, False) for e, s in sorted(view.historical_edges, key=lambda p: -p[0].id)
    ]
    edges_out = tuple(edge_view(e, s, c) for e, s, c in ordered if e.from_node_id == node_id)
    edges_in = tuple(edge_view(e, s, c) for e, s, c in ordered if e.to_node_id == node_id)
    events = [EventRef(r.id, r.title, r.status, r.happened_start) for r in (refs.get(i) for i in support)
              if r is not None and r.status in LIVE]
    return NodeView(
        id=node.id,
        namespace=namespace,
        name=node.name,
        type=node.type,
        aliases=tuple(view.aliases),
        tags=tuple(view.tags),
        status=node.status,
        confidence=node.confidence,
        current_state=_render_state(view.current_facts),
        current_facts=tuple(_fact_view(f, s) for f, s in view.current_facts),
        historical_facts=tuple(_fact_view(f, s, ended["fact"].get(f.id, ()))
                               for f, s in sorted(view.historical_facts, key=lambda p: -p[0].id)),
        edges_out=edges_out,
        edges_in=edges_in,
        events=tuple(events),
    )


def list_nodes(namespace: str | None = None, type: str | None = None, query: str | None = None,
               limit: int = 200) -> list[NodeRow]:
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
        nodes = [n for n in nodes if any(
            needle in norm_text(v) for v in [n.name, *(a for a in n.aliases or [] if isinstance(a, str))])]
    rows = []
    for view in compute_views(nodes).values():
        if not view.visible:
            continue
        if needle and not any(needle in norm_text(v) for v in [view.node.name, *view.aliases]):
            continue
        rows.append(NodeRow(
            id=view.node.id,
            namespace=names.get(view.node.namespace_id, ""),
            name=view.node.name,
            type=view.node.type,
            aliases=tuple(view.aliases),
            facts=len(view.current_facts),
            edges=len(view.current_edges) + len(view.historical_edges),
            events=len(view.all_sources()),
            events_more=view.sources_more,
        ))
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
    "ApplyResult", "EdgeView", "EventRef", "FactView", "FUNCTIONAL_RELATIONS", "GRAPH_PROVENANCE_LIMIT",
    "NodeRow", "NodeView", "PROJECTOR_VERSION", "apply_projection", "entity_key", "find_node", "is_functional",
    "list_nodes", "node_view", "node_views", "projection_context", "relation_key", "run_graph_job",
]
