"""Imports view (stub while it is being built)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from workbench.screens.base import EmptyState, StrataScreen


class ImportsScreen(StrataScreen):
    MODE = "imports"
    TITLE = "Imports"

    def compose(self) -> ComposeResult:
        yield self.compose_header()
        yield Static("Imports", classes="view-body")
        yield EmptyState(id="empty")
        yield self.compose_footer()
