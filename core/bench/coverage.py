"""Derivation coverage on LoCoMo: how much of the gold evidence the events cite, and how
much of the temporal evidence carries a resolved happened time."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

from peewee import fn

from core.api import open_store
from core.bench import git_commit
from core.bench.locomo_data import load_questions, split_ids
from core.db import db
from core.ingest import IngestReport, parse, write_units
from core.models import Block, Event, EventSource, GraphFact, GraphNode, Message, Namespace
from core.services.derive import run_pending

ProgressFn = Callable[[int, int, str], None]


def _cited(namespace_id: int) -> tuple[set[str], set[str]]:
    """dia_ids cited by any event, and those cited by an event with a resolved happened time."""
    rows = (
        Message.select(Message.external_id, Event.happened_start, Event.happened_end)
        .join(EventSource, on=(EventSource.message == Message.id))
        .join(Event, on=(EventSource.event == Event.id))
        .where((Event.namespace == namespace_id) & (Event.status != "forgotten"))
        .tuples()
    )
    cited, resolved = set(), set()
    for dia_id, start, end in rows:
        cited.add(dia_id)
        if start or end:
            resolved.add(dia_id)
    return cited, resolved


def run_coverage(
    data: str | Path,
    split: str = "dev",
    *,
    db_url: str | None = None,
    provider: str = "offline",
    progress: ProgressFn | None = None,
) -> dict:

    samples, questions = load_questions(data, split)
    wanted = split_ids(split)
    workdir = None
    if db_url is None:
        workdir = tempfile.TemporaryDirectory(prefix="strata-bench-")
        db_url = f"sqlite:///{Path(workdir.name) / 'coverage.db'}"
    open_store(db_url)
    started = time.monotonic()
    units = [u for u in parse("locomo", data) if wanted is None or u.label in wanted]
    write_units(units, IngestReport(format="locomo", path=str(data)))
    ingest_s = time.monotonic() - started
    started = time.monotonic()
    derive_report = run_pending(provider=provider, progress=progress)
    derive_s = time.monotonic() - started

    per_conv: dict[str, dict] = {}
    gold_all: set[tuple[str, str]] = set()
    cited_all: set[tuple[str, str]] = set()
    temporal_hits = temporal_any = temporal_total = 0
    by_sample: dict[str, list] = {}
    for q in questions:
        by_sample.setdefault(q.sample_id, []).append(q)
    for sample in samples:
        sid = sample["sample_id"]
        ns = Namespace.get_or_none(Namespace.name == sid)
        if ns is None:
            continue
        cited, resolved = _cited(ns.id)
        qs = by_sample.get(sid, [])
        gold = {d for q in qs for d in q.evidence}
        gold_all |= {(sid, d) for d in gold}
        cited_all |= {(sid, d) for d in gold & cited}
        t_qs = [q for q in qs if q.category == 2]
        t_all = sum(1 for q in t_qs if set(q.evidence) <= resolved)
        t_any = sum(1 for q in t_qs if set(q.evidence) & resolved)
        temporal_hits += t_all
        temporal_any += t_any
        temporal_total += len(t_qs)
        blocks = Block.select().where(Block.namespace == ns).count()
        events = Event.select().where(Event.namespace == ns).count()
        nodes = GraphNode.select().where(GraphNode.namespace == ns).count()
        facts = GraphFact.select().join(GraphNode).where(GraphNode.namespace == ns).count()
        per_conv[sid] = {
            "extraction_coverage": round(len(gold & cited) / len(gold), 4) if gold else None,
            "temporal_resolved": round(t_all / len(t_qs), 4) if t_qs else None,
            "gold_messages": len(gold),
            "blocks": blocks,
            "events": events,
            "events_per_block": round(events / blocks, 2) if blocks else 0.0,
            "graph_nodes": nodes,
            "graph_facts": facts,
        }
    messages = Message.select(fn.COUNT(Message.id)).scalar()
    report = {
        "benchmark": "coverage",
        "split": split,
        "provider": provider,
        "commit": git_commit(),
        "questions": len(questions),
        "extraction_coverage": {
            "overall": round(len(cited_all) / len(gold_all), 4) if gold_all else None,
            **{sid: c["extraction_coverage"] for sid, c in per_conv.items()},
        },
        "temporal_resolved": {
            "overall": round(temporal_hits / temporal_total, 4) if temporal_total else None,
            "any_evidence": round(temporal_any / temporal_total, 4) if temporal_total else None,
            **{sid: c["temporal_resolved"] for sid, c in per_conv.items()},
        },
        "per_conversation": per_conv,
        "derive": {"jobs": derive_report.processed, "failed": derive_report.failed, "events": derive_report.events},
        "timing": {"ingest_s": round(ingest_s, 2), "derive_s": round(derive_s, 2), "messages": messages},
    }
    if workdir is not None:
        db.close()
        workdir.cleanup()
    return report
