"""BM25 over a segment view: exhaustive (vectorised) or top-k with MaxScore pruning.

Both reproduce the reference (``core.search.index.bm25_reference``) bit for bit in the usual
case: the same idf and N (CorpusStat, or the thread's message count, raised to the largest
df), the same float expression per posting, and per document the terms added in sorted
order starting from 0.0 — the order in which the reference reads its SQL rows.

MaxScore: a document that holds only terms whose upper bounds add up to less than the
k-th best score known so far cannot enter the top k, so only the postings of the other
("essential") terms are read in full; the rest are looked up for those candidates alone.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from core.search import segment
from core.search.segment import Part, View

EXHAUSTIVE_BELOW = 20_000  # postings under which pruning is not worth its bookkeeping
# Terms from which scoring every posting beats MaxScore, unless the postings are many: with
# many terms of similar weight the remaining bounds stay above the threshold until the last few
# terms, so pruning looks every candidate up in nearly every term. Measured on the scale stores
# (block-summary queries, top 32): over 100k messages or events exhaustive wins at 12-40 terms
# (1.2-2.6 ms vs 1.9-7.7); over 1M (1.4-3.6M postings) MaxScore wins at 12 and 24 terms (8-29 vs
# 19-34 ms) and is even at 40 (33 vs 34 events, 49 vs 44 messages).
LONG_QUERY = 16
LONG_POSTINGS = 1_000_000
DENSE_HELD = 50_000  # candidates from which _prune sums the held terms in a document-sized array (below,
# a binary search per posting is cheaper than filling one; above, 2-3x dearer)
SEED_POSTINGS = 4096  # postings of the terms that give the first threshold (see _seeds)
SAFETY = 1e-9  # relative slack on bounds, so float rounding can never prune a real hit


@dataclass
class _Term:
    term: str
    runs: list[tuple[Part, np.ndarray, np.ndarray]]  # (part, docs, tf) with at least one posting
    df: int
    w_idf: float  # weight * idf


@dataclass
class Query:
    terms: list[_Term]  # sorted by term: the summation order
    k1: float
    b: float
    avgdl: float
    view: View

    @property
    def postings(self) -> int:
        return sum(t.df for t in self.terms)


def prepare(
    view: View,
    query_terms: Sequence[str],
    *,
    k1: float,
    b: float,
    thread_id: int | None = None,
    thread_size: int | None = None,
    term_weights: dict[str, float] | None = None,
    max_term: int = 64,
) -> Query | None:
    """Resolve the terms against the view; None when no term has a posting."""
    n = view.stat_docs
    avgdl = (view.stat_total / n) or 1.0 if n > 0 else 1.0
    if n <= 0:
        n = 0
    thread_mask = None
    if thread_id is not None:
        n = thread_size if thread_size is not None else n
        thread_mask = view.doc_thread == thread_id
    resolved: list[tuple[str, list, int]] = []
    for term in sorted(set(t[:max_term] for t in query_terms)):
        runs = []
        df = 0
        for part in view.parts():
            docs, tf = part.slice(term)
            if thread_mask is not None and len(docs):
                keep = thread_mask[docs]
                docs, tf = docs[keep], tf[keep]
            if len(docs):
                runs.append((part, docs, tf))
                df += len(docs)
        if df:
            resolved.append((term, runs, df))
    if not resolved:
        return None
    n = max(n, max(df for _, _, df in resolved))
    terms = []
    for term, runs, df in resolved:
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        weight = term_weights.get(term, 1.0) if term_weights else 1.0
        terms.append(_Term(term, runs, df, weight * idf))
    return Query(terms, k1, b, avgdl, view)


def _contrib(q: Query, term: _Term, docs: np.ndarray, tf: np.ndarray) -> np.ndarray:
    """The reference's ``weight * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))``."""
    if not q.b:
        # b = 0: the length term is 1 - 0 + 0.0 = 1.0 exactly, so a posting's part depends on its tf
        # alone: the same expression over the few tf values, then one gather.
        return np.take(_tf_parts(q, term, tf), tf)  # np.take: half the time of a fancy-index gather
    length = np.take(q.view.doc_len, docs)
    if len(docs):
        # The same expression over every (tf, length) pair present, then one gather: documents
        # have a few hundred lengths at most, and ten float passes over a long posting list cost
        # more than building the table (used when it is no larger than the postings).
        max_tf, max_len = int(tf.max()), int(length.max())
        if (max_tf + 1) * (max_len + 1) <= len(docs):
            tfs = np.arange(max_tf + 1, dtype=np.float64)[:, None]
            lengths = np.arange(max_len + 1, dtype=np.float64)[None, :]
            table = term.w_idf * tfs * (q.k1 + 1) / (tfs + q.k1 * (1 - q.b + q.b * lengths / q.avgdl))
            if max_tf == 1:
                return np.take(table[1], length)
            return np.take(table.ravel(), tf.astype(np.int64) * (max_len + 1) + length)
    tf = tf.astype(np.float64)
    length = length.astype(np.float64)
    return term.w_idf * tf * (q.k1 + 1) / (tf + q.k1 * (1 - q.b + q.b * length / q.avgdl))


def _tf_parts(q: Query, term: _Term, tf: np.ndarray) -> np.ndarray:
    """With b = 0: the part of a posting with each tf from 0 to the largest in ``tf``."""
    values = np.arange(int(tf.max()) + 1 if len(tf) else 1, dtype=np.float64)
    return term.w_idf * values * (q.k1 + 1) / (values + q.k1 * (1 - q.b + 0.0))


def _parts(q: Query, term: _Term, docs: np.ndarray, tf: np.ndarray) -> np.ndarray | np.float64:
    """``_contrib`` to add, or the one value every posting shares when b = 0 and each tf is 1
    (messages of a few dozen words mostly hold a term once): adding a scalar skips a gather per
    posting."""
    if q.b or not len(tf):
        return _contrib(q, term, docs, tf)
    parts = _tf_parts(q, term, tf)
    return parts[1] if len(parts) == 2 else np.take(parts, tf)


_WORK = threading.local()


def work_array(name: str, size: int, zero: bool = True, dtype=np.float64) -> np.ndarray:
    """``size`` zeros (``zero=False``: whatever was left there) in an array this thread keeps
    under ``name`` and hands out again on its next call (at a million documents a fresh array costs
    more in page faults than the sums done in it). Whatever holds the result must be done with it
    before the thread asks for ``name`` again."""
    arrays = _WORK.__dict__.setdefault("arrays", {})
    buffer = arrays.get(name)
    if buffer is None or len(buffer) < size or buffer.dtype != dtype:
        # with room: a captured turn adds a document, and a fresh million-entry array each time
        # would cost its page faults on every query after a capture
        buffer = arrays[name] = np.empty(size + size // 64 + 1024, dtype)
    out = buffer[:size]
    if zero:
        out.fill(0.0)
    return out


def dense_scores(q: Query, pad: int = 0, work: str = "dense_scores", dtype=np.float64) -> np.ndarray:
    """Every document's score by index (0.0 where no term), then ``pad`` trailing zeros, in this
    thread's ``work`` array (see ``work_array``).

    Per term each posting's part is added to its document, so each document sums its terms in
    sorted order from 0.0: the reference's sums, bit for bit, in float64 (``np.float32``: within
    a relative 1e-6 of them, for half the memory traffic)."""
    total = work_array(work, q.view.size + pad, dtype=dtype)
    for term in q.terms:
        for _, docs, tf in term.runs:
            # unbuffered: ~3x a fancy-index +=; parts of the array's own type (a cast per posting: 30x)
            np.add.at(total, docs, np.asarray(_parts(q, term, docs, tf), dtype))
    return total


def score_all(q: Query) -> tuple[np.ndarray, np.ndarray]:
    """(document indexes, scores) of every document with a positive score, by index (no sorting)."""
    total = dense_scores(q)
    hit = np.flatnonzero(total > 0)
    return hit, total[hit]


def _lookup(
    term: _Term, part: Part, docs: np.ndarray, tf: np.ndarray, cands: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(positions in ``cands``, tf there) of the candidates that hold ``term`` in this run."""
    # Building a table costs a pass over the documents; for a few candidates binary searches are cheaper.
    table = part.dense_tf(term.term, build=len(cands) * 8 >= len(docs)) if len(docs) >= segment.DENSE_MIN else None
    if table is not None and len(docs) == len(part.slice(term.term)[0]):  # not a thread's subset
        inside = np.flatnonzero(cands < len(table))
        looked = table[cands[inside]]
        hit = looked > 0
        return inside[hit], looked[hit]
    if not len(cands):
        return np.zeros(0, np.int64), tf[:0]
    if len(docs) < len(cands):  # fewer postings than candidates: find each posting among them
        where = np.searchsorted(cands, docs)
        where[where >= len(cands)] = len(cands) - 1
        found = cands[where] == docs
        return where[found], tf[found]
    where = np.searchsorted(docs, cands)
    where[where >= len(docs)] = len(docs) - 1
    found = np.flatnonzero(docs[where] == cands)
    return found, tf[where[found]]


def score_docs(q: Query, cands: np.ndarray, dense: set[int] = frozenset()) -> np.ndarray:
    """Exact scores of the candidate documents (sorted indexes): each term in ``dense`` (whose
    documents are all candidates) is added over its postings, the others looked up for the
    candidates only; per candidate, terms in sorted order from 0.0."""
    scores = np.zeros(len(cands), np.float64)
    for index, term in enumerate(q.terms):
        for part, docs, tf in term.runs:
            if index in dense:
                np.add.at(scores, np.searchsorted(cands, docs), _parts(q, term, docs, tf))
                continue
            at, looked = _lookup(term, part, docs, tf, cands)
            if len(at):
                np.add.at(scores, at, _parts(q, term, cands[at], looked))
    return scores


def first_terms_of(q: Query, cands: np.ndarray) -> np.ndarray:
    """For each candidate (sorted indexes), the index of the first (sorted) query term it holds
    (len(terms): none). The reference reads its rows term by term, so (first term, id) is the
    order in which its score dict first held each document."""
    first = np.full(len(cands), len(q.terms), np.int32)
    for index in range(len(q.terms) - 1, -1, -1):  # the earliest term is written last and wins
        term = q.terms[index]
        for part, docs, tf in term.runs:
            first[_lookup(term, part, docs, tf, cands)[0]] = index
    return first


def union(q: Query, indexes: Sequence[int]) -> np.ndarray:
    """Sorted distinct documents holding any of the given terms (a dense mask, no sort)."""
    runs = [docs for index in indexes for _, docs, _ in q.terms[index].runs]
    if len(runs) == 1:
        return runs[0]  # one term in one part: its postings already are sorted and distinct
    mask = np.zeros(q.view.size, bool)
    for docs in runs:
        mask[docs] = True
    return np.flatnonzero(mask)


def upper_bound(q: Query, term: _Term) -> float:
    """The largest contribution any posting of ``term`` can make (a little generous)."""
    best = 0.0
    for part, docs, tf in term.runs:
        # The term's largest tf and shortest document over the whole run (cached per part): a
        # bound for any subset of it too, such as one thread's postings.
        max_tf, min_len = part.extremes(term.term, q.view.doc_len)
        max_tf, min_len = float(max_tf), float(min_len) if q.b else 0.0
        value = term.w_idf * max_tf * (q.k1 + 1) / (max_tf + q.k1 * (1 - q.b + q.b * min_len / q.avgdl))
        best = max(best, value)
    return best * (1 + SAFETY)


def _order(ids: np.ndarray, scores: np.ndarray, ties: str) -> np.ndarray:
    """Positions sorted by score descending, then id ascending (``ties="asc"``) or descending."""
    return np.lexsort((ids if ties == "asc" else -ids, -scores))


def _prune(
    q: Query, cands: np.ndarray, held: set[int], bounds: list[float], k: int, theta: float
) -> tuple[np.ndarray, float]:
    """(the candidates that can still reach the top k, a floor under the k-th best score).

    The terms in ``held`` (all of whose documents are candidates) are added over their postings;
    the others are looked up for the candidates left, highest bound first, and after each term a
    candidate whose partial score plus the bounds of the terms still to come is under the floor
    is dropped. Partial scores never exceed full ones, so their k-th best raises the floor."""
    # Many candidates are summed by document index, then gathered (a binary search per posting
    # into 200k candidates cost 2-3x the additions themselves).
    by_index = len(cands) > DENSE_HELD
    sums = work_array("held", q.view.size) if by_index else np.zeros(len(cands), np.float64)
    for index in held:
        term = q.terms[index]
        for _, docs, tf in term.runs:
            if by_index:
                np.add.at(sums, docs, _parts(q, term, docs, tf))
            elif docs is cands:  # one term in one part: the candidates are its postings
                sums += _parts(q, term, docs, tf)
            else:
                np.add.at(sums, np.searchsorted(cands, docs), _parts(q, term, docs, tf))
    partial = np.take(sums, cands) if by_index else sums
    rest = sorted((i for i in range(len(q.terms)) if i not in held), key=lambda i: -bounds[i])
    for step in range(len(rest) + 1):
        if len(partial) >= k:
            theta = max(theta, float(np.partition(partial, len(partial) - k)[len(partial) - k]) * (1 - SAFETY))
        left = sum(bounds[i] for i in rest[step:])
        keep = partial + left >= theta * (1 - SAFETY)
        cands, partial = cands[keep], partial[keep]
        if step == len(rest):
            break
        term = q.terms[rest[step]]
        for part, docs, tf in term.runs:
            at, looked = _lookup(term, part, docs, tf, cands)
            if len(at):
                np.add.at(partial, at, _parts(q, term, cands[at], looked))
    return cands, theta


def top_k(q: Query, k: int, *, ties: str = "asc") -> tuple[np.ndarray, np.ndarray]:
    """(document ids, scores) of the k best documents, exactly as sorting every score would give."""
    view = q.view
    long_query = len(q.terms) >= LONG_QUERY and (q.postings < LONG_POSTINGS or len(q.terms) >= 2 * LONG_QUERY)
    if q.postings < EXHAUSTIVE_BELOW or len(q.terms) == 1 or long_query:
        hit, scores = score_all(q)
        return _best(view.doc_ids[hit], scores, k, ties)
    bounds = [upper_bound(q, t) for t in q.terms]
    seeds = _seeds(q, bounds, k)
    cands, theta = _prune(q, union(q, seeds), set(seeds), bounds, k, 0.0)
    by_bound = sorted(range(len(q.terms)), key=lambda i: bounds[i])
    essential: list[int] = []
    running = 0.0
    for i in by_bound:
        running += bounds[i]
        if running >= theta * (1 - SAFETY):
            essential.append(i)
    if not set(essential) <= set(seeds):  # else every document that can reach the top holds a seed term
        cands, theta = _prune(q, union(q, essential), set(essential), bounds, k, theta)
    scores = score_docs(q, cands)
    keep = scores > 0
    return _best(view.doc_ids[cands[keep]], scores[keep], k, ties)


def _seeds(q: Query, bounds: list[float], k: int) -> list[int]:
    """The terms whose documents give the first threshold (the k-th best full score among them).

    The highest bound first (it is the likeliest to be the only essential one, which ends the
    search), unless a much rarer one exists; then the next highest while their documents stay
    few. A long query of rare names and common words found a threshold half the final one from
    one name's documents, which left most common words essential (200k candidates at 1M events);
    the few documents of a handful of names give nearly the final threshold."""
    rarest = min(range(len(q.terms)), key=lambda i: q.terms[i].df)
    order = sorted(range(len(q.terms)), key=lambda i: (-bounds[i], q.terms[i].df))
    first = order[0] if q.terms[order[0]].df <= 4 * q.terms[rarest].df else rarest
    seeds, budget = [first], max(SEED_POSTINGS, 8 * k) - q.terms[first].df
    for i in order:
        if i != first and q.terms[i].df <= budget:
            seeds.append(i)
            budget -= q.terms[i].df
    return seeds


def _best(ids: np.ndarray, scores: np.ndarray, k: int, ties: str) -> tuple[np.ndarray, np.ndarray]:
    """The k best (ids, scores), best first, equal scores by id."""
    if len(ids) > k:
        # Keep everything tied with the k-th score before ordering by id.
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth
        ids, scores = ids[keep], scores[keep]
    order = _order(ids, scores, ties)[:k]
    return ids[order], scores[order]
