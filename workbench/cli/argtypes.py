"""argparse types the subcommands share: ids, limits, offsets, bounded counts and block levels.

A value out of range is a usage error that names the range (exit 2) before the store is
opened or any work starts; the services check the same bounds again for callers that are
not the CLI.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

from core.db import MAX_ROW_ID
from core.decay import NEXT, normalize_target, parse_level
from core.errors import InvalidInputError


def integer(low: int, high: int = MAX_ROW_ID) -> Callable[[str], int]:
    """An integer from ``low`` to ``high`` (default: the largest id the database can hold)."""
    shown = "2^63-1" if high == MAX_ROW_ID else str(high)

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from {low} to {shown}, got {text}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its messages
    return parse


def float_in(low: float, high: float) -> Callable[[str], float]:
    """A number from ``low`` to ``high``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if math.isnan(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g}, got {text}")
        return value

    return parse


ROW_ID = integer(1)  # a block, event, job, trace or batch id
positive_int = integer(1)


def level(text: str) -> int:
    """A block level: 0..5, L0..L5 or raw."""

    try:
        return parse_level(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def expansion_target(text: str) -> int | str:
    """What to expand a block to: next, or a level as ``level`` reads it."""

    if text.strip().lower() in NEXT:
        return "next"
    try:
        return normalize_target(text, 0)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def namespace_name(text: str) -> str:
    """A --namespace value, spelled as the store spells it (``core.services.spaces.validate_name``:
    stripped, NFC). Blank would otherwise read as "not given" (every namespace, or the only one),
    so a command meant for one namespace would act on another or on all."""
    # start-up time: `import workbench.cli` loads this module; spaces loads core.models
    from core.services.spaces import validate_name

    try:
        return validate_name(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def thread_name(text: str) -> str:
    """A --thread value, spelled as the store spells thread names."""
    # start-up time: as in namespace_name
    from core.services.spaces import validate_name

    try:
        return validate_name(text, "thread")
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
