"""Step 5 of an import: undo a committed batch. What the batch added is removed and what it
changed is restored, from the pre-images recorded at commit and by the graph projection of its
events, so the store equals the store before the import while unrelated later writes survive.
The per-item audit stays after an undo."""

from __future__ import annotations

from typing import Any

from core.db import write_transaction
from core.errors import InvalidInputError, NotFoundError
from core.models import (
    Block,
    Event,
    EventLink,
    GraphEdge,
    GraphFact,
    GraphSource,
    ImportBatch,
    ImportChange,
    Job,
    Message,
    Namespace,
    Thread,
    UsageReceipt,
)
from core.imports.gitmemo import FORMAT as GITMEMO
from core.search.index import unindex_events, unindex_messages
from core.services.events import LIVE
from core.services.gitmemo import undo_gitmemo
from core.services.graph_endings import affected_by, forget_endings_by_events, forget_endings_of, settle
from core.services.import_batches import (
    EVENT_IMAGE,
    GRAPH_TABLES,
    IMPORT_GRAPH_KIND,
    UndoResult,
    batch_items,
    batch_row,
    load_batch,
    row_image,
)
from core.timeutil import now_iso


def _restore_row(model, record_id: int, values: dict[str, Any]) -> None:
    fields = {k: v for k, v in values.items() if k != "id"}
    model.update(**fields).where(model.id == record_id).execute()


def _scrub_provenance(value: Any, removed: set[int]) -> Any:
    if isinstance(value, list):
        return [_scrub_provenance(v, removed) for v in value if not (isinstance(v, int) and v in removed)]
    if isinstance(value, dict):
        return {k: _scrub_provenance(v, removed) for k, v in value.items()}
    return value


def _undo_graph(batch_id: int, removed: set[int]) -> tuple[int, int]:
    """Delete graph rows the batch's projection created (while nothing else cites them) and
    restore the rows it changed. A row changed again later keeps the later values of the
    fields that later write touched."""
    changes = list(
        ImportChange.select().where((ImportChange.batch == batch_id) & ImportChange.table.in_(list(GRAPH_TABLES)))
    )
    removed_count = restored = 0
    for table, kind in (("graph_fact", "fact"), ("graph_edge", "edge"), ("graph_node", "node")):
        model = GRAPH_TABLES[table]
        for change in (c for c in changes if c.table == table and c.before is None):
            row = model.get_or_none(model.id == change.record_id)
            if row is None:
                continue
            cited = GraphSource.select().where((GraphSource.kind == kind) & (GraphSource.record_id == row.id)).exists()
            if cited:
                continue  # later events cite it: it is theirs now
            if kind == "node" and (
                GraphFact.select().where(GraphFact.node == row.id).exists()
                or GraphEdge.select().where((GraphEdge.from_node == row.id) | (GraphEdge.to_node == row.id)).exists()
            ):
                continue
            if kind != "node":
                forget_endings_of(kind, [row.id])
            model.delete().where(model.id == row.id).execute()
            removed_count += 1
    for change in (c for c in changes if c.before is not None):
        model = GRAPH_TABLES[change.table]
        current = model.select().where(model.id == change.record_id).dicts().first()
        if current is None:
            continue
        if current == change.after:
            _restore_row(model, change.record_id, change.before)
        else:
            merged = {
                k: (change.before.get(k) if current.get(k) == (change.after or {}).get(k) else current.get(k))
                for k in current
            }
            if "provenance" in merged:
                merged["provenance"] = _scrub_provenance(merged["provenance"], removed)
            _restore_row(model, change.record_id, merged)
        restored += 1
    return removed_count, restored


def _undo_events(batch_id: int, removed: set[int], now: str) -> list[int]:
    """Give back the events a merge or supersede replaced their earlier state."""
    restored: list[int] = []
    images = {
        c.record_id: c
        for c in ImportChange.select().where((ImportChange.batch == batch_id) & (ImportChange.table == "event"))
    }
    affected = {e.id: e for e in Event.select().where(Event.superseded_by.in_(list(removed)))} if removed else {}
    for event_id in sorted(set(images) | set(affected)):
        event = affected.get(event_id) or Event.get_or_none(Event.id == event_id)
        if event is None or event.id in removed or event.superseded_by not in removed:
            continue
        change = images.get(event_id)
        current = row_image(event, EVENT_IMAGE)
        if change is not None and current == change.after:
            Event.update(**change.before).where(Event.id == event_id).execute()
        else:
            # Changed again since (or replaced by another batch): follow §10.2 step 4.
            others = [
                link.event_id
                for link in EventLink.select()
                .join(Event, on=(EventLink.event == Event.id))
                .where(
                    (EventLink.target == event_id)
                    & (EventLink.kind == "supersedes")
                    & EventLink.event.not_in(list(removed))
                    & Event.status.in_(LIVE)
                )
                .order_by(EventLink.event.desc())
            ]
            if others and event.status == "superseded":
                Event.update(superseded_by=others[0], updated_at=now).where(Event.id == event_id).execute()
            else:
                prior = (change.before if change is not None else {}) or {}
                status = event.status
                if status == "superseded":
                    status = prior.get("status") if prior.get("status") in ("active", "superseded") else "active"
                Event.update(
                    status=status,
                    superseded_by=prior.get("superseded_by"),
                    forced_cap=prior.get("forced_cap"),
                    updated_at=now,
                ).where(Event.id == event_id).execute()
        restored.append(event_id)
    return restored


def undo_batch(batch_id: int | str) -> UndoResult:
    """Remove exactly what a committed batch added and restore what it changed (one transaction).

    Its events go (with their sources, links both ways, index postings, graph citations and
    projection jobs); replaced events get their earlier state back; graph rows its
    projection created go unless later events cite them, rows it changed are restored; its
    ids leave every use receipt (a receipt left empty is deleted); its source block, thread
    and message go. Later unrelated writes are untouched. Undoing twice is an error.
    """
    if load_batch(batch_id).format == GITMEMO:
        return undo_gitmemo(batch_id)
    with write_transaction():
        batch = load_batch(batch_id)
        if batch.status == "undone":
            raise InvalidInputError(f"import batch {batch.id} was already undone at {batch.undone_at}; nothing changed")
        if batch.status != "committed":
            raise InvalidInputError(
                f"import batch {batch.id} is {batch.status}, not committed; there is nothing to undo"
            )
        ns = Namespace.get_or_none(Namespace.name == batch.namespace_name)
        if ns is None:
            raise NotFoundError(f"namespace {batch.namespace_name!r} of import batch {batch.id} no longer exists")
        now = now_iso()
        block = Block.get_or_none(Block.id == batch.source_block_id) if batch.source_block_id else None
        removed = {i for (i,) in Event.select(Event.id).where(Event.block == block.id).tuples()} if block else set()
        removed |= {i.created_event_id for i in batch_items(batch.id) if i.created_event_id}
        if removed:
            removed = {i for (i,) in Event.select(Event.id).where(Event.id.in_(list(removed))).tuples()}

        restored = _undo_events(batch.id, removed, now)
        for job in Job.select().where((Job.namespace == ns) & (Job.kind == IMPORT_GRAPH_KIND)):
            if (job.payload or {}).get("import_batch") == batch.id:
                job.delete_instance()
        for receipt in UsageReceipt.select().where(UsageReceipt.namespace == ns):
            kept = [i for i in receipt.event_ids or [] if i not in removed]
            if len(kept) != len(receipt.event_ids or []):
                if kept:
                    UsageReceipt.update(event_ids=kept).where(UsageReceipt.id == receipt.id).execute()
                else:
                    receipt.delete_instance()
        # Records the batch's events ended, stated, or made history behind: settled once the
        # graph rows are back (read now, while the events and their citations still exist).
        unsettled = affected_by(removed)
        if removed:
            unindex_events(ns.id, sorted(removed))
            forget_endings_by_events(sorted(removed))
            Event.delete().where(Event.id.in_(sorted(removed))).execute()
        graph_removed, graph_restored = _undo_graph(batch.id, removed)
        settle(unsettled, now)
        if block is not None:
            message_ids = [i for (i,) in Message.select(Message.id).where(Message.block == block.id).tuples()]
            unindex_messages(ns.id, message_ids)
            thread_id = block.thread_id
            sequence = block.sequence
            Message.delete().where(Message.block == block.id).execute()
            Block.delete().where(Block.id == block.id).execute()
            if not Message.select().where(Message.thread == thread_id).exists():
                Thread.delete().where(Thread.id == thread_id).execute()
            if ns.block_count == sequence:
                ns.block_count -= 1  # no block came after it: the sequence is as before
        ns.revision += 1
        ns.updated_at = now
        ns.save()
        ImportBatch.update(status="undone", undone_at=now, updated_at=now).where(ImportBatch.id == batch.id).execute()
        row = batch_row(load_batch(batch.id))
    return UndoResult(
        batch=row,
        removed_event_ids=tuple(sorted(removed)),
        restored_event_ids=tuple(restored),
        graph_removed=graph_removed,
        graph_restored=graph_restored,
    )


__all__ = ["undo_batch"]
