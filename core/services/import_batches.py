"""Import batches as stored and as every step returns them: the vocabulary of actions and
statuses, the frozen rows (``ImportBatchRow``, ``ImportItemRow``, ``ImportPreview``,
``UndoResult``), and reading a batch with its items.

An import goes through five steps, each in its own module: parse and preview
(``core.services.import_preview``), a person's choices (``core.services.import_choices``),
commit and the graph projection of the imported events (``core.services.import_commit``), and
undo (``core.services.import_undo``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from core.db import LIST_MAX, chunks, clamp, is_row_id
from core.errors import InvalidInputError, NotFoundError
from core.models import Event, GraphEdge, GraphFact, GraphNode, ImportBatch, ImportItem, Namespace
from core.providers import usage as usage_acct
from core.vocab import IMPORT_ACTIONS

ACTIONS = IMPORT_ACTIONS
TARGETED = ("merge", "supersede", "conflict")
DEFAULT_TOP_K = 5
DEFAULT_THRESHOLD = 0.85
IMPORT_GRAPH_KIND = "import_graph"
NO_NAMESPACE = -1  # the revision a preview records when its namespace does not exist yet
STATUSES = ("processing", "awaiting_confirmation", "ready", "committed", "undone")
GRAPH_TABLES = {"graph_node": GraphNode, "graph_fact": GraphFact, "graph_edge": GraphEdge}
# The event fields a commit may change and an undo gives back (the pre-images in ImportChange).
EVENT_IMAGE = ("status", "superseded_by", "forced_cap", "updated_at")


# ----------------------------------------------------------------------------- DTOs


@dataclass(frozen=True)
class CandidateRow:
    """An imported memory as parsed (the full dict is in ``data``)."""

    title: str
    summary: str
    tags: tuple[str, ...]
    participants: tuple[str, ...]
    mentioned_at: str | None
    happened_start: str | None
    happened_end: str | None
    precision: str
    memory_kind: str | None
    category: str | None
    confidence: float | None
    data: dict[str, Any]


@dataclass(frozen=True)
class MatchRow:
    """A stored event among an item's Top-K matches."""

    event_id: int
    title: str
    summary: str
    status: str
    score: float


@dataclass(frozen=True)
class ImportItemRow:
    position: int
    candidate: CandidateRow
    state: str  # pending (not decided yet) or decided
    action: str | None  # the preview's decision
    target_ids: tuple[int, ...]
    reason: str | None
    confidence: float | None
    requires_confirmation: bool
    duplicate_of_event: int | None
    duplicate_of_item: int | None
    matches: tuple[MatchRow, ...]
    choice_action: str | None  # a person's choice, if any
    choice_target_ids: tuple[int, ...]
    effective_action: str | None  # what commit applies (or applied)
    effective_target_ids: tuple[int, ...]
    created_event_id: int | None
    model_calls: int
    # Events a person chose as targets from outside the matches (any live event of the namespace).
    chosen_events: tuple[MatchRow, ...] = ()
    # What a model said it matched ({subject, slot, value, stored_value}); None from the offline decider.
    matched: dict[str, str] | None = None
    # Tokens of the model calls made for this item (core.providers.usage fields); None without any.
    usage: dict[str, int] | None = None


@dataclass(frozen=True)
class ImportBatchRow:
    id: int
    namespace: str
    format: str
    source_name: str | None
    source_system: str | None
    status: str
    recovered: bool
    total: int
    processed: int
    top_k: int
    threshold: float
    provider: str | None
    preview_revision: int | None
    source_block_id: int | None
    imported_count: int
    counts: dict[str, int]  # effective actions of the decided items
    needs_confirmation: int  # items below the threshold (or recovered) without a person's choice
    warnings: tuple[str, ...]
    last_error: str | None
    created_at: str
    updated_at: str
    committed_at: str | None
    undone_at: str | None
    # Tokens of every model call made for the batch and its items, as reported and as Strata
    # estimates them (core.providers.usage fields); None when no model was asked.
    usage: dict[str, int] | None = None


@dataclass(frozen=True)
class ImportPreview:
    batch: ImportBatchRow
    items: tuple[ImportItemRow, ...]


@dataclass(frozen=True)
class UndoResult:
    batch: ImportBatchRow
    removed_event_ids: tuple[int, ...]
    restored_event_ids: tuple[int, ...]
    graph_removed: int
    graph_restored: int
    removed_note_ids: tuple[str, ...] = ()  # a gitmemo batch: the notes it had written


# ----------------------------------------------------------------------------- reading


def _candidate_row(data: dict[str, Any]) -> CandidateRow:
    temporal = data.get("temporal") or {}
    return CandidateRow(
        title=data.get("title", ""),
        summary=data.get("summary", ""),
        tags=tuple(data.get("tags") or ()),
        participants=tuple(temporal.get("participants") or ()),
        mentioned_at=temporal.get("mentioned_at"),
        happened_start=temporal.get("happened_start"),
        happened_end=temporal.get("happened_end"),
        precision=temporal.get("precision", "unknown"),
        memory_kind=data.get("memory_kind"),
        category=data.get("category"),
        confidence=data.get("confidence"),
        data=data,
    )


def effective_action(item: ImportItem) -> tuple[str | None, tuple[int, ...]]:
    """The action commit applies: a person's choice, else the decision when it may be
    auto-applied, else ignore. A targeted action without a target is ignore."""
    if item.final_action is not None:
        return item.final_action, tuple(item.final_target_ids or ())
    if item.state != "decided":
        return None, ()
    if item.choice_action is not None:
        action, targets = item.choice_action, tuple(item.choice_target_ids or ())
    elif item.requires_confirmation:
        action, targets = "ignore", ()
    else:
        action, targets = item.action or "ignore", tuple(item.target_ids or ())
    if action in TARGETED and not targets:
        return "ignore", ()
    return action, targets if action != "add" else ()


def item_row(item: ImportItem, outside: Mapping[int, MatchRow] | None = None) -> ImportItemRow:
    action, targets = effective_action(item)
    known = {m["event_id"] for m in item.matches or ()}
    chosen = tuple(
        outside[i]
        for i in dict.fromkeys([*(item.choice_target_ids or ()), *(item.final_target_ids or ())])
        if i not in known and outside and i in outside
    )
    return ImportItemRow(
        position=item.position,
        candidate=_candidate_row(item.candidate),
        state=item.state,
        action=item.action,
        target_ids=tuple(item.target_ids or ()),
        reason=item.reason,
        confidence=item.confidence,
        requires_confirmation=bool(item.requires_confirmation),
        duplicate_of_event=item.duplicate_of_event,
        duplicate_of_item=item.duplicate_of_item,
        matches=tuple(
            MatchRow(m["event_id"], m["title"], m["summary"], m["status"], m["score"]) for m in item.matches or ()
        ),
        choice_action=item.choice_action,
        choice_target_ids=tuple(item.choice_target_ids or ()),
        effective_action=action,
        effective_target_ids=targets,
        created_event_id=item.created_event_id,
        model_calls=item.model_calls,
        chosen_events=chosen,
        matched=item.matched or None,
        usage=usage_acct.normalized(item.usage) if item.usage else None,
    )


def batch_items(batch_id: int) -> list[ImportItem]:
    return list(ImportItem.select().where(ImportItem.batch == batch_id).order_by(ImportItem.position))


def batch_row(batch: ImportBatch, items: Sequence[ImportItem] | None = None) -> ImportBatchRow:
    items = batch_items(batch.id) if items is None else items
    counts = {action: 0 for action in ACTIONS}
    waiting = 0
    spent = usage_acct.add(batch.usage, *(item.usage for item in items))
    for item in items:
        action, _ = effective_action(item)
        if action:
            counts[action] += 1
        if (
            item.state == "decided"
            and item.requires_confirmation
            and item.choice_action is None
            and item.final_action is None
        ):
            waiting += 1
    return ImportBatchRow(
        id=batch.id,
        namespace=batch.namespace_name,
        format=batch.format,
        source_name=batch.source_name,
        source_system=batch.source_system,
        status=batch.status,
        recovered=bool(batch.recovered),
        total=batch.total,
        processed=batch.processed,
        top_k=batch.top_k,
        threshold=batch.threshold,
        provider=batch.provider,
        preview_revision=batch.preview_revision,
        source_block_id=batch.source_block_id,
        imported_count=batch.imported_count,
        counts=counts,
        needs_confirmation=waiting,
        warnings=tuple(batch.warnings or ()),
        last_error=batch.last_error,
        created_at=batch.created_at,
        updated_at=batch.updated_at,
        committed_at=batch.committed_at,
        undone_at=batch.undone_at,
        usage=None if usage_acct.is_empty(spent) else spent,
    )


def load_batch(batch_id: int | str) -> ImportBatch:
    try:
        key = int(batch_id)
    except (TypeError, ValueError):
        raise InvalidInputError(f"import batch id must be a number, got {batch_id!r}") from None
    batch = ImportBatch.get_or_none(ImportBatch.id == key) if is_row_id(key) else None
    if batch is None:
        raise NotFoundError(f"import batch {key} does not exist (see `strata import list`)")
    return batch


def get_batch(batch_id: int | str) -> ImportPreview:
    """A batch with every item: decisions, matches, choices and (after commit) the audit."""
    batch = load_batch(batch_id)
    items = batch_items(batch.id)
    outside = outside_targets(items)
    return ImportPreview(batch=batch_row(batch, items), items=tuple(item_row(i, outside) for i in items))


def outside_targets(items: Sequence[ImportItem]) -> dict[int, MatchRow]:
    """The events chosen as targets that are not among their item's matches, read in one go so that
    a view can name them as it names matches (whatever their status is now)."""
    wanted = sorted(
        {
            t
            for i in items
            for t in [*(i.choice_target_ids or ()), *(i.final_target_ids or ())]
            if t not in {m["event_id"] for m in i.matches or ()}
        }
    )
    found: dict[int, MatchRow] = {}
    for part in chunks(wanted):
        for event_id, title, summary, status in (
            Event.select(Event.id, Event.title, Event.summary, Event.status).where(Event.id.in_(part)).tuples()
        ):
            found[event_id] = MatchRow(event_id, title, summary, status, 0.0)
    return found


def list_batches(namespace: str | None = None, status: str | None = None, limit: int = 100) -> list[ImportBatchRow]:
    """Batches newest first, with their status and counts."""
    if status is not None and status not in STATUSES:
        raise InvalidInputError(f"import status must be one of {', '.join(STATUSES)}, got {status!r}")
    query = ImportBatch.select()
    if namespace is not None:
        query = query.where(ImportBatch.namespace_name == namespace)
    if status is not None:
        query = query.where(ImportBatch.status == status)
    return [batch_row(b) for b in query.order_by(ImportBatch.id.desc()).limit(clamp(limit, 1, LIST_MAX, 100))]


def namespace_revision(namespace: str) -> int:
    row = Namespace.select(Namespace.revision).where(Namespace.name == namespace).first()
    return row.revision if row is not None else NO_NAMESPACE


def row_image(row: dict[str, Any] | Any, fields: Sequence[str]) -> dict[str, Any]:
    get = row.get if isinstance(row, dict) else (lambda k: getattr(row, k))
    return {f: get(f) for f in fields}


__all__ = [
    "ACTIONS",
    "CandidateRow",
    "DEFAULT_THRESHOLD",
    "DEFAULT_TOP_K",
    "EVENT_IMAGE",
    "GRAPH_TABLES",
    "IMPORT_GRAPH_KIND",
    "ImportBatchRow",
    "ImportItemRow",
    "ImportPreview",
    "MatchRow",
    "STATUSES",
    "TARGETED",
    "UndoResult",
    "batch_items",
    "batch_row",
    "effective_action",
    "get_batch",
    "item_row",
    "list_batches",
    "load_batch",
    "namespace_revision",
    "outside_targets",
    "row_image",
]
