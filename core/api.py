"""The one face of the engine that agent harnesses, the CLI and the workbench call.

Everything here is re-exported from the layers below; importing ``core.api`` pulls in the memory
services but nothing of the UI. Harnesses that want the agent tools (search, assess, use …) take
``MemoryTools`` from here too.
"""

from __future__ import annotations

from typing import Callable

from core.agent_tools import MemoryTools
from core.harness import Harness, TurnEnd
from core.services.capture import append_messages, append_turn, close_thread
from core.services.derive import run_pending
from core.services.jobs import recover_interrupted
from core.store import Store, require_existing
from core.store import open_store as _open_tables

__all__ = [
    "Harness",
    "MemoryTools",
    "Store",
    "TurnEnd",
    "append_messages",
    "append_turn",
    "close_thread",
    "open_store",
    "require_existing",
    "run_pending",
]


def open_store(
    url: str | None = None,
    *,
    recover: bool = True,
    progress: Callable[[int, int, str], None] | None = None,
    create: bool = True,
) -> Store:
    """Open the database named by ``url``/``$STRATA_DB``/default, ready for work: created or
    migrated (``progress`` follows the migrations), and, unless ``recover`` is False, with the jobs a
    killed process left ``running`` made failed-and-retryable. ``create`` False refuses a database
    that does not exist yet (see ``core.store.open_store``)."""
    store = _open_tables(url, progress=progress, create=create)
    if recover:
        recover_interrupted()
    return store
