"""`strata supersede|duplicate|participants EVENT` and `strata undo AUDIT_ID`, on a copy of the demo."""

from __future__ import annotations

import json

import pytest

from tests.stores import copy_of
from workbench.cli import main


@pytest.fixture
def demo_db(demo_template, tmp_path, cli_without_strata_db, monkeypatch):
    monkeypatch.setenv("STRATA_ACTOR", "carol")
    return copy_of(demo_template, tmp_path / "demo.db")


def run(capsys, db: str, *argv: str, code: int = 0, json_out: bool = True):
    got = main([*argv, "--db", db, *(["--json"] if json_out else [])])
    captured = capsys.readouterr()
    assert got == code, captured.out + captured.err
    if code:
        return captured.err
    return json.loads(captured.out) if json_out else captured.out


def _event_titled(capsys, db: str, words: str) -> dict:
    (found,) = [e for e in run(capsys, db, "events", "--namespace", "demo", "--text", words) if e["status"] == "active"]
    return found


def test_supersede_then_undo_from_the_command_line(demo_db, capsys):
    home = _event_titled(capsys, demo_db, "Maya lives in Utrecht")
    done = run(capsys, demo_db, "supersede", str(home["id"]), "--with", "Maya lives in Amsterdam.", "--reason", "moved")
    assert (done["action"], done["event_id"], done["status"]) == ("supersede", home["id"], "superseded")
    card = run(capsys, demo_db, "event", str(done["other_id"]))
    assert card["event"]["summary"] == "Maya lives in Amsterdam." and card["event"]["status"] == "active"
    trail = run(capsys, demo_db, "audit", "--namespace", "demo", "--event", str(home["id"]))
    assert [(a["id"], a["action"], a["actor"], a["reason"]) for a in trail] == [
        (done["audit_id"], "supersede", "carol", "moved")
    ]

    text = run(capsys, demo_db, "undo", str(done["audit_id"]), json_out=False)
    assert f"undid the supersede of event {home['id']} by event {done['other_id']}" in text
    assert run(capsys, demo_db, "event", str(home["id"]))["event"]["status"] == "active"
    assert run(capsys, demo_db, "event", str(done["other_id"]))["event"]["status"] == "revoked"
    err = run(capsys, demo_db, "undo", str(done["audit_id"]), code=2)
    assert "already undone" in err


def test_duplicate_and_participants_print_the_audit_id_that_takes_them_back(demo_db, capsys):
    dup = _event_titled(capsys, demo_db, "Updated: the Atlas launch is now")
    kept = _event_titled(capsys, demo_db, "Update: we moved the Atlas launch")
    text = run(capsys, demo_db, "duplicate", str(dup["id"]), "--of", str(kept["id"]), json_out=False)
    assert f"event {dup['id']} marked a duplicate of event {kept['id']}" in text and "`strata undo " in text
    assert run(capsys, demo_db, "event", str(dup["id"]))["event"]["status"] == "superseded"

    edited = run(capsys, demo_db, "participants", str(kept["id"]), "Maya", "Priya Raman,Lena")
    assert edited["participants"] == ["Maya", "Priya Raman", "Lena"]
    cleared = run(capsys, demo_db, "participants", str(kept["id"]), "--none")
    assert cleared["participants"] == []
    err = run(capsys, demo_db, "undo", str(edited["audit_id"]), code=2)
    assert f"audit entry {cleared['audit_id']}" in err and "undo that first" in err
    run(capsys, demo_db, "undo", str(cleared["audit_id"]))
    back = run(capsys, demo_db, "undo", str(edited["audit_id"]))
    assert back["participants"] == kept["participants"]
    text = run(capsys, demo_db, "audit", "--namespace", "demo", json_out=False)
    assert "duplicate" in text and "participa" in text  # the table names each change with its id


def test_corrections_refuse_bad_input_with_exit_2(demo_db, capsys):
    card = _event_titled(capsys, demo_db, "Update: we moved the Atlas launch")
    assert "itself" in run(capsys, demo_db, "duplicate", str(card["id"]), "--of", str(card["id"]), code=2)
    assert "empty" in run(capsys, demo_db, "supersede", str(card["id"]), "--with", "  ", code=2)
    assert "does not exist" in run(capsys, demo_db, "undo", "999999", code=2)
    with pytest.raises(SystemExit):
        main(["participants", str(card["id"]), "Maya", "--none", "--db", demo_db])
