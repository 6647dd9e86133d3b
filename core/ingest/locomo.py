"""LoCoMo: one namespace (and one thread) per conversation, speakers and dia_ids kept."""

from __future__ import annotations

import re
from datetime import datetime, timezone, tzinfo
from pathlib import Path

from core.errors import InvalidInputError
from core.ingest import ThreadBatch, Unit
from core.ingest.common import load_json, require
from core.services.capture import coerce_message
from core.timeutil import to_iso

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DATE_RE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.IGNORECASE)
_MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}


def parse_session_date(text: str, tz: tzinfo, where: str) -> datetime:
    """Parse LoCoMo's "1:56 pm on 8 May, 2023"."""
    match = _DATE_RE.match(text) if isinstance(text, str) else None
    if not match:
        raise InvalidInputError(f"{where}: {text!r} is not a date like '1:56 pm on 8 May, 2023'")
    hour, minute, ampm, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower()) or next(
        (n for name, n in _MONTHS.items() if name.startswith(month_name.lower()) and len(month_name) >= 3), None
    )
    if month is None:
        raise InvalidInputError(f"{where}: unknown month {month_name!r} in {text!r}")
    hour_24 = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    try:
        return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=tz)
    except ValueError as exc:
        raise InvalidInputError(f"{where}: {text!r}: {exc}") from exc


def turn_text(turn: dict, where: str) -> str:
    text = require(turn, "text", str, where)
    caption = turn.get("blip_caption")
    if caption is not None:
        if not isinstance(caption, str):
            raise InvalidInputError(f"{where}: field 'blip_caption': expected str, got {type(caption).__name__}")
        text = f"{text} [image: {caption}]"
    return text


def parse_locomo(path: Path, *, namespace: str | None, limit: int | None, tz: tzinfo | None) -> list[Unit]:
    data = load_json(path)
    if not isinstance(data, list):
        raise InvalidInputError(f"{path}: expected a JSON list of conversations, got {type(data).__name__}")
    tz = tz or timezone.utc
    units: list[Unit] = []
    for index, sample in enumerate(data[:limit] if limit else data):
        where = f"{path}: item {index}"
        sample_id = require(sample, "sample_id", str, where).strip()
        if not sample_id:
            raise InvalidInputError(f"{where}: field 'sample_id': must not be blank")
        where = f"{path}: item {index} ({sample_id})"
        conv = require(sample, "conversation", dict, where)
        speaker_a = require(conv, "speaker_a", str, f"{where}.conversation")
        sessions = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.match(key)))
        messages: list[dict] = []
        for number, key in sessions:
            turns = conv[key]
            if not isinstance(turns, list):
                raise InvalidInputError(f"{where}: field {key!r}: expected list, got {type(turns).__name__}")
            if not turns:
                continue
            date_key = f"{key}_date_time"
            stamp = parse_session_date(
                require(conv, date_key, str, f"{where}.conversation"), tz, f"{where}: field {date_key!r}"
            )
            for t_index, turn in enumerate(turns):
                t_where = f"{where}: {key}[{t_index}]"
                speaker = require(turn, "speaker", str, t_where)
                dia_id = require(turn, "dia_id", str, t_where)
                message = {
                    "role": "user" if speaker == speaker_a else "assistant",
                    "speaker": speaker,
                    "content": turn_text(turn, t_where),
                    "created_at": to_iso(stamp),
                    "external_id": dia_id,
                }
                coerce_message(message, t_where)  # the capture rules, checked before anything is written
                messages.append(message)
        if not messages:
            raise InvalidInputError(f"{where}: conversation has no turns")
        units.append(
            Unit(
                namespace=namespace or sample_id,
                receipt_id=f"locomo:{sample_id}",
                threads=(ThreadBatch(thread=sample_id, messages=tuple(messages), close_thread=True),),
                label=sample_id,
                where=f"item {index} ({sample_id})",
            )
        )
    return units
