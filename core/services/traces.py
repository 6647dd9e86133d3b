"""Retrieval traces: why something was or was not recalled.

Every search batch, assessment, use receipt and automatic-context build writes one
trace row: the candidates with their scores (and score components such as BM25, RRF and
weight), what was selected, the verdict and the time it took. Traces are observability
only; nothing reads them to make a decision.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from core.db import MAX_ROW_ID, clamp, write_transaction
from core.errors import InvalidInputError
from core.models import Namespace, RetrievalTrace
from core.redact import redact_text
from core.services.spaces import get_namespace
from core.timeutil import now_iso

TRACE_KINDS = ("search", "assess", "use", "context")
MAX_CANDIDATES = 200
MAX_QUERY_CHARS = 4000
TRACES_MAX = 1000  # traces one listing returns: each carries its candidates


@dataclass(frozen=True)
class TraceRow:
    id: int
    namespace: str
    kind: str
    channel: str | None
    query: str
    batch_id: int | None
    verdict: str | None
    candidate_count: int
    selected_count: int
    elapsed_ms: float
    created_at: str


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return round(float(value), 6)


def _candidate(item: Any, index: int) -> dict[str, Any]:
    if isinstance(item, str):
        return {"ref": item, "score": None, "components": {}}
    if not isinstance(item, Mapping) or not isinstance(item.get("ref"), str):
        raise InvalidInputError(f"candidates[{index}]: expected {{ref, score, components}}, got {item!r}")
    components = item.get("components") or {}
    if not isinstance(components, Mapping):
        raise InvalidInputError(f"candidates[{index}]: components must be a mapping")
    clean = {str(k): _number(v) for k, v in components.items()}
    return {
        "ref": item["ref"],
        "score": _number(item.get("score")),
        "components": {k: v for k, v in clean.items() if v is not None},
    }


def _namespace_id(namespace: Namespace | int | str) -> int:
    if isinstance(namespace, Namespace):
        return namespace.id
    if isinstance(namespace, int) and not isinstance(namespace, bool):
        return namespace
    if isinstance(namespace, str):
        return get_namespace(namespace).id
    raise InvalidInputError(f"namespace must be an id, a row or a name, got {namespace!r}")


def record_trace(
    namespace_id: Namespace | int | str,
    kind: str,
    *,
    batch_id: int | None = None,
    channel: str | None = None,
    query: str = "",
    candidates: Iterable[Mapping[str, Any] | str] = (),
    selected: Iterable[str] = (),
    verdict: str | None = None,
    detail: Mapping[str, Any] | None = None,
    elapsed_ms: float = 0.0,
) -> int:
    """Write one trace (inside the caller's transaction when there is one); returns its id.

    ``candidates`` beyond the first 200 are dropped (the detail records how many there were)."""
    if kind not in TRACE_KINDS:
        raise InvalidInputError(f"trace kind must be one of {', '.join(TRACE_KINDS)}, got {kind!r}")
    items = list(candidates or ())
    cleaned = [_candidate(item, i) for i, item in enumerate(items[:MAX_CANDIDATES])]
    extra = dict(detail or {})
    if len(items) > MAX_CANDIDATES:
        extra["candidates_total"] = len(items)
    try:
        extra = json.loads(json.dumps(extra, ensure_ascii=False, default=str))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"trace detail must be JSON-serializable: {exc}") from exc
    with write_transaction():
        row = RetrievalTrace.create(
            namespace=_namespace_id(namespace_id),
            batch=batch_id,
            kind=kind,
            channel=channel,
            # Masked before the cut: a trace is a log, and a cut through a token leaves a prefix.
            query=redact_text(query or "")[:MAX_QUERY_CHARS],
            candidates=cleaned,
            selected=[str(s) for s in selected or ()],
            verdict=verdict,
            detail=extra or None,
            elapsed_ms=round(float(elapsed_ms or 0.0), 3),
            created_at=now_iso(),
        )
    return row.id


def trace_row(trace: RetrievalTrace, names: Mapping[int, str]) -> TraceRow:
    return TraceRow(
        id=trace.id,
        namespace=names.get(trace.namespace_id, ""),
        kind=trace.kind,
        channel=trace.channel,
        query=trace.query,
        batch_id=trace.batch_id,
        verdict=trace.verdict,
        candidate_count=len(trace.candidates or ()),
        selected_count=len(trace.selected or ()),
        elapsed_ms=trace.elapsed_ms,
        created_at=trace.created_at,
    )


def list_traces(
    namespace: str | None = None, limit: int = 50, before_id: int | None = None, kind: str | None = None
) -> list[TraceRow]:
    """Traces newest first; page with ``before_id`` = the last id of the previous page."""
    query = RetrievalTrace.select()
    if namespace is not None:
        query = query.where(RetrievalTrace.namespace == get_namespace(namespace))
    if before_id is not None:
        query = query.where(RetrievalTrace.id < clamp(before_id, 0, MAX_ROW_ID, 0))
    if kind is not None:
        query = query.where(RetrievalTrace.kind == kind)
    rows = list(query.order_by(RetrievalTrace.id.desc()).limit(clamp(limit, 1, TRACES_MAX, 50)))
    names = (
        dict(
            Namespace.select(Namespace.id, Namespace.name)
            .where(Namespace.id.in_({r.namespace_id for r in rows}))
            .tuples()
        )
        if rows
        else {}
    )
    return [trace_row(r, names) for r in rows]


__all__ = ["TRACE_KINDS", "TraceRow", "list_traces", "record_trace", "trace_row"]
