"""gitmemo's text, read and written: entry files and commit messages of a ``.mem`` repository.

gitmemo (the DeepSeek Harness memory plugin) keeps task-outcome notes in a git repository. An entry
is a markdown file under ``entries/``; the commit that adds it carries the index record in its message:
the title as subject, the summary as body, then a trailer block (``GitMemo-Type: add|replace|delete``,
``GitMemo-Kind: topic``, one ``GitMemo-Keyword`` each, ``GitMemo-Digest``, ``GitMemo-Search-Text``,
``GitMemo-Replaces`` / ``GitMemo-Deletes`` naming the hash of the version replaced or withdrawn). A
repository holding ``.gitmemo-format`` = ``2`` is format 2; anything else is legacy (the bash-script
era: title as subject, an optional body, in-place updates, ``delete: remove <stem>`` commits, keywords
in the entry's front matter).

Everything here is pure: no git process, no database. ``core.services.gitmemo`` runs git and stores.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Sequence

from core.text import normalize

FORMAT = "gitmemo"  # the import batch format
FORMAT_FILE = ".gitmemo-format"
FORMAT_VERSION = "2"
ENTRIES = "entries/"
INIT_SUBJECT = "init: initialize memory repo (gitmemo format 2)"
LEGACY_TITLE = "legacy memory"
MAX_LEGACY_KEYWORDS = 12
MAX_KEYWORD = 64
MAX_TITLE = 200
MAX_SUMMARY = 4000

# A trailer line: ``GitMemo-Name: value`` (the name compared case-insensitively).
_TRAILER = re.compile(r"^(gitmemo-[a-z0-9][a-z0-9-]*)[ \t]*:[ \t]?(.*)$", re.IGNORECASE)
_HEX = re.compile(r"[0-9a-f]{7,64}")
_SLUG = re.compile(r"[^a-z0-9]+")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FINAL = re.compile(r"final\s+outcome", re.IGNORECASE)
_BODY_KEYWORDS = re.compile(r"^[ \t]*[-*]?[ \t]*(?:keywords|tags)[ \t]*:[ \t]*(.+)$", re.IGNORECASE | re.MULTILINE)


class EntryError(ValueError):
    """An entry file or commit message that cannot be read as gitmemo wrote it (the service adds where)."""


@dataclass(frozen=True)
class CommitMessage:
    subject: str
    summary: str  # the body between the subject and the trailer block
    trailers: tuple[tuple[str, str], ...]  # (lower-cased name, value) in order

    def values(self, name: str) -> list[str]:
        key = name.lower()
        return [v for k, v in self.trailers if k == key]

    def value(self, name: str) -> str | None:
        found = self.values(name)
        return found[0] if found else None

    @property
    def type(self) -> str | None:
        """add, replace or delete; None for a commit without a known type (legacy)."""
        value = (self.value("GitMemo-Type") or "").strip().lower()
        return value if value in ("add", "replace", "delete") else None


@dataclass(frozen=True)
class Entry:
    """An entry file: its front matter, and the sections of its body (None when absent)."""

    front: dict[str, Any]
    title: str | None
    summary: str | None
    content: str | None  # format 2: the Final Outcome section
    body: str  # everything after the front matter


def parse_commit_message(text: str) -> CommitMessage:
    """Subject, summary and trailers: the trailer block is found scanning up from the end over blank
    and ``GitMemo-X:`` lines; runs of three or more newlines in the summary become two."""
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return CommitMessage("", "", ())
    start = len(lines)
    while start > 1 and (not lines[start - 1].strip() or _TRAILER.match(lines[start - 1])):
        start -= 1
    trailers = []
    for line in lines[start:]:
        if match := _TRAILER.match(line):
            trailers.append((match.group(1).lower(), match.group(2).strip()))
    body = "\n".join(lines[1:start]).strip()
    return CommitMessage(lines[0].strip(), re.sub(r"\n{3,}", "\n\n", body), tuple(trailers))


def _scalar(text: str) -> Any:
    text = text.strip()
    if not text:
        return ""
    if text[0] in '["{':
        try:
            return json.loads(text)
        except ValueError:
            pass
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(part) for part in text[1:-1].split(",") if part.strip()]
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def parse_front_matter(lines: Sequence[str]) -> dict[str, Any]:
    """The small YAML subset gitmemo writes: ``key: value`` (a JSON or plain scalar, or an inline
    ``[a, b]`` list) and ``key:`` followed by ``- item`` lines."""
    out: dict[str, Any] = {}
    key: str | None = None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.match(r"^[ \t]*-[ \t]+(.*)$", line)
        if item and key is not None:
            current = out.get(key)
            out[key] = [*(current if isinstance(current, list) else []), _scalar(item.group(1))]
            continue
        pair = re.match(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(.*)$", line)
        if pair is None:
            raise EntryError(f"front matter line {line.strip()!r} is not 'key: value'")
        key = pair.group(1).lower()
        out[key] = _scalar(pair.group(2)) if pair.group(2).strip() else []
    return out


def parse_entry(text: str, *, required: bool) -> Entry:
    """An entry file. ``required`` (format 2): front matter, a ``# title``, ``## Summary`` and a
    non-empty ``## Final Outcome`` must be there; otherwise only what is found is returned."""
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    front: dict[str, Any] = {}
    body_lines = lines
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is None:
            raise EntryError("the front matter opened by '---' is never closed")
        front = parse_front_matter(lines[1:end])
        body_lines = lines[end + 1 :]
    elif required:
        raise EntryError("no front matter (a format-2 entry starts with '---')")
    title = summary = content = None
    marks: list[tuple[int, int, str]] = []  # (line, level, heading text)
    for index, line in enumerate(body_lines):
        if match := _HEADING.match(line):
            marks.append((index, len(match.group(1)), match.group(2).strip()))
    first_title = next((m for m in marks if m[1] == 1), None)
    if first_title is not None:
        title = first_title[2]
    summary_at = next((m[0] for m in marks if m[1] == 2 and m[2].lower() == "summary"), None)
    final_at = next(
        (m[0] for m in marks if m[1] == 2 and m[2].lower() == "final outcome" and m[0] > (summary_at or -1)), None
    )
    if summary_at is not None:
        summary = "\n".join(body_lines[summary_at + 1 : final_at if final_at is not None else None]).strip()
    if final_at is not None:
        content = "\n".join(body_lines[final_at + 1 :]).strip()
    if required:
        if title is None:
            raise EntryError("no '# title' line")
        if final_at is None:
            raise EntryError("no '## Final Outcome' section")
        if not content:
            raise EntryError("the '## Final Outcome' section is empty")
    return Entry(front=front, title=title, summary=summary, content=content, body="\n".join(body_lines).strip())


def front_list(front: dict[str, Any], key: str) -> list[str]:
    """A front-matter list as strings (a comma-separated string counts as a list)."""
    value = front.get(key)
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = [part for part in value.split(",")]
    if not isinstance(value, list):
        value = [value]
    return [str(v).strip() for v in value if str(v).strip()]


def front_text(front: dict[str, Any], key: str) -> str | None:
    value = front.get(key)
    if value is None or isinstance(value, (list, dict)):
        return None
    text = str(value).strip()
    return text or None


def code_value(value: str | None) -> str | None:
    """A code branch or commit as gitmemo writes it; ``unknown`` means none."""
    return None if value is None or value.strip().lower() in ("", "unknown") else value.strip()


def is_hash(value: str) -> bool:
    return bool(_HEX.fullmatch(value))


# ----------------------------------------------------------------------------- legacy inference


def _clean(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", unicodedata.normalize("NFKC", text)).split())


def legacy_keywords(entry: Entry) -> list[str]:
    """Front-matter ``tags`` / ``keywords`` (a list), else body lines ``keywords: a, b``; NFKC,
    control characters blanked, each cut to 64 characters, at most 12, deduplicated."""
    words = front_list(entry.front, "tags") + front_list(entry.front, "keywords")
    if not words:
        for match in _BODY_KEYWORDS.finditer(entry.body):
            value = _scalar(match.group(1))
            parts = value if isinstance(value, list) else str(value).split(",")
            words += [str(p) for p in parts]
    out: dict[str, str] = {}
    for word in words:
        text = _clean(word)[:MAX_KEYWORD].strip()
        if text and not _TRAILER.match(text):
            out.setdefault(normalize(text), text)
    return list(out.values())[:MAX_LEGACY_KEYWORDS]


def legacy_summary(entry: Entry, body: str) -> str | None:
    """The first paragraph after a "Final Outcome" heading, else the commit body (None when neither)."""
    lines = entry.body.split("\n")
    for index, line in enumerate(lines):
        match = _HEADING.match(line)
        if match and _FINAL.search(match.group(2)):
            paragraph: list[str] = []
            for rest in lines[index + 1 :]:
                if _HEADING.match(rest) or (not rest.strip() and paragraph):
                    break
                if rest.strip():
                    paragraph.append(rest.strip())
            if paragraph:
                return "\n".join(paragraph)[:MAX_SUMMARY]
            break
    return body.strip()[:MAX_SUMMARY] or None


def legacy_title(subject: str) -> str:
    text = _clean(subject)
    return text[:MAX_TITLE].strip() or LEGACY_TITLE


# ----------------------------------------------------------------------------- writing


def gitmemo_digest(title: str, summary: str, keywords: Iterable[str], content: str, kind: str) -> str:
    """``sha256:<hex>`` over the JSON object gitmemo hashes: title, summary, the normalised keywords
    (deduplicated, sorted), content and kind, in that key order, compact."""
    payload = {
        "title": title,
        "summary": summary,
        "keywords": sorted({normalize(k) for k in keywords}),
        "content": content,
        "kind": kind,
    }
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(data.encode("utf-8")).hexdigest()


def slug(title: str) -> str:
    """The title lower-cased, each run of other characters than a-z and 0-9 a dash, edges trimmed."""
    return _SLUG.sub("-", title.lower()).strip("-") or "memory-entry"


def utc_stamp(when: datetime) -> str:
    """``YYYYMMDDTHHMMSS.mmmZ`` of an aware time."""
    at = when.astimezone(timezone.utc)
    return at.strftime("%Y%m%dT%H%M%S") + f".{at.microsecond // 1000:03d}Z"


def utc_iso(when: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ``, as JavaScript's ``toISOString`` writes it."""
    at = when.astimezone(timezone.utc)
    return at.strftime("%Y-%m-%dT%H:%M:%S") + f".{at.microsecond // 1000:03d}Z"


def entry_name(when: datetime, digest: str, title: str, taken: set[str]) -> str:
    """``entries/<UTC-ms>-<digest8>-<slug>.md``, with ``-2``, ``-3`` … when the name is taken."""
    stem = f"{ENTRIES}{utc_stamp(when)}-{digest.removeprefix('sha256:')[:8]}-{slug(title)}"
    name, n = f"{stem}.md", 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}.md"
    return name


def entry_text(
    *,
    date: str,
    kind: str,
    title: str,
    summary: str,
    keywords: Sequence[str],
    content: str,
    branch: str | None,
    commit: str | None,
    related_branches: Sequence[str],
    related_paths: Sequence[str],
) -> str:
    """An entry file as gitmemo writes it: front matter, ``# title``, ``## Summary``, ``## Final Outcome``."""

    def q(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    front = [
        "---",
        f"gitmemo_version: {q(FORMAT_VERSION)}",
        f"date: {q(date)}",
        f"kind: {kind}",
        f"code_branch: {q(branch or 'unknown')}",
        f"code_commit: {q(commit or 'unknown')}",
        f"related_branches: {q(list(related_branches))}",
        f"related_paths: {q(list(related_paths))}",
        f"keywords: {q(list(keywords))}",
        "---",
    ]
    return "\n".join([*front, "", f"# {title}", "", "## Summary", "", summary, "", "## Final Outcome", "", content, ""])


def commit_message(subject: str, body: str, trailers: Sequence[tuple[str, str]]) -> str:
    """Subject, a blank line, the body, a blank line, the trailer block (one ``Name: value`` a line)."""
    parts = [subject.strip()]
    if body.strip():
        parts.append(body.strip())
    parts.append("\n".join(f"{name}: {value}" for name, value in trailers))
    return "\n\n".join(parts) + "\n"


def write_trailers(
    *, type: str, kind: str, keywords: Sequence[str], digest: str, title: str, summary: str, replaces: str | None
) -> list[tuple[str, str]]:
    """The trailers of an add or replace commit, in gitmemo's order."""
    out = [("GitMemo-Type", type)]
    if replaces:
        out.append(("GitMemo-Replaces", replaces))
    if kind == "topic":
        out.append(("GitMemo-Kind", "topic"))
    out += [("GitMemo-Keyword", k) for k in keywords]
    out.append(("GitMemo-Digest", digest))
    out += [("GitMemo-Search-Text", text) for text in (normalize(title), normalize(summary), *map(normalize, keywords))]
    return out


__all__ = [
    "CommitMessage",
    "ENTRIES",
    "Entry",
    "EntryError",
    "FORMAT",
    "FORMAT_FILE",
    "FORMAT_VERSION",
    "INIT_SUBJECT",
    "code_value",
    "commit_message",
    "entry_name",
    "entry_text",
    "front_list",
    "front_text",
    "gitmemo_digest",
    "is_hash",
    "legacy_keywords",
    "legacy_summary",
    "legacy_title",
    "parse_commit_message",
    "parse_entry",
    "parse_front_matter",
    "slug",
    "utc_iso",
    "utc_stamp",
    "write_trailers",
]
