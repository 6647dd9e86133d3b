"""Block decay: how deep a ready block is shown as newer blocks arrive.

Age is counted in newer *ready* blocks of the same thread, never in days; open-tail
turns and pending blocks age nothing.
"""

from __future__ import annotations

import math

from core.errors import InvalidInputError

# (weight threshold, levels dropped from the anchor): the first row whose threshold the
# weight exceeds wins; below all of them the full five levels are dropped.
_DROP_TABLE = ((0.7, 0), (0.5, 1), (0.3, 2), (0.15, 3), (0.08, 4))


def decay_weight(age: int, lam: float) -> float:
    return math.exp(-lam * max(0, age))


def levels_dropped(weight: float) -> int:
    for threshold, dropped in _DROP_TABLE:
        if weight > threshold:
            return dropped
    return 5


def decayed_level(anchor_level: int, age: int, lam: float) -> int:
    """The level shown for a block anchored at ``anchor_level`` that is ``age`` blocks old."""
    return max(0, min(5, anchor_level - levels_dropped(decay_weight(age, lam))))


LEVELS = "0..5, L0..L5 or raw"
NEXT = ("next", "+1")  # one level deeper than shown now


def parse_level(value: object) -> int:
    """A level as a caller names it: 0..5, "0".."5", "L0".."L5" (any case) or "raw" (L5)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 5:
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "raw":
            return 5
        text = text[1:] if text.startswith("l") else text
        if len(text) == 1 and text in "012345":
            return int(text)
    raise InvalidInputError(f"level must be {LEVELS}, got {value!r}")


def normalize_target(target: object, current: int) -> int:
    """The level an expansion target names: ``next`` (or "+1", or None) is one deeper than
    ``current`` (L5 stays L5); otherwise a level as ``parse_level`` reads it."""
    if target is None or (isinstance(target, str) and target.strip().lower() in NEXT):
        return min(5, current + 1)
    try:
        return parse_level(target)
    except InvalidInputError:
        raise InvalidInputError(f"expansion target must be next, {LEVELS}, got {target!r}") from None
