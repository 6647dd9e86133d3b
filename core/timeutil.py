"""Timezone-aware timestamps.

Every stored timestamp is ISO-8601 with an explicit offset. A source's own offset is
kept (never forced to one zone); only naive input is given an offset, the caller's
``default_tz`` (UTC unless configured).
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone, tzinfo

from core.errors import InvalidInputError

_OFFSET_RE = re.compile(r"^(?:UTC)?([+-])(\d{1,2}):?(\d{2})$")


def parse_tz(text: str | None) -> tzinfo:
    """Parse ``UTC``, ``Z``, ``+02:00``, ``-0530`` or an IANA zone name into a tzinfo."""
    if text is None or text.strip() in ("", "UTC", "Z", "utc"):
        return timezone.utc
    text = text.strip()
    match = _OFFSET_RE.match(text)
    if match:
        sign, hours, minutes = match.groups()
        # timezone() raises a bare ValueError past ±24 h; real offsets stay within -12:00..+14:00.
        if int(hours) > 23 or int(minutes) > 59:
            raise InvalidInputError(
                f"timezone offset {text!r} is out of range: hours 0-23 and minutes 0-59, like +02:00 or -05:30"
            )
        delta = timedelta(hours=int(hours), minutes=int(minutes))
        return timezone(delta if sign == "+" else -delta)
    try:
        # start-up time: zoneinfo (~2 ms) is loaded only for a named zone
        from zoneinfo import ZoneInfo

        return ZoneInfo(text)
    except Exception as exc:  # zoneinfo raises several types for unknown names
        raise InvalidInputError(f"unknown timezone {text!r}: use UTC, an offset like +02:00 or an IANA name") from exc


def parse_timestamp(value: object, default_tz: tzinfo = timezone.utc, *, where: str = "created_at") -> datetime:
    """Parse an ISO-8601 string (or datetime) into an aware datetime.

    ``where`` names the field or location in the error message.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith("Z") or text.endswith("z"):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError as exc:
            raise InvalidInputError(f"{where}: {value!r} is not an ISO-8601 date or time") from exc
    else:
        raise InvalidInputError(f"{where}: expected an ISO-8601 string, got {type(value).__name__}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=default_tz)
    return dt


def to_iso(dt: datetime) -> str:
    """Render an aware datetime as ISO-8601, seconds precision unless it has microseconds."""
    spec = "microseconds" if dt.microsecond else "seconds"
    return dt.isoformat(timespec=spec)


def to_epoch(dt: datetime) -> float:
    return dt.timestamp()


def now_local() -> datetime:
    """Current time in the machine's local offset (a captured turn keeps the writer's zone)."""
    return datetime.now().astimezone()


def now_iso() -> str:
    return to_iso(now_local())


def monotonic() -> float:
    return time.monotonic()


def wall() -> float:
    """Wall-clock epoch seconds; separate so tests can patch it."""
    return time.time()


def period_bounds(value: str | None, tz: tzinfo) -> tuple[float, float] | None:
    """Epoch bounds of a date at its own precision: "2023" is the whole year, "2023-05" the
    month, "2023-05-07" the day, a full ISO instant just that instant. None if unparseable."""
    if not value or not isinstance(value, str):
        return None
    text = value.strip()
    try:
        if re.fullmatch(r"\d{4}", text):
            start = datetime(int(text), 1, 1, tzinfo=tz)
            end = datetime(int(text) + 1, 1, 1, tzinfo=tz)
        elif re.fullmatch(r"\d{4}-\d{2}", text):
            year, month = int(text[:4]), int(text[5:7])
            start = datetime(year, month, 1, tzinfo=tz)
            end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=tz)
        elif re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            start = datetime.fromisoformat(text).replace(tzinfo=tz)
            end = start + timedelta(days=1)
        else:
            instant = parse_timestamp(text, tz)
            return instant.timestamp(), instant.timestamp()
    except (ValueError, InvalidInputError):
        return None
    return start.timestamp(), end.timestamp() - 1e-3


def range_bounds(
    date_from: str | None, date_to: str | None, names: str = "from/to"
) -> tuple[float | None, float | None]:
    """(earliest, latest) epoch of a "from … to …" filter in UTC, each end at its own precision
    (None where not given); a date that does not parse is refused under ``names``."""
    start, end = (date_from or "").strip(), (date_to or "").strip()
    low = period_bounds(start, timezone.utc) if start else None
    high = period_bounds(end, timezone.utc) if end else None
    if (start and low is None) or (end and high is None):
        raise InvalidInputError(f"{names} must be dates like 2023, 2023-05 or 2023-05-07")
    return (low[0] if low else None), (high[1] if high else None)
