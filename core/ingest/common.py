"""Shared helpers for the ingest parsers: loading files and reporting locations."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from core.errors import InvalidInputError
from core.jsoninput import TOO_DEEP, check_surrogates, nesting_position


def load_json(path: Path) -> Any:
    """Load a JSON (or .gz JSON) file; a syntax error names the line and column."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                text = handle.read()
        else:
            text = path.read_text(encoding="utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: cannot read file: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from exc
    except RecursionError:
        position = nesting_position(text)
        at = f":{position[0]}:{position[1]}" if position else ""
        raise InvalidInputError(f"{path}{at}: {TOO_DEEP}") from None
    check_surrogates(data, text, str(path), items=isinstance(data, list))
    return data


def require(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]`` checked for type; the error names ``where`` and the field."""
    if not isinstance(obj, dict):
        raise InvalidInputError(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        raise InvalidInputError(f"{where}: missing field {key!r}")
    value = obj[key]
    if (
        not isinstance(value, kind)
        or isinstance(value, bool)
        and bool not in (kind if isinstance(kind, tuple) else (kind,))
    ):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise InvalidInputError(f"{where}: field {key!r}: expected {names}, got {type(value).__name__}")
    return value
