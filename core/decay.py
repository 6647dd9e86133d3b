"""Block decay: how deep a ready block is shown as newer blocks arrive.

Age is counted in newer *ready* blocks of the same thread, never in days; open-tail
turns and pending blocks age nothing.
"""

from __future__ import annotations

import math

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


def normalize_target(target: object, current: int) -> int:
    """Map an expansion target (``next``, ``raw``, ``L3``, 3, "+1", None) to a level 0..5."""
    if target is None:
        return min(5, current + 1)
    if isinstance(target, bool):
        return min(5, current + 1)
    if isinstance(target, (int, float)):
        return max(0, min(5, round(target)))
    text = str(target).strip().lower()
    if text in ("raw", "l5", "5"):
        return 5
    if text in ("next", "+1", ""):
        return min(5, current + 1)
    if len(text) == 2 and text[0] == "l" and text[1] in "012345":
        return int(text[1])
    try:
        return max(0, min(5, round(float(text))))
    except ValueError:
        return min(5, current + 1)
