"""The keys every list, table and detail pane of the workbench shares.

``j``/``k`` move down and up, ``g``/``G`` go to the first and the last row, ``enter`` goes
deeper (the screen decides what that means: it handles the table's ``RowSelected`` or the
list's ``OptionSelected``, as for a click on the highlighted row). ``escape`` (back) is a
binding of each view, since where it goes depends on the view.

The bindings sit on the widgets, never on the screen: a text field keeps every key it is
typed. Tables, option lists and panes share one id per move (``table.down`` …), so a keymap
that remaps a move remaps it everywhere.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, OptionList
from textual.widgets.data_table import ColumnKey, RowKey

from workbench.textual_internals import set_column_width


def move_bindings(down: str, up: str, first: str, last: str) -> list[Binding]:
    """j/k/g/G bound to a widget's own down, up, first and last actions, under the shared ids."""
    return [
        Binding("j", down, "Down", show=False, id="table.down", tooltip="The next row (a pane scrolls down)"),
        Binding("k", up, "Up", show=False, id="table.up", tooltip="The previous row (a pane scrolls up)"),
        Binding("g", first, "First", show=False, id="table.first", tooltip="The first row (a pane's top)"),
        Binding("G", last, "Last", show=False, id="table.last", tooltip="The last row loaded (a pane's end)"),
    ]


OPEN_TOOLTIP = "Open the highlighted row: its detail, or the item in its own view"


MIN_FLEX = 12
"""The fewest cells a flexible column keeps (see ``NavTable``)."""


def _cell_width(value: object) -> int:
    return cell_len(value.plain if isinstance(value, Text) else str(value))


class NavTable(DataTable):
    """A row table with the shared list keys (arrows, page keys and home/end work too).

    Columns come in order of importance. With ``flex`` (a column's label: the long free text, such
    as a title), no short column is ever cut by the table's right edge: the flexible column is cut
    to the room the other columns leave, as long as it keeps ``flex_min`` cells (or its whole
    text); short of that, the columns after it give way from the last, starting off-screen (a
    scroll away) where the flexible column ends. On a narrow table the flexible column is cut
    instead (at ``MIN_FLEX`` cells at least).
    """

    BINDINGS = [
        *move_bindings("cursor_down", "cursor_up", "scroll_top", "scroll_bottom"),
        Binding("enter", "select_cursor", "Open", show=False, id="table.open", tooltip=OPEN_TOOLTIP),
    ]

    def __init__(
        self, *, id: str | None = None, classes: str | None = None, flex: str | None = None, flex_min: int = MIN_FLEX
    ) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self.flex = flex
        """The label of the column that takes the room left (None: every column as wide as its content)."""
        self.flex_min = flex_min
        """The cells the flexible column keeps before the columns after it give way."""
        self._natural: dict[ColumnKey, int] = {}
        self._labels: dict[ColumnKey, int] = {}
        self._fit_due = False

    # Column widths are followed as rows come (DataTable measures them only when idle).

    def add_column(
        self, label: Any, *, width: int | None = None, key: str | None = None, default: Any = None
    ) -> ColumnKey:
        column_key = super().add_column(label, width=width, key=key or str(label), default=default)
        self._labels[column_key] = self._natural[column_key] = _cell_width(label)
        self._schedule_fit()
        return column_key

    def add_row(self, *cells: Any, height: int | None = 1, key: str | None = None, label: Any = None) -> RowKey:
        if self.flex is None:
            return super().add_row(*cells, height=height, key=key, label=label)
        natural = self._natural
        shown = []
        for column_key, cell in zip(self.columns, cells):
            width = _cell_width(cell)
            if width > natural[column_key]:
                natural[column_key] = width
                self._schedule_fit()
            if column_key == self.flex and isinstance(cell, str):
                cell = Text(cell, no_wrap=True, overflow="ellipsis", end="")  # cut with a "…"
            shown.append(cell)
        return super().add_row(*shown, height=height, key=key, label=label)

    def clear(self, columns: bool = False):
        super().clear(columns)
        if columns:
            self._natural.clear()
            self._labels.clear()
        else:
            # Columns fit the rows to come, not the widest row ever shown (DataTable keeps that).
            self._natural.update(self._labels)
            for key, column in self.columns.items():
                if column.auto_width:
                    column.content_width = self._labels.get(key, column.content_width)
        self._schedule_fit()
        return self

    def on_resize(self, event: events.Resize) -> None:
        self._schedule_fit()

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        self._schedule_fit()  # the room changed, not the size

    def _schedule_fit(self) -> None:
        if self.flex is not None and not self._fit_due and self.is_attached:
            self._fit_due = True
            self.call_later(self._fit)

    def _fit(self) -> None:
        self._fit_due = False
        if self.flex not in self.columns:
            return
        room = self.scrollable_content_region.width
        if room <= 0:
            return
        pad = 2 * self.cell_padding
        keys = list(self.columns)
        widths = [self._natural.get(key, 0) + pad for key in keys]
        at = keys.index(ColumnKey(self.flex))
        before, natural, after = sum(widths[:at]), widths[at], widths[at + 1 :]
        wanted = min(natural, max(self.flex_min, MIN_FLEX) + pad)
        kept = len(after)
        while kept and room - before - sum(after[:kept]) < wanted:
            kept -= 1  # the last column still shown gives way
        left = room - before - sum(after[:kept])
        if kept == len(after) and left >= natural:
            fitted = None  # everything fits: as wide as its content
        else:
            fitted = max(left, MIN_FLEX + pad) - pad
        set_column_width(self, self.flex, fitted)


class NavOptionList(OptionList):
    """An option list with the shared list keys. Focusing it highlights its first option when
    none is, so ``enter`` always has something to open."""

    BINDINGS = [
        *move_bindings("cursor_down", "cursor_up", "first", "last"),
        Binding("enter", "select", "Open", show=False, id="table.open", tooltip=OPEN_TOOLTIP),
    ]

    def on_focus(self, event: events.Focus) -> None:
        if self.highlighted is None and self.option_count:
            self.action_first()


class TextPane(VerticalScroll):
    """A scrolling detail pane: the list keys scroll it."""

    BINDINGS = move_bindings("scroll_down", "scroll_up", "scroll_home", "scroll_end")


LIST_WIDGETS: tuple[type, ...] = (NavTable, NavOptionList, TextPane)
"""The widgets whose keys the help lists under "lists"."""
