"""LongMemEval_S session retrieval (benchmarks.md §2): per question, a fresh namespace holding
its haystack, Strata's session ranking against ``answer_session_ids``, next to a rank-bm25
baseline over one document per session from the same run."""

from __future__ import annotations

import hashlib
import tempfile
import time
from datetime import timezone
from pathlib import Path
from typing import Callable

from core.bench import git_commit
from core.bench.metrics import (aggregate, dedupe_keep_order, ndcg_any_at_k, percentile, recall_all_at_k,
                                recall_any_at_k)
from core.bench.retrieval import Bm25Baseline, DefaultRetriever, RetrieverFactory, retriever_name
from core.errors import InvalidInputError

ProgressFn = Callable[[int, int, str], None]

KS = (1, 3, 5, 10, 30, 50)
DEPTH = 50  # ranked sessions kept per question and system
# Messages asked of the system per question. A haystack holds about 490 turns in about 48
# sessions; the session ranking needs enough messages to reach DEPTH sessions.
MESSAGE_LIMIT = 500
SYSTEMS = ("strata", "bm25")
QUESTION_TYPES = (
    "single-session-user", "single-session-assistant", "single-session-preference",
    "multi-session", "temporal-reasoning", "knowledge-update",
)
METRICS = {"recall_any": recall_any_at_k, "recall_all": recall_all_at_k, "ndcg_any": ndcg_any_at_k}


def split_of(question_id: str) -> str:
    """``dev`` when sha256(question_id)'s first hex digit is 0-7, else ``test`` (SPLITS.md)."""
    return "dev" if hashlib.sha256(question_id.encode("utf-8")).hexdigest()[0] in "01234567" else "test"


def is_abstention(question_id: str) -> bool:
    return question_id.endswith("_abs")


def select_questions(items: list, split: str, limit: int | None = None) -> list[dict]:
    """The split's questions in file order, the first ``limit`` of them when given."""
    if split not in ("dev", "test", "all"):
        raise InvalidInputError(f"unknown split {split!r}; use dev, test or all")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise InvalidInputError(f"--limit must be a positive integer, got {limit!r}")
    chosen = [
        item for item in items
        if isinstance(item, dict) and isinstance(item.get("question_id"), str)
        and (split == "all" or split_of(item["question_id"]) == split)
    ]
    return chosen[:limit] if limit is not None else chosen


def session_of(external_id: str) -> str:
    """The haystack session of a message external id ``"<session_id>:<turn index>"``."""
    return external_id.rpartition(":")[0] or external_id


def _results(per_question: list[dict]) -> dict:
    results: dict = {}
    for system in SYSTEMS:
        session: dict = {}
        for metric, fn in METRICS.items():
            rows = [
                {"question_type": q["question_type"], **{k: fn(q["gold"], q["ranked"][system], k) for k in KS}}
                for q in per_question
            ]
            session[metric] = aggregate(rows, KS, "question_type", groups=QUESTION_TYPES)
        results[system] = {"session": session}
    return results


def run_longmemeval(data: str | Path, split: str = "dev", *, limit: int | None = None,
                    retriever_factory: RetrieverFactory | None = None, db_url: str | None = None,
                    provider: str = "offline", progress: ProgressFn | None = None) -> dict:
    """Ingest, derive and rank each non-abstention question of the split in its own namespace.

    One database serves the whole run (a temporary one unless ``db_url``); namespaces keep
    the questions apart and nothing is deleted until the temporary database goes.
    """
    from core.db import db
    from core.ingest import IngestReport, parse, write_units
    from core.ingest.common import load_json
    from core.ingest.longmemeval import parse_lme_date
    from core.services.derive import run_pending
    from core.store import open_store
    from core.timeutil import to_iso

    run_started = time.perf_counter()
    items = load_json(Path(data))
    if not isinstance(items, list):
        raise InvalidInputError(f"{data}: expected the LongMemEval list of questions")
    chosen = select_questions(items, split, limit)
    del items
    scored = [item for item in chosen if not is_abstention(item["question_id"])]
    wanted = {item["question_id"] for item in scored}
    # The whole file is parsed (and so validated) once; only the chosen questions' units stay.
    units = {unit.namespace: unit for unit in parse("longmemeval", data) if unit.namespace in wanted}

    workdir = None
    if db_url is None:
        workdir = tempfile.TemporaryDirectory(prefix="strata-bench-")
        db_url = f"sqlite:///{Path(workdir.name) / 'longmemeval.db'}"
    try:
        open_store(db_url)
        retriever = (retriever_factory or DefaultRetriever)()
        ingest_s = derive_s = 0.0
        messages = jobs = failed = events = 0
        latency_ms: list[float] = []
        baseline_ms: list[float] = []
        per_question: list[dict] = []
        for done, item in enumerate(scored, 1):
            qid = item["question_id"]
            unit = units.pop(qid)
            started = time.perf_counter()
            written = write_units([unit], IngestReport(format="longmemeval", path=str(data)))
            ingest_s += time.perf_counter() - started
            messages += written.messages
            if unit.threads:
                started = time.perf_counter()
                derive = run_pending(qid, provider=provider)
                derive_s += time.perf_counter() - started
                jobs, failed, events = jobs + derive.processed, failed + derive.failed, events + derive.events

            question = str(item.get("question", ""))
            asked_at = to_iso(parse_lme_date(item.get("question_date"), timezone.utc, f"{qid}: question_date"))
            started = time.perf_counter()
            surfaced = retriever.rank(qid, question, question_time=asked_at, limit=MESSAGE_LIMIT)
            latency_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            baseline = Bm25Baseline.for_longmemeval(item).rank(question, limit=DEPTH)
            baseline_ms.append((time.perf_counter() - started) * 1000)

            per_question.append({
                "id": qid,
                "question_type": item.get("question_type", "unknown"),
                "question": question,
                "question_date": item.get("question_date"),
                "gold": dedupe_keep_order(item.get("answer_session_ids", [])),
                "ranked": {
                    "strata": dedupe_keep_order(session_of(e) for e in surfaced)[:DEPTH],
                    "bm25": baseline,
                },
            })
            if progress:
                progress(done, len(scored), qid)

        report = {
            "benchmark": "longmemeval",
            "split": split,
            "provider": provider,
            "commit": git_commit(),
            "retriever": retriever_name(retriever),
            "questions": len(per_question),
            "abstention_skipped": len(chosen) - len(scored),
            "limit": limit,
            "message_limit": MESSAGE_LIMIT,
            "results": _results(per_question),
            "timing": {
                "ingest_s": round(ingest_s, 2),
                "derive_s": round(derive_s, 2),
                "query_p50_ms": round(percentile(latency_ms, 50), 2),
                "query_p95_ms": round(percentile(latency_ms, 95), 2),
                "bm25_query_p50_ms": round(percentile(baseline_ms, 50), 2),
                "bm25_query_p95_ms": round(percentile(baseline_ms, 95), 2),
                "total_s": 0.0,
            },
            "ingest": {"messages": messages},
            "derive": {"jobs": jobs, "failed": failed, "events": events},
            "per_question": per_question,
        }
    finally:
        if workdir is not None:
            if db.obj is not None and not db.is_closed():
                db.close()
            workdir.cleanup()
    report["timing"]["total_s"] = round(time.perf_counter() - run_started, 2)
    return report
