"""Normalising event types, scopes and criticality, and the temporal record of an event."""

from __future__ import annotations

import unicodedata
from typing import Any

from core.errors import InvalidInputError
from core.vocab import BASES, CRITICALITIES, EVENT_TYPES, PRECISIONS, SCOPES, TIME_STATUSES

_ALIASES = {
    "release": ("release", "released", "发布", "版本发布", "launch", "launched"),
    "decision": ("decision", "decided", "决定", "决策"),
    "task_completed": ("taskcompleted", "completed", "complete", "done", "完成", "任务完成"),
    "plan": ("plan", "planned", "planning", "计划"),
    "change": ("change", "changed", "变更", "修改"),
    "cancellation": ("cancellation", "cancelled", "canceled", "cancel", "取消"),
    "incident": ("incident", "故障"),
    "meeting": ("meeting", "会议"),
    "collaboration": ("collaboration", "协作"),
    "migration": ("migration", "迁移"),
}
_LOOKUP = {alias: canonical for canonical, aliases in _ALIASES.items() for alias in aliases}


def _key(value: str) -> str:
    text = unicodedata.normalize("NFKC", value).lower()
    return "".join(ch for ch in text if ch not in " _-\t\n")


def normalize_event_type(value: Any) -> str:
    """Map any spelling (English or Chinese, any case, with _ or -) to one of the 11 types."""
    if not isinstance(value, str) or not value.strip():
        return "other"
    key = _key(value)
    if key in EVENT_TYPES:
        return key
    if key == "taskcompleted":
        return "task_completed"
    return _LOOKUP.get(key, "other")


def filter_event_type(value: Any) -> str:
    """The type a filter asks for, in any spelling ``normalize_event_type`` reads; an unknown one is
    an error. A provider's unknown type is stored as "other", but a filter mapped to "other" would
    quietly answer with the other events instead of saying it named no type."""
    if isinstance(value, str) and value.strip():
        kind = normalize_event_type(value)
        if kind != "other" or _key(value) == "other":
            return kind
    raise InvalidInputError(
        f"unknown event type {value!r}; the types are {', '.join(EVENT_TYPES)} "
        "(or a spelling of one: decided, done, launched, 决定, …)"
    )


def normalize_scope(value: Any) -> str:
    return value if value in SCOPES else "project"


def normalize_criticality(value: Any) -> str:
    return value if value in CRITICALITIES else "routine"


_STRING_FIELDS = (
    "mentioned_at",
    "happened_start",
    "happened_end",
    "original_text",
    "precision",
    "basis",
    "status",
    "event_type",
)
_ID_LIST_FIELDS = (
    "supersedes_event_ids",
    "conflicts_with_event_ids",
    "before_event_ids",
    "after_event_ids",
    "related_event_ids",
    "supersedes_earlier",
    "restates_earlier",
    "superseded_by_event_ids",
)


def normalize_temporal(raw: Any) -> dict[str, Any]:
    """Keep only well-typed fields; a wrong-typed field is dropped, never the event.

    Unknown precision or basis removes the happened dates: an unresolved time stays unknown.
    """
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    for key in _STRING_FIELDS:
        value = raw.get(key)
        if isinstance(value, str) and value.strip():
            out[key] = value.strip()[:200]
    participants = raw.get("participants")
    if isinstance(participants, list) and all(isinstance(p, str) for p in participants):
        out["participants"] = list(dict.fromkeys(p.strip() for p in participants if p.strip()))[:24]
    for key in _ID_LIST_FIELDS:
        value = raw.get(key)
        if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            out[key] = list(dict.fromkeys(value))
    same = raw.get("same_event_id")
    if isinstance(same, int) and not isinstance(same, bool):
        out["same_event_id"] = same
    unchanged = raw.get("correction_unchanged")  # why a correction the card states changed nothing
    if isinstance(unchanged, dict):
        out["correction_unchanged"] = unchanged
    if out.get("precision") not in PRECISIONS:
        out.pop("precision", None)
    if out.get("basis") not in BASES:
        out.pop("basis", None)
    if out.get("status") not in TIME_STATUSES:
        out.pop("status", None)
    if out.get("precision", "unknown") == "unknown" or out.get("basis", "unknown") == "unknown":
        out.pop("happened_start", None)
        out.pop("happened_end", None)
        out["precision"] = "unknown"
        out["basis"] = "unknown"
    if "event_type" in out:
        out["event_type"] = normalize_event_type(out["event_type"])
    return out
