"""LongMemEval: one namespace per question, one thread per haystack session."""

from __future__ import annotations

import re
from datetime import datetime, timezone, tzinfo
from pathlib import Path

from core.errors import InvalidInputError
from core.ingest import ThreadBatch, Unit
from core.ingest.common import load_json, require
from core.timeutil import to_iso

_DATE_RE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]{3}\))?\s*(\d{1,2}):(\d{2})\s*$")


def parse_lme_date(text: object, tz: tzinfo, where: str) -> datetime:
    """Parse LongMemEval's "2023/05/30 (Tue) 23:40"."""
    match = _DATE_RE.match(text) if isinstance(text, str) else None
    if not match:
        raise InvalidInputError(f"{where}: {text!r} is not a date like '2023/05/30 (Tue) 23:40'")
    year, month, day, hour, minute = (int(g) for g in match.groups())
    try:
        return datetime(year, month, day, hour, minute, tzinfo=tz)
    except ValueError as exc:
        raise InvalidInputError(f"{where}: {text!r}: {exc}") from exc


def parse_longmemeval(path: Path, *, namespace: str | None, limit: int | None, tz: tzinfo | None) -> list[Unit]:
    data = load_json(path)
    if not isinstance(data, list):
        raise InvalidInputError(f"{path}: expected a JSON list of questions, got {type(data).__name__}")
    tz = tz or timezone.utc
    units: list[Unit] = []
    for index, item in enumerate(data[:limit] if limit else data):
        where = f"{path}: item {index}"
        qid = require(item, "question_id", str, where)
        where = f"{path}: item {index} ({qid})"
        ids = require(item, "haystack_session_ids", list, where)
        dates = require(item, "haystack_dates", list, where)
        sessions = require(item, "haystack_sessions", list, where)
        if not len(ids) == len(dates) == len(sessions):
            raise InvalidInputError(
                f"{where}: haystack_session_ids, haystack_dates and haystack_sessions differ in length "
                f"({len(ids)}, {len(dates)}, {len(sessions)})"
            )
        batches = []
        seen: dict[str, int] = {}
        for s_index, (session_id, date, turns) in enumerate(zip(ids, dates, sessions)):
            s_where = f"{where}: session {s_index}"
            if not isinstance(session_id, str):
                raise InvalidInputError(f"{s_where}: session id: expected str, got {type(session_id).__name__}")
            stamp = to_iso(parse_lme_date(date, tz, f"{s_where}: haystack_dates"))
            if not isinstance(turns, list):
                raise InvalidInputError(f"{s_where}: expected a list of turns, got {type(turns).__name__}")
            messages = []
            for t_index, turn in enumerate(turns):
                t_where = f"{s_where} turn {t_index}"
                role = require(turn, "role", str, t_where)
                if role not in ("user", "assistant"):
                    raise InvalidInputError(f"{t_where}: field 'role': expected user or assistant, got {role!r}")
                content = require(turn, "content", str, t_where)
                if not content.strip():
                    # The published haystacks hold a few empty turns; they carry no evidence.
                    continue
                messages.append(
                    {
                        "role": role,
                        "content": content,
                        "created_at": stamp,
                        "external_id": f"{session_id}:{t_index}",
                    }
                )
            if messages:
                # A few haystacks show the same session twice (on different dates); each
                # showing gets its own thread, the external ids still name the session.
                seen[session_id] = seen.get(session_id, 0) + 1
                name = session_id if seen[session_id] == 1 else f"{session_id} (repeat {seen[session_id]})"
                thread = name if namespace is None else f"{qid}/{name}"
                batches.append(ThreadBatch(thread=thread, messages=tuple(messages), close_thread=True))
        units.append(
            Unit(
                namespace=namespace or qid,
                receipt_id=f"longmemeval:{qid}",
                threads=tuple(batches),
                label=qid,
                where=f"item {index} ({qid})",
            )
        )
    return units
