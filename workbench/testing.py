"""Helpers for driving the workbench headlessly (tests, `strata bench ui`, screenshots)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from rich.console import Console
from textual.widgets import DataTable, Input

from workbench.app import Workbench
from workbench.config import Config
from workbench.textual_internals import render_current_screen, table_layout_pending
from workbench.views import VIEWS, view


async def settle(pilot, rounds: int = 20) -> None:
    """Wait until no worker runs and every posted message is handled.

    Unlike ``WorkerManager.wait_for_complete`` this does not raise when a worker was
    cancelled (a newer load of the same group replaced it), which is normal here.
    """

    app = pilot.app

    def busy() -> bool:
        if any(not w.is_finished for w in app.workers):
            return True
        # A finished worker's message may still be queued (a loaded machine): a view
        # shows a loading indicator until its handler has run.
        if any(
            widget.loading or getattr(widget, "pending", False) or widget.has_class("-busy")
            for widget in app.screen.query(".loadable")
        ):
            return True
        # A DataTable sizes its columns for new rows when it is next idle.
        return any(table_layout_pending(table) for table in app.screen.query(DataTable))

    for _ in range(rounds):
        running = [w for w in app.workers if not w.is_finished]
        if running:
            await asyncio.gather(*(w.wait() for w in running), return_exceptions=True)
        await pilot.pause()
        if not busy():
            await pilot.pause()
            if not busy():
                return


def screen_text(app) -> str:
    """The current screen as plain text (for quick looks and assertions on layout)."""

    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), force_terminal=True, record=True, legacy_windows=False
    )
    console.print(render_current_screen(app))
    return console.export_text()


# Facts pasted into the imports view of the demo: one new, one already known, one a person must
# decide (Maya prefers the aisle seat).
DEMO_PASTE = (
    "- Maya adopted a grey cat named Miso in March 2026.\n- The Atlas launch moved to Tuesday, March 17.\n"
    "- Maya prefers window seats on flights.\n"
)

# The keys that bring a view of the demo into a telling state for the docs, after the key that
# shows it (the graph shot selects Maya Brennan, whose facts have a history); "!preview" pastes a
# list of facts to import (and the imports shot goes to the item waiting for a decision).
SCREENSHOT_KEYS = {
    "graph": ["j"] * 16,
    "traces": ["j", "j", "j"],
    "imports": ["!preview", "right_square_bracket"],
    "search": [*"passport", "enter"],
}


def keys_to_show(view_id: str) -> list[str]:
    """The keys that show a view from the start screen (none for the start screen itself)."""

    return [] if view_id == Config().start_screen else [view(view_id).key]


def _screenshot_steps() -> dict[str, list[str]]:

    steps = {v.id: [*keys_to_show(v.id), *SCREENSHOT_KEYS.get(v.id, ())] for v in VIEWS}
    steps["help"] = [VIEWS[0].key, "question_mark"]
    return steps


SCREENSHOT_STEPS = _screenshot_steps()


async def save_screenshots(url: str, out_dir, *, theme: str = "strata-dark", size: tuple[int, int] = (120, 36)) -> list:
    """Write an SVG screenshot of every view (for docs/img); returns the files written."""

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, keys in SCREENSHOT_STEPS.items():
        app = Workbench(db_url=url, config=Config(theme=theme, path=None))
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            for key in keys:
                if key == "!preview":  # a pasted list of facts, previewed against the demo memory
                    app.screen.query_one("#i-format").value = "text"
                    await settle(pilot)
                    app.screen.start_preview(text=DEMO_PASTE)
                else:
                    await pilot.press(key)
                await settle(pilot)
            for field in app.screen.query(Input):
                field.cursor_blink = False
            await settle(pilot)
            path = out / f"workbench-{name}{'' if theme == 'strata-dark' else '-' + theme}.svg"
            path.write_text(app.export_screenshot(title=f"Strata workbench: {name}"), encoding="utf-8")
            written.append(path)
    return written
