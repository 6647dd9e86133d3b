"""The CLI's doors: which commands make a database, text that is not UTF-8, padded names, and a
demo rebuilt while a workbench has the earlier one open."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from core.db import db
from tests.stores import fresh_url
from workbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
FILES = pytest.mark.sqlite_only(reason="SQLite files: which are made, kept or refused, and their modes")


pytestmark = pytest.mark.usefixtures("cli_without_strata_db")


def _chat(path: Path) -> Path:
    lines = [
        {
            "thread": "t1",
            "role": "user",
            "content": "We decided to use PostgreSQL for billing.",
            "created_at": "2024-01-01T10:00:00Z",
        },
        {"thread": "t1", "role": "assistant", "content": "Noted.", "created_at": "2024-01-01T10:00:01Z"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


READS = [
    ["stats"],
    ["namespaces"],
    ["blocks"],
    ["events"],
    ["jobs"],
    ["graph"],
    ["traces"],
    ["verify"],
    ["search", "raw", "billing"],
    ["ask", "billing?"],
    ["export", "--namespace", "me"],
]


@FILES
@pytest.mark.parametrize("argv", READS, ids=lambda argv: argv[0])
def test_a_read_command_refuses_a_missing_database_and_makes_nothing(argv, tmp_path, capsys):
    path = tmp_path / "nowhere" / "foo.db"
    assert main([*argv, "--db", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no Strata database at" in err and str(path) in " ".join(err.split()), err
    assert not (tmp_path / "nowhere").exists()


@FILES
def test_stats_on_a_bare_name_makes_no_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["stats", "--db", "foo"]) == 2
    assert "no Strata database at foo" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@FILES
def test_strata_db_naming_a_missing_file_is_refused_too(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("STRATA_DB", str(tmp_path / "typo.db"))
    assert main(["namespaces"]) == 2
    assert not (tmp_path / "typo.db").exists()


@FILES
def test_create_makes_a_private_database_for_a_read_command(tmp_path, capsys):
    path = tmp_path / "new" / "strata.db"
    assert main(["stats", "--db", str(path), "--create", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700


@FILES
def test_ingest_makes_the_database_and_then_reads_find_it(tmp_path, capsys):
    path = tmp_path / "data" / "strata.db"
    assert main(["ingest", "jsonl", str(_chat(tmp_path / "chat.jsonl")), "--db", str(path)]) == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    capsys.readouterr()
    assert main(["stats", "--db", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == 2


def test_ingest_into_a_padded_namespace_then_every_lookup_works(tmp_path, capsys):
    url = fresh_url(tmp_path)
    assert main(["ingest", "jsonl", str(_chat(tmp_path / "chat.jsonl")), "--db", url, "--namespace", " me"]) == 0
    capsys.readouterr()
    for spelling in ("me", " me", "me "):
        assert main(["stats", "--db", url, "--namespace", spelling, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["messages"] == 2
    assert main(["namespaces", "--db", url, "--json"]) == 0
    assert [n["name"] for n in json.loads(capsys.readouterr().out)] == ["me"]


def _strata(*argv: str | bytes, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("STRATA_DB", None)
    return subprocess.run([sys.executable, "-m", "workbench", *argv], cwd=cwd, env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "--namespace", b"m\xffe"],
        ["ingest", "jsonl", "chat.jsonl", "--namespace", b"\xfeme"],
        ["ingest", "jsonl", "chat.jsonl", b"--namespace=\xfeme"],
        ["ask", b"caf\xe9?"],
    ],
    ids=["stats", "ingest", "ingest-equals", "ask"],
)
def test_bytes_that_are_not_utf8_are_a_usage_error_and_write_nothing(argv, tmp_path):
    _chat(tmp_path / "chat.jsonl")
    done = _strata(*argv, "--db", "out.db", cwd=tmp_path)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, err
    assert "Traceback" not in err and "not valid UTF-8" in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out.db").exists()


@FILES
def test_a_named_missing_database_is_not_opened_by_the_workbench(tmp_path, capsys, monkeypatch):
    import workbench.app
    from workbench.cli import ui

    monkeypatch.setattr(ui, "in_terminal", lambda: True)
    monkeypatch.setattr(workbench.app, "run_app", lambda **_: pytest.fail("opened the workbench"))
    assert main(["ui", "--db", str(tmp_path / "typo.db")]) == 2
    assert "no Strata database" in capsys.readouterr().err and not (tmp_path / "typo.db").exists()
    opened = []
    monkeypatch.setattr(workbench.app, "run_app", lambda **kw: opened.append(kw) or 0)
    assert main(["ui", "--db", str(tmp_path / "new.db"), "--create"]) == 0 and opened


def _messages(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT COUNT(*) FROM message").fetchone()[0]


@FILES
def test_demo_never_deletes_a_demo_open_elsewhere(demo_template, tmp_path, capsys):
    from tests.stores import copy_of

    path = tmp_path / "demo.db"
    copy_of(demo_template, path)
    db.close()
    workbench = sqlite3.connect(path)  # a workbench reading the earlier demo
    workbench.execute("PRAGMA journal_mode=wal")
    before = workbench.execute("SELECT COUNT(*) FROM message").fetchone()[0]
    inode = path.stat().st_ino

    assert main(["demo", "--db", str(path)]) == 0  # no terminal under pytest: it says how to open it
    out, err = ("".join(text.split()) for text in capsys.readouterr())  # as printed, without the wrapping
    built = sorted(tmp_path.glob("demo-*.db"))
    assert len(built) == 1, list(tmp_path.iterdir())
    assert f"demodatabase:{built[0]}" in out and "isopeninanotherprogram" in err
    assert f"exportSTRATA_DB=sqlite:///{built[0]}" in out  # the instructions name the new file
    assert path.stat().st_ino == inode  # the open demo is the same file, still there
    assert workbench.execute("SELECT COUNT(*) FROM message").fetchone()[0] == before
    assert _messages(built[0]) == before
    assert not list(tmp_path.glob(".demo.db.building-*"))

    workbench.close()
    assert main(["demo", "--no-ui", "--db", str(path)]) == 0  # nobody has it open now: rebuilt in place
    out, err = ("".join(text.split()) for text in capsys.readouterr())
    assert f"demodatabase:{path}" in out and "openinanotherprogram" not in err
    assert path.stat().st_ino != inode and _messages(path) == before
    assert len(list(tmp_path.glob("demo-*.db"))) == 1
    assert not list(tmp_path.glob(".demo.db.building-*"))


def test_a_read_command_makes_no_schema_in_a_new_database_of_the_engine_under_test(tmp_path, capsys):
    """On SQLite a path with no file, on PostgreSQL an empty database: refused, and still empty after."""
    from core.api import open_store
    from tests.stores import fresh_url

    url = fresh_url(tmp_path, empty=True)
    assert main(["namespaces", "--db", url]) == 2
    assert "no Strata database at" in capsys.readouterr().err
    with pytest.raises(Exception, match="no Strata database"):
        open_store(url, create=False)  # still nothing there: the refused read made no table
    assert main(["namespaces", "--db", url, "--create", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["namespaces", "--db", url, "--json"]) == 0
