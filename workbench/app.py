"""The Strata workbench: review what an agent remembers, one view per mode.

Views (modes): Blocks, Timeline, Graph, Traces, Imports, Jobs and Search, switched with
the number keys, ``/``, the header tabs or the command palette. Everything the views show
is read by ``core`` services in thread workers through ``Backend``; the event loop never
touches the database.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import threading
import time
from pathlib import Path
from typing import Iterable

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import get_current_worker

from core.db import display_url
from workbench.backend import Backend
from workbench.commands import StrataCommands
from workbench.config import Config, load_config, save_config
from workbench.messages import DemoBuilt, NamespaceChanged, NamespacesLoaded, OpenItem
from workbench.textual_internals import (
    ShutdownHook,
    apply_theme_before_css,
    built_modes,
    lay_out,
    mark_styled,
    mark_unstyled,
    mode_is_built,
    mode_is_known,
    mount_mode_screen,
    stop_input_now,
    style_generation,
)
from workbench.themes import FALLBACK_THEME, builtin_theme_dir, load_themes, token_defaults
from workbench.views import DIALOGS, PREBUILD_ORDER, VIEWS, View, import_path, view_for_item
from workbench.widgets.header import AppHeader
from workbench.widgets.table import PagedTable

HERE = Path(__file__).parent
log = logging.getLogger("strata.workbench")

NARROW_BELOW = 100
"""Columns under which a view is narrow: side panes collapse, filter bars wrap (``-narrow``)."""
SHORT_BELOW = 30
"""Rows under which a view is short: fixed-height detail panes shrink (``-short``)."""

# The pause between two views built in the background (keys and loaded data are handled in
# between); the order is views.PREBUILD_ORDER.
PREBUILD_PAUSE = 0.05

MARKS_ENV = "STRATA_BENCH_MARKS"
"""Names a file the app appends each mark to as it is recorded, a line each: the name, the wall clock
and the process's CPU time, in seconds (`strata bench ui` sets it when it launches `strata ui` in a
pseudo-terminal)."""


def _screen_factory(view: View):
    # A view's module is imported when its screen is first built, not at start-up.
    def make() -> Screen:
        return view.screen_class()()

    return make


class Workbench(ShutdownHook, App):
    """Review, search and correct what an agent remembers."""

    CSS_PATH = [HERE / "app.tcss", *sorted((HERE / "styles").glob("*.tcss"))]
    TITLE = "Strata workbench"
    ENABLE_COMMAND_PALETTE = True
    # Every screen gets one class of each pair from the terminal's size (the TCSS adapts to it).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_BELOW, "-roomy")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_BELOW, "-tall")]

    BINDINGS = [
        *[
            Binding(
                view.key,
                f"view('{view.id}')",
                view.title,
                show=False,
                id=view.binding_id,
                tooltip=f"Show the {view.title} view",
            )
            for view in VIEWS
        ],
        Binding("question_mark,f1", "help", "Help", id="app.help", tooltip="Every key of this view, with its id"),
        Binding(
            "n", "pick_namespace", "Namespace", show=False, id="app.namespace", tooltip="Switch to another namespace"
        ),
        Binding("y,c", "copy", "Copy", id="app.copy", tooltip="Copy the selected item to the clipboard"),
        Binding("ctrl+r,f5", "reload", "Reload", show=False, id="app.reload", tooltip="Reload from the database"),
        Binding(
            "d",
            "open_demo",
            "Open the demo",
            id="app.open-demo",
            tooltip="Build the demo memory from a bundled sample conversation and open it (on an empty database)",
        ),
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Leave the workbench"),
    ]

    namespaces: reactive[tuple[str, ...]] = reactive((), init=False)
    """Names of the namespaces in the open store."""
    namespace: reactive[str | None] = reactive(None, init=False)
    """The namespace every view shows."""
    store_ready: reactive[bool] = reactive(False, init=False)
    """True once the store is open and the namespace is chosen."""
    data_version: reactive[int] = reactive(0, init=False)
    """Bumped after a write that changes what other views show (import commit or undo)."""
    store_url: reactive[str | None] = reactive(None, init=False)
    """The open database's URL (as given until the store is open; the header shows it)."""
    demo_building: reactive[bool] = reactive(False, init=False)
    """True while the demo offered on an empty store is being built."""

    def __init__(
        self,
        db_url: str | None = None,
        namespace: str | None = None,
        *,
        theme: str | None = None,
        config: Config | None = None,
        prebuild: bool = True,
        ends_process: bool = False,
    ) -> None:
        self.config = config if config is not None else load_config()
        self.DEFAULT_MODE = self.config.start_screen
        self.MODES = {view.id: _screen_factory(view) for view in VIEWS}
        super().__init__()

        self.COMMANDS = self.COMMANDS | {StrataCommands}
        self.backend = Backend(db_url)
        self.requested_namespace = namespace
        self.requested_theme = theme
        self.store_url = db_url
        self._wanted_namespace: str | None = None
        self._prebuild = None if prebuild else False
        """The worker building views ahead (False: never build ahead; `strata bench ui --no-prebuild`)."""
        self._building = None
        self._frozen = False
        self.ends_process = ends_process
        """The process ends as soon as the app has shut down (`strata ui`; see ``run_app``)."""
        self._gc_paused = not gc.isenabled()
        """Started with the collector paused (`strata ui` pauses it for start-up): resumed once the
        first view shows its data (``_resume_gc``)."""
        self._start_frozen = False
        self.marks: list[tuple[str, float]] = []
        """(name, perf_counter) after a view painted or showed its data (for `strata bench ui`)."""
        self._mark_file = _mark_file()
        self._record_mark("app:init")
        self._problems = list(self.config.problems)
        self._start_theme()

    # ------------------------------------------------------------------ start-up

    def _start_theme(self) -> None:
        """Register the themes and start in the configured one. Done before the stylesheet is
        first parsed: setting ``theme`` once running parses and applies every rule again
        (a quarter of the first paint)."""
        loaded = load_themes(builtin_theme_dir(), self.config.path.parent / "themes" if self.config.path else None)
        self._problems.extend(loaded.problems)
        for theme in loaded.themes:
            self.register_theme(theme)
        wanted = self.requested_theme or self.config.theme
        if wanted not in self.available_themes:
            self._problems.append(f"theme {wanted!r} is not installed; using {FALLBACK_THEME}")
            wanted = FALLBACK_THEME
        apply_theme_before_css(self, wanted)

    def on_mount(self) -> None:

        self.backend.loop_thread = threading.get_ident()
        problems = self._problems
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        if self.config.keymap:
            known = binding_ids()
            unknown = sorted(set(self.config.keymap) - known)
            if unknown:
                problems.append(f"keymap: unknown binding ids {', '.join(unknown)} (see `?` for the ids)")
            self.set_keymap({k: v for k, v in self.config.keymap.items() if k in known})
        if problems:
            self.notify("\n".join(problems), title="Configuration", severity="warning", timeout=10)
        self.load_namespaces()

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return token_defaults(self.current_theme.to_color_system().generate())

    def _theme_changed(self, theme) -> None:
        # Views not on screen restyle when next shown (one may have been built ahead while
        # the new theme's CSS was still being parsed).
        for mode, stack in built_modes(self).items():
            if mode != self.current_mode:
                for screen in stack:
                    mark_unstyled(screen)
        if theme.name != self.config.theme:
            self.config = self.config.with_theme(theme.name)
            self.save_settings()

    @work(thread=True, exclusive=True, group="app:settings", exit_on_error=False)
    def save_settings(self) -> None:
        save_config(self.config)

    @work(thread=True, exclusive=True, group="app:namespaces", exit_on_error=False)
    def load_namespaces(self) -> None:
        # start-up time, here and below: the services `strata` has not loaded for its parser load when a view first
        # reads, on the database thread, not before the first paint
        from core.services.browse import namespace_names

        worker = get_current_worker()
        with self.backend.session() as info:
            names = tuple(namespace_names())
        if not worker.is_cancelled:
            self.post_message(NamespacesLoaded(names, info.url))

    @on(NamespacesLoaded)
    def _namespaces_loaded(self, event: NamespacesLoaded) -> None:

        self.store_url = event.url
        self.sub_title = display_url(event.url)  # the header is on screen and in screenshots
        self.namespaces = event.names
        current = self.namespace
        if self._wanted_namespace in event.names:
            current, self._wanted_namespace = self._wanted_namespace, None
        elif current not in event.names:
            wanted = [self.requested_namespace, self.config.namespace, "demo", "default"]
            if self.requested_namespace and self.requested_namespace not in event.names and event.names:
                self.notify(
                    f"namespace {self.requested_namespace!r} does not exist here", severity="warning", timeout=6
                )
            current = next((n for n in wanted if n in event.names), event.names[0] if event.names else None)
        if current != self.namespace:
            self.namespace = current
        if self.store_ready:
            self.screen_refresh()
        self.store_ready = True
        self.refresh_bindings()  # the demo is offered on an empty store only
        if not event.names:
            self.call_after_refresh(self.prebuild_views)  # an empty store: no view loads data

    def data_changed(self) -> None:
        """Other views reload when next shown (the current one refreshes itself)."""
        self.data_version += 1
        current = self.screen
        if hasattr(current, "loaded_version"):
            current.loaded_version = self.data_version

    def mark(self, name: str) -> None:
        """Record when the next frame is on screen (cheap; read by the UI benchmark)."""
        self.call_after_refresh(self._record_mark, name)
        if name.endswith(":list"):
            if self._prebuild is None:
                self.call_after_refresh(self.prebuild_views)  # the first view shows its data
            elif self._prebuild is False:
                self.call_after_refresh(self._freeze_objects)

    def _record_mark(self, name: str) -> None:
        self.marks.append((name, time.perf_counter()))
        if self._mark_file is not None:
            self._mark_file.write(f"{name} {time.time():.6f} {time.process_time():.6f}\n")

    # ------------------------------------------------------------------ views built ahead

    def prebuild_views(self) -> None:
        """Build the views not shown yet in the background, one at a time, so that the first
        visit of each is a switch rather than a compose (called once the first view is up)."""
        self._resume_gc()
        if self._prebuild is None:
            self._prebuild = self.run_worker(
                self._prebuild_views(),
                group="app:prebuild",
                exclusive=True,
                exit_on_error=False,
                description="build views ahead",
            )

    async def _prebuild_views(self) -> None:

        started = time.perf_counter()
        first = self.screen
        if first.is_mounted:
            # The start screen mounted after the start-up CSS refresh: its styles are current.
            mark_styled(first, style_generation(self))
        for mode in PREBUILD_ORDER:
            await asyncio.sleep(PREBUILD_PAUSE)  # let input and loaded data through between views
            if not self.is_running:
                return  # shutting down: the screen stacks are being closed
            if mode_is_built(self, mode) or not mode_is_known(self, mode):
                continue
            css_generation = style_generation(self)
            screen, mounted = mount_mode_screen(self, mode)
            self._building = mounted
            await mounted
            self._building = None
            if not mode_is_built(self, mode) or screen.is_current:
                continue
            # Lay it out at the terminal's size too, so showing it is a restyle and a paint.
            await asyncio.sleep(0)
            if self.is_running and screen.is_attached and not screen.is_current:
                lay_out(screen, self.size)
                # Its widgets were styled by the current stylesheet as they mounted: no need
                # for the whole-app CSS refresh Textual runs when a screen is shown the first
                # time. (A theme change bumps the generation; see also _theme_changed.)
                if css_generation == style_generation(self):
                    mark_styled(screen, css_generation)
        self._record_mark("app:views-built")
        log.debug("views built ahead in %.0f ms", (time.perf_counter() - started) * 1000)
        self._freeze_objects()

    def _resume_gc(self) -> None:
        """Resume the collector paused for start-up, its objects frozen first (left out of its
        passes, as ``_freeze_objects`` does once the views are built): they live as long as the
        app, and the first pass would otherwise walk all of them at once."""
        if self._gc_paused:
            self._gc_paused = False
            gc.freeze()
            self._start_frozen = True
            gc.enable()

    def _freeze_objects(self) -> None:
        """Leave what exists now (the views, their widgets, styles and caches: they live as long
        as the app) out of the garbage collector's full passes, which otherwise walk all of it
        every so often and stall a keystroke for 60–130 ms. Undone when the app closes."""

        self._resume_gc()
        if not self._frozen:
            self._frozen = True
            gc.freeze()

    def exit(self, result=None, return_code: int = 0, message=None) -> None:
        super().exit(result, return_code, message)
        if self.ends_process:
            stop_input_now(self)  # the process ends after the shutdown: no wait for the input thread

    async def before_shutdown(self) -> None:
        # A view being built ahead finishes mounting before the screens are closed (closing
        # one half-mounted fails inside its widgets), and no other one is started.

        self._record_mark("app:shutdown")
        building = self._building
        if building is not None:
            try:
                await asyncio.wait_for(building(), timeout=5)
            except Exception:  # noqa: BLE001 - leaving anyway
                log.debug("a view built ahead did not finish mounting before exit", exc_info=True)
        if self._prebuild:
            self._prebuild.cancel()

    def on_unmount(self) -> None:
        self.backend.close()
        self._record_mark("app:unmount")
        if self._mark_file is not None:
            self._mark_file.close()
            self._mark_file = None
        if self._gc_paused:  # closed before its first view showed data
            self._gc_paused = False
            gc.enable()
        if self._frozen or self._start_frozen:
            gc.unfreeze()  # collectable again (several apps may run in one process, e.g. tests)
            self._frozen = self._start_frozen = False

    async def ready_screen(self) -> Screen:
        """The current screen once its widgets are mounted (it may still be being built) and
        its loads for the current namespace are started (before it is told to show an item)."""
        building = self._building
        if building is not None and not self.screen.is_mounted:
            await building
        screen = self.screen
        refresh = getattr(screen, "_refresh_if_stale", None)
        if refresh is not None:
            refresh()
        return screen

    def screen_refresh(self) -> None:
        screen = self.screen
        if hasattr(screen, "refresh_view"):
            screen.refresh_view()

    # ------------------------------------------------------------------ navigation

    @on(NamespaceChanged)
    def _namespace_picked(self, event: NamespaceChanged) -> None:
        self.set_namespace(event.namespace)

    def set_namespace(self, namespace: str) -> None:
        if namespace in self.namespaces and namespace != self.namespace:
            self.namespace = namespace

    def show_namespace(self, namespace: str) -> None:
        """Switch to ``namespace``, reading the namespace list again when it is new (an
        import committed into a namespace that did not exist)."""
        if namespace in self.namespaces:
            self.set_namespace(namespace)
        else:
            self._wanted_namespace = namespace
            self.load_namespaces()

    @on(OpenItem)
    async def _open_item(self, event: OpenItem) -> None:
        view = view_for_item(event.kind)
        if view is None:
            return
        await self.switch_mode(view.id)
        screen = await self.ready_screen()
        screen.focus_item(event.kind, event.item_id, event.level)  # type: ignore[attr-defined]

    def open_item(self, kind: str, item_id: int, level: int | None = None) -> None:
        self.post_message(OpenItem(kind, item_id, level))

    # ------------------------------------------------------------------ actions

    async def action_view(self, mode: str) -> None:
        """Switch to a view; pressing search's key again goes back to its query box."""
        await self.switch_mode(mode)
        if mode == "search":
            focus = getattr(await self.ready_screen(), "action_focus_query", None)
            if focus is not None:
                focus()

    def action_reload(self) -> None:
        if not self.demo_building:
            self.load_namespaces()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_demo":
            return self.store_ready and not self.namespaces and not self.demo_building
        return True

    def action_show_database(self) -> None:
        self.notify(display_url(self.store_url) or "not open yet", title="Database", timeout=8)

    # ------------------------------------------------------------------ the demo, offered on an empty store

    def action_open_demo(self) -> None:
        """Build the demo memory (as `strata demo` does) and switch to it; it becomes the database
        `strata` opens by default, as after `strata demo`."""
        if not self.check_action("open_demo", ()):
            return
        self.demo_building = True
        self.refresh_bindings()
        self.notify("Building the demo memory from a bundled sample conversation…", title="Demo", timeout=5)
        self._build_demo()

    @work(thread=True, exclusive=True, group="app:demo", exit_on_error=False, description="build the demo")
    def _build_demo(self) -> None:
        # start-up time: the demo's build (ingest, derivation) loads only when it is asked for
        from core.db import db
        from core.demo import build_demo
        from core.errors import StrataError
        from workbench import database

        url = f"sqlite:///{database.demo_db_path()}"
        # One store per process (the models share one database proxy): the one open now is left
        # first, its reads finished and its connection closed, and opened again if the build fails.
        self.backend.retire()
        try:
            result = build_demo(url)
            url = database.remember(f"sqlite:///{result.path}")
        except Exception as exc:  # noqa: BLE001 - shown to the user, never fatal
            if not isinstance(exc, StrataError):
                log.exception("building the demo failed")
            self.post_message(DemoBuilt(None, str(exc) or type(exc).__name__))
            return
        finally:
            if db.obj is not None and not db.is_closed():
                db.close()
        self.post_message(DemoBuilt(url))

    @on(DemoBuilt)
    def _demo_built(self, event: DemoBuilt) -> None:
        self.backend = Backend(event.url or self.backend.url)
        self.backend.loop_thread = threading.get_ident()
        self.demo_building = False
        if event.url is None:
            self.notify(event.error or "", title="The demo could not be built", severity="error", timeout=10)
        else:
            self.store_url = event.url
            self._wanted_namespace = "demo"
            self.data_changed()
            self.notify(
                f"{display_url(event.url)} is open, and `strata` opens it by default from now on "
                "(`strata db forget` goes back)",
                title="Demo",
                timeout=8,
            )
        self.refresh_bindings()
        self.load_namespaces()

    def action_pick_namespace(self) -> None:
        header = self.screen.query(AppHeader).first(None) if hasattr(self.screen, "MODE") else None
        if header is not None:
            header.open_switcher()

    def action_copy(self) -> None:
        copy = getattr(self.screen, "copy_text", None)
        text = copy() if copy else None
        if not text:
            self.notify("Nothing selected to copy", severity="warning", timeout=3)
            return
        self.copy_to_clipboard(text)
        self.notify(f"Copied {len(text)} characters (shift+drag selects text natively)", timeout=3)

    def action_help(self) -> None:
        # start-up time: the help screen (~6 ms) loads when it is asked for
        from workbench.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
            return
        self.push_screen(HelpScreen.for_screen(self.screen))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "Every key of the current view, with the ids the keymap uses", self.action_help)


def _mark_file():
    """The file named by ``$STRATA_BENCH_MARKS``, open to append line by line; None when unset."""
    path = os.environ.get(MARKS_ENV)
    if not path:
        return None
    try:
        return open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - open for the app's life
    except OSError:
        log.warning("cannot write the marks to %s", path, exc_info=True)
        return None


def binding_ids() -> set[str]:
    """Every binding id a keymap may remap (the app's, the views' and the widgets')."""

    classes: list[type] = [Workbench, PagedTable]
    for view in VIEWS:
        try:
            screen = view.screen_class()
        except (ImportError, AttributeError):
            continue
        classes += [screen, *getattr(screen, "KEYMAP_WIDGETS", ())]
    classes += [import_path(path) for path in DIALOGS]
    ids: set[str] = set()
    for cls in classes:
        for binding in getattr(cls, "BINDINGS", []):
            if isinstance(binding, Binding) and binding.id:
                ids.add(binding.id)
    return ids


def run_app(
    db_url: str | None = None, namespace: str | None = None, theme: str | None = None, *, ends_process: bool = False
) -> int:
    """Run the workbench until it is quit; its return code (0 after a quit). With ``ends_process``
    (`strata ui` run as a program) the caller ends the process right after (``workbench.cli.ui``):
    the app then stops reading keys without waiting for Textual's input thread, and its database
    thread is given a second to close its connection here."""
    app = Workbench(db_url=db_url, namespace=namespace, theme=theme, ends_process=ends_process)
    app.run()
    if ends_process:
        app.backend.close(wait=1.0)
    return app.return_code or 0
