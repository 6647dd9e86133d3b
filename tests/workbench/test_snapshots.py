"""Snapshots of every main view in one dark and one light theme (seeded, clock-free data), and of
every view (and the help) in the dark theme on a small (80×24) and a large (160×48) terminal.

Update after looking at the report: `pytest tests/workbench/test_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input

from workbench.testing import keys_to_show, settle
from workbench.views import VIEW_IDS

# The header names the open database: a SQLite test store's file name is fixed, a PostgreSQL test
# database's name is generated per test, and the look does not depend on the engine.
pytestmark = [
    pytest.mark.snapshot,
    pytest.mark.sqlite_only(reason="the header shows the database's name, generated per test on PostgreSQL"),
]

# Keys pressed in a view once it is shown. The imports view shows its empty state: the decisions
# belong to the import service's own tests.
KEYS_IN_VIEW = {
    "graph": ["j", "j"],
    "traces": ["j", "j", "j"],
    "search": [*"passport", "enter"],
}


# On a small and a large terminal the graph goes into Maya Brennan's facts, to the last, a past one that
# says why it ended (on a small terminal the node then takes the place of the list), and the imports
# view previews a pasted list of facts (``!preview``, decided by the Decider of the imports tests) and
# goes to its first item waiting for a decision.
SIZES = {"80x24": (80, 24), "160x48": (160, 48)}
KEYS_AT_SIZE = {
    "graph": ["f", *"maya", "enter", "enter", "G"],
    "imports": ["!preview", "right_square_bracket"],
    "help": ["question_mark"],
}


def snapshot_app(wb_url: str, theme: str):
    from workbench.app import Workbench
    from workbench.config import Config

    app = Workbench(db_url=wb_url, config=Config(theme=theme, path=None))
    app.animation_level = "none"  # a tab underline caught mid-slide would depend on the machine's speed
    return app


def pressing(keys):
    """A ``run_before`` that presses ``keys``, each once the workbench has settled."""

    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in keys:
            if key == "!preview":
                from tests.workbench.test_pilot_imports import FACTS

                pilot.app.screen.query_one("#i-format").value = "text"
                pilot.app.screen.start_preview(text=FACTS)  # pasted: no temporary path in the picture
            else:
                await pilot.press(key)
            await settle(pilot)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False
        await settle(pilot)
        await pilot.pause(0.1)  # a loaded machine may still be painting the last frame
        await settle(pilot)

    return run_before


@pytest.mark.parametrize("theme", ["strata-dark", "strata-light"])
@pytest.mark.parametrize("view", VIEW_IDS)
def test_view_snapshot(view, theme, snap_compare, wb_url):
    if view == "imports":
        pytest.importorskip("core.services.import_preview")
    keys = [*keys_to_show(view), *KEYS_IN_VIEW.get(view, ())]
    assert snap_compare(snapshot_app(wb_url, theme), terminal_size=(120, 36), run_before=pressing(keys))


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("view", [*VIEW_IDS, "help"])
def test_view_snapshot_at_size(view, size, snap_compare, wb_url, monkeypatch):
    """Side panes collapsed on the small terminal, short columns whole on both."""
    if view == "imports":
        pytest.importorskip("core.services.import_preview")
        import core.services.import_preview as service
        from tests.workbench.test_pilot_imports import Decider

        provider = Decider()  # decisions fixed by the test, so the picture follows the view, not the decider
        monkeypatch.setattr(service, "get_provider", lambda name=None: provider)
    if view == "help":
        keys = KEYS_AT_SIZE["help"]
    else:
        keys = [*keys_to_show(view), *KEYS_AT_SIZE.get(view, KEYS_IN_VIEW.get(view, ()))]
    app = snapshot_app(wb_url, "strata-dark")
    assert snap_compare(app, terminal_size=SIZES[size], run_before=pressing(keys))


def test_the_docs_screenshots_cover_every_view():
    from workbench.testing import SCREENSHOT_KEYS, SCREENSHOT_STEPS

    assert set(SCREENSHOT_STEPS) == {*VIEW_IDS, "help"}
    assert set(SCREENSHOT_KEYS) <= set(VIEW_IDS) and set(KEYS_IN_VIEW) <= set(VIEW_IDS)  # no renamed view left behind
    assert set(KEYS_AT_SIZE) <= {*VIEW_IDS, "help"}


@pytest.mark.parametrize("theme", ["strata-dark", "strata-light"])
def test_import_item_detail_snapshot(theme, snap_compare, wb_url, monkeypatch):
    """The imports view on an item waiting for a decision: its proposed action and targets by
    title in the list, and the detail pane (decision, reason, matches) focused."""
    pytest.importorskip("core.services.import_preview")
    import core.services.import_preview as service
    from tests.workbench.test_pilot_imports import FACTS, Decider

    provider = Decider()  # decisions fixed by the test, so the picture follows the view, not the decider
    monkeypatch.setattr(service, "get_provider", lambda name=None: provider)
    app = snapshot_app(wb_url, theme)

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
