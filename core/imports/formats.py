"""Parsing exported memory from another assistant into import candidates.

Three formats, one candidate shape:

- ``v2``: the ``stratagate.external-memory.v2`` JSON (v1 accepted), strict — every limit and
  enum rule of the format is checked and any violation rejects the whole input with its
  location. Markdown code fences around the JSON are stripped; anything else that is not
  JSON is rejected (the service may then try the provider's recovery path).
- ``mem0``: a Mem0-style export, a JSON list of memories (or ``{"results": [...]}``) with the
  memory text, created/updated times and optional metadata and categories.
- ``text``: a plain Markdown or text list, one fact per bullet (or per line when there are
  no bullets).

Everything here is pure: no database, no model. A candidate is a plain dict with the keys
``title``, ``summary``, ``tags``, ``quotes``, ``temporal`` (snake_case keys as in events),
``scope``, ``criticality`` and optionally ``narrative``, ``confidence``, ``memory_kind``,
``category`` and ``external_id``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from core.errors import InvalidInputError
from core.eventtypes import normalize_event_type
from core.jsoninput import TOO_DEEP, check_surrogates, nesting_position
from core.vocab import BASES, CRITICALITIES, PRECISIONS, SCOPES, TIME_STATUSES
from core.timeutil import period_bounds

FORMATS = ("v2", "mem0", "text")
MAX_BYTES = 4_000_000  # "4 MB": anything larger is refused before it is parsed
MAX_CANDIDATES = 200
SCHEMA_VERSIONS = ("stratagate.external-memory.v2", "stratagate.external-memory.v1")
SOURCE_TYPE = "external_ai_memory_export"
MEMORY_KINDS = ("instruction", "preference", "fact", "event")
CATEGORIES = ("instruction", "identity", "career", "project", "preference")
COVERAGES = ("full", "partial", "limited")

TITLE_LIMIT = 160
SUMMARY_LIMIT = 2000
NARRATIVE_LIMIT = 8000
TAG_LIMIT, TAG_CHARS = 12, 80
QUOTE_LIMIT, QUOTE_CHARS = 12, 500
TEMPORAL_CHARS = 200
EVENT_TYPE_CHARS = 80
PARTICIPANT_LIMIT, PARTICIPANT_CHARS = 24, 200
SOURCE_SYSTEM_CHARS = 200
NOTE_CHARS = 2000
UNCERTAIN_LIMIT = 200


class ImportFormatError(InvalidInputError):
    """Input that is not a valid export; the message says where. ``syntax`` is True when the
    text is not JSON at all (the only case the recovery path may try to repair)."""

    def __init__(self, message: str, *, syntax: bool = False):
        super().__init__(message)
        self.syntax = syntax


@dataclass(frozen=True)
class ParsedImport:
    format: str
    candidates: tuple[dict[str, Any], ...]
    source_system: str | None = None
    exported_at: str | None = None
    coverage: str | None = None
    coverage_note: str | None = None
    uncertain_items: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)
    recovered: bool = False
    # Tokens a model spent recovering it (core.providers.usage fields), kept with the batch.
    usage: dict[str, int] | None = None

    def meta(self) -> dict[str, Any]:
        return {
            "source_system": self.source_system,
            "exported_at": self.exported_at,
            "coverage": self.coverage,
            "coverage_note": self.coverage_note,
            "uncertain_items": list(self.uncertain_items),
        }


# ----------------------------------------------------------------------------- helpers


_FENCE = re.compile(r"^```[ \t]*[\w-]*[ \t]*\r?\n(.*?)\r?\n?```[ \t]*$", re.DOTALL)


def strip_fences(text: str) -> str:
    """The JSON inside one Markdown code fence (```json … ```), or the text itself."""
    body = text.lstrip("\ufeff").strip()
    match = _FENCE.match(body)
    return match.group(1).strip() if match else body


def _size_check(text: str, where: str) -> None:
    size = len(text.encode("utf-8"))
    if size > MAX_BYTES:
        raise ImportFormatError(f"{where}: {size:,} bytes; an import may hold at most {MAX_BYTES:,} bytes (4 MB)")


def _load_json(text: str, where: str) -> Any:
    body = strip_fences(text)
    if not body:
        raise ImportFormatError(f"{where}: empty input, expected JSON", syntax=True)
    try:
        data = json.loads(body, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(
            f"{where}: not JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", syntax=True
        ) from None
    except ValueError as exc:
        raise ImportFormatError(f"{where}: not JSON: {exc}", syntax=True) from None
    except RecursionError:  # valid JSON, only too deep: nothing for the recovery path to repair
        position = nesting_position(body)
        at = f" at line {position[0]} column {position[1]}" if position else ""
        raise ImportFormatError(f"{where}: {TOO_DEEP}{at}") from None
    check_surrogates(data, body, where, error=ImportFormatError)
    return data


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not allowed in JSON")


def _pick(obj: dict[str, Any], where: str, *names: str) -> Any:
    """The value under the first present key of ``names`` (camelCase first, snake_case
    accepted); ``null`` counts as absent. Two spellings at once is an error."""
    present = [n for n in names if n in obj and obj[n] is not None]
    if len(present) > 1:
        raise ImportFormatError(f"{where}: both {present[0]!r} and {present[1]!r} given; use one")
    return obj[present[0]] if present else None


def _text(value: Any, where: str, limit: int, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise ImportFormatError(f"{where}: required, a non-empty string")
        return None
    if not isinstance(value, str):
        raise ImportFormatError(f"{where}: expected a string, got {type(value).__name__}")
    text = value.strip()
    if not text:
        if required:
            raise ImportFormatError(f"{where}: required, a non-empty string")
        return None
    if len(text) > limit:
        raise ImportFormatError(f"{where}: {len(text)} characters, at most {limit}")
    return text


def _strings(value: Any, where: str, limit: int, each: int) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportFormatError(f"{where}: expected a list of strings, got {type(value).__name__}")
    if len(value) > limit:
        raise ImportFormatError(f"{where}: {len(value)} items, at most {limit}")
    out: list[str] = []
    for index, item in enumerate(value):
        text = _text(item, f"{where}[{index}]", each)
        if text and text not in out:
            out.append(text)
    return out


def _enum(value: Any, allowed: tuple[str, ...], where: str, warnings: list[str]) -> str | None:
    """An enum value, lower-cased; an unknown value is dropped with a warning (format rule)."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in allowed:
        return value.strip().lower()
    warnings.append(f"{where}: unknown value {value!r} dropped (allowed: {', '.join(allowed)})")
    return None


def _confidence(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ImportFormatError(f"{where}: expected a number between 0 and 1, got {value!r}")
    return max(0.0, min(1.0, float(value)))


_YEAR = re.compile(r"\d{4}")
_MONTH = re.compile(r"(\d{4})-(\d{2})")
_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def check_date(value: Any, where: str) -> str | None:
    """A date at its own precision (YYYY, YYYY-MM, YYYY-MM-DD) or an ISO-8601 time; anything
    else (``2024-13-40``, ``next spring``) is rejected rather than guessed."""
    text = _text(value, where, TEMPORAL_CHARS)
    if text is None:
        return None
    problem = f"{where}: {text!r} is not a valid date (use YYYY, YYYY-MM, YYYY-MM-DD or an ISO-8601 time)"
    try:
        if _YEAR.fullmatch(text):
            if int(text) < 1:
                raise ValueError
        elif m := _MONTH.fullmatch(text):
            date(int(m.group(1)), int(m.group(2)), 1)
        elif m := _DAY.fullmatch(text):
            date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        elif re.match(r"\d{4}-\d{2}-\d{2}[T ]\d", text):
            datetime.fromisoformat(text[:-1] + "+00:00" if text[-1] in "Zz" else text)
        else:
            raise ValueError
    except ValueError:
        raise ImportFormatError(problem) from None
    return text


def _clip_title(text: str) -> str:
    """A title from free text: its first sentence, cut at a word boundary within the limit."""
    flat = " ".join(text.split())
    first = re.split(r"(?<=[.!?。！？])\s", flat, maxsplit=1)[0].rstrip(".。")
    if len(first) <= TITLE_LIMIT:
        return first
    cut = first[: TITLE_LIMIT - 1]
    if " " in cut[TITLE_LIMIT // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def _free_text_candidate(text: str, where: str) -> dict[str, Any]:
    """Title and summary (and the full text as narrative when long) from one fact's text."""
    flat = " ".join(text.split())
    if len(flat) > NARRATIVE_LIMIT:
        raise ImportFormatError(f"{where}: {len(flat)} characters, at most {NARRATIVE_LIMIT}")
    candidate: dict[str, Any] = {
        "title": _clip_title(flat),
        "summary": flat,
        "tags": [],
        "quotes": [],
        "temporal": {},
        "scope": "user",
        "criticality": "routine",
    }
    if len(flat) > SUMMARY_LIMIT:
        candidate["summary"] = flat[: SUMMARY_LIMIT - 1].rstrip() + "…"
        candidate["narrative"] = flat
    return candidate


def _count_check(n: int, where: str) -> None:
    if n > MAX_CANDIDATES:
        raise ImportFormatError(f"{where}: {n} candidates, at most {MAX_CANDIDATES} per import (split the export)")


# ----------------------------------------------------------------------------- v2


def _temporal(raw: Any, where: str, warnings: list[str]) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ImportFormatError(f"{where}: expected an object, got {type(raw).__name__}")
    out: dict[str, Any] = {}
    mentioned = check_date(_pick(raw, f"{where}.mentionedAt", "mentionedAt", "mentioned_at"), f"{where}.mentionedAt")
    start = check_date(
        _pick(raw, f"{where}.happenedStart", "happenedStart", "happened_start"), f"{where}.happenedStart"
    )
    end = check_date(_pick(raw, f"{where}.happenedEnd", "happenedEnd", "happened_end"), f"{where}.happenedEnd")
    original = _text(_pick(raw, where, "originalText", "original_text"), f"{where}.originalText", TEMPORAL_CHARS)
    precision = _enum(raw.get("precision"), PRECISIONS, f"{where}.precision", warnings)
    basis = _enum(raw.get("basis"), BASES, f"{where}.basis", warnings)
    status = _enum(raw.get("status"), TIME_STATUSES, f"{where}.status", warnings)
    event_type = _text(_pick(raw, where, "eventType", "event_type"), f"{where}.eventType", EVENT_TYPE_CHARS)
    participants = _strings(raw.get("participants"), f"{where}.participants", PARTICIPANT_LIMIT, PARTICIPANT_CHARS)
    if start and end:
        low, high = period_bounds(start, timezone.utc), period_bounds(end, timezone.utc)
        if low and high and high[1] < low[0]:
            raise ImportFormatError(f"{where}: happenedEnd {end!r} is before happenedStart {start!r}")
    if (start or end) and precision in (None, "unknown"):
        # An unresolved time stays unknown: the format drops the dates rather than guess one.
        warnings.append(f"{where}: precision is unknown, so happenedStart/happenedEnd were dropped")
        start = end = None
    for key, value in (
        ("mentioned_at", mentioned),
        ("happened_start", start),
        ("happened_end", end),
        ("original_text", original),
        ("status", status),
    ):
        if value:
            out[key] = value
    if start or end:
        out["precision"] = precision
        out["basis"] = basis if basis and basis != "unknown" else "explicit"
    else:
        out["precision"] = "unknown"
        out["basis"] = "unknown"
    if event_type:
        out["event_type"] = normalize_event_type(event_type)
    if participants:
        out["participants"] = participants
    return out


def _v2_candidate(raw: Any, where: str, warnings: list[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ImportFormatError(f"{where}: expected an object, got {type(raw).__name__}")
    title = _text(raw.get("title"), f"{where}.title", TITLE_LIMIT, required=True)
    summary = _text(raw.get("summary"), f"{where}.summary", SUMMARY_LIMIT, required=True)
    narrative = _text(raw.get("narrative"), f"{where}.narrative", NARRATIVE_LIMIT)
    kind = _enum(_pick(raw, where, "memoryKind", "memory_kind"), MEMORY_KINDS, f"{where}.memoryKind", warnings)
    category = _enum(raw.get("category"), CATEGORIES, f"{where}.category", warnings)
    tags = _strings(raw.get("tags"), f"{where}.tags", TAG_LIMIT, TAG_CHARS)
    if category:
        tags = [category] + [t for t in tags if t.casefold() != category]
    quotes = _strings(raw.get("quotes"), f"{where}.quotes", QUOTE_LIMIT, QUOTE_CHARS)
    temporal = _temporal(raw.get("temporal"), f"{where}.temporal", warnings)
    scope = _enum(raw.get("scope"), SCOPES, f"{where}.scope", warnings)
    criticality = _enum(raw.get("criticality"), CRITICALITIES, f"{where}.criticality", warnings)
    confidence = _confidence(raw.get("confidence"), f"{where}.confidence")
    candidate: dict[str, Any] = {
        "title": title,
        "summary": summary,
        "tags": tags[:TAG_LIMIT],
        "quotes": quotes,
        "temporal": temporal,
        "scope": scope or "user",
        "criticality": criticality or "routine",
    }
    for key, value in (
        ("narrative", narrative),
        ("memory_kind", kind),
        ("category", category),
        ("confidence", confidence),
    ):
        if value is not None:
            candidate[key] = value
    return candidate


def parse_v2_object(data: Any, where: str) -> ParsedImport:
    """Validate an already decoded v2 document (the recovery path uses this too)."""
    if not isinstance(data, dict):
        raise ImportFormatError(f"{where}: the top level must be a JSON object, got {type(data).__name__}")
    warnings: list[str] = []
    version = data.get("schemaVersion", data.get("schema_version"))
    if version not in SCHEMA_VERSIONS:
        raise ImportFormatError(
            f"{where}: schemaVersion: expected {SCHEMA_VERSIONS[0]!r} (or {SCHEMA_VERSIONS[1]!r}), got {version!r}"
        )
    source_type = data.get("sourceType", data.get("source_type"))
    if source_type != SOURCE_TYPE:
        raise ImportFormatError(f"{where}: sourceType: expected {SOURCE_TYPE!r}, got {source_type!r}")
    source_system = _text(
        _pick(data, where, "sourceSystem", "source_system"), f"{where}.sourceSystem", SOURCE_SYSTEM_CHARS
    )
    exported_at = check_date(_pick(data, where, "exportedAt", "exported_at"), f"{where}.exportedAt")
    coverage = _enum(data.get("coverage"), COVERAGES, f"{where}.coverage", warnings)
    note = _text(_pick(data, where, "coverageNote", "coverage_note"), f"{where}.coverageNote", NOTE_CHARS)
    uncertain = _strings(
        _pick(data, where, "uncertainItems", "uncertain_items"), f"{where}.uncertainItems", UNCERTAIN_LIMIT, NOTE_CHARS
    )
    key = "candidates" if data.get("candidates") is not None else "events"
    items = data.get(key)
    if items is None:
        raise ImportFormatError(f"{where}: candidates: required, a list of candidates")
    if not isinstance(items, list):
        raise ImportFormatError(f"{where}: {key}: expected a list, got {type(items).__name__}")
    _count_check(len(items), f"{where}: {key}")
    candidates = tuple(_v2_candidate(item, f"{where}: {key}[{i}]", warnings) for i, item in enumerate(items))
    return ParsedImport(
        format="v2",
        candidates=candidates,
        source_system=source_system,
        exported_at=exported_at,
        coverage=coverage,
        coverage_note=note,
        uncertain_items=tuple(uncertain),
        warnings=tuple(warnings),
    )


def parse_v2(text: str, where: str = "input") -> ParsedImport:
    _size_check(text, where)
    return parse_v2_object(_load_json(text, where), where)


# ----------------------------------------------------------------------------- mem0


def _iso_time(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), tz=timezone.utc).isoformat(timespec="seconds")
        except (OverflowError, OSError, ValueError):
            raise ImportFormatError(f"{where}: {value!r} is not a valid epoch time") from None
    return check_date(value, where)


def parse_mem0(text: str, where: str = "input") -> ParsedImport:
    _size_check(text, where)
    data = _load_json(text, where)
    items = data
    key = ""
    if isinstance(data, dict):
        key = next((k for k in ("results", "memories") if isinstance(data.get(k), list)), "")
        if not key:
            raise ImportFormatError(
                f"{where}: expected a JSON list of memories or an object with a 'results' (or 'memories') list"
            )
        items = data[key]
    if not isinstance(items, list):
        raise ImportFormatError(f"{where}: expected a JSON list of memories, got {type(items).__name__}")
    base = f"{where}: {key}" if key else f"{where}: "
    _count_check(len(items), f"{where}: memories")
    warnings: list[str] = []
    candidates = []
    for index, item in enumerate(items):
        at = f"{base}[{index}]"
        if not isinstance(item, dict):
            raise ImportFormatError(f"{at}: expected an object, got {type(item).__name__}")
        field_name = next((k for k in ("memory", "text", "content") if item.get(k) is not None), "memory")
        body = _text(item.get(field_name), f"{at}.{field_name}", NARRATIVE_LIMIT, required=True)
        created = _iso_time(item.get("created_at", item.get("createdAt")), f"{at}.created_at")
        updated = _iso_time(item.get("updated_at", item.get("updatedAt")), f"{at}.updated_at")
        metadata = item.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise ImportFormatError(f"{at}.metadata: expected an object, got {type(metadata).__name__}")
        metadata = metadata or {}
        categories = _strings(item.get("categories"), f"{at}.categories", TAG_LIMIT, TAG_CHARS)
        categories += [
            c
            for c in _strings(metadata.get("categories"), f"{at}.metadata.categories", TAG_LIMIT, TAG_CHARS)
            if c not in categories
        ]
        candidate = _free_text_candidate(body, f"{at}.{field_name}")
        candidate["tags"] = categories[:TAG_LIMIT]
        mentioned = updated or created
        if mentioned:
            candidate["temporal"] = {"mentioned_at": mentioned, "precision": "unknown", "basis": "unknown"}
        ident = item.get("id")
        if isinstance(ident, (str, int)) and not isinstance(ident, bool):
            candidate["external_id"] = str(ident)[:255]
        candidates.append(candidate)
    return ParsedImport(format="mem0", candidates=tuple(candidates), source_system="mem0", warnings=tuple(warnings))


# ----------------------------------------------------------------------------- text

_BULLET = re.compile(r"^\s*(?:[-*+•·–—]|\(?\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_HEADING = re.compile(r"^\s*(#{1,6}\s|={3,}\s*$|-{3,}\s*$|\*{3,}\s*$|_{3,}\s*$)")


def parse_text(text: str, where: str = "input") -> ParsedImport:
    """One fact per bullet (a bullet's indented continuation lines join it), or one per
    line when the text has no bullets. Headings, rules and fence markers are skipped."""
    _size_check(text, where)
    lines = text.lstrip("\ufeff").splitlines()
    has_bullets = any(_BULLET.match(line) for line in lines)
    facts: list[tuple[int, str]] = []
    skipped = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip() or _HEADING.match(line) or line.strip().startswith("```"):
            continue
        bullet = _BULLET.match(line)
        if bullet:
            if bullet.group(1).strip():
                facts.append((number, bullet.group(1).strip()))
        elif has_bullets:
            if line[:1].isspace() and facts:
                facts[-1] = (facts[-1][0], f"{facts[-1][1]} {line.strip()}")
            else:
                skipped += 1  # prose around a list (an intro line) is not a fact
        else:
            facts.append((number, line.strip()))
    if not facts:
        raise ImportFormatError(f"{where}: no facts found (expected one fact per bullet or line)")
    _count_check(len(facts), f"{where}: facts")
    candidates = tuple(_free_text_candidate(body, f"{where}: line {number}") for number, body in facts)
    warnings = (f"{where}: {skipped} line(s) outside the bullet list were skipped",) if skipped else ()
    return ParsedImport(format="text", candidates=candidates, warnings=warnings)


# ----------------------------------------------------------------------------- entry points

_PARSERS = {"v2": parse_v2, "mem0": parse_mem0, "text": parse_text}


def parse_import(text: str, format: str = "v2", *, where: str = "input") -> ParsedImport:
    """Parse a whole export; raises ImportFormatError (naming the location) on any violation."""
    parser = _PARSERS.get(format)
    if parser is None:
        raise InvalidInputError(f"unknown import format {format!r}; use one of {', '.join(FORMATS)}")
    if not isinstance(text, str):
        raise InvalidInputError(f"{where}: expected text, got {type(text).__name__}")
    # A lone surrogate (bytes that were not UTF-8, kept by surrogateescape) cannot be measured,
    # hashed or stored: every later step would fail on it with a UnicodeEncodeError.
    bad = _SURROGATE.search(text)
    if bad is not None:
        raise ImportFormatError(
            f"{where}: not UTF-8 text (lone surrogate \\u{ord(bad.group()):04x} at character "
            f"{bad.start()}); give the export as UTF-8"
        )
    nul = text.find("\x00")
    if nul >= 0:
        raise ImportFormatError(
            f"{where}: a NUL character at character {nul}; no text Strata stores may hold one (PostgreSQL cannot)"
        )
    return parser(text, where)


_SURROGATE = re.compile("[\ud800-\udfff]")


# A file saved as plain text or Markdown is a list of facts: read as JSON it would only fail after a
# recovery attempt (and a model's recovery of a list it could read directly).
TEXT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown"})


def format_for_path(path: str | Path, chosen: str | None = None) -> str:
    """The format to read ``path`` in: ``chosen`` when given, else a text list for a text or Markdown
    file and v2 JSON for any other."""
    if chosen:
        return chosen
    return "text" if Path(path).suffix.lower() in TEXT_SUFFIXES else "v2"


def read_import_file(path: str | Path, format: str = "v2") -> tuple[str, ParsedImport]:
    """Read and parse a file; the size limit is checked before the file is read."""
    path = Path(path)
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory; give a file")
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ImportFormatError(f"{path}: {size:,} bytes; an import file may hold at most {MAX_BYTES:,} bytes (4 MB)")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return text, parse_import(text, format, where=str(path))
