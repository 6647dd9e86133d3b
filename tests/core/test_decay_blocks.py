"""Decay table, expansion targets and block context."""

from __future__ import annotations

import math

import pytest

from core.decay import decay_weight, decayed_level, normalize_target
from core.errors import BlockNotReadyError, InvalidInputError
from core.models import Block
from core.services.blocks import expand_block, get_block_context, list_blocks, render_block
from core.services.capture import append_turn
from core.services.derive import run_pending
from core.services.spaces import configure_namespace


@pytest.mark.parametrize(
    "age, level", [(0, 5), (1, 5), (2, 4), (3, 3), (4, 3), (5, 2), (6, 2), (7, 1), (8, 1), (9, 0), (20, 0)]
)
def test_decay_table_default_lambda(age, level):
    assert decayed_level(5, age, 0.30) == level


def test_decay_other_lambdas_and_anchor():
    assert decayed_level(5, 4, 0.1) == 4
    assert decayed_level(5, 1, 1.0) == 3
    assert decayed_level(2, 0, 0.3) == 2  # anchored low stays low
    assert decayed_level(3, 9, 0.3) == 0  # clamped at 0
    assert decay_weight(2, 0.3) == pytest.approx(math.exp(-0.6))
    assert decayed_level(5, 100, 0.0) == 5  # lambda 0: nothing decays


@pytest.mark.parametrize(
    "target, current, expected",
    [
        ("raw", 1, 5),
        ("L5", 0, 5),
        (5, 2, 5),
        ("next", 2, 3),
        ("+1", 4, 5),
        (None, 3, 4),
        ("next", 5, 5),
        ("L2", 4, 2),
        ("l2", 4, 2),
        (" RAW ", 0, 5),
        ("3", 0, 3),
        (0, 3, 0),
    ],
)
def test_expand_targets(target, current, expected):
    assert normalize_target(target, current) == expected


@pytest.mark.parametrize("target", [2.6, -4, 9, True, "bogus", "", "L9", "L-1", "-3", "7", "inf", "1e400", [1]])
def test_an_unknown_expand_target_is_an_error_not_a_guess(target):
    # It used to be read as "next" (or rounded and clamped), and the expansion was saved.
    with pytest.raises(InvalidInputError, match="expansion target must be next, 0..5, L0..L5 or raw"):
        normalize_target(target, 2)


def _ready_blocks(ns: str, thread: str, count: int, size: int = 1) -> list[int]:
    configure_namespace(ns, block_turn_size=size)
    for i in range(count * size):
        append_turn(ns, thread, f"We decided to ship feature {i} on Monday.", f"Noted: feature {i} ships Monday.")
    run_pending(ns)
    return [b.id for b in Block.select().order_by(Block.sequence)]


def test_blocks_age_only_with_newer_ready_blocks_of_their_thread(store):
    _ready_blocks("ns", "t", 4)
    levels = [b.current_level for b in list_blocks("ns")]
    assert levels == [3, 4, 5, 5]  # ages 3, 2, 1, 0
    # A pending block and open-tail turns in the same thread age nothing.
    configure_namespace("ns", block_turn_size=1)
    append_turn("ns", "t", "another decision about release dates", "ok")
    append_turn("ns", "t", "tail turn", "tail reply")
    assert [b.current_level for b in list_blocks("ns")][:4] == [3, 4, 5, 5]
    # Ready blocks of another thread do not age this thread either.
    for i in range(3):
        append_turn("ns", "other", f"Other thread plan number {i} for Friday.", "fine")
    run_pending("ns")
    # Thread t now has six ready blocks (the two pending ones were derived too); the
    # three ready blocks of "other" must not count toward t's ages.
    assert [b.current_level for b in list_blocks("ns", "t")] == [2, 3, 3, 4, 5, 5]
    assert [b.current_level for b in list_blocks("ns", "other")] == [4, 5, 5]


def test_expand_block_reanchors_and_records_the_lift(store):
    ids = _ready_blocks("ns", "t", 6)
    first = ids[0]
    assert render_block(first).level == 2  # age 5
    view = expand_block(first, "next", by="user")
    assert view.level == 3
    row = next(b for b in list_blocks("ns") if b.id == first)
    assert row.current_level == 3 and row.last_lifted_by == "user" and row.last_lifted_at
    assert expand_block(first, "raw").level == 5
    assert "user" in expand_block(first, "L5").content.lower()
    lifted_at = Block.get_by_id(first).last_lifted_at
    with pytest.raises(InvalidInputError, match="expanding only lifts it"):
        expand_block(first, 3)  # a shallower target would re-anchor the decay lower: refused, nothing saved
    assert Block.get_by_id(first).last_lifted_at == lifted_at and render_block(first).level == 5
    assert render_block(first, "L3").level == 3  # reading it shallower is rendering, not expanding
    # After one more ready block, the lifted block decays again from its new anchor.
    append_turn("ns", "t", "A later decision about pricing.", "ok")
    run_pending("ns")
    assert next(b for b in list_blocks("ns") if b.id == first).current_level == 5  # age 1
    append_turn("ns", "t", "Yet another decision about hiring.", "ok")
    run_pending("ns")
    assert next(b for b in list_blocks("ns") if b.id == first).current_level == 4  # age 2


def test_pending_blocks_cannot_be_expanded_and_are_not_in_context(store):
    configure_namespace("ns", block_turn_size=1)
    append_turn("ns", "t", "We chose Postgres for the team server.", "Good choice.")
    block_id = Block.get().id
    with pytest.raises(BlockNotReadyError):
        expand_block(block_id, "next")
    assert get_block_context("ns", "t") == []
    assert render_block(block_id).level == 5  # raw is always readable
    with pytest.raises(BlockNotReadyError):
        render_block(block_id, 1)
    run_pending("ns")
    context = get_block_context("ns", "t")
    assert [c.id for c in context] == [block_id] and context[0].level == 5


def test_rendered_levels_shrink(store):
    ids = _ready_blocks("ns", "t", 1, size=4)
    sizes = [len(render_block(ids[0], level).content) for level in range(6)]
    assert sizes[0] < sizes[5] and sizes[3] <= sizes[4] <= sizes[5]
    assert render_block(ids[0], 0).content.splitlines()[1].startswith("Tags:")


def test_next_skips_a_level_that_would_show_nothing_new(store):
    # A chat with no filler and no repeated paste has L3 equal to L4: "next" from L3 goes to L5.
    ids = _ready_blocks("ns", "t", 4)
    first = ids[0]
    block = Block.get_by_id(first)
    assert block.l3_text == block.l4_text
    assert render_block(first).level == 3 and render_block(first).same_as == 4
    assert expand_block(first, "next").level == 5
    # An explicit target is taken as given.
    second = ids[1]
    assert render_block(second).level == 4 and expand_block(second, "L4").level == 4


def test_a_block_that_folds_fillers_away_keeps_its_l3(store):
    configure_namespace("ns", block_turn_size=1)
    for i in range(4):
        append_turn("ns", "t", f"Thanks!\nWe decided to ship feature {i} on Monday.", f"Noted: feature {i} ships.")
    run_pending("ns")
    first = Block.select().order_by(Block.sequence).first()
    assert first.l3_text != first.l4_text
    assert render_block(first.id).same_as is None
    assert expand_block(first.id, "next").level == 4
