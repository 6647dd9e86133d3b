"""The workbench shows secrets masked (every load passes StrataScreen.fetch), and its header
never shows a database password."""

from __future__ import annotations

from workbench.testing import screen_text, settle

GITHUB = "ghp_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVc"
PASSWORD = "Tr0ub4dor&3"
SIZE = (140, 40)


def _add_secret_turn(url: str) -> None:
    from core.db import db
    from core.services.capture import append_turn
    from core.api import open_store

    open_store(url, recover=False)
    append_turn(
        "demo",
        "ops-chat",
        f"The quasarfeed deploy uses GITHUB_TOKEN={GITHUB} and password={PASSWORD}.",
        "Noted: the quasarfeed deploy credentials.",
    )
    db.close()


async def test_a_message_with_a_secret_is_shown_masked(make_app, wb_url):
    _add_secret_turn(wb_url)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"quasarfeed deploy", "enter")
        await settle(pilot)
        screen = app.screen
        assert screen.MODE == "search"
        raw = [r for r in screen.results if r.channel == "raw"]
        assert raw, [r.title for r in screen.results]
        shown = " ".join(f"{r.title} {r.preview}" for r in raw)
        assert GITHUB not in shown and GITHUB[:12] not in shown and PASSWORD not in shown
        assert "[REDACTED:github-token]" in shown and "[REDACTED:password]" in shown
        # the message with the secret, highlighted: its preview shows it whole (the list may cut its title)
        secret = next(r for r in raw if "GITHUB_TOKEN" in r.title)
        screen.query_one("#results").move_cursor(row=screen.results.index(secret))
        await settle(pilot)
        text = screen_text(app)
        assert GITHUB[:8] not in text and "Tr0ub4dor" not in text
        assert "[REDACTED:github-token]" in text, text


async def test_the_header_never_shows_a_database_password(make_app, wb_url):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # As a PostgreSQL store would report its URL: the subtitle keeps user and host, not the password.
        from workbench.messages import NamespacesLoaded

        app.post_message(NamespacesLoaded(tuple(app.namespaces), "postgresql://strata:Pa55w0rd-xyz@db:5432/memory"))
        await settle(pilot)
        assert app.sub_title == "postgresql://strata:***@db:5432/memory"
        assert "Pa55w0rd-xyz" not in screen_text(app)
