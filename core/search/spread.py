"""Spread scores: a message scored together with its neighbouring turns (default retrieval's raw channel).

A target's spread score is its own BM25 score plus its thread neighbours' at lower weights
(the messages −1, +1, −2, +2 positions away). The reference loops over every scored message,
adding its score to itself and a share to each neighbour.

Here every document's own score sits in one dense array and the spread is one convolution
over it: a thread's turns mostly occupy consecutive rows, so only the few rows where that is
not so (thread boundaries, interleaved sessions) are summed again from their real neighbours.
The best ``limit`` are then found without sorting a million sums: the maxima of a few thousand
row blocks are real scores of distinct targets, so the ``limit``-th best of them is a floor
for the final cut, and only targets at or above that floor are returned. The sums are float32
(half the memory traffic of float64 on every pass), within SUM_SLACK of the reference's; the
caller sums the targets near its cut exactly.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from core.search import beside, scoring
from core.search.scoring import Query
from core.search.segment import View

SLOTS = (
    (-1, "neighbour_weight"),
    (1, "neighbour_weight"),
    (-2, "second_neighbour_weight"),
    (2, "second_neighbour_weight"),
)
REACH = 2  # the farthest slot
BLOCKS_PER_PICK = 4  # row blocks per target wanted when finding the floor of the cut
SPLIT_ROWS = 200_000  # documents from which half the spread is summed on the helper thread
# Relative slack under a cut: the spread sums are float32, each within ~1e-6 of the exact sum (a
# few float32 roundings of positive parts), so everything that close to a cut is kept and summed
# exactly. Near-ties are few; float32 halves the memory every pass over a million rows reads.
SUM_SLACK = 1e-5


@dataclass
class Own:
    """Own BM25 score of every document by index, with one trailing 0.0 that stands for "none"
    (float32: within SUM_SLACK of the reference's; ``exact`` scores the few it needs again)."""

    query: Query
    dense: np.ndarray

    def found(self, wanted: np.ndarray) -> np.ndarray:
        """Mask of ``wanted`` (indexes, -1 for none) that hold a query term."""
        return self.dense[np.where(wanted >= 0, wanted, len(self.dense) - 1)] > 0


def _weights(params) -> list[tuple[int, float]]:
    """(offset from source to target, weight) of the neighbour slots in use, in the reference's order."""
    return [(offset, getattr(params, name)) for offset, name in SLOTS if getattr(params, name)]


@dataclass
class Piece:
    """Spread sums of the rows ``lo``… (``sums``), and the maxima of the row blocks that start in them
    (``starts``, relative to ``lo``; the first block may have begun in the previous piece)."""

    lo: int
    sums: np.ndarray
    starts: np.ndarray | None = None
    maxima: np.ndarray | None = None

    def find_maxima(self, starts: np.ndarray) -> None:
        """The maxima of the blocks that start at ``starts`` (rows of every piece)."""
        inside = starts[(starts >= self.lo) & (starts < self.lo + len(self.sums))] - self.lo
        if not len(inside) or inside[0]:
            inside = np.concatenate(([0], inside))
        self.starts, self.maxima = inside, np.maximum.reduceat(self.sums, inside)

    def block_of(self, row: int) -> int:
        return int(np.searchsorted(self.starts, row - self.lo, side="right")) - 1


def spread_scores(view: View, own: np.ndarray, weights: list[tuple[int, float]], limit: int = 0) -> list[Piece]:
    """Every target's spread sum, its own score plus ``weight x`` its source's per slot, in pieces
    of consecutive rows; with ``limit``, each piece also holds the maxima ``cut`` needs.

    One convolution treats every row's neighbours as the rows beside it; the rows where that is
    wrong for some slot (``neighbour_breaks``) are summed again from their real neighbours. A sum
    may differ from the reference's in the last bits (the parts are grouped differently, and summed
    in ``own``'s precision). ``own`` ends with one 0.0 past the documents: a missing neighbour (-1)
    reads it.

    From SPLIT_ROWS documents the later half of the rows is offered to the helper thread (these
    passes over memory let go of the interpreter lock: 2.2 -> 1.6 ms at 1M, alone); when
    the helper is still busy (it scores the events' top k first), this thread takes it back."""
    size = view.size
    if not size:
        return [Piece(0, np.zeros(0, own.dtype))]
    kernel = np.zeros(2 * REACH + 1, own.dtype)
    kernel[REACH] = 1.0
    for offset, weight in weights:
        kernel[REACH + offset] = weight  # target t takes weight x own[t - offset]
    breaks, sources = view.neighbour_breaks(tuple(-offset for offset, _ in weights))
    slot_weights = np.array([weight for _, weight in weights], own.dtype)
    starts = _block_starts(size, limit)
    bounds = [0, size] if size < SPLIT_ROWS else [0, size // 2, size]
    at = np.searchsorted(breaks, bounds)
    work = [
        (
            own,
            kernel,
            slot_weights,
            breaks[at[i] : at[i + 1]],
            sources[:, at[i] : at[i + 1]],
            bounds[i],
            bounds[i + 1],
            size,
            starts,
        )
        for i in range(len(bounds) - 1)
    ]
    later = beside.submit(_piece, *work[1]) if len(work) > 1 else None
    pieces = [_piece(*work[0])]
    if later is not None:
        pieces.append(_piece(*work[1]) if later.cancel() else later.result())
    return pieces


def _piece(
    own: np.ndarray,
    kernel: np.ndarray,
    slot_weights: np.ndarray,
    breaks: np.ndarray,
    sources: np.ndarray,
    lo: int,
    hi: int,
    size: int,
    starts: np.ndarray | None,
) -> Piece:
    """``spread_scores`` for the rows lo..hi of ``size`` (``breaks`` and ``sources``: the breaks among them)."""
    first, last = max(0, lo - REACH), min(size, hi + REACH)
    # Row r is out[r - first + REACH] of the full convolution of rows first..last; rows beyond the
    # ends read zeros, as they do when every row is convolved at once.
    sums = np.convolve(own[first:last], kernel, mode="full")[lo - first + REACH : hi - first + REACH]
    if len(breaks):
        # One gather of every slot's sources and one product with the weights: the random reads
        # dominate, and one pass over them beats a pass per slot (2.7 -> 2.1 ms over 1M messages
        # with 100k breaks). np.take without ``out``: with it the indexes are checked through a buffer.
        patched = np.take(own, breaks)
        patched += slot_weights @ np.take(own, sources)
        sums[breaks - lo] = patched
    piece = Piece(lo, sums)
    if starts is not None:
        piece.find_maxima(starts)
    return piece


def _block_starts(size: int, limit: int) -> np.ndarray | None:
    """First rows of the row blocks whose maxima give the floor of the cut (None: too few rows)."""
    blocks = limit * BLOCKS_PER_PICK
    if not limit or size < blocks * 2:
        return None
    return np.linspace(0, size, blocks, endpoint=False).astype(np.int64)


def _floor(maxima: np.ndarray, limit: int) -> float:
    """A score at most the ``limit``-th best, from the maxima of row blocks: each is the score of
    a different target."""
    return float(np.partition(maxima, len(maxima) - limit)[len(maxima) - limit])


def spread_all(view: View, q: Query, params) -> tuple[list[Piece], Own]:
    """(every target's spread sum by index in pieces, own scores): what needs no event factors, so
    it can run while they are found; ``cut`` then applies them."""
    own = scoring.dense_scores(q, pad=1, work="spread_own", dtype=np.float32)  # Own reads it until the next call
    return spread_scores(view, own, _weights(params), params.candidate_limit), Own(q, own)


def cut(pieces: list[Piece], factors: dict[int, float], limit: int) -> tuple[np.ndarray, np.ndarray]:
    """(targets by index, spread sum x event factor): every target with a positive score that can
    reach the best ``limit``. ``factors``: document index -> event factor (the pieces are changed);
    the pieces hold block maxima for this ``limit`` or none."""
    los = [piece.lo for piece in pieces]
    for at, factor in factors.items():
        piece = pieces[bisect_right(los, at) - 1]
        piece.sums[at - piece.lo] *= factor
        if piece.maxima is not None:  # a factor raises a score, so its block's maximum may rise too
            block = piece.block_of(at)
            piece.maxima[block] = max(piece.maxima[block], piece.sums[at - piece.lo])
    floor = _floor(np.concatenate([p.maxima for p in pieces]), limit) if pieces[0].maxima is not None else 0.0
    found = []
    for piece in pieces:
        rows = np.flatnonzero(piece.sums >= floor * (1 - SUM_SLACK)) if floor > 0 else np.flatnonzero(piece.sums > 0)
        found.append((rows + piece.lo, piece.sums[rows]))
    if len(found) == 1:
        return found[0]
    return np.concatenate([rows for rows, _ in found]), np.concatenate([sums for _, sums in found])


def _steps(params) -> list[tuple[int, int, float]]:
    """(step, offset from the target to its source, weight) in the reference loop's order."""
    steps = [(0, 0, 1.0)]
    for step, (offset, name) in enumerate(SLOTS, 1):
        if getattr(params, name):
            steps.append((step, -offset, getattr(params, name)))
    return steps


_ABSENT = int(np.iinfo(np.int64).max)


def exact(view: View, targets: np.ndarray, own: Own, params) -> tuple[np.ndarray, np.ndarray]:
    """The reference loop's sums and arrival order for some targets.

    The loop visits scored messages by (first term, id) and adds, per message, to itself and then
    to the messages −1, +1, −2, +2 away; a target's sum takes its parts in that order, and its
    arrival is the first of them. Returns (sums, arrival keys)."""
    size = np.int64(view.size)
    steps = _steps(params)
    keys = np.full((len(targets), len(steps)), _ABSENT, np.int64)
    values = np.zeros((len(targets), len(steps)), np.float64)
    columns = []
    for step, offset, weight in steps:
        source = targets if offset == 0 else view.neighbours_of(offset, targets)
        columns.append((step, weight, source, own.found(source)))
    used = np.unique(np.concatenate([source[found] for _, _, source, found in columns]))
    first = scoring.first_terms_of(own.query, used)
    scores = scoring.score_docs(own.query, used)  # the reference's own scores (the dense ones are float32)
    for column, (step, weight, source, found) in enumerate(columns):
        scored = source[found]
        at = np.searchsorted(used, scored)
        keys[found, column] = (first[at].astype(np.int64) * size + scored) * 5 + step
        values[found, column] = scores[at] if step == 0 else weight * scores[at]
    # Each row's parts in key order, added left to right from 0.0; an absent part is 0.0 and sorts
    # last, and adding 0.0 changes no sum.
    order = np.argsort(keys, axis=1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=1)
    sums = np.zeros(len(targets), np.float64)
    for column in range(ordered.shape[1]):
        sums += ordered[:, column]
    return sums, keys.min(axis=1)
