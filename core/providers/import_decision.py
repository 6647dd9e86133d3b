"""The model-backed import decision: the prompt a model is shown and the strict check of its answer.

A model's answer is trusted less than its own confidence says. It must follow the decision schema
(``core.providers.schemas.DECIDE_SCHEMA``) exactly; text that is not JSON goes once through the
JSON recovery, and an answer that still fails becomes a decision a person makes (it is never
applied on its own). An answer that names no target among the matches, or no subject, slot and
value found in the candidate's words, cannot reach the auto-apply threshold: a match the model
only inferred is for a person to confirm.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Iterable, Mapping, Sequence

from core.providers.base import ProviderOutputError
from core.providers.jsonrecover import extract_json_object
from core.vocab import DECISION_FIELDS, IMPORT_ACTIONS
from core.text import STOPWORDS

TARGETED = ("merge", "supersede", "conflict")
MATCH_SUMMARY_CHARS = 600
EARLIER_SUMMARY_CHARS = 300
CAP_MARGIN = 0.01  # a capped confidence sits this far below the threshold

SECTIONS = ("# Candidate", "# Earlier items of this import", "# Stored matches", "# Answer")


class UnusableAnswer(ProviderOutputError):
    """A model's decision that fails the schema even after JSON recovery."""


# ----------------------------------------------------------------------------- the prompt


def _line(label: str, value: Any) -> str | None:
    if value is None or value == "" or value == [] or value == ():
        return None
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    return f"{label}: {' '.join(str(value).split())}"


def _clip(text: Any, limit: int) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _times(
    mentioned: Any, start: Any, end: Any, precision: Any = None, original: Any = None, status: Any = None
) -> str:
    parts = [f"mentioned {mentioned}" if mentioned else "mentioned: unknown"]
    if start or end:
        span = f"{start or '?'}" + (f" to {end}" if end and end != start else "")
        parts.append(f"happened {span}" + (f" ({precision})" if precision and precision != "unknown" else ""))
    else:
        parts.append("happened: unknown")
    if original:
        parts.append(f'in its words "{_clip(original, 120)}"')
    if status and status != "unknown":
        parts.append(f"status {status}")
    return "; ".join(parts)


def render_decision_prompt(context: Mapping[str, Any]) -> str:
    """The user message for one decision: the candidate, the batch's earlier items and the stored
    matches with their ids and times, then what to answer. Plain text, so a model reads times and ids
    as a person would; the ids it may cite are exactly the ones listed."""
    candidate = context.get("candidate") or {}
    temporal = candidate.get("temporal") or {}
    source = context.get("source") or {}
    users = [n for n in ((context.get("user") or {}).get("names") or []) if isinstance(n, str) and n.strip()]
    lines = [SECTIONS[0]]
    for row in (
        _line("title", candidate.get("title")),
        _line("summary", candidate.get("summary")),
        _line("narrative", _clip(candidate.get("narrative"), 2000) if candidate.get("narrative") else None),
        _line("tags", candidate.get("tags")),
        _line("quotes", [f'"{_clip(q, 300)}"' for q in candidate.get("quotes") or []]),
        _line("participants", temporal.get("participants")),
        "time: "
        + _times(
            temporal.get("mentioned_at"),
            temporal.get("happened_start"),
            temporal.get("happened_end"),
            temporal.get("precision"),
            temporal.get("original_text"),
            temporal.get("status"),
        ),
        _line("kind", candidate.get("memory_kind")),
        _line("category", candidate.get("category")),
        _line("the exporting assistant's confidence", candidate.get("confidence")),
        _line("exported by", source.get("system")),
        _line("export date (not the time anything happened)", source.get("exported_at")),
        "recovered from malformed input: a person reviews it whatever you answer" if source.get("recovered") else None,
        # Only one name can be the user's: where several people speak as users, nobody is.
        (
            "the user: " + users[0]
            if len(users) == 1
            else "the user: not known (several people speak as users here: " + ", ".join(users) + ")"
            if users
            else "the user: no name known"
        ),
    ):
        if row:
            lines.append(row)

    earlier = [e for e in context.get("earlier") or [] if isinstance(e, Mapping)]
    lines += ["", f"{SECTIONS[1]} ({len(earlier)})"]
    if earlier:
        lines += [
            f"item {e.get('position')}: {_clip(e.get('title'), 160)} — {_clip(e.get('summary'), EARLIER_SUMMARY_CHARS)}"
            for e in earlier
        ]
    else:
        lines.append("(none)")

    matches = [m for m in context.get("matches") or [] if isinstance(m, Mapping)]
    lines += ["", f"{SECTIONS[2]} ({len(matches)}; cite only these ids)"]
    if not matches:
        lines.append("(none: nothing stored resembles the candidate, so the action is add or ignore)")
    for m in matches:
        lines.append(f"[id {m.get('id')}] {_clip(m.get('title'), 160)}")
        lines.append(f"  {_clip(m.get('summary'), MATCH_SUMMARY_CHARS)}")
        detail = [
            f"status {m.get('status')}" if m.get("status") else None,
            _times(m.get("mentioned_at"), m.get("happened_start"), m.get("happened_end"), status=m.get("time_status")),
            _line("participants", m.get("participants")),
            _line("tags", m.get("tags")),
        ]
        lines.append("  " + "; ".join(d for d in detail if d))

    ids = ", ".join(str(m.get("id")) for m in matches) or "none"
    lines += [
        "",
        SECTIONS[3],
        f"Call strata_decide_external_memory once: action ({' | '.join(IMPORT_ACTIONS)}), "
        f"existing_event_ids (only from: {ids}), confidence, reason, subject, slot, value "
        "(and stored_value, merged_candidate when they apply).",
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the answer


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_answer(raw: Any, allowed: Iterable[int]) -> dict[str, Any]:
    """The answer as a checked dict, or UnusableAnswer saying what is wrong with it.

    Text (a tool call's arguments or a reply in prose) goes through the JSON recovery once."""
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", errors="replace")
    if isinstance(raw, str):
        try:
            raw = extract_json_object(raw, ("action",))
        except ProviderOutputError as exc:
            raise UnusableAnswer(f"not JSON even after recovery: {exc}") from None
    if not isinstance(raw, dict):
        raise UnusableAnswer(f"the answer is not a JSON object ({type(raw).__name__})")
    missing = [f for f in DECISION_FIELDS if f not in raw]
    if missing:
        raise UnusableAnswer("the answer lacks " + ", ".join(missing))
    action = raw["action"].strip().lower() if isinstance(raw["action"], str) else raw["action"]
    if action not in IMPORT_ACTIONS:
        raise UnusableAnswer(f"action {raw['action']!r} is not one of {', '.join(IMPORT_ACTIONS)}")
    permitted = list(dict.fromkeys(allowed))
    ids = raw["existing_event_ids"]
    if not isinstance(ids, list) or not all(_is_id(i) for i in ids):
        raise UnusableAnswer("existing_event_ids is not a list of event ids")
    outside = [i for i in ids if i not in permitted]
    if outside:
        shown = ", ".join(map(str, permitted)) or "none"
        raise UnusableAnswer(f"it cites event {outside[0]}, which is not among the matches shown ({shown})")
    ids = list(dict.fromkeys(ids))
    if action in TARGETED and not ids:
        raise UnusableAnswer(f"{action} cites no match")
    confidence = raw["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise UnusableAnswer(f"confidence {confidence!r} is not a number from 0 to 1")
    if not isinstance(raw["reason"], str) or not raw["reason"].strip():
        raise UnusableAnswer("the reason is empty")
    for name in ("subject", "slot", "value"):
        if not isinstance(raw[name], str):
            raise UnusableAnswer(f"{name} is not a string")
    stored = raw.get("stored_value")
    if stored is not None and not isinstance(stored, str):
        raise UnusableAnswer("stored_value is not a string")
    merged = raw.get("merged_candidate")
    if merged is not None and not isinstance(merged, dict):
        raise UnusableAnswer("merged_candidate is not an object")
    answer = {
        "action": action,
        "existing_event_ids": ids if action != "add" else [],
        "confidence": float(confidence),
        "reason": raw["reason"].strip(),
        "subject": raw["subject"].strip(),
        "slot": raw["slot"].strip(),
        "value": raw["value"].strip(),
    }
    if stored and stored.strip():
        answer["stored_value"] = stored.strip()
    if merged is not None:
        answer["merged_candidate"] = merged
    return answer


_WORD = re.compile(r"\w+")
_USER_WORDS = frozenset({"user", "i", "me", "my", "myself"})


def _words(*texts: Any) -> set[str]:
    out: set[str] = set()
    for text in texts:
        if isinstance(text, (list, tuple)):
            out |= _words(*text)
        elif isinstance(text, str):
            folded = unicodedata.normalize("NFKD", text.casefold())
            folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
            out |= {w for w in _WORD.findall(folded) if w not in STOPWORDS}
    return out


def _candidate_words(candidate: Mapping[str, Any]) -> set[str]:
    temporal = candidate.get("temporal") or {}
    return _words(
        candidate.get("title"),
        candidate.get("summary"),
        candidate.get("narrative"),
        list(candidate.get("tags") or []),
        list(candidate.get("quotes") or []),
        list(temporal.get("participants") or []),
        temporal.get("original_text"),
    )


def weakness(
    answer: Mapping[str, Any],
    candidate: Mapping[str, Any],
    matches: Sequence[Mapping[str, Any]],
    users: Sequence[str] = (),
) -> str | None:
    """Why the answer may not be applied without a person, or None when its evidence is explicit.

    An ignore that cites nothing (small talk) needs no evidence: ignoring writes nothing. Every other
    answer must name a subject, slot and value; its value must be in the candidate's words, and its
    subject in the candidate, a cited match or the user's name; and the export must not mark the
    candidate uncertain (its own confidence below 0.5)."""
    action, targets = answer["action"], list(answer.get("existing_event_ids") or [])
    if action == "ignore" and not targets:
        return None
    own_confidence = candidate.get("confidence")
    if isinstance(own_confidence, (int, float)) and not isinstance(own_confidence, bool) and own_confidence < 0.5:
        # The exporting assistant itself was unsure, as the offline decider also holds.
        return f"the export marks it uncertain (confidence {own_confidence:g})"
    if action in TARGETED and not targets:
        return "it names no target among the matches"
    empty = [f for f in ("subject", "slot", "value") if not str(answer.get(f) or "").strip()]
    if empty:
        return "it names no " + " / ".join(empty)
    own = _candidate_words(candidate)
    value = _words(answer["value"])
    if value and not value & own:
        return f"its value {answer['value']!r} is not in the candidate's words"
    subject = _words(answer["subject"])
    cited = [m for m in matches if m.get("id") in targets]
    known = (
        own
        | _words(*[[m.get("title"), m.get("summary"), list(m.get("participants") or [])] for m in cited])
        | (_words(list(users)) if len(users) == 1 else set())
        | _USER_WORDS
    )
    if subject and not subject & known:
        return f"its subject {answer['subject']!r} is neither in the candidate nor in a cited match"
    return None


def capped(confidence: float, threshold: float) -> float:
    """A confidence below ``threshold``, so the decision waits for a person."""
    return round(max(0.0, min(confidence, threshold - CAP_MARGIN)), 4)


def matched_fields(answer: Mapping[str, Any]) -> dict[str, str] | None:
    """What the model says it matched, for the person reviewing (None when it names nothing)."""
    found = {
        k: str(answer[k])
        for k in ("subject", "slot", "value", "stored_value")
        if isinstance(answer.get(k), str) and answer[k].strip()
    }
    return found or None


def unusable_decision(why: str) -> dict[str, Any]:
    """The decision an unusable answer leaves: nothing applied until a person chooses."""
    return {
        "action": "ignore",
        "target_ids": [],
        "merged": None,
        "confidence": 0.0,
        "requires_confirmation": True,
        "reason": _clip(f"the model's answer was unusable ({why}); a person decides", 500),
        "matched": None,
    }


__all__ = [
    "SECTIONS",
    "UnusableAnswer",
    "capped",
    "matched_fields",
    "render_decision_prompt",
    "unusable_decision",
    "validate_answer",
    "weakness",
]
