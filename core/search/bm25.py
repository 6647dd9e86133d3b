"""BM25 and RRF exactly as the design fixes them (k1 = 1.2, b = 0.75, RRF k = 60).

idf = ln(1 + (N − df + 0.5) / (df + 0.5)) is always positive, unlike rank-bm25's Okapi
idf, so a term in most documents still counts a little.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Hashable, Iterable, Mapping, Sequence

K1 = 1.2
B = 0.75
RRF_K = 60


def bm25_scores(
    query_tokens: Iterable[str],
    documents: Mapping[Hashable, Sequence[str]],
    *,
    k1: float = K1,
    b: float = B,
) -> dict[Hashable, float]:
    """Scores of every document with a positive score (distinct query terms)."""
    counts = {doc_id: Counter(tokens) for doc_id, tokens in documents.items()}
    lengths = {doc_id: len(tokens) for doc_id, tokens in documents.items()}
    return bm25_counted(query_tokens, counts, lengths, k1=k1, b=b)


def bm25_counted(
    query_tokens: Iterable[str],
    counts: Mapping[Hashable, Mapping[str, int]],
    lengths: Mapping[Hashable, int],
    *,
    k1: float = K1,
    b: float = B,
) -> dict[Hashable, float]:
    """``bm25_scores`` over documents already counted (term -> tf, and their lengths), so a
    corpus that many queries share is counted once."""
    terms = list(dict.fromkeys(query_tokens))
    if not terms or not counts:
        return {}
    n = len(counts)
    avgdl = (sum(lengths.values()) / n) or 1.0
    wanted = set(terms)
    df = Counter(term for c in counts.values() for term in wanted if term in c)
    scores: dict[Hashable, float] = {}
    for doc_id, tf_map in counts.items():
        score = 0.0
        dl = lengths[doc_id]
        for term in terms:
            tf = tf_map.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        if score > 0:
            scores[doc_id] = score
    return scores


def ranked(scores: Mapping[Hashable, float]) -> list[Hashable]:
    """Ids by score descending, then id ascending (deterministic ties)."""
    return [doc_id for doc_id, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def rrf(
    rankings: Sequence[Sequence[Hashable]], weights: Sequence[float] | None = None, k: int = RRF_K
) -> list[tuple[Hashable, float]]:
    """Reciprocal-rank fusion; ties go to the better best rank, then the smaller id."""
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    score: dict[Hashable, float] = {}
    best: dict[Hashable, int] = {}
    for ranking, weight in zip(rankings, weights):
        if weight <= 0:
            continue
        for position, doc_id in enumerate(ranking):
            score[doc_id] = score.get(doc_id, 0.0) + weight / (k + position + 1)
            best[doc_id] = min(best.get(doc_id, position), position)
    return sorted(score.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))
