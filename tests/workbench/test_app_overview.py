"""The workbench shell: loads the overview off the event loop, shows an empty state."""

from __future__ import annotations

import threading

from textual.widgets import DataTable, Static

from core.services.capture import append_turn
from workbench.app import OverviewLoaded, Workbench


async def test_overview_lists_namespaces_from_a_worker(db_url, store, monkeypatch):
    append_turn("alpha", "t", "hello", "hi")
    import core.services.spaces as spaces

    seen_threads = []
    original = spaces.list_namespaces

    def spy():
        seen_threads.append(threading.current_thread() is threading.main_thread())
        return original()

    monkeypatch.setattr(spaces, "list_namespaces", spy)
    messages = []
    app = Workbench(db_url=db_url)
    async with app.run_test(size=(100, 30), message_hook=messages.append) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.query_one("#overview", DataTable)
        assert table.row_count == 1
        assert table.get_row_at(0)[0] == "alpha"
    assert seen_threads == [False]
    assert any(isinstance(m, OverviewLoaded) for m in messages)


async def test_empty_store_tells_a_newcomer_what_to_do(db_url, store):
    app = Workbench(db_url=db_url)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        note = str(app.query_one("#note", Static).render())
        assert "strata demo" in note
