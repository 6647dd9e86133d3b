"""Token accounting for model calls, and a cost estimate from configurable prices.

What a provider reports (the ``usage`` object of an OpenAI-compatible response) is kept apart
from Strata's own estimate (``core.tokens``) of what it sent and received: the estimate is only
there to see a gap (a call without ``usage``, a tokenizer far from four characters a token), and
never enters the cost. The cost is an estimate from the prices configured here, not a bill: a
provider's cache discounts, free tiers and price changes are unknown to Strata.
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping

from core.errors import InvalidInputError

PRICE_INPUT_ENV = "STRATA_PRICE_INPUT_PER_MTOK"
PRICE_OUTPUT_ENV = "STRATA_PRICE_OUTPUT_PER_MTOK"
# DeepSeek's published list prices for deepseek-chat in US dollars per million tokens (input on a
# cache miss, output), as of late 2025. They change: set the variables above for your provider.
DEFAULT_PRICE_INPUT_PER_MTOK = 0.28
DEFAULT_PRICE_OUTPUT_PER_MTOK = 0.42
CURRENCY = "USD"

FIELDS = (
    "calls",  # HTTP exchanges made, answered or not
    "reported_calls",  # exchanges whose response carried usage
    "prompt_tokens",  # as the provider reported them
    "completion_tokens",
    "cached_prompt_tokens",  # of prompt_tokens, served from the provider's cache (when it says so)
    "estimated_prompt_tokens",  # Strata's estimate of what it sent (core.tokens)
    "estimated_completion_tokens",  # and of what came back
)


def empty() -> dict[str, int]:
    return {name: 0 for name in FIELDS}


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def normalized(usage: Mapping[str, Any] | None) -> dict[str, int]:
    """Every field present, a non-negative integer (a stored row from an older Strata lacks some)."""
    out = empty()
    for name in FIELDS:
        out[name] = _count((usage or {}).get(name))
    return out


def add(*parts: Mapping[str, Any] | None) -> dict[str, int]:
    total = empty()
    for part in parts:
        if part:
            for name, value in normalized(part).items():
                total[name] += value
    return total


def delta(after: Mapping[str, Any], before: Mapping[str, Any]) -> dict[str, int]:
    a, b = normalized(after), normalized(before)
    return {name: max(0, a[name] - b[name]) for name in FIELDS}


def is_empty(usage: Mapping[str, Any] | None) -> bool:
    return not any(normalized(usage).values())


def reported(body: Any) -> tuple[int, int, int] | None:
    """(prompt, completion, cached prompt) tokens from a chat-completions body's ``usage``, or
    None when it has none. DeepSeek says ``prompt_cache_hit_tokens``, OpenAI
    ``prompt_tokens_details.cached_tokens``."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(prompt, (int, float)) and not isinstance(completion, (int, float)):
        return None
    details = usage.get("prompt_tokens_details")
    cached = usage.get("prompt_cache_hit_tokens")
    if cached is None and isinstance(details, dict):
        cached = details.get("cached_tokens")
    return _count(prompt), _count(completion), _count(cached)


def _price(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise InvalidInputError(f"{name} must be a price per million tokens (a number ≥ 0), got {raw!r}")
    return value


def prices() -> dict[str, Any]:
    """The configured prices per million tokens; the defaults are DeepSeek's published ones."""
    input_price = _price(PRICE_INPUT_ENV, DEFAULT_PRICE_INPUT_PER_MTOK)
    output_price = _price(PRICE_OUTPUT_ENV, DEFAULT_PRICE_OUTPUT_PER_MTOK)
    configured = bool(os.environ.get(PRICE_INPUT_ENV, "").strip() or os.environ.get(PRICE_OUTPUT_ENV, "").strip())
    return {
        "input_per_mtok": input_price,
        "output_per_mtok": output_price,
        "currency": CURRENCY,
        "source": "configured"
        if configured
        else "default (DeepSeek's published deepseek-chat prices; may be out of date)",
    }


def cost_estimate(usage: Mapping[str, Any] | None, price: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An estimate of what the reported tokens cost: every prompt token at the input price (cache
    hits are usually cheaper, so this errs high), every completion token at the output price."""
    price = dict(price or prices())
    u = normalized(usage)
    amount = (u["prompt_tokens"] * price["input_per_mtok"] + u["completion_tokens"] * price["output_per_mtok"]) / 1e6
    note = "an estimate from configured prices, not a bill"
    unreported = u["calls"] - u["reported_calls"]
    if unreported:
        note += f"; {unreported} call(s) reported no usage and are not counted"
    return {"estimated_cost": round(amount, 6), **price, "note": note}


def describe(usage: Mapping[str, Any] | None, price: Mapping[str, Any] | None = None) -> str:
    """One line for a person: calls, reported tokens, Strata's estimate and the estimated cost."""
    u = normalized(usage)
    cost = cost_estimate(u, price)
    text = (
        f"{u['calls']} model call(s): {u['prompt_tokens']} prompt + {u['completion_tokens']} completion tokens reported"
    )
    if u["cached_prompt_tokens"]:
        text += f" ({u['cached_prompt_tokens']} prompt tokens cached)"
    text += (
        f"; Strata's estimate {u['estimated_prompt_tokens']} + {u['estimated_completion_tokens']}; "
        f"estimated cost {cost['estimated_cost']:.4f} {cost['currency']} at {cost['input_per_mtok']:g} / "
        f"{cost['output_per_mtok']:g} per million input / output tokens ({cost['note']})"
    )
    return text


__all__ = [
    "CURRENCY",
    "DEFAULT_PRICE_INPUT_PER_MTOK",
    "DEFAULT_PRICE_OUTPUT_PER_MTOK",
    "FIELDS",
    "PRICE_INPUT_ENV",
    "PRICE_OUTPUT_ENV",
    "add",
    "cost_estimate",
    "delta",
    "describe",
    "empty",
    "is_empty",
    "normalized",
    "prices",
    "reported",
]
