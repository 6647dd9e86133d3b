"""The workbench's views, in tab order: the one list the app's modes, key bindings, header tabs,
command palette, help and tests read.

Importing this module does not import Textual or any screen: a view names its screen class by
path, imported when the view is first built (the CLI and config read the ids without a UI).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class View:
    """One view (a Textual mode) of the workbench."""

    id: str
    """The mode's name; also in the binding id ``app.view-<id>`` that user keymaps remap."""
    title: str
    key: str
    """The default key (header tab and binding)."""
    screen: str
    """``module:Class`` of the view's screen."""
    opens: tuple[str, ...] = ()
    """Kinds of item (``OpenItem.kind``) this view shows when another view links to one."""

    @property
    def binding_id(self) -> str:
        return f"app.view-{self.id}"

    def screen_class(self) -> type:
        return import_path(self.screen)


VIEWS: tuple[View, ...] = (
    View("blocks", "Blocks", "1", "workbench.screens.blocks:BlocksScreen", opens=("block", "message")),
    View("timeline", "Timeline", "2", "workbench.screens.timeline:TimelineScreen", opens=("event",)),
    View("graph", "Graph", "3", "workbench.screens.graph:GraphScreen", opens=("node",)),
    View("traces", "Traces", "4", "workbench.screens.traces:TracesScreen", opens=("trace",)),
    View("imports", "Imports", "5", "workbench.screens.imports:ImportsScreen", opens=("import",)),
    View("jobs", "Jobs", "6", "workbench.screens.jobs:JobsScreen", opens=("job",)),
    View("review", "Review", "7", "workbench.screens.review:ReviewScreen", opens=("record",)),
    View("search", "Search", "/", "workbench.screens.search:SearchScreen"),
)

VIEW_IDS: tuple[str, ...] = tuple(view.id for view in VIEWS)

# Views are built in the background after the first one is up, most visited first.
PREBUILD_ORDER: tuple[str, ...] = ("timeline", "graph", "traces", "jobs", "search", "imports", "review", "blocks")

# Screens that are not views but have bindings a keymap may remap (their ids are listed by `?`).
DIALOGS: tuple[str, ...] = (
    "workbench.screens.help:HelpScreen",
    "workbench.widgets.confirm:ConfirmScreen",
    "workbench.widgets.prompt:PromptScreen",
    "workbench.widgets.header:NamespacePicker",
)


def view(view_id: str) -> View:
    return next(v for v in VIEWS if v.id == view_id)


def view_for_item(kind: str) -> View | None:
    """The view that shows an item of ``kind`` (``event``, ``block``, ``node`` …), if any."""
    return next((v for v in VIEWS if kind in v.opens), None)


def import_path(path: str) -> type:
    """The class named by ``module:Class``."""
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)
