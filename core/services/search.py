"""Search channels: raw messages, events and the knowledge graph.

Every channel is deterministic: BM25 over the incremental index (§7.2), structured
rankings fused by RRF (§7.3). Search never changes memory weight; event search only
records when an event was last retrieved.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from core.db import Prepared, chunks, clamp, db, write_transaction
from core.dto import RawMessage, ToolTrace
from core.errors import InvalidInputError, NotFoundError
from core.eventtypes import filter_event_type
from core.models import (
    CURRENT,
    Event,
    EventParticipant,
    EventSource,
    GraphEdge,
    GraphFact,
    GraphNode,
    Message,
    Namespace,
    Thread,
)
from core.search.analyze import analyze
from core.search.bm25 import RRF_K, bm25_counted, rrf
from core.search.history import requests_history
from core.search.index import bm25, bm25_top, bm25_top_kept
from core.search.segment import rows_by_ids
from core.search.tokenize import normalize
from core.services.capture import raw_from_row
from core.services.events import EVENTS_BY_ID, LIVE, EventRow, event_row, event_weight, live_event_ids
from core.services.governance import withheld
from core.services.graph_vocab import render_value
from core.services.spaces import get_namespace, thread_names, validate_name
from core.timeutil import now_iso, range_bounds


# The most hits one search returns, by channel: a search is for the best few, not a listing.
SEARCH_MAX = {"events": 20, "graph": 20, "raw": 50}


@dataclass(frozen=True)
class RawHit:
    message: RawMessage
    block_id: int | None
    turn_range: tuple[int, int] | None
    score: float
    nearby: tuple[RawMessage, ...]


@dataclass(frozen=True)
class EventHit:
    event: EventRow
    rank_score: float
    source_message_ids: tuple[int, ...]
    source_block_id: int | None
    superseded_by: int | None = None  # set on a superseded event (shown to history questions only)


def _thread_id(ns: Namespace, thread: str | None) -> int | None:
    if thread is None:
        return None

    thread = validate_name(thread, "thread")  # spelled as it was stored
    row = Thread.get_or_none((Thread.namespace == ns) & (Thread.name == thread))
    if row is None:
        raise InvalidInputError(f"thread {thread!r} does not exist in namespace {ns.name!r}")
    return row.id


# ----------------------------------------------------------------------------- raw


def messages_by_id(ids: Sequence[int]) -> dict[int, RawMessage]:
    if not ids:
        return {}
    rows = Message.select(Message, Thread.name).join(Thread).where(Message.id.in_(list(ids)))
    return {m.id: raw_from_row(m, m.thread.name) for m in rows}


def _nearby(message: RawMessage, thread_id: int) -> tuple[RawMessage, ...]:
    rows = (
        Message.select(Message, Thread.name)
        .join(Thread)
        .where((Message.thread == thread_id) & Message.position.between(message.position - 1, message.position + 1))
        .order_by(Message.position)
    )
    return tuple(raw_from_row(m, m.thread.name) for m in rows)


def search_raw(
    namespace: str,
    query: str,
    limit: int = 6,
    *,
    thread: str | None = None,
    for_agent: bool = False,
    session: str | None = None,
    excluded: list[dict[str, str]] | None = None,
) -> list[RawHit]:
    """Raw messages ranked by BM25 — sealed blocks and the open tail alike.

    A query with no searchable token returns nothing (the zero-match rule). Messages of governed
    records that may not be shown (``core.services.governance.withheld``) are left out, each added
    to ``excluded`` (when given) as ``{"ref": "message:ID", "reason": code}``."""
    ns = get_namespace(namespace)
    limit = clamp(limit, 1, SEARCH_MAX["raw"], 6)
    terms = analyze(query)
    if not terms:
        return []
    best = bm25_top("message", ns.id, terms, limit, thread_id=_thread_id(ns, thread), ties="desc")
    hidden = withheld(message_ids=[i for i, _ in best], for_agent=for_agent, session=session)
    best = [(i, score) for i, score in best if ("message", i) not in hidden]
    _note_excluded(excluded, hidden)
    if not best:
        return []
    scores = dict(best)
    ids = [i for i, _ in best]
    # Two plain queries for any number of hits: the hits with their neighbours, then their blocks.
    found = {row[0]: row for row in rows_by_ids(f"{_RAW_SELECT} WHERE m.id IN ({{ids}})", ids)}
    clauses = " OR ".join(["(m.thread_id = {0} AND m.position BETWEEN {0} AND {0})".format(db.obj.param)] * len(ids))
    params = [v for i in ids for v in (found[i][-1], found[i][5] - 1, found[i][5] + 1)]
    around: dict[int, list[tuple]] = {}
    for row in db.execute_sql(f"{_RAW_SELECT} WHERE {clauses} ORDER BY m.position", params).fetchall():
        around.setdefault(row[-1], []).append(row)
    hidden_near = withheld(
        message_ids=[r[0] for rows in around.values() for r in rows], for_agent=for_agent, session=session
    )
    around = {t: [r for r in rows if ("message", r[0]) not in hidden_near] for t, rows in around.items()}
    block_ids = sorted({found[i][9] for i in ids if found[i][9]})
    blocks = {
        b: (start, end)
        for b, start, end in rows_by_ids("SELECT id, start_turn, end_turn FROM block WHERE id IN ({ids})", block_ids)
    }
    hits = []
    for message_id in ids:
        row = found[message_id]
        thread_id, position = row[-1], row[5]
        hits.append(
            RawHit(
                message=_raw(row),
                block_id=row[9],
                turn_range=blocks.get(row[9]),
                score=round(scores[message_id], 6),
                nearby=tuple(_raw(r) for r in around.get(thread_id, []) if abs(r[5] - position) <= 1),
            )
        )
    return hits


_RAW_SELECT = (
    "SELECT m.id, m.role, m.content, m.created_at, t.name, m.position, m.turn, m.speaker, m.external_id, "
    "m.block_id, m.tool_calls, m.thread_id FROM message m JOIN thread t ON t.id = m.thread_id"
)


def _raw(row: tuple) -> RawMessage:
    """A RawMessage from a ``_RAW_SELECT`` row (what ``raw_from_row`` makes of a model)."""
    calls = json.loads(row[10]) if row[10] else None
    return RawMessage(
        id=row[0],
        role=row[1],
        content=row[2],
        created_at=row[3],
        thread=row[4],
        position=row[5],
        turn=row[6],
        speaker=row[7],
        external_id=row[8],
        block_id=row[9],
        tool_calls=tuple(ToolTrace(**t) for t in (calls or [])),
    )


# ----------------------------------------------------------------------------- events


def _fuzzy(a: str, b: str) -> bool:
    a, b = normalize(a), normalize(b)
    return bool(a and b) and (a == b or a in b or b in a)


def _chronology(event: Event) -> float:
    for value in (event.happened_start_ts, event.happened_end_ts, event.mentioned_ts):
        if value is not None:
            return value
    return 0.0


def search_events(
    namespace: str,
    query: str = "",
    limit: int = 6,
    *,
    participants: Sequence[str] | None = None,
    event_type: str | None = None,
    happened_from: str | None = None,
    happened_to: str | None = None,
    temporal_intent: str | None = None,
    track: bool = True,
    for_agent: bool = False,
    session: str | None = None,
    excluded: list[dict[str, str]] | None = None,
    history: bool | None = None,
) -> list[EventHit]:
    """§7.4: BM25 plus structured rankings (participants, type, time), exact or soft, fused by RRF.
    Events of governed records that may not be shown (``governance.withheld``) are left out.

    Superseded events are left out too unless ``history`` (by default: whether the query asks
    for history, ``core.search.history.requests_history``); then each chain of corrections the
    hits touch is shown whole, oldest first, each superseded event naming its ``superseded_by``."""

    ns = get_namespace(namespace)
    if history is None:
        history = requests_history(query)
    limit = clamp(limit, 1, SEARCH_MAX["events"], 6)
    if temporal_intent not in (None, "first", "latest"):
        raise InvalidInputError(f"temporal_intent must be 'first' or 'latest', got {temporal_intent!r}")
    wanted = filter_event_type(event_type) if event_type else None
    terms = analyze(query or "")
    filters = bool(participants) or bool(event_type) or bool(happened_from or happened_to)
    if terms and not filters and not temporal_intent:
        # Text alone: the fused ranking is the text ranking of live events, so only its head is read.
        fused = _live_text_head(ns.id, terms, limit, current_only=not history)
        if not fused:
            return []
        candidates = {e.id: e for e in EVENTS_BY_ID.rows([i for i, _ in fused])}
        if history:
            fused = _chains(fused, candidates, limit)
        return _event_hits(ns, fused, candidates, track, for_agent, excluded, session)
    text_scores = bm25("event", ns.id, terms) if terms else {}
    if terms and not text_scores and not filters:
        return []
    shown = LIVE if history else CURRENT_EVENT
    live = Event.select().where((Event.namespace == ns) & (Event.status.in_(shown)))
    candidates: dict[int, Event]
    if filters or not terms:
        candidates = {e.id: e for e in live}
    else:
        candidates = {e.id: e for e in live.where(Event.id.in_(list(text_scores)))}
    text_scores = {i: s for i, s in text_scores.items() if i in candidates}

    def structured(ids: Sequence[int]) -> list[int]:
        events = [candidates[i] for i in ids]
        if temporal_intent == "first":
            events.sort(key=lambda e: (_chronology(e), e.id))
        elif temporal_intent == "latest":
            events.sort(key=lambda e: (-_chronology(e), -e.id))
        else:
            events.sort(key=lambda e: (-event_weight(e, ns.current_turn), e.updated_at, e.id), reverse=False)
        return [e.id for e in events]

    lists: list[set[int]] = []
    if participants:
        names = {}
        for row in EventParticipant.select().where(EventParticipant.event.in_(list(candidates))):
            names.setdefault(row.event_id, []).append(row.name)
        lists.append({i for i in candidates if all(any(_fuzzy(p, n) for n in names.get(i, [])) for p in participants)})
    if event_type:
        lists.append(
            {
                i
                for i, e in candidates.items()
                if e.event_type == wanted or _fuzzy(event_type, f"{e.title} {e.summary} {' '.join(e.tags or [])}")
            }
        )
    low, high = range_bounds(happened_from, happened_to, "happened_from/happened_to")
    if low is not None or high is not None:
        lists.append(
            {
                i
                for i, e in candidates.items()
                if e.happened_start_ts is not None
                and (low is None or e.happened_end_ts >= low)
                and (high is None or e.happened_start_ts <= high)
            }
        )
    text_rank = sorted(text_scores, key=lambda i: (-text_scores[i], i))
    rankings: list[list[int]] = []
    if lists:
        exact = set.intersection(*lists)
        if exact:
            rankings = [[i for i in text_rank if i in exact], structured(sorted(exact))]
        else:
            rankings = [text_rank] + [structured(sorted(part)) for part in lists if part]
    else:
        rankings = [text_rank]
        if temporal_intent and text_rank:
            rankings.append(structured(text_rank))
    rankings = [r for r in rankings if r]
    if not rankings:
        if terms:
            return []
        rankings = [structured(list(candidates))]
    fused = rrf(rankings)[:limit]
    if history:
        fused = _chains(fused, candidates, limit)
    return _event_hits(ns, fused, candidates, track, for_agent, excluded, session)


CHAIN_HOPS = 4  # corrections of corrections followed this far, either way


def _chain_links(events: dict[int, Event]) -> tuple[dict[int, Event], dict[int, int]]:
    """``events`` with the live events their correction chains reach (up to CHAIN_HOPS either way),
    and the chains' links, superseded event -> the event that superseded it."""
    known = dict(events)
    frontier = set(known)
    for _ in range(CHAIN_HOPS):
        newer = {
            known[i].superseded_by for i in frontier if known[i].status == "superseded" and known[i].superseded_by
        } - set(known)
        found = {e.id: e for e in EVENTS_BY_ID.rows(sorted(newer))} if newer else {}
        for part in chunks(sorted(frontier)):
            older = Event.select().where(Event.superseded_by.in_(list(part)) & (Event.status == "superseded"))
            found.update({e.id: e for e in older if e.id not in known})
        found = {i: e for i, e in found.items() if e.status in LIVE}
        if not found:
            break
        known.update(found)
        frontier = set(found)
    links = {i: e.superseded_by for i, e in known.items() if e.status == "superseded" and e.superseded_by in known}
    return known, links


def history_chains(event_ids: Sequence[int]) -> list[list[Event]]:
    """The correction chains the live events touch (each event in at most one), each oldest first,
    in the order of ``event_ids``' first member; an event nothing corrected and that corrected
    nothing is no chain."""
    events = {e.id: e for e in EVENTS_BY_ID.rows(sorted(set(event_ids)))} if event_ids else {}
    known, links = _chain_links({i: e for i, e in events.items() if e.status in LIVE})
    back = {new: old for old, new in links.items()}
    chains: list[list[Event]] = []
    done: set[int] = set()
    for event_id in event_ids:
        if event_id in done or event_id not in known or (event_id not in links and event_id not in back):
            continue
        start, seen = event_id, set()
        while start in back and start not in seen:
            seen.add(start)
            start = back[start]
        chain = [start]
        while chain[-1] in links and links[chain[-1]] not in chain:
            chain.append(links[chain[-1]])
        done.update(chain)
        chains.append([known[i] for i in chain])
    return chains


def _chains(fused: list[tuple[int, float]], candidates: dict[int, Event], limit: int) -> list[tuple[int, float]]:
    """A history question's hits with each correction chain they touch made whole (what a
    superseded hit was superseded by, what a hit superseded), each chain at the place of its best
    member, oldest first; an event added for its chain takes that member's score. At most
    ``limit`` hits: a chain cut short keeps its oldest members."""

    known, links = _chain_links(candidates)
    back = {new: old for old, new in links.items()}

    def root(i: int) -> int:
        seen = set()
        while i in back and i not in seen:
            seen.add(i)
            i = back[i]
        return i

    def chain(start: int) -> list[int]:
        out = [start]
        while out[-1] in links and links[out[-1]] not in out:
            out.append(links[out[-1]])
        return out

    placed: list[tuple[int, float]] = []
    done: set[int] = set()
    for event_id, score in fused:
        if event_id in done:
            continue
        for member in chain(root(event_id)):
            if member not in done:
                done.add(member)
                placed.append((member, score))
    candidates.update({i: known[i] for i, _ in placed})
    return placed[:limit]


def _note_excluded(excluded: list[dict[str, str]] | None, hidden: dict[tuple[str, int], str]) -> None:
    if excluded is not None:
        excluded.extend({"ref": f"{kind}:{i}", "reason": code} for (kind, i), code in sorted(hidden.items()))


def best_live_events(namespace_id: int, terms: list[str], limit: int, *, current_only: bool = False) -> list[int]:
    """The ``limit`` best live events by (BM25 desc, id), forgotten/archived ones skipped (and
    superseded ones too when ``current_only``).

    The top k with MaxScore, k growing until enough are live: a common word matches most
    events, and scoring them all and checking each one's status cost ~100 ms at 1M messages."""
    keep = current_event_ids if current_only else live_event_ids
    return bm25_top_kept("event", namespace_id, terms, limit, lambda ids: keep(ids, namespace_id))


CURRENT_EVENT = ("active",)  # what an event search shows when the question does not ask for history


def current_event_ids(ids: Sequence[int], namespace_id: int) -> set[int]:
    """Which of the events are current (active) in the namespace."""
    marker = db.obj.param
    return {
        i
        for part in chunks(list(ids))
        for (i,) in rows_by_ids(
            f"SELECT id FROM event WHERE id IN ({{ids}}) AND namespace_id = {marker} AND status = 'active'",
            part,
            (namespace_id,),
        )
    }


def _live_text_head(
    namespace_id: int, terms: list[str], limit: int, *, current_only: bool = False
) -> list[tuple[int, float]]:
    """The ``limit`` best live (or current) events by BM25 with their RRF scores (1 / (61 + rank)),
    as ``rrf([text ranking of those events])`` would give them, reading only as deep as needed."""
    best = best_live_events(namespace_id, terms, limit, current_only=current_only)
    return [(i, 1.0 / (RRF_K + position + 1)) for position, i in enumerate(best)]


# Read on every event search: rendered once (core.db.Prepared), not per call.
_SOURCE_MESSAGES = Prepared(
    lambda ids: (
        EventSource.select(EventSource.event, EventSource.message)
        .where(EventSource.event.in_(ids))
        .order_by(EventSource.position)
        .tuples()
    )
)


def source_messages(event_ids: Sequence[int]) -> dict[int, list[int]]:
    """Each event's source messages, in the order it cites them."""
    sources: dict[int, list[int]] = {}
    for part in chunks(list(event_ids)):
        for event_id, message_id in _SOURCE_MESSAGES.rows(list(part)):
            sources.setdefault(event_id, []).append(message_id)
    return sources


def cited_messages(event_ids: Sequence[int]) -> list[int]:
    """The messages the events cite, each once, in event order."""
    sources = source_messages(event_ids)
    return list(dict.fromkeys(m for e in event_ids for m in sources.get(e, ())))


def mark_retrieved(event_ids: Sequence[int]) -> None:
    """Stamp the events a search returned as retrieved now."""
    if event_ids:
        with write_transaction():
            Event.update(last_retrieved_at=now_iso()).where(Event.id.in_(list(event_ids))).execute()


def _event_hits(
    ns: Namespace,
    fused: list[tuple[int, float]],
    candidates: dict[int, Event],
    track: bool,
    for_agent: bool,
    excluded: list[dict[str, str]] | None = None,
    session: str | None = None,
) -> list[EventHit]:
    hidden = withheld(event_ids=[i for i, _ in fused], for_agent=for_agent, session=session)
    fused = [(i, score) for i, score in fused if ("event", i) not in hidden]
    _note_excluded(excluded, {k: v for k, v in hidden.items() if k[0] == "event"})
    ids = [i for i, _ in fused]
    sources = source_messages(ids)
    if track:
        mark_retrieved(ids)
    threads = thread_names(candidates[i].thread_id for i in ids if candidates[i].thread_id is not None)
    return [
        EventHit(
            event=event_row(candidates[i], ns, threads.get(candidates[i].thread_id)),
            rank_score=round(score, 6),
            source_message_ids=tuple(sources.get(i, ())),
            source_block_id=candidates[i].block_id,
            superseded_by=candidates[i].superseded_by if candidates[i].status == "superseded" else None,
        )
        for i, score in fused
    ]


# ----------------------------------------------------------------------------- graph


@dataclass(frozen=True)
class NodeHit:
    node_id: int
    name: str
    type: str
    aliases: tuple[str, ...]
    current_state: str
    status: str
    rank_score: float
    matched_fields: tuple[str, ...]
    match_type: str
    provenance_event_ids: tuple[int, ...]


# §7.5 field weights for node search.
GRAPH_FIELD_WEIGHTS = {
    "name": 6,
    "aliases": 5,
    "tags": 5,
    "type": 2,
    "currentFacts": 4,
    "historicalFacts": 2,
    "currentEdgeEndpoints": 4,
    "historicalEdgeEndpoints": 2,
    "relations": 1,
}


def _fact_text(fact) -> str:
    value = fact.value if isinstance(fact.value, str) else " ".join(fact.value)
    return f"{fact.key.replace('_', ' ')} {value}"


def _node_fields(view) -> dict[str, str]:
    edges = view.edges_out + view.edges_in
    return {
        "name": view.name,
        "aliases": " ".join(view.aliases),
        "tags": " ".join(view.tags),
        "type": view.type,
        "currentFacts": " ".join(_fact_text(f) for f in view.current_facts),
        "historicalFacts": " ".join(_fact_text(f) for f in view.historical_facts),
        "currentEdgeEndpoints": " ".join(e.other_name for e in edges if e.current),
        "historicalEdgeEndpoints": " ".join(e.other_name for e in edges if not e.current),
        "relations": " ".join(e.relation.replace("_", " ") for e in edges),
    }


_NODE_CORPORA: dict[tuple, tuple] = {}


def _graph_fingerprint(namespace_id: int) -> tuple:
    """What changes whenever a node, fact or edge of the namespace does (one round trip)."""
    marker = db.obj.param
    row = db.execute_sql(
        f"SELECT (SELECT revision FROM namespace WHERE id = {marker}), "
        f"(SELECT COUNT(*) FROM graphnode WHERE namespace_id = {marker}), "
        f"(SELECT MAX(updated_at) FROM graphnode WHERE namespace_id = {marker}), "
        f"(SELECT COUNT(*) FROM graphfact f JOIN graphnode n ON f.node_id = n.id WHERE n.namespace_id = {marker}), "
        f"(SELECT MAX(f.updated_at) FROM graphfact f JOIN graphnode n ON f.node_id = n.id "
        f"WHERE n.namespace_id = {marker}), "
        f"(SELECT COUNT(*) FROM graphedge WHERE namespace_id = {marker}), "
        f"(SELECT MAX(updated_at) FROM graphedge WHERE namespace_id = {marker})",
        (namespace_id,) * 7,
    ).fetchone()
    return tuple(row)


def _node_corpus(namespace_id: int, fingerprint: tuple | None = None) -> tuple[dict, dict, dict]:
    """(term counts, lengths, name/alias tokens) of every current node, counted once per
    version of the namespace's graph (the fingerprint) rather than once per query."""

    key = (id(db.obj), namespace_id, fingerprint or _graph_fingerprint(namespace_id))
    cached = _NODE_CORPORA.get(key)
    if cached is not None:
        return cached
    nodes = list(
        GraphNode.select(GraphNode.id, GraphNode.name, GraphNode.aliases, GraphNode.tags, GraphNode.type).where(
            (GraphNode.namespace == namespace_id) & (GraphNode.status.in_(CURRENT))
        )
    )
    names = {n.id: n.name for n in nodes}
    facts: dict[int, list[str]] = {}
    for node_id, key_, value in (
        GraphFact.select(GraphFact.node, GraphFact.key, GraphFact.value)
        .join(GraphNode)
        .where((GraphNode.namespace == namespace_id) & GraphFact.status.in_(CURRENT))
        .tuples()
    ):
        facts.setdefault(node_id, []).append(f"{key_.replace('_', ' ')} {render_value(value)}")
    ends: dict[int, list[str]] = {}
    relations: dict[int, list[str]] = {}
    for src, dst, relation in (
        GraphEdge.select(GraphEdge.from_node, GraphEdge.to_node, GraphEdge.relation)
        .where((GraphEdge.namespace == namespace_id) & GraphEdge.status.in_(CURRENT))
        .tuples()
    ):
        for a, b in ((src, dst), (dst, src)):
            ends.setdefault(a, []).append(names.get(b, ""))
            relations.setdefault(a, []).append(relation.replace("_", " "))
    w = GRAPH_FIELD_WEIGHTS
    counts, lengths, own_names = {}, {}, {}
    for node in nodes:
        own_names[node.id] = frozenset(
            analyze(" ".join([node.name, *(a for a in node.aliases or [] if isinstance(a, str))]))
        )
        tokens = (
            analyze(node.name) * w["name"]
            + analyze(" ".join(a for a in node.aliases or [] if isinstance(a, str))) * w["aliases"]
            + analyze(" ".join(t for t in node.tags or [] if isinstance(t, str))) * w["tags"]
            + analyze(node.type) * w["type"]
            + analyze(" ".join(facts.get(node.id, []))) * w["currentFacts"]
            + analyze(" ".join(ends.get(node.id, []))) * w["currentEdgeEndpoints"]
            + analyze(" ".join(relations.get(node.id, []))) * w["relations"]
        )
        counts[node.id] = Counter(tokens)
        lengths[node.id] = len(tokens)
    if len(_NODE_CORPORA) > 16:
        _NODE_CORPORA.clear()
    cached = _NODE_CORPORA[key] = (counts, lengths, own_names)
    return cached


def _prerank_nodes(namespace_id: int, terms: list[str], fingerprint: tuple | None = None) -> dict[int, float]:
    """BM25 over what is stored on the nodes (name, aliases, tags, type, current facts,
    edge endpoints and relations), cheap enough to run over a whole namespace graph.

    A node whose own name or alias matches is ranked above nodes that only mention it:
    a hub person linked from everywhere would otherwise lose to its short neighbours."""

    counts, lengths, own_names = _node_corpus(namespace_id, fingerprint)
    if not counts:
        return {}
    wanted = set(terms)
    named = {nid for nid, tokens in own_names.items() if wanted & tokens}
    scores = bm25_counted(terms, counts, lengths)
    top = max(scores.values(), default=0.0)
    return {nid: score + (top if nid in named else 0.0) for nid, score in scores.items()}


_NODE_VIEWS: dict[int, tuple[tuple, dict]] = {}


def _view_fingerprint(namespace_id: int) -> tuple:
    """What a node's effective view depends on beyond the graph tables: which of its evidence
    events are live. Every status change (forget, restore, supersede, an undone import) stamps
    the event's ``updated_at``, so the namespace's newest stamp moves with it; a deleted event
    is logged in ``searchremoval``; new provenance rows raise graphsource's highest id. Each is
    one index step: counting the events by status grew with the namespace (13 ms at 85k events)."""
    marker = db.obj.param
    row = db.execute_sql(
        f"SELECT (SELECT MAX(updated_at) FROM event WHERE namespace_id = {marker}), "
        f"(SELECT MAX(id) FROM event WHERE namespace_id = {marker}), "
        f"(SELECT MAX(id) FROM searchremoval WHERE kind = 'event'), (SELECT MAX(id) FROM graphsource)",
        (namespace_id, namespace_id),
    ).fetchone()
    return (_graph_fingerprint(namespace_id), *row)


def _cached_node_views(namespace_id: int, fingerprint: tuple, node_ids: list[int]) -> dict:
    """``node_view`` of each node (or the NotFoundError it raises), remembered until the
    namespace's graph or its evidence changes; the ones not remembered are read in one batch."""
    # start-up time: `strata --help` loads this module; the graph service (~5 ms) only when a graph view is read
    from core.services.graph import node_views

    key = (id(db.obj), fingerprint)
    cached = _NODE_VIEWS.get(namespace_id)
    if cached is None or cached[0] != key:
        cached = _NODE_VIEWS[namespace_id] = (key, {})
        if len(_NODE_VIEWS) > 16:
            _NODE_VIEWS.pop(next(iter(_NODE_VIEWS)))
    views = cached[1]
    missing = [i for i in node_ids if i not in views]
    if missing:
        found = node_views(missing)
        for node_id in missing:  # a hidden node is remembered too: it is as stable as a view
            views[node_id] = found.get(node_id) or NotFoundError(f"graph node {node_id} has no visible evidence")
    return {i: views[i] for i in node_ids}


def search_graph(namespace: str, query: str, limit: int = 8) -> list[NodeHit]:
    """§7.5: field-weighted BM25 over the graph, checked against the effective view.

    A node counts only when its Event-authoritative view (forgotten sources hidden) still
    matches the query in something other than a relation label: a relation-only hit is no hit.
    """

    limit = clamp(limit, 1, SEARCH_MAX["graph"], 8)
    terms = analyze(query or "")
    if not terms:
        return []
    ns = get_namespace(namespace)
    fingerprint = _view_fingerprint(ns.id)
    scores = _prerank_nodes(ns.id, terms, fingerprint[0])
    wanted = set(terms)
    hits = []
    ranked = sorted(scores, key=lambda i: (-scores[i], i))[: limit * 3]
    views: dict = {}
    for position, nid in enumerate(ranked):
        if nid not in views:  # the next ``limit`` candidates' views in one batch, as far as needed
            views.update(_cached_node_views(ns.id, fingerprint, ranked[position : position + limit]))
        view = views[nid]
        if isinstance(view, NotFoundError):
            continue
        field_tokens = {f: set(analyze(t)) for f, t in _node_fields(view).items()}
        matched = tuple(f for f, toks in field_tokens.items() if wanted & toks)
        if not matched or matched == ("relations",):
            continue
        current = any(f in matched for f in ("name", "aliases", "tags", "type", "currentFacts", "currentEdgeEndpoints"))
        historical = any(f in matched for f in ("historicalFacts", "historicalEdgeEndpoints"))
        match_type = "both" if current and historical else ("historical" if historical else "current")
        sources = [
            i
            for fact in view.current_facts + view.historical_facts
            if wanted & set(analyze(_fact_text(fact)))
            for i in fact.source_event_ids
        ]
        sources.extend(e.id for e in view.events)
        hits.append(
            NodeHit(
                node_id=nid,
                name=view.name,
                type=view.type,
                aliases=view.aliases,
                current_state=view.current_state[:500],
                status=view.status,
                rank_score=round(scores[nid], 6),
                matched_fields=matched,
                match_type=match_type,
                provenance_event_ids=tuple(dict.fromkeys(sources))[:6],
            )
        )
        if len(hits) >= limit:
            break
    return hits
