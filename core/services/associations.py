"""Co-activation associations: event cards that were used together are linked, and the link helps
the other come up next time (a bounded Hebbian graph).

- **Learning happens only on use.** When an agent records that it used evidence (``record_use``),
  every pair of live cards behind the used refs gets stronger:
  ``w' = min(MAX_WEIGHT, w · ½^(days since last update / HALF_LIFE_DAYS) + LEARNING_RATE · √(aᵢ·aⱼ))``
  with ``a = 1`` for an adopted ref (it was judged sufficient evidence). Searching, assessing and
  building a context never reinforce, as they never raise memory weight.
- **Bounded.** At most ``MAX_PAIRS_EVENTS`` cards per use take part; each namespace keeps at most
  ``MAX_EDGES`` edges, the weakest (then oldest, then least used) pruned first.
- **Read as a small signal.** The context builder takes its best few candidates as seeds, reads at
  most ``EDGE_LIMIT`` of their edges, and lifts another candidate by the decayed weight times the
  seed's score. It only reorders candidates that passed every gate; it never admits one.
- Superseded, forgotten, archived and revoked cards are never reinforced, and the builder only
  applies an edge when both ends are live candidates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Iterable, Mapping

from core.db import chunks
from core.models import Association, Event
from core.errors import InvalidInputError
from core.timeutil import now_iso, parse_timestamp

LEARNING_RATE = 0.08
MAX_WEIGHT = 1.0
HALF_LIFE_DAYS = 45.0
SEED_LIMIT = 4
EDGE_LIMIT = 256
MAX_EDGES = 2048
MAX_PAIRS_EVENTS = 16  # cards per use that take part: 120 pairs at most
WEIGHT = 0.15  # how much a full-strength association adds to a candidate's score


def _days_between(earlier: str | None, later: str) -> float:
    if not earlier:
        return 0.0
    try:
        delta = parse_timestamp(later) - parse_timestamp(earlier)
    except InvalidInputError:
        return 0.0
    return max(0.0, delta.total_seconds() / 86400.0)


def decayed(weight: float, updated_at: str | None, now: str) -> float:
    """``weight`` halved every HALF_LIFE_DAYS since ``updated_at``, clamped to 0..1."""
    value = weight * math.pow(0.5, _days_between(updated_at, now) / HALF_LIFE_DAYS)
    return min(1.0, max(0.0, value))


def pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def reinforce(namespace_id: int, activations: Mapping[int, float], now: str | None = None) -> int:
    """Strengthen every pair among the live ``activations`` (event id -> activation 0..1); runs in the
    caller's transaction. Returns how many edges were written."""
    now = now or now_iso()
    ids = list(dict.fromkeys(activations))[:MAX_PAIRS_EVENTS]
    if len(ids) < 2:
        return 0
    live = {
        i
        for (i,) in Event.select(Event.id)
        .where((Event.id.in_(ids)) & (Event.namespace == namespace_id) & (Event.status == "active"))
        .tuples()
    }
    ids = [i for i in ids if i in live]
    pairs = [pair(a, b) for a, b in combinations(ids, 2)]
    if not pairs:
        return 0
    existing: dict[tuple[int, int], Association] = {}
    sources = sorted({s for s, _ in pairs})
    for part in chunks(sources):
        for row in Association.select().where(
            (Association.namespace == namespace_id) & Association.source.in_(part) & Association.target.in_(ids)
        ):
            existing[(row.source_id, row.target_id)] = row
    written = 0
    for source, target in pairs:
        a = min(1.0, max(0.0, float(activations[source])))
        b = min(1.0, max(0.0, float(activations[target])))
        step = LEARNING_RATE * math.sqrt(a * b)
        row = existing.get((source, target))
        if row is None:
            Association.create(
                namespace=namespace_id,
                source=source,
                target=target,
                weight=min(MAX_WEIGHT, step),
                coactivation_count=1,
                created_at=now,
                updated_at=now,
            )
        else:
            Association.update(
                weight=min(MAX_WEIGHT, decayed(row.weight, row.updated_at, now) + step),
                coactivation_count=Association.coactivation_count + 1,
                updated_at=now,
            ).where(Association.id == row.id).execute()
        written += 1
    prune(namespace_id)
    return written


def prune(namespace_id: int, keep: int = MAX_EDGES) -> int:
    """Delete the namespace's edges beyond ``keep``: the weakest first, then the oldest, then the least used."""
    total = Association.select().where(Association.namespace == namespace_id).count()
    if total <= keep:
        return 0
    doomed = [
        i
        for (i,) in Association.select(Association.id)
        .where(Association.namespace == namespace_id)
        .order_by(
            Association.weight.asc(),
            Association.updated_at.asc(),
            Association.coactivation_count.asc(),
            Association.id.desc(),
        )
        .limit(total - keep)
        .tuples()
    ]
    for part in chunks(doomed):
        Association.delete().where(Association.id.in_(part)).execute()
    return len(doomed)


@dataclass(frozen=True)
class Spread:
    """What reading associations did for one context build."""

    scores: dict[int, float]  # candidate id -> association score (0..1)
    seeds: tuple[int, ...]
    edges_read: int
    edges_applied: int


def spread(namespace_id: int, seeds: Mapping[int, float], candidates: Iterable[int], now: str | None = None) -> Spread:
    """Association scores for ``candidates`` from the ``seeds`` (id -> the seed's own score): for each
    edge between a seed and another candidate, ``decayed weight × seed score``, the best one kept."""
    now = now or now_iso()
    pool = set(candidates)
    seed_ids = list(seeds)[:SEED_LIMIT]
    if not seed_ids or len(pool) < 2:
        return Spread({}, tuple(seed_ids), 0, 0)
    rows = list(
        Association.select(Association.source, Association.target, Association.weight, Association.updated_at)
        .where(
            (Association.namespace == namespace_id)
            & (Association.source.in_(seed_ids) | Association.target.in_(seed_ids))
        )
        .order_by(Association.weight.desc(), Association.id)
        .limit(EDGE_LIMIT)
        .tuples()
    )
    scores: dict[int, float] = {}
    applied = 0
    for source, target, weight, updated_at in rows:
        if source not in pool or target not in pool:
            continue
        strength = decayed(weight, updated_at, now)
        used = False
        for seed, other in ((source, target), (target, source)):
            if seed in seeds and seed in seed_ids:
                value = strength * max(0.0, seeds[seed])
                if value > scores.get(other, 0.0):
                    scores[other] = value
                used = True
        applied += used
    return Spread(scores, tuple(seed_ids), len(rows), applied)


@dataclass(frozen=True)
class AssociationRow:
    """One card another was used together with, as the event card shows it."""

    event_id: int
    title: str
    status: str
    weight: float  # decayed to now
    coactivation_count: int
    updated_at: str


def associations_of(event_id: int, limit: int = 10, now: str | None = None) -> list[AssociationRow]:
    """The cards ``event_id`` was used together with, strongest (decayed) first."""
    now = now or now_iso()
    rows = list(
        Association.select()
        .where((Association.source == event_id) | (Association.target == event_id))
        .order_by(Association.weight.desc(), Association.id)
        .limit(max(limit, 0) * 4 or 1)
    )
    others = {r.target_id if r.source_id == event_id else r.source_id: r for r in rows}
    events = {e.id: e for e in Event.select(Event.id, Event.title, Event.status).where(Event.id.in_(list(others)))}
    out = [
        AssociationRow(
            event_id=other,
            title=events[other].title,
            status=events[other].status,
            weight=round(decayed(r.weight, r.updated_at, now), 6),
            coactivation_count=r.coactivation_count,
            updated_at=r.updated_at,
        )
        for other, r in others.items()
        if other in events
    ]
    out.sort(key=lambda a: (-a.weight, -a.coactivation_count, a.event_id))
    return out[:limit]


__all__ = [
    "AssociationRow",
    "EDGE_LIMIT",
    "HALF_LIFE_DAYS",
    "LEARNING_RATE",
    "MAX_EDGES",
    "SEED_LIMIT",
    "Spread",
    "WEIGHT",
    "associations_of",
    "decayed",
    "prune",
    "reinforce",
    "spread",
]
