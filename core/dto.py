"""Plain, frozen dataclasses that cross the service boundary.

Services return these and never peewee rows, so no lazy query can run later on a
caller's thread (the workbench renders on its event loop).
"""

from __future__ import annotations

import dataclasses
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


def to_plain(value: Any) -> Any:
    """Dataclasses (and containers of them) as JSON-ready values: what the services return, as the
    CLI prints it and the workbench copies it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value
