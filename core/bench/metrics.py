"""Retrieval metrics for the benchmarks: plain functions over id lists, no I/O.

``gold`` is a collection of relevant ids, ``ranked`` a list of ids best first. A ranked
list may repeat an id; only its first occurrence counts, so a duplicate never fills a
slot twice (callers usually pass lists already cleaned by ``dedupe_keep_order``, the
functions dedupe again to be safe).
"""

from __future__ import annotations

import math
from typing import Hashable, Iterable, Mapping, Sequence, TypeVar

T = TypeVar("T", bound=Hashable)


def dedupe_keep_order(items: Iterable[T]) -> list[T]:
    """The items with later repeats dropped, first occurrences in their original order."""
    seen: set = set()
    out: list[T] = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _top(ranked: Sequence[Hashable], k: int) -> list[Hashable]:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return dedupe_keep_order(ranked)[:k]


def recall_at_k(gold: Iterable[Hashable], ranked: Sequence[Hashable], k: int) -> float:
    """Share of the gold ids found among the first k distinct ranked ids (0.0 when gold is empty)."""
    wanted = set(gold)
    if not wanted:
        return 0.0
    return len(wanted.intersection(_top(ranked, k))) / len(wanted)


def recall_all_at_k(gold: Iterable[Hashable], ranked: Sequence[Hashable], k: int) -> float:
    """1.0 when every gold id is among the first k distinct ranked ids, else 0.0 (empty gold: 0.0)."""
    wanted = set(gold)
    if not wanted:
        return 0.0
    return 1.0 if wanted.issubset(_top(ranked, k)) else 0.0


def recall_any_at_k(gold: Iterable[Hashable], ranked: Sequence[Hashable], k: int) -> float:
    """1.0 when at least one gold id is among the first k distinct ranked ids, else 0.0."""
    wanted = set(gold)
    return 1.0 if wanted.intersection(_top(ranked, k)) else 0.0


def _dcg(gains: Sequence[float]) -> float:
    # LongMemEval's discount: the first two positions count fully, position i >= 2
    # (1-based) is divided by log2(i). This is the variant that reproduces the published
    # LongMemEval_S BM25 reference (ndcg_any@5 = .884; the log2(i + 1) variant gives .882).
    total = 0.0
    for position, gain in enumerate(gains, 1):
        if gain:
            total += gain if position == 1 else gain / math.log2(position)
    return total


def ndcg_any_at_k(gold: Iterable[Hashable], ranked: Sequence[Hashable], k: int) -> float:
    """nDCG@k with binary relevance; the ideal ranking puts min(k, |gold|) relevant ids first."""
    wanted = set(gold)
    if not wanted:
        return 0.0
    gains = [1.0 if item in wanted else 0.0 for item in _top(ranked, k)]
    ideal = _dcg([1.0] * min(k, len(wanted)))
    return _dcg(gains) / ideal


def percentile(values: Iterable[float], p: float) -> float:
    """The p-th percentile (0-100) with linear interpolation between order statistics; 0.0 for no values."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be within 0..100, got {p}")
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = (len(ordered) - 1) * p / 100
    lower = math.floor(position)
    upper = math.ceil(position)
    if lower == upper:
        return float(ordered[lower])
    fraction = position - lower
    return float(ordered[lower] + (ordered[upper] - ordered[lower]) * fraction)


def aggregate(
    per_question_rows: Iterable[Mapping],
    ks: Sequence[int],
    group_key: str,
    *,
    groups: Sequence[str] | None = None,
    digits: int | None = 4,
) -> dict[str, dict[str, float | None]]:
    """Mean of one metric per k, overall and per group, with the k's as string keys.

    Each row maps every k in ``ks`` (an int key) to that question's value and
    ``group_key`` to its group name, e.g. ``{"category": "temporal", 1: 0.0, 5: 1.0}``.
    The result is ``{"overall": {"1": mean, ...}, "<group>": {...}, ...}``. Groups come in
    first-seen order; ``groups`` fixes the order and always lists those names, a group
    with no rows getting None values. ``digits`` rounds the means (None: no rounding).
    """
    rows = list(per_question_rows)
    order: list[str] = list(groups) if groups is not None else []
    members: dict[str, list[Mapping]] = {name: [] for name in order}
    for row in rows:
        name = row[group_key]
        if name not in members:
            members[name] = []
            order.append(name)
        members[name].append(row)

    def means(subset: list[Mapping]) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for k in ks:
            if not subset:
                out[str(k)] = None
                continue
            value = sum(float(row[k]) for row in subset) / len(subset)
            out[str(k)] = round(value, digits) if digits is not None else value
        return out

    result = {"overall": means(rows)}
    for name in order:
        result[str(name)] = means(members[name])
    return result
