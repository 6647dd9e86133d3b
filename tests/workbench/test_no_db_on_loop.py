"""The event loop never touches the database: every query runs in a thread worker."""

from __future__ import annotations

import threading

import peewee

from workbench.testing import settle


async def test_no_database_call_runs_on_the_event_loop_thread(make_app, monkeypatch):
    seen: list[int] = []
    for name in ("cursor", "connect", "execute_sql"):
        original = getattr(peewee.SqliteDatabase, name)

        def spy(self, *args, __original=original, **kwargs):
            seen.append(threading.get_ident())
            return __original(self, *args, **kwargs)

        monkeypatch.setattr(peewee.SqliteDatabase, name, spy)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        loop_thread = threading.get_ident()
        await settle(pilot)
        for keys in (["e"], ["2"], ["f", "a", "enter"], ["b"], ["3", "e", "enter"], ["4", "j"], ["6", "r"],
                     ["slash", *"ivy", "enter"], ["5"]):
            await pilot.press(*keys)
            await settle(pilot)
    assert seen, "the spy saw no database call at all"
    assert loop_thread not in seen
