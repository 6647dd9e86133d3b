"""Deterministic rendering of a block's layers (design §3.2, §3.3, §3.5).

L3, L4 and L5 are computed from the raw messages without any model call, so they
can be written at sealing time and recomputed at read time. L0-L2 come from the
summarizer; this module only formats them. Everything here is a pure function
over duck-typed messages: anything with ``role``, ``content``, ``speaker`` and
``tool_calls`` (``core.dto.RawMessage`` or ``core.dto.MessageIn``) works.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from core import lexicon
from core.redact import redact_text
from core.text import FENCED_CODE
from core.tokens import estimate_tokens

LEVEL_LABELS: dict[int, str] = {
    0: "L0 title and tags",
    1: "L1 narrative summary",
    2: "L2 key points",
    3: "L3 rule-condensed transcript",
    4: "L4 readable near-verbatim transcript",
    5: "L5 raw transcript",
}

SUMMARY_LIMIT = 160
ERROR_LIMIT = 140
PASTE_MIN_CHARS = 80
REPEATED_PASTE_MARKER = "[repeated paste omitted; original remains in L5]"

# Keys that echo the request rather than describe the outcome; counting them
# would leak the shape of the arguments into the summary.
_REQUEST_KEYS = frozenset({"arguments", "params", "input", "request"})

_FILLERS = lexicon.words("fillers_layers")
_FILLER_TRAILING = "。！？，、,.!?～~"

_WHOLE_FENCE = re.compile(r"^```[ \t]*(?:json)?[ \t]*\n?(.*?)\n?```$", re.DOTALL | re.IGNORECASE)
_TOOLISH = re.compile(r'tool_calls|tool_call|"function"|"arguments"')
_QUOTED_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_BLANK_LINES = re.compile(r"(?:[ \t]*\n){2,}")
# English "." is deliberately not a boundary: it would split decimals, paths and
# abbreviations, and the filler list only needs whole short utterances.
_SENTENCE = re.compile(r"[^。！？!?\n]+[。！？!?]*|[。！？!?]+")
_CODE_KEYWORD = re.compile(r"\b(?:const|let|var|function|class|import|export|def|SELECT|INSERT|UPDATE)\b")


# --------------------------------------------------------------------------- helpers


def _collapse(text: str) -> str:
    """Collapse every whitespace run to one space and trim."""
    return " ".join(text.split())


def _reject_constant(token: str) -> Any:
    """Refuse NaN/Infinity so words like "NaN" in tool output stay text."""
    raise ValueError(token)


def _parse_json(text: str) -> tuple[bool, Any]:
    """Parse strict JSON; return (ok, value)."""
    try:
        return True, json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return False, None


def _trace_field(trace: Any, key: str) -> Any:
    """Read a tool-trace field from a ToolTrace or a plain dict."""
    if isinstance(trace, dict):
        return trace.get(key)
    return getattr(trace, key, None)


def _trace_json(trace: Any) -> dict[str, Any]:
    """The JSON form of a trace, omitting absent arguments/result like ToolTrace.to_json."""
    if hasattr(trace, "to_json"):
        return trace.to_json()
    if isinstance(trace, dict):
        return dict(trace)
    out: dict[str, Any] = {"name": _trace_field(trace, "name")}
    for key in ("arguments", "result"):
        if _trace_field(trace, key) is not None:
            out[key] = _trace_field(trace, key)
    return out


def _tool_calls(message: Any) -> Sequence[Any]:
    """The message's tool traces, tolerating None."""
    return getattr(message, "tool_calls", None) or ()


def _speaker(message: Any) -> str:
    """The trimmed speaker name, or an empty string when unset."""
    return (getattr(message, "speaker", None) or "").strip()


def _readable_label(message: Any) -> str:
    """Speaker name if set, else the capitalised role (User/Assistant/Tool/System)."""
    return _speaker(message) or str(message.role).capitalize()


def _is_system(message: Any) -> bool:
    """System prompts are context, not conversation, so L3/L4 leave them out."""
    return message.role == "system"


def trace_line(trace: Any) -> str:
    """Readable one-line form of a trace: name and result summary, never the arguments."""
    name = str(_trace_field(trace, "name") or "").strip() or "unnamed tool"
    return f"Tool call: {name} ({summarize_tool_result(_trace_field(trace, 'result'))})"


# --------------------------------------------------------------------------- tool summaries


def summarize_tool_result(value: Any) -> str:
    """Describe a tool result in at most 160 characters without showing its arguments."""
    if isinstance(value, str):
        summary = _summarize_string(value)
    elif value is None:
        summary = "no result"
    elif isinstance(value, bool):
        # JSON spelling, so a parsed "true" and a Python True read the same.
        summary = "true" if value else "false"
    elif isinstance(value, (int, float)):
        summary = str(value)
    elif isinstance(value, dict):
        summary = _summarize_dict(value)
    elif isinstance(value, (list, tuple)):
        summary = f"{len(value)} item" if len(value) == 1 else f"{len(value)} items"
    else:
        summary = "structured result returned"
    return summary[:SUMMARY_LIMIT]


def _summarize_string(text: str) -> str:
    """Recurse into JSON text; otherwise show the collapsed start of the text."""
    ok, parsed = _parse_json(text.strip())
    if ok:
        return summarize_tool_result(parsed)
    # A tool's output may print a credential; its summary is cut, so mask it first.
    collapsed = _collapse(redact_text(text))
    return collapsed[:SUMMARY_LIMIT] if collapsed else "no result"


def _summarize_dict(value: dict[str, Any]) -> str:
    """Apply the dict rules of §3.2 in their stated order."""
    error = value.get("error")
    if isinstance(error, str) and error.strip():
        return "failed: " + _collapse(redact_text(error))[:ERROR_LIMIT]
    for key in ("summary", "message"):
        text = value.get(key)
        if isinstance(text, str) and text.strip():
            return _collapse(redact_text(text))[:SUMMARY_LIMIT]
    counts = [
        f"{key}: {len(item)}" for key, item in value.items() if isinstance(item, list) and key not in _REQUEST_KEYS
    ]
    if counts:
        return ", ".join(counts)[:SUMMARY_LIMIT]
    if value.get("ok") is True:
        return "completed"
    if value.get("ok") is False:
        return "not completed"
    return "structured result returned"


# --------------------------------------------------------------------------- tool JSON


@dataclass(frozen=True)
class ToolJsonInfo:
    """A message body recognised as a tool call payload.

    ``parsed`` is False for the fallback case, where the text looked like tool
    JSON but did not parse (typically a truncated payload).
    """

    names: tuple[str, ...]
    summary: str
    parsed: bool = True

    @property
    def line(self) -> str:
        """The single line that replaces the payload in L3/L4."""
        if self.names:
            return f"Tool call: {', '.join(self.names)} ({self.summary})"
        return f"Tool call ({self.summary})"


def _strip_json_fence(text: str) -> str:
    """Remove a ```json fence that wraps the whole text."""
    match = _WHOLE_FENCE.match(text)
    return match.group(1).strip() if match else text


def _add_name(names: list[str], name: Any) -> None:
    """Append a non-blank string name once, keeping first-seen order."""
    if isinstance(name, str) and name.strip() and name.strip() not in names:
        names.append(name.strip())


def _collect_tool_names(node: Any, names: list[str]) -> None:
    """Walk parsed JSON and gather tool names from every shape §3.2 recognises."""
    if isinstance(node, list):
        for item in node:
            _collect_tool_names(item, names)
        return
    if not isinstance(node, dict):
        return
    if "arguments" in node or "parameters" in node:
        _add_name(names, node.get("name"))
    _add_name(names, node.get("tool"))
    function = node.get("function")
    if isinstance(function, dict):
        _add_name(names, function.get("name"))
    for child in node.values():
        _collect_tool_names(child, names)


def _toolish_fallback(body: str) -> ToolJsonInfo | None:
    """Recognise unparseable, JSON-shaped text that mentions tool-call keys."""
    # Only JSON-shaped text qualifies: prose that merely mentions "tool_calls"
    # must not be replaced by a tool line.
    if not body.startswith(("{", "[")) or not _TOOLISH.search(body):
        return None
    names: list[str] = []
    for raw in _QUOTED_NAME.findall(body):
        _add_name(names, raw.replace('\\"', '"'))
    return ToolJsonInfo(tuple(names), "raw arguments omitted", parsed=False)


def detect_tool_json(text: str) -> ToolJsonInfo | None:
    """Return tool-call info when the whole text is a tool JSON payload, else None."""
    body = _strip_json_fence((text or "").strip())
    if not body:
        return None
    ok, parsed = _parse_json(body)
    if not ok:
        return _toolish_fallback(body)
    names: list[str] = []
    _collect_tool_names(parsed, names)
    if not names:
        return None
    result = None
    if isinstance(parsed, dict):
        result = parsed.get("result")
        if result is None:
            result = parsed.get("content")
    return ToolJsonInfo(tuple(names), summarize_tool_result(result))


# --------------------------------------------------------------------------- L5 / L4


def render_l5(messages: Iterable[Any]) -> str:
    """Raw transcript: every message (system included) and each trace as raw JSON."""
    chunks: list[str] = []
    for message in messages:
        role = str(message.role)
        label = f"{role} ({_speaker(message)})" if _speaker(message) else role
        chunks.append(f"{label}: {message.content}")
        for trace in _tool_calls(message):
            raw = json.dumps(
                _trace_json(trace),
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
                default=str,
            )
            chunks.append(f"Tool call (raw): {raw}")
    return "\n\n".join(chunks)


def _render_l4_unguarded(messages: Sequence[Any]) -> str:
    """L4 before the token guard: trimmed text, tool payloads as summary lines."""
    chunks: list[str] = []
    for message in messages:
        if _is_system(message):
            continue
        text = (message.content or "").strip()
        info = detect_tool_json(text)
        if info is not None:
            text = info.line
        chunks.append(f"{_readable_label(message)}: {text}".rstrip())
        chunks.extend(trace_line(trace) for trace in _tool_calls(message))
    return "\n\n".join(chunks)


def render_l4(messages: Iterable[Any]) -> str:
    """Readable near-verbatim transcript, never larger than L5 by the estimate."""
    messages = list(messages)
    return _guard(_render_l4_unguarded(messages), render_l5(messages))


def _guard(candidate: str, ceiling: str) -> str:
    """Fall back to the larger layer when compaction did not actually save tokens."""
    return ceiling if estimate_tokens(candidate) > estimate_tokens(ceiling) else candidate


# --------------------------------------------------------------------------- L3


def _is_filler(sentence: str) -> bool:
    """True when the sentence is only an acknowledgement from the allow-list."""
    core = sentence.strip().rstrip(_FILLER_TRAILING).strip().lower()
    return core in _FILLERS


def _drop_fillers(paragraph: str) -> str:
    """Remove filler sentences; an untouched paragraph is returned verbatim."""
    sentences = [s.strip() for s in _SENTENCE.findall(paragraph) if s.strip()]
    kept = [s for s in sentences if not _is_filler(s)]
    if len(kept) == len(sentences):
        return paragraph
    return "\n".join(kept)


def _normalize(text: str) -> str:
    """Whitespace-collapsed, lower-cased form used to size and compare pastes."""
    return _collapse(text).lower()


def _is_code_like(paragraph: str) -> bool:
    """Multi-line text that carries a code keyword, an arrow, or braces and semicolons."""
    if "\n" not in paragraph.strip():
        return False
    if _CODE_KEYWORD.search(paragraph) or "=>" in paragraph:
        return True
    return all(mark in paragraph for mark in "{};")


def _is_long(text: str) -> bool:
    """Long enough that a repeat is almost surely a paste rather than a reply."""
    return len(_normalize(text)) >= PASTE_MIN_CHARS


def _keep_first_copy(text: str, seen: set[str]) -> str:
    """Return the paste the first time it is seen in the block, the marker afterwards."""
    key = _normalize(text)
    if key in seen:
        return REPEATED_PASTE_MARKER
    seen.add(key)
    return text


def _split_segments(content: str) -> list[tuple[bool, str]]:
    """Split content into (is_fenced_code, text) segments in order."""
    segments: list[tuple[bool, str]] = []
    cursor = 0
    for match in FENCED_CODE.finditer(content):
        segments.append((False, content[cursor : match.start()]))
        segments.append((True, match.group(0)))
        cursor = match.end()
    segments.append((False, content[cursor:]))
    return segments


def _paragraphs(text: str) -> list[str]:
    """Paragraphs separated by blank lines, without surrounding blank space."""
    parts = (part.strip("\n").rstrip() for part in _BLANK_LINES.split(text))
    return [part for part in parts if part.strip()]


def _condense_text(content: str, seen: set[str]) -> list[str]:
    """Steps 2-3 of §3.3: drop fillers, keep first pastes, mark repeated ones."""
    parts: list[str] = []
    for is_code, segment in _split_segments(content):
        if is_code:
            parts.append(_keep_first_copy(segment.strip(), seen))
            continue
        for paragraph in _paragraphs(segment):
            part = _condense_paragraph(paragraph, seen)
            if part:
                parts.append(part)
    return parts


def _condense_paragraph(paragraph: str, seen: set[str]) -> str:
    """One text paragraph of L3: code untouched, prose without fillers, repeats marked."""
    # Code is never filler-filtered: a bare "ok" line inside a paste is content.
    if _is_code_like(paragraph):
        return _keep_first_copy(paragraph, seen)
    condensed = _drop_fillers(paragraph)
    return _keep_first_copy(condensed, seen) if _is_long(condensed) else condensed


def _condense_message(message: Any, seen: set[str]) -> str | None:
    """One message in L3 form, or None when nothing survives."""
    content = (message.content or "").strip()
    info = detect_tool_json(content)
    parts = [info.line] if info is not None else _condense_text(content, seen)
    parts.extend(trace_line(trace) for trace in _tool_calls(message))
    if not parts:
        return None
    return f"{_readable_label(message)}: " + "\n\n".join(parts)


def _render_l3_unguarded(messages: Sequence[Any]) -> str:
    """L3 before the token guard."""
    seen: set[str] = set()
    chunks = (_condense_message(m, seen) for m in messages if not _is_system(m))
    return "\n\n".join(chunk for chunk in chunks if chunk is not None)


def render_l3(messages: Iterable[Any]) -> str:
    """Rule-condensed transcript, never larger than L4 by the estimate."""
    return deterministic_layers(messages)[3]


def deterministic_layers(messages: Iterable[Any]) -> dict[int, str]:
    """L3, L4 and L5 of one block, each computed once, keyed by level."""
    messages = list(messages)
    l5 = render_l5(messages)
    l4 = _guard(_render_l4_unguarded(messages), l5)
    l3 = _guard(_render_l3_unguarded(messages), l4)
    return {3: l3, 4: l4, 5: l5}


# --------------------------------------------------------------------------- L0-L2


def render_l0(title: str | None, tags: Sequence[str] | None) -> str:
    """Title on the first line, then the tags (or "none")."""
    clean = [str(tag).strip() for tag in tags or () if str(tag).strip()]
    return f"{(title or '').strip()}\nTags: {', '.join(clean) if clean else 'none'}"


def render_l1(summary: str | None) -> str:
    """The narrative summary as stored, trimmed."""
    return (summary or "").strip()


def render_l2(points: Sequence[str] | None, fallback_summary: str | None) -> str:
    """Key points as "- point" lines; the L1 summary when there are none."""
    lines = [f"- {str(p).strip()}" for p in points or () if str(p).strip()]
    return "\n".join(lines) if lines else render_l1(fallback_summary)


# --------------------------------------------------------------------------- derivation view

CODE_CUT_MARKER = "[code cut: {omitted} more characters; full text remains in L5]"
PAYLOAD_CUT_MARKER = "[tool output cut: {omitted} more characters; full text remains in L5]"


def _cut_fence(block: str, limit: int) -> str:
    """Shorten an oversized fenced block but keep it visibly fenced."""
    if len(block) <= limit:
        return block
    marker = CODE_CUT_MARKER.format(omitted=len(block) - limit)
    return f"{block[:limit].rstrip()}\n{marker}\n```"


def _compact_tool_output(content: str, limit: int) -> str:
    """Shrink an oversized tool-role body to its summary or a cut prefix."""
    if len(content) <= limit:
        return content
    ok, _ = _parse_json(content)
    if ok:
        return summarize_tool_result(content)
    marker = PAYLOAD_CUT_MARKER.format(omitted=len(content) - limit)
    return f"{content[:limit].rstrip()}\n{marker}"


def _derivation_text(message: Any, limit: int) -> str:
    """Conversational text kept whole; tool payloads and long code compacted."""
    content = (message.content or "").strip()
    info = detect_tool_json(content)
    if info is not None:
        text = info.line
    elif message.role == "tool":
        text = _compact_tool_output(content, limit)
    else:
        text = FENCED_CODE.sub(lambda m: _cut_fence(m.group(0), limit), content)
    lines = [text] if text else []
    lines.extend(trace_line(trace) for trace in _tool_calls(message))
    return "\n".join(lines)


def derivation_view(messages: Iterable[Any], max_tool_chars: int = 400) -> list[dict[str, Any]]:
    """Compact per-message input for model-backed derivation (design §4.2, issue #65).

    Tool payloads dominated derivation input in the reference, so tool arguments
    are never included, tool results become summaries and fenced code longer
    than ``max_tool_chars`` is cut with a marker. Ids are kept for provenance.
    """
    return [
        {
            "id": getattr(message, "id", None),
            "role": message.role,
            "speaker": getattr(message, "speaker", None),
            "created_at": getattr(message, "created_at", None),
            "text": _derivation_text(message, max_tool_chars),
        }
        for message in messages
    ]
