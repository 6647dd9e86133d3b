"""workbench.views is the one list of views: the app's modes, key bindings, header tabs, palette,
help, config and the item links all follow it."""

from __future__ import annotations

import pytest

from textual.binding import Binding

from workbench.testing import settle
from workbench.views import DIALOGS, PREBUILD_ORDER, VIEW_IDS, VIEWS, import_path, view_for_item

SIZE = (120, 36)


def test_the_registry_is_consistent():
    assert len(set(VIEW_IDS)) == len(VIEWS) and len({v.key for v in VIEWS}) == len(VIEWS)
    assert sorted(PREBUILD_ORDER) == sorted(VIEW_IDS)
    for view in VIEWS:
        screen = view.screen_class()
        assert screen.MODE == view.id
    for path in DIALOGS:
        assert import_path(path).BINDINGS
    kinds = [kind for view in VIEWS for kind in view.opens]
    assert len(kinds) == len(set(kinds))  # one view per kind of item
    assert view_for_item("event").id == "timeline" and view_for_item("unknown") is None


def test_bindings_follow_the_registry():
    """Binding ids and default keys are what user keymaps name: they stay as they are."""
    from workbench.app import Workbench, binding_ids

    bindings = {b.id: b for b in Workbench.BINDINGS if isinstance(b, Binding)}
    expected = {
        "app.view-blocks": "1",
        "app.view-timeline": "2",
        "app.view-graph": "3",
        "app.view-traces": "4",
        "app.view-imports": "5",
        "app.view-jobs": "6",
        "app.view-review": "7",
        "app.view-search": "/",
    }
    assert {v.binding_id: v.key for v in VIEWS} == expected
    for view in VIEWS:
        binding = bindings[view.binding_id]
        assert (binding.key, binding.action, binding.description) == (view.key, f"view('{view.id}')", view.title)
    assert set(expected) | {"help.close", "confirm.yes", "namespace.cancel", "table.down"} <= binding_ids()


def test_config_accepts_exactly_the_registered_views(tmp_path):
    from workbench.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text("start_screen: nowhere\n", encoding="utf-8")
    problems = load_config(path).problems
    assert any(", ".join(VIEW_IDS) in problem for problem in problems)


@pytest.mark.sqlite_only(reason="the header's room for the view titles depends on the database name's length")
async def test_header_palette_and_help_list_the_registered_views(make_app):
    from workbench.commands import StrataCommands
    from workbench.screens.help import HelpScreen
    from workbench.widgets.header import AppHeader

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        header = str(app.screen.query_one(AppHeader).render())
        assert all(f" {v.key} {v.title} " in header for v in VIEWS)
        titles = [title for title, _help, _cb in StrataCommands(app.screen)._commands()]
        assert [t for t in titles if t.startswith("view: ")] == [f"view: {v.title}" for v in VIEWS]
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        ids = {row[2] for row in app.screen.rows}
        assert {v.binding_id for v in VIEWS} <= ids
