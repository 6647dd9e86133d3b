"""Capture: turns, sealing boundaries, thread isolation, receipts."""

from __future__ import annotations

import pytest

from core.db import db
from core.errors import InvalidInputError, ReceiptConflictError
from core.models import Block, IngestionReceipt, Job, Message
from core.services.capture import append_messages, append_turn, thread_messages
from core.services.spaces import configure_namespace, namespace_info
from core.services.stats import stats
from core.api import open_store


def _turns(ns: str, thread: str, count: int, start: int = 1, **kw) -> list:
    return [
        append_turn(
            ns,
            thread,
            f"user says {i}",
            f"assistant answers {i}",
            created_at=f"2026-01-0{1 + i % 9}T10:00:00+02:00",
            **kw,
        )
        for i in range(start, start + count)
    ]


def test_nineteen_turns_of_six_seal_three_blocks_and_leave_one_open(store):
    configure_namespace("ns", block_turn_size=6)
    results = [append_turn("ns", "t", f"u{i}", f"a{i}", receipt_id=f"r{i}") for i in range(1, 20)]
    blocks = list(Block.select().order_by(Block.sequence))
    assert [(b.start_turn, b.end_turn, b.message_count) for b in blocks] == [(1, 6, 12), (7, 12, 12), (13, 18, 12)]
    assert all(b.status == "pending" for b in blocks)
    tail = thread_messages("ns", "t", open_tail_only=True)
    assert [m.content for m in tail] == ["u19", "a19"]
    assert IngestionReceipt.select().count() == 19
    assert sum(len(r.sealed_block_ids) for r in results) == 3
    assert Job.select().where(Job.kind == "summary", Job.status == "pending").count() == 3


def test_block_keeps_trailing_non_user_messages_until_next_user(store):
    configure_namespace("ns", block_turn_size=2)
    append_messages(
        "ns",
        "t",
        [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "calling a tool"},
            {"role": "tool", "content": '{"ok": true}'},
        ],
    )
    # Two user turns but the last one may still get messages: not sealed yet.
    assert Block.select().count() == 0
    append_messages("ns", "t", [{"role": "assistant", "content": "done"}, {"role": "user", "content": "q3"}])
    block = Block.get()
    members = [m.content for m in Message.select().where(Message.block == block).order_by(Message.position)]
    assert members == ["q1", "a1", "q2", "calling a tool", '{"ok": true}', "done"]
    assert [m.content for m in thread_messages("ns", "t", open_tail_only=True)] == ["q3"]


def test_close_turn_seals_a_full_tail_immediately(store):
    configure_namespace("ns", block_turn_size=2)
    append_messages(
        "ns",
        "t",
        [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "a2"},
        ],
        close_turn=True,
    )
    assert Block.select().count() == 1
    assert thread_messages("ns", "t", open_tail_only=True) == []


def test_messages_before_first_user_belong_to_first_block(store):
    configure_namespace("ns", block_turn_size=1)
    append_messages(
        "ns",
        "t",
        [
            {"role": "system", "content": "be kind"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
        ],
        close_turn=True,
    )
    block = Block.get()
    assert (block.start_turn, block.end_turn, block.message_count) == (1, 1, 3)


def test_threads_are_isolated(store):
    configure_namespace("ns", block_turn_size=3)
    _turns("ns", "a", 2)
    _turns("ns", "b", 2)
    assert Block.select().count() == 0  # neither thread has three turns
    _turns("ns", "a", 1, start=3)
    blocks = list(Block.select())
    assert len(blocks) == 1 and blocks[0].thread.name == "a"
    assert blocks[0].start_turn == 1 and blocks[0].end_turn == 3
    assert len(thread_messages("ns", "b", open_tail_only=True)) == 4
    _turns("ns", "b", 1, start=3)
    b_block = Block.select().where(Block.sequence == 2).get()
    assert b_block.thread.name == "b" and (b_block.start_turn, b_block.end_turn) == (1, 3)


def test_namespaces_are_isolated(store):
    configure_namespace("one", block_turn_size=1)
    configure_namespace("two", block_turn_size=1)
    append_turn("one", "t", "u", "a")
    append_turn("two", "t", "u", "a")
    assert stats("one").messages == 2 and stats("two").messages == 2
    sequences = sorted((b.namespace.name, b.sequence) for b in Block.select())
    assert sequences == [("one", 1), ("two", 1)]


def test_changing_turn_size_only_affects_future_blocks(store):
    configure_namespace("ns", block_turn_size=2)
    _turns("ns", "t", 2)
    configure_namespace("ns", block_turn_size=3)
    _turns("ns", "t", 3, start=3)
    sizes = [(b.start_turn, b.end_turn) for b in Block.select().order_by(Block.sequence)]
    assert sizes == [(1, 2), (3, 5)]


def test_created_at_keeps_the_source_offset(store):
    append_turn("ns", "t", "u", "a", created_at="2026-03-01T08:30:00-05:00")
    append_messages("ns", "t", [{"role": "user", "content": "naive", "created_at": "2026-03-02T09:00:00"}])
    stamps = [m.created_at for m in thread_messages("ns", "t")]
    assert stamps == ["2026-03-01T08:30:00-05:00", "2026-03-01T08:30:00-05:00", "2026-03-02T09:00:00+00:00"]


def test_turn_without_created_at_gets_an_aware_now(store):
    append_turn("ns", "t", "u", "a")
    stamp = thread_messages("ns", "t")[0].created_at
    assert stamp[-6] in "+-" and stamp[-3] == ":"


def test_receipt_replay_is_a_noop_and_changed_payload_conflicts(store):
    first = append_turn("ns", "t", "u", "a", created_at="2026-01-01T00:00:00+00:00", receipt_id="r1")
    again = append_turn("ns", "t", "u", "a", created_at="2026-01-01T00:00:00+00:00", receipt_id="r1")
    assert again.duplicate and again.message_ids == first.message_ids
    assert Message.select().count() == 2
    with pytest.raises(ReceiptConflictError):
        append_turn("ns", "t", "u changed", "a", created_at="2026-01-01T00:00:00+00:00", receipt_id="r1")
    assert Message.select().count() == 2


def test_receipts_survive_a_restart(db_url, store):
    append_turn("ns", "t", "u", "a", created_at="2026-01-01T00:00:00+00:00", receipt_id="dsh:s:turn:1")
    db.close()
    open_store(db_url)
    replay = append_turn("ns", "t", "u", "a", created_at="2026-01-01T00:00:00+00:00", receipt_id="dsh:s:turn:1")
    assert replay.duplicate
    with pytest.raises(ReceiptConflictError):
        append_turn("ns", "t", "other", "a", created_at="2026-01-01T00:00:00+00:00", receipt_id="dsh:s:turn:1")
    assert Message.select().count() == 2
    assert namespace_info("ns").current_turn == 1


def test_open_tail_survives_restart_and_seals_at_the_same_boundary(db_url, store):
    configure_namespace("ns", block_turn_size=3)
    _turns("ns", "t", 2)
    db.close()
    open_store(db_url)
    _turns("ns", "t", 1, start=3)
    block = Block.get()
    assert (block.start_turn, block.end_turn, block.message_count) == (1, 3, 6)


@pytest.mark.parametrize(
    "message, fragment",
    [
        ({"role": "robot", "content": "x"}, "role"),
        ({"role": "user", "content": 5}, "content"),
        ({"role": "user", "content": "   "}, "no content"),
        ({"role": "user", "content": "x", "created_at": "yesterday-ish"}, "created_at"),
        ({"role": "user", "content": "x", "tool_calls": "nope"}, "tool_calls"),
        ({"role": "user", "content": "x", "tool_calls": [{"arguments": {}}]}, "tool_calls[0].name"),
    ],
)
def test_bad_messages_are_refused_and_nothing_is_written(store, message, fragment):
    append_turn("ns", "t", "keep", "me")
    with pytest.raises(InvalidInputError) as err:
        append_messages("ns", "t", [{"role": "user", "content": "fine"}, message])
    assert fragment in str(err.value)
    assert Message.select().count() == 2


def test_tool_calls_are_stored_and_returned(store):
    append_messages(
        "ns",
        "t",
        [
            {"role": "user", "content": "check the build"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"name": "ci_status", "arguments": {"branch": "main"}, "result": {"ok": True}}],
            },
        ],
    )
    msg = thread_messages("ns", "t")[1]
    assert msg.tool_calls[0].name == "ci_status"
    assert msg.tool_calls[0].arguments == {"branch": "main"} and msg.tool_calls[0].result == {"ok": True}


def test_sealed_block_layers_respect_token_order(store):
    configure_namespace("ns", block_turn_size=2)
    paste = "def build():\n    return compile_everything(now=True)  # long enough to be a paste candidate here"
    append_messages(
        "ns",
        "t",
        [
            {"role": "user", "content": f"look:\n\n{paste}"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": f"again:\n\n{paste}"},
            {"role": "assistant", "content": "Thanks! The fix is in."},
        ],
        close_turn=True,
    )
    block = Block.get()
    assert block.tokens_l3 <= block.tokens_l4 <= block.tokens_l5
    assert "[repeated paste omitted" in block.l3_text


def test_close_thread_seals_a_short_finished_tail(store):
    from core.services.capture import close_thread

    configure_namespace("ns", block_turn_size=12)
    _turns("ns", "t", 3)
    assert Block.select().count() == 0
    (block_id,) = close_thread("ns", "t")
    block = Block.get_by_id(block_id)
    assert (block.start_turn, block.end_turn, block.message_count) == (1, 3, 6)
    assert close_thread("ns", "t") == () and close_thread("ns", "missing") == ()
    _turns("ns", "t", 1, start=4)
    assert thread_messages("ns", "t", open_tail_only=True)[0].turn == 4  # numbering continues


def test_closing_a_tail_of_only_trailing_replies_keeps_turn_numbers(store):
    from core.services.capture import close_thread

    configure_namespace("ns", block_turn_size=1)
    append_turn("ns", "t", "q1", "a1")
    append_messages("ns", "t", [{"role": "assistant", "content": "one more thought on q1"}])
    (block_id,) = close_thread("ns", "t")
    block = Block.get_by_id(block_id)
    assert (block.start_turn, block.end_turn, block.message_count) == (1, 1, 1)
    append_turn("ns", "t", "q2", "a2")
    latest = Block.select().order_by(Block.sequence.desc()).first()
    assert (latest.start_turn, latest.end_turn) == (2, 2)


def test_a_late_reply_after_a_sealed_turn_does_not_shift_turn_ranges(store):
    configure_namespace("ns", block_turn_size=1)
    append_turn("ns", "t", "q1", "a1")  # sealed at once: turn 1
    append_messages("ns", "t", [{"role": "tool", "content": '{"ok": true}'}])  # arrives late
    append_turn("ns", "t", "q2", "a2")
    ranges = [(b.start_turn, b.end_turn, b.message_count) for b in Block.select().order_by(Block.sequence)]
    assert ranges == [(1, 1, 2), (2, 2, 3)]


def test_a_turn_replayed_later_without_a_time_is_the_same_receipt(store):
    import time as _time

    first = append_turn("ns", "t", "Let's ship on Friday.", "Noted: release on Friday.", receipt_id="s:turn:7")
    _time.sleep(0.01)  # the clock moved: an omitted time is no part of the receipt's identity
    again = append_turn("ns", "t", "Let's ship on Friday.", "Noted: release on Friday.", receipt_id="s:turn:7")
    assert again.duplicate and again.message_ids == first.message_ids
    with pytest.raises(ReceiptConflictError):
        append_turn("ns", "t", "Let's ship on Monday.", "Noted.", receipt_id="s:turn:7")


def test_a_receipt_stored_with_its_time_in_the_hash_still_replays(store):
    from core.models import IngestionReceipt, Message
    from core.dto import MessageIn
    from core.services.capture import payload_hash

    done = append_turn("ns", "t", "Let's ship on Friday.", "Noted.", receipt_id="old:1")
    # As receipts were written when an omitted time was stamped before hashing.
    stamped = [
        MessageIn(role=m.role, content=m.content, created_at=m.created_at)
        for m in Message.select().where(Message.id.in_(done.message_ids)).order_by(Message.id)
    ]
    IngestionReceipt.update(payload_hash=payload_hash("t", stamped)).execute()
    assert append_turn("ns", "t", "Let's ship on Friday.", "Noted.", receipt_id="old:1").duplicate
