"""The context ledger: what each context assembly handed a model, what it left out and why, and what
each cost preflight decided. Rows are written by the code that did the work (``core.services.context``,
``core.services.preflight``); this module reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import InvalidInputError
from core.models import LedgerEntry
from core.services.spaces import get_namespace

KINDS = ("context", "preflight")


@dataclass(frozen=True)
class LedgerRow:
    id: int
    namespace: str
    kind: str
    trace_id: int | None
    query: str
    selected: tuple[str, ...]
    excluded: tuple[dict[str, Any], ...]  # {ref, reason}
    tokens: int
    budget: int | None
    decision: str | None
    reason: str | None
    created_at: str


def list_ledger(namespace: str, *, kind: str | None = None, limit: int = 100) -> list[LedgerRow]:
    """Ledger rows newest first."""
    if kind is not None and kind not in KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    ns = get_namespace(namespace)
    query = LedgerEntry.select().where(LedgerEntry.namespace == ns)
    if kind is not None:
        query = query.where(LedgerEntry.kind == kind)
    rows = query.order_by(LedgerEntry.id.desc()).limit(max(1, min(limit, 10_000)))
    return [
        LedgerRow(
            id=r.id,
            namespace=ns.name,
            kind=r.kind,
            trace_id=r.trace_id,
            query=r.query,
            selected=tuple(r.selected or ()),
            excluded=tuple(r.excluded or ()),
            tokens=r.tokens,
            budget=r.budget,
            decision=r.decision,
            reason=r.reason,
            created_at=r.created_at,
        )
        for r in rows
    ]


__all__ = ["KINDS", "LedgerRow", "list_ledger"]
