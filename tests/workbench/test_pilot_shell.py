"""The app shell: views by key, namespaces, empty state, help, keymap, themes, copy, palette."""

from __future__ import annotations

from textual.widgets import OptionList

from workbench.messages import NamespacesLoaded, OpenItem
from workbench.screens.base import EmptyState
from tests.stores import fresh_url
from workbench.testing import settle
from workbench.views import VIEWS
from workbench.widgets.header import AppHeader, NamespacePicker

SIZE = (120, 36)


async def test_every_view_is_one_key_away(make_app):
    app = make_app()
    messages = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot)
        assert app.namespace == "demo"
        assert app.current_mode == "blocks"
        for view in VIEWS:
            await pilot.press(view.key)
            await settle(pilot)
            assert app.current_mode == view.id
            assert app.screen.MODE == view.id
            assert not app.screen.has_class("-empty")
    assert any(isinstance(m, NamespacesLoaded) and m.names == ("demo",) for m in messages)


async def test_namespace_switcher_reloads_the_views(make_app, wb_url):
    from core.services.capture import append_turn
    from core.api import open_store

    open_store(wb_url)
    append_turn("zeta", "chat", "hello there", "hi")
    app = make_app(namespace="zeta")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.namespaces == ("demo", "zeta")
        assert app.namespace == "zeta"
        assert "namespace zeta" in str(app.screen.query_one(AppHeader).render())
        assert app.screen.query_one("#block-rail").row_count == 0
        await pilot.press("n")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, NamespacePicker)
        options = picker.query_one(OptionList)
        assert options.highlighted == 1  # zeta, the open one
        await pilot.press("up", "enter")
        await settle(pilot)
        assert app.namespace == "demo"
        assert "namespace demo" in str(app.screen.query_one(AppHeader).render())
        assert app.screen.query_one("#block-rail").row_count == 13
        await pilot.press("2")
        await settle(pilot)
        assert app.screen.loaded_namespace == "demo"


async def test_an_empty_store_tells_a_newcomer_to_run_the_demo(tmp_path, config):
    from workbench.app import Workbench

    app = Workbench(db_url=fresh_url(tmp_path, "empty.db"), config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.namespace is None
        for key in ("1", "2", "3"):
            await pilot.press(key)
            await settle(pilot)
            assert app.screen.has_class("-empty")
            assert "strata demo" in str(app.screen.query_one(EmptyState).render())


async def test_help_lists_binding_ids_and_the_keymap_remaps_them(make_app):
    from workbench.config import Config
    from workbench.screens.help import HelpScreen

    app = make_app(config=Config(keymap={"app.view-timeline": "ctrl+t", "nope.unknown": "x"}))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        assert any("nope.unknown" in n.message for n in app._notifications)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert app.current_mode == "timeline"
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        ids = {row[2] for row in app.screen.rows}
        assert {"timeline.source-block", "app.quit", "table.down", "app.view-timeline"} <= ids
        keys = {row[2]: row[0] for row in app.screen.rows}
        assert keys["app.view-timeline"] == "ctrl+t"
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.MODE == "timeline"


async def test_themes_from_yaml_and_the_user_dir(make_app, tmp_path):
    from workbench.config import Config

    themes = tmp_path / "themes"
    themes.mkdir()
    (themes / "mine.yaml").write_text("name: mine\ndark: true\nprimary: '#ff00aa'\n", encoding="utf-8")
    (themes / "broken.yaml").write_text("name: broken\nprimary: not-a-colour\n", encoding="utf-8")
    config = Config(theme="mine", path=tmp_path / "config.yaml")
    app = make_app(config=config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        assert app.theme == "mine"
        assert {"strata-dark", "strata-light", "nord", "mine"} <= set(app.available_themes)
        assert any("broken.yaml" in n.message for n in app._notifications)
        assert app.get_css_variables()["level-0"].startswith("#")
        app.theme = "strata-light"
        await settle(pilot)
    assert "theme: strata-light" in (tmp_path / "config.yaml").read_text(encoding="utf-8")


async def test_copy_puts_the_selected_item_on_the_clipboard(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("y")
        assert "Maya" in app.clipboard
        await pilot.press("2")
        await settle(pilot)
        await pilot.press("c")
        assert "Weight" in app.clipboard and "Sources" in app.clipboard


async def test_command_palette_offers_namespaced_commands(make_app):
    app = make_app()
    messages = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot)
        from workbench.commands import StrataCommands

        titles = [title for title, _help, _cb in StrataCommands(app.screen)._commands()]
        assert "view: Timeline" in titles and "block: Expand one level" in titles
        await pilot.press("ctrl+p")
        await pilot.press(*"view: Graph")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.current_mode == "graph"


async def test_open_item_switches_view(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.post_message(OpenItem("node", 1))
        await settle(pilot)
        assert app.current_mode == "graph"
        assert app.screen.view.id == 1


async def test_views_are_built_ahead_and_load_when_first_shown(make_app):
    from workbench.views import PREBUILD_ORDER

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)  # also waits for the views built in the background
        built = {mode: app.get_screen_stack(mode)[0] for mode in PREBUILD_ORDER}
        assert all(screen.is_mounted for screen in built.values())
        timeline = built["timeline"]
        assert timeline.loaded_namespace is None  # built, but nothing read until it is shown
        assert timeline.query_one("#events").row_count == 0
        await pilot.press("2")
        await settle(pilot)
        assert app.screen is timeline
        assert timeline.loaded_namespace == "demo" and timeline.query_one("#events").row_count > 0
        assert app.screen.focused is timeline.query_one("#events")


async def test_header_tabs_and_namespace_are_clickable(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        header = app.screen.query_one(AppHeader)
        text = str(header.render())
        await pilot.click(AppHeader, offset=(text.index("2 Timeline"), 0))
        await settle(pilot)
        assert app.current_mode == "timeline"
        await pilot.click(AppHeader, offset=(text.index("namespace demo") + len("namespace "), 0))
        await settle(pilot)
        assert isinstance(app.screen, NamespacePicker)
        await pilot.press("escape")
        await settle(pilot)
        assert app.current_mode == "timeline" and app.namespace == "demo"


async def test_quitting_while_a_view_is_built_ahead(make_app):
    import asyncio

    app = make_app()
    async with app.run_test(size=SIZE):
        for _ in range(2000):
            if app._building is not None:
                break
            await asyncio.sleep(0.005)
        assert app._building is not None
    # leaving run_test closed every screen stack while one was being built, without error
