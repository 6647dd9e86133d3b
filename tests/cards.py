"""Event cards written straight into a test store, without a conversation to derive them from."""

from __future__ import annotations

from core.db import write_transaction
from core.models import Event
from core.services.events import write_event


def card(namespace_id: int, summary: str, **fields) -> int:
    """A card saying ``summary`` (titled by it unless ``title`` is given); other ``fields`` are set on
    the stored row (``status``, ``floor_weight`` …). Returns its id."""
    draft = {
        "title": fields.pop("title", summary[:80]),
        "summary": summary,
        "source_message_ids": [],
        "temporal": {},
        "quotes": [],
        "criticality": fields.pop("criticality", "routine"),
    }
    with write_transaction():
        event = write_event(namespace_id, draft, block=None, formed_turn=0)
        if fields:
            Event.update(**fields).where(Event.id == event.id).execute()
        return event.id
