"""Default retrieval: what a question recalls when no agent steers the search.

It fuses two rankings of source messages:
- raw messages by BM25, each scored together with its neighbouring turns at a lower
  weight (a statement and its context are one unit), with the named speaker's turns
  and — for "when" questions — turns that carry a time expression weighted up;
- the messages cited by the best-matching event cards, in event order.
Across threads, each thread's best message comes before the second-best of any other, so
a question that needs several sessions gets all of them early. Everything is lexical
and deterministic; the parameters were chosen on the LoCoMo dev split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.models import Message, Namespace, Thread
from core.search.analyze import analyze
from core.search.bm25 import rrf
from core.search.index import bm25
from core.services.spaces import get_namespace
from core.timeparse import find_time_mentions, might_contain_time
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


DEFAULT_PARAMS = RetrievalParams()
EVENT_SUPPORT_LIMIT = 60
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|me|my|mine|we|our|us)\b", re.IGNORECASE)
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
    """Where each message of a namespace sits, cached until the namespace grows."""

    count: int
    at: dict[tuple[int, int], int]
    info: dict[int, tuple[int, int, str | None, str | None, str, str, str]]
    speakers: dict[str, str]
    timed: dict[int, bool] = field(default_factory=dict)


    def has_time(self, mid: int) -> bool:
        """Whether the message states a resolvable time (computed once per message)."""
        flag = self.timed.get(mid)
        if flag is None:
            _, _, _, _, created_at, content, _ = self.info[mid]
            flag = self.timed[mid] = _has_time(content, created_at)
        return flag


_LAYOUTS: dict[str, _Layout] = {}


def _layout(ns: Namespace) -> _Layout:
    count = Message.select().where(Message.namespace == ns).count()
    key = f"{ns.id}:{ns.created_at}"
    cached = _LAYOUTS.get(key)
    if cached is not None and cached.count == count:
        return cached
    at, info, speakers = {}, {}, {}
    rows = (Message.select(Message.id, Message.thread, Message.position, Message.speaker, Message.external_id,
                           Message.created_at, Message.content, Message.role)
            .where(Message.namespace == ns).tuples())
    for mid, thread, position, speaker, external_id, created_at, content, role in rows:
        at[(thread, position)] = mid
        info[mid] = (thread, position, speaker, external_id, created_at, content, role)
        if speaker:
            for token in analyze(speaker, stemming=False):
                speakers.setdefault(token, speaker)
    if len(_LAYOUTS) > 64:
        _LAYOUTS.clear()
    layout = _Layout(count=count, at=at, info=info, speakers=speakers)
    _LAYOUTS[key] = layout
    return layout


def _has_time(content: str, created_at: str) -> bool:
    if not might_contain_time(content):
        return False
    try:
        anchor = parse_timestamp(created_at)
    except Exception:
        return False
    return any(m.start for m in find_time_mentions(content, anchor))


def raw_ranking(ns: Namespace, question: str, layout: _Layout, params: RetrievalParams) -> dict[int, float]:
    terms = analyze(question)
    own = bm25("message", ns.id, terms, k1=params.k1, b=params.b)
    if not own:
        return {}
    scores: dict[int, float] = {}
    for mid, score in own.items():
        scores[mid] = scores.get(mid, 0.0) + score
        thread, position = layout.info[mid][:2]
        for offset, weight in ((-1, params.neighbour_weight), (1, params.neighbour_weight),
                               (-2, params.second_neighbour_weight), (2, params.second_neighbour_weight)):
            neighbour = layout.at.get((thread, position + offset)) if weight else None
            if neighbour is not None:
                scores[neighbour] = scores.get(neighbour, 0.0) + weight * score
    if params.event_boost > 0:
        boost = event_support(ns, terms)
        if boost:
            top_event = max(boost.values())
            for mid, value in boost.items():
                if mid in scores:
                    scores[mid] *= 1 + params.event_boost * value / top_event
    named = {layout.speakers[t] for t in analyze(question, stemming=False) if t in layout.speakers}
    wants_time = bool(_WHEN.search(question))
    about_user = bool(_FIRST_PERSON.search(question))
    top = sorted(scores, key=lambda m: -scores[m])[: params.candidate_limit]
    boosted = {}
    for mid in top:
        _, _, speaker, _, created_at, content, role = layout.info[mid]
        factor = 1.0
        if named and speaker in named:
            factor += params.speaker_boost
        elif about_user and role == "user":
            # "What did I buy?" asks about what the user said, not the assistant's replies.
            factor += params.user_boost
        if wants_time and layout.has_time(mid):
            factor += params.time_boost
        boosted[mid] = scores[mid] * factor
    return boosted


def event_support(ns: Namespace, terms: list[str]) -> dict[int, float]:
    """For each message, the best BM25 score of a live event that cites it."""
    from core.models import Event, EventSource

    scores = bm25("event", ns.id, terms)
    if not scores:
        return {}
    # Only the best events can move a message noticeably; joining all matches costs time.
    top = sorted(scores, key=lambda i: -scores[i])[:EVENT_SUPPORT_LIMIT]
    support: dict[int, float] = {}
    rows = (EventSource.select(EventSource.message, EventSource.event).join(Event)
            .where(EventSource.event.in_(top) & Event.status.in_(["active", "superseded"])).tuples())
    for message_id, event_id in rows:
        support[message_id] = max(support.get(message_id, 0.0), scores[event_id])
    return support


def event_ranking(ns: Namespace, question: str, params: RetrievalParams) -> list[int]:
    """Messages cited by the best events for the question, in event order."""
    from core.models import Event, EventSource

    terms = analyze(question)
    scores = bm25("event", ns.id, terms)
    if not scores:
        return []
    live = {i for (i,) in Event.select(Event.id).where(Event.id.in_(list(scores)) & Event.status.in_(["active", "superseded"])).tuples()}
    ranked_events = [i for i in sorted(scores, key=lambda i: (-scores[i], i)) if i in live][: params.event_limit]
    cited: dict[int, list[int]] = {}
    for event_id, message_id in (EventSource.select(EventSource.event, EventSource.message)
                                 .where(EventSource.event.in_(ranked_events)).order_by(EventSource.position).tuples()):
        cited.setdefault(event_id, []).append(message_id)
    out: list[int] = []
    for event_id in ranked_events:
        for message_id in cited.get(event_id, []):
            if message_id not in out:
                out.append(message_id)
    return out


def _diversify(order: list[int], layout: _Layout) -> list[int]:
    """Each thread's best message first (in order), then everything else in order."""
    threads = {layout.info[m][0] for m in order[:200] if m in layout.info}
    if len(threads) <= 1:
        return order
    seen, firsts, rest = set(), [], []
    for mid in order:
        thread = layout.info[mid][0] if mid in layout.info else None
        if thread not in seen:
            seen.add(thread)
            firsts.append(mid)
        else:
            rest.append(mid)
    return firsts + rest


def default_retrieval(namespace: str, question: str, *, question_time: str | None = None, limit: int = 50,
                      params: RetrievalParams = DEFAULT_PARAMS) -> list[RetrievedMessage]:
    """Source messages for a question, best first (at most ``limit``)."""
    ns = get_namespace(namespace)
    layout = _layout(ns)
    raw = raw_ranking(ns, question, layout, params)
    raw_order = sorted(raw, key=lambda m: (-raw[m], m))
    events = event_ranking(ns, question, params) if params.event_weight > 0 else []
    fused = rrf([raw_order, events], [1.0, params.event_weight])
    order = _diversify([m for m, _ in fused], layout)[: max(1, limit)]
    raw_set, event_set = set(raw), set(events)
    score = dict(fused)
    threads = dict(Thread.select(Thread.id, Thread.name).where(Thread.namespace == ns).tuples())
    out = []
    for mid in order:
        thread_id, _, _, external_id, _, _, _ = layout.info[mid]
        channels = tuple(c for c, hit in (("raw", mid in raw_set), ("events", mid in event_set)) if hit)
        out.append(RetrievedMessage(mid, external_id, threads.get(thread_id, ""), round(score[mid], 6), channels))
    return out
