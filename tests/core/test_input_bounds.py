"""Ids, limits and positions from callers, checked before they reach SQL: an integer past 64 bits
cannot even be bound as a parameter (OverflowError), and a limit of 0 or -1 meant different things
in different services."""

from __future__ import annotations

import pytest

from core.db import MAX_ROW_ID, clamp, is_row_id
from core.errors import NotFoundError

HUGE = 10**20  # what a mistyped id looks like: past 2**63 - 1


def test_row_ids_are_the_positive_64_bit_integers():
    assert is_row_id(1) and is_row_id(MAX_ROW_ID)
    assert not any(is_row_id(v) for v in (0, -1, MAX_ROW_ID + 1, HUGE, True, 1.0, "1", None))
    assert clamp(HUGE, 1, 50, 6) == 50 and clamp(-3, 1, 50, 6) == 1 and clamp("7", 1, 50, 6) == 6


def _lookups():
    from core.services import gate, import_batches, import_choices, import_commit, import_undo
    from core.services.blocks import expand_block, get_block, render_block
    from core.services.events import forget_event, get_event, restore_event
    from core.services.graph import node_view
    from core.services.jobs import get_job, retry
    from core.services.trace_view import get_trace

    return {
        "block": [get_block, render_block, lambda i: expand_block(i, "next")],
        "event": [get_event, forget_event, restore_event],
        "graph node": [node_view],
        "job": [get_job, retry],
        "trace": [get_trace],
        "import batch": [
            import_batches.get_batch,
            import_undo.undo_batch,
            import_commit.commit_batch,
            lambda i: import_choices.decide(i, 1, "add"),
        ],
        "retrieval batch": [gate.get_batch],
    }


@pytest.mark.parametrize("value", [HUGE, MAX_ROW_ID + 1, 0, -5])
def test_an_id_out_of_range_does_not_exist(demo, value):
    for what, calls in _lookups().items():
        for call in calls:
            with pytest.raises(NotFoundError, match=f"{what} {value} does not exist"):
                call(value)


def test_import_item_positions_past_64_bits_do_not_exist(demo):
    from core.services.import_batches import get_batch
    from core.services.import_choices import decide
    from core.services.import_preview import preview_import

    batch = preview_import("demo", "Maya likes green tea.", format="text").batch
    assert get_batch(batch.id).batch.id == batch.id
    with pytest.raises(NotFoundError, match=f"has no item {HUGE}"):
        decide(batch.id, HUGE, "add")


def test_pages_past_64_bits_are_empty_or_everything(demo):
    """A position past every stored one: nothing comes after it, everything before it."""
    from core.services.blocks import block_counts, get_block_context, list_blocks
    from core.services.events import list_events
    from core.services.traces import list_traces

    assert list_blocks("demo", after_sequence=HUGE) == []
    ready = block_counts("demo")["ready"]
    assert block_counts("demo", before=HUGE)["ready"] == ready
    assert len(get_block_context("demo", before=HUGE)) == ready
    assert list_events("demo", offset=HUGE) == []
    list_traces("demo", before_id=HUGE)
    with pytest.raises(NotFoundError, match=f"event {HUGE} does not exist"):
        list_events("demo", after_event=HUGE)


def test_limits_are_held_in_range_the_same_way_everywhere(demo):
    """Every listing holds its limit within 1..its cap: 0 and negatives are one row, not "all"
    (jobs, blocks), nothing (jobs) or an error; a huge one is the cap, not an OverflowError."""
    from core.services.blocks import list_blocks
    from core.services.events import list_events
    from core.services.graph import list_nodes
    from core.services.import_batches import list_batches
    from core.services.import_preview import preview_import
    from core.services.jobs import list_jobs
    from core.services.traces import list_traces

    preview_import("demo", "Maya likes green tea.", format="text")
    listings = {
        "events": lambda n: list_events("demo", limit=n),
        "jobs": lambda n: list_jobs("demo", limit=n),
        "graph": lambda n: list_nodes("demo", limit=n),
        "blocks": lambda n: list_blocks("demo", limit=n),
        "imports": lambda n: list_batches("demo", limit=n),
        "traces": lambda n: list_traces(limit=n),
    }
    from core.agent_tools import MemoryTools

    MemoryTools("demo").call("search_events", {"query": "Maya"})  # a trace to list
    for name, listing in listings.items():
        everything = len(listing(HUGE))
        assert everything >= 1, name
        for small in (1, -1, -3):
            assert len(listing(small)) == 1, (name, small)
        if name != "blocks":  # blocks: 0 (or None) is every block, as `strata blocks --limit 0` says
            assert len(listing(0)) == 1, name
    assert len(list_blocks("demo", limit=0)) == len(list_blocks("demo", limit=None)) > 1
    assert len(list_events("demo", offset=-1)) == len(list_events("demo"))
