"""Every use of Textual's private API in the workbench, behind small named functions.

Checked against Textual 8.2.8 (``TEXTUAL_VERSION``; pyproject pins ``textual==8.2.8``). The rest
of the workbench calls these functions and never touches a Textual name that starts with ``_``,
so a Textual upgrade means reading this one module against the new version's source.
``tests/workbench/test_textual_internals.py`` fails until ``TEXTUAL_VERSION`` names the
installed version, and checks that every private name listed in ``RELIED_ON`` still exists.

Why the workbench reaches inside at all (each measured by `strata bench ui`):

- Views are built ahead in the background (``mount_mode_screen``): the first visit of a view
  is then a switch rather than a compose. Textual only builds a mode's screen when it becomes
  current (``App._init_mode``).
- A screen shown again skips Textual's restyle of all its widgets when nothing its styles
  depend on changed (``style_generation``, ``mark_styled``, ``mark_unstyled``).
- The first theme is applied before any CSS is parsed (``apply_theme_before_css``): setting
  ``App.theme`` on a running app parses and applies every rule again.
- Paged tables draw plain one-line cells directly (``PlainTextCells``) instead of through
  DataTable's Rich pipeline.
- A table's flexible column (a title) is resized to the room its terminal leaves
  (``set_column_width``): DataTable fixes a column's width when it is added.
- The app finishes mounting a view being built ahead before Textual closes the screens
  (``ShutdownHook``).
- Quitting `strata ui` stops reading keys without waiting for Textual's input thread
  (``stop_input_now``): Textual waits up to 0.2 s for it on every exit.

Public behaviour the workbench also relies on, listed here so an upgrade checks it too: Textual
calls a message handler in every class of the MRO that defines one, subclass first (so
``StrataScreen.on_screen_resume`` runs before ``Screen._on_screen_resume`` and may clear
``ScreenResume.refresh_styles``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Awaitable

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

if TYPE_CHECKING:
    from textual.app import App
    from textual.geometry import Size
    from textual.screen import Screen
    from textual.widgets import DataTable, Footer, Input

TEXTUAL_VERSION = "8.2.8"
"""The Textual version every function here was read against."""

RELIED_ON: dict[str, tuple[str, ...]] = {
    "textual.app:App": (
        "_screen_stacks",
        "_modes",
        "_get_screen",
        "_load_screen_css",
        "_css_update_count",
        "_refresh_truecolor_filter",
        "_background_screens",
        "_shutdown",
        "_init_mode",
        "_watch_theme",
        "_driver",
    ),
    "textual.drivers.linux_driver:LinuxDriver": ("_key_thread",),
    "textual.screen:Screen": ("_css_update_count", "_refresh_layout", "_compositor", "_on_screen_resume"),
    "textual.widgets:DataTable": (
        "_render_cell",
        "_row_locations",
        "_column_locations",
        "_get_row_renderables",
        "_cell_render_cache",
        "_get_styles_to_render_cell",
        "_show_hover_cursor",
        "_update_count",
        "_pseudo_class_state",
        "_require_update_dimensions",
        "_updated_cells",
        "_clear_caches",
    ),
    "textual.widgets:Footer": ("_bindings_ready",),
    "textual.widgets:Input": ("_suggestion",),
}
"""The private names used below, by the class that has them (on an instance: some are set in
``__init__``)."""


# ------------------------------------------------------------------ styles


def style_generation(app: App) -> int:
    """How many times the app's stylesheet has been applied (a theme change bumps it); a screen
    whose own count matches is styled by the current stylesheet."""
    return app._css_update_count


def mark_styled(screen: Screen, generation: int) -> None:
    """Tell Textual ``screen`` is styled for stylesheet ``generation``: showing it then skips the
    whole-app CSS refresh Textual runs for a screen shown the first time."""
    screen._css_update_count = generation


def mark_unstyled(screen: Screen) -> None:
    """Have Textual restyle ``screen`` when it is next shown."""
    screen._css_update_count = -1


def apply_theme_before_css(app: App, name: str) -> None:
    """Make ``name`` the app's theme before its stylesheet is first parsed: what
    ``App._watch_theme`` does, minus refreshing the CSS (nothing is parsed or styled yet)."""
    app.set_reactive(type(app).theme, name)
    dark = app.current_theme.dark
    classes = {cls: False for cls in app.classes if cls.startswith("-theme-")}
    classes.update({f"-theme-{name}": True, "-dark-mode": dark, "-light-mode": not dark})
    app.update_classes(classes, update=False)
    app._refresh_truecolor_filter(app.ansi_theme)
    app.stylesheet.set_variables(app.get_css_variables())


# ------------------------------------------------------------------ modes built ahead


def built_modes(app: App) -> dict[str, list[Screen]]:
    """The screen stack of every mode whose screen exists (current or not)."""
    return app._screen_stacks


def mode_is_built(app: App, mode: str) -> bool:
    return mode in app._screen_stacks


def mode_is_known(app: App, mode: str) -> bool:
    return mode in app._modes


def mount_mode_screen(app: App, mode: str) -> tuple[Screen, Awaitable[Any]]:
    """Create and mount the screen of ``mode`` without making the mode current: what
    ``App._init_mode`` does, minus the switch (and minus its CSS refresh: the screen's widgets
    are styled by the current stylesheet as they mount). Returns the screen and an awaitable
    that is done once it is mounted."""
    screen = app._modes[mode]()
    app._screen_stacks[mode] = [screen]
    screen, mounted = app._get_screen(screen)
    app._load_screen_css(screen)
    return screen, mounted


def lay_out(screen: Screen, size: Size) -> None:
    """Lay ``screen`` out at ``size`` now (a screen not shown is laid out when it is)."""
    screen._refresh_layout(size)


class ShutdownHook:
    """Mixin for an ``App`` subclass (listed before ``App``): awaits ``before_shutdown`` before
    Textual disables input and closes the screens. Textual has no public hook that runs
    before the screens close (``on_unmount`` runs after)."""

    async def before_shutdown(self) -> None:
        """Hook: work to finish before the screens are closed."""

    async def _shutdown(self) -> None:
        await self.before_shutdown()
        await super()._shutdown()  # type: ignore[misc]


def stop_input_now(app: App) -> bool:
    """Stop reading keys now (mouse reporting off, SIGWINCH back to its default, keys typed ahead
    dropped: what the driver's ``disable_input`` does) without waiting for the input thread, which
    ends by itself within 0.2 s; True when done. Textual waits for that thread when the app leaves
    the terminal: it sees the request within 0.1 s and then sleeps 0.1 s in a last ``select`` on
    no file. For an app whose process ends as soon as it has shut down (``os._exit``): the thread is
    not a daemon, so the interpreter's own exit would wait for it. Textual's later
    ``disable_input`` then finds input already disabled and does nothing. Only on the main thread
    (signals), only with a driver that has an input thread (the Linux driver)."""
    driver = app._driver
    thread = getattr(driver, "_key_thread", None)
    stopped = getattr(driver, "exit_event", None)
    if thread is None or stopped is None or threading.current_thread() is not threading.main_thread():
        return False
    driver._key_thread = None  # what disable_input would join
    try:
        driver.disable_input()
    finally:
        driver._key_thread = thread
        stopped.set()  # disable_input clears it again: the thread must still see it
    return True


# ------------------------------------------------------------------ widgets


def footer_keys_composed(footer: Footer) -> bool:
    """True once ``footer`` has composed its keys (until then it must rebuild)."""
    return footer._bindings_ready


def input_suggestion(field: Input) -> str:
    """The completion an Input shows after its cursor ('' when none)."""
    return field._suggestion


def set_column_width(table: DataTable, key: str, width: int | None) -> bool:
    """Make a column of ``table`` ``width`` cells wide (padding aside), or as wide as its content
    with None; True when that changed. What ``DataTable.add_column(width=…)`` sets, after the fact:
    the rendered cells are dropped and the table measures itself again when idle."""
    column = table.columns[key]  # type: ignore[index]
    auto = width is None
    if column.auto_width == auto and (auto or column.width == width):
        return False
    column.auto_width = auto
    if width is not None:
        column.width = width
    table._clear_caches()
    table._require_update_dimensions = True
    table.check_idle()
    table.refresh()
    return True


class PlainTextCells:
    """Mixin for a ``DataTable`` subclass (listed before ``DataTable``): a one-line cell of
    unstyled text is drawn directly, which is what DataTable's Rich pipeline (padding,
    styling, line rendering) makes of it, at a fraction of the cost (a table's cells are
    most of a filter's frame). Any other cell goes through DataTable."""

    def _render_cell(
        self: Any,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ):
        if row_index < 0 or column_index < 0 or row_index < self.fixed_rows or column_index < self.fixed_columns:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        row = self.rows.get(row_key)
        cell = self._get_row_renderables(row_index)[1][column_index] if row is not None else None
        if (
            row is None
            or row.height != 1
            or not isinstance(cell, Text)
            or cell.spans
            or cell.style
            or "\n" in cell.plain
        ):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        key = (
            row_key,
            self._column_locations.get_key(column_index),
            base_style,
            cursor,
            hover,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        lines = self._cell_render_cache.get(key)
        if lines is None:
            component_style, post_style = self._get_styles_to_render_cell(
                False,
                False,
                False,
                hover,
                cursor,
                self.show_cursor,
                self._show_hover_cursor,
                self.cursor_foreground_priority == "css",
                self.cursor_background_priority == "css",
            )
            style = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component_style
            pad = self.cell_padding
            inner = max(0, width - 2 * pad)
            plain = cell.plain
            if cell_len(plain) > inner > 0:  # a flexible column narrower than its text
                plain = set_cell_size(plain, inner - 1) + "…"
            text = " " * pad + set_cell_size(plain, inner) + " " * pad
            lines = [[Segment(set_cell_size(text, width), style + post_style)]]
            self._cell_render_cache[key] = lines
        return lines


# ------------------------------------------------------------------ headless driving (tests, screenshots)


def table_layout_pending(table: DataTable) -> bool:
    """True while a DataTable still has to size its columns for new rows (it does when idle)."""
    return bool(table._require_update_dimensions or table._updated_cells)


def render_current_screen(app: App):
    """The current screen's full frame, drawn over the screens under it (for plain-text looks)."""
    return app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
