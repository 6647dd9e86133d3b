"""The open database in the workbench: the header names it (and the namespace) at any width, and an
empty store offers to build and open the demo, by key and from the command palette."""

from __future__ import annotations

import pytest
from textual.widgets import Footer

from tests.stores import fresh_url
from workbench.screens.base import EmptyState
from workbench.testing import settle
from workbench.views import VIEWS
from workbench.widgets.header import AppHeader


def header_text(app) -> str:
    return str(app.screen.query_one(AppHeader).render())


def footer_keys(app) -> set[str]:
    footer = app.screen.query_one(Footer)
    return {str(key.description) for key in footer.query("FooterKey")}


@pytest.mark.sqlite_only(reason="the header names a SQLite file; a PostgreSQL test database's name is generated")
@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 36)])
async def test_the_header_names_the_database_and_the_namespace_in_every_view(make_app, size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for view in VIEWS:
            await pilot.press(view.key)
            await settle(pilot)
            text = header_text(app)
            assert len(text) <= size[0]
            assert "database wb.db" in text and "namespace demo ▼" in text, (view.id, text)
            assert f" {view.key} {view.title} " in text  # the shown view's tab keeps its title


@pytest.mark.sqlite_only(reason="the header names a SQLite file; a PostgreSQL test database's name is generated")
async def test_a_narrow_terminal_still_shows_both_names_cut_to_fit(tmp_path, config):
    from core.api import append_turn, open_store
    from workbench.app import Workbench

    url = fresh_url(tmp_path, "a-database-with-a-rather-long-file-name.db")
    open_store(url)
    append_turn("a-namespace-with-a-long-name-too", "chat", "hello", "hi")
    app = Workbench(db_url=url, config=config)
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        text = header_text(app)
        assert len(text) <= 60 and text.rstrip().endswith("▼")
        assert " db a-data" in text and " ns a-name" in text and text.count("…") == 2


@pytest.mark.sqlite_only(reason="the header names a SQLite file; a PostgreSQL test database's name is generated")
async def test_the_database_is_shown_in_full_on_click_and_from_the_palette(make_app, wb_url):
    from core.db import display_url

    shown = display_url(wb_url)
    app = make_app()
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await settle(pilot)
        text = header_text(app)
        await pilot.click(AppHeader, offset=(text.index("wb.db"), 0))
        await settle(pilot)
        assert [n.message for n in app._notifications] == [shown]
        await pilot.hover(AppHeader, offset=(text.index("wb.db"), 0))
        assert app.screen.query_one(AppHeader).tooltip == f"database: {shown}"
        app.clear_notifications()
        await pilot.press("ctrl+p", *"app: Database")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert [n.message for n in app._notifications] == [shown]


@pytest.fixture
def demo_path(tmp_path, monkeypatch):
    """Where the workbench builds the demo (not the data directory)."""
    from workbench import database

    path = tmp_path / "data" / "demo.db"
    monkeypatch.setattr(database, "demo_db_path", lambda: path)
    return path


@pytest.mark.sqlite_only(reason="the header names a SQLite file; a PostgreSQL test database's name is generated")
async def test_an_empty_store_offers_the_demo_and_d_builds_and_opens_it(tmp_path, config, demo_path, monkeypatch):
    import threading

    import core.demo
    from workbench.app import Workbench
    from workbench.database import remembered_url

    app = Workbench(db_url=fresh_url(tmp_path, "empty.db"), config=config)
    build = core.demo.build_demo
    during: list[tuple] = []

    def watched_build(url, progress=None):
        off_loop = threading.current_thread() is not threading.main_thread()

        def look() -> None:
            during.append(
                (
                    app.demo_building,
                    str(app.screen.query_one(EmptyState).render()),
                    "Open the demo" in footer_keys(app),
                    off_loop,
                )
            )
            app.action_open_demo()  # d again while it builds starts nothing

        app.call_from_thread(look)
        return build(url, progress)

    monkeypatch.setattr(core.demo, "build_demo", watched_build)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert app.namespace is None and "database empty.db" in header_text(app)
        assert "namespace (none)" in header_text(app)
        assert "Press d to build the demo" in str(app.screen.query_one(EmptyState).render())
        assert "Open the demo" in footer_keys(app)
        await pilot.press("d")
        await settle(pilot)
        assert len(during) == 1  # built once, off the event loop, while the views said so
        building, text, offered, off_loop = during[0]
        assert building and "Building the demo" in text and not offered and off_loop
        assert not app.demo_building
        assert app.namespace == "demo" and app.store_url == f"sqlite:///{demo_path}"
        assert "database demo.db" in header_text(app) and "namespace demo ▼" in header_text(app)
        assert not app.screen.has_class("-empty")
        assert app.screen.query_one("#block-rail").row_count == 13
        assert "Open the demo" not in footer_keys(app)
        await pilot.press("2")
        await settle(pilot)
        assert app.screen.query_one("#events").row_count > 0
    assert remembered_url() == f"sqlite:///{demo_path}"  # what `strata` opens from now on


async def test_the_palette_opens_the_demo_on_an_empty_store(tmp_path, config, demo_path):
    from workbench.app import Workbench

    app = Workbench(db_url=fresh_url(tmp_path, "empty.db"), config=config)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *"app: Open the demo")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.namespace == "demo" and "database demo.db" in header_text(app)


async def test_a_store_with_memory_offers_no_demo(make_app, wb_url):
    from workbench.commands import StrataCommands

    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert "Open the demo" not in footer_keys(app)
        titles = [title for title, _help, _cb in StrataCommands(app.screen)._commands()]
        assert "app: Open the demo" not in titles and "app: Database" in titles
        await pilot.press("d")
        await settle(pilot)
        assert not app.demo_building and app.store_url == wb_url and app.namespace == "demo"


@pytest.mark.sqlite_only(reason="a file at the demo's path that is not a database")
async def test_a_demo_that_cannot_be_built_leaves_the_empty_store_open(tmp_path, config, demo_path):
    from core.api import append_turn, open_store
    from workbench.app import Workbench
    from workbench.database import remembered_url

    demo_path.parent.mkdir()
    demo_path.write_text("my notes\n", encoding="utf-8")
    url = fresh_url(tmp_path, "empty.db")
    app = Workbench(db_url=url, config=config)
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors and "is not a Strata database" in errors[0].message
        assert not app.demo_building and app.namespace is None and "database empty.db" in header_text(app)
        assert "Open the demo" in footer_keys(app)
        open_store(url)  # the workbench still reads the store it had: memory added to it shows on reload
        append_turn("mine", "chat", "hello", "hi")
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.namespace == "mine"
    assert demo_path.read_text(encoding="utf-8") == "my notes\n"
    assert remembered_url() is None
