"""The app header: brand, one tab per view (clickable) and the namespace switcher."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, Select

from workbench.messages import NamespaceChanged

# (mode, label, default key); the app binds the keys with ids ``app.view-<mode>``.
VIEWS: tuple[tuple[str, str, str], ...] = (
    ("blocks", "Blocks", "1"),
    ("timeline", "Timeline", "2"),
    ("graph", "Graph", "3"),
    ("traces", "Traces", "4"),
    ("imports", "Imports", "5"),
    ("jobs", "Jobs", "6"),
    ("search", "Search", "/"),
)


class ModeTab(Label):
    """A view's tab in the header; clicking it switches to that view."""

    def __init__(self, mode: str, label: str, key: str, active: bool) -> None:
        super().__init__(f"{key} {label}", classes="mode-tab" + (" -active" if active else ""))
        self.mode = mode
        self.tooltip = f"{label} (key {key})"

    def on_click(self) -> None:
        self.app.switch_mode(self.mode)


class AppHeader(Horizontal):
    """Brand, view tabs and the namespace switcher; the same on every screen."""

    DEFAULT_CSS = """
    AppHeader {
        height: 1;
        dock: top;
    }
    """

    def __init__(self, mode: str) -> None:
        super().__init__(id="app-header")
        self.mode = mode

    def compose(self) -> ComposeResult:
        yield Label("◆ Strata", id="brand")
        for mode, label, key in VIEWS:
            yield ModeTab(mode, label, key, mode == self.mode)
        yield Label("", id="header-spacer")
        yield Label("namespace", id="namespace-label")
        yield Select([], prompt="(none)", allow_blank=True, compact=True, id="namespace-select",
                     tooltip="Switch namespace (key n)")

    def on_mount(self) -> None:
        self.watch(self.app, "namespaces", self._sync_options, init=True)
        self.watch(self.app, "namespace", self._sync_value, init=True)

    def _sync_options(self, names: tuple[str, ...]) -> None:
        select = self.query_one("#namespace-select", Select)
        select.set_options([(name, name) for name in names])
        self._sync_value(getattr(self.app, "namespace", None))

    def _sync_value(self, namespace: str | None) -> None:
        select = self.query_one("#namespace-select", Select)
        names = getattr(self.app, "namespaces", ())
        wanted = namespace if namespace in names else Select.NULL
        if select.value != wanted:
            with select.prevent(Select.Changed):
                select.value = wanted

    @on(Select.Changed, "#namespace-select")
    def _picked(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, str) and event.value != getattr(self.app, "namespace", None):
            self.post_message(NamespaceChanged(event.value))

    def open_switcher(self) -> None:
        select = self.query_one("#namespace-select", Select)
        select.focus()
        select.expanded = True
