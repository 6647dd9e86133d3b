"""JSON Lines: one message per line, any number of threads, one transaction per file.

The file is read twice: once to validate every line (keeping only where each thread's lines
are), then, as it is written, each thread's lines are read again from those places. A file of
a million lines is never held in memory, and a bad line still stops the ingest before any write.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from dataclasses import dataclass, field
from datetime import timezone, tzinfo
from pathlib import Path
from typing import Iterator

from core.errors import InvalidInputError
from core.ingest import Unit
from core.jsoninput import TOO_DEEP, check_surrogates, nesting_position
from core.services.capture import coerce_message
from core.services.spaces import validate_name
from core.timeutil import parse_timestamp, to_iso

REQUIRED = ("thread", "role", "content", "created_at")


@dataclass(frozen=True)
class JsonlThread:
    """One thread's lines of a validated file, read again when written (``messages`` is an iterable,
    not a tuple: see the module docstring). Shaped like ``ThreadBatch``."""

    path: Path
    thread: str
    tz: tzinfo
    starts: array = field(default_factory=lambda: array("q"))  # byte offset of each line
    numbers: array = field(default_factory=lambda: array("q"))  # its line number
    close_turn: bool = False
    close_thread: bool = False

    @property
    def size(self) -> int:
        return len(self.starts)

    @property
    def messages(self) -> Iterator[dict]:
        with self.path.open("rb") as handle:
            for start, lineno in zip(self.starts, self.numbers):
                handle.seek(start)
                parsed = _parse_line(self.path, lineno, handle.readline(), self.tz)
                if parsed is None or parsed[0] != self.thread:
                    raise InvalidInputError(f"{self.path}:{lineno}: the file changed while it was being ingested")
                yield parsed[1]


def parse_jsonl(path: Path, *, namespace: str | None, limit: int | None, tz: tzinfo | None) -> list[Unit]:
    tz = tz or timezone.utc
    threads: dict[str, JsonlThread] = {}
    count = 0
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read file: {exc}") from exc
    with handle:
        start = 0
        for lineno, raw in enumerate(handle, 1):
            parsed = _parse_line(path, lineno, raw, tz)
            if parsed is not None:
                thread = threads.setdefault(parsed[0], JsonlThread(path, parsed[0], tz))
                thread.starts.append(start)
                thread.numbers.append(lineno)
                count += 1
                if limit and count >= limit:
                    break
            start += len(raw)
    if not threads:
        raise InvalidInputError(f"{path}: no messages")
    return [Unit(namespace=namespace or "default", receipt_id=None, threads=tuple(threads.values()), label=path.name)]


def _parse_line(path: Path, lineno: int, raw: bytes, tz: tzinfo) -> tuple[str, dict] | None:
    """(thread, message) of one validated line; None for a blank line."""
    where = f"{path}:{lineno}"
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{where}: not UTF-8 text: {exc}") from exc
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where}: not valid JSON: {exc.msg} (column {exc.colno})") from exc
    except RecursionError:
        position = nesting_position(line)
        raise InvalidInputError(f"{where}{f':{position[1]}' if position else ''}: {TOO_DEEP}") from None
    check_surrogates(obj, raw, where)
    if not isinstance(obj, dict):
        raise InvalidInputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    for key in REQUIRED:
        if key not in obj:
            raise InvalidInputError(f"{where}: missing field {key!r}")
    thread = obj["thread"]
    if not isinstance(thread, str) or not thread.strip():
        raise InvalidInputError(f"{where}: thread: expected a non-empty string, got {thread!r}")
    try:
        name = validate_name(thread, "thread")  # the stored spelling: lines ' a' and 'a' are one thread
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None
    message = coerce_message(obj, where)
    stamp = parse_timestamp(message.created_at, tz, where=f"{where}: created_at")
    ident = message.external_id or hashlib.sha256(line.strip().encode("utf-8")).hexdigest()[:20]
    return name, {
        "role": message.role,
        "content": message.content,
        "created_at": to_iso(stamp),
        "speaker": message.speaker,
        "external_id": message.external_id,
        "tool_calls": [t.to_json() for t in message.tool_calls] or None,
        "receipt": f"jsonl:{thread.strip()}:{ident}",
        "where": where,
    }
