"""Memory weight: how present an event is, from use alone (never from being retrieved).

Turn distance on the namespace-wide clock, never days. A recorded use resets the
distance and slows the decay; criticality sets a floor; supersession caps it.
"""

from __future__ import annotations

import math

from core.vocab import HIDDEN_EVENT_STATUSES

CRITICALITY_FLOORS = {"routine": 0.0, "preference": 0.3, "identity": 0.9, "safety": 1.0}
SUPERSEDED_CAP = 0.1


def memory_weight(
    *,
    status: str,
    current_turn: int,
    last_adopted_turn: int,
    mention_count: int,
    floor_weight: float = 0.0,
    forced_cap: float | None = None,
    pinned: bool = False,
) -> float:
    if status in HIDDEN_EVENT_STATUSES:
        return 0.0
    distance = max(0, current_turn - last_adopted_turn)
    uses = max(1, mention_count)
    rate = 0.15 / (1 + 1.5 * math.log(uses))
    weight = max(floor_weight, math.exp(-rate * distance))
    if forced_cap is not None:
        weight = min(weight, forced_cap)
    if pinned:
        weight = 1.0
    return weight


def floor_for(criticality: str) -> float:
    return CRITICALITY_FLOORS.get(criticality, 0.0)
