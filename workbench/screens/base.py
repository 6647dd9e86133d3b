"""What every view shares: header and footer, loading through thread workers, reloading
when the namespace changes, copying the selection, and the newcomer's empty state.

Every load goes through ``StrataScreen.fetch``, which masks the secrets in what it brings back
(``core.redact``): the views show, search and copy masked text, while the store keeps it exact.

On a narrow terminal (the ``-narrow`` class the app's breakpoints put on every screen) a view shows
one pane at a time: a pane with the ``collapsible`` class is hidden until something in it has the
focus (the view's own keys go there: ``enter`` deeper, ``t`` for the threads …), and then a
sibling with the ``gives-way`` class makes room for it; ``escape`` back to the list closes it."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Protocol, TypeVar

from textual import events, on
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Static
from textual.worker import Worker, get_current_worker

from core.errors import StrataError
from core.redact import redact_text, redact_value
from workbench.messages import LoadFailed
from workbench.textual_internals import style_generation
from workbench.widgets.footer import StrataFooter
from workbench.widgets.header import AppHeader
from workbench.widgets.table import stop_busy

if TYPE_CHECKING:
    from workbench.backend import Backend
    from workbench.config import Config

log = logging.getLogger("strata.workbench")
R = TypeVar("R")

EMPTY_STORE = (
    "This database holds no memory yet.\n\n"
    "Press [b]d[/b] to build the demo, a sample memory made from a bundled conversation, and open it "
    "here (as [b]strata demo[/b] does: [b]strata[/b] then opens it by default). Or add your own "
    "conversations with [b]strata ingest jsonl FILE[/b], then press [b]ctrl+r[/b] to reload. "
    "To bring in another assistant's memory, press [b]5[/b] (Imports): it creates the namespace.\n\n"
    "Keys: [b]1[/b]–[b]7[/b] switch views, [b]/[/b] searches, [b]?[/b] lists every key, [b]ctrl+p[/b] "
    "opens the command palette."
)
DEMO_BUILDING = "Building the demo memory from a bundled sample conversation; it opens here in a few seconds."


def _retrieved(future) -> None:
    if not future.cancelled():
        future.exception()


# Fetch groups that write or may take long (an import preview asks a model per item): they
# run in their own thread instead of queueing the views' reads behind them.
OWN_THREAD = frozenset({"expand", "retry", "preview-run", "decide", "commit", "undo", "results", "forget"})
# The database thread serves lists first, then one item's detail, then aggregates.
READ_PRIORITY = {"page": 0, "rail": 0, "nodes": 0, "threads": 0, "batches": 0, "histogram": 2}


class Shell(Protocol):
    """What the views use of the app (``workbench.app.Workbench``), stated here so that the views
    do not import the app module, which sits above them."""

    backend: Backend
    config: Config
    namespace: str | None
    namespaces: tuple[str, ...]
    store_ready: bool
    data_version: int
    demo_building: bool

    def mark(self, name: str) -> None: ...

    def open_item(self, kind: str, item_id: int, level: int | None = None) -> None: ...

    def data_changed(self) -> None: ...

    def show_namespace(self, namespace: str) -> None: ...


class EmptyState(Static):
    """A friendly message shown in place of a view's content."""


class StrataScreen(Screen):
    """Base class of the workbench views (one per mode)."""

    MODE: ClassVar[str] = ""
    loaded_namespace: str | None = None
    loaded_version = 0
    _loaded_once = False

    @property
    def workbench(self) -> Shell:
        return self.app  # type: ignore[return-value]

    # ------------------------------------------------------------------ panes on a narrow terminal

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.open_panes(event.widget)

    def open_panes(self, focused: Widget | None) -> None:
        """Mark the collapsible panes holding ``focused`` open (``-open``), the others closed, and
        their parents ``-pane-open`` while one of their panes is (the TCSS shows and hides them
        on a narrow terminal only)."""
        holding = set(focused.ancestors_with_self) if focused is not None else set()
        parents: dict[Widget, bool] = {}
        for pane in self.query(".collapsible"):
            is_open = pane in holding
            pane.set_class(is_open, "-open")
            parent = pane.parent
            if isinstance(parent, Widget):
                parents[parent] = parents.get(parent, False) or is_open
        for parent, is_open in parents.items():
            parent.set_class(is_open, "-pane-open")

    @property
    def namespace(self) -> str | None:
        return self.workbench.namespace

    def compose_header(self) -> AppHeader:
        return AppHeader(self.MODE)

    def compose_footer(self) -> Footer:

        return StrataFooter()

    # ------------------------------------------------------------------ loading

    def fetch(
        self,
        group: str,
        call: Callable[[], R],
        done: Callable[[R], Message],
        *,
        exclusive: bool = True,
        after_paint: bool = False,
    ) -> Worker:
        """Run ``call`` (a service call) off the event loop and post ``done(result)``.

        Reads run on the backend's database thread, in order; writes and long operations
        (``OWN_THREAD`` groups) in a thread worker of their own. Workers of one group are
        exclusive: a newer request cancels the older one (a read not started yet is never
        run) and a cancelled worker posts nothing, so a fast typist never sees stale rows.
        ``after_paint`` asks for a read once the next frame is drawn (the first item's
        detail after its list: the frame is not kept waiting by the detail's Python work).
        What ``call`` returns is masked (``core.redact``) on the worker before ``done`` sees it:
        this is the views' one door to stored text.
        """

        backend = self.workbench.backend
        service = call

        def call() -> R:
            return redact_value(service())

        def failed(exc: Exception) -> Message:

            if not isinstance(exc, StrataError):
                log.exception("workbench %s/%s failed", self.MODE, group, exc_info=exc)
            return LoadFailed(group, redact_text(str(exc)) or type(exc).__name__)

        if group not in OWN_THREAD:

            async def read() -> None:

                if after_paint:
                    painted = asyncio.Event()
                    self.call_after_refresh(painted.set)
                    await painted.wait()
                future = backend.submit(call, READ_PRIORITY.get(group, 1))
                waiting = asyncio.wrap_future(future)
                waiting.add_done_callback(_retrieved)  # an interrupted read's error is nobody's
                try:
                    result = await asyncio.shield(waiting)
                except asyncio.CancelledError:  # a newer read of the group, or the view left
                    backend.interrupt(future)
                    raise
                except Exception as exc:  # noqa: BLE001 - shown to the user, never fatal
                    self.post_message(failed(exc))
                    return
                self.post_message(done(result))

            return self.run_worker(
                read,
                group=f"{self.MODE}:{group}",
                exclusive=exclusive,
                exit_on_error=False,
                description=f"{self.MODE} {group}",
            )

        def run() -> None:
            worker = get_current_worker()
            try:
                with backend.session():
                    result = call()
            except Exception as exc:  # noqa: BLE001 - shown to the user, never fatal
                if not worker.is_cancelled:
                    self.post_message(failed(exc))
                return
            if not worker.is_cancelled:
                self.post_message(done(result))

        return self.run_worker(
            run,
            thread=True,
            group=f"{self.MODE}:{group}",
            exclusive=exclusive,
            exit_on_error=False,
            description=f"{self.MODE} {group}",
        )

    @on(LoadFailed)
    def _load_failed(self, event: LoadFailed) -> None:
        self.load_failed(event)
        self.notify(event.error, title=self.failure_title(event.group), severity="error", timeout=8)

    def failure_title(self, group: str) -> str:
        """Hook: the title of a failed load's toast (a view names what failed in its own words,
        not its worker group)."""
        return f"{self.MODE}: could not load {group}"

    def load_failed(self, event: LoadFailed) -> None:
        """Hook: clear loading indicators after a failed load."""

        for widget in self.query(".loadable"):
            stop = getattr(widget, "stop_loading", None)
            if stop is not None:
                stop()
            else:
                stop_busy(widget)

    # ------------------------------------------------------------------ namespace

    def on_mount(self) -> None:
        self._styled_for = self._style_inputs()
        self.watch(self.workbench, "namespace", self._namespace_changed, init=False)
        self.watch(self.workbench, "store_ready", self._store_ready, init=False)
        self.watch(self.workbench, "demo_building", self._demo_building, init=False)
        if self.is_current:  # else built ahead in the background: it loads when first shown
            self.workbench.mark(f"{self.MODE}:paint")
            # Paint the empty frame first, then start the workers (they compete for the GIL).
            self.call_after_refresh(self._refresh_if_stale)

    def _store_ready(self, ready: bool) -> None:
        if ready and self.is_current:
            self.refresh_view()

    def _demo_building(self, building: bool) -> None:
        if self.namespace is None and self._loaded_once:
            self.show_empty(True)

    def _namespace_changed(self, namespace: str | None) -> None:
        if self.is_current:
            self.refresh_view()

    def _style_inputs(self) -> tuple:
        """What this screen's styles depend on beyond its own widgets: the stylesheet (and
        theme) generation and the app's classes and pseudo-classes."""
        app = self.app
        return style_generation(app), frozenset(app.classes), app.pseudo_classes

    # Textual calls the screen-resume and screen-suspend handlers of every class that defines
    # one (a view's own run as well), subclass first: these run before Screen's.

    def on_screen_suspend(self) -> None:
        self._styled_for = self._style_inputs()

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # Textual restyles every widget of a screen it shows again (a third of a switch); the
        # styles are still right when nothing they depend on changed while the screen was away
        # (its own widgets restyle as they change).
        if event.refresh_styles and getattr(self, "_styled_for", None) == self._style_inputs():
            event.refresh_styles = False
        self.workbench.mark(f"{self.MODE}:paint")
        # As on mount: the frame first, then the loads (a view shown the first time has
        # every query still to start).
        self.call_after_refresh(self._refresh_if_stale)

    def _refresh_if_stale(self) -> None:
        if self.workbench.store_ready and (
            self.loaded_namespace != self.namespace
            or not self._loaded_once
            or self.loaded_version != self.workbench.data_version
        ):
            self.refresh_view()

    def refresh_view(self) -> None:
        """Load (or reload) everything for the current namespace."""
        self.loaded_namespace = self.namespace
        self.loaded_version = self.workbench.data_version
        self._loaded_once = True
        self.show_empty(self.namespace is None)
        if self.namespace is not None:
            self.reload()

    def show_empty(self, empty: bool, text: str | None = None) -> None:
        if text is None:
            text = DEMO_BUILDING if getattr(self.workbench, "demo_building", False) else EMPTY_STORE
        self.set_class(empty, "-empty")
        for state in self.query(EmptyState):
            state.update(text)

    def reload(self) -> None:
        """Hook: start the workers that fill this view for ``self.namespace``."""

    # ------------------------------------------------------------------ typing

    TYPING_PAUSE = 0.35  # seconds of no typing before a filter is applied

    def after_typing(self, callback: Callable[[], Any]) -> None:
        """Run ``callback`` once typing pauses (each keystroke restarts the wait)."""
        self.typing_done()
        self._typing_timer = self.set_timer(self.TYPING_PAUSE, callback)

    def typing_done(self) -> None:
        """Forget a pending ``after_typing`` call (the field was submitted)."""
        timer = getattr(self, "_typing_timer", None)
        if timer is not None:
            timer.stop()
            self._typing_timer = None

    # ------------------------------------------------------------------ actions

    def copy_text(self) -> str | None:
        """Hook: the text of the selected item, for the clipboard."""
        return None

    def focus_item(self, kind: str, item_id: int, level: int | None = None) -> None:
        """Hook: show one item (called by the app when another view links here)."""

    def palette_commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        """Hook: (title, help, callback) for the command palette while this view is active."""
        return []
