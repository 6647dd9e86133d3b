"""`strata remember`, `strata review …`, `strata audit`, `strata pin|forget` and `strata policy`."""

from __future__ import annotations

import json

import pytest

from tests.stores import fresh_url
from workbench.cli import main


@pytest.fixture
def db(tmp_path, cli_without_strata_db, capsys):
    url = fresh_url(tmp_path, "gov")
    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        json.dumps(
            {
                "thread": "t1",
                "role": "user",
                "content": "I always book an aisle seat when I fly.",
                "created_at": "2026-11-02T09:00:00+00:00",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    assert main(["ingest", "jsonl", str(chat), "--namespace", "me", "--db", url]) == 0
    capsys.readouterr()
    return url


def run(capsys, db: str, *argv: str, code: int = 0):
    got = main([*argv, "--db", db, "--json"])
    captured = capsys.readouterr()
    assert got == code, captured.out + captured.err
    return json.loads(captured.out) if code == 0 else captured.err


def found(capsys, db: str, query: str) -> bool:
    events = run(capsys, db, "search", "events", query, "--namespace", "me")
    asked = run(capsys, db, "ask", query, "--namespace", "me")
    return "aisle seat on trains" in json.dumps(events) + json.dumps(asked)


def test_remember_review_revoke_and_the_audit_trail(db, capsys):
    wrote = run(
        capsys,
        db,
        "remember",
        "Maya prefers an aisle seat on trains.",
        "--namespace",
        "me",
        "--source",
        "agent",
        "--actor",
        "planner-bot",
    )
    rid = wrote["record"]["id"]
    assert wrote["record"]["status"] == "quarantined"
    assert not found(capsys, db, "aisle seat trains")
    queue = run(capsys, db, "review", "list", "--namespace", "me")
    assert [i["id"] for i in queue] == [f"record:{rid}"]

    err = run(capsys, db, "review", "approve", str(rid), "--actor", "alice", code=2)
    assert "no evidence" in err
    run(
        capsys,
        db,
        "review",
        "approve",
        f"record:{rid}",
        "--actor",
        "alice",
        "--evidence",
        "message:1",
        "--reason",
        "she books aisle seats",
    )
    assert found(capsys, db, "aisle seat trains")
    run(capsys, db, "review", "revoke", str(rid), "--actor", "bob", "--reason", "that was Tomás")
    assert not found(capsys, db, "aisle seat trains")

    trail = run(capsys, db, "audit", "--namespace", "me", "--record", str(rid))
    steps = [(a["action"], a["to_status"], a["actor"], a["reason"]) for a in trail]
    assert steps == [
        ("capture", "quarantined", "planner-bot", None),
        ("verify", "verified", "alice", "she books aisle seats"),
        ("promote", "promoted", "alice", "she books aisle seats"),
        ("revoke", "revoked", "bob", "that was Tomás"),
    ]
    shown = run(capsys, db, "review", "show", str(rid))
    assert shown["record"]["status"] == "revoked" and len(shown["audit"]) == 4


def test_reasons_are_required_where_the_issue_says(db, capsys):
    rid = run(capsys, db, "remember", "Maya is vegan.", "--namespace", "me")["record"]["id"]
    with pytest.raises(SystemExit):
        main(["review", "reject", str(rid), "--db", db])  # --reason is required
    capsys.readouterr()
    err = run(capsys, db, "remember", "Maya is vegan.", "--namespace", "me", code=2)
    assert f"record {rid}" in err


def test_pin_forget_and_restore_an_event_are_audited(db, capsys, monkeypatch):
    monkeypatch.setenv("STRATA_ACTOR", "carol")
    rid = run(capsys, db, "remember", "Maya drinks oat flat whites.", "--namespace", "me")["record"]["id"]
    event_id = run(capsys, db, "review", "approve", str(rid), "--evidence", "message:1")["event_id"]
    assert run(capsys, db, "pin", str(event_id), "--reason", "keep")["pinned"] is True
    assert run(capsys, db, "forget", str(event_id), "--reason", "private")["status"] == "forgotten"
    assert run(capsys, db, "restore", str(event_id))["status"] == "active"
    trail = run(capsys, db, "audit", "--namespace", "me", "--event", str(event_id))
    assert [(a["action"], a["actor"]) for a in trail] == [("pin", "carol"), ("forget", "carol"), ("restore", "carol")]


def test_a_policy_from_yaml_trusts_a_source(db, capsys, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("trust: [user]\n", encoding="utf-8")
    assert run(capsys, db, "policy", "set", str(policy), "--namespace", "me") == {"trust": ["user"]}
    wrote = run(capsys, db, "remember", "I take the 8:12 train.", "--namespace", "me", "--source", "user")
    assert wrote["record"]["status"] == "promoted"
    policy.write_text("trust: [robots]\n", encoding="utf-8")
    err = run(capsys, db, "policy", "set", str(policy), "--namespace", "me", code=2)
    assert "policy.yaml" in err and "robots" in err


def test_the_ledger_lists_context_builds(db, capsys):
    from core.services.context import auto_context

    assert run(capsys, db, "ledger", "--namespace", "me") == []
    auto_context("me", "aisle seat")
    (row,) = run(capsys, db, "ledger", "--namespace", "me", "--kind", "context")
    assert row["kind"] == "context" and row["budget"] == 900 and row["query"] == "aisle seat"


def test_review_decides_a_note_in_the_queue(db, capsys):
    from core.api import open_store
    from core.services.notes import read_note, write_note

    open_store(db)
    note = write_note(
        "me",
        title="Atlas deploy shortcut",
        summary="Skip the canary on Fridays.",
        keywords=["deploy", "canary"],
        content="…",
        source="agent",
    )
    assert [i["id"] for i in run(capsys, db, "review", "list", "--namespace", "me")] == [f"note:{note.id}"]
    run(capsys, db, "review", "reject", f"note:{note.id}", "--reason", "never skip the canary")
    assert read_note(note.id).status == "withdrawn"
    err = run(capsys, db, "review", "revoke", f"note:{note.id}", "--reason", "x", code=2)
    assert "approved or rejected" in err
