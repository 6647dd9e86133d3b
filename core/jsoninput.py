"""What ``json.loads`` accepts, or fails on, in ways a clear input error must cover.

- A lone surrogate: JSON may escape one (``"\\ud800"``) although it is no character. Python
  parses it, then UTF-8 cannot encode it, so hashing or storing the text fails half-way.
- Deep nesting: the parser recurses, and ``[[[[…`` a few thousand deep raises RecursionError
  with no position.
"""

from __future__ import annotations

import re
from typing import Any

from core.errors import InvalidInputError

MAX_DEPTH = 512  # nesting depth named in the error; RecursionError means the input went well past it

_SURROGATE = re.compile("[\ud800-\udfff]")
# Text decoded from UTF-8 holds no surrogate, so one can only come from a \uD800-\uDFFF escape.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def _may_hold_surrogates(text: str | bytes) -> bool:
    """Whether JSON ``text`` escapes a surrogate (cheap: decides whether parsed values need a look)."""
    pattern = _SURROGATE_ESCAPE_BYTES if isinstance(text, bytes) else _SURROGATE_ESCAPE
    return pattern.search(text) is not None


def printable(text: str) -> str:
    """``text`` with any lone surrogate written as its escape, so an error message can be printed."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if _SURROGATE.search(text) else text


def lone_surrogate(value: Any) -> tuple[list[str | int], str] | None:
    """The path (keys and list indexes) to the first string in ``value`` (keys included) that holds a
    lone surrogate, and that surrogate's escape; None when there is none."""
    stack: list[tuple[list[str | int], Any]] = [([], value)]
    while stack:  # not recursive: the value may be nested as deep as the parser allowed
        path, item = stack.pop()
        if isinstance(item, str):
            found = _SURROGATE.search(item)
            if found:
                return path, f"\\u{ord(found.group()):04x}"
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                found = _SURROGATE.search(key) if isinstance(key, str) else None
                if found:
                    return [*path, key], f"\\u{ord(found.group()):04x}"
                children.append(([*path, key], child))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([([*path, index], child) for index, child in enumerate(item)]))
    return None


def field_path(path: list[str | int]) -> str:
    """``["candidates", 1, "title"]`` as ``candidates[1].title``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{printable(part)}" if out else printable(part))
    return out


def surrogate_message(found: tuple[list[str | int], str]) -> str:
    return f"{found[1]} is a lone surrogate, not a Unicode character: the text cannot be stored"


def check_surrogates(
    value: Any,
    source: str | bytes | None,
    where: str,
    *,
    items: bool = False,
    error: type[InvalidInputError] = InvalidInputError,
) -> None:
    """Raise ``error`` naming ``where`` and the field when ``value``, parsed from the JSON text
    ``source``, holds a lone surrogate (only looked for when ``source`` escapes one; always when
    ``source`` is None: a value a model provider answered). With ``items`` a top-level list index
    is named as "item N"."""
    if source is not None and not _may_hold_surrogates(source):
        return
    found = lone_surrogate(value)
    if found is None:
        return
    path = found[0]
    if items and path and isinstance(path[0], int):
        rest = field_path(path[1:])
        location = f"item {path[0]}" + (f": field '{rest}'" if rest else "")
    else:
        location = f"field '{field_path(path)}'" if path else "value"
    raise error(f"{where}: {location}: {surrogate_message(found)}")


def nesting_position(text: str, limit: int = MAX_DEPTH) -> tuple[int, int] | None:
    """(line, column) where arrays and objects in ``text`` first nest deeper than ``limit``."""
    depth = 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                start = match.start()
                return text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start)
        elif token in "]}":
            depth -= 1
    return None


TOO_DEEP = f"JSON nested too deeply to read (more than {MAX_DEPTH} levels of arrays and objects)"
