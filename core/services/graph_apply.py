"""Writing a graph projection: validate a projector proposal against its batch and apply it.

Events stay the only truth: every node, fact and edge written here cites the events behind it,
and the effective view (``core.services.graph``) shows a record only while one of those events
is still visible.

Deliberate deviation from the reference: only *functional* keys and relations (one
value at a time, such as ``lives_in`` or ``works_at``) supersede the previous value. A
person who uses two tools keeps both ``uses`` facts and edges current.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timezone
from typing import Any, Callable, Iterable, Sequence

from peewee import Value

from core.db import Prepared, bulk_insert, chunks, insert_one, save_one, write_transaction
from core.models import CURRENT, LIVE, Event, GraphEdge, GraphFact, GraphNode, GraphSource
from core.providers.base import ProviderOutputError
from core.vocab import NODE_TYPES, RECORD_STATUSES
from core.search.tokenize import normalize as norm_text
from core.services.graph import NODES_BY_ID, event_statuses
from core.services.graph_endings import EndingLog
from core.services.graph_vocab import is_functional, relation_key
from core.services.graph_names import entity_key, node_names
from core.timeutil import now_iso, parse_timestamp, period_bounds

MAX_NODES = 24
MAX_EDGES = 32
MAX_SOURCES = 64
MAX_ALIASES = 20
MAX_TAGS = 12
MAX_FACT_KEY = 160
MAX_FACT_CHARS = 1200
MAX_FACT_ITEMS = 40
MAX_RELATION = 100
DEFAULT_CONFIDENCE = 0.8


def _value_key(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(sorted(norm_text(v) for v in value))
    return norm_text(str(value))


def as_id(value: Any) -> int | None:
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


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


# The statements every projection runs, rendered once (see core.db.Prepared).
_BATCH_EVENTS = Prepared(lambda ids, ns: Event.select().where(Event.id.in_(ids) & (Event.namespace == ns)))
_FACTS_OF = Prepared(
    lambda node, key: GraphFact.select().where((GraphFact.node == node) & (GraphFact.key == key)).order_by(GraphFact.id)
)
_EDGES_FROM = Prepared(
    lambda source, relation, target, to_target, current: GraphEdge.select().where(
        (GraphEdge.from_node == source)
        & (GraphEdge.relation == relation)
        & (
            ((GraphEdge.to_node == target) | GraphEdge.status.in_(CURRENT))
            if to_target and current
            else (GraphEdge.to_node == target)
            if to_target
            else GraphEdge.status.in_(CURRENT)
        )
    )
)
_SET_PARTICIPANTS = Prepared(
    lambda stored, event_id: Event.update({Event.participant_node_ids: Value(stored)}).where(Event.id == event_id)
)
_TOUCH = {
    model: Prepared(lambda now, ids, model=model: model.update(updated_at=now).where(model.id.in_(ids)))
    for model in (GraphFact, GraphEdge)
}


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


_NODE_COLUMNS = (
    "namespace",
    "name",
    "name_norm",
    "type",
    "aliases",
    "tags",
    "provenance",
    "status",
    "confidence",
    "created_at",
    "updated_at",
)


class _Applier:
    """Applies one validated proposal; must run inside a write transaction."""

    def __init__(self, namespace_id: int, batch_event_ids: Sequence[int]) -> None:
        self.namespace_id = namespace_id
        batch = [i for i in (as_id(v) for v in batch_event_ids) if i is not None]
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
            event_id = as_id(value)
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

    def _proven(
        self, kind: str, ref: str, values: list[str], provenance: dict[str, list[int]]
    ) -> list[tuple[str, list[int]]]:
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
        ids = [
            s
            for (s,) in GraphSource.select(GraphSource.event)
            .where((GraphSource.kind == "node") & (GraphSource.record_id == node.id))
            .tuples()
        ]
        known = event_statuses(ids)
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
            for node in NODES_BY_ID.rows(missing):
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
            statuses = event_statuses(part)
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
            isinstance(entry, dict)
            and entity_key(entry.get("value", "")) in wanted
            and self._any_live(entry.get("source_event_ids", []))
            for entry in prov.get("aliases", [])
        )

    def apply_node(self, plan: _NodePlan) -> GraphNode:
        raw = plan.raw
        provenance = raw.get("provenance") if isinstance(raw.get("provenance"), dict) else {}
        name_key = entity_key(plan.name)
        aliases = self._clean_values(raw.get("aliases"), MAX_ALIASES, 255, {name_key})
        tags = self._clean_values(raw.get("tags"), MAX_TAGS, 80, set())
        kept_aliases = self._proven(
            "alias", plan.ref, aliases, _metadata_provenance(provenance.get("aliases"), self.sources)
        )
        kept_tags = self._proven("tag", plan.ref, tags, _metadata_provenance(provenance.get("tags"), self.sources))
        confidence = raw.get("confidence")
        if not isinstance(confidence, (int, float)) or isinstance(confidence, bool) or not 0 <= confidence <= 1:
            confidence = DEFAULT_CONFIDENCE

        node = self._renamed(plan, name_key, kept_aliases) or self.resolve(
            plan.type, [name_key] + [entity_key(a) for a, _ in kept_aliases]
        )
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

        cited = _merge_ids(
            plan.sources, plan.name_sources, *(ids for _, ids in kept_aliases), *(ids for _, ids in kept_tags)
        )
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
        wrong = (
            [entity_key(v) for v in raw[:MAX_ALIASES] if isinstance(v, str) and v.strip()]
            if isinstance(raw, list)
            else []
        )
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
        ids = [
            i
            for (i,) in GraphSource.select(GraphSource.event)
            .where((GraphSource.kind == "node") & (GraphSource.record_id == node.id))
            .order_by(GraphSource.event)
            .tuples()
        ]
        return {
            "name": list(ids),
            "aliases": [{"value": a, "source_event_ids": list(ids)} for a in node.aliases or [] if isinstance(a, str)],
            "tags": [{"value": t, "source_event_ids": list(ids)} for t in node.tags or [] if isinstance(t, str)],
        }

    def _add_metadata(
        self, node: GraphNode, ref: str, aliases: list[tuple[str, list[int]]], tags: list[tuple[str, list[int]]]
    ) -> None:
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
                    self.warn(
                        f"Dropped metadata value alias {value!r} of node {ref!r}: the node has {MAX_ALIASES} aliases"
                    )
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
            return clip(text, MAX_FACT_CHARS) if text else None
        if isinstance(value, list):
            items = [clip(v.strip(), MAX_FACT_CHARS) for v in value if isinstance(v, str) and v.strip()]
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

    def _end_fact(
        self,
        node: GraphNode,
        key: str,
        value: Any,
        sources: list[int],
        stated: str,
        latest: float | None,
        valid_to: str | None,
    ) -> None:
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
            fact = insert_one(
                GraphFact,
                dict(
                    node=node.id,
                    key=key,
                    value=value,
                    status="superseded",
                    valid_from=None,  # start unknown
                    valid_to=valid_to or stated,
                    confidence=node.confidence,
                    created_at=self.now,
                    updated_at=self.now,
                ),
            )
        else:
            self._touched[GraphFact].add(fact.id)
        self._history("fact", fact, created, [("event", i) for i in sources], _status_of(node))
        self._cite("fact", fact.id, sources)

    def _write_fact(
        self, node: GraphNode, key: str, value: Any, sources: list[int], valid_from: str, latest: float | None
    ) -> None:
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
            fact = insert_one(
                GraphFact,
                dict(
                    node=node.id,
                    key=key,
                    value=value,
                    status=status,
                    valid_from=valid_from,
                    valid_to=valid_to,
                    confidence=node.confidence,
                    created_at=self.now,
                    updated_at=self.now,
                ),
            )
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

    def _end(
        self, kind: str, records: list, stated: str, latest: float | None, valid_to: str | None, sources: list[int]
    ) -> list:
        """End the current ``records`` a statement says have ended (one begun after the statement
        stays): superseded at ``valid_to``, else the statement's time, citing the statement."""
        ending = [r for r in records if r.status in CURRENT and self._older_than(latest, [r.valid_from]) is None]
        for record in ending:
            self._supersede(kind, record, valid_to or stated, [("event", i) for i in sources])
            self._cite(kind, record.id, sources)
        return ending

    def _supersede(
        self, kind: str, record: GraphFact | GraphEdge, valid_to: str, causes: list[tuple[str, int]]
    ) -> None:
        """A current fact or edge becomes history, ending at ``valid_to`` because of ``causes``.

        It never ends before it began: a change dated "last week" ends a value said to hold on a
        day of that week when that value was said, not at the start of the week."""
        began, ends = _epoch(record.valid_from), _epoch(valid_to)
        if began is not None and ends is not None and ends < began:
            valid_to = record.valid_from
        self._endings.add(kind, record.id, causes, valid_to, record.status, record.valid_to)
        record.status, record.valid_to, record.updated_at = "superseded", valid_to, self.now
        save_one(record)

    def _history(
        self, kind: str, record: GraphFact | GraphEdge, created: bool, causes: list[tuple[str, int]], would_be: str
    ) -> None:
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
        ended = [
            (e, r.id, r)
            for r in records
            if r.status == "superseded" and (e := _epoch(r.valid_to)) is not None and latest < e
        ]
        return min(ended)[2] if ended else None

    def _held_earlier(
        self, record: GraphFact | GraphEdge, valid_from: str, others: Callable[[], Sequence[GraphFact | GraphEdge]]
    ) -> None:
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
            edge = self._write_edge(
                source,
                target,
                relation,
                status,
                sources,
                self.valid_from(raw.get("valid_from"), sources),
                self.latest(raw.get("valid_from"), sources),
                valid_to,
                float(confidence),
                given_from=_given_time(raw.get("valid_from")),
            )
            if edge.id not in self.result.edge_ids:
                self.result.edge_ids.append(edge.id)

    def _write_edge(
        self,
        source: GraphNode,
        target: GraphNode,
        relation: str,
        status: str,
        sources: list[int],
        valid_from: str,
        latest: float | None,
        valid_to: str | None,
        confidence: float,
        given_from: str | None = None,
    ) -> GraphEdge:
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
            ending = self._end(
                "edge", [e for e in known if e.to_node_id == target.id], valid_from, latest, valid_to, sources
            )
            if ending:
                return ending[0]
            # History only: it ended when stated; when it began is unknown unless the proposal says.
            valid_to, valid_from = valid_to or valid_from, given_from

        def slot() -> list[GraphEdge]:
            return _edge_slot(source.id, relation, target.id, functional)

        if (
            status in CURRENT
            and (stretch := self._stretch_of([e for e in known if e.to_node_id == target.id], latest)) is not None
        ):
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
            edge = insert_one(
                GraphEdge,
                dict(
                    namespace=self.namespace_id,
                    from_node=source.id,
                    to_node=target.id,
                    relation=relation,
                    status=status,
                    valid_from=valid_from,
                    valid_to=valid_to,
                    confidence=confidence,
                    created_at=self.now,
                    updated_at=self.now,
                ),
            )
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


__all__ = ["ApplyResult", "apply_projection", "as_id", "clip"]
