"""Governed memory: what an agent, a tool, an import or a person asserts, and its lifecycle.

What the user's own conversation says stays cited history (event cards derived from its messages).
What *asserts* something the conversation did not is a governed record:

    remember → quarantined → verified (evidence attached) → promoted (a named actor approves)
                     └──────→ rejected          promoted → revoked ⇄ restored, superseded

Only promotion writes what readers find: one message holding the record's text, in a block of its
own, and an event card citing it and the evidence's messages. Until then search, default retrieval
and the agent tools cannot see the record at all; once it is revoked its event stops being live and
its message is withheld. Every transition, and every forget, restore, pin and unpin of an event,
appends an audit row (what, who, why, when) in the same transaction.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from typing import Any, Iterable, Sequence

from core.db import chunks, insert_one, is_row_id, write_transaction
from core.errors import DuplicateError, InvalidInputError, NotFoundError
from core.models import (
    LIVE,
    AuditEntry,
    Block,
    Event,
    EventSource,
    ImportBatch,
    ImportItem,
    MemoryRecord,
    Message,
    Namespace,
    Note,
    Thread,
)
from core.services.capture import append_evidence_block
from core.services.events import forget_event, queue_graph_projection, restore_event, write_event
from core.services.graph_endings import reconsider
from core.services.policy import get_policy
from core.services.spaces import bump_revision, get_namespace, get_or_create_namespace
from core.timeutil import now_iso
from core.vocab import EVIDENCE_GRADES, PRIVACY_LEVELS, RECORD_SOURCES, SCOPES

MAX_TEXT = 4000
MAX_TITLE = 200
MAX_KEY = 160
MAX_ACTOR = 200
MAX_REASON = 1000
MAX_EVIDENCE = 32
NEAR_DUPLICATE = 0.8  # word-set overlap (Jaccard) at which a new record is linked to a live one
NEAR_SCAN = 2000  # newest live records a new one is compared with
GOVERNED_TAG = "governed-memory"
THREAD = "governed-memory"

# Records that still stand: a new record restating one of them is a duplicate.
STANDING = ("quarantined", "verified", "promoted")
WAITING = ("quarantined", "verified")

_REF = re.compile(r"^(message|event):(\d{1,18})$|^raw:\d{1,18}:(\d{1,18}):\d{1,9}$")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class DuplicateRecordError(DuplicateError):
    """The record restates a standing one word for word."""


@dataclass(frozen=True)
class RecordView:
    id: int
    namespace: str
    title: str
    text: str
    source: str
    actor: str | None
    scope: str
    privacy: str
    expires_at: str | None
    review_by: str | None
    key: str | None
    status: str
    evidence: tuple[str, ...]
    grade: str | None
    near_duplicate_of: int | None
    event_id: int | None
    message_id: int | None
    superseded_by: int | None
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class AuditRow:
    id: int
    namespace: str
    subject: str  # record | event
    subject_id: int
    action: str
    from_status: str | None
    to_status: str | None
    actor: str
    reason: str | None
    at: str


@dataclass(frozen=True)
class ReviewItem:
    """One thing waiting for a person: a governed record, a canonical-key conflict, a promoted
    record past its review date, or an import item whose decision needs confirming."""

    kind: str  # record | key_conflict | stale | note | import_item
    id: str  # "record:12", "key:home", "note:<hex id>", "import:3:7"
    title: str
    detail: str
    status: str
    created_at: str
    source: str = ""  # agent | user | tool | import ("" for a key conflict)


# ----------------------------------------------------------------------------- checks


def _text(value: Any, what: str, limit: int, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text, got {type(value).__name__}")
    text = value.strip()
    if not text:
        if required:
            raise InvalidInputError(f"{what} is empty")
        return None
    if "\x00" in text:
        raise InvalidInputError(f"{what} contains a NUL character (position {text.index(chr(0))})")
    if len(text) > limit:
        raise InvalidInputError(f"{what} is {len(text)} characters; at most {limit}")
    return text


def _choice(value: Any, what: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise InvalidInputError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _day(value: Any, what: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a date YYYY-MM-DD, got {type(value).__name__}")
    try:
        return date.fromisoformat(value.strip()).isoformat()
    except ValueError as exc:
        raise InvalidInputError(f"{what} must be a date YYYY-MM-DD, got {value!r}") from exc


def _actor(value: Any) -> str:
    return _text(value, "actor", MAX_ACTOR)  # type: ignore[return-value]


def _reason(value: Any, *, required: bool) -> str | None:
    return _text(value, "reason", MAX_REASON, required=required)


def content_hash(text: str) -> str:
    """The identity of a record's wording: case, width, punctuation and spacing folded."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return hashlib.sha256(" ".join(_WORD.findall(folded)).encode("utf-8")).hexdigest()


def _word_set(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def _title_of(text: str) -> str:
    line = text.strip().splitlines()[0].strip()
    return line if len(line) <= 80 else line[:79].rstrip() + "…"


def parse_evidence(refs: Iterable[Any], namespace_id: int) -> list[str]:
    """Refs to stored evidence (``message:N``, ``event:N`` or an agent tool's ``raw:B:M:I``), each
    checked to exist in the namespace; returned in the canonical ``message:N``/``event:N`` form."""
    out: list[str] = []
    for ref in refs:
        if not isinstance(ref, str) or not (m := _REF.match(ref.strip())):
            raise InvalidInputError(f"evidence {ref!r}: expected message:ID, event:ID or raw:BLOCK:MESSAGE:INDEX")
        kind, number = ("message", m.group(3)) if m.group(3) else (m.group(1), m.group(2))
        model = Message if kind == "message" else Event
        row = model.get_or_none((model.id == int(number)) & (model.namespace == namespace_id))
        if row is None:
            raise InvalidInputError(f"evidence {ref}: no {kind} {number} in this namespace")
        if kind == "event" and row.status not in LIVE:
            raise InvalidInputError(f"evidence {ref}: event {number} is {row.status}, not live evidence")
        canonical = f"{kind}:{int(number)}"
        if canonical not in out:
            out.append(canonical)
    if len(out) > MAX_EVIDENCE:
        raise InvalidInputError(f"{len(out)} evidence refs; at most {MAX_EVIDENCE}")
    return out


# ----------------------------------------------------------------------------- reading


def _view(r: MemoryRecord, names: dict[int, str] | None = None) -> RecordView:
    ns_name = (names or {}).get(r.namespace_id) or Namespace.get_by_id(r.namespace_id).name
    return RecordView(
        id=r.id,
        namespace=ns_name,
        title=r.title,
        text=r.text,
        source=r.source,
        actor=r.actor,
        scope=r.scope,
        privacy=r.privacy,
        expires_at=r.expires_at,
        review_by=r.review_by,
        key=r.canonical_key,
        status=r.status,
        evidence=tuple(r.evidence or ()),
        grade=r.grade,
        near_duplicate_of=r.near_duplicate_of,
        event_id=r.event_id,
        message_id=r.message_id,
        superseded_by=r.superseded_by,
        created_at=r.created_at,
        updated_at=r.updated_at,
    )


def _record(record_id: Any) -> MemoryRecord:
    rid = _record_id(record_id)
    record = MemoryRecord.get_or_none(MemoryRecord.id == rid)
    if record is None:
        raise NotFoundError(f"record {record_id} does not exist (see `strata review list`)")
    return record


def _record_id(value: Any) -> int:
    if isinstance(value, str) and value.startswith("record:"):
        value = value[len("record:") :]
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not is_row_id(value):
        raise InvalidInputError(f"record id must be a positive integer or record:ID, got {value!r}")
    return value


def get_record(record_id: Any) -> RecordView:
    return _view(_record(record_id))


def list_records(namespace: str, *, status: str | None = None, limit: int = 200) -> list[RecordView]:
    ns = get_namespace(namespace)
    query = MemoryRecord.select().where(MemoryRecord.namespace == ns)
    if status is not None:
        query = query.where(MemoryRecord.status == status)
    rows = query.order_by(MemoryRecord.id.desc()).limit(max(1, min(limit, 10_000)))
    return [_view(r, {ns.id: ns.name}) for r in rows]


def audit_trail(
    namespace: str, *, subject: str | None = None, subject_id: int | None = None, limit: int = 1000
) -> list[AuditRow]:
    """Audit rows oldest first."""
    ns = get_namespace(namespace)
    query = AuditEntry.select().where(AuditEntry.namespace == ns)
    if subject is not None:
        query = query.where(AuditEntry.subject == subject)
    if subject_id is not None:
        query = query.where(AuditEntry.subject_id == subject_id)
    rows = query.order_by(AuditEntry.id).limit(max(1, min(limit, 100_000)))
    return [
        AuditRow(
            id=a.id,
            namespace=ns.name,
            subject=a.subject,
            subject_id=a.subject_id,
            action=a.action,
            from_status=a.from_status,
            to_status=a.to_status,
            actor=a.actor,
            reason=a.reason,
            at=a.at,
        )
        for a in rows
    ]


def _audit(
    namespace_id: int,
    subject: str,
    subject_id: int,
    action: str,
    before: str | None,
    after: str | None,
    actor: str,
    reason: str | None,
    now: str,
    detail: dict[str, Any] | None = None,
) -> int:
    """Append one audit row; its id."""
    return insert_one(
        AuditEntry,
        dict(
            namespace=namespace_id,
            subject=subject,
            subject_id=subject_id,
            action=action,
            from_status=before,
            to_status=after,
            actor=actor,
            reason=reason,
            detail=detail,
            at=now,
        ),
    ).id


# ----------------------------------------------------------------------------- capture


@dataclass(frozen=True)
class Remembered:
    record: RecordView
    near_duplicate_of: int | None


def remember(
    namespace: str,
    text: Any,
    *,
    source: str = "agent",
    actor: Any = None,
    title: Any = None,
    scope: str = "project",
    privacy: str = "normal",
    expires: Any = None,
    review_by: Any = None,
    key: Any = None,
    evidence: Iterable[Any] = (),
) -> Remembered:
    """Capture a governed record. It lands in quarantine unless the namespace policy trusts its
    source; an exact restatement of a standing record is refused (DuplicateRecordError names it),
    a near one is stored and linked to it."""
    body = _text(text, "text", MAX_TEXT)
    assert body is not None
    source = _choice(source, "source", RECORD_SOURCES)
    scope = _choice(scope, "scope", SCOPES)
    privacy = _choice(privacy, "privacy", PRIVACY_LEVELS)
    heading = _text(title, "title", MAX_TITLE, required=False) or _title_of(body)
    who = _text(actor, "actor", MAX_ACTOR, required=False) or source
    canonical = _text(key, "key", MAX_KEY, required=False)
    expires_at, review_at = _day(expires, "expires"), _day(review_by, "review-by")
    digest = content_hash(body)
    ns = get_or_create_namespace(namespace)
    policy = get_policy(namespace)
    with write_transaction():
        refs = parse_evidence(evidence, ns.id)
        same = MemoryRecord.get_or_none(
            (MemoryRecord.namespace == ns) & (MemoryRecord.content_hash == digest) & MemoryRecord.status.in_(STANDING)
        )
        if same is not None:
            raise DuplicateRecordError(
                f"record {same.id} ({same.status}) already says this: {_title_of(same.text)!r}", same.id
            )
        near = _near_duplicate(ns.id, body)
        now = now_iso()
        record = insert_one(
            MemoryRecord,
            dict(
                namespace=ns,
                title=heading,
                text=body,
                source=source,
                actor=who,
                scope=scope,
                privacy=privacy,
                expires_at=expires_at,
                review_by=review_at,
                canonical_key=canonical,
                status="quarantined",
                evidence=refs,
                content_hash=digest,
                near_duplicate_of=near,
                created_at=now,
                updated_at=now,
            ),
        )
        _audit(
            ns.id,
            "record",
            record.id,
            "capture",
            None,
            "quarantined",
            who,
            None,
            now,
            {"source": source, "near_duplicate_of": near} if near else {"source": source},
        )
        if policy.trusts(source):
            _promote(record, ns, "policy", f"the namespace policy trusts {source} records", now)
    return Remembered(record=get_record(record.id), near_duplicate_of=near)


def _near_duplicate(namespace_id: int, text: str) -> int | None:
    mine = _word_set(text)
    if not mine:
        return None
    best: tuple[float, int] | None = None
    rows = (
        MemoryRecord.select(MemoryRecord.id, MemoryRecord.text)
        .where((MemoryRecord.namespace == namespace_id) & MemoryRecord.status.in_(STANDING))
        .order_by(MemoryRecord.id.desc())
        .limit(NEAR_SCAN)
        .tuples()
    )
    for rid, other in rows:
        theirs = _word_set(other)
        score = len(mine & theirs) / len(mine | theirs) if theirs else 0.0
        if score >= NEAR_DUPLICATE and (best is None or score > best[0]):
            best = (score, rid)
    return best[1] if best else None


# ----------------------------------------------------------------------------- transitions


def _expect(record: MemoryRecord, allowed: Sequence[str], action: str) -> None:
    if record.status not in allowed:
        raise InvalidInputError(
            f"record {record.id} is {record.status}; {action} applies to {' or '.join(allowed)} records"
        )


def verify_record(
    record_id: Any, *, actor: Any, evidence: Iterable[Any], grade: str | None = None, reason: Any = None
) -> RecordView:
    """Attach evidence (and a grade) to a quarantined record: it becomes verified, not yet visible."""
    who, why = _actor(actor), _reason(reason, required=False)
    if grade is not None:
        _choice(grade, "grade", EVIDENCE_GRADES)
    with write_transaction():
        record = _record(record_id)
        _expect(record, WAITING, "verify")
        refs = parse_evidence(evidence, record.namespace_id)
        if not refs:
            raise InvalidInputError(
                f"verifying record {record.id} needs at least one evidence ref (message:ID or event:ID)"
            )
        now = now_iso()
        before = record.status
        record.evidence = list(dict.fromkeys(list(record.evidence or []) + refs))
        record.grade = grade or record.grade or "moderate"
        record.status, record.updated_at = "verified", now
        record.save()
        _audit(
            record.namespace_id,
            "record",
            record.id,
            "verify",
            before,
            "verified",
            who,
            why,
            now,
            {"evidence": refs, "grade": record.grade},
        )
    return get_record(record.id)


def approve_record(record_id: Any, *, actor: Any, evidence: Iterable[Any] = (), reason: Any = None) -> RecordView:
    """Promote a record: a named actor approves it with evidence (given now or attached by an
    earlier verify). Only now does it become an event card that readers can find."""
    who, why = _actor(actor), _reason(reason, required=False)
    with write_transaction():
        record = _record(record_id)
        _expect(record, WAITING, "approve")
        refs = parse_evidence(evidence, record.namespace_id)
        now = now_iso()
        if refs:
            before = record.status
            record.evidence = list(dict.fromkeys(list(record.evidence or []) + refs))
            record.grade = record.grade or "moderate"
            record.status = "verified"
            _audit(
                record.namespace_id,
                "record",
                record.id,
                "verify",
                before,
                "verified",
                who,
                why,
                now,
                {"evidence": refs},
            )
        if not record.evidence:
            raise InvalidInputError(
                f"record {record.id} has no evidence: approve it with --evidence message:ID or event:ID (what in "
                "memory supports it), or verify it first"
            )
        _promote(record, Namespace.get_by_id(record.namespace_id), who, why, now)
    return get_record(record.id)


def reject_record(record_id: Any, *, actor: Any, reason: Any) -> RecordView:
    who, why = _actor(actor), _reason(reason, required=True)
    with write_transaction():
        record = _record(record_id)
        _expect(record, WAITING, "reject")
        now = now_iso()
        before = record.status
        record.status, record.updated_at = "rejected", now
        record.save()
        _audit(record.namespace_id, "record", record.id, "reject", before, "rejected", who, why, now)
    return get_record(record.id)


def revoke_record(record_id: Any, *, actor: Any, reason: Any) -> RecordView:
    """Withdraw a promoted record (soft: ``restore_record`` brings it back). Its event stops being
    live, so graph facts citing only it end, and its message is withheld from readers."""
    who, why = _actor(actor), _reason(reason, required=True)
    with write_transaction():
        record = _record(record_id)
        _expect(record, ("promoted",), "revoke")
        now = now_iso()
        record.status, record.updated_at = "revoked", now
        record.save()
        _set_event_status(record, "revoked", now)
        _audit(record.namespace_id, "record", record.id, "revoke", "promoted", "revoked", who, why, now)
    return get_record(record.id)


def restore_record(record_id: Any, *, actor: Any, reason: Any = None) -> RecordView:
    """Undo a revoke (the record is promoted again, its event live) or a reject (back to quarantine)."""
    who, why = _actor(actor), _reason(reason, required=False)
    with write_transaction():
        record = _record(record_id)
        _expect(record, ("revoked", "rejected"), "restore")
        now = now_iso()
        before = record.status
        after = "promoted" if before == "revoked" else "quarantined"
        record.status, record.updated_at = after, now
        record.save()
        if after == "promoted":
            _set_event_status(record, "active", now)
        _audit(record.namespace_id, "record", record.id, "restore", before, after, who, why, now)
    return get_record(record.id)


def _set_event_status(record: MemoryRecord, status: str, now: str) -> None:
    if record.event_id is None:
        return
    Event.update(status=status, updated_at=now).where(Event.id == record.event_id).execute()
    reconsider(event_ids=[record.event_id], namespace_id=record.namespace_id)
    bump_revision(record.namespace_id, now)


def _promote(record: MemoryRecord, ns: Namespace, actor: str, reason: str | None, now: str) -> None:
    """Promoted: the record's text becomes a message in a block of its own and an event card citing
    it and the evidence's messages; graph projection is queued for the event."""
    before = record.status
    if record.event_id is None:
        # A secret is kept out of the messages and blocks agents can list: its card cites the evidence only.
        message = _write_message(ns, record, now) if record.privacy != "secret" else None
        sources = ([message.id] if message else []) + _evidence_messages(record.evidence or [])
        draft = {
            "title": record.title[:MAX_TITLE],
            "summary": record.text[:1000],
            "tags": [GOVERNED_TAG, record.source],
            "quotes": [],
            "scope": record.scope,
            "criticality": "routine",
            "temporal": {},
            "source_message_ids": list(dict.fromkeys(sources)),
        }
        event = write_event(
            ns,
            draft,
            block=Block.get_by_id(message.block_id) if message else None,
            formed_turn=ns.current_turn,
            origin="governed",
            mentioned_fallback=now,
        )
        if record.privacy != "secret":
            queue_graph_projection(ns.id, [event.id])  # a secret never reaches the graph agents read
        record.event_id, record.message_id = event.id, (message.id if message else None)
    record.status, record.updated_at = "promoted", now
    record.save()
    bump_revision(ns.id, now)
    _audit(
        ns.id,
        "record",
        record.id,
        "promote",
        before,
        "promoted",
        actor,
        reason,
        now,
        {"event_id": record.event_id, "evidence": list(record.evidence or [])},
    )


def _evidence_messages(refs: Sequence[str]) -> list[int]:
    ids: list[int] = []
    events = [int(r.split(":")[1]) for r in refs if r.startswith("event:")]
    ids += [int(r.split(":")[1]) for r in refs if r.startswith("message:")]
    for part in chunks(events):
        ids += [
            m
            for (m,) in EventSource.select(EventSource.message)
            .where(EventSource.event.in_(part))
            .order_by(EventSource.event, EventSource.position)
            .tuples()
        ]
    return ids


def _write_message(ns: Namespace, record: MemoryRecord, now: str) -> Message:
    thread = Thread.get_or_none((Thread.namespace == ns) & (Thread.name == THREAD))
    if thread is None:
        thread = insert_one(Thread, dict(namespace=ns, name=THREAD, created_at=now, updated_at=now))
    speaker = f"{record.source}:{record.actor}" if record.actor and record.actor != record.source else record.source
    _, message = append_evidence_block(
        ns,
        thread,
        role="tool",
        speaker=speaker[:255],
        content=record.text,
        external_id=f"record:{record.id}",
        has_time=False,
        now=now,
        title=record.title[:120],
        tags=[GOVERNED_TAG],
        summary=record.text[:600],
        points=[record.text[:300]],
    )
    ns.save()
    return message


# ----------------------------------------------------------------------------- events' standing


def forget(event_id: int, *, actor: Any, reason: Any) -> None:
    who, why = _actor(actor), _reason(reason, required=True)
    with write_transaction():
        before = _event(event_id)
        forget_event(event_id)
        if before.status != "forgotten":
            _audit(before.namespace_id, "event", event_id, "forget", before.status, "forgotten", who, why, now_iso())


def restore(event_id: int, *, actor: Any, reason: Any = None) -> None:
    who, why = _actor(actor), _reason(reason, required=False)
    with write_transaction():
        before = _event(event_id)
        after = restore_event(event_id)
        _audit(before.namespace_id, "event", event_id, "restore", before.status, after.status, who, why, now_iso())


def set_pinned(event_id: int, pinned: bool, *, actor: Any, reason: Any = None) -> None:
    """Pin an event (its weight no longer decays) or unpin it."""
    who, why = _actor(actor), _reason(reason, required=False)
    with write_transaction():
        event = _event(event_id)
        if bool(event.pinned) == pinned:
            return
        now = now_iso()
        Event.update(pinned=pinned, updated_at=now).where(Event.id == event.id).execute()
        bump_revision(event.namespace_id, now)
        _audit(
            event.namespace_id,
            "event",
            event.id,
            "pin" if pinned else "unpin",
            event.status,
            event.status,
            who,
            why,
            now,
        )


def _event(event_id: Any) -> Event:
    event = Event.get_or_none(Event.id == event_id) if is_row_id(event_id) else None
    if event is None:
        raise NotFoundError(f"event {event_id} does not exist (see `strata events`)")
    return event


# ----------------------------------------------------------------------------- what readers may see


def withheld(
    *,
    message_ids: Iterable[int] = (),
    event_ids: Iterable[int] = (),
    for_agent: bool = False,
    session: str | None = None,
    today: str | None = None,
) -> dict[tuple[str, int], str]:
    """Why each of these messages/events (those a governed record wrote) must not be handed out,
    as ``{("message"|"event", id): reason code}``; what is absent may be shown. An agent is never
    handed a secret record, nor a session-scoped one another session wrote (``session`` is the
    reading agent's); nobody is handed one that is not promoted, expired, past its review date, or
    one of two promoted records sharing a canonical key."""
    mids, eids = sorted(set(message_ids)), sorted(set(event_ids))
    if not mids and not eids:
        return {}
    rows: list[MemoryRecord] = []
    for part in chunks(mids):
        rows += list(MemoryRecord.select().where(MemoryRecord.message_id.in_(part)))
    for part in chunks(eids):
        rows += list(MemoryRecord.select().where(MemoryRecord.event_id.in_(part)))
    if not rows:
        return {}
    day = today or now_iso()[:10]
    keys = {(r.namespace_id, r.canonical_key) for r in rows if r.canonical_key and r.status == "promoted"}
    clashing = _clashing_keys(keys)
    out: dict[tuple[str, int], str] = {}
    for r in {r.id: r for r in rows}.values():
        code = _reason_code(r, for_agent, session, day, clashing)
        if code is None:
            continue
        if r.message_id is not None:
            out[("message", r.message_id)] = code
        if r.event_id is not None:
            out[("event", r.event_id)] = code
    return out


def _reason_code(
    r: MemoryRecord, for_agent: bool, session: str | None, day: str, clashing: set[tuple[int, str]]
) -> str | None:
    # The first check that fails is the reason, in the order the governance design lists them.
    if r.status in ("revoked", "superseded"):
        return r.status
    if r.status != "promoted":
        return "not_promoted"
    if for_agent and r.scope == "session" and (session is None or r.actor != session):
        return "out_of_scope"
    if for_agent and r.privacy == "secret":
        return "privacy_denied"
    if r.expires_at and r.expires_at <= day:
        return "expired"
    if r.review_by and r.review_by < day:
        return "stale"
    if r.canonical_key and (r.namespace_id, r.canonical_key) in clashing:
        return "key_conflict"
    return None


def _clashing_keys(keys: set[tuple[int, str]]) -> set[tuple[int, str]]:
    clashing = set()
    for namespace_id, key in keys:
        count = (
            MemoryRecord.select()
            .where(
                (MemoryRecord.namespace == namespace_id)
                & (MemoryRecord.canonical_key == key)
                & (MemoryRecord.status == "promoted")
            )
            .count()
        )
        if count > 1:
            clashing.add((namespace_id, key))
    return clashing


# ----------------------------------------------------------------------------- the review queue


def review_queue(namespace: str, *, today: str | None = None) -> list[ReviewItem]:
    """Everything waiting for a person in a namespace, newest first within each kind: records in
    quarantine or verified, canonical-key conflicts, promoted records past their review date, notes
    an untrusted source wrote, and import items whose decision needs confirming."""
    ns = get_namespace(namespace)
    day = today or now_iso()[:10]
    items: list[ReviewItem] = []
    for r in (
        MemoryRecord.select()
        .where((MemoryRecord.namespace == ns) & MemoryRecord.status.in_(WAITING))
        .order_by(MemoryRecord.id.desc())
    ):
        dup = f"; near record {r.near_duplicate_of}" if r.near_duplicate_of else ""
        items.append(
            ReviewItem(
                "record",
                f"record:{r.id}",
                r.title,
                f"{r.source} record by {r.actor}, privacy {r.privacy}{dup}",
                r.status,
                r.created_at,
                r.source,
            )
        )
    promoted = list(
        MemoryRecord.select()
        .where((MemoryRecord.namespace == ns) & (MemoryRecord.status == "promoted"))
        .order_by(MemoryRecord.id.desc())
    )
    by_key: dict[str, list[MemoryRecord]] = {}
    for r in promoted:
        if r.canonical_key:
            by_key.setdefault(r.canonical_key, []).append(r)
    for key, group in sorted(by_key.items()):
        if len(group) > 1:
            ids = ", ".join(f"record {r.id}" for r in group)
            items.append(
                ReviewItem(
                    "key_conflict",
                    f"key:{key}",
                    f"two promoted records say {key!r}",
                    f"{ids}: both withheld until one is revoked",
                    "conflict",
                    group[0].updated_at,
                )
            )
    for r in promoted:
        if r.review_by and r.review_by < day:
            items.append(
                ReviewItem(
                    "stale",
                    f"record:{r.id}",
                    r.title,
                    f"review was due {r.review_by}",
                    "promoted",
                    r.updated_at,
                    r.source,
                )
            )
    for note in Note.select().where((Note.namespace == ns) & (Note.status == "quarantined")).order_by(Note.id.desc()):
        items.append(
            ReviewItem(
                "note",
                f"note:{note.note_id}",
                note.title,
                f"{note.kind} note by {note.actor or note.source}: {note.summary[:120]}",
                note.status,
                note.created_at,
                note.source,
            )
        )
    waiting = (
        ImportItem.select(ImportItem, ImportBatch)
        .join(ImportBatch)
        .where(
            (ImportBatch.namespace_name == ns.name)
            & ImportBatch.status.in_(("awaiting_confirmation", "ready"))
            & (ImportItem.requires_confirmation == True)  # noqa: E712
            & ImportItem.choice_action.is_null()
        )
        .order_by(ImportItem.batch.desc(), ImportItem.position)
    )
    for item in waiting:
        title = str((item.candidate or {}).get("title") or "")[:120]
        items.append(
            ReviewItem(
                "import_item",
                f"import:{item.batch_id}:{item.position}",
                title,
                f"proposed {item.action} at confidence {item.confidence or 0:.2f}",
                "pending",
                item.updated_at,
                "import",
            )
        )
    return items


SHOWS = ("waiting", "promoted", "closed", "all")
_SHOWN = {"promoted": ("promoted",), "closed": ("rejected", "revoked", "superseded", "decayed")}


def review_items(
    namespace: str, *, show: str = "waiting", today: str | None = None, limit: int = 500
) -> list[ReviewItem]:
    """The review queue (``show="waiting"``), or the namespace's records in other states, newest first:
    ``promoted`` (to revoke or pin), ``closed`` (rejected, revoked …, to restore) or ``all``."""
    if show not in SHOWS:
        raise InvalidInputError(f"show must be one of {', '.join(SHOWS)}, got {show!r}")
    if show == "waiting":
        return review_queue(namespace, today=today)
    ns = get_namespace(namespace)
    query = MemoryRecord.select().where(MemoryRecord.namespace == ns)
    if show in _SHOWN:
        query = query.where(MemoryRecord.status.in_(_SHOWN[show]))
    rows = query.order_by(MemoryRecord.id.desc()).limit(max(1, min(limit, 10_000)))
    return [
        ReviewItem(
            "record",
            f"record:{r.id}",
            r.title,
            f"{r.source} record by {r.actor}, privacy {r.privacy}",
            r.status,
            r.updated_at,
            r.source,
        )
        for r in rows
    ]


def default_actor() -> str:
    """Who a person acting from this machine is, when nobody says: $STRATA_ACTOR, else the login name."""
    import getpass
    import os

    named = os.environ.get("STRATA_ACTOR", "").strip()
    if named:
        return named[:MAX_ACTOR]
    try:
        return (getpass.getuser() or "person")[:MAX_ACTOR]
    except (OSError, KeyError):
        return "person"


__all__ = [
    "AuditRow",
    "DuplicateRecordError",
    "RecordView",
    "Remembered",
    "ReviewItem",
    "approve_record",
    "audit_trail",
    "content_hash",
    "forget",
    "get_record",
    "list_records",
    "parse_evidence",
    "reject_record",
    "remember",
    "restore",
    "restore_record",
    "review_items",
    "review_queue",
    "revoke_record",
    "set_pinned",
    "verify_record",
    "withheld",
    "default_actor",
    "SHOWS",
]
