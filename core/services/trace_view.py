"""One retrieval trace as the workbench and `strata trace` show it: the trace, its candidates and the
evidence batch it belongs to. A read model over two services (traces, and the gate that owns the
batches), kept apart from both so that neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.db import is_row_id
from core.errors import NotFoundError
from core.models import Namespace, RetrievalTrace
from core.services.gate import BatchInfo, get_batch
from core.services.traces import TraceRow, trace_row


@dataclass(frozen=True)
class TraceDetail:
    trace: TraceRow
    candidates: tuple[dict[str, Any], ...]  # {ref, score, components}
    selected: tuple[str, ...]
    detail: dict[str, Any] | None
    batch: BatchInfo | None  # the batch with its refs, assessment and receipt


def get_trace(trace_id: int) -> TraceDetail:
    """One trace with its candidates and, when it belongs to a batch, the batch itself."""
    trace = RetrievalTrace.get_or_none(RetrievalTrace.id == trace_id) if is_row_id(trace_id) else None
    if trace is None:
        raise NotFoundError(f"retrieval trace {trace_id} does not exist")
    names = {trace.namespace_id: Namespace.get_by_id(trace.namespace_id).name}
    batch = None
    if trace.batch_id is not None:
        try:
            batch = get_batch(trace.batch_id)
        except NotFoundError:
            batch = None
    return TraceDetail(
        trace=trace_row(trace, names),
        candidates=tuple(trace.candidates or ()),
        selected=tuple(trace.selected or ()),
        detail=trace.detail,
        batch=batch,
    )


__all__ = ["TraceDetail", "get_trace"]
