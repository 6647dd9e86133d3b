"""`strata context`, `strata close` and the short-tail hint of `strata stats` and `strata derive`."""

from __future__ import annotations

import json

import pytest

from core.services.capture import append_turn
from core.services.spaces import configure_namespace
from tests.stores import fresh_url
from workbench.cli import main


@pytest.fixture
def db(tmp_path, cli_without_strata_db):
    from core.api import open_store

    url = fresh_url(tmp_path, "harness")
    open_store(url)
    configure_namespace("me", block_turn_size=4)
    for i, text in enumerate(("The Atlas launch moved to March 17.", "Our sync is on Thursdays.", "Ivy is six.")):
        append_turn("me", "monday", text, "Noted.", receipt_id=f"m:{i}")
    return url


def test_a_short_tail_is_explained_then_closed_and_derived(db, capsys):
    assert main(["stats", "--namespace", "me", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "monday: 3 turn(s) waiting for a block of 4" in out and "strata close monday --namespace me" in out
    assert main(["derive", "--namespace", "me", "--db", db]) == 0
    assert "waiting for a block of 4" in capsys.readouterr().out
    assert main(["close", "monday", "--namespace", "me", "--db", db, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["sealed_block_ids"]) == 1
    assert main(["derive", "--namespace", "me", "--db", db]) == 0
    capsys.readouterr()
    assert main(["stats", "--namespace", "me", "--db", db]) == 0
    assert "waiting for a block" not in capsys.readouterr().out


def test_context_prints_what_a_model_would_be_given_and_ledgers_it(db, capsys):
    main(["close", "monday", "--namespace", "me", "--db", db])
    main(["derive", "--namespace", "me", "--db", db])
    capsys.readouterr()
    assert (
        main(["context", "When is the Atlas launch?", "--namespace", "me", "--budget", "500", "--db", db, "--json"])
        == 0
    )
    got = json.loads(capsys.readouterr().out)
    assert "March 17" in got["context"] and got["tokens"] <= 500 and got["selected"] and got["ledger_id"]
    assert main(["ledger", "--namespace", "me", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["id"] == got["ledger_id"]
