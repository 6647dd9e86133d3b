"""The Imports view: preview a file with progress, decide items, commit and undo (with confirmation)."""

from __future__ import annotations

import json

import pytest
from textual.widgets import DataTable, Input, Static

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


async def test_preview_decide_commit_and_undo(make_app, tmp_path):
    from workbench.screens.confirm import ConfirmScreen
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
        await pilot.press("C")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert screen.preview.batch.status == "committed"
        created = screen.preview.items[0].created_event_id
        assert created is not None
        # the result is visible in the timeline
        await pilot.press("2")
        await settle(pilot)
        await pilot.press("f", *"Miso", "enter")
        await settle(pilot)
        assert [r.id for r in app.screen.query_one("#events").items] == [created]
        # undo asks first, then shows its result
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("U")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert screen.preview.batch.status == "undone"
        assert created in screen.undo_result.removed_event_ids
        assert "undo removed events" in str(screen.query_one("#batch-head", Static).render())
        await pilot.press("2")
        await settle(pilot)
        await pilot.press("f", *"Miso", "enter")
        await settle(pilot)
        assert app.screen.query_one("#events").row_count == 0
