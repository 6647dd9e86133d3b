"""Recover one JSON object from a model's free-text reply.

Models asked for a tool call sometimes answer in prose instead: a UTF-8 BOM, some
reasoning, a fenced ```json block, a draft followed by a corrected version, a few
stray characters at the end. This module finds the top-level ``{...}`` spans in such
text, keeps the ones that parse as JSON objects, and returns the last one that has
every required key.

A reply that ends inside an object that looks like JSON (``{"`` ...) counts as cut
off: objects nested inside it are its members, not answers, so they are ignored.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from core.providers.base import ProviderOutputError

_BOM = "\ufeff"
_JSONISH_START = re.compile(r"\{\s*(?:\"|\})")


def _matching_brace(text: str, start: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``start`` (strings respected), or None if unclosed."""
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _scan(text: str) -> tuple[list[dict[str, Any]], bool]:
    """All parseable top-level objects in order, and whether the text ends inside an object."""
    found: list[dict[str, Any]] = []
    pos = 0
    while True:
        start = text.find("{", pos)
        if start < 0:
            return found, False
        end = _matching_brace(text, start)
        if end is None:
            if _JSONISH_START.match(text, start):
                # A JSON object that never closes: the reply was cut off here.
                return found, True
            pos = start + 1  # a stray brace in prose; keep looking after it
            continue
        try:
            value = json.loads(text[start : end + 1])
        except ValueError:
            pos = start + 1  # balanced but not JSON (e.g. "{name}"); objects may sit inside
            continue
        if isinstance(value, dict):
            found.append(value)
        pos = end + 1


def extract_json_object(text: str, required_keys: Iterable[str] = ()) -> dict[str, Any]:
    """The last complete JSON object in ``text`` that has all ``required_keys``.

    Raises ProviderOutputError with a short reason when the text holds no such object
    (including when the only candidate was cut off before its closing brace).
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise ProviderOutputError("reply is not valid UTF-8") from None
    if not isinstance(text, str):
        raise ProviderOutputError(f"reply is not text ({type(text).__name__})")
    required = tuple(required_keys)
    body = text.lstrip().lstrip(_BOM)
    if not body.strip():
        raise ProviderOutputError("reply is empty")
    # Fast path: the whole reply is one object.
    try:
        whole = json.loads(body)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and all(k in whole for k in required):
        return whole

    candidates, truncated = _scan(body)
    for obj in reversed(candidates):
        if all(k in obj for k in required):
            return obj
    if truncated:
        raise ProviderOutputError("reply was truncated inside a JSON object")
    if not candidates:
        raise ProviderOutputError("reply holds no JSON object")
    raise ProviderOutputError("reply holds no JSON object with keys " + ", ".join(required))


__all__ = ["extract_json_object"]
