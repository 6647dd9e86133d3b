"""LongMemEval_S session retrieval (benchmarks.md §2): per question, a fresh namespace holding
its haystack, Strata's session ranking against ``answer_session_ids``, next to a rank-bm25
baseline over one document per session from the same run."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import tempfile
import time
from datetime import timezone
from pathlib import Path
from typing import Callable

from core.api import open_store
from core.bench import git_commit
from core.bench.metrics import aggregate, dedupe_keep_order, ndcg_any_at_k, percentile, recall_all_at_k, recall_any_at_k
from core.bench.retrieval import Bm25Baseline, DefaultRetriever, RetrieverFactory, retriever_name
from core.db import db
from core.errors import InvalidInputError
from core.ingest import IngestReport, parse, write_units
from core.ingest.common import load_json
from core.ingest.longmemeval import parse_lme_date
from core.services.derive import run_pending
from core.timeutil import to_iso

ProgressFn = Callable[[int, int, str], None]

KS = (1, 3, 5, 10, 30, 50)
DEPTH = 50  # ranked sessions kept per question and system
# Messages asked of the system per question. A haystack holds about 490 turns in about 48
# sessions; the session ranking needs enough messages to reach DEPTH sessions.
MESSAGE_LIMIT = 500
SYSTEMS = ("strata", "bm25")
# Which derivation stages a question runs. Default retrieval reads turns and event cards,
# never the graph, so "retrieval" leaves graph projection pending: it changes no ranking and
# was about a third of the run. "all" derives everything, as a deployment would.
DERIVE_STAGES = {"retrieval": ("summary", "extraction"), "all": None}
QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
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
        item
        for item in items
        if isinstance(item, dict)
        and isinstance(item.get("question_id"), str)
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


def _question(item: dict, unit, retriever, provider: str, data: str, derive: str = "retrieval") -> tuple[dict, dict]:
    """Ingest, derive and rank one question in its own namespace; (per-question row, costs)."""

    qid = item["question_id"]
    costs = {
        "ingest_s": 0.0,
        "derive_s": 0.0,
        "messages": 0,
        "jobs": 0,
        "failed": 0,
        "events": 0,
        "latency_ms": 0.0,
        "baseline_ms": 0.0,
    }
    started = time.perf_counter()
    written = write_units([unit], IngestReport(format="longmemeval", path=data))
    costs["ingest_s"] = time.perf_counter() - started
    costs["messages"] = written.messages
    if unit.threads:
        started = time.perf_counter()
        done = run_pending(qid, provider=provider, kinds=DERIVE_STAGES[derive])
        costs["derive_s"] = time.perf_counter() - started
        costs.update(jobs=done.processed, failed=done.failed, events=done.events)
    question = str(item.get("question", ""))
    asked_at = to_iso(parse_lme_date(item.get("question_date"), timezone.utc, f"{qid}: question_date"))
    started = time.perf_counter()
    surfaced = retriever.rank(qid, question, question_time=asked_at, limit=MESSAGE_LIMIT)
    costs["latency_ms"] = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    baseline = Bm25Baseline.for_longmemeval(item).rank(question, limit=DEPTH)
    costs["baseline_ms"] = (time.perf_counter() - started) * 1000
    row = {
        "id": qid,
        "question_type": item.get("question_type", "unknown"),
        "question": question,
        "question_date": item.get("question_date"),
        "gold": dedupe_keep_order(item.get("answer_session_ids", [])),
        "ranked": {
            "strata": dedupe_keep_order(session_of(e) for e in surfaced)[:DEPTH],
            "bm25": baseline,
        },
    }
    return row, costs


# State of one worker process: its own database and the units it was handed.
_WORKER: dict = {}


def _worker_init(data: str, wanted: list[str], db_dir: str, provider: str, derive: str) -> None:

    _WORKER["units"] = {u.namespace: u for u in parse("longmemeval", data) if u.namespace in set(wanted)}
    _WORKER["data"], _WORKER["provider"], _WORKER["derive"] = data, provider, derive
    open_store(f"sqlite:///{Path(db_dir) / f'worker-{os.getpid()}.db'}")
    _WORKER["retriever"] = DefaultRetriever()


def _worker_run(item: dict) -> tuple[dict, dict]:
    unit = _WORKER["units"].pop(item["question_id"])
    return _question(item, unit, _WORKER["retriever"], _WORKER["provider"], _WORKER["data"], _WORKER["derive"])


def run_longmemeval(
    data: str | Path,
    split: str = "dev",
    *,
    limit: int | None = None,
    retriever_factory: RetrieverFactory | None = None,
    db_url: str | None = None,
    provider: str = "offline",
    progress: ProgressFn | None = None,
    workers: int = 1,
    derive: str = "retrieval",
) -> dict:
    """Ingest, derive and rank each non-abstention question of the split in its own namespace.

    With ``workers`` > 1 the questions are spread over that many processes, each with its
    own temporary database (questions are independent, so results are identical; only the
    wall time changes). One process uses one database (a temporary one unless ``db_url``).
    ``derive`` picks the stages run per question (DERIVE_STAGES).
    """

    if derive not in DERIVE_STAGES:
        raise InvalidInputError(f"--derive must be one of {', '.join(DERIVE_STAGES)}, got {derive!r}")
    if workers > 1 and db_url is not None:
        raise InvalidInputError(
            f"--workers {workers} gives each worker its own temporary database, so it cannot be "
            "combined with --db: pass --workers 1 (the default with --db), or drop --db"
        )
    if workers > 1 and retriever_factory is not None:
        raise InvalidInputError("workers > 1 run the default retriever only")
    run_started = time.perf_counter()
    commit = git_commit()  # the code that runs, even if the checkout moves during a long run
    items = load_json(Path(data))
    if not isinstance(items, list):
        raise InvalidInputError(f"{data}: expected the LongMemEval list of questions")
    chosen = select_questions(items, split, limit)
    del items
    scored = [item for item in chosen if not is_abstention(item["question_id"])]
    wanted = {item["question_id"] for item in scored}

    results: list[tuple[dict, dict]] = []
    workdir = tempfile.TemporaryDirectory(prefix="strata-bench-") if db_url is None else None
    retriever = None
    try:
        if workers > 1:
            context = multiprocessing.get_context("spawn")
            with context.Pool(
                workers, _worker_init, (str(data), sorted(wanted), workdir.name, provider, derive)
            ) as pool:
                for done, result in enumerate(pool.imap(_worker_run, scored), 1):
                    results.append(result)
                    if progress:
                        progress(done, len(scored), result[0]["id"])
        else:
            # The whole file is parsed (and so validated) once; only the chosen questions' units stay.
            units = {unit.namespace: unit for unit in parse("longmemeval", data) if unit.namespace in wanted}
            open_store(db_url or f"sqlite:///{Path(workdir.name) / 'longmemeval.db'}")
            retriever = (retriever_factory or DefaultRetriever)()
            for done, item in enumerate(scored, 1):
                results.append(_question(item, units.pop(item["question_id"]), retriever, provider, str(data), derive))
                if progress:
                    progress(done, len(scored), item["question_id"])
    finally:
        if workdir is not None:
            if db.obj is not None and not db.is_closed():
                db.close()
            workdir.cleanup()
    per_question = [row for row, _ in results]
    costs = [c for _, c in results]
    total = lambda key: sum(c[key] for c in costs)  # noqa: E731
    report = {
        "benchmark": "longmemeval",
        "split": split,
        "provider": provider,
        "commit": commit,
        "retriever": retriever_name(retriever) if retriever is not None else "default_retrieval",
        "questions": len(per_question),
        "abstention_skipped": len(chosen) - len(scored),
        "limit": limit,
        "workers": workers,
        "derive_stages": list(DERIVE_STAGES[derive] or ("summary", "extraction", "graph")),
        "message_limit": MESSAGE_LIMIT,
        "results": _results(per_question),
        "timing": {
            "ingest_s": round(total("ingest_s"), 2),
            "derive_s": round(total("derive_s"), 2),
            "query_p50_ms": round(percentile([c["latency_ms"] for c in costs], 50), 2),
            "query_p95_ms": round(percentile([c["latency_ms"] for c in costs], 95), 2),
            "bm25_query_p50_ms": round(percentile([c["baseline_ms"] for c in costs], 50), 2),
            "bm25_query_p95_ms": round(percentile([c["baseline_ms"] for c in costs], 95), 2),
            "total_s": round(time.perf_counter() - run_started, 2),
        },
        "ingest": {"messages": total("messages")},
        "derive": {"jobs": total("jobs"), "failed": total("failed"), "events": total("events")},
        "per_question": per_question,
    }
    return report
