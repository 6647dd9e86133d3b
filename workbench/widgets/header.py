"""The app header: brand, one tab per view (clickable), the open database and the namespace switcher.

Every view has its own header, so it is one widget drawing one line (a row of labels and
a Select cost a quarter of a view's widgets, composed and styled with each view). The
tabs, the database and the namespace are clickable; the namespace opens a small picker (also
``n``), the database names its full URL (also its tooltip). The database and the namespace
always show: on a narrower terminal the brand, the tabs' spacing, then the titles of the tabs
not shown give way first.
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

from core.db import display_url
from workbench.database import short_name
from workbench.messages import NamespaceChanged
from workbench.views import VIEWS

NAME_WIDTH = 24  # at most this many cells of the database's and of the namespace's name
MIN_NAME = 6  # on a terminal too narrow for both, each keeps at least this many

# (brand, tabs, labels), widest first: the first that leaves room for both names is drawn.
# Tabs "wide" are " 1 Blocks ", "narrow" "1 Blocks "; "fit" keeps the titles of the views
# from the first on as far as they fit and shows only the key of the rest ("5 "). The shown view's tab always
# has its title, padded.
LAYOUTS = (
    (" ◆ Strata ", "wide", ("database", "namespace")),
    (" ◆ Strata ", "narrow", ("database", "namespace")),
    (" ◆ ", "narrow", ("database", "namespace")),
    (" ◆ ", "fit", ("database", "namespace")),
    (" ◆ ", "fit", ("db", "ns")),
)


def _cut(name: str, cells: int) -> str:
    return name if len(name) <= cells else name[: max(cells - 1, 0)] + "…"


class AppHeader(Widget):
    """Brand, view tabs, the open database and the namespace switcher; the same on every screen."""

    COMPONENT_CLASSES = {
        "app-header--brand",
        "app-header--tab",
        "app-header--active",
        "app-header--hover",
        "app-header--label",
        "app-header--database",
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
        self.watch(self.app, "namespace", self._changed, init=False)
        self.watch(self.app, "store_url", self._changed, init=False)

    def _changed(self, _value: object) -> None:
        self.refresh()

    @property
    def database_url(self) -> str | None:
        """The open database's URL, without its password."""
        url = getattr(self.app, "store_url", None)
        return display_url(url) if url else None

    def render(self) -> Content:
        parts: list[Content] = []
        spans: list[tuple[int, int, str]] = []
        at = 0

        def add(text: str, component: str, action: str | None = None) -> None:
            nonlocal at
            if (
                action is not None
                and action == self._hover
                and component in ("app-header--tab", "app-header--namespace", "app-header--database")
            ):
                component = "app-header--hover"
            content = Content(text).stylize(self.get_visual_style(component))
            if action is not None:
                content = content.stylize(Style.from_meta({"@click": action}))
                spans.append((at, at + content.cell_length, action))
            parts.append(content)
            at += content.cell_length

        database = short_name(getattr(self.app, "store_url", None))
        namespace = getattr(self.app, "namespace", None) or "(none)"
        brand, tabs, (db_label, ns_label), db_cells, ns_cells = self._layout(database, namespace)
        add(brand, "app-header--brand")
        for view, text in zip(VIEWS, tabs):
            add(text, "app-header--active" if view.id == self.mode else "app-header--tab", f"app.view('{view.id}')")
        right = self._right_width(db_label, ns_label, db_cells, ns_cells)
        add(" " * max(1, self.size.width - at - right), "app-header--tab")
        add(f" {db_label} ", "app-header--label")
        add(_cut(database, db_cells), "app-header--database", "app.show_database")
        add(f"  {ns_label} ", "app-header--label")
        add(_cut(namespace, ns_cells), "app-header--namespace", "app.pick_namespace")
        add(" ▼ ", "app-header--arrow", "app.pick_namespace")
        self._spans = spans
        return Content("").join(parts)

    @staticmethod
    def _right_width(db_label: str, ns_label: str, db_cells: int, ns_cells: int) -> int:
        return len(db_label) + 2 + db_cells + len(ns_label) + 3 + ns_cells + 3

    def _layout(self, database: str, namespace: str) -> tuple[str, list[str], tuple[str, str], int, int]:
        """(brand, the tabs' texts, labels, cells of each name): the widest layout whose left part
        leaves room for both names (each up to NAME_WIDTH); on a terminal narrower than the
        narrowest, the names are cut to share what is left."""
        width = self.size.width
        want_db, want_ns = min(len(database), NAME_WIDTH), min(len(namespace), NAME_WIDTH)
        for brand, style, labels in LAYOUTS:
            room = width - len(brand) - 1 - self._right_width(*labels, want_db, want_ns)
            tabs = self._tabs(style, room)
            if sum(map(len, tabs)) <= room:
                return brand, tabs, labels, want_db, want_ns
        room = max(0, width - len(brand) - sum(map(len, tabs)) - 1 - self._right_width(*labels, 0, 0))
        ns_cells = min(want_ns, max(MIN_NAME, room // 2))
        db_cells = min(want_db, max(MIN_NAME, room - ns_cells))
        return brand, tabs, labels, db_cells, ns_cells

    def _tabs(self, style: str, room: int) -> list[str]:
        """Each view's tab text in ``style``; "fit" titles the first views that fit in ``room``."""
        texts = []
        for view in VIEWS:
            if view.id == self.mode or style == "wide":
                texts.append(f" {view.key} {view.title} ")
            else:
                texts.append(f"{view.key} {view.title} " if style == "narrow" else f"{view.key} ")
        if style == "fit":
            for index, view in enumerate(VIEWS):
                if view.id == self.mode:
                    continue
                titled = f"{view.key} {view.title} "
                if sum(map(len, texts)) - len(texts[index]) + len(titled) > room:
                    break
                texts[index] = titled
        return texts

    def on_mouse_move(self, event: events.MouseMove) -> None:
        hover = next((action for start, end, action in self._spans if start <= event.x < end), None)
        if hover != self._hover:
            self._hover = hover
            self.tooltip = f"database: {self.database_url}" if hover == "app.show_database" else None
            self.refresh()

    def on_leave(self) -> None:
        if self._hover is not None:
            self._hover = None
            self.tooltip = None
            self.refresh()

    def open_switcher(self) -> None:
        """Open the namespace picker under the header."""
        names = tuple(getattr(self.app, "namespaces", ()))
        if not names:
            self.app.notify(
                "This database has no namespace yet (d builds and opens the demo)", severity="warning", timeout=4
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
