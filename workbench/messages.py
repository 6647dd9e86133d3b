"""Messages that cross screens. Screen-specific messages live on their screen class."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class LoadFailed(Message):
    """A worker's service call raised; the screen shows the error instead of data."""

    group: str
    error: str


@dataclass
class OpenItem(Message):
    """Ask the app to show an item in its own screen.

    ``kind`` is ``event`` (timeline), ``block`` (blocks, at ``level``), ``message`` (the
    block holding that raw message, at L5), ``node`` (graph), ``trace`` or ``job``.
    """

    kind: str
    item_id: int
    level: int | None = None


@dataclass
class NamespacesLoaded(Message):
    """The namespaces of the open store (names only), and where the store lives."""

    names: tuple[str, ...]
    url: str


@dataclass
class NamespaceChanged(Message):
    """The header's namespace switcher picked another namespace."""

    namespace: str


@dataclass
class DemoBuilt(Message):
    """The demo memory the workbench offered on an empty store is built (``url``), or could not
    be (``error``; the workbench stays on the store it had open)."""

    url: str | None
    error: str | None = None
