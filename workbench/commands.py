"""Command palette: namespaced commands that depend on what is on screen.

``view: …`` switches views, ``namespace: …`` switches memories, and the active view adds
its own (``block: Expand one level``, ``jobs: Retry all failed``, ``graph: Back`` …).
The system commands (Theme, Keys, Quit, Help) stay as they are.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from workbench.views import VIEWS


class StrataCommands(Provider):
    """Views, namespaces and the active view's commands."""

    def _commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        app = self.app
        screen = self.screen
        commands: list[tuple[str, str, Callable[[], Any]]] = []
        for view in VIEWS:
            commands.append(
                (
                    f"view: {view.title}",
                    f"Show the {view.title} view (key {view.key})",
                    partial(app.switch_mode, view.id),
                )
            )
        current = getattr(app, "namespace", None)
        for name in getattr(app, "namespaces", ()):
            if name != current:
                commands.append(
                    (f"namespace: {name}", f"Show the memory of namespace {name}", partial(app.set_namespace, name))
                )
        commands.append(("app: Reload", "Read everything again from the database", app.action_reload))
        if getattr(app, "demo_building", True) is False and app.check_action("open_demo", ()):
            commands.append(("app: Open the demo", "Build the demo memory and open it here", app.action_open_demo))
        commands.append(("app: Database", "Show the open database's full URL", app.action_show_database))
        commands.append(("copy: Selected item", "Copy the selected item to the clipboard", app.action_copy))
        palette = getattr(screen, "palette_commands", None)
        if palette is not None:
            commands.extend(palette())
        return commands

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
