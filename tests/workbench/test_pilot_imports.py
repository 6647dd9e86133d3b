"""The Imports view: preview a file with progress, decide items, commit and undo (with confirmation)."""

from __future__ import annotations

import json

import pytest
from textual.widgets import DataTable, Input, Static

from tests.stores import fresh_url
from workbench.testing import settle

pytest.importorskip("core.services.imports")

EXPORT = {
    "schemaVersion": "stratagate.external-memory.v2",
    "sourceType": "external_ai_memory_export",
    "sourceSystem": "OtherAI",
    "exportedAt": "2026-03-05",
    "candidates": [
        {"title": "Maya adopted a cat named Miso", "summary": "Maya adopted a grey cat named Miso in March 2026.",
         "participants": ["Maya"]},
        {"title": "Atlas launch moved", "summary": "The Atlas launch moved to Tuesday, March 17.",
         "participants": ["Maya"]},
    ],
}


async def confirmed(pilot, key: str) -> None:
    """Press ``key``, check that it asks first, and say yes."""
    from workbench.screens.confirm import ConfirmScreen

    await pilot.press(key)
    await settle(pilot)
    assert isinstance(pilot.app.screen, ConfirmScreen)
    await pilot.press("y")
    await settle(pilot)


async def timeline_search(pilot, text: str) -> None:
    """Open the timeline and filter it by ``text``."""
    await pilot.press("2")
    await settle(pilot)
    await pilot.press("f", *text, "enter")
    await settle(pilot)


async def test_preview_decide_commit_and_undo(make_app, tmp_path):
    from workbench.screens.imports import ImportsScreen

    export = tmp_path / "export.json"
    export.write_text(json.dumps(EXPORT), encoding="utf-8")
    app = make_app()
    messages = []
    async with app.run_test(size=(120, 36), message_hook=messages.append) as pilot:
        await pilot.press("5")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ImportsScreen)
        assert "No imports yet" in str(screen.query_one("#batch-head", Static).render())
        await pilot.press("o")
        screen.query_one("#i-path", Input).value = str(export)
        await pilot.press("enter")
        await settle(pilot)
        assert any(isinstance(m, ImportsScreen.PreviewProgress) for m in messages)
        preview = screen.preview
        assert preview is not None and preview.batch.total == 2
        items = screen.query_one("#items", DataTable)
        assert items.row_count == 2
        assert all(item.state == "decided" for item in preview.items)
        # a person's choice for the first item
        items.focus()
        items.move_cursor(row=0)
        await pilot.press("a")
        await settle(pilot)
        assert screen.preview.items[0].choice_action == "add"
        assert "ADD (you)" in str(items.get_row_at(0)[2])
        # commit asks first
        await confirmed(pilot, "C")
        assert screen.preview.batch.status == "committed"
        created = screen.preview.items[0].created_event_id
        assert created is not None
        # the result is visible in the timeline
        await timeline_search(pilot, "Miso")
        assert [r.id for r in app.screen.query_one("#events").items] == [created]
        # undo asks first, then shows its result
        await pilot.press("5")
        await settle(pilot)
        await confirmed(pilot, "U")
        assert screen.preview.batch.status == "undone"
        assert created in screen.undo_result.removed_event_ids
        assert "undo removed events" in str(screen.query_one("#batch-head", Static).render())
        await timeline_search(pilot, "Miso")
        assert app.screen.query_one("#events").row_count == 0


async def test_an_empty_store_imports_into_a_new_namespace(tmp_path, config):
    from workbench.app import Workbench
    from workbench.screens.imports import ImportsScreen

    export = tmp_path / "export.json"
    export.write_text(json.dumps(EXPORT), encoding="utf-8")
    app = Workbench(db_url=fresh_url(tmp_path, "empty.db"), config=config)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert app.namespace is None and app.screen.has_class("-empty")
        await pilot.press("5")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ImportsScreen)
        assert not screen.has_class("-empty")  # the view itself, not the newcomer's message
        field = screen.query_one("#i-namespace", Input)
        assert field.value == "default"
        assert "new namespace default" in str(screen.query_one("#batch-head", Static).render())
        field.value = "work"
        screen.query_one("#i-path", Input).value = str(export)
        screen.query_one("#i-path", Input).focus()
        await pilot.press("enter")
        await settle(pilot)
        assert screen.preview is not None and screen.preview.batch.namespace == "work"
        assert screen.query_one("#items", DataTable).row_count == 2
        screen.query_one("#items", DataTable).focus()
        await confirmed(pilot, "C")
        assert screen.preview.batch.status == "committed"
        # the new namespace is created, listed and opened; its events are in the timeline
        assert app.namespaces == ("work",) and app.namespace == "work"
        await pilot.press("2")
        await settle(pilot)
        assert not app.screen.has_class("-empty")
        created = {i.created_event_id for i in screen.preview.items} - {None}
        assert created and created <= {r.id for r in app.screen.query_one("#events").items}
