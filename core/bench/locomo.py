"""LoCoMo evidence retrieval (benchmarks.md §1): Strata's ranking of source messages
against the gold evidence turns, next to a rank-bm25 turn baseline from the same run."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

from core.api import open_store
from core.bench import git_commit
from core.bench.locomo_data import CATEGORIES, load_questions, split_ids
from core.bench.metrics import aggregate, dedupe_keep_order, percentile, recall_all_at_k, recall_at_k
from core.bench.retrieval import Bm25Baseline, DefaultRetriever, RetrieverFactory, locomo_turns, retriever_name
from core.db import db
from core.ingest import IngestReport, parse, write_units
from core.models import Message
from core.services.derive import run_pending
from core.tokens import estimate_tokens

ProgressFn = Callable[[int, int, str], None]

KS = (1, 5, 10, 20, 50)
DEPTH = 50  # ranked ids kept per question and system
SYSTEMS = ("strata", "bm25")
METRICS = {"recall": recall_at_k, "recall_all": recall_all_at_k}


def session_of(dia_id: str) -> str:
    """The ``D<n>`` part of a dia_id."""
    return dia_id.split(":", 1)[0]


def sessions_in_order(dia_ids: list[str]) -> list[str]:
    """Sessions in the order their first turn appears in a turn ranking."""
    return dedupe_keep_order(session_of(d) for d in dia_ids)


def _results(per_question: list[dict]) -> dict:
    groups = list(CATEGORIES.values())
    results: dict = {}
    for system in SYSTEMS:
        results[system] = {"turn": {}, "session": {}}
        for level in ("turn", "session"):
            for metric, fn in METRICS.items():
                rows = []
                for q in per_question:
                    gold, ranked = q["gold"], q["ranked"][system]
                    if level == "session":
                        gold, ranked = sessions_in_order(gold), sessions_in_order(ranked)
                    rows.append({"category": q["category"], **{k: fn(gold, ranked, k) for k in KS}})
                results[system][level][metric] = aggregate(rows, KS, "category", groups=groups)
    return results


def _context_tokens(per_question: list[dict], texts: dict[str, dict[str, str]]) -> dict:
    """Mean tokens of the top-k messages' rendered text ("<speaker>: <text>"), per system and k."""

    out: dict = {}
    for system in SYSTEMS:
        sums = {k: 0 for k in KS}
        for q in per_question:
            lookup = texts.get(q["id"].split("#", 1)[0], {})
            sizes = [estimate_tokens(lookup.get(dia_id, "")) for dia_id in q["ranked"][system]]
            for k in KS:
                sums[k] += sum(sizes[:k])
        n = len(per_question)
        out[system] = {str(k): round(sums[k] / n, 1) if n else None for k in KS}
    return out


def run_locomo(
    data: str | Path,
    split: str = "dev",
    *,
    retriever_factory: RetrieverFactory | None = None,
    db_url: str | None = None,
    provider: str = "offline",
    progress: ProgressFn | None = None,
) -> dict:
    """Ingest the split into a fresh database (or ``db_url``), derive, rank every question."""

    samples, questions = load_questions(data, split)
    wanted = split_ids(split)
    workdir = None
    if db_url is None:
        workdir = tempfile.TemporaryDirectory(prefix="strata-bench-")
        db_url = f"sqlite:///{Path(workdir.name) / 'locomo.db'}"
    try:
        open_store(db_url)
        started = time.perf_counter()
        units = [u for u in parse("locomo", data) if wanted is None or u.label in wanted]
        ingest = write_units(units, IngestReport(format="locomo", path=str(data)))
        ingest_s = time.perf_counter() - started

        started = time.perf_counter()
        derive = run_pending(
            provider=provider, progress=(lambda d, t, label: progress(d, t, f"derive {label}")) if progress else None
        )
        derive_s = time.perf_counter() - started

        retriever = (retriever_factory or DefaultRetriever)()
        baselines = {s["sample_id"]: Bm25Baseline.for_locomo(s) for s in samples}
        texts = {s["sample_id"]: dict(locomo_turns(s)) for s in samples}

        per_question: list[dict] = []
        latency_ms: list[float] = []
        baseline_ms: list[float] = []
        for done, q in enumerate(questions, 1):
            started = time.perf_counter()
            surfaced = retriever.rank(q.sample_id, q.question, question_time=None, limit=DEPTH)
            latency_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            baseline = baselines[q.sample_id].rank(q.question, limit=DEPTH)
            baseline_ms.append((time.perf_counter() - started) * 1000)
            per_question.append(
                {
                    "id": q.qid,
                    "category": CATEGORIES[q.category],
                    "question": q.question,
                    "gold": list(q.evidence),
                    "ranked": {"strata": dedupe_keep_order(surfaced)[:DEPTH], "bm25": baseline},
                }
            )
            if progress:
                progress(done, len(questions), "query")

        messages = Message.select().count()
        report = {
            "benchmark": "locomo",
            "split": split,
            "provider": provider,
            "commit": git_commit(),
            "retriever": retriever_name(retriever),
            "questions": len(questions),
            "conversations": [s["sample_id"] for s in samples],
            "results": _results(per_question),
            "context_tokens": _context_tokens(per_question, texts),
            "timing": {
                "ingest_s": round(ingest_s, 2),
                "derive_s": round(derive_s, 2),
                "query_p50_ms": round(percentile(latency_ms, 50), 2),
                "query_p95_ms": round(percentile(latency_ms, 95), 2),
                "bm25_query_p50_ms": round(percentile(baseline_ms, 50), 2),
                "bm25_query_p95_ms": round(percentile(baseline_ms, 95), 2),
            },
            "ingest": {"conversations": ingest.units, "skipped": ingest.units_skipped, "messages": messages},
            "derive": {"jobs": derive.processed, "failed": derive.failed, "events": derive.events},
            "per_question": per_question,
        }
    finally:
        if workdir is not None:
            if db.obj is not None and not db.is_closed():
                db.close()
            workdir.cleanup()
    return report
