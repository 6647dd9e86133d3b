"""`strata import gitmemo PATH`, then `strata import commit|show|undo` and `strata note read <old hash>`;
`strata export --format gitmemo DIR`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gitmemo_repos import git, sample_format2
from tests.stores import fresh_url
from workbench.cli import main


@pytest.fixture
def db(tmp_path, cli_without_strata_db, monkeypatch):
    from workbench.cli import output

    monkeypatch.setattr(output.console, "_width", 200)
    return fresh_url(tmp_path, "gitmemo")


def run(capsys, db: str, *argv: str, code: int = 0, json_out: bool = True):
    got = main([*argv, "--db", db] + (["--json"] if json_out else []))
    captured = capsys.readouterr()
    assert got == code, captured.out + captured.err
    if code != 0:
        return captured.err
    return json.loads(captured.out) if json_out else captured.out + captured.err


def test_import_read_by_old_hash_export_and_undo(db, capsys, tmp_path):
    mem = tmp_path / "project" / ".mem"
    h = sample_format2(mem)
    shown = run(capsys, db, "import", "gitmemo", str(mem), "--namespace", "proj", json_out=False)
    assert "gitmemo format 2" in shown and "withdrawn" in shown and "strata import commit 1" in shown
    batch = run(capsys, db, "import", "gitmemo", str(mem), "--namespace", "proj")["batch"]
    assert batch["format"] == "gitmemo" and batch["total"] == 5
    out = run(capsys, db, "import", "commit", "1", json_out=False)
    assert "5 notes written" in out
    read = run(capsys, db, "note", "read", h["pool"][:8])
    assert read["status"] == "superseded" and read["title"] == "Pool timeouts fixed"
    text = run(capsys, db, "note", "read", h["topic"][:10], "--expand", json_out=False)
    assert "Database operations" in text
    assert "Pool timeouts fixed" in run(capsys, db, "import", "show", "1", json_out=False)

    target = tmp_path / "copy" / ".mem"
    target.parent.mkdir()
    said = run(capsys, db, "export", "--format", "gitmemo", str(target), "--namespace", "proj", json_out=False)
    assert "5 note versions (1 withdrawn) in 7 commits" in said
    assert len(git(target, "log", "--oneline").splitlines()) == 7
    err = run(capsys, db, "export", "--format", "gitmemo", "--namespace", "proj", code=2, json_out=False)
    assert "give its directory" in err
    err = run(capsys, db, "export", str(tmp_path / "x"), "--namespace", "proj", code=2, json_out=False)
    assert "DIR is for --format gitmemo" in err

    undone = run(capsys, db, "import", "undo", "1", json_out=False)
    assert "removed 5 notes" in undone
    err = run(capsys, db, "note", "read", h["pool"][:8], code=2)
    assert "no note" in err


def test_a_malformed_repository_is_an_error_naming_it(db, capsys, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    err = run(capsys, db, "import", "gitmemo", str(plain), "--namespace", "proj", code=2, json_out=False)
    assert "not a git repository" in err and "plain" in err
    if db.startswith("sqlite:///"):
        assert not Path(db[len("sqlite:///") :]).exists()  # checked before the store is opened
