"""Running derivation jobs: summary, then extraction, then the block is ready.

Each job's provider call happens between two short transactions, so a slow or broken
model never holds the write lock and a failure never touches stored memory.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from peewee import fn

from core.db import Prepared, save_one, update_by_id, write_transaction
from core.errors import InvalidInputError, StrataError
from core.layers import derivation_view
from core.models import Block, Event, Job, Message, Namespace, Thread
from core.providers import Provider, get_provider
from core.providers.base import BlockSummary, Extraction, ProviderOutputError
from core.search.index import index_events, prepare_search
from core.services import jobs as jobsvc
from core.services.capture import block_messages
from core.services.events import (
    UNCHANGED_CORRECTIONS,
    LazyTimeline,
    correction_lookup,
    extraction_timeline,
    queue_graph_projection,
    validate_extracted,
    write_event,
)
from core.services.graph_job import run_graph_job
from core.services.preflight import preflight
from core.services.spaces import bump_revision, get_namespace
from core.timeutil import now_iso, parse_timestamp, to_epoch, wall

ProgressFn = Callable[[int, int, str], None]

# The longest we wait for a scheduled retry before giving up on this pass.
MAX_BACKOFF_WAIT = 5.0


@dataclass
class DeriveReport:
    processed: int = 0
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    # Jobs whose last attempt in this run failed: ``failed`` also counts attempts a retry later fixed.
    left_failed: int = 0
    blocks_ready: int = 0
    events: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # Jobs that passing failures put out of attempts at the start of this run and were tried again.
    retried: int = 0
    # Jobs out of attempts on a passing failure at the end: the jobs of their namespace behind them
    # wait, and the next run tries them again.
    stuck: list[int] = field(default_factory=list)
    # A cost preflight blocked the next model request: the job went back to pending, the run stopped.
    blocked: str | None = None
    # Estimated tokens the preflights of this run let through (a model-backed provider only).
    tokens_allowed: int = 0


_THREAD = Prepared(lambda thread_id: Thread.select().where(Thread.id == thread_id))
_BLOCK = Prepared(lambda block_id: Block.select().where(Block.id == block_id))
_LAST_TURN = Prepared(
    lambda block_id: Message.select(fn.MAX(Message.ns_turn)).where(Message.block == block_id).tuples()
)


def _neighbor_query(thread_id, sequence, before: bool):
    query = Block.select().where(
        (Block.thread == thread_id)
        & Block.l2_keypoints.is_null(False)
        & ((Block.sequence < sequence) if before else (Block.sequence > sequence))
    )
    return query.order_by(Block.sequence.desc() if before else Block.sequence).limit(1)


_NEIGHBOR = Prepared(_neighbor_query)


def mark_ready(block: Block) -> None:
    """Give a block its ready position in its thread and reset its decay pointer to L5."""
    thread = _THREAD.get(block.thread_id)
    thread.ready_count += 1
    save_one(thread)
    block.status = "ready"
    block.ready_position = thread.ready_count
    block.pointer_current_level = 5
    block.pointer_anchor_level = 5
    block.pointer_anchor_position = thread.ready_count
    save_one(block)


def _run_summary(job: Job, provider: Provider, report: DeriveReport) -> None:
    view = derivation_view(block_messages(job.block_id))
    summary = BlockSummary.validated(provider.summarize_block(view))
    with write_transaction():
        if not jobsvc.still_claimed(job):
            return
        block = _BLOCK.get(job.block_id)
        block.l0_title = summary.title
        block.l0_tags = list(summary.tags)
        block.l1_summary = summary.summary
        block.l2_keypoints = list(summary.keypoints)
        block.should_extract = summary.should_extract
        save_one(block)
        update_by_id(Job, job.id, dict(status="succeeded", last_error=None, next_retry_at=None, updated_at=now_iso()))
        # Queued even when there is nothing to extract: the extraction job is where a block becomes
        # ready, and blocks become ready in their namespace's order (their decay counts on it).
        jobsvc.create_job(block.namespace_id, "extraction", block.id)
        bump_revision(block.namespace_id)
    report.succeeded += 1


def _neighbor(block: Block, direction: int) -> dict | None:
    """The nearest earlier/later block of the same thread that already has key points."""
    other = _NEIGHBOR.first(block.thread_id, block.sequence, direction < 0)
    if other is None:
        return None
    return {
        "block_id": other.id,
        "sequence": other.sequence,
        "turns": [other.start_turn, other.end_turn],
        "keypoints": list(other.l2_keypoints or []),
    }


def extraction_context(block: Block, *, lazy_timeline: bool = False) -> dict:
    """What the extractor sees: the target's messages, neighbour key points and a bounded timeline
    (read on first use with ``lazy_timeline``, for providers that do not serialise the context)."""
    messages = block_messages(block.id)
    # Found by the block's most distinctive words (its first tags), its summary and key points; the
    # title is a sentence for people and would only repeat the summary's words.
    query = " ".join([" ".join((block.l0_tags or [])[:3]), block.l1_summary or "", " ".join(block.l2_keypoints or [])])
    thread = _THREAD.get(block.thread_id)
    speakers = [m.speaker for m in messages if m.speaker]

    def read() -> list[dict]:
        return extraction_timeline(block.namespace_id, query, exclude_block=block.id)

    def lookup(text: str) -> list[dict]:
        return correction_lookup(block.namespace_id, text, exclude_block=block.id)

    return {
        "target": {
            "id": block.id,
            "sequence": block.sequence,
            "thread": thread.name,
            "turns": [block.start_turn, block.end_turn],
            "created_at": block.created_at,
            "messages": derivation_view(messages),
        },
        "neighbors": {"previous": _neighbor(block, -1), "next": _neighbor(block, 1)},
        "allowed_source_message_ids": [m.id for m in messages],
        "speakers": list(dict.fromkeys(speakers)),
        "timeline": LazyTimeline(read, lookup) if lazy_timeline else read(),
        # Statements said after this block are already stored (threads imported one after another are
        # derived out of time order): a later correction may end one of this block's statements.
        "later_stored": _later_stored(block.namespace_id, messages),
    }


def _later_stored(namespace_id: int, messages: Sequence[Any]) -> bool:
    said = []
    for m in messages:
        try:
            said.append(to_epoch(parse_timestamp(m.created_at)))
        except InvalidInputError:
            continue
    if not said:
        return False
    newest = Event.select(fn.MAX(Event.mentioned_ts)).where(Event.namespace == namespace_id).scalar()
    return newest is not None and newest > max(said)


def _run_extraction(job: Job, provider: Provider, report: DeriveReport) -> None:
    block = _BLOCK.get(job.block_id)
    if block.should_extract is False:
        with write_transaction():
            if not jobsvc.still_claimed(job):
                return
            update_by_id(Job, job.id, dict(status="skipped", last_error=None, next_retry_at=None, updated_at=now_iso()))
            mark_ready(block)
            bump_revision(block.namespace_id)
        report.blocks_ready += 1
        report.skipped += 1
        return
    context = extraction_context(block, lazy_timeline=getattr(provider, "reads_context_lazily", False))
    result = Extraction.validated(provider.extract_events(copy.deepcopy(context)))
    drafts, warnings = validate_extracted(
        result.events,
        allowed_message_ids=context["allowed_source_message_ids"],
        timeline_ids=(item["id"] for item in context["timeline"]),
    )
    if result.should_extract and not drafts:
        detail = f" ({'; '.join(warnings[:3])})" if warnings else ""
        raise ProviderOutputError(f"extractor said shouldExtract but returned no valid events{detail}")
    created_at = {m["id"]: m.get("created_at") for m in context["target"]["messages"]}
    formed_turn = _LAST_TURN.rows(block.id)[0][0] or 0
    with write_transaction():
        if not jobsvc.still_claimed(job):
            return
        events = []
        unchanged: list[dict[str, Any]] = []
        for draft in drafts:
            note = draft.pop("correction_unchanged", None)
            earlier = [events[i].id for i in draft.pop("supersedes_earlier", [])]  # drafts written before this one
            if earlier:
                draft["relations"]["supersedes"] = list(
                    dict.fromkeys(draft["relations"].get("supersedes", []) + earlier)
                )
            restated = [events[i].id for i in draft.pop("restates_earlier", [])]
            if restated:
                draft["relations"]["same_event"] = list(
                    dict.fromkeys(draft["relations"].get("same_event", []) + restated)
                )
            latest = max((created_at.get(i) or "" for i in draft["source_message_ids"]), default=None)
            events.append(
                write_event(
                    block.namespace_id,
                    draft,
                    block=block,
                    formed_turn=formed_turn,
                    mentioned_fallback=latest or block.created_at,
                    index=False,
                )
            )
            if note:
                unchanged.append({"event": events[-1].id, **note})
        index_events(block.namespace_id, events)
        event_ids = [event.id for event in events]
        status = "succeeded" if event_ids else "skipped"
        payload = {"events": len(event_ids), "warnings": warnings[:20]} if warnings or event_ids else None
        if unchanged:
            payload = {**(payload or {}), UNCHANGED_CORRECTIONS: unchanged[:20]}
        update_by_id(
            Job, job.id, dict(status=status, last_error=None, next_retry_at=None, payload=payload, updated_at=now_iso())
        )
        if event_ids:
            queue_graph_projection(block.namespace_id, event_ids)
        mark_ready(_BLOCK.get(block.id))
        bump_revision(block.namespace_id)
    report.blocks_ready += 1
    report.events += len(event_ids)
    if status == "skipped":
        report.skipped += 1
    else:
        report.succeeded += 1


def _run_import_graph(job: Job, provider: Provider, report: DeriveReport) -> None:
    # start-up time: core.api loads this module; the import pipeline (~8 ms) only when an import is derived
    from core.services.import_commit import run_import_graph_job

    run_import_graph_job(job, provider, report)


HANDLERS = {
    "summary": _run_summary,
    "extraction": _run_extraction,
    "graph": run_graph_job,
    "import_graph": _run_import_graph,
}


# How often a run that waits for another worker's job looks again.
WAIT_POLL = 0.05


def is_transient(exc: BaseException) -> bool:
    """A failure that passes by itself (network, timeout, rate limit, 5xx): the next run tries the
    job again. A provider's wrong output or a validation error fails the same way every time."""
    return bool(getattr(exc, "retryable", False)) or isinstance(exc, (TimeoutError, ConnectionError))


REQUEST_OVERHEAD = 900  # instructions, schema and context around a block's text, estimated
GRAPH_REQUEST = 3000  # a graph projection's events and current state, estimated


def estimate_job_tokens(job: Job) -> int:
    """What a model request for ``job`` is estimated to cost in tokens (input, before it is made)."""
    if job.block_id is not None:
        block = Block.get_or_none(Block.id == job.block_id)
        if block is not None:
            return (block.tokens_l5 or 0) + REQUEST_OVERHEAD
    return GRAPH_REQUEST


def run_pending(
    namespace: str | None = None,
    *,
    provider: Provider | str | None = None,
    progress: ProgressFn | None = None,
    wait_for_retries: bool = True,
    max_jobs: int | None = None,
    kinds: Sequence[str] | None = None,
    retry_transient: bool = True,
) -> DeriveReport:
    """Run due jobs until none is left (waiting out short retry backoffs, and for other workers
    whose jobs hold back this namespace's next one: see ``core.services.jobs``).

    ``kinds`` limits the run to some job kinds (the others stay pending for a later run).
    ``retry_transient`` first gives jobs that ran out of attempts on a passing failure (an outage,
    a killed process) their attempts back.
    """
    started = time.monotonic()
    unknown = sorted(set(kinds or ()) - set(HANDLERS))
    if unknown:
        raise InvalidInputError(f"unknown job kind(s) {', '.join(unknown)}; known: {', '.join(HANDLERS)}")
    wanted = tuple(kinds) if kinds else tuple(HANDLERS)
    prov = provider if provider is not None and not isinstance(provider, str) else get_provider(provider)
    ns_id = get_namespace(namespace).id if namespace else None
    report = DeriveReport()
    if retry_transient:
        report.retried = jobsvc.retry_transient(ns_id, wanted)
    total = jobsvc.claimable_count(ns_id, wanted)
    summarized: set[int] = set()  # namespaces with new blocks, hence new messages
    failing: set[int] = set()
    scope = jobsvc.namespaces_with_work(ns_id, wanted)
    while max_jobs is None or report.processed < max_jobs:
        asked = set(scope)
        job = jobsvc.claim_next(ns_id, kinds=wanted, namespaces=scope)  # drops namespaces with nothing left
        if job is None:
            scope = jobsvc.namespaces_with_work(ns_id, wanted)
            if set(scope) - asked:  # work in a namespace this claim did not look at
                continue
            state = jobsvc.waiting(ns_id, wanted)
            if state.running:  # another worker's job holds ours back, or will queue more
                time.sleep(WAIT_POLL)
                continue
            due = state.next_due if wait_for_retries else None
            if due is not None and due - wall() <= MAX_BACKOFF_WAIT:
                time.sleep(max(0.0, due - wall()) + 0.01)
                continue
            report.stuck = [row.id for row in state.stuck]
            break
        handler = HANDLERS[job.kind]
        if getattr(prov, "model_backed", False):
            check = preflight(
                Namespace.get_by_id(job.namespace_id).name,
                estimate_job_tokens(job),
                purpose=f"{job.kind} job {job.id}",
                session_spent=report.tokens_allowed,
            )
            if check.decision == "block":
                jobsvc.release(job)
                report.blocked = f"job {job.id} ({job.kind}) not sent to the model: {check.reason}"
                break
            report.tokens_allowed += check.allowed
        if job.kind == "summary":
            summarized.add(job.namespace_id)
        try:
            handler(job, prov, report)
            failing.discard(job.id)
        except Exception as exc:  # any provider or validation failure fails the job, never the store
            message = f"{type(exc).__name__}: {exc}" if not isinstance(exc, StrataError) else str(exc)
            jobsvc.fail(job, message, transient=is_transient(exc))
            report.failed += 1
            failing.add(job.id)
            where = f", block {job.block_id}" if job.block_id else ""
            report.errors.append(f"job {job.id} ({job.kind}{where}): {message}")
        report.processed += 1
        if report.processed >= total:
            # Summaries queue extraction jobs as they go; recount only when the estimate runs out.
            total = report.processed + jobsvc.claimable_count(ns_id, wanted)
        if progress:
            progress(report.processed, total, job.kind)
    if summarized:
        # New blocks mean new messages; searching them first would otherwise read all their postings
        # from SQL (35 s and 1.2 GB at a million bulk-captured messages). Here, in the background
        # pass, each pass adds only what it captured since the last.
        if progress:
            progress(report.processed, total, "search index")
        try:
            prepare_search(sorted(summarized))
        except OSError as exc:  # the saved copy is a cache: the derived memory is stored either way
            report.errors.append(f"search index not saved: {exc}")
    report.left_failed = len(failing)
    report.seconds = time.monotonic() - started
    return report
