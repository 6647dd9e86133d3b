"""The app header: brand, one tab per view (clickable) and the namespace switcher.

Every view has its own header, so it is one widget drawing one line (a row of labels and
a Select cost a quarter of a view's widgets, composed and styled with each view). The
tabs and the namespace are clickable; the namespace opens a small picker (also ``n``).
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.style import Style
from textual.widget import Widget
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from workbench.messages import NamespaceChanged
from workbench.views import VIEWS

NAMESPACE_WIDTH = 24  # cells for the namespace name and its ▼


class AppHeader(Widget):
    """Brand, view tabs and the namespace switcher; the same on every screen."""

    COMPONENT_CLASSES = {
        "app-header--brand",
        "app-header--tab",
        "app-header--active",
        "app-header--hover",
        "app-header--label",
        "app-header--namespace",
        "app-header--arrow",
    }
    DEFAULT_CSS = """
    AppHeader {
        height: 1;
        dock: top;
    }
    """

    def __init__(self, mode: str) -> None:
        super().__init__(id="app-header")
        self.mode = mode
        self.auto_links = False  # the tabs have their own styles (and hover) in the TCSS
        self._hover: str | None = None
        self._spans: list[tuple[int, int, str]] = []  # (start, end, action) of the clickable parts

    def on_mount(self) -> None:
        self.watch(self.app, "namespace", self._namespace_changed, init=False)

    def _namespace_changed(self, namespace: str | None) -> None:
        self.refresh()

    def render(self) -> Content:
        parts: list[Content] = []
        spans: list[tuple[int, int, str]] = []
        at = 0

        def add(text: str, component: str, action: str | None = None) -> None:
            nonlocal at
            if (
                action is not None
                and action == self._hover
                and component in ("app-header--tab", "app-header--namespace")
            ):
                component = "app-header--hover"
            content = Content(text).stylize(self.get_visual_style(component))
            if action is not None:
                content = content.stylize(Style.from_meta({"@click": action}))
                spans.append((at, at + content.cell_length, action))
            parts.append(content)
            at += content.cell_length

        add(" ◆ Strata ", "app-header--brand")
        for view in VIEWS:
            add(
                f" {view.key} {view.title} ",
                "app-header--active" if view.id == self.mode else "app-header--tab",
                f"app.view('{view.id}')",
            )
        name = getattr(self.app, "namespace", None) or "(none)"
        if len(name) > NAMESPACE_WIDTH - 3:
            name = name[: NAMESPACE_WIDTH - 4] + "…"
        label = " namespace "
        gap = max(1, self.size.width - at - len(label) - NAMESPACE_WIDTH)
        add(" " * gap, "app-header--tab")
        add(label, "app-header--label")
        add(name.ljust(NAMESPACE_WIDTH - 2), "app-header--namespace", "app.pick_namespace")
        add("▼ ", "app-header--arrow", "app.pick_namespace")
        self._spans = spans
        return Content("").join(parts)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        hover = next((action for start, end, action in self._spans if start <= event.x < end), None)
        if hover != self._hover:
            self._hover = hover
            self.refresh()

    def on_leave(self) -> None:
        if self._hover is not None:
            self._hover = None
            self.refresh()

    def open_switcher(self) -> None:
        """Open the namespace picker under the header."""
        names = tuple(getattr(self.app, "namespaces", ()))
        if not names:
            self.app.notify(
                "This database has no namespace yet (strata demo builds one)", severity="warning", timeout=4
            )
            return
        current = getattr(self.app, "namespace", None)

        def picked(name: str | None) -> None:
            if name is not None and name != getattr(self.app, "namespace", None):
                self.post_message(NamespaceChanged(name))

        self.app.push_screen(NamespacePicker(names, current), picked)


class NamespacePicker(ModalScreen[str | None]):
    """The namespaces of the store; enter switches, escape leaves things as they are."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="namespace.cancel", tooltip="Keep this namespace")]

    def __init__(self, names: tuple[str, ...], current: str | None) -> None:
        super().__init__()
        self.names = names
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="namespace-picker"):
            yield Label("Namespace", classes="pane-title")
            yield OptionList(*[Option(name, id=name) for name in self.names], id="namespace-options")

    def on_mount(self) -> None:
        options = self.query_one("#namespace-options", OptionList)
        if self.current in self.names:
            options.highlighted = self.names.index(self.current)
        options.focus()

    @on(OptionList.OptionSelected, "#namespace-options")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def on_click(self, event: events.Click) -> None:
        if event.widget is self:  # outside the list
            self.dismiss(None)
