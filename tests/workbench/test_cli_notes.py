"""`strata note write|read|search|replace|delete|approve|list|history`."""

from __future__ import annotations

import json

import pytest

from tests.stores import fresh_url
from workbench.cli import main


@pytest.fixture
def db(tmp_path, cli_without_strata_db, monkeypatch):
    from workbench.cli import output

    monkeypatch.setenv("STRATA_ACTOR", "maya")
    monkeypatch.setattr(output.console, "_width", 200)  # tables fold their cells at a narrow terminal
    return fresh_url(tmp_path, "notes")


def run(capsys, db: str, *argv: str, code: int = 0, json_out: bool = True):
    got = main([*argv, "--db", db] + (["--json"] if json_out else []))
    captured = capsys.readouterr()
    assert got == code, captured.out + captured.err
    if code != 0:
        return captured.err
    return json.loads(captured.out) if json_out else captured.out


def write(capsys, db, title, *extra, keywords="pool,timeout"):
    return run(
        capsys,
        db,
        "note",
        "write",
        "--namespace",
        "proj",
        "--title",
        title,
        "--summary",
        f"About {title}.",
        "-k",
        keywords,
        "--content",
        f"Body of {title}.",
        *extra,
    )


def test_write_search_replace_delete_round_trip(db, capsys, tmp_path):
    first = write(capsys, db, "Pool timeouts fixed", "--path", "./db/pool.py", "--commit", "abcdef12")
    assert first["status"] == "active" and first["actor"] == "maya" and first["related_paths"] == ["db/pool.py"]
    body = tmp_path / "topic.md"
    body.write_text(f"Evidence: [[{first['id'][:8]}]]\n", encoding="utf-8")
    topic = run(
        capsys,
        db,
        "note",
        "write",
        "--namespace",
        "proj",
        "--title",
        "Pooling",
        "--summary",
        "What holds about the pool.",
        "-k",
        "pool",
        "-k",
        "topic",
        "--kind",
        "topic",
        "--content-file",
        str(body),
    )
    page = run(capsys, db, "note", "search", "pool", "--namespace", "proj", "--mode", "count")
    assert page["total"] == 2 and page["mode"] == "count" and page["snapshot"]
    newer = run(capsys, db, "note", "replace", first["id"][:10], "--summary", "Raised to 50.", "--reason", "more")
    assert newer["supersedes"] == first["id"] and newer["status"] == "active"
    read = run(capsys, db, "note", "read", topic["id"], "--expand")
    (link,) = read["links"]
    assert (link["state"], link["resolved_id"]) == ("superseded", newer["id"])
    stale = run(
        capsys,
        db,
        "note",
        "search",
        "pool",
        "--namespace",
        "proj",
        "--skip",
        "1",
        "--snapshot",
        page["snapshot"],
        code=2,
    )
    assert "stale" in stale
    gone = run(capsys, db, "note", "delete", newer["id"], "--reason", "reverted")
    assert gone["status"] == "withdrawn"
    history = run(capsys, db, "note", "history", first["id"])
    assert [v["status"] for v in history] == ["superseded", "withdrawn"]
    listed = run(capsys, db, "note", "list", "--namespace", "proj", "--status", "active")
    assert [n["id"] for n in listed] == [topic["id"]]


def test_refusals_name_the_field_and_exit_2(db, capsys):
    write(capsys, db, "Pool timeouts fixed")
    dup = run(
        capsys,
        db,
        "note",
        "write",
        "--namespace",
        "proj",
        "--title",
        "Pool timeouts fixed",
        "--summary",
        "About Pool timeouts fixed.",
        "-k",
        "timeout,POOL",
        "--content",
        "Body of Pool timeouts fixed.",
        code=2,
    )
    assert "already records this" in dup
    few = run(
        capsys,
        db,
        "note",
        "write",
        "--namespace",
        "proj",
        "--title",
        "x",
        "--summary",
        "y",
        "-k",
        "one",
        "--content",
        "z",
        code=2,
    )
    assert "keywords" in few
    marker = run(
        capsys,
        db,
        "note",
        "write",
        "--namespace",
        "proj",
        "--title",
        "GitMemo-Type: add",
        "--summary",
        "y",
        "-k",
        "a,b",
        "--content",
        "z",
        code=2,
    )
    assert "title" in marker
    assert "content" in run(
        capsys, db, "note", "write", "--namespace", "proj", "--title", "t", "--summary", "s", "-k", "a,b", code=2
    )


def test_an_agent_note_waits_for_approval_and_the_tables_print(db, capsys):
    waiting = write(capsys, db, "Agent outcome", "--source", "agent", "--actor", "planner")
    assert waiting["status"] == "quarantined" and waiting["actor"] == "planner"
    assert run(capsys, db, "note", "search", "outcome", "--namespace", "proj")["total"] == 0
    out = run(capsys, db, "note", "list", "--namespace", "proj", json_out=False)
    assert "quarantined" in out and waiting["id"][:12] in out
    approved = run(capsys, db, "note", "approve", waiting["id"][:9], "--reason", "checked")
    assert approved["status"] == "active"
    out = run(capsys, db, "note", "search", "outcome", "--namespace", "proj", json_out=False)
    assert waiting["id"][:12] in out and "Agent outcome" in out
    out = run(capsys, db, "note", "read", waiting["id"], json_out=False)
    assert "Body of Agent outcome." in out and "keywords: pool, timeout" in out
