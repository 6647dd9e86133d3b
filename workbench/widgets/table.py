"""A DataTable for paged lists: the shared list keys, and a request for the next page near the end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar

from rich.text import Text
from textual.content import Content
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import DataTable, Static

from workbench.textual_internals import PlainTextCells
from workbench.widgets.lists import MIN_FLEX, NavTable

T = TypeVar("T")

BUSY_DELAY = 0.25
"""Seconds a load may take before its widget shows it (most loads are done sooner, and a
spinner or dimmed rows would only cost the frames that draw and undraw them)."""


def start_busy(widget: Widget, *, dim: bool = False) -> None:
    """``widget``'s content is being loaded: after ``BUSY_DELAY`` it shows a spinner (or,
    with ``dim``, its current rows dimmed) until ``stop_busy``. ``widget.pending`` is True
    meanwhile (tests wait on it)."""
    widget.pending = True  # type: ignore[attr-defined]
    if getattr(widget, "_busy_timer", None) is None:
        widget._busy_timer = widget.set_timer(BUSY_DELAY, lambda: _show_busy(widget, dim))  # type: ignore[attr-defined]


def _show_busy(widget: Widget, dim: bool) -> None:
    widget._busy_timer = None  # type: ignore[attr-defined]
    if getattr(widget, "pending", False):
        if dim:
            widget.add_class("-busy")
        else:
            widget.loading = True


def stop_busy(widget: Widget) -> None:
    """The content is there (or the load failed)."""
    widget.pending = False  # type: ignore[attr-defined]
    timer = getattr(widget, "_busy_timer", None)
    if timer is not None:
        timer.stop()
        widget._busy_timer = None  # type: ignore[attr-defined]
    widget.remove_class("-busy")
    widget.loading = False


OPEN_AT_ROWS = 1000
"""How many rows a paged list reads from its start to open at one item (another view's link).
Past that it opens at the item, and the rows above it are not listed."""


def read_through(
    read: Callable[[Any], tuple[Sequence[T], Any]], wanted: Callable[[T], bool], limit: int = OPEN_AT_ROWS
) -> tuple[list[T], Any, bool]:
    """Read a paged list from its start until a page holds a ``wanted`` row, the list ends or
    ``limit`` rows are read: (rows, the cursor after them or None at the end, found).
    ``read(cursor)`` returns one page and the cursor after it (None when no more); None reads
    the first page. Runs with the service calls, on the database thread."""
    page, cursor = read(None)
    rows = list(page)
    found = any(wanted(row) for row in rows)
    while not found and cursor is not None and len(rows) < limit:
        page, cursor = read(cursor)
        rows += page
        found = any(wanted(row) for row in page)
    return rows, cursor, found


class PagedTable(PlainTextCells, NavTable, Generic[T]):
    """Rows are appended a page at a time; ``items`` keeps the DTO behind each row.

    When the cursor comes within ``PREFETCH`` rows of the end and ``has_more`` is set,
    the table posts ``NeedMore`` once; the screen loads the next page in a worker and
    calls ``append_page``.
    """

    PREFETCH = 10
    selected: var[Any] = var(None, always_update=True, init=False)
    """The item under the cursor (None when the list is empty), set as it moves or the rows change."""
    DEFAULT_CSS = """
    PagedTable.-busy {
        text-opacity: 60%;
    }
    """

    @dataclass
    class NeedMore(Message):
        """The cursor is near the last loaded row and more rows exist."""

        table: "PagedTable"

        @property
        def control(self) -> "PagedTable":
            return self.table

    def __init__(
        self, *, id: str | None = None, classes: str | None = None, flex: str | None = None, flex_min: int = MIN_FLEX
    ) -> None:
        super().__init__(id=id, classes=classes, flex=flex, flex_min=flex_min)
        self.items: list[T] = []
        self.has_more = False
        self.pending = False
        self._busy_timer = None
        self._asked = False
        self._focus_when_loaded = False

    def start_loading(self) -> None:
        """Rows are coming: if they take a while, a spinner when empty, dimmed rows otherwise
        (a loading widget cannot keep focus, so a table with rows keeps it)."""
        start_busy(self, dim=bool(self.items))

    def stop_loading(self) -> None:
        stop_busy(self)
        if self._focus_when_loaded:
            self._focus_when_loaded = False
            self.focus()

    def request_focus(self) -> None:
        """Focus now, or as soon as the running load finishes."""
        if self.loading:
            self._focus_when_loaded = True
        else:
            self.focus()

    def reset(self) -> None:
        """Drop every row (keeps the columns)."""
        self.clear()
        self.items = []
        self.has_more = False
        self._asked = False
        self.selected = None

    def append_page(self, items: Sequence[T], rows: Sequence[Sequence[Any]], has_more: bool) -> None:
        for item, row in zip(items, rows):
            # Plain text, never markup: a title with brackets shows as typed.
            self.add_row(
                *[Text(cell, no_wrap=True, end="") if isinstance(cell, str) else cell for cell in row],
                key=str(len(self.items)),
            )
            self.items.append(item)
        self.has_more = has_more
        self._asked = False
        self.selected = self.current

    @property
    def current(self) -> T | None:
        """The item under the cursor, if any."""
        if not self.items or self.cursor_row < 0 or self.cursor_row >= len(self.items):
            return None
        return self.items[self.cursor_row]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.selected = self.current
        if self.has_more and not self._asked and event.cursor_row >= len(self.items) - self.PREFETCH:
            self._asked = True
            self.post_message(self.NeedMore(self))


class RowLine(Static):
    """One line under a list about its selected row: what the columns that do not fit would show
    (``describe(item)``; on a narrow terminal the list keeps its most important columns)."""

    DEFAULT_CSS = """
    RowLine {
        height: 1;
        padding: 0 1;
    }
    """

    def __init__(
        self, table_id: str, describe: Callable[[Any], str | Content], *, id: str | None = None, classes: str = ""
    ) -> None:
        super().__init__("", id=id, classes=classes, markup=False)
        self.table_id = table_id
        self.describe = describe

    def on_mount(self) -> None:
        table = self.screen.query_one(f"#{self.table_id}", PagedTable)
        self.watch(table, "selected", self._selected)

    def _selected(self, item: Any) -> None:
        self.update("" if item is None else self.describe(item))
