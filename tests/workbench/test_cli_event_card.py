"""`strata event N`: the card says what superseded it, why a correction it states changed nothing,
and which cards it was used together with."""

from __future__ import annotations

import pytest

from core.api import open_store
from core.db import db, write_transaction
from core.models import Event
from core.services.associations import reinforce
from core.services.capture import append_turn
from core.services.derive import run_pending
from core.services.spaces import configure_namespace
from tests.stores import fresh_url
from workbench.cli import main


@pytest.fixture
def said(tmp_path, monkeypatch):
    from workbench.cli.output import console

    monkeypatch.setattr(console, "width", 400)
    url = fresh_url(tmp_path)
    open_store(url)
    configure_namespace("ns", block_turn_size=1)
    for user in (
        "The Cedar service port is 6389.",
        "Change the Cedar service port from 6389 to 8247.",
        "Change the Birch service port from 1111 to 2222.",
    ):
        append_turn("ns", "t", user, "Done.")
        run_pending("ns", provider="offline")
    ids = {e.title: e.id for e in Event.select()}
    with write_transaction():
        reinforce(
            Event.get_by_id(ids["Change the Cedar service port from 6389 to 8247."]).namespace_id,
            {
                ids["Change the Cedar service port from 6389 to 8247."]: 1.0,
                ids["Change the Birch service port from 1111 to 2222."]: 1.0,
            },
        )
    db.close()
    return url, ids


def test_the_card_reads_its_links_its_unchanged_correction_and_its_associations(said, capsys):
    url, ids = said
    old, new, birch = (
        ids["The Cedar service port is 6389."],
        ids["Change the Cedar service port from 6389 to 8247."],
        ids["Change the Birch service port from 1111 to 2222."],
    )
    assert main(["event", str(old), "--db", url]) == 0
    assert f"superseded by: {new} " in capsys.readouterr().out
    assert main(["event", str(birch), "--db", url]) == 0
    out = capsys.readouterr().out
    assert (
        "correction changed nothing: birch service port 1111 → 2222 (no earlier statement of the speaker holds it)"
        in out
    )
    assert f"used together with: {new} Change the Cedar service port from 6389 to 8247. (×1, weight 0.08)" in out
