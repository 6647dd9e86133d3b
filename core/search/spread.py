"""Spread scores: a message scored together with its neighbouring turns (default retrieval's raw channel).

A target's spread score is its own BM25 score plus its thread neighbours' at lower weights
(the messages −1, +1, −2, +2 positions away). The reference loops over every scored message,
adding its score to itself and a share to each neighbour.

Here every document's own score sits in one dense array and the spread is one convolution
over it: a thread's turns mostly occupy consecutive rows, so only the few rows where that is
not so (thread boundaries, interleaved sessions) are summed again from their real neighbours.
The best ``limit`` are then found without sorting a million sums: the maxima of a few thousand
row blocks are real scores of distinct targets, so the ``limit``-th best of them is a floor
for the final cut, and only targets at or above that floor are returned. The sums may differ
from the reference's in the last bit; the caller sums the targets near its cut exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.search import scoring
from core.search.scoring import Query
from core.search.segment import View

SLOTS = ((-1, "neighbour_weight"), (1, "neighbour_weight"), (-2, "second_neighbour_weight"),
         (2, "second_neighbour_weight"))
REACH = 2  # the farthest slot
BLOCKS_PER_PICK = 4  # row blocks per target wanted when finding the floor of the cut
FLOOR_SLACK = 2e-9  # below the floor kept too: the caller's cut keeps a 1e-9 hair under the k-th


@dataclass
class Own:
    """Own BM25 score of every document by index, with one trailing 0.0 that stands for "none"."""

    query: Query
    dense: np.ndarray

    def found(self, wanted: np.ndarray) -> np.ndarray:
        """Mask of ``wanted`` (indexes, -1 for none) that hold a query term."""
        return self.dense[np.where(wanted >= 0, wanted, len(self.dense) - 1)] > 0


def _weights(params) -> list[tuple[int, float]]:
    """(offset from source to target, weight) of the neighbour slots in use, in the reference's order."""
    return [(offset, getattr(params, name)) for offset, name in SLOTS if getattr(params, name)]


def spread_scores(view: View, own: np.ndarray, weights: list[tuple[int, float]]) -> np.ndarray:
    """Every target's spread sum: its own score plus ``weight x`` its source's per slot.

    One convolution treats every row's neighbours as the rows beside it; the rows where that is
    wrong for some slot (``neighbour_breaks``) are summed again from their real neighbours. A sum
    may differ from the reference's in the last bit (the parts are grouped differently). ``own``
    ends with one 0.0 past the documents: a missing neighbour (-1) reads it."""
    size = view.size
    if not size:
        return np.zeros(0, np.float64)
    kernel = np.zeros(2 * REACH + 1, np.float64)
    kernel[REACH] = 1.0
    for offset, weight in weights:
        kernel[REACH + offset] = weight  # target t takes weight x own[t - offset]
    total = np.convolve(own[:size], kernel, mode="full")[REACH:REACH + size]
    breaks, sources = view.neighbour_breaks(tuple(-offset for offset, _ in weights))
    if not len(breaks):
        return total
    # One gather of every slot's sources and one product with the weights: the random reads
    # dominate, and one pass over them beats a pass per slot (2.7 -> 2.1 ms over 1M messages with
    # 100k breaks). np.take without ``out``: with it the indexes are checked through a buffer.
    patched = np.take(own, breaks)
    patched += np.array([weight for _, weight in weights]) @ np.take(own, sources)
    total[breaks] = patched
    return total


def _floor(sums: np.ndarray, limit: int) -> float:
    """A score at most the ``limit``-th best (0.0 when the blocks are too few to say)."""
    blocks = limit * BLOCKS_PER_PICK
    if len(sums) < blocks * 2:
        return 0.0
    maxima = np.maximum.reduceat(sums, np.linspace(0, len(sums), blocks, endpoint=False).astype(np.int64))
    return float(np.partition(maxima, blocks - limit)[blocks - limit])


def spread_all(view: View, q: Query, params) -> tuple[np.ndarray, Own]:
    """(every target's spread sum by index, own scores): what needs no event factors, so it can run
    while they are found; ``cut`` then applies them."""
    own = scoring.dense_scores(q, pad=1, work="spread_own")  # Own reads it until the next call
    return spread_scores(view, own, _weights(params)), Own(q, own)


def cut(sums: np.ndarray, factors: dict[int, float], limit: int) -> tuple[np.ndarray, np.ndarray]:
    """(targets by index, spread sum x event factor): every target with a positive score that can
    reach the best ``limit``. ``factors``: document index -> event factor (``sums`` is changed)."""
    for at, factor in factors.items():
        sums[at] *= factor
    floor = _floor(sums, limit)
    targets = np.flatnonzero(sums >= floor * (1 - FLOOR_SLACK)) if floor > 0 else np.flatnonzero(sums > 0)
    return targets, sums[targets]


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
    for column, (step, weight, source, found) in enumerate(columns):
        scored = source[found]
        keys[found, column] = (first[np.searchsorted(used, scored)].astype(np.int64) * size + scored) * 5 + step
        values[found, column] = own.dense[scored] if step == 0 else weight * own.dense[scored]
    # Each row's parts in key order, added left to right from 0.0; an absent part is 0.0 and sorts
    # last, and adding 0.0 changes no sum.
    order = np.argsort(keys, axis=1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=1)
    sums = np.zeros(len(targets), np.float64)
    for column in range(ordered.shape[1]):
        sums += ordered[:, column]
    return sums, keys.min(axis=1)
