"""Scale (benchmarks.md §3): how ingest, derivation, storage and search grow with the corpus.

For each size N a fresh process builds a database of N synthetic messages (core.bench.synthetic)
through the capture API in session batches, deriving with ``run_pending(provider="offline")``
after every chunk, so peak memory of one size never carries into the next. A second fresh
process opens that database cold and times each search channel over the same Q questions;
a third builds the rank-bm25 baseline (BM25Okapi over the same messages) and times it on
the same questions. Peaks are the processes' ``ru_maxrss``.

Run ``python -m core.bench.scale build|query|baseline …`` to get one phase; the parent
(``run_scale``) talks to its children through JSON lines on their stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from rank_bm25 import BM25Okapi

from core.api import open_store
from core.bench import git_commit
from core.bench.metrics import percentile
from core.bench.retrieval import baseline_tokens
from core.bench.synthetic import conversation, queries, thread_names
from core.db import db
from core.models import Block, Event, GraphNode
from core.search.index import message_text
from core.search.segment import forget_views
from core.services.capture import append_messages, close_thread
from core.services.derive import run_pending
from core.services.retrieval import default_retrieval
from core.services.search import search_events, search_graph, search_raw

if TYPE_CHECKING:
    from core.providers import Provider

ProgressFn = Callable[[int, int, str], None]

NAMESPACE = "scale"
CHANNELS = ("search_events", "search_raw", "search_graph", "default_retrieval")
DERIVE_EVERY = 20_000  # messages ingested between two derivation passes
WARMUP = 3  # questions asked once before timing (caches, page cache)
UI_TIMEOUT = 900  # seconds the workbench measurement may take on one size
UI_NOTE = (
    "workbench.bench_ui.measure on the same database in a fresh process: first paint of the first view, "
    "and the slowest screen switch (cold or warm)"
)


def emit(kind: str, value) -> None:
    sys.stdout.write(json.dumps({kind: value}) + "\n")
    sys.stdout.flush()


def report_progress(done: int, total: int, label: str) -> None:
    emit("progress", [done, total, label])


def peak_rss_bytes() -> int:
    """This process's peak resident set (Linux reports ru_maxrss in KiB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def database_bytes(path: Path) -> int:
    """The SQLite file plus its WAL and whatever search cache lives beside it."""
    total = 0
    for candidate in path.parent.iterdir():
        if candidate.name.startswith(path.name):
            total += (
                candidate.stat().st_size
                if candidate.is_file()
                else sum(f.stat().st_size for f in candidate.rglob("*") if f.is_file())
            )
    return total


# ----------------------------------------------------------------------------- phase 1: build


def throughput(n: int, ingest_s: float, derived: int, derive_s: float) -> dict:
    """Messages per second for ingest, for derivation (of the messages derived) and for both.

    The combined rate is 1 / (1/ingest + 1/derive): exact when every message was derived, and a
    projection from the derived share when only a subset was (``derivation_subset``)."""
    ingest = n / ingest_s if ingest_s else None
    derive = derived / derive_s if derive_s and derived else None
    both = 1 / (1 / ingest + 1 / derive) if ingest and derive else None
    return {
        "ingest_only_msgs_per_s": round(ingest, 1) if ingest else None,
        "derive_only_msgs_per_s": round(derive, 1) if derive else None,
        "ingest_msgs_per_s": round(both, 1) if both else None,
    }


def remove_database(path: Path) -> None:
    """A bench database and what lies beside it (WAL, shared memory, saved search segments)."""

    for stale in path.parent.glob(f"{path.name}*"):
        if stale.is_dir():
            shutil.rmtree(stale)
        else:
            stale.unlink()


def build(
    n: int,
    path: Path,
    *,
    seed: int = 7,
    derive_limit: int | None = None,
    progress: ProgressFn = report_progress,
    provider: "Provider | str" = "offline",
) -> dict:
    """Ingest N synthetic messages into a new database and derive them (offline provider, or
    ``provider``: the derive-floor bench passes one that records or replays the offline one).

    ``derive_limit`` derives only the first that many messages' blocks (a flagged shortcut for
    sizes whose full derivation would take too long); None derives everything.
    """

    if path.exists():
        raise FileExistsError(path)
    commit = git_commit()  # the code that builds, even if the checkout moves during a long build
    open_store(f"sqlite:///{path}")
    ingest_s = derive_s = 0.0
    done = since_derive = 0
    blocks = events = failed = 0

    def derive() -> None:
        nonlocal derive_s, events, failed
        started = time.perf_counter()
        report = run_pending(NAMESPACE, provider=provider)
        derive_s += time.perf_counter() - started
        events += report.events
        failed += report.failed

    deriving = True
    for thread, messages in conversation(n, seed):
        started = time.perf_counter()
        result = append_messages(NAMESPACE, thread, messages)
        ingest_s += time.perf_counter() - started
        blocks += len(result.sealed_block_ids)
        done += len(messages)
        since_derive += len(messages)
        if deriving and derive_limit is not None and done > derive_limit:
            deriving = False
            derive()
        if deriving and since_derive >= DERIVE_EVERY:
            since_derive = 0
            derive()
        progress(done, n, "ingest + derive")
    started = time.perf_counter()
    for thread in thread_names(n):
        try:
            blocks += len(close_thread(NAMESPACE, thread))
        except Exception:  # a thread the generator never used
            continue
    ingest_s += time.perf_counter() - started
    if deriving:
        derive()

    counts = {
        "blocks": Block.select().count(),
        "blocks_ready": Block.select().where(Block.status == "ready").count(),
        "events": Event.select().count(),
        "graph_nodes": GraphNode.select().count(),
    }
    db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    derived = n if derive_limit is None else min(n, done if deriving else derive_limit)
    return {
        "messages": n,
        "ingest_s": round(ingest_s, 2),
        "derive_s": round(derive_s, 2),
        **throughput(n, ingest_s, derived, derive_s),
        "derived_messages": derived,
        "derive_failures": failed,
        **counts,
        "build_peak_rss_bytes": peak_rss_bytes(),
        "built_at_commit": commit,  # a reused database keeps the commit it was built with
    }


# ----------------------------------------------------------------------------- phase 2: Strata queries


def _channel_calls() -> dict[str, Callable[[str], object]]:

    return {
        "search_events": lambda q: search_events(NAMESPACE, q),
        "search_raw": lambda q: search_raw(NAMESPACE, q),
        "search_graph": lambda q: search_graph(NAMESPACE, q),
        "default_retrieval": lambda q: default_retrieval(NAMESPACE, q, limit=50),
    }


def summary_ms(samples: list[float]) -> dict:
    return {
        "p50": round(percentile(samples, 50), 3),
        "p95": round(percentile(samples, 95), 3),
        "mean": round(sum(samples) / len(samples), 3) if samples else 0.0,
    }


def measure(path: Path, questions: list[str], *, progress: ProgressFn = report_progress) -> dict:
    """Open the database cold and time every channel on every question (after a warm-up)."""

    started = time.perf_counter()
    open_store(f"sqlite:///{path}")
    open_ms = (time.perf_counter() - started) * 1000
    calls = _channel_calls()
    cold_ms: dict[str, float] = {}
    latency: dict[str, list[float]] = {c: [] for c in CHANNELS}
    hits: dict[str, int] = {c: 0 for c in CHANNELS}
    total = len(CHANNELS) * (WARMUP + len(questions))
    done = 0
    for channel in CHANNELS:
        call = calls[channel]
        for i, question in enumerate(questions[:WARMUP]):
            started = time.perf_counter()
            call(question)
            if i == 0:
                cold_ms[channel] = round((time.perf_counter() - started) * 1000, 3)
            done += 1
            progress(done, total, f"warm-up {channel}")
        for question in questions:
            started = time.perf_counter()
            result = call(question)
            latency[channel].append((time.perf_counter() - started) * 1000)
            hits[channel] += bool(result)
            done += 1
            progress(done, total, channel)
    return {
        "open_ms": round(open_ms, 3),
        "cold_first_query_ms": cold_ms,
        "latency_ms": {c: summary_ms(latency[c]) for c in CHANNELS},
        "answered": hits,
        "after_capture_ms": _first_and_summary(after_capture(questions[:CAPTURES])),
        "query_peak_rss_bytes": peak_rss_bytes(),
    }


# Capture-then-recall rounds timed after the channels: as many as the channels' queries, so the p95
# is a p95; over 10 it was the slowest round, the process's first capture (which gives the doc
# columns of a view loaded from disk room to grow: a one-time copy, ~8 ms at 1M). It is kept apart.
CAPTURES = 50


def _first_and_summary(samples: list[float]) -> dict:
    return {**summary_ms(samples), "first": round(samples[0], 3) if samples else 0.0}


def after_capture(questions: list[str]) -> list[float]:
    """ms of the default retrieval that follows each captured turn (an agent's loop: store the turn,
    recall for the next one), which must bring the search segment up to date with the new message.

    The turns go to a thread of their own inside one transaction that is rolled back, so the
    database measured stays as it was built (a ``--reuse`` run measures the same corpus)."""

    samples = []
    with db.atomic() as transaction:
        for i, question in enumerate(questions):
            append_messages(NAMESPACE, "bench-capture", [{"role": "user", "content": f"{question} (turn {i})"}])
            started = time.perf_counter()
            default_retrieval(NAMESPACE, question, limit=50)
            samples.append((time.perf_counter() - started) * 1000)
        transaction.rollback()
    forget_views()  # the cached views saw the rolled-back turns
    return samples


# ----------------------------------------------------------------------------- phase 3: baseline


def baseline(path: Path, questions: list[str], *, progress: ProgressFn = report_progress) -> dict:
    """rank_bm25.BM25Okapi over the same messages (as the raw index sees them), top 10 per question."""

    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    corpus = []
    rows = connection.execute("SELECT speaker, content, tool_calls FROM message ORDER BY id")
    for speaker, content, tool_calls in rows:
        calls = json.loads(tool_calls) if tool_calls else None
        corpus.append(baseline_tokens(message_text(speaker, content, calls)))
    connection.close()
    progress(0, len(questions), "baseline index")
    started = time.perf_counter()
    index = BM25Okapi(corpus)
    build_s = time.perf_counter() - started
    del corpus
    latency = []
    for done, question in enumerate(questions, 1):
        started = time.perf_counter()
        scores = index.get_scores(baseline_tokens(question))
        top = np.argpartition(-scores, 10)[:10]
        top[np.argsort(-scores[top], kind="stable")]
        latency.append((time.perf_counter() - started) * 1000)
        progress(done, len(questions), "baseline")
    return {
        "baseline_latency_ms": summary_ms(latency),
        "baseline_build_s": round(build_s, 2),
        "baseline_peak_rss_bytes": peak_rss_bytes(),
    }


# ----------------------------------------------------------------------------- phase 4: the workbench
# Measured by workbench.bench_scale_ui in its own process (core never imports the UI).


# ----------------------------------------------------------------------------- the parent


def _child(
    args: list[str],
    progress: ProgressFn | None,
    label: str,
    timeout: float | None = None,
    module: str = "core.bench.scale",
) -> dict:
    """Run one phase in a fresh interpreter, relaying its progress; return its result.

    With ``timeout`` (seconds) a phase still running then is stopped and counts as failed."""

    command = [sys.executable, "-m", module, *args]
    env = dict(os.environ, PYTHONHASHSEED="0")
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env=env, cwd=Path(__file__).resolve().parents[2]
    )
    timer = threading.Timer(timeout, process.kill) if timeout else None
    if timer:
        timer.start()
    result = None
    assert process.stdout is not None
    for line in process.stdout:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if "progress" in item and progress:
            done, total, what = item["progress"]
            progress(done, total, f"{label}: {what}")
        elif "result" in item:
            result = item["result"]
    if timer:
        timer.cancel()
    if process.wait() != 0 or result is None:
        raise RuntimeError(f"scale benchmark phase {' '.join(args[:3])} failed (exit {process.returncode})")
    return result


def _ratio(new: float | None, old: float | None) -> float | None:
    return round(new / old, 2) if new is not None and old else None


def run_scale(
    sizes: list[int],
    queries: int = 50,
    *,
    workdir: Path,
    seed: int = 7,
    derive_limit: int | None = None,
    reuse: bool = False,
    skip_baseline: bool = False,
    skip_ui: bool = False,
    progress: ProgressFn | None = None,
) -> dict:
    """Build, measure and compare every size; each phase in its own process.

    Each phase's process imports the checkout as it is when the phase starts: keep it still
    during a run (the report's commit is the one the run started from)."""
    commit = git_commit()
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    previous: dict | None = None
    for n in sizes:
        path = workdir / f"scale-{n}.db"
        marker = workdir / f"scale-{n}.build.json"
        limit = derive_limit if derive_limit is not None and derive_limit < n else None
        if reuse and marker.exists() and path.exists():
            built = json.loads(marker.read_text())
        else:
            remove_database(path)
            args = ["build", "--messages", str(n), "--db", str(path), "--seed", str(seed)]
            if limit is not None:
                args += ["--derive-limit", str(limit)]
            built = _child(args, progress, f"{n:,} build")
            marker.write_text(json.dumps(built, indent=2))
        query_args = ["--db", str(path), "--queries", str(queries), "--seed", str(seed)]
        measured = _child(["query", *query_args], progress, f"{n:,} query")
        base = {} if skip_baseline else _child(["baseline", *query_args], progress, f"{n:,} baseline")
        try:
            ui = (
                {}
                if skip_ui
                else _child(
                    ["--db", str(path)], progress, f"{n:,} workbench", UI_TIMEOUT, module="workbench.bench_scale_ui"
                )
            )
        except RuntimeError:
            ui = {"ui_error": f"the workbench measurement failed or took over {UI_TIMEOUT} s (see stderr)"}
        row = {
            **built,
            "db_bytes": database_bytes(path),
            "peak_rss_bytes": max(built["build_peak_rss_bytes"], measured["query_peak_rss_bytes"]),
            **measured,
            "baseline_latency_ms": base.get("baseline_latency_ms"),
            "baseline_build_s": base.get("baseline_build_s"),
            "baseline_peak_rss_bytes": base.get("baseline_peak_rss_bytes"),
            "ui_first_paint_ms": ui.get("ui_first_paint_ms"),
            "ui_switch_ms": ui.get("ui_switch_ms"),
            "ui_filter_ms": ui.get("ui_filter_ms"),
            "ui_switch_detail_ms": ui.get("ui_switch_detail_ms"),
            **({"ui_error": ui["ui_error"]} if "ui_error" in ui else {}),
            "derivation_subset": built["derived_messages"] < built["messages"],
        }
        bl = row["baseline_latency_ms"]
        row["speedup_vs_baseline_p95"] = {
            c: _ratio(bl["p95"], row["latency_ms"][c]["p95"]) if bl else None for c in CHANNELS
        }
        if previous is not None:
            row["growth_from_previous"] = {
                "from": previous["messages"],
                "latency_p95": {
                    c: _ratio(row["latency_ms"][c]["p95"], previous["latency_ms"][c]["p95"]) for c in CHANNELS
                },
                "baseline_p95": _ratio(bl["p95"] if bl else None, (previous["baseline_latency_ms"] or {}).get("p95")),
            }
        results[str(n)] = row
        previous = row
    return {
        "benchmark": "scale",
        "provider": "offline",
        "commit": commit,
        "seed": seed,
        "queries": queries,
        "sizes": sizes,
        "machine": {"cores": os.cpu_count(), "memory_bytes": _memory_bytes()},
        "ui_note": UI_NOTE,
        "results": results,
    }


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.bench.scale")
    parser.add_argument("phase", choices=["build", "query", "baseline"])
    parser.add_argument("--db", required=True, type=Path)
    parser.add_argument("--messages", type=int)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--derive-limit", type=int, default=None)
    args = parser.parse_args(argv)

    if args.phase == "build":
        result = build(args.messages, args.db, seed=args.seed, derive_limit=args.derive_limit)
    elif args.phase == "query":
        result = measure(args.db, queries(args.queries, args.seed))
    else:
        result = baseline(args.db, queries(args.queries, args.seed))
    emit("result", result)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
