"""Strata workbench: the `strata` CLI and the Textual TUI over the core.

Importing this package (or the CLI) must not import Textual: only the UI path does.
"""

from core import __version__

__all__ = ["__version__"]
