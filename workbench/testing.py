"""Helpers for driving the workbench headlessly (tests, `strata bench ui`, screenshots)."""

from __future__ import annotations

import asyncio
import io


async def settle(pilot, rounds: int = 20) -> None:
    """Wait until no worker runs and every posted message is handled.

    Unlike ``WorkerManager.wait_for_complete`` this does not raise when a worker was
    cancelled (a newer load of the same group replaced it), which is normal here.
    """
    app = pilot.app
    for _ in range(rounds):
        running = [w for w in app.workers if not w.is_finished]
        if running:
            await asyncio.gather(*(w.wait() for w in running), return_exceptions=True)
        await pilot.pause()
        if not any(not w.is_finished for w in app.workers):
            await pilot.pause()
            if not any(not w.is_finished for w in app.workers):
                return


def screen_text(app) -> str:
    """The current screen as plain text (for quick looks and assertions on layout)."""
    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, record=True,
                      legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()
