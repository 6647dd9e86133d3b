"""Offline recovery of an export that is not valid JSON as a whole.

Another assistant often wraps its JSON in prose ("Here is your export: {...} Let me know"),
sends a first draft and then a corrected one, or leaves a stray character behind. Without a
model we can only find such an embedded export: the last complete JSON object that has
candidates. Anything else is left to a model-backed provider (or rejected).
"""

from __future__ import annotations

from typing import Any

from core.providers.base import ProviderOutputError
from core.providers.jsonrecover import extract_json_object


def recover_offline(context: dict[str, Any]) -> dict[str, Any]:
    text = context.get("text") or ""
    for keys in (("candidates",), ("events",)):
        try:
            found = extract_json_object(text, keys)
        except ProviderOutputError:
            continue
        items = found.get(keys[0])
        if isinstance(items, list):
            return {"reason": "found a complete JSON export inside the text", "candidates": items}
    return {"reason": "no JSON export with candidates found in the text", "candidates": []}
