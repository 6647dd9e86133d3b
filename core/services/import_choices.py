"""Step 3 of an import: a person's choices for the items of a previewed batch (needed for items
below the confidence threshold or recovered from malformed input; their default is ignore)."""

from __future__ import annotations

from typing import Sequence

from core.db import is_row_id, write_transaction
from core.errors import InvalidInputError, NotFoundError
from core.imports.gitmemo import FORMAT as GITMEMO
from core.models import ImportBatch, ImportItem, Namespace
from core.services.events import live_event_ids
from core.services.import_batches import (
    ACTIONS,
    TARGETED,
    ImportItemRow,
    ImportPreview,
    batch_items,
    get_batch,
    item_row,
    load_batch,
    outside_targets,
)
from core.timeutil import now_iso


def status_after_preview(items: Sequence[ImportItem]) -> str:
    if any(i.state != "decided" for i in items):
        return "processing"
    waiting = any(i.requires_confirmation and i.choice_action is None for i in items)
    return "awaiting_confirmation" if waiting else "ready"


def _live_in(namespace: str, ids: Sequence[int]) -> set[int]:
    if not ids:
        return set()
    ns = Namespace.get_or_none(Namespace.name == namespace)
    return live_event_ids(list(ids), ns.id) if ns is not None else set()


def choice_kept(item: ImportItem, allowed: set[int], namespace: str) -> bool:
    """Whether a person's choice survives a new preview of its item: its targets are still among the
    matches, or are events the person named outside them that are still live."""
    if item.choice_action is None:
        return True
    outside = set(item.choice_target_ids or []) - allowed
    return outside <= _live_in(namespace, sorted(outside))


def decide(batch_id: int | str, position: int, action: str, target_ids: Sequence[int] | None = None) -> ImportItemRow:
    """Record a person's choice for one item (any item may be overridden).

    A merge, supersede or conflict needs targets, one or several: the item's matches, or any
    live event of the batch's namespace (a person may know the event the search missed).
    Without ``target_ids`` the preview's own targets are used.
    """
    if not isinstance(action, str) or action.strip().lower() not in ACTIONS:
        raise InvalidInputError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    action = action.strip().lower()
    for target in target_ids or ():
        if isinstance(target, bool) or not isinstance(target, int) or not is_row_id(target):
            raise InvalidInputError(f"a target must be an event id, got {target!r}")
    with write_transaction():
        batch, item = _choice_item(batch_id, position)
        allowed = [m["event_id"] for m in item.matches or []]
        targets: list[int] = []
        if action in TARGETED:
            targets = list(dict.fromkeys(target_ids or item.target_ids or []))
            if not targets:
                raise InvalidInputError(
                    f"{action} needs a target event: pass one of item {position}'s matches "
                    f"({', '.join(map(str, allowed)) or 'none'}) or any live event of namespace "
                    f"{batch.namespace_name!r}; or choose add or ignore"
                )
            outside = [t for t in targets if t not in allowed]
            live = _live_in(batch.namespace_name, outside)
            bad = [t for t in outside if t not in live]
            if bad:
                raise InvalidInputError(
                    f"event {bad[0]} is neither among item {position}'s matches "
                    f"({', '.join(map(str, allowed)) or 'none'}) nor a live event of namespace "
                    f"{batch.namespace_name!r}"
                )
        item.choice_action, item.choice_target_ids, item.updated_at = action, targets, now_iso()
        item.save()
        _settle_status(batch)
        item = ImportItem.get_by_id(item.id)
        outside_rows = outside_targets([item])
    return item_row(item, outside_rows)


def reset_choice(batch_id: int | str, position: int | None = None) -> ImportPreview:
    """Forget a person's choice for one item (``position``), or for every item of the batch: the
    preview's decision applies again (an item below the threshold waits for a person again)."""
    with write_transaction():
        if position is None:
            batch = load_batch(batch_id)
            _check_choosable(batch)
            ImportItem.update(choice_action=None, choice_target_ids=None, updated_at=now_iso()).where(
                ImportItem.batch == batch.id
            ).execute()
        else:
            batch, item = _choice_item(batch_id, position)
            item.choice_action, item.choice_target_ids, item.updated_at = None, None, now_iso()
            item.save()
        _settle_status(batch)
    return get_batch(batch.id)


def _check_choosable(batch: ImportBatch) -> None:
    if batch.format == GITMEMO:
        raise InvalidInputError(
            f"import batch {batch.id} is a gitmemo repository: its history is imported whole, without choices"
        )
    if batch.status in ("committed", "undone"):
        raise InvalidInputError(f"import batch {batch.id} is {batch.status}; its choices cannot change")


def _choice_item(batch_id: int | str, position: int) -> tuple[ImportBatch, ImportItem]:
    batch = load_batch(batch_id)
    _check_choosable(batch)
    item = (
        ImportItem.get_or_none((ImportItem.batch == batch.id) & (ImportItem.position == position))
        if is_row_id(position)
        else None
    )
    if item is None:
        raise NotFoundError(f"import batch {batch.id} has no item {position} (items 1-{batch.total})")
    if item.state != "decided":
        raise InvalidInputError(
            f"item {position} of import batch {batch.id} has no preview decision yet; "
            f"run `strata import resume {batch.id}` first"
        )
    return batch, item


def _settle_status(batch: ImportBatch) -> None:
    if batch.status in ("awaiting_confirmation", "ready"):
        batch.status = status_after_preview(batch_items(batch.id))
    batch.updated_at = now_iso()
    batch.save()


__all__ = ["choice_kept", "decide", "reset_choice", "status_after_preview"]
