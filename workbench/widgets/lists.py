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

from textual import events
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, OptionList


def move_bindings(down: str, up: str, first: str, last: str) -> list[Binding]:
    """j/k/g/G bound to a widget's own down, up, first and last actions, under the shared ids."""
    return [
        Binding("j", down, "Down", show=False, id="table.down", tooltip="The next row (a pane scrolls down)"),
        Binding("k", up, "Up", show=False, id="table.up", tooltip="The previous row (a pane scrolls up)"),
        Binding("g", first, "First", show=False, id="table.first", tooltip="The first row (a pane's top)"),
        Binding("G", last, "Last", show=False, id="table.last", tooltip="The last row loaded (a pane's end)"),
    ]


OPEN_TOOLTIP = "Open the highlighted row: its detail, or the item in its own view"


class NavTable(DataTable):
    """A row table with the shared list keys (arrows, page keys and home/end work too)."""

    BINDINGS = [
        *move_bindings("cursor_down", "cursor_up", "scroll_top", "scroll_bottom"),
        Binding("enter", "select_cursor", "Open", show=False, id="table.open", tooltip=OPEN_TOOLTIP),
    ]

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)


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
