"""Plain, frozen dataclasses that cross the service boundary.

Services return these and never peewee rows, so no lazy query can run later on a
caller's thread (the workbench renders on its event loop).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ROLES = ("user", "assistant", "system", "tool")


@dataclass(frozen=True)
class ToolTrace:
    """One tool invocation attached to a message: name, arguments and its result."""

    name: str
    arguments: dict[str, Any] | None = None
    result: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.arguments is not None:
            out["arguments"] = self.arguments
        if self.result is not None:
            out["result"] = self.result
        return out


@dataclass(frozen=True)
class MessageIn:
    """A message handed to the capture API."""

    role: str
    content: str
    created_at: str | None = None
    speaker: str | None = None
    external_id: str | None = None
    tool_calls: tuple[ToolTrace, ...] = ()


@dataclass(frozen=True)
class RawMessage:
    """A stored message (L5 evidence)."""

    id: int
    role: str
    content: str
    created_at: str
    thread: str
    position: int
    turn: int
    speaker: str | None = None
    external_id: str | None = None
    block_id: int | None = None
    tool_calls: tuple[ToolTrace, ...] = ()
