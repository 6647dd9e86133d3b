"""The event loop never touches the database: every query runs in a thread worker."""

from __future__ import annotations

import threading

import peewee

from workbench.testing import settle


async def test_no_database_call_runs_on_the_event_loop_thread(make_app, monkeypatch):
    seen: list[int] = []
    for engine in (peewee.SqliteDatabase, peewee.PostgresqlDatabase):
        for name in ("cursor", "connect", "execute_sql"):
            original = getattr(engine, name)

            def spy(self, *args, __original=original, **kwargs):
                seen.append(threading.get_ident())
                return __original(self, *args, **kwargs)

            monkeypatch.setattr(engine, name, spy)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        loop_thread = threading.get_ident()
        await settle(pilot)
        for keys in (
            ["e"],
            ["2"],
            ["f", "a", "enter"],
            ["b"],
            ["3", "e", "enter"],
            ["4", "j"],
            ["6", "r"],
            ["slash", *"ivy", "enter"],
            ["5"],
        ):
            await pilot.press(*keys)
            await settle(pilot)
    assert seen, "the spy saw no database call at all"
    assert loop_thread not in seen


def test_the_database_thread_serves_reads_by_priority_and_drops_unwanted_ones(wb_url):
    import time

    import pytest

    from workbench.backend import Backend

    backend = Backend(wb_url)
    gate, order = threading.Event(), []
    backend.submit(lambda: gate.wait(10) and None, 1)  # holds the thread
    low = backend.submit(lambda: order.append("aggregate"), 2)
    high = backend.submit(lambda: order.append("list"), 0)
    unwanted = backend.submit(lambda: order.append("unwanted"), 0)
    backend.interrupt(unwanted)  # not started yet: never runs
    gate.set()
    low.result(10), high.result(10)
    assert order == ["list", "aggregate"] and unwanted.cancelled()

    from core.db import db

    endless = backend.submit(
        lambda: db.execute_sql(
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
        ).fetchone()
    )
    for _ in range(1000):  # until it runs
        if backend._running is not None:
            break
        time.sleep(0.01)
    backend.interrupt(endless)
    with pytest.raises(Exception, match="interrupt|cancel"):  # SQLite's words, PostgreSQL's
        endless.result(10)
    assert backend.submit(lambda: len(db.execute_sql("SELECT 1").fetchall())).result(10) == 1  # still serving
    backend.close()
