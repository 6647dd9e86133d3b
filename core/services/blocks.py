"""Reading blocks at their decayed level, and expanding them on demand."""

from __future__ import annotations

from dataclasses import dataclass

from peewee import fn

from core.db import MAX_ROW_ID, clamp, is_row_id, write_transaction
from core.decay import decayed_level, normalize_target, parse_level
from core.errors import BlockNotReadyError, InvalidInputError, NotFoundError
from core.layers import LEVEL_LABELS, render_l0, render_l1, render_l2, render_l5
from core.models import Block, Message, Namespace, Thread
from core.services.capture import block_messages
from core.services.spaces import get_namespace, validate_name
from core.timeutil import now_iso
from core.tokens import estimate_tokens


@dataclass(frozen=True)
class BlockRow:
    """A block as listed: where it sits, its state and the size of every view."""

    id: int
    namespace: str
    thread: str
    sequence: int
    start_turn: int
    end_turn: int
    message_count: int
    created_at: str
    status: str
    title: str | None
    age: int | None
    current_level: int | None
    tokens: dict[int, int]
    last_lifted_by: str | None
    last_lifted_at: str | None


@dataclass(frozen=True)
class BlockView:
    """One block rendered at one level."""

    id: int
    thread: str
    start_turn: int
    end_turn: int
    status: str
    age: int | None
    level: int
    label: str
    content: str
    sequence: int  # the block's position in its namespace
    same_as: int | None = None  # the deeper level this one shows exactly (L3 of a chat with nothing to fold)


def _age(block: Block, thread: Thread) -> int | None:
    if block.status != "ready":
        return None
    return max(0, thread.ready_count - block.pointer_anchor_position)


def current_level(block: Block, thread: Thread, lam: float) -> int | None:
    """The decayed level of a ready block; None for a pending one (it does not decay)."""
    age = _age(block, thread)
    if age is None:
        return None
    return decayed_level(block.pointer_anchor_level, age, lam)


def _render(block: Block, level: int) -> str:
    if level >= 5:
        return render_l5(block_messages(block.id))
    if level == 4:
        return block.l4_text
    if level == 3:
        return block.l3_text
    if block.l1_summary is None:
        raise BlockNotReadyError(f"block {block.id} has no summary yet (status {block.status}); levels 3-5 only")
    if level == 2:
        return render_l2(block.l2_keypoints or [], block.l1_summary)
    if level == 1:
        return render_l1(block.l1_summary)
    return render_l0(block.l0_title or "", block.l0_tags or [])


def _tokens(block: Block) -> dict[int, int]:
    tokens = {3: block.tokens_l3, 4: block.tokens_l4, 5: block.tokens_l5}
    if block.l1_summary is not None:
        tokens[0] = estimate_tokens(render_l0(block.l0_title or "", block.l0_tags or []))
        tokens[1] = estimate_tokens(render_l1(block.l1_summary))
        tokens[2] = estimate_tokens(render_l2(block.l2_keypoints or [], block.l1_summary))
    return dict(sorted(tokens.items()))


def _get_block(block_id: int) -> Block:
    block = (
        (
            Block.select(Block, Thread, Namespace)
            .join(Thread)
            .switch(Block)
            .join(Namespace)
            .where(Block.id == block_id)
            .first()
        )
        if is_row_id(block_id)
        else None
    )
    if block is None:
        raise NotFoundError(f"block {block_id} does not exist")
    return block


def _row(block: Block) -> BlockRow:
    lam = block.namespace.block_decay_lambda
    return BlockRow(
        id=block.id,
        namespace=block.namespace.name,
        thread=block.thread.name,
        sequence=block.sequence,
        start_turn=block.start_turn,
        end_turn=block.end_turn,
        message_count=block.message_count,
        created_at=block.created_at,
        status=block.status,
        title=block.l0_title,
        age=_age(block, block.thread),
        current_level=current_level(block, block.thread, lam),
        tokens=_tokens(block),
        last_lifted_by=block.last_lifted_by,
        last_lifted_at=block.last_lifted_at,
    )


def list_blocks(
    namespace: str | None = None,
    thread: str | None = None,
    *,
    status: str | None = None,
    limit: int | None = None,
    after_sequence: int = 0,
) -> list[BlockRow]:
    """Blocks in namespace-sequence order, paged by keyset (``after_sequence``); ``limit`` None
    (or 0): all of them."""
    query = Block.select(Block, Thread, Namespace).join(Thread).switch(Block).join(Namespace)
    if namespace is not None:
        query = query.where(Block.namespace == get_namespace(namespace))
    if thread is not None:
        query = query.where(Thread.name == validate_name(thread, "thread"))
    if status is not None:
        query = query.where(Block.status == status)
    if after_sequence:
        query = query.where(Block.sequence > clamp(after_sequence, 0, MAX_ROW_ID, 0))
    query = query.order_by(Namespace.name, Block.sequence)
    if limit:
        query = query.limit(clamp(limit, 1, MAX_ROW_ID, 200))
    return [_row(b) for b in query]


def get_block(block_id: int) -> BlockRow:
    return _row(_get_block(block_id))


def render_block(block_id: int, level: int | None = None) -> BlockView:
    """A block rendered at ``level`` (default: its decayed level, or L5 while pending)."""
    block = _get_block(block_id)
    lvl = current_level(block, block.thread, block.namespace.block_decay_lambda)
    level = (5 if lvl is None else lvl) if level is None else parse_level(level)
    return _view(block, level)


def _view(block: Block, level: int) -> BlockView:
    return BlockView(
        id=block.id,
        thread=block.thread.name,
        start_turn=block.start_turn,
        end_turn=block.end_turn,
        status=block.status,
        age=_age(block, block.thread),
        level=level,
        label=LEVEL_LABELS[level],
        content=_render(block, level),
        sequence=block.sequence,
        same_as=same_levels(block).get(level),
    )


def expansion_level(block_id: int, target: object, current: int | None) -> int:
    """The level expanding a block shown at ``current`` (None: pending, shown raw) to ``target``
    lifts it to. Expanding only lifts: its decay is re-anchored at the new level, so a shallower
    target would age the block early, and reading one shallower needs no expansion."""
    shown = 5 if current is None else current
    level = normalize_target(target, shown)
    if level < shown:
        deeper = "L5" if shown == 5 else f"L{shown}..L5"
        raise InvalidInputError(
            f"block {block_id} is shown at L{shown}; expanding only lifts it (to {deeper}), "
            f"not to L{level} (to read it at L{level} without changing it: "
            f"`strata block {block_id} --level {level}`)"
        )
    return level


def parse_level_or_none(target: object) -> int | None:
    """The level ``target`` names explicitly, or None for "next"."""
    try:
        return parse_level(target)
    except InvalidInputError:
        return None


def same_levels(block: Block) -> dict[int, int]:
    """Levels that show what a deeper one shows: {3: 4} when L3 folds nothing away."""
    return {3: 4} if block.l3_text == block.l4_text else {}


def expand_block(block_id: int, target: object = "next", *, by: str = "agent") -> BlockView:
    """Lift a ready block to ``target`` and re-anchor its decay there; records who lifted it."""
    if by not in ("agent", "user"):
        raise InvalidInputError(f"expand_block: by must be 'agent' or 'user', got {by!r}")
    with write_transaction():
        block = _get_block(block_id)
        if block.status != "ready":
            raise BlockNotReadyError(f"block {block_id} is {block.status}; only ready blocks can be expanded")
        thread = Thread.get_by_id(block.thread_id)
        ns = Namespace.get_by_id(block.namespace_id)
        current = current_level(block, thread, ns.block_decay_lambda)
        new_level = expansion_level(block_id, target, current)
        if parse_level_or_none(target) is None:
            # "next" means the next level that shows something more: a chat without fillers or repeated
            # pastes has an L3 equal to its L4, and lifting to it would change nothing on screen.
            if same_levels(block).get(5 if current is None else current) == new_level:
                new_level += 1
        block.pointer_current_level = new_level
        block.pointer_anchor_level = new_level
        block.pointer_anchor_position = thread.ready_count
        block.last_lifted_at = now_iso()
        block.last_lifted_by = by
        block.save()
        ns.revision += 1
        ns.save()
    return render_block(block_id, new_level)


def get_block_context(
    namespace: str, thread: str | None = None, *, token_budget: int | None = None, before: int | None = None
) -> list[BlockView]:
    """Ready blocks (of one thread, or all) rendered at their decayed level, oldest first.

    With ``token_budget``: only the newest blocks whose renderings fit in that many estimated
    tokens (at least one), read newest first and never the whole namespace (28k blocks at a
    million messages). ``before``: only blocks before this namespace sequence (the next page back)."""
    ns = get_namespace(namespace)
    query = (
        Block.select(Block, Thread, Namespace)
        .join(Thread)
        .switch(Block)
        .join(Namespace)
        .where((Block.namespace == ns) & (Block.status == "ready"))
    )
    if thread is not None:
        query = query.where(Thread.name == validate_name(thread, "thread"))
    if before is not None:
        query = query.where(Block.sequence < clamp(before, 0, MAX_ROW_ID, 0))
    out: list[BlockView] = []
    spent = 0
    for block in query.order_by(Block.sequence.desc()).iterator():
        view = _view(block, current_level(block, block.thread, ns.block_decay_lambda))
        spent += estimate_tokens(view.content)
        if token_budget is not None and out and spent > token_budget:
            break
        out.append(view)
    return out[::-1]


def block_counts(namespace: str, thread: str | None = None, *, before: int | None = None) -> dict[str, int]:
    """How many blocks there are by status (``before``: only those before that namespace sequence),
    counted in SQL."""
    query = Block.select(Block.status, fn.COUNT(Block.id)).where(Block.namespace == get_namespace(namespace))
    if thread is not None:
        query = query.join(Thread).where(Thread.name == validate_name(thread, "thread"))
    if before is not None:
        query = query.where(Block.sequence < clamp(before, 0, MAX_ROW_ID, 0))
    by_status = dict(query.group_by(Block.status).tuples())
    ready, pending = by_status.get("ready", 0), by_status.get("pending", 0)
    total = sum(by_status.values())
    return {"blocks": total, "ready": ready, "pending": pending, "failed": total - ready - pending}


@dataclass(frozen=True)
class OpenTail:
    """A thread's turns waiting to be sealed: a block is sealed every ``block_size`` user turns."""

    namespace: str
    thread: str
    turns: int
    block_size: int


def open_tails(namespace: str | None = None, limit: int = 20) -> list[OpenTail]:
    """Threads with turns not yet sealed into a block, most waiting first."""
    query = (
        Message.select(Namespace.name, Thread.name, Namespace.block_turn_size, fn.COUNT(Message.id))
        .join(Thread, on=(Message.thread == Thread.id))
        .switch(Message)
        .join(Namespace, on=(Message.namespace == Namespace.id))
        .where(Message.block.is_null() & (Message.role == "user"))
        .group_by(Namespace.name, Thread.name, Namespace.block_turn_size)
        .order_by(fn.COUNT(Message.id).desc(), Thread.name)
        .limit(limit)
    )
    if namespace is not None:
        query = query.where(Message.namespace == get_namespace(namespace))
    return [OpenTail(ns, thread, turns, size) for ns, thread, size, turns in query.tuples()]


def open_tail_turns(namespace: str | None = None) -> int:
    """User turns not yet sealed into a block."""
    query = Message.select(fn.COUNT(Message.id)).where((Message.block.is_null()) & (Message.role == "user"))
    if namespace is not None:
        query = query.where(Message.namespace == get_namespace(namespace))
    return query.scalar() or 0
