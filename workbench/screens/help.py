"""The help screen: every key of the current view, what it does and its keymap id."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Label, Static

from workbench.widgets.lists import LIST_WIDGETS, NavTable

NOTES = (
    "In every list and table: [b]j[/b]/[b]k[/b] move, [b]g[/b]/[b]G[/b] go to the first and last row, "
    "[b]enter[/b] goes deeper (into the detail, or the item in its own view), [b]esc[/b] goes back.\n"
    "Remap any key in config.yaml under [b]keymap[/b] with the id shown here "
    "(for example [b]app.quit: ctrl+q[/b]); `strata ui` reads it at start.\n"
    "Mouse: click tabs, rows and the namespace switcher. Drag to select text (copied to the clipboard); "
    "hold shift (option on macOS) while dragging for the terminal's own selection. "
    "[b]ctrl+p[/b] opens the command palette."
)


class HelpScreen(ModalScreen[None]):
    """Lists the bindings of a view, the app and its tables, with the keys in effect."""

    BINDINGS = [
        Binding("escape,q,question_mark", "close", "Close", id="help.close", tooltip="Back to the view"),
    ]

    def __init__(self, title: str, rows: list[tuple[str, str, str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.rows = rows

    @classmethod
    def for_screen(cls, screen: Screen) -> "HelpScreen":

        app = screen.app
        keymap = dict(getattr(getattr(app, "config", None), "keymap", {}) or {})
        view = type(screen).__name__.replace("Screen", "") or "view"
        sources: list[tuple[str, type]] = [
            (view, type(screen)),
            *((view, widget) for widget in getattr(type(screen), "KEYMAP_WIDGETS", ())),
            *(("lists", widget) for widget in LIST_WIDGETS),
            ("app", type(app)),
        ]
        rows: list[tuple[str, str, str, str]] = []
        seen: set[str] = set()
        for where, source in sources:
            for binding in getattr(source, "BINDINGS", []):
                if not isinstance(binding, Binding) or not binding.id or binding.id in seen:
                    continue
                seen.add(binding.id)
                keys = keymap.get(binding.id, binding.key)
                shown = ", ".join(_display(k) for k in keys.split(","))
                rows.append((shown, binding.description or binding.action, binding.id, where))
        title = getattr(screen, "TITLE", None) or type(screen).__name__
        return cls(f"Keys: {title}", rows)

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog", classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield NavTable(id="help-table")
            yield Static(NOTES, id="help-notes")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("key", "does", "id (for keymap)", "where")
        for row in self.rows:
            table.add_row(*row)
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)


def _display(key: str) -> str:
    names = {
        "question_mark": "?",
        "slash": "/",
        "escape": "esc",
        "enter": "enter",
        "left_square_bracket": "[",
        "right_square_bracket": "]",
    }
    return names.get(key.strip(), key.strip())
