"""Snapshots of every main view in one dark and one light theme (seeded, clock-free data).

Update after looking at the report: `pytest tests/workbench/test_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input

from workbench.testing import keys_to_show, settle
from workbench.views import VIEW_IDS

pytestmark = pytest.mark.snapshot

# Keys pressed in a view once it is shown. The imports view shows its empty state: the decisions
# belong to the import service's own tests.
KEYS_IN_VIEW = {
    "graph": ["j", "j"],
    "traces": ["j", "j", "j"],
    "search": [*"passport", "enter"],
}


@pytest.mark.parametrize("theme", ["strata-dark", "strata-light"])
@pytest.mark.parametrize("view", VIEW_IDS)
def test_view_snapshot(view, theme, snap_compare, wb_url):
    from workbench.app import Workbench
    from workbench.config import Config

    if view == "imports":
        pytest.importorskip("core.services.import_preview")
    app = Workbench(db_url=wb_url, config=Config(theme=theme, path=None))
    app.animation_level = "none"  # a tab underline caught mid-slide would depend on the machine's speed

    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in [*keys_to_show(view), *KEYS_IN_VIEW.get(view, ())]:
            await pilot.press(key)
            await settle(pilot)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False
        await settle(pilot)
        await pilot.pause(0.1)  # a loaded machine may still be painting the last frame
        await settle(pilot)

    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


def test_the_docs_screenshots_cover_every_view():
    from workbench.testing import SCREENSHOT_KEYS, SCREENSHOT_STEPS

    assert set(SCREENSHOT_STEPS) == {*VIEW_IDS, "help"}
    assert set(SCREENSHOT_KEYS) <= set(VIEW_IDS) and set(KEYS_IN_VIEW) <= set(VIEW_IDS)  # no renamed view left behind


@pytest.mark.parametrize("theme", ["strata-dark", "strata-light"])
def test_import_item_detail_snapshot(theme, snap_compare, wb_url, monkeypatch):
    """The imports view on an item waiting for a decision: its proposed action and targets by
    title in the list, and the detail pane (decision, reason, matches) focused."""
    pytest.importorskip("core.services.import_preview")
    import core.services.import_preview as service
    from tests.workbench.test_pilot_imports import FACTS, Decider
    from workbench.app import Workbench
    from workbench.config import Config

    provider = Decider()  # decisions fixed by the test, so the picture follows the view, not the decider
    monkeypatch.setattr(service, "get_provider", lambda name=None: provider)
    app = Workbench(db_url=wb_url, config=Config(theme=theme, path=None))
    app.animation_level = "none"

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        pilot.app.screen.query_one("#i-format").value = "text"
        pilot.app.screen.start_preview(text=FACTS)  # pasted: no temporary path in the picture
        await settle(pilot)
        for key in ("right_square_bracket", "enter"):
            await pilot.press(key)
            await settle(pilot)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False
        await settle(pilot)
        await pilot.pause(0.1)
        await settle(pilot)

    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)
