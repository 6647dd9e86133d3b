"""The CLI masks secrets in everything it prints (tables, text, JSON, errors); `strata export`
keeps the exact text unless --redact."""

from __future__ import annotations

import json

import pytest

from tests.stores import fresh_url
from workbench.cli import main

GITHUB = "ghp_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVc"
OPENAI = "sk-proj-4fT9kQ2mX7vB1nC8zR5wL3yH6jD0sA2e"
PASSWORD = "Tr0ub4dor&3"
SECRETS = (GITHUB, OPENAI, PASSWORD, GITHUB[:12], OPENAI[:12])
TEXT = (
    f"Deploy with GITHUB_TOKEN={GITHUB}, the staging password={PASSWORD} and the billing key {OPENAI}; "
    "the zephyr rollout starts Friday."
)


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch):
    """Tables wide enough that a marker is not folded across two lines of a cell."""
    from workbench.cli.output import console, err_console

    for which in (console, err_console):
        monkeypatch.setattr(which, "width", 400)


@pytest.fixture
def secret_db(tmp_path, capsys):
    rows = [
        ("user", TEXT),
        ("assistant", "Noted: the zephyr rollout starts Friday."),
        ("user", "We decided the zephyr rollout goes to all regions."),
        ("assistant", "Understood."),
    ]
    rows += [(role, f"{role} note {i} about the weather") for i in range(20) for role in ("user", "assistant")]
    path = tmp_path / "chat.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"thread": "ops", "role": role, "content": content, "created_at": f"2026-02-01T10:{i:02d}:00+00:00"}
            )
            + "\n"
            for i, (role, content) in enumerate(rows)
        ),
        encoding="utf-8",
    )
    url = fresh_url(tmp_path, "secret.db")
    assert main(["ingest", "jsonl", str(path), "--namespace", "ops", "--db", url]) == 0
    assert main(["derive", "--db", url]) == 0
    capsys.readouterr()
    return url


def run(capsys, *argv: str) -> str:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out + captured.err


def assert_masked(text: str, *markers: str) -> None:
    for secret in SECRETS:
        assert secret not in text, secret
    for kind in markers:
        assert f"[REDACTED:{kind}]" in text, text


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_search_and_ask_print_masked_text(secret_db, capsys, json_flag):
    out = run(capsys, "search", "raw", "zephyr rollout deploy", "--db", secret_db, "--namespace", "ops", *json_flag)
    assert_masked(out, "github-token")
    out = run(capsys, "ask", "When does the zephyr rollout start?", "--db", secret_db, "--namespace", "ops", *json_flag)
    assert_masked(out, "github-token", "password", "api-key")


def test_blocks_block_events_and_traces_print_masked_text(secret_db, capsys):
    blocks = json.loads(run(capsys, "blocks", "--db", secret_db, "--namespace", "ops", "--json"))
    assert blocks
    assert_masked(run(capsys, "blocks", "--db", secret_db, "--namespace", "ops"))
    for block in blocks:
        assert_masked(run(capsys, "block", str(block["id"]), "--level", "raw", "--db", secret_db), "github-token")
        assert_masked(
            run(capsys, "block", str(block["id"]), "--level", "raw", "--db", secret_db, "--json"), "github-token"
        )
    events = json.loads(run(capsys, "events", "--db", secret_db, "--namespace", "ops", "--json"))
    assert events
    assert_masked(run(capsys, "events", "--db", secret_db, "--namespace", "ops"))
    for event in events:
        assert_masked(run(capsys, "event", str(event["id"]), "--db", secret_db))
    run(capsys, "search", "raw", f"token {GITHUB}", "--db", secret_db, "--namespace", "ops")
    assert_masked(run(capsys, "traces", "--db", secret_db, "--namespace", "ops"), "github-token")


def test_a_stored_job_error_is_printed_masked_even_where_the_table_cuts_it(secret_db, capsys):
    """An error stored before masking existed (or by another tool) is masked before `jobs` cuts it
    to 120 characters: cut first, the key's prefix would be printed."""
    from core.db import db
    from core.models import Job, Namespace
    from core.services.jobs import create_job
    from core.api import open_store

    open_store(secret_db)
    job = create_job(Namespace.get(Namespace.name == "ops"), "graph", None)
    Job.update(status="failed", attempts=3, last_error="x" * 100 + f" {OPENAI} refused").where(
        Job.id == job.id
    ).execute()
    db.close()
    for extra in ([], ["--json"]):
        out = run(capsys, "jobs", "--db", secret_db, "--namespace", "ops", "--status", "failed", *extra)
        assert OPENAI[:8] not in out and "[REDACTED:api" in out


def test_export_is_exact_by_default_and_masked_with_redact(secret_db, capsys, tmp_path):
    exact = run(capsys, "export", "--db", secret_db, "--namespace", "ops")
    assert GITHUB in exact and PASSWORD in exact
    assert_masked(run(capsys, "export", "--db", secret_db, "--namespace", "ops", "--redact"), "github-token")
    out = tmp_path / "shared.md"
    run(
        capsys, "export", "--db", secret_db, "--namespace", "ops", "--redact", "--format", "markdown", "--out", str(out)
    )
    assert_masked(out.read_text(encoding="utf-8"), "github-token", "password", "api-key")


def test_a_database_password_is_never_printed(capsys):
    url = "postgresql://strata:Pa55w0rd-xyz@127.0.0.1:1/memory"
    capsys.readouterr()
    assert main(["stats", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "Pa55w0rd-xyz" not in err and "strata:***@127.0.0.1" in " ".join(err.split())
