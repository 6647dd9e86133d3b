"""Read what a decision says it matched (subject, slot, value) from import rows, whatever shape
the decider gives it: the reason always names it in words, and a decision or match may also
carry it as fields. Neither the workbench nor the CLI may fail on a row without them."""

from __future__ import annotations

from typing import Any

FIELDS = ("subject", "slot", "value")
# Where a decider may nest the structured part of a decision or match.
NESTS = ("matched", "fact", "facts", "details", "detail", "evidence", "decision")


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _text(value: Any) -> str | None:
    if value is None or value == "" or value == () or value == []:
        return None
    if isinstance(value, (list, tuple, set, frozenset)):
        parts = [_text(v) for v in value]
        return ", ".join(p for p in parts if p) or None
    if isinstance(value, dict):
        return ", ".join(f"{k} {_text(v)}" for k, v in value.items() if _text(v)) or None
    return " ".join(str(value).split()) or None


def facts(obj: Any, depth: int = 0) -> list[tuple[str, str]]:
    """(field, text) for each of subject, slot and value that ``obj`` carries, directly or in
    one of the usual nests; empty when it carries none."""
    if obj is None or depth > 2:
        return []
    found = [(name, text) for name in FIELDS if (text := _text(_get(obj, name)))]
    if found:
        return found
    for nest in NESTS:
        inner = _get(obj, nest)
        if isinstance(inner, (list, tuple)):
            inner = next((i for i in inner if facts(i, depth + 1)), None)
        if inner is not None and inner is not obj and not isinstance(inner, (str, int, float)):
            found = facts(inner, depth + 1)
            if found:
                return found
    return []


def facts_text(obj: Any) -> str:
    """``subject Maya · slot home · value Porto``, or "" when nothing is carried."""
    return " · ".join(f"{name} {text}" for name, text in facts(obj))
