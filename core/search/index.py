"""The incremental search index: postings for raw messages and events in SQL tables.

A write adds its postings in the same transaction, so search never rebuilds a corpus.
Scoring reads only the postings of the query's terms. Plain tables keep it portable:
the same index works on SQLite and PostgreSQL.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable, Iterable, Sequence

from peewee import fn

from core.db import bulk_insert, is_sqlite
from core.models import CorpusStat, Event, EventTerm, Message, MessageTerm, SearchRemoval, Thread
from core.search.analyze import analyze

MAX_TERM = 64
# §7.4 field weights: how many times each field's tokens count in an event's bag of words.
EVENT_FIELD_WEIGHTS = (
    ("title", 4),
    ("summary", 3),
    ("tags", 2),
    ("quotes", 2),
    ("participants", 5),
    ("event_type", 5),
    ("original_text", 4),
    ("happened", 4),
)


def message_text(speaker: str | None, content: str, tool_calls: Sequence[dict] | None = None) -> str:
    """What the raw index sees of a message: who said it, what it said, which tools it used."""
    parts = [f"{speaker}:" if speaker else "", content]
    for call in tool_calls or ():
        parts.append(str(call.get("name", "")))
    return " ".join(p for p in parts if p)


def event_fields(event: Event | dict[str, Any]) -> dict[str, str]:
    get = event.get if isinstance(event, dict) else (lambda k, d=None: getattr(event, k, d))
    return {
        "title": get("title") or "",
        "summary": get("summary") or "",
        "tags": " ".join(get("tags") or []),
        "quotes": " ".join(get("quotes") or []),
        "participants": " ".join(get("participants") or []),
        "event_type": (get("event_type") or "").replace("_", " "),
        "original_text": get("original_text") or "",
        "happened": " ".join(x for x in (get("happened_start"), get("happened_end")) if x),
    }


def event_tokens(event: Event | dict[str, Any]) -> list[str]:
    fields = event_fields(event)
    tokens: list[str] = []
    for name, weight in EVENT_FIELD_WEIGHTS:
        tokens.extend(analyze(fields[name]) * weight)
    return tokens


def _bump_stats(namespace_id: int, kind: str, docs: int, length: int) -> None:
    updated = (
        CorpusStat.update(docs=CorpusStat.docs + docs, total_length=CorpusStat.total_length + length)
        .where((CorpusStat.namespace == namespace_id) & (CorpusStat.kind == kind))
        .execute()
    )
    if not updated:
        CorpusStat.create(namespace=namespace_id, kind=kind, docs=docs, total_length=length)


def _rows(tokens: list[str]) -> tuple[Counter, int]:
    counts = Counter(t[:MAX_TERM] for t in tokens)
    return counts, len(tokens)


def index_messages(namespace_id: int, items: Iterable[tuple[int, int, str]]) -> None:
    """Add (message id, thread id, text) documents. Call inside the write transaction."""
    rows, docs, total = [], 0, 0
    for message_id, thread_id, text in items:
        counts, length = _rows(analyze(text))
        docs += 1
        total += length
        rows.extend((namespace_id, thread_id, message_id, term, tf, length) for term, tf in counts.items())
    bulk_insert(MessageTerm, ["namespace", "thread", "message_id", "term", "tf", "length"], rows)
    if docs:
        _bump_stats(namespace_id, "message", docs, total)


def index_events(namespace_id: int, events: Iterable[Event]) -> None:
    rows, docs, total = [], 0, 0
    for event in events:
        counts, length = _rows(event_tokens(event))
        docs += 1
        total += length
        rows.extend((namespace_id, event.id, term, tf, length) for term, tf in counts.items())
    bulk_insert(EventTerm, ["namespace", "event_id", "term", "tf", "length"], rows)
    if docs:
        _bump_stats(namespace_id, "event", docs, total)


def unindex_events(namespace_id: int, event_ids: Sequence[int]) -> None:
    """Remove events from the index before they are deleted (keeps the corpus stats right)."""
    ids = list(event_ids)
    if not ids:
        return
    lengths = dict(
        EventTerm.select(EventTerm.event, EventTerm.length).where(EventTerm.event.in_(ids)).distinct().tuples()
    )
    EventTerm.delete().where(EventTerm.event.in_(ids)).execute()
    _bump_stats(namespace_id, "event", -len(lengths), -sum(lengths.values()))
    _log_removal("event", namespace_id, ids)


def unindex_messages(namespace_id: int, message_ids: Sequence[int]) -> None:
    """Remove messages from the index before they are deleted, in the same transaction: every
    message deletion goes through here (the search segment's document table holds every message)."""
    ids = list(message_ids)
    if not ids:
        return
    lengths = dict(
        MessageTerm.select(MessageTerm.message, MessageTerm.length)
        .where(MessageTerm.message.in_(ids))
        .distinct()
        .tuples()
    )
    MessageTerm.delete().where(MessageTerm.message.in_(ids)).execute()
    _bump_stats(namespace_id, "message", -len(lengths), -sum(lengths.values()))
    _log_removal("message", namespace_id, ids)


def _log_removal(kind: str, namespace_id: int, ids: list[int]) -> None:
    """Record the removal for cached segments (``SearchRemoval``), with the highest ids left."""
    model = MessageTerm if kind == "message" else EventTerm
    posting_floor = model.select(fn.MAX(model.id)).scalar() or 0
    message_floor = 0
    if kind == "message":  # the messages themselves are deleted next, in this transaction
        removed = set(ids)
        newest = Message.select(Message.id).order_by(Message.id.desc()).limit(len(removed) + 1).tuples()
        message_floor = next((i for (i,) in newest if i not in removed), 0)
    SearchRemoval.create(
        kind=kind,
        namespace=namespace_id,
        doc_ids=sorted(set(ids)),
        posting_floor=posting_floor,
        message_floor=message_floor,
    )


def corpus(namespace_id: int, kind: str) -> tuple[int, float]:
    row = CorpusStat.get_or_none((CorpusStat.namespace == namespace_id) & (CorpusStat.kind == kind))
    if row is None or row.docs <= 0:
        return 0, 1.0
    return row.docs, (row.total_length / row.docs) or 1.0


def postings(
    kind: str, namespace_id: int, terms: Sequence[str], *, thread_id: int | None = None
) -> list[tuple[int, str, int, int]]:
    """(doc id, term, tf, doc length) for every posting of ``terms`` in the namespace, by term and
    then as written (the order the reference sums in). A scan of the namespace's postings: only
    the reference reads a term's rows through SQL."""
    if not terms:
        return []
    model, doc = (MessageTerm, MessageTerm.message) if kind == "message" else (EventTerm, EventTerm.event)
    query = (
        model.select(doc, model.term, model.tf, model.length)
        .where((model.namespace == namespace_id) & (model.term.in_(list(terms))))
        .order_by(model.term, model.id)
    )
    if thread_id is not None and kind == "message":
        query = query.where(MessageTerm.thread == thread_id)
    return list(query.tuples())


def _thread_size(thread_id: int | None) -> int | None:
    if thread_id is None:
        return None

    thread = Thread.get_or_none(Thread.id == thread_id)
    return thread.message_count if thread is not None else None


def prepared(
    kind: str,
    namespace_id: int,
    query_terms: Sequence[str],
    *,
    k1: float = 1.2,
    b: float = 0.75,
    thread_id: int | None = None,
    term_weights: dict[str, float] | None = None,
):
    """The query resolved against the namespace's current segment view (None: nothing matches)."""
    # start-up time: scoring and segment load numpy, which core.api and the MCP server do not load until a search runs
    from core.search import scoring, segment

    if not query_terms:
        return None
    view = segment.view(kind, namespace_id)
    return scoring.prepare(
        view,
        query_terms,
        k1=k1,
        b=b,
        thread_id=thread_id,
        thread_size=_thread_size(thread_id),
        term_weights=term_weights,
        max_term=MAX_TERM,
    )


def bm25(
    kind: str,
    namespace_id: int,
    query_terms: Sequence[str],
    *,
    k1: float = 1.2,
    b: float = 0.75,
    thread_id: int | None = None,
    term_weights: dict[str, float] | None = None,
) -> dict[int, float]:
    """BM25 (§7.2 idf) of every document matching a query term (equal to ``bm25_reference``).

    Prefer ``bm25_top`` when only the best few are needed: it skips what cannot rank."""
    # start-up time: numpy, as in prepared()
    from core.search import scoring

    query = prepared(kind, namespace_id, query_terms, k1=k1, b=b, thread_id=thread_id, term_weights=term_weights)
    if query is None:
        return {}
    docs, scores = scoring.score_all(query)
    return dict(zip(query.view.doc_ids[docs].tolist(), scores.tolist()))


def bm25_top(
    kind: str,
    namespace_id: int,
    query_terms: Sequence[str],
    k: int,
    *,
    k1: float = 1.2,
    b: float = 0.75,
    thread_id: int | None = None,
    term_weights: dict[str, float] | None = None,
    ties: str = "asc",
) -> list[tuple[int, float]]:
    """The k best (id, score) pairs, best first; equal scores by id (``ties`` "asc" or "desc").

    The same pairs as sorting all of ``bm25`` would give, found with MaxScore pruning."""
    # start-up time: numpy, as in prepared()
    from core.search import scoring

    query = prepared(kind, namespace_id, query_terms, k1=k1, b=b, thread_id=thread_id, term_weights=term_weights)
    if query is None or k <= 0:
        return []
    ids, scores = scoring.top_k(query, k, ties=ties)
    return list(zip(ids.tolist(), scores.tolist()))


def bm25_top_kept(
    kind: str, namespace_id: int, query_terms: Sequence[str], limit: int, keep: Callable[[list[int]], set[int]]
) -> list[int]:
    """The ``limit`` best ids by (BM25 desc, id) among those ``keep`` accepts (given ids, it
    returns the ones to keep), as filtering all of ``bm25`` sorted would give them."""
    return [i for i, _ in bm25_top_kept_scored(kind, namespace_id, query_terms, limit, keep)]


def bm25_top_kept_scored(
    kind: str, namespace_id: int, query_terms: Sequence[str], limit: int, keep: Callable[[list[int]], set[int]]
) -> list[tuple[int, float]]:
    """``bm25_top_kept`` with the scores: (id, score) pairs, best first.

    The top k by MaxScore with k growing fourfold until enough are kept: a common word
    matches most documents, and scoring and checking them all grows with the corpus."""
    depth = max(1, limit) * 4
    while True:
        best = bm25_top(kind, namespace_id, query_terms, depth)
        kept = keep([i for i, _ in best]) if best else set()
        ranked = [pair for pair in best if pair[0] in kept][:limit]
        if len(ranked) >= limit or len(best) < depth:
            return ranked
        depth *= 4


def bm25_reference(
    kind: str,
    namespace_id: int,
    query_terms: Sequence[str],
    *,
    k1: float = 1.2,
    b: float = 0.75,
    thread_id: int | None = None,
    term_weights: dict[str, float] | None = None,
) -> dict[int, float]:
    """BM25 (§7.2 idf) of every document matching a query term, straight from the SQL postings.

    The reference that the segment scoring (``bm25``, ``bm25_top``) must equal; tests compare them."""
    terms = list(dict.fromkeys(t[:MAX_TERM] for t in query_terms))
    rows = postings(kind, namespace_id, terms, thread_id=thread_id)
    if not rows:
        return {}
    n, avgdl = corpus(namespace_id, kind)
    if thread_id is not None:
        thread = Thread.get_or_none(Thread.id == thread_id)
        n = thread.message_count if thread is not None else n
    df = Counter(r[1] for r in rows)
    n = max(n, max(df.values()))
    scores: dict[int, float] = {}
    for doc_id, term, tf, length in rows:
        idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
        weight = term_weights.get(term, 1.0) if term_weights else 1.0
        part = weight * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))
        scores[doc_id] = scores.get(doc_id, 0.0) + part
    return {d: s for d, s in scores.items() if s > 0}


def prepare_search(namespace_ids: Sequence[int]) -> None:
    """Bring each namespace's message segment up to date now (building it the first time, and saving
    it beside the database once it is large), as a bulk import or a derivation pass ends: otherwise
    the first search after a million new messages reads all their postings (35 s)."""
    # start-up time: numpy, as in prepared()
    from core.search import segment

    if not is_sqlite():
        return  # nothing is saved beside a server database: a view built here would die with the process
    for namespace_id in namespace_ids:
        segment.view("message", namespace_id, strict=True)  # the caller reports a copy it could not save


def rebuild_index(namespace_id: int | None = None) -> None:
    """Drop and recompute the postings (migration backfill and `strata reindex`)."""
    for model in (MessageTerm, EventTerm, CorpusStat):
        query = model.delete()
        if namespace_id is not None:
            query = query.where(model.namespace == namespace_id)
        query.execute()
    messages = Message.select(
        Message.id, Message.namespace, Message.thread, Message.speaker, Message.content, Message.tool_calls
    )
    events = Event.select()
    if namespace_id is not None:
        messages = messages.where(Message.namespace == namespace_id)
        events = events.where(Event.namespace == namespace_id)
    by_ns: dict[int, list] = {}
    for m in messages.iterator():
        by_ns.setdefault(m.namespace_id, []).append(
            (m.id, m.thread_id, message_text(m.speaker, m.content, m.tool_calls))
        )
    for ns, items in by_ns.items():
        index_messages(ns, items)
    ev_ns: dict[int, list] = {}
    for e in events.iterator():
        ev_ns.setdefault(e.namespace_id, []).append(e)
    for ns, items in ev_ns.items():
        index_events(ns, items)
