"""The note tools of the agent tool set: note_write, note_read, note_search, note_replace, note_delete."""

from __future__ import annotations

import pytest

from core.agent_schemas import ToolError, check_arguments
from core.agent_tools import MemoryTools
from core.services.capture import append_turn
from core.services.notes import approve_note
from core.services.policy import Policy, set_policy

NS = "repo"
NOTE = {
    "title": "Connection pool timeouts fixed",
    "summary": "Raised the pool to 50 and added a 5 s acquire timeout.",
    "keywords": ["pool", "timeout", "连接池"],
    "content": "db/pool.py: max_size 50. The load test passes.",
    "related_paths": ["./db/pool.py"],
}


@pytest.fixture
def agent(store):
    append_turn(NS, "chat-1", "The pool keeps timing out.", "Looking into it.")
    return MemoryTools(NS, session="chat-1")


def test_an_agents_note_waits_for_approval_then_is_found_read_and_replaced(agent):
    wrote = agent.call("note_write", NOTE)
    assert wrote["status"] == "quarantined" and "approval" in wrote["note"]
    assert agent.call("note_search", {"keywords": ["pool"]})["total"] == 0
    read = agent.call("note_read", {"id": wrote["id"][:8]})["note"]
    assert read["status"] == "quarantined" and read["actor"] == "chat-1" and read["related_paths"] == ["db/pool.py"]
    approve_note(wrote["id"], actor="maya")
    found = agent.call("note_search", {"keywords": ["连接池"], "mode": "count"})
    assert [r["id"] for r in found["results"]] == [wrote["id"]] and found["results"][0]["score"] == 1.5
    set_policy(NS, Policy(trust=("agent",)))
    newer = agent.call("note_replace", {"id": wrote["id"], "summary": "Pool at 60 now.", "reason": "load grew"})
    assert (newer["status"], newer["replaces"]) == ("active", wrote["id"])
    topic = agent.call(
        "note_write",
        {**NOTE, "title": "Database", "kind": "topic", "content": f"Pool: [[{wrote['id'][:10]}]] (current)."},
    )
    expanded = agent.call("note_read", {"id": topic["id"], "expand": True})
    (link,) = expanded["links"]
    assert (link["state"], link["resolved_id"], link["summary"]) == ("superseded", newer["id"], "Pool at 60 now.")
    assert "links" not in agent.call("note_read", {"id": topic["id"], "expand": "false"})
    gone = agent.call("note_delete", {"id": newer["id"], "reason": "the pool was replaced by pgbouncer"})
    assert gone["status"] == "withdrawn"
    assert [r["id"] for r in agent.call("note_search", {"keywords": ["pool"]})["results"]] == [topic["id"]]


def test_pages_and_a_stale_snapshot(agent):
    set_policy(NS, Policy(trust=("agent",)))
    for i in range(3):
        agent.call("note_write", {**NOTE, "title": f"Pool note {i}", "keywords": ["pool", f"n{i}"]})
    first = agent.call("note_search", {"keywords": ["pool"], "limit": 2})
    assert first["count"] == 2 and first["next_skip"] == 2 and "snapshot" in first["next_step"]
    rest = agent.call("note_search", {"keywords": ["pool"], "limit": 2, "skip": 2, "snapshot": first["snapshot"]})
    assert rest["count"] == 1 and rest["next_skip"] is None
    agent.call("note_write", {**NOTE, "title": "Late", "keywords": ["pool", "late"]})
    error = agent.call_safe("note_search", {"keywords": ["pool"], "skip": 2, "snapshot": first["snapshot"]})["error"]
    assert error["code"] == "invalid_arguments" and "stale" in error["message"]


def test_refusals_say_what_to_fix(agent):
    wrote = agent.call("note_write", NOTE)
    duplicate = agent.call_safe("note_write", {**NOTE, "keywords": ["TIMEOUT", "pool", "连接池"]})["error"]
    assert duplicate["code"] == "duplicate" and duplicate["existing_id"] == wrote["id"]
    few = agent.call_safe("note_write", {**NOTE, "keywords": ["pool", "POOL"]})["error"]
    assert few["code"] == "invalid_arguments" and "keywords" in few["message"]
    marker = agent.call_safe("note_write", {**NOTE, "summary": "ok\nGitMemo-Type: add"})["error"]
    assert "summary" in marker["message"]
    assert agent.call_safe("note_read", {"id": "0" * 12})["error"]["code"] == "not_found"
    assert agent.call_safe("note_read", {"id": wrote["id"], "expand": 3})["error"]["field"] == "expand"
    assert agent.call_safe("note_delete", {"id": wrote["id"]})["error"]["field"] == "reason"
    assert agent.call_safe("note_search", {"keywords": []})["error"]["code"] == "invalid_arguments"
    other = MemoryTools("elsewhere")
    append_turn("elsewhere", "t", "hi", "hello")
    assert other.call_safe("note_read", {"id": wrote["id"]})["error"]["code"] == "not_found"


def test_the_note_tools_are_listed_with_their_schemas():
    names = [s["name"] for s in MemoryTools.schemas()]
    assert {"note_write", "note_read", "note_search", "note_replace", "note_delete"} <= set(names)
    with pytest.raises(ToolError, match="required"):
        check_arguments("note_write", {})
