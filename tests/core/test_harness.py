"""The harness path: the adapter around an agent loop, the capture / close / context tools, and the
docs' example loop driven end to end with a scripted model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from core.agent_tools import MemoryTools
from core.api import Harness
from core.models import Message
from core.services.derive import run_pending
from core.services.ledger import list_ledger
from core.services.spaces import configure_namespace

NS = "proj"
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "harness_loop.py"


def _example():
    spec = importlib.util.spec_from_file_location("harness_loop", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_turns_are_captured_and_a_replay_stores_nothing(store):
    harness = Harness(NS, session="s1")
    first = harness.after_turn("We ship Atlas on March 17.", "Noted: March 17.", receipt_id="s1:turn:0")
    again = harness.after_turn("We ship Atlas on March 17.", "Noted: March 17.", receipt_id="s1:turn:0")
    assert again.duplicate and again.message_ids == first.message_ids
    assert Message.select().count() == 2


def test_context_comes_from_earlier_conversations_not_the_current_one(store):
    configure_namespace(NS, block_turn_size=1)
    earlier = Harness(NS, session="monday")
    earlier.after_turn("The Atlas launch moved to March 17.", "Noted, March 17.", receipt_id="m:0")
    earlier.end_session()
    run_pending(NS)
    now = Harness(NS, session="tuesday")
    assert Harness("nobody-yet", session="x").before_model_call([{"role": "user", "content": "hi"}]).text == ""
    ctx = now.before_model_call([{"role": "user", "content": "When is the Atlas launch?"}])
    assert "March 17" in ctx.text and ctx.ledger_id is not None
    assert list_ledger(NS, kind="context")[0].id == ctx.ledger_id


def test_end_turn_flags_a_batch_left_open(store):
    harness = Harness(NS, session="s1", budget=None)
    harness.after_turn("We ship Atlas on March 17.", "Noted.", receipt_id="s1:turn:0")
    assert harness.end_turn().ok
    found = harness.tools.call("search_raw", {"query": "Atlas ship"})
    check = harness.end_turn()
    assert not check.ok and check.unclosed == (found["batch_id"],) and "record_use" in check.message
    harness.tools.call("record_use", {"batch_id": found["batch_id"], "evidence_refs": []})
    assert harness.end_turn().ok


def test_capture_close_and_context_are_tools_too(store):
    configure_namespace(NS, block_turn_size=4)
    tools = MemoryTools(NS, session="agent-1", budget=None)
    args = {"user": "Our sync moved to Thursdays.", "assistant": "Noted: Thursdays.", "receipt_id": "a1:t0"}
    wrote = tools.call("capture_turn", args)
    assert wrote["message_ids"] and not wrote["duplicate"] and wrote["thread"] == "agent-1"
    assert tools.call("capture_turn", args)["duplicate"] is True
    sealed = tools.call("close_thread", {})
    assert len(sealed["sealed_block_ids"]) == 1  # one turn, fewer than a block of four: sealed on close
    run_pending(NS)
    other = MemoryTools(NS, session="agent-2", budget=None)
    ctx = other.call("get_context", {"question": "When is our sync?", "budget": 400})
    assert "Thursday" in ctx["context"] and ctx["tokens"] <= 400 and ctx["selected"]
    assert all(e["reason"] in ("over_budget", "limit", "out_of_scope") for e in ctx["excluded"])
    assert other.call_safe("capture_turn", {"user": "x"})["error"]["field"] == "assistant"


def test_the_docs_example_loop_runs_with_a_scripted_model(store):
    example = _example()
    configure_namespace(NS, block_turn_size=1)
    harness = Harness(NS, session="example", budget=None)
    history: list = []
    script = iter(
        [
            {"role": "assistant", "content": "Noted: Atlas ships on March 17."},
            # Turn two: the model searches, then answers without closing its batch.
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "function": {"name": "search_raw", "arguments": json.dumps({"query": "Atlas"})}}
                ],
            },
            {"role": "assistant", "content": "Atlas ships on March 17."},
        ]
    )
    seen_prompts: list = []

    def chat(messages, tools):
        seen_prompts.append(messages)
        assert {t["name"] for t in tools} >= {"search_raw", "record_use"}
        return next(script)

    answer = example.run_turn(harness, history, "Atlas ships on March 17.", chat, turn=0)
    assert answer.startswith("Noted")
    run_pending(NS)
    answer = example.run_turn(harness, history, "When does Atlas ship?", chat, turn=1)
    assert answer == "Atlas ships on March 17." and len(history) == 4
    stored = [m.content for m in Message.select().order_by(Message.id)]
    assert stored[-2:] == ["When does Atlas ship?", "Atlas ships on March 17."]
    assert harness.end_turn().unclosed  # the scripted model never closed its batch: flagged
    assert "March 17" in seen_prompts[1][0]["content"]  # turn two was given turn one's memory first
    replay = harness.after_turn(
        "Atlas ships on March 17.", "Noted: Atlas ships on March 17.", receipt_id="example:turn:0"
    )
    assert replay.duplicate


def test_the_first_captured_turn_creates_the_namespace_over_the_tools(store):
    tools = MemoryTools("fresh-project", session="agent-1", budget=None)
    assert tools.call_safe("search_raw", {"query": "anything"})["error"]["code"] == "not_found"
    assert tools.call("capture_turn", {"user": "Hello there.", "assistant": "Hi!"})["message_ids"]
    assert "error" not in tools.call_safe("search_raw", {"query": "hello"})


def test_notes_are_a_channel_of_the_context_and_quarantined_ones_are_not(store):
    from core.services.notes import write_note

    configure_namespace(NS, block_turn_size=1)
    Harness(NS, session="s0").after_turn("Hello.", "Hi.", receipt_id="s0:0")
    kept = write_note(
        NS,
        title="Deploy runbook for Atlas",
        summary="Blue-green deploy; roll back with the flag.",
        keywords=["deploy", "atlas"],
        content="Steps …",
        source="user",
    )
    guess = write_note(
        NS,
        title="Atlas deploy shortcut",
        summary="Skip the canary on Fridays.",
        keywords=["deploy", "canary"],
        content="…",
        source="agent",
    )
    assert guess.status == "quarantined"
    ctx = Harness(NS, session="s1").before_model_call([{"role": "user", "content": "How do we deploy Atlas?"}])
    assert kept.id in ctx.note_ids and guess.id not in ctx.note_ids
    assert "Blue-green deploy" in ctx.text and "Skip the canary" not in ctx.text
    assert f"note:{kept.id}" in list_ledger(NS, kind="context")[0].selected
