"""JSON Lines: one message per line, any number of threads, one transaction per file."""

from __future__ import annotations

import hashlib
import json
from datetime import timezone, tzinfo
from pathlib import Path

from core.errors import InvalidInputError
from core.ingest import ThreadBatch, Unit
from core.services.capture import coerce_message
from core.timeutil import parse_timestamp, to_iso

REQUIRED = ("thread", "role", "content", "created_at")


def parse_jsonl(path: Path, *, namespace: str | None, limit: int | None, tz: tzinfo | None) -> list[Unit]:
    tz = tz or timezone.utc
    threads: dict[str, list[dict]] = {}
    count = 0
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read file: {exc}") from exc
    with handle:
        try:
            # Read as parsed, not held: the raw lines of a million-line file are ~300 MB more.
            for lineno, line in enumerate(handle, 1):
                if _parse_line(path, lineno, line, tz, threads):
                    count += 1
                    if limit and count >= limit:
                        break
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{path}: not UTF-8 text: {exc}") from exc
    if not threads:
        raise InvalidInputError(f"{path}: no messages")
    batches = tuple(ThreadBatch(thread=name, messages=tuple(msgs), close_turn=False) for name, msgs in threads.items())
    return [Unit(namespace=namespace or "default", receipt_id=None, threads=batches, label=path.name)]


def _parse_line(path: Path, lineno: int, line: str, tz: tzinfo, threads: dict[str, list[dict]]) -> bool:
    """Validate one line and add its message to its thread; False for a blank line."""
    if not line.strip():
        return False
    where = f"{path}:{lineno}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where}: not valid JSON: {exc.msg} (column {exc.colno})") from exc
    if not isinstance(obj, dict):
        raise InvalidInputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    for key in REQUIRED:
        if key not in obj:
            raise InvalidInputError(f"{where}: missing field {key!r}")
    thread = obj["thread"]
    if not isinstance(thread, str) or not thread.strip():
        raise InvalidInputError(f"{where}: thread: expected a non-empty string, got {thread!r}")
    message = coerce_message(obj, where)
    stamp = parse_timestamp(message.created_at, tz, where=f"{where}: created_at")
    ident = message.external_id or hashlib.sha256(line.strip().encode("utf-8")).hexdigest()[:20]
    threads.setdefault(thread.strip(), []).append({
        "role": message.role,
        "content": message.content,
        "created_at": to_iso(stamp),
        "speaker": message.speaker,
        "external_id": message.external_id,
        "tool_calls": [t.to_json() for t in message.tool_calls] or None,
        "receipt": f"jsonl:{thread.strip()}:{ident}",
        "where": where,
    })
    return True
