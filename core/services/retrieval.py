"""Default retrieval: what a question recalls when no agent steers the search.

It fuses rankings of source messages:
- raw messages by BM25, each scored together with its neighbouring turns at a lower
  weight (a statement and its context are one unit), with the named speaker's turns
  and — for "when" questions — turns that carry a time expression weighted up;
- the messages cited by the best-matching event cards, in event order (off by default:
  their support weights the raw ranking up instead);
- for a question about what holds now of someone named, or with a word only the graph
  holds, the messages behind the graph's matching facts (``fact_ranking``).
Across threads, each thread's best message comes before the second-best of any other, so
a question that needs several sessions gets all of them early. Everything is lexical
and deterministic; the parameters were chosen on the LoCoMo dev split.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from core.db import Prepared, any_of, db
from core.models import CURRENT, LIVE, GraphEdge, GraphFact, Namespace
from core.providers.base import UNNAMED_USER
from core.search import beside, scoring, segment, spread
from core.search.analyze import analyze
from core.search.bm25 import rrf
from core.search.history import requests_history
from core.search.index import prepared
from core.search.related import RELATED_WEIGHT, class_words, related_weights
from core.search.segment import view
from core.services.graph import first_mention, newest_sources
from core.services.graph_names import entity_key, node_names, padded
from core.services.graph_vocab import FUNCTIONAL_RELATIONS, render_value
from core.services.search import best_live_events, cited_messages, search_graph
from core.services.spaces import get_namespace, thread_names
from core.services.governance import withheld
from core.timeparse import has_dated_mention
from core.timeutil import parse_timestamp


@dataclass(frozen=True)
class RetrievalParams:
    k1: float = 1.2
    b: float = 0.0
    neighbour_weight: float = 0.7
    speaker_boost: float = 1.0
    time_boost: float = 0.5
    event_weight: float = 0.0
    event_limit: int = 30
    candidate_limit: int = 400
    second_neighbour_weight: float = 0.2
    event_boost: float = 0.25
    user_boost: float = 0.5
    fact_weight: float = 1.0
    fact_limit: int = 10
    related_weight: float = RELATED_WEIGHT


DEFAULT_PARAMS = RetrievalParams()
EVENT_SUPPORT_LIMIT = 60
FACT_SOURCES = 3  # citations read per fact: the newest say what holds now
BRIDGE_NODES = 5  # nodes whose facts may hold a word no message has
BRIDGE_FACTS = 200  # of their facts, the most read
# A thread's best message is lifted above other threads' messages only when its raw score is at
# least this share of the best raw score.
DIVERSIFY_SHARE = 0.5
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|me|my|mine|we|our|us)\b", re.IGNORECASE)
# A question about what happened ("when did", "what happened to", "has lost") wants the statement
# of the event, which the text finds; the fact channel answers what holds now.
_ABOUT_EVENTS = re.compile(
    r"\b(?:did|was|were|had|happened|used\s+to|before|ago|last|(?:has|have)\s+(?:(?:not|never|just|already|ever)\s+)?"
    r"(?:been|\w+ed|lost|got|gotten|gone|done|made|taken|seen|found|left|become|begun|bought|met|won|told|heard))\b",
    re.IGNORECASE,
)
_WHO_IS = re.compile(r"^\W*(?:who|what)(?:\s+is|'s|\s+was)\b|\b(?:tell\s+me|remind\s+me|know)\s+about\b", re.IGNORECASE)
_WORK_ON = re.compile(r"\bwork(?:s|ed|ing)?\s+on\b", re.IGNORECASE)
_HOW_OLD = re.compile(r"\bhow\s+old\b", re.IGNORECASE)
_WHEN = re.compile(r"\b(when|what (date|day|month|year|time)|how long ago|which (year|month|day))\b", re.IGNORECASE)


@dataclass(frozen=True)
class RetrievedMessage:
    message_id: int
    external_id: str | None
    thread: str
    score: float
    channels: tuple[str, ...] = field(default_factory=tuple)


@dataclass
class _Layout:
    """Where messages sit, read from the namespace's search segment (no message is hydrated
    until it is a candidate); the time flag of a message is computed once per process."""

    view: Any
    speakers: dict[str, str]

    def threads_of(self, ids: list[int]) -> dict[int, int]:
        where = self.view.index_of(ids)
        return {mid: int(self.view.doc_thread[i]) for mid, i in zip(ids, where.tolist()) if i >= 0}


def _layout(ns: Namespace) -> _Layout:

    current = view("message", ns.id, ns.created_at)
    return _Layout(view=current, speakers=current.speakers)


def _has_time(content: str, created_at: str, stored: bool | None) -> bool:
    """The message's stored time flag; a row written before schema 7 had it is parsed here."""
    if stored is not None:
        return bool(stored)
    try:
        anchor = parse_timestamp(created_at)
    except Exception:
        return False
    return has_dated_mention(content, anchor)


def _legacy_time_flags(ids: list[int]) -> dict[int, bool]:
    """The time flag of messages stored before schema 7 that never got one (parsed here)."""

    rows = segment.rows_by_ids("SELECT id, content, created_at FROM message WHERE id IN ({ids})", ids)
    return {mid: _has_time(content, created_at, None) for mid, content, created_at in rows}


def raw_ranking(ns: Namespace, question: str, layout: _Layout, params: RetrievalParams) -> dict[int, float]:

    terms = analyze(question)
    query = _related_query(ns, terms, params)
    if query is None:
        return {}
    view = layout.view
    # The best events are scored on the helper thread while the messages' spread is summed here
    # (both read prepared arrays only; the SQL on either side stays on this thread).
    events = _event_query(ns, terms) if params.event_boost > 0 else None
    pending = beside.submit(scoring.top_k, events, EVENT_SUPPORT_LIMIT) if events is not None else None
    sums, own = spread.spread_all(view, query, params)
    boost = _support(*pending.result(), history=requests_history(question)) if pending is not None else {}
    factors: dict[int, float] = {}
    if boost:
        top_event = max(boost.values())
        for value, at in zip(boost.values(), view.index_of(list(boost)).tolist()):
            if at >= 0:
                factors[at] = 1 + params.event_boost * value / top_event
    limit = params.candidate_limit
    docs, scores = spread.cut(sums, factors, limit)
    if not len(docs):
        return {}
    # The candidate_limit best. The vectorised sums are float32, close to the loop's but not equal,
    # so everything within SUM_SLACK of the cut is summed again exactly as the loop does, which
    # also gives the loop's order for equal scores.
    if len(scores) > limit:
        kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        keep = np.flatnonzero(scores >= kth * (1 - spread.SUM_SLACK))
    else:
        keep = np.arange(len(scores))
    exact, arrival = spread.exact(view, docs[keep], own, params)
    if factors:
        for row, target in enumerate(docs[keep].tolist()):
            factor = factors.get(target)
            if factor is not None:
                exact[row] *= factor
    chosen = np.lexsort((arrival, -exact))[:limit]
    top_docs = docs[keep][chosen]
    top = view.doc_ids[top_docs].tolist()
    top_scores = exact[chosen].tolist()
    named = {layout.speakers[t] for t in analyze(question, stemming=False) if t in layout.speakers}
    wants_time = bool(_WHEN.search(question))
    about_user = bool(_FIRST_PERSON.search(question))
    # The boosts read the segment's message columns: no candidate row is fetched from SQL.
    speakers = [view.speaker_names[c] if c >= 0 else None for c in view.doc_speaker[top_docs].tolist()]
    users = view.doc_user[top_docs].tolist()
    times = view.doc_time[top_docs].tolist()
    legacy = _legacy_time_flags([m for m, t in zip(top, times) if t < 0]) if wants_time else {}
    boosted = {}
    for mid, score, speaker, user, has_time in zip(top, top_scores, speakers, users, times):
        factor = 1.0
        if named and speaker in named:
            factor += params.speaker_boost
        elif about_user and user:
            # "What did I buy?" asks about what the user said, not the assistant's replies.
            factor += params.user_boost
        if wants_time and (has_time > 0 or (has_time < 0 and legacy.get(mid, False))):
            factor += params.time_boost
        boosted[mid] = score * factor
    return boosted


def _related_query(ns: Namespace, terms: list[str], params: RetrievalParams):
    """The messages' query for the question's terms and the answers of its class words
    (core.search.related); a class word no message holds is stood in for by its answers."""

    classes = class_words(terms) if params.related_weight > 0 else set()
    extra = related_weights(terms, params.related_weight) if classes else None
    query = prepared("message", ns.id, terms + list(extra or ()), k1=params.k1, b=params.b, term_weights=extra)
    if not classes or query is None:
        return query
    absent = frozenset(classes - {t.term for t in query.terms})
    if not absent:
        return query
    extra = related_weights(terms, params.related_weight, absent)
    return prepared("message", ns.id, terms + list(extra or ()), k1=params.k1, b=params.b, term_weights=extra)


def event_support(ns: Namespace, terms: list[str], *, history: bool = False) -> dict[int, float]:
    """For each message, the best BM25 score of a current event (a live one, for a question that
    asks for history) that cites it (``raw_ranking`` computes the same on its helper thread)."""

    events = _event_query(ns, terms)
    return _support(*scoring.top_k(events, EVENT_SUPPORT_LIMIT), history=history) if events is not None else {}


def _event_query(ns: Namespace, terms: list[str]):
    """The events' query for the question's terms (None when no event matches): only the best
    EVENT_SUPPORT_LIMIT of them can move a message noticeably; joining all matches costs time."""

    return prepared("event", ns.id, terms)


def _support(event_ids: np.ndarray, scores: np.ndarray, *, history: bool = False) -> dict[int, float]:
    """Message -> the best score among the given events (ids with their BM25 scores) that are
    current (live, when the question asks for history) and cite it: a superseded card does not
    lift what it cited unless history is asked for (the messages themselves stay searchable)."""
    if not len(event_ids):
        return {}

    by_event = dict(zip(event_ids.tolist(), scores.tolist()))
    support: dict[int, float] = {}
    statuses = "'active', 'superseded'" if history else "'active'"
    rows = segment.rows_by_ids(
        "SELECT s.message_id, s.event_id FROM eventsource s JOIN event e ON e.id = s.event_id "
        f"WHERE s.event_id IN ({{ids}}) AND e.status IN ({statuses})",
        list(by_event),
    )
    for message_id, event_id in rows:
        support[message_id] = max(support.get(message_id, 0.0), by_event[event_id])
    return support


def event_ranking(ns: Namespace, question: str, params: RetrievalParams) -> list[int]:
    """Messages cited by the best events for the question, in event order."""

    history = requests_history(question)
    return cited_messages(best_live_events(ns.id, analyze(question), params.event_limit, current_only=not history))


# How people ask about a one-at-a-time fact besides the words of its key ("what is Maya's job?"
# asks for her role). Keys not listed are asked about by their own words only.
_WORK = "work job company employer office"
_JOB = "job role position title occupation profession work living"  # "what does Tomás do for work?"
_HOME = "live home city town country based"
STATE_WORDS = {
    "works_at": _WORK,
    "works_for": _WORK,
    "employer": _WORK,
    "current_job": _JOB,
    "role": _JOB,
    "job_title": _JOB,
    "title": _JOB,
    "occupation": _JOB,
    "lives_in": _HOME,
    "lives_at": _HOME,
    "residence": _HOME,
    "current_city": _HOME,
    "location": _HOME,
    "age": "age",
    "birthday": "birthday born",
    "born_in": "born birthplace",
    "birthplace": "born birthplace",
    "hometown": "hometown grew up",
    "relationship_status": "relationship married single partner dating",
    "marital_status": "married single",
    "spouse": "spouse married husband wife",
    "married_to": "married husband wife spouse",
    "reports_to": "report manager boss",
    "current_project": "project working",
}


# Rendered once per shape (core.db.Prepared): peewee's rendering cost more than the read.
_FACTS_WITH_KEYS = Prepared(
    lambda nodes, keys: (
        GraphFact.select(GraphFact.id, GraphFact.key, GraphFact.status)
        .where(GraphFact.node.in_(nodes) & GraphFact.key.in_(keys))
        .tuples()
    )
)


@lru_cache(maxsize=None)
def _asked_by(key: str) -> frozenset[str]:
    """The analysed words that ask for a one-at-a-time key (its own, when none are listed)."""
    return frozenset(analyze(STATE_WORDS.get(key) or key.replace("_", " ")))


def fact_ranking(ns: Namespace, question: str, params: RetrievalParams) -> list[int]:
    """Messages behind the graph records a question asks about, best first.

    - A one-at-a-time fact (where someone lives or works, their role, age, …) of a node named
      in the question ("I" / "my" is the namespace's user, when it has one), when the rest of
      the question uses a word of its key or of how people ask for it: "where does Maya work
      now?" finds Maya's ``works_at`` and so the message that said where she works, which
      need not say "work". Current facts first, each fact's newest citations.
    - A question that names a node and asks nothing else of it ("who is Tomás?"): where it was
      introduced (``_introductions``).
    - Otherwise a current fact, of a node named or found by graph search, that holds a word of
      the question no message has (or one of its family): "what is the dog's name?" finds
      ``has_pet: dog Biscuit`` where the messages only ever said "beagle", and "what allergies
      does Ivy have?" finds Ivy's ``allergic_to`` (the graph's words bridge the gap the text
      cannot).
    Other accumulating facts (likes, visits), and questions about what happened or when, are
    left to the text: which statement answers them is what the text ranking decides."""

    if _WHEN.search(question) or _ABOUT_EVENTS.search(question):
        return []
    terms = analyze(question)
    named = _named_nodes(ns, question)
    events = _state_events(question, terms, named, params.fact_limit) or _bridging_events(
        ns, terms, named[0], params.fact_limit
    )
    return cited_messages(events)[: params.fact_limit]


def _cited(kind: str, scored: list[tuple[int, ...]], limit: int) -> list[int]:
    """The live events citing the best ``limit`` records (``scored`` tuples sort best first and
    end with -record id), each one's FACT_SOURCES newest."""

    return list(
        dict.fromkeys(
            event_id
            for *_, record in sorted(scored)[:limit]
            for event_id in newest_sources(kind, -record, LIVE, FACT_SOURCES)
        )
    )


def _named_nodes(ns: Namespace, question: str) -> tuple[set[int], set[str]]:
    """The nodes a question names ("I" / "my" is the namespace's one user, when it names no one)
    and the analysed words of their names."""

    names = node_names(ns.id)
    words = re.findall(r"[\w'’-]+", question)
    nodes = names.mentioned_in(padded(question)) | names.with_keys(
        {entity_key(w) for w in words}, "person", first_names=True
    )
    named = {t for i in nodes for t in analyze(" ".join(names.nodes[i].needles))}
    if not nodes and _FIRST_PERSON.search(question):
        users = user_speakers(ns)
        if len(users) == 1:  # "where do I work?" asks about the one person who is the user here
            nodes = names.with_keys({entity_key(u) for u in users}, "person", first_names=True)
    return nodes, named


def _state_events(question: str, terms: list[str], named: tuple[set[int], set[str]], limit: int) -> list[int]:
    """Events behind what the question asks of the nodes it names (``_named_nodes``; see
    ``fact_ranking``)."""

    nodes, named_words = named
    if not nodes:
        return []
    wanted = set(terms) - named_words
    if _HOW_OLD.search(question):
        wanted |= set(analyze("age"))  # not "old" alone: "old notebooks" is no question of age
    if _WORK_ON.search(question):
        wanted -= set(analyze("work"))  # "what does Dave work on?" asks about a task, not an employer
    if not wanted:
        return _introductions(sorted(nodes)[:limit]) if _WHO_IS.search(question) else []
    keys = sorted(key for key in FUNCTIONAL_RELATIONS if wanted & _asked_by(key))
    if not keys:  # most questions ask for no one-at-a-time key: no read at all
        return []
    scored = []
    for fact_id, key, status in _FACTS_WITH_KEYS.rows(sorted(nodes), keys):
        scored.append((-len(wanted & _asked_by(key)), 0 if status in CURRENT else 1, -fact_id))
    # A person whose job changed every year has a fact per job: the newest few are read.
    return _cited("fact", scored, limit)


INTRODUCING_RECORDS = 16  # of a node's relations and facts, the most read to find where it was introduced


def _introductions(nodes: list[int]) -> list[int]:
    """For each node, the event that introduced it: the first said of those that cite what the
    graph knows of it (its relations other than "knows", and its current facts: "our neighbour
    Anouk" before a passing "Anouk said she can"), else the first that mentions it at all."""

    out: list[int] = []
    for node in nodes:
        edges = (
            GraphEdge.select(GraphEdge.id)
            .where(
                ((GraphEdge.from_node == node) | (GraphEdge.to_node == node))
                & GraphEdge.status.in_(CURRENT)
                & (GraphEdge.relation != "knows")
            )
            .order_by(GraphEdge.id)
            .limit(INTRODUCING_RECORDS)
            .tuples()
        )
        facts = (
            GraphFact.select(GraphFact.id)
            .where((GraphFact.node == node) & GraphFact.status.in_(CURRENT))
            .order_by(GraphFact.id)
            .limit(INTRODUCING_RECORDS)
            .tuples()
        )
        event = first_mention({"edge": [e for (e,) in edges], "fact": [f for (f,) in facts]}, LIVE)
        if event is None:
            event = first_mention({"node": [node]}, LIVE)
        if event is not None:
            out.append(event)
    return list(dict.fromkeys(out))


def _bridging_events(ns: Namespace, terms: list[str], named: set[int], limit: int) -> list[int]:
    """Events behind current facts holding a question word that no message holds, of the nodes
    the question names and the best few by graph search ("what allergies does Ivy have?" finds
    ``allergic_to: peanuts`` where the messages only say "allergic")."""

    query = prepared("message", ns.id, terms)
    unknown = set(terms) - ({t.term for t in query.terms} if query is not None else set())
    if not unknown:
        return []
    found = [hit.node_id for hit in search_graph(ns.name, " ".join(sorted(unknown)), limit=BRIDGE_NODES)]
    nodes = sorted(named | set(found))
    if not nodes:
        return []
    # A hub's facts run to thousands: only those whose text holds an unknown word's stem (or the
    # start of a long one) are read, the newest first.
    holds = any_of(
        [
            GraphFact.key.contains(probe) | GraphFact.value.contains(probe)
            for probe in sorted({_stem_probe(t) for t in unknown})
        ]
    )
    scored = []
    for fact_id, key, value in (
        GraphFact.select(GraphFact.id, GraphFact.key, GraphFact.value)
        .where(GraphFact.node.in_(nodes) & GraphFact.status.in_(CURRENT) & holds)
        .order_by(GraphFact.id.desc())
        .limit(BRIDGE_FACTS)
        .tuples()
    ):
        words = set(analyze(f"{key.replace('_', ' ')} {render_value(value)}"))
        shared = sum(1 for u in unknown if any(_same_word(u, w) for w in words))
        if shared:
            scored.append((-shared, -fact_id))
    return _cited("fact", scored, limit)


FAMILY_PREFIX = 6  # letters two stems must share, the shorter whole, to count as one word's family


def _same_word(a: str, b: str) -> bool:
    """One stem, or one word's family: the light stemmer gives "allergy" and "allergic" two
    stems ("allergi", "allergic"), one a prefix of the other."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= FAMILY_PREFIX and long.startswith(short)


def _stem_probe(term: str) -> str:
    """A substring every stored word of ``term``'s family holds: stems turn a final "y" into "i"
    ("study" → "studi"), and a family shares its first FAMILY_PREFIX letters."""
    if len(term) > FAMILY_PREFIX:
        return term[:FAMILY_PREFIX]
    return term[:-1] if term.endswith("i") and len(term) > 3 else term


_USER_SPEAKERS: "weakref.WeakKeyDictionary[object, dict[tuple[int, str], tuple[int, frozenset[str]]]]" = (
    weakref.WeakKeyDictionary()
)


def user_speakers(ns: Namespace) -> frozenset[str]:
    """The speakers of the namespace's user messages (``UNNAMED_USER`` for those with none), read
    from its message segment; kept per database and namespace and extended by the documents
    appended since (one pass over 1M documents the first time, a few rows after a capture)."""

    current = view("message", ns.id, ns.created_at)
    known = _USER_SPEAKERS.setdefault(db.obj, {})
    key = (ns.id, current.identity)
    seen, found = known.get(key, (0, frozenset()))
    if seen > current.size:  # documents were dropped: count again
        seen, found = 0, frozenset()
    if seen < current.size:
        codes = current.doc_speaker[seen : current.size][current.doc_user[seen : current.size] == 1]
        # A user message with no speaker is the graph's UNNAMED_USER.
        found = found | {current.speaker_names[c] if c >= 0 else UNNAMED_USER for c in np.unique(codes).tolist()}
        known[key] = (current.size, found)
    return found


def _diversify(
    order: list[int], threads: dict[int, int], raw: dict[int, float], structured: frozenset[int] = frozenset()
) -> list[int]:
    """Each thread's best message first (in order), then everything else in order.

    Only a thread whose best message is a good match in its own right is lifted: a raw score of at
    least ``DIVERSIFY_SHARE`` of the top one, or a place in a ``structured`` ranking (events, facts).
    A question about one thread should not see another thread's weak match pushed above its own
    answers just because that thread exists."""
    if len({threads[m] for m in order[:200] if m in threads}) <= 1:
        return order
    floor = DIVERSIFY_SHARE * max(raw.values(), default=0.0)
    seen, firsts, rest = set(), [], []
    for mid in order:
        thread = threads.get(mid)
        if thread not in seen and (mid in structured or raw.get(mid, 0.0) >= floor):
            seen.add(thread)
            firsts.append(mid)
        else:
            rest.append(mid)
    return firsts + rest


CORRECTION_REACH = 10  # of the best messages, those whose statements were corrected bring the correction
# The superseded events citing some messages. CROSS JOIN keeps SQLite on the message index: joined plainly
# it walked every superseded event of the store by the status index (5k at 100k messages, 15 ms a question).
SUPERSEDED_CITING = (
    "SELECT es.message_id, e.superseded_by FROM eventsource es CROSS JOIN event e "
    "WHERE es.message_id IN ({ids}) AND e.id = es.event_id AND e.status = 'superseded' "
    "AND e.superseded_by IS NOT NULL"
)
CORRECTION_HOPS = 4  # a correction corrected in turn: followed this far to what holds now


def _with_corrections(order: list[int], score: dict[int, float]) -> tuple[list[int], set[int]]:
    """``order`` with, right after each of its first ``CORRECTION_REACH`` messages that an event
    superseded since cites, the messages behind the event that holds now ("I keep my notes in
    Notion" is followed by "I no longer use Notion, I switched to Obsidian", which shares no word
    with "which app do I keep my notes in?"). The messages placed are given the score of the one
    they follow, and returned as well (their channel "correction")."""

    head = order[:CORRECTION_REACH]
    superseded = segment.rows_by_ids(SUPERSEDED_CITING, head)
    if not superseded:
        return order, set()
    successor: dict[int, int] = {}
    frontier = {by for _, by in superseded}
    for _ in range(CORRECTION_HOPS):  # a correction that was corrected again: on to the newest
        rows = segment.rows_by_ids(
            "SELECT id, superseded_by FROM event WHERE id IN ({ids}) AND status = 'superseded' "
            "AND superseded_by IS NOT NULL",
            sorted(frontier),
        )
        if not rows:
            break
        successor.update(rows)
        frontier = {by for _, by in rows} - set(successor)

    def newest(event_id: int) -> int:
        seen = set()
        while event_id in successor and event_id not in seen:
            seen.add(event_id)
            event_id = successor[event_id]
        return event_id

    targets: dict[int, set[int]] = {}
    for message_id, by in superseded:
        targets.setdefault(message_id, set()).add(newest(by))
    cited: dict[int, list[int]] = {}
    for event_id, message_id in segment.rows_by_ids(
        "SELECT event_id, message_id FROM eventsource WHERE event_id IN ({ids}) ORDER BY message_id",
        sorted(set().union(*targets.values())),
    ):
        cited.setdefault(event_id, []).append(message_id)
    rank = {mid: i for i, mid in enumerate(order)}
    placed: list[int] = []
    done: set[int] = set()
    added: set[int] = set()
    for at, mid in enumerate(order):
        if mid in done:
            continue
        placed.append(mid)
        done.add(mid)
        for event_id in sorted(targets.get(mid, ())):
            for follower in cited.get(event_id, ()):
                if follower in done or rank.get(follower, len(order)) < at:
                    continue  # already shown above
                placed.append(follower)
                done.add(follower)
                added.add(follower)
                score[follower] = max(score.get(follower, 0.0), score[mid])
    return placed, added


def default_retrieval(
    namespace: str,
    question: str,
    *,
    question_time: str | None = None,
    limit: int = 50,
    params: RetrievalParams = DEFAULT_PARAMS,
    for_agent: bool = False,
    excluded: list[dict[str, Any]] | None = None,
) -> list[RetrievedMessage]:
    """Source messages for a question, best first (at most ``limit``). Messages of governed
    records that may not be shown (``core.services.governance.withheld``) are left out; those
    that ranked above the cut are added to ``excluded`` (when given) as ``{"ref": "message:ID",
    "score": fused score, "reason": code}``."""
    ns = get_namespace(namespace)
    layout = _layout(ns)
    raw = raw_ranking(ns, question, layout, params)
    raw_order = sorted(raw, key=lambda m: (-raw[m], m))
    events = event_ranking(ns, question, params) if params.event_weight > 0 else []
    facts = fact_ranking(ns, question, params) if params.fact_weight > 0 else []
    fused = rrf([raw_order, events, facts], [1.0, params.event_weight, params.fact_weight])
    ranked = [m for m, _ in fused]
    threads = layout.threads_of(ranked)
    raw_set, event_set, fact_set = set(raw), set(events), set(facts)
    order = _diversify(ranked, threads, raw, frozenset(event_set | fact_set))
    score = dict(fused)
    order, corrected = _with_corrections(order, score)
    hidden = withheld(message_ids=order, for_agent=for_agent)
    kept: list[int] = []
    for mid in order:
        if len(kept) >= max(1, limit):
            break
        code = hidden.get(("message", mid))
        if code is None:
            kept.append(mid)
        elif excluded is not None:
            excluded.append({"ref": f"message:{mid}", "score": round(score[mid], 6), "reason": code})
    order = kept
    threads.update(layout.threads_of([mid for mid in order if mid not in threads]))

    names = thread_names(threads[mid] for mid in order if mid in threads)
    # Only messages the segment marks as having an external id are read (random rows at 1M).
    view = layout.view
    marked = [mid for mid, at in zip(order, view.index_of(order).tolist()) if at < 0 or view.doc_external[at]]
    external = dict(segment.rows_by_ids("SELECT id, external_id FROM message WHERE id IN ({ids})", marked))
    out = []
    for mid in order:
        if mid not in threads:
            continue
        channels = tuple(
            c
            for c, hit in (
                ("raw", mid in raw_set),
                ("events", mid in event_set),
                ("facts", mid in fact_set),
                ("correction", mid in corrected),
            )
            if hit
        )
        out.append(
            RetrievedMessage(mid, external.get(mid), names.get(threads[mid], ""), round(score[mid], 6), channels)
        )
    return out
