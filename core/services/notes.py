"""Task-outcome notes and topic pages.

A note is what an agent (or a person) concluded at the end of a piece of work: a title, a summary, 2 to
12 keywords, the content, and optionally the code it concerns (branch, commit, related paths). A version
is never edited. ``replace_note`` writes a new version and marks the old one superseded in the same
transaction; ``delete_note`` withdraws a version with a required reason. Every version stays readable by
its public id (40 hex characters, any unique prefix of 7 or more will do) for as long as the namespace
exists.

A topic page (``kind`` topic) gathers notes by ``[[id]]`` links and says what currently holds; a
namespace has one standing topic per title, and it changes only by replace. Reading with ``expand``
resolves each link one hop, following replacements to the active version.

Search is keyword recall: a query keyword matches a note when it is a substring of its title, summary
or one of its keywords, all compared after NFKC, case folding and whitespace collapsing. The score is
the number of matched keywords (``count``) or the sum of their rarity weights over the matched notes
(``weighted``), plus a recency bonus; pages are tied to a snapshot of the namespace's notes.

Notes are governed in spirit: one written by an agent, a tool or an import waits as ``quarantined``
(readable by id, never returned by search) unless the namespace policy trusts that source, until a
person approves it. A person's own note is active at once. Every change appends an audit row
(subject ``note``), which is also what a search snapshot counts.
"""

from __future__ import annotations

import hashlib
import json
import math
import posixpath
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Sequence

from peewee import fn

from core.db import any_of, insert_one, read_snapshot, write_transaction
from core.errors import DuplicateError, InvalidInputError, NotFoundError
from core.models import AuditEntry, Namespace, Note, NoteAlias
from core.services.policy import get_policy
from core.services.spaces import get_namespace, get_or_create_namespace
from core.text import normalize
from core.timeutil import now_iso, now_local, parse_timestamp, to_iso
from core.vocab import NOTE_KINDS, NOTE_SCORING, NOTE_STATUSES, RECORD_SOURCES

MAX_TITLE = 200
MAX_SUMMARY = 4000
MAX_CONTENT_BYTES = 1024 * 1024
MIN_KEYWORDS = 2
MAX_KEYWORDS = 12
MAX_QUERY_KEYWORDS = 15
MAX_KEYWORD = 64
MAX_REASON = 4000
MAX_BRANCHES = 32
MAX_BRANCH = 256
MAX_PATHS = 128
MAX_PATH = 1024
MAX_ACTOR = 200
MAX_LINKS = 32  # links expanded per note, in order of first appearance
MAX_HOPS = 16  # replacements followed from a superseded link to the active version
PAGE_SIZE = 20
MAX_PAGE = 100
RECENT_DAYS = 30  # the full recency bonus up to this age
FADED_DAYS = 180  # no bonus from this age on; linear in between
RECENCY_BONUS = 0.5

# Versions that still stand: a new note saying the same thing as one of them is a duplicate.
STANDING = ("active", "quarantined")
AUDIT_SUBJECT = "note"

# C0 controls but tab, LF and CR, and DEL.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# A line that looks like note metadata (gitmemo's trailers, or ours on export): a note that carried
# one would forge its own keywords or lineage when written out as text and read back in.
_MARKER = re.compile(r"^[ \t]*(?:gitmemo|strata)-[a-z0-9][a-z0-9-]*[ \t]*:", re.IGNORECASE | re.MULTILINE)
_ID = re.compile(r"[0-9a-f]{7,40}")
_ALIAS = re.compile(r"[0-9a-f]{7,64}")  # an imported note's old id (a gitmemo commit hash)
_LINK = re.compile(r"\[\[([0-9a-fA-F]{7,64})\]\]")
_COMMIT = re.compile(r"[0-9a-f]{7,64}")
_DRIVE = re.compile(r"^[A-Za-z]:")
_SNAPSHOT = re.compile(r"(\d{1,18})\.(\d{1,18})")


class DuplicateNoteError(DuplicateError):
    """The note says exactly what a standing note says (same digest)."""


@dataclass(frozen=True)
class NoteLink:
    """One ``[[id]]`` of a note, resolved one hop. ``state``: active (the linked version stands),
    superseded (replaced; ``resolved_id`` is the active version reached), withdrawn, quarantined
    (waiting for review) or dangling (no such note, or an ambiguous prefix; see ``error``)."""

    link: str
    state: str
    resolved_id: str | None
    title: str | None = None
    summary: str | None = None
    keywords: tuple[str, ...] = ()
    kind: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class NoteView:
    id: str
    namespace: str
    kind: str
    title: str
    summary: str
    keywords: tuple[str, ...]
    content: str
    status: str
    branch: str | None
    commit: str | None
    related_branches: tuple[str, ...]
    related_paths: tuple[str, ...]
    supersedes: str | None
    superseded_by: str | None
    reason: str | None
    digest: str
    source: str
    actor: str | None
    created_at: str
    updated_at: str
    links: tuple[NoteLink, ...] | None = None  # only when read with expand


@dataclass(frozen=True)
class NoteBrief:
    id: str
    kind: str
    title: str
    status: str
    keywords: tuple[str, ...]
    supersedes: str | None
    superseded_by: str | None
    source: str
    actor: str | None
    created_at: str


@dataclass(frozen=True)
class NoteHit:
    id: str
    kind: str
    title: str
    summary: str
    keywords: tuple[str, ...]
    created_at: str
    score: float
    matched_keywords: tuple[str, ...]


@dataclass(frozen=True)
class NotePage:
    namespace: str
    snapshot: str  # pass it back with skip for the next page
    mode: str
    keywords: tuple[str, ...]  # the query keywords, normalised
    total: int
    skip: int
    next_skip: int | None
    hits: tuple[NoteHit, ...]


# ----------------------------------------------------------------------------- checks


def _text(
    value: Any, field: str, limit: int, *, one_line: bool = False, markers: bool = True, required: bool = True
) -> str | None:
    """``value`` trimmed, or InvalidInputError naming ``field``."""
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be text, got {type(value).__name__}")
    if bad := _SURROGATE.search(value):
        raise InvalidInputError(f"{field} is not valid UTF-8 text (position {bad.start()})")
    if bad := _UNSAFE.search(value):  # before trimming: strip() takes \x0b and \x0c for spaces
        raise InvalidInputError(
            f"{field} holds a control character (U+{ord(bad.group()):04X} at position {bad.start()})"
        )
    text = value.strip()
    if not text:
        if required:
            raise InvalidInputError(f"{field} is empty")
        return None
    if one_line and len(text.splitlines()) > 1:
        raise InvalidInputError(f"{field} must be a single line")
    if len(text) > limit:
        raise InvalidInputError(f"{field} is {len(text)} characters; at most {limit}")
    if markers and (bad := _MARKER.search(text)):
        raise InvalidInputError(
            f"{field} holds a line that reads as note metadata ({bad.group().strip()!r}); reword it"
        )
    return text


def _content(value: Any) -> str:
    text = _text(value, "content", MAX_CONTENT_BYTES, markers=False)
    assert text is not None
    size = len(text.encode("utf-8"))
    if size > MAX_CONTENT_BYTES:
        raise InvalidInputError(f"content is {size} bytes of UTF-8; at most {MAX_CONTENT_BYTES} (1 MiB)")
    return text


def _choice(value: Any, field: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise InvalidInputError(f"{field} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _list(value: Any, field: str, high: int, what: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise InvalidInputError(f"{field} must be a list of {what}, got {type(value).__name__}")
    if len(value) > high:
        raise InvalidInputError(f"{field} has {len(value)} entries; at most {high}")
    return list(value)


def normalize_keywords(value: Any, field: str = "keywords", *, low: int, high: int) -> list[str]:
    """Keywords checked one by one and deduplicated by their normalised form, keeping the first
    spelling of each; fewer than ``low`` or more than ``high`` is refused."""
    items = _list(value, field, high, "words or short phrases")
    out: dict[str, str] = {}
    for index, item in enumerate(items):
        text = _text(item, f"{field}[{index}]", MAX_KEYWORD, one_line=True)
        assert text is not None
        out.setdefault(normalize(text), text)
    if len(out) < low:
        raise InvalidInputError(
            f"{field}: {len(out)} distinct entries after normalization; at least {low} (at most {high})"
        )
    return list(out.values())


def _branch(value: Any, field: str) -> str | None:
    text = _text(value, field, MAX_BRANCH, one_line=True, markers=False, required=False)
    return unicodedata.normalize("NFKC", text) if text else None


def _branches(value: Any) -> list[str]:
    out: list[str] = []
    for index, item in enumerate(_list(value, "related_branches", MAX_BRANCHES, "branch names")):
        name = _branch(item, f"related_branches[{index}]")
        if name is None:
            raise InvalidInputError(f"related_branches[{index}] is empty")
        if name not in out:
            out.append(name)
    return out


def _paths(value: Any) -> list[str]:
    """Project-relative paths, ``.`` and ``..`` resolved and written ``a/b/c``; an absolute path, a
    drive letter, or one that leaves the project or names its root is refused."""
    out: list[str] = []
    for index, item in enumerate(_list(value, "related_paths", MAX_PATHS, "project-relative paths")):
        field = f"related_paths[{index}]"
        text = _text(item, field, MAX_PATH, one_line=True, markers=False)
        assert text is not None
        text = text.replace("\\", "/")
        if text.startswith("/") or _DRIVE.match(text):
            raise InvalidInputError(f"{field} {text!r} is absolute; give it relative to the project root")
        resolved = posixpath.normpath(text)
        if resolved in (".", "..") or resolved.startswith("../"):
            raise InvalidInputError(f"{field} {text!r} is the project root or outside it")
        if resolved not in out:
            out.append(resolved)
    return out


def _commit(value: Any) -> str | None:
    text = _text(value, "commit", 64, one_line=True, markers=False, required=False)
    if text is None:
        return None
    text = text.lower()
    if not _COMMIT.fullmatch(text):
        raise InvalidInputError(f"commit must be 7 to 64 hexadecimal characters, got {text!r}")
    return text


def _when(value: Any) -> str:
    if value is None:
        return now_iso()
    return to_iso(parse_timestamp(value, where="created_at"))


def note_digest(title: str, summary: str, keywords: Iterable[str], content: str, kind: str) -> str:
    """SHA-256 over the note's meaning: title, summary, the sorted normalised keywords, content and
    kind. Time, actor and code context are left out, so the same conclusion written twice is one."""
    payload = {
        "title": title,
        "summary": summary,
        "keywords": sorted({normalize(k) for k in keywords}),
        "content": content,
        "kind": kind,
    }
    data = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def _search_text(title: str, summary: str, keywords: Iterable[str]) -> str:
    # One normalised field per line: normalisation collapses every line break, so a query keyword
    # (normalised too) found in this text is found inside one field.
    return "\n".join([normalize(title), normalize(summary), *(normalize(k) for k in keywords)])


@dataclass(frozen=True)
class _Fields:
    kind: str
    title: str
    summary: str
    keywords: list[str]
    content: str
    branch: str | None
    commit: str | None
    related_branches: list[str]
    related_paths: list[str]

    @property
    def digest(self) -> str:
        return note_digest(self.title, self.summary, self.keywords, self.content, self.kind)


def _fields(
    *,
    title: Any,
    summary: Any,
    keywords: Any,
    content: Any,
    kind: Any,
    branch: Any,
    commit: Any,
    related_branches: Any,
    related_paths: Any,
    min_keywords: int = MIN_KEYWORDS,
) -> _Fields:
    return _Fields(
        kind=_choice(kind, "kind", NOTE_KINDS),
        title=_text(title, "title", MAX_TITLE, one_line=True),  # type: ignore[arg-type]
        summary=_text(summary, "summary", MAX_SUMMARY),  # type: ignore[arg-type]
        keywords=normalize_keywords(keywords, low=min_keywords, high=MAX_KEYWORDS),
        content=_content(content),
        branch=_branch(branch, "branch"),
        commit=_commit(commit),
        related_branches=_branches(related_branches),
        related_paths=_paths(related_paths),
    )


def imported_note_values(*, min_keywords: int = MIN_KEYWORDS, **given: Any) -> dict[str, Any]:
    """The checked content columns of a note read from another store (title, summary, keywords,
    content, kind, code context), with its search text and digest, under the rules of ``write_note``
    but for the least number of keywords (gitmemo's legacy entries may have none). The caller sets
    the status, lineage, source, actor and times."""
    return _content_columns(_fields(min_keywords=min_keywords, **given))


def _content_columns(fields: _Fields) -> dict[str, Any]:
    """A note's content columns, search text and digest as stored."""
    return dict(
        kind=fields.kind,
        title=fields.title,
        summary=fields.summary,
        keywords=fields.keywords,
        search_text=_search_text(fields.title, fields.summary, fields.keywords),
        content=fields.content,
        code_branch=fields.branch,
        code_commit=fields.commit,
        related_branches=fields.related_branches,
        related_paths=fields.related_paths,
        digest=fields.digest,
    )


def _who(actor: Any, source: str) -> str:
    return _text(actor, "actor", MAX_ACTOR, one_line=True, markers=False, required=False) or source


def _trusted(namespace: str, source: str) -> bool:
    """A person's own note stands at once; any other source's waits unless the policy trusts it."""
    return source == "user" or get_policy(namespace).trusts(source)


# ----------------------------------------------------------------------------- rows and views


def _names(rows: Iterable[Note]) -> dict[int, str]:
    ids = {r.namespace_id for r in rows}
    return dict(Namespace.select(Namespace.id, Namespace.name).where(Namespace.id.in_(ids)).tuples()) if ids else {}


def _view(row: Note, namespace: str, links: tuple[NoteLink, ...] | None = None) -> NoteView:
    return NoteView(
        id=row.note_id,
        namespace=namespace,
        kind=row.kind,
        title=row.title,
        summary=row.summary,
        keywords=tuple(row.keywords or ()),
        content=row.content,
        status=row.status,
        branch=row.code_branch,
        commit=row.code_commit,
        related_branches=tuple(row.related_branches or ()),
        related_paths=tuple(row.related_paths or ()),
        supersedes=row.supersedes,
        superseded_by=row.superseded_by,
        reason=row.reason,
        digest=row.digest,
        source=row.source,
        actor=row.actor,
        created_at=row.created_at,
        updated_at=row.updated_at,
        links=links,
    )


def _brief(row: Note) -> NoteBrief:
    return NoteBrief(
        id=row.note_id,
        kind=row.kind,
        title=row.title,
        status=row.status,
        keywords=tuple(row.keywords or ()),
        supersedes=row.supersedes,
        superseded_by=row.superseded_by,
        source=row.source,
        actor=row.actor,
        created_at=row.created_at,
    )


def _find(id_or_prefix: Any, namespace_id: int | None = None, field: str = "id") -> Note:
    """The note whose public id is, or starts with, ``id_or_prefix`` (7 to 40 hex characters)."""
    if not isinstance(id_or_prefix, str):
        raise InvalidInputError(
            f"{field} must be a note id (7 to 40 hex characters), got {type(id_or_prefix).__name__}"
        )
    key = id_or_prefix.strip().lower()
    if key.startswith("note:"):
        key = key[len("note:") :]
    if not _ALIAS.fullmatch(key):
        raise InvalidInputError(f"{field} must be a note id (7 to 40 hex characters), got {id_or_prefix!r}")
    rows: list[Note] = []
    if _ID.fullmatch(key):
        query = Note.select().where(Note.note_id.startswith(key))
        if namespace_id is not None:
            query = query.where(Note.namespace == namespace_id)
        rows = list(query.order_by(Note.note_id).limit(6))
    if not rows:
        rows = _aliased(key, namespace_id, 6)  # an imported note read by its old id
    if not rows and not _ID.fullmatch(key):
        raise InvalidInputError(
            f"{field} must be a note id (7 to 40 hex characters) or the old id of an imported note, got "
            f"{id_or_prefix!r}"
        )
    if not rows:
        raise NotFoundError(f"no note {key} (see `strata note list`)")
    if len(rows) > 1:
        shown = ", ".join(r.note_id[:12] for r in rows[:5])
        raise InvalidInputError(f"{field} {key} is ambiguous: it starts {shown}{' …' if len(rows) > 5 else ''}")
    return rows[0]


def _aliased(key: str, namespace_id: int | None, limit: int) -> list[Note]:
    """The notes whose old id (NoteAlias) is, or starts with, ``key``."""
    query = Note.select().join(NoteAlias, on=(NoteAlias.note == Note.id)).where(NoteAlias.alias.startswith(key))
    if namespace_id is not None:
        query = query.where(NoteAlias.namespace == namespace_id)
    return list({r.id: r for r in query.order_by(NoteAlias.alias).limit(limit)}.values())


def _current(row: Note) -> Note:
    """The newest version ``row`` was replaced by (``row`` itself when it was not)."""
    for _ in range(MAX_HOPS * 64):
        if row.status != "superseded" or not row.superseded_by:
            break
        nxt = Note.get_or_none(Note.note_id == row.superseded_by)
        if nxt is None:
            break
        row = nxt
    return row


def _not_active(row: Note, action: str) -> InvalidInputError:
    if row.status == "superseded":
        now = _current(row)
        return InvalidInputError(
            f"note {row.note_id} was replaced (its current version is {now.note_id}, {now.status}); "
            f"{action} applies to the active version"
        )
    return InvalidInputError(f"note {row.note_id} is {row.status}; {action} applies to an active note")


def revision(namespace_id: int) -> int:
    """The namespace's note revision: the newest note audit row (0 before any note)."""
    value = (
        AuditEntry.select(fn.MAX(AuditEntry.id))
        .where((AuditEntry.namespace == namespace_id) & (AuditEntry.subject == AUDIT_SUBJECT))
        .scalar()
    )
    return int(value or 0)


def _audit(row: Note, action: str, before: str | None, after: str, actor: str, reason: str | None, now: str) -> None:
    insert_one(
        AuditEntry,
        dict(
            namespace=row.namespace_id,
            subject=AUDIT_SUBJECT,
            subject_id=row.id,
            action=action,
            from_status=before,
            to_status=after,
            actor=actor,
            reason=reason,
            detail={"note": row.note_id},
            at=now,
        ),
    )


def _refuse_duplicate(namespace_id: int, digest: str, *, besides: Sequence[int] = ()) -> None:
    query = Note.select().where((Note.namespace == namespace_id) & (Note.digest == digest) & Note.status.in_(STANDING))
    if besides:
        query = query.where(Note.id.not_in(list(besides)))
    same = query.first()
    if same is not None:
        raise DuplicateNoteError(
            f"note {same.note_id} ({same.status}) already records this: {same.title!r}; replace it, or delete "
            "it and write again",
            same.note_id,
        )


def _refuse_second_topic(namespace_id: int, title: str, *, besides: Sequence[int] = ()) -> None:
    folded = normalize(title)
    query = Note.select(Note.id, Note.note_id, Note.title).where(
        (Note.namespace == namespace_id) & (Note.kind == "topic") & Note.status.in_(STANDING)
    )
    if besides:
        query = query.where(Note.id.not_in(list(besides)))
    for row in query:
        if normalize(row.title) == folded:
            raise InvalidInputError(
                f"title: topic page {row.note_id} is already titled {row.title!r}; a topic changes by replace"
            )


def _insert(
    ns: Namespace,
    fields: _Fields,
    *,
    status: str,
    source: str,
    actor: str,
    created_at: str,
    supersedes: str | None = None,
    reason: str | None = None,
) -> Note:
    digest = fields.digest
    seed = f"{ns.id}\n{revision(ns.id)}\n{digest}\n{created_at}\n{supersedes or ''}"
    return insert_one(
        Note,
        dict(
            namespace=ns.id,
            note_id=hashlib.sha256(seed.encode("utf-8")).hexdigest()[:40],
            **_content_columns(fields),
            status=status,
            supersedes=supersedes,
            reason=reason,
            source=source,
            actor=actor,
            created_at=created_at,
            updated_at=created_at,
        ),
    )


def _supersede(old: Note, new: Note, actor: str, reason: str | None, now: str) -> None:
    Note.update(status="superseded", superseded_by=new.note_id, updated_at=now).where(Note.id == old.id).execute()
    _audit(old, "supersede", "active", "superseded", actor, reason, now)


# ----------------------------------------------------------------------------- writing


def write_note(
    namespace: str,
    *,
    title: Any,
    summary: Any,
    keywords: Any,
    content: Any,
    kind: Any = "task",
    branch: Any = None,
    commit: Any = None,
    related_branches: Any = None,
    related_paths: Any = None,
    source: str = "agent",
    actor: Any = None,
    created_at: Any = None,
) -> NoteView:
    """Store a new note. It is active, or quarantined when an untrusted source wrote it. A note
    whose digest equals a standing note's is refused (DuplicateNoteError names that note), and so is
    a second standing topic page with the same title."""
    fields = _fields(
        title=title,
        summary=summary,
        keywords=keywords,
        content=content,
        kind=kind,
        branch=branch,
        commit=commit,
        related_branches=related_branches,
        related_paths=related_paths,
    )
    source = _choice(source, "source", RECORD_SOURCES)
    who, when = _who(actor, source), _when(created_at)
    with write_transaction():
        ns = get_or_create_namespace(namespace)
        _refuse_duplicate(ns.id, fields.digest)
        if fields.kind == "topic":
            _refuse_second_topic(ns.id, fields.title)
        status = "active" if _trusted(ns.name, source) else "quarantined"
        row = _insert(ns, fields, status=status, source=source, actor=who, created_at=when)
        _audit(row, "write", None, status, who, None, now_iso())
    return _view(row, ns.name)


def replace_note(
    note_id: Any,
    *,
    title: Any = None,
    summary: Any = None,
    keywords: Any = None,
    content: Any = None,
    kind: Any = None,
    branch: Any = None,
    commit: Any = None,
    related_branches: Any = None,
    related_paths: Any = None,
    reason: Any = None,
    source: str = "agent",
    actor: Any = None,
    namespace: str | None = None,
) -> NoteView:
    """Write a new version of an active note; a field left out keeps the old version's value. When
    the writer is trusted, one transaction marks the old version superseded and the new one active;
    otherwise the new version waits in quarantine and the old one stands until it is approved. The
    new digest may equal the old one's (new code context), never another standing note's."""
    source = _choice(source, "source", RECORD_SOURCES)
    who = _who(actor, source)
    why = _text(reason, "reason", MAX_REASON, required=False)
    with write_transaction():
        old = _find(note_id, get_namespace(namespace).id if namespace is not None else None)
        if old.status != "active":
            raise _not_active(old, "replace")
        fields = _fields(
            title=old.title if title is None else title,
            summary=old.summary if summary is None else summary,
            keywords=old.keywords if keywords is None else keywords,
            content=old.content if content is None else content,
            kind=old.kind if kind is None else kind,
            branch=old.code_branch if branch is None else branch,
            commit=old.code_commit if commit is None else commit,
            related_branches=old.related_branches if related_branches is None else related_branches,
            related_paths=old.related_paths if related_paths is None else related_paths,
        )
        ns = Namespace.get_by_id(old.namespace_id)
        _refuse_duplicate(ns.id, fields.digest, besides=[old.id])
        if fields.kind == "topic":
            _refuse_second_topic(ns.id, fields.title, besides=[old.id])
        now = now_iso()
        status = "active" if _trusted(ns.name, source) else "quarantined"
        row = _insert(
            ns, fields, status=status, source=source, actor=who, created_at=now, supersedes=old.note_id, reason=why
        )
        _audit(row, "replace", None, status, who, why, now)
        if status == "active":
            _supersede(old, row, who, why, now)
    return _view(row, ns.name)


def delete_note(note_id: Any, *, reason: Any, actor: Any = None, namespace: str | None = None) -> NoteView:
    """Withdraw an active (or quarantined) note; the reason is required. It stays readable by id."""
    why = _text(reason, "reason", MAX_REASON)
    who = _text(actor, "actor", MAX_ACTOR, one_line=True, markers=False, required=False) or "agent"
    with write_transaction():
        row = _find(note_id, get_namespace(namespace).id if namespace is not None else None)
        if row.status not in STANDING:
            raise _not_active(row, "delete")
        before, now = row.status, now_iso()
        Note.update(status="withdrawn", reason=why, updated_at=now).where(Note.id == row.id).execute()
        _audit(row, "withdraw", before, "withdrawn", who, why, now)
        row = Note.get_by_id(row.id)
    return _view(row, _names([row])[row.namespace_id])


def approve_note(note_id: Any, *, actor: Any, reason: Any = None, namespace: str | None = None) -> NoteView:
    """A person lets a quarantined note stand. A replacement then supersedes the version it
    replaces, in the same transaction; if that version no longer stands, approval is refused."""
    who = _text(actor, "actor", MAX_ACTOR, one_line=True, markers=False)
    assert who is not None
    why = _text(reason, "reason", MAX_REASON, required=False)
    with write_transaction():
        row = _find(note_id, get_namespace(namespace).id if namespace is not None else None)
        if row.status != "quarantined":
            raise InvalidInputError(f"note {row.note_id} is {row.status}; approve applies to a quarantined note")
        old = Note.get_or_none(Note.note_id == row.supersedes) if row.supersedes else None
        if old is not None and old.status != "active":
            raise InvalidInputError(
                f"note {row.note_id} replaces {old.note_id}, which is {old.status} now; delete this one and "
                f"replace the current version ({_current(old).note_id}) instead"
            )
        _refuse_duplicate(row.namespace_id, row.digest, besides=[row.id] + ([old.id] if old else []))
        if row.kind == "topic":
            _refuse_second_topic(row.namespace_id, row.title, besides=[row.id] + ([old.id] if old else []))
        now = now_iso()
        Note.update(status="active", updated_at=now).where(Note.id == row.id).execute()
        _audit(row, "approve", "quarantined", "active", who, why, now)
        if old is not None:
            _supersede(old, row, who, why, now)
        row = Note.get_by_id(row.id)
    return _view(row, _names([row])[row.namespace_id])


# ----------------------------------------------------------------------------- reading


def read_note(id_or_prefix: Any, expand: bool = False, *, namespace: str | None = None) -> NoteView:
    """One version by its id or a unique prefix of it (within ``namespace`` when given); with
    ``expand`` its ``[[id]]`` links, each resolved one hop."""
    ns_id = get_namespace(namespace).id if namespace is not None else None
    with read_snapshot():
        row = _find(id_or_prefix, ns_id)
        links = expand_links(row) if expand else None
        return _view(row, _names([row])[row.namespace_id], links)


def note_links(text: str) -> list[str]:
    """The ``[[id]]`` links of ``text``, lower-cased, in order of first appearance, at most MAX_LINKS."""
    out: list[str] = []
    for match in _LINK.finditer(text):
        link = match.group(1).lower()
        if link not in out:
            out.append(link)
            if len(out) == MAX_LINKS:
                break
    return out


def expand_links(row: Note) -> tuple[NoteLink, ...]:
    return tuple(_resolve_link(row.namespace_id, link) for link in note_links(f"{row.summary}\n{row.content}"))


def _linked(link: str, state: str, row: Note, error: str | None = None) -> NoteLink:
    return NoteLink(
        link=link,
        state=state,
        resolved_id=row.note_id,
        title=row.title,
        summary=row.summary,
        keywords=tuple(row.keywords or ()),
        kind=row.kind,
        error=error,
    )


def _resolve_link(namespace_id: int, link: str) -> NoteLink:
    rows = []
    if len(link) <= 40:
        rows = list(Note.select().where((Note.namespace == namespace_id) & Note.note_id.startswith(link)).limit(2))
    if not rows:
        rows = _aliased(link, namespace_id, 2)  # an imported note linked by its old id
    if not rows:
        return NoteLink(link, "dangling", None, error=f"no note {link} in this namespace")
    if len(rows) > 1:
        return NoteLink(link, "dangling", None, error=f"{link} is ambiguous: more than one note starts with it")
    row = rows[0]
    if row.status in ("active", "withdrawn"):
        return _linked(link, row.status, row)
    if row.status == "quarantined":
        return NoteLink(link, "quarantined", row.note_id, title=row.title, kind=row.kind)
    for _ in range(MAX_HOPS):
        nxt = Note.get_or_none(Note.note_id == row.superseded_by) if row.superseded_by else None
        if nxt is None:
            return _linked(link, "superseded", row, error=f"{row.note_id} was replaced by a note that is gone")
        row = nxt
        if row.status == "active":
            return _linked(link, "superseded", row)
        if row.status != "superseded":
            return _linked(link, row.status, row, error=f"replaced, and its version {row.note_id} is {row.status}")
    return _linked(
        link, "superseded", row, error=f"replaced more than {MAX_HOPS} times; read {row.note_id} to follow on"
    )


def list_notes(
    namespace: str, *, status: str | None = None, kind: str | None = None, limit: int = 200
) -> list[NoteBrief]:
    """The namespace's notes, newest first (every version unless ``status`` chooses)."""
    if status is not None:
        _choice(status, "status", NOTE_STATUSES)
    if kind is not None:
        _choice(kind, "kind", NOTE_KINDS)
    ns = get_namespace(namespace)
    query = Note.select().where(Note.namespace == ns.id)
    if status is not None:
        query = query.where(Note.status == status)
    if kind is not None:
        query = query.where(Note.kind == kind)
    return [_brief(r) for r in query.order_by(Note.id.desc()).limit(max(1, min(int(limit), 10_000)))]


def note_history(id_or_prefix: Any, *, namespace: str | None = None) -> list[NoteBrief]:
    """Every version of the note's line, oldest first: what it replaced and what replaced it."""
    ns_id = get_namespace(namespace).id if namespace is not None else None
    with read_snapshot():
        row = _find(id_or_prefix, ns_id)
        back: list[Note] = []
        seen = {row.note_id}
        cur = row
        while cur.supersedes and (prev := Note.get_or_none(Note.note_id == cur.supersedes)) is not None:
            if prev.note_id in seen:
                break
            seen.add(prev.note_id)
            back.append(prev)
            cur = prev
        forward: list[Note] = []
        cur = row
        while cur.superseded_by and (nxt := Note.get_or_none(Note.note_id == cur.superseded_by)) is not None:
            if nxt.note_id in seen:
                break
            seen.add(nxt.note_id)
            forward.append(nxt)
            cur = nxt
    return [_brief(r) for r in [*reversed(back), row, *forward]]


# ----------------------------------------------------------------------------- search


def keyword_weight(n: int, df: int) -> float:
    """The rarity of a query keyword over ``n`` matched notes, ``df`` of which match it."""
    if n <= 0:
        return 0.0
    df = min(max(df, 0), n)
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def recency_bonus(age_days: float) -> float:
    """0.5 up to 30 days old, nothing from 180 days, linear in between (rounded to 2 decimals)."""
    if age_days <= RECENT_DAYS:
        return RECENCY_BONUS
    if age_days >= FADED_DAYS:
        return 0.0
    return round(RECENCY_BONUS * (FADED_DAYS - age_days) / (FADED_DAYS - RECENT_DAYS), 2)


@dataclass(frozen=True)
class Candidate:
    """A matched note as ranking sees it."""

    id: str
    created: float  # epoch seconds
    matched: tuple[str, ...]  # normalised query keywords it matches


def rank_candidates(
    candidates: Sequence[Candidate], keywords: Sequence[str], mode: str, now: float
) -> list[tuple[Candidate, float]]:
    """(candidate, score) best first: score descending, then newer first, then id descending."""
    _choice(mode, "mode", NOTE_SCORING)
    n = len(candidates)
    df = {k: sum(1 for c in candidates if k in c.matched) for k in keywords}
    weight = {k: keyword_weight(n, df[k]) for k in keywords}
    scored = []
    for c in candidates:
        base = float(len(c.matched)) if mode == "count" else sum(weight[k] for k in c.matched)
        age = max(0.0, (now - c.created) / 86400.0)
        scored.append((c, round(base + recency_bonus(age), 2)))
    scored.sort(key=lambda cs: (cs[1], cs[0].created, cs[0].id), reverse=True)
    return scored


def query_keywords(query: Any) -> tuple[str, ...]:
    """Search keywords, normalised and deduplicated, 1 to 15. A string is split at commas when it
    has any, else at spaces; a list gives one keyword (or phrase) per item."""
    if isinstance(query, str):
        parts = [p for p in (query.split(",") if "," in query else query.split()) if p.strip()]
    else:
        parts = query
    kept = normalize_keywords(parts, "query", low=1, high=MAX_QUERY_KEYWORDS)
    return tuple(dict.fromkeys(normalize(k) for k in kept))


def _snapshot_token(namespace_id: int, rev: int) -> str:
    return f"{namespace_id}.{rev}"


def search_notes(
    namespace: str,
    query: Any,
    mode: str = "weighted",
    limit: int = PAGE_SIZE,
    *,
    skip: int = 0,
    snapshot: str | None = None,
    now: datetime | None = None,
) -> NotePage:
    """Active notes matching any query keyword, ranked; one page of them. Page 1 returns a snapshot
    token; later pages pass it back with ``skip``, and a token the notes have moved past is refused
    (run the search again from the first page)."""
    keys = query_keywords(query)
    _choice(mode, "mode", NOTE_SCORING)
    if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
        raise InvalidInputError(f"skip must be a whole number >= 0, got {skip!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit must be a whole number from 1 to {MAX_PAGE}, got {limit!r}")
    if snapshot is not None and (not isinstance(snapshot, str) or not _SNAPSHOT.fullmatch(snapshot.strip())):
        raise InvalidInputError(f"snapshot must be the token a first page returned, got {snapshot!r}")
    at = (now or now_local()).timestamp()
    ns = get_namespace(namespace)
    with read_snapshot():
        token = _snapshot_token(ns.id, revision(ns.id))
        if snapshot is not None and snapshot.strip() != token:
            raise InvalidInputError(
                f"snapshot {snapshot.strip()} is stale: the notes of {ns.name!r} changed since that page (now "
                f"{token}); run the search again from the first page"
            )
        rows = list(
            Note.select(
                Note.note_id, Note.kind, Note.title, Note.summary, Note.keywords, Note.created_at, Note.search_text
            )
            .where(
                (Note.namespace == ns.id)
                & (Note.status == "active")
                & any_of([Note.search_text.contains(k) for k in keys])
            )
            .tuples()
        )
    found: dict[str, tuple] = {}
    candidates: list[Candidate] = []
    for note_id, kind, title, summary, keywords, created_at, text in rows:
        fields = text.split("\n")
        matched = tuple(k for k in keys if any(k in f for f in fields))
        if not matched:  # the SQL match is case-insensitive where the stored text may not be
            continue
        found[note_id] = (
            kind,
            title,
            summary,
            json.loads(keywords) if isinstance(keywords, str) else keywords,
            created_at,
        )
        candidates.append(Candidate(note_id, parse_timestamp(created_at).timestamp(), matched))
    ranked = rank_candidates(candidates, keys, mode, at)
    hits = []
    for c, score in ranked[skip : skip + limit]:
        kind, title, summary, keywords, created_at = found[c.id]
        hits.append(NoteHit(c.id, kind, title, summary, tuple(keywords or ()), created_at, score, c.matched))
    total = len(ranked)
    return NotePage(
        namespace=ns.name,
        snapshot=token,
        mode=mode,
        keywords=keys,
        total=total,
        skip=skip,
        next_skip=skip + limit if skip + limit < total else None,
        hits=tuple(hits),
    )


__all__ = [
    "Candidate",
    "DuplicateNoteError",
    "NoteBrief",
    "NoteHit",
    "NoteLink",
    "NotePage",
    "NoteView",
    "approve_note",
    "delete_note",
    "keyword_weight",
    "list_notes",
    "note_digest",
    "note_history",
    "note_links",
    "query_keywords",
    "rank_candidates",
    "read_note",
    "recency_bonus",
    "replace_note",
    "revision",
    "search_notes",
    "write_note",
]
