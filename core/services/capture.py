"""Capture: append turns and messages, seal blocks, keep receipts.

Every append is one write transaction: the raw messages, any blocks they seal (with
their deterministic L3/L4 views and a pending summary job) and the receipt commit
together or not at all. No model is called here.
"""

from __future__ import annotations

import dataclasses

import hashlib
import json
from dataclasses import dataclass
from datetime import timezone, tzinfo
from typing import Iterable, Sequence

from core.db import Prepared, insert_one, write_transaction
from core.dto import ROLES, MessageIn, RawMessage, ToolTrace
from core.errors import InvalidInputError, ReceiptConflictError
from core.layers import deterministic_layers
from core.models import Block, IngestionReceipt, Message, Namespace, Thread
from core.search.index import index_messages, message_text
from core.services.jobs import create_job
from core.services.spaces import get_namespace, get_or_create_namespace, get_or_create_thread, validate_name
from core.timeutil import now_iso, now_local, parse_timestamp, to_epoch, to_iso
from core.tokens import estimate_tokens


@dataclass(frozen=True)
class AppendResult:
    namespace: str
    thread: str
    message_ids: tuple[int, ...]
    sealed_block_ids: tuple[int, ...]
    duplicate: bool = False
    receipt_id: str | None = None


def _validate_tool_calls(raw: object, where: str) -> tuple[ToolTrace, ...]:
    if raw is None:
        return ()
    if isinstance(raw, ToolTrace):
        return (raw,)
    if not isinstance(raw, (list, tuple)):
        raise InvalidInputError(f"{where}: tool_calls: expected a list, got {type(raw).__name__}")
    out = []
    for i, item in enumerate(raw):
        if isinstance(item, ToolTrace):
            out.append(item)
            continue
        if not isinstance(item, dict):
            raise InvalidInputError(f"{where}: tool_calls[{i}]: expected an object, got {type(item).__name__}")
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InvalidInputError(f"{where}: tool_calls[{i}].name: expected a non-empty string")
        args = item.get("arguments")
        if args is not None and not isinstance(args, dict):
            args = {"value": args}
        out.append(ToolTrace(name=name.strip(), arguments=args, result=item.get("result")))
    return tuple(out)


def _refuse_nul(text: str, where: str) -> None:
    """A NUL character is refused on every engine alike: PostgreSQL cannot store one in text, and a
    message SQLite kept with one would not survive a move to PostgreSQL."""
    at = text.find("\x00")
    if at >= 0:
        raise InvalidInputError(f"{where}: a NUL character at character {at}; a message may not hold one")


def coerce_message(value: MessageIn | dict, where: str = "message") -> MessageIn:
    """Validate one message (a MessageIn or a plain dict) and say where it is wrong."""
    if isinstance(value, MessageIn):
        data = {
            "role": value.role,
            "content": value.content,
            "created_at": value.created_at,
            "speaker": value.speaker,
            "external_id": value.external_id,
            "tool_calls": list(value.tool_calls),
        }
    elif isinstance(value, dict):
        data = value
    else:
        raise InvalidInputError(f"{where}: expected an object, got {type(value).__name__}")
    role = data.get("role")
    if role not in ROLES:
        raise InvalidInputError(f"{where}: role: expected one of {', '.join(ROLES)}, got {role!r}")
    content = data.get("content")
    tool_calls = _validate_tool_calls(data.get("tool_calls"), where)
    if content is None and tool_calls:
        content = ""
    if not isinstance(content, str):
        raise InvalidInputError(f"{where}: content: expected a string, got {type(content).__name__}")
    if not content.strip() and not tool_calls:
        raise InvalidInputError(f"{where}: content: message has no content")
    _refuse_nul(content, f"{where}: content")
    speaker = data.get("speaker")
    if speaker is not None and not isinstance(speaker, str):
        raise InvalidInputError(f"{where}: speaker: expected a string, got {type(speaker).__name__}")
    if isinstance(speaker, str):
        _refuse_nul(speaker, f"{where}: speaker")
    ext = data.get("external_id", data.get("id"))
    if ext is not None and not isinstance(ext, (str, int)):
        raise InvalidInputError(f"{where}: id: expected a string, got {type(ext).__name__}")
    if isinstance(ext, str):
        _refuse_nul(ext, f"{where}: id")
    created = data.get("created_at")
    if created is not None and not isinstance(created, str):
        raise InvalidInputError(f"{where}: created_at: expected an ISO-8601 string, got {type(created).__name__}")
    return MessageIn(
        role=role,
        content=content,
        created_at=created,
        speaker=speaker.strip() if isinstance(speaker, str) and speaker.strip() else None,
        external_id=str(ext) if ext is not None else None,
        tool_calls=tool_calls,
    )


def payload_hash(thread: str, messages: Sequence[MessageIn]) -> str:
    """Stable hash of what an append stores, to tell a replay from a changed payload."""
    body = [
        {
            "role": m.role,
            "content": m.content,
            "created_at": m.created_at,
            "speaker": m.speaker,
            "external_id": m.external_id,
            "tool_calls": [t.to_json() for t in m.tool_calls],
        }
        for m in messages
    ]
    text = json.dumps({"thread": thread, "messages": body}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _same_as_stored(thread: str, items: Sequence[MessageIn], receipt: IngestionReceipt) -> bool:
    """A replay without times of a receipt whose hash holds the times it was stored at (receipts
    written before an omitted time stopped counting): the same payload once the stored times are
    filled in."""
    ids = list((receipt.result or {}).get("message_ids") or ())
    if len(ids) != len(items):
        return False
    stored = dict(Message.select(Message.id, Message.created_at).where(Message.id.in_(ids)).tuples())
    if len(stored) != len(ids):
        return False
    filled = [
        item if item.created_at is not None else dataclasses.replace(item, created_at=stored[i])
        for item, i in zip(items, ids)
    ]
    return payload_hash(thread, filled) == receipt.payload_hash


def raw_from_row(row: Message, thread_name: str) -> RawMessage:
    return RawMessage(
        id=row.id,
        role=row.role,
        content=row.content,
        created_at=row.created_at,
        thread=thread_name,
        position=row.position,
        turn=row.turn,
        speaker=row.speaker,
        external_id=row.external_id,
        block_id=row.block_id,
        tool_calls=tuple(ToolTrace(**t) for t in (row.tool_calls or [])),
    )


def _cut_index(tail: Sequence[RawMessage], size: int, closed: bool) -> int | None:
    """Where the next block ends in ``tail``, or None if it cannot be sealed yet.

    A block holds ``size`` user messages plus the non-user messages that follow them.
    Those are only known to be complete once the next user message arrives, or when the
    caller says the turn is closed (``closed``).
    """
    users = 0
    for index, message in enumerate(tail):
        if message.role == "user":
            users += 1
            if users == size + 1:
                return index
    if closed and users >= size:
        return len(tail)
    return None


def _seal(namespace: Namespace, thread: Thread, messages: Sequence[RawMessage]) -> Block:
    users = sum(1 for m in messages if m.role == "user")
    layers = deterministic_layers(messages)
    l3, l4, l5 = layers[3], layers[4], layers[5]
    namespace.block_count += 1
    # Turn numbers come from the messages themselves: a tail of only trailing replies
    # (sealed when a conversation closes) belongs to the turn it answers.
    start = min(m.turn for m in messages if m.role == "user") if users else max(1, thread.sealed_turns)
    end = max(start, max(m.turn for m in messages))
    block = insert_one(
        Block,
        dict(
            namespace=namespace,
            thread=thread,
            sequence=namespace.block_count,
            start_turn=start,
            end_turn=end,
            message_count=len(messages),
            created_at=messages[-1].created_at,
            status="pending",
            l3_text=l3,
            l4_text=l4,
            tokens_l3=estimate_tokens(l3),
            tokens_l4=estimate_tokens(l4),
            tokens_l5=estimate_tokens(l5),
            pointer_anchor_position=thread.ready_count + 1,
        ),
    )
    Message.update(block=block).where(Message.id.in_([m.id for m in messages])).execute()
    create_job(namespace, "summary", block)
    thread.sealed_turns = max(thread.sealed_turns, end)
    thread.block_count += 1
    return block


_OPEN_TAIL = Prepared(
    lambda thread_id: (
        Message.select().where((Message.thread == thread_id) & (Message.block.is_null())).order_by(Message.position)
    )
)


def _open_tail(thread: Thread) -> list[RawMessage]:
    return [raw_from_row(r, thread.name) for r in _OPEN_TAIL.rows(thread.id)]


def append_messages(
    namespace: str,
    thread: str,
    messages: Iterable[MessageIn | dict],
    *,
    receipt_id: str | None = None,
    close_turn: bool = False,
    close_thread: bool = False,
    default_tz: tzinfo | None = None,
    block_turn_size: int | None = None,
) -> AppendResult:
    """Store messages in order at the end of ``thread`` and seal any complete blocks.

    ``close_turn`` says the last turn is complete, so a tail holding exactly
    ``block_turn_size`` turns is sealed now. ``receipt_id`` makes the call idempotent:
    replaying the same payload returns the first result; a different payload under the
    same id raises ReceiptConflictError. ``block_turn_size`` only applies when the
    namespace is created by this call. ``close_thread`` says the conversation is over
    (a finished session): whatever is left in the tail is sealed as a shorter block.
    """
    items = [coerce_message(m, f"message[{i}]") for i, m in enumerate(messages)]
    if not items:
        raise InvalidInputError("append: no messages given")
    # start-up time: the time rules take ~30 ms to load; what only reads (the workbench's first view) never needs them
    from core.timeparse import has_dated_mention

    tz = default_tz or timezone.utc
    stamped: list[tuple[MessageIn, str, float, bool]] = []
    fallback = now_local()
    for i, item in enumerate(items):
        dt = parse_timestamp(item.created_at, tz, where=f"message[{i}]: created_at") if item.created_at else fallback
        # Parsed here, before the write lock is taken: the time flag costs about 0.3 ms a message.
        stamped.append((item, to_iso(dt), to_epoch(dt), has_dated_mention(item.content, dt)))
    digest = payload_hash(thread, items) if receipt_id else ""
    untimed = any(item.created_at is None for item in items)

    with write_transaction():
        ns = get_or_create_namespace(namespace, block_turn_size=block_turn_size)
        if receipt_id:
            existing = IngestionReceipt.get_or_none(
                (IngestionReceipt.namespace == ns) & (IngestionReceipt.receipt_id == receipt_id)
            )
            if existing is not None:
                if existing.payload_hash != digest and not (untimed and _same_as_stored(thread, items, existing)):
                    raise ReceiptConflictError(
                        f"receipt {receipt_id!r} in namespace {namespace!r} was already used for a different payload"
                    )
                result = existing.result or {}
                return AppendResult(
                    namespace=ns.name,
                    thread=result.get("thread", thread),
                    message_ids=tuple(result.get("message_ids", ())),
                    sealed_block_ids=(),
                    duplicate=True,
                    receipt_id=receipt_id,
                )
        th = get_or_create_thread(ns, thread)
        tail = _open_tail(th)
        new_ids: list[int] = []
        indexed: list[tuple[int, int, str]] = []
        for item, iso, epoch, has_time in stamped:
            th.message_count += 1
            if item.role == "user":
                th.turn_count += 1
                ns.current_turn += 1
            row = insert_one(
                Message,
                dict(
                    namespace=ns,
                    thread=th,
                    position=th.message_count,
                    turn=th.turn_count,
                    ns_turn=ns.current_turn,
                    role=item.role,
                    speaker=item.speaker,
                    content=item.content,
                    created_at=iso,
                    created_ts=epoch,
                    external_id=item.external_id,
                    tool_calls=[t.to_json() for t in item.tool_calls] or None,
                    has_time=has_time,
                ),
            )
            new_ids.append(row.id)
            indexed.append((row.id, th.id, message_text(item.speaker, item.content, row.tool_calls)))
            tail.append(raw_from_row(row, th.name))
        index_messages(ns.id, indexed)
        sealed: list[int] = []
        while True:
            cut = _cut_index(tail, ns.block_turn_size, close_turn)
            if cut is None:
                break
            block = _seal(ns, th, tail[:cut])
            sealed.append(block.id)
            tail = tail[cut:]
        if close_thread and tail:
            sealed.append(_seal(ns, th, tail).id)
            tail = []
        now = now_iso()
        th.updated_at = now
        th.save()
        ns.revision += 1
        ns.updated_at = now
        ns.save()
        if receipt_id:
            IngestionReceipt.create(
                namespace=ns,
                receipt_id=receipt_id,
                payload_hash=digest,
                result={"thread": th.name, "message_ids": new_ids},
                created_at=now,
            )
    return AppendResult(
        namespace=ns.name,
        thread=th.name,
        message_ids=tuple(new_ids),
        sealed_block_ids=tuple(sealed),
        receipt_id=receipt_id,
    )


def append_turn(
    namespace: str,
    thread: str,
    user: str | MessageIn | dict,
    assistant: str | MessageIn | dict,
    *,
    created_at: str | None = None,
    receipt_id: str | None = None,
    user_tool_calls: Sequence[ToolTrace | dict] = (),
    assistant_tool_calls: Sequence[ToolTrace | dict] = (),
    default_tz: tzinfo | None = None,
) -> AppendResult:
    """Append one complete turn (a user message and the assistant's reply).

    Both messages share ``created_at`` (now, in the local offset, when omitted). An omitted time is
    not part of the receipt's identity: replaying the same turn later stores nothing.
    """
    when = created_at

    def build(value: str | MessageIn | dict, role: str, tools: Sequence[ToolTrace | dict]) -> dict:
        if isinstance(value, str):
            return {"role": role, "content": value, "created_at": when, "tool_calls": list(tools) or None}
        msg = coerce_message(value, role)
        if msg.role != role:
            raise InvalidInputError(f"append_turn: the {role} message has role {msg.role!r}")
        return {
            "role": role,
            "content": msg.content,
            "created_at": msg.created_at or when,
            "speaker": msg.speaker,
            "external_id": msg.external_id,
            "tool_calls": list(msg.tool_calls) + list(tools) or None,
        }

    return append_messages(
        namespace,
        thread,
        [build(user, "user", user_tool_calls), build(assistant, "assistant", assistant_tool_calls)],
        receipt_id=receipt_id,
        close_turn=True,
        default_tz=default_tz,
    )


def thread_messages(namespace: str, thread: str, *, open_tail_only: bool = False) -> list[RawMessage]:
    """Messages of a thread in order (optionally only the unsealed tail)."""

    ns = get_namespace(namespace)
    th = Thread.get_or_none((Thread.namespace == ns) & (Thread.name == validate_name(thread, "thread")))
    if th is None:
        return []
    query = Message.select().where(Message.thread == th)
    if open_tail_only:
        query = query.where(Message.block.is_null())
    return [raw_from_row(r, th.name) for r in query.order_by(Message.position)]


_BLOCK_MESSAGES = Prepared(
    lambda block_id: (
        Message.select(Message, Thread.name).join(Thread).where(Message.block == block_id).order_by(Message.position)
    )
)


def block_messages(block_id: int) -> list[RawMessage]:
    return [raw_from_row(r, r.thread.name) for r in _BLOCK_MESSAGES.rows(block_id)]


def append_evidence_block(
    ns: Namespace,
    thread: Thread,
    *,
    role: str,
    speaker: str | None,
    content: str,
    external_id: str,
    has_time: bool,
    now: str,
    title: str,
    tags: list[str],
    summary: str,
    points: list[str],
) -> tuple[Block, Message]:
    """One message that is no conversation turn (an imported export, a promoted governed record)
    stored as raw evidence: appended to ``thread`` as a ready block of its own, with the given shallow
    views, indexed for search, so event cards can cite it. Runs inside the caller's write
    transaction; the caller saves ``ns``."""
    position = thread.message_count + 1
    message = insert_one(
        Message,
        dict(
            namespace=ns,
            thread=thread,
            position=position,
            turn=position,
            ns_turn=ns.current_turn,
            role=role,
            speaker=speaker,
            content=content,
            created_at=now,
            created_ts=to_epoch(parse_timestamp(now)),
            external_id=external_id,
            has_time=has_time,
        ),
    )
    layers = deterministic_layers([MessageIn(role=role, content=content)])
    ns.block_count += 1
    block = insert_one(
        Block,
        dict(
            namespace=ns,
            thread=thread,
            sequence=ns.block_count,
            start_turn=position,
            end_turn=position,
            message_count=1,
            created_at=now,
            status="ready",
            l0_title=title,
            l0_tags=tags,
            l1_summary=summary,
            l2_keypoints=points,
            should_extract=False,
            l3_text=layers[3],
            l4_text=layers[4],
            tokens_l3=estimate_tokens(layers[3]),
            tokens_l4=estimate_tokens(layers[4]),
            tokens_l5=estimate_tokens(layers[5]),
            ready_position=1,
            pointer_current_level=5,
            pointer_anchor_level=5,
            pointer_anchor_position=1,
        ),
    )
    Message.update(block=block).where(Message.id == message.id).execute()
    Thread.update(
        message_count=position,
        turn_count=position,
        sealed_turns=position,
        block_count=Thread.block_count + 1,
        ready_count=Thread.ready_count + 1,
        updated_at=now,
    ).where(Thread.id == thread.id).execute()
    index_messages(ns.id, [(message.id, thread.id, message_text(speaker, content, None))])
    message.block_id = block.id
    return block, message


def close_thread(namespace: str, thread: str) -> tuple[int, ...]:
    """Seal a finished conversation's open tail as a (shorter) block; returns the new block id(s).

    For harnesses at the end of a session: without it, a tail shorter than the block
    size would wait for turns that never come and never be derived.
    """

    with write_transaction():
        ns = get_namespace(namespace)
        th = Thread.get_or_none((Thread.namespace == ns) & (Thread.name == validate_name(thread, "thread")))
        if th is None:
            return ()
        tail = _open_tail(th)
        if not tail:
            return ()
        block = _seal(ns, th, tail)
        th.save()
        ns.revision += 1
        ns.save()
    return (block.id,)
