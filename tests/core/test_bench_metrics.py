"""core.bench.metrics: every expected value here is worked out by hand in the comments."""

from __future__ import annotations

import math

import pytest

from core.bench.metrics import (
    aggregate,
    dedupe_keep_order,
    ndcg_any_at_k,
    percentile,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
)


def test_dedupe_keeps_first_occurrences_in_order():
    assert dedupe_keep_order(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert dedupe_keep_order([]) == []
    assert dedupe_keep_order(x for x in (3, 3, 1)) == [3, 1]


@pytest.mark.parametrize("k, expected", [(1, 0.5), (2, 0.5), (3, 1.0), (10, 1.0)])
def test_recall_at_k(k, expected):
    # gold {a, b}; a at rank 1, b at rank 3; k beyond the list's length sees the whole list.
    assert recall_at_k({"a", "b"}, ["a", "c", "b"], k) == expected


def test_recall_counts_a_duplicate_once_and_it_takes_no_slot():
    # distinct ranking is [a, b, c]: top-2 holds both gold ids although the raw list repeats a.
    assert recall_at_k(["a", "b"], ["a", "a", "b", "c"], 2) == 1.0
    # gold given with a repeat is still two ids, not three.
    assert recall_at_k(["a", "b", "a"], ["a"], 5) == 0.5


def test_recall_of_empty_lists():
    assert recall_at_k({"a"}, [], 5) == 0.0
    assert recall_all_at_k({"a"}, [], 5) == 0.0
    assert recall_any_at_k({"a"}, [], 5) == 0.0
    assert ndcg_any_at_k({"a"}, [], 5) == 0.0
    # no gold: nothing to find, scored 0 rather than dividing by zero
    assert recall_at_k(set(), ["a"], 1) == 0.0
    assert recall_all_at_k(set(), ["a"], 1) == 0.0


def test_k_must_be_positive():
    with pytest.raises(ValueError):
        recall_at_k({"a"}, ["a"], 0)


@pytest.mark.parametrize("k, all_, any_", [(1, 0.0, 0.0), (2, 0.0, 1.0), (3, 0.0, 1.0), (4, 1.0, 1.0), (50, 1.0, 1.0)])
def test_recall_all_and_any(k, all_, any_):
    ranked = ["x", "a", "x", "y", "b"]  # distinct: x, a, y, b
    assert recall_all_at_k({"a", "b"}, ranked, k) == all_
    assert recall_any_at_k({"a", "b"}, ranked, k) == any_


def test_ndcg_any_hand_values():
    log2_3 = math.log2(3)
    # gold {a, b}, ranking c, a, b at k=3: DCG = 0 + 1/log2(2) + 1/log2(3); ideal (2 items) = 1 + 1
    assert ndcg_any_at_k({"a", "b"}, ["c", "a", "b"], 3) == pytest.approx((1 + 1 / log2_3) / 2)
    # at k=1 the only slot is a miss
    assert ndcg_any_at_k({"a", "b"}, ["c", "a", "b"], 1) == 0.0
    # one gold id at rank 3: 1/log2(3) over an ideal of 1
    assert ndcg_any_at_k({"a"}, ["b", "c", "a"], 3) == pytest.approx(1 / log2_3)
    # three gold ids, one found at rank 1, k=5: ideal = 1 + 1 + 1/log2(3)
    assert ndcg_any_at_k({"a", "b", "c"}, ["a"], 5) == pytest.approx(1 / (2 + 1 / log2_3))
    # ideal is bounded by k: two gold ids, k=1, hit at rank 1 is perfect
    assert ndcg_any_at_k({"a", "b"}, ["b", "a"], 1) == 1.0
    # a perfect ranking scores 1 at every k; duplicates do not count twice
    assert ndcg_any_at_k({"a", "b"}, ["a", "b", "c"], 10) == 1.0
    assert ndcg_any_at_k({"a", "b"}, ["a", "a", "a", "b"], 2) == 1.0


def test_percentile_interpolates_linearly():
    values = [4, 1, 3, 2]  # sorted 1 2 3 4
    assert percentile(values, 50) == 2.5  # position 1.5
    assert percentile(values, 95) == pytest.approx(3.85)  # position 2.85: 3 + 0.85
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile([7.0], 95) == 7.0
    assert percentile([5, 5, 5, 9], 50) == 5.0  # ties: position 1.5 between two 5s
    assert percentile([], 50) == 0.0
    with pytest.raises(ValueError):
        percentile([1], 101)


def test_aggregate_overall_and_groups():
    rows = [
        {"category": "x", 1: 1.0, 5: 1.0},
        {"category": "y", 1: 0.0, 5: 1.0},
        {"category": "x", 1: 0.0, 5: 0.5},
    ]
    out = aggregate(rows, [1, 5], "category")
    assert list(out) == ["overall", "x", "y"]
    assert out["overall"] == {"1": 0.3333, "5": 0.8333}
    assert out["x"] == {"1": 0.5, "5": 0.75}
    assert out["y"] == {"1": 0.0, "5": 1.0}
    assert aggregate(rows, [1], "category", digits=None)["overall"]["1"] == pytest.approx(1 / 3)


def test_aggregate_fixed_groups_keep_their_keys_when_empty():
    rows = [{"t": "x", 1: 1.0}]
    out = aggregate(rows, [1], "t", groups=["y", "z"])
    assert list(out) == ["overall", "y", "z", "x"]
    assert out["y"] == {"1": None}
    assert out["x"] == {"1": 1.0}
    assert aggregate([], [1, 3], "t") == {"overall": {"1": None, "3": None}}
