"""Derivation jobs: claiming, failing with backoff, recovery and manual retry.

A job is claimed in one short write transaction (running, attempts + 1, the claiming
process as ``host:pid``), its model call runs outside any transaction, and its result is
committed in another. A process killed in between leaves the job ``running``; the next open
turns it into a retryable failure — but only once the claimant is gone: any command run while
another process derives (``strata stats`` beside ``strata derive``) leaves its jobs alone.

Which job may run next is fixed, so that one run, several concurrent runs, a run killed and
resumed and ``strata derive --workers N`` all derive the same memory. Summaries depend only on
their block and run in any order. A namespace's extractions run in block order: a block is
extracted only once every earlier block of its namespace is ready (or failed for good) and the
next block of its thread has its key points, since its context reads both. Graph jobs (which
read every event and end one-value facts in the order they see them) run one at a time in job
order, once no block of the namespace waits for extraction. A job that failed and is retried
keeps its place: the jobs behind it wait for it.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass

from peewee import Case, fn

from core.db import LIST_MAX, Prepared, clamp, insert_one, is_row_id, update_by_id, write_transaction
from core.errors import InvalidInputError, NotFoundError, StoreUnavailableError
from core.models import Block, Job, Namespace
from core.redact import redact_text
from core.services.spaces import get_namespace, validate_name
from core.timeutil import now_iso, wall

MAX_ATTEMPTS = 3
STATUSES = ("pending", "running", "succeeded", "failed", "skipped")
# A claim older than this is abandoned even when its process cannot be checked (another host,
# Windows) or still runs: no model call with its retries takes an hour.
STALE_CLAIM_SECONDS = 3600.0


@dataclass(frozen=True)
class JobRow:
    id: int
    namespace: str
    kind: str
    block_id: int | None
    status: str
    attempts: int
    priority: int
    last_error: str | None
    next_retry_at: float | None
    created_at: str
    updated_at: str
    transient: bool = False  # the last failure passes by itself: the next run tries it again


def backoff_seconds(attempts: int) -> float:
    """Delay before the next try after ``attempts`` failed tries: 1 s, then 2 s."""
    return 1.0 * 2 ** max(0, attempts - 1)


def job_row(job: Job) -> JobRow:
    return JobRow(
        id=job.id,
        namespace=job.namespace.name,
        kind=job.kind,
        block_id=job.block_id,
        status=job.status,
        attempts=job.attempts,
        priority=job.priority,
        last_error=job.last_error,
        next_retry_at=job.next_retry_at,
        created_at=job.created_at,
        updated_at=job.updated_at,
        transient=bool(job.transient),
    )


# Jobs of these kinds touch a block: failing one for good marks the block failed.
BLOCK_KINDS = ("summary", "extraction")
# One chain per namespace, run one job at a time in (priority desc, id) order.
GRAPH_KINDS = ("graph", "import_graph")
ALL_KINDS = ("summary", "extraction", *GRAPH_KINDS)


def _retryable():
    """SQL: a job not out of attempts, or out of them on a passing failure (the next run retries it)."""
    return (Job.attempts < MAX_ATTEMPTS) | (Job.transient == True)  # noqa: E712 - SQL, not Python


def _stuck():
    """SQL: failed, out of attempts, on a passing failure: waits for the next run."""
    return (Job.status == "failed") & (Job.attempts >= MAX_ATTEMPTS) & (Job.transient == True)  # noqa: E712


def failed_for_good():
    """SQL: failed, out of attempts, on a failure that does not pass by itself (``is_dead``)."""
    # Spelled out rather than NOT _retryable(): a job failed before schema 20 has no transient
    # flag, and NOT over a NULL comparison is NULL, which would leave it out.
    not_passing = (Job.transient == False) | Job.transient.is_null()  # noqa: E712
    return (Job.status == "failed") & (Job.attempts >= MAX_ATTEMPTS) & not_passing


def _claimable(now: float):
    return (Job.attempts < MAX_ATTEMPTS) & (
        (Job.status == "pending") | ((Job.status == "failed") & (Job.next_retry_at <= now))
    )


def is_due(job: Job, now: float) -> bool:
    return job.attempts < MAX_ATTEMPTS and (
        job.status == "pending"
        or (job.status == "failed" and job.next_retry_at is not None and job.next_retry_at <= now)
    )


def is_dead(job: Job | JobRow) -> bool:
    """Failed for good: out of attempts on a failure that does not pass by itself."""
    return job.status == "failed" and job.attempts >= MAX_ATTEMPTS and not job.transient


def _due_query(retry: bool, now, namespace_id, kinds):
    due = ((Job.status == "failed") & (Job.next_retry_at <= now)) if retry else (Job.status == "pending")
    query = Job.select().where(due & (Job.attempts < MAX_ATTEMPTS))
    if namespace_id is not None:
        query = query.where(Job.namespace == namespace_id)
    if kinds:
        query = query.where(Job.kind.in_(kinds))
    return query.order_by(Job.priority.desc(), Job.id).limit(1)


_PENDING = Prepared(lambda namespace_id, kinds: _due_query(False, None, namespace_id, kinds))
_DUE_RETRY = Prepared(lambda now, namespace_id, kinds: _due_query(True, now, namespace_id, kinds))
_JOB = Prepared(lambda job_id: Job.select().where(Job.id == job_id))
# The earliest block of a namespace still waiting for its summary or extraction.
_HEAD_BLOCK = Prepared(
    lambda ns: (
        Block.select(Block.id, Block.thread, Block.sequence)
        .where((Block.namespace == ns) & (Block.status == "pending"))
        .order_by(Block.sequence)
        .limit(1)
    )
)
_NEXT_IN_THREAD = Prepared(
    lambda thread_id, sequence: (
        Block.select(Block.id, Block.status, Block.l2_keypoints)
        .where((Block.thread == thread_id) & (Block.sequence > sequence))
        .order_by(Block.sequence)
        .limit(1)
    )
)
_BLOCK_JOB = Prepared(
    lambda block_id, kind: (
        Job.select().where((Job.kind == kind) & (Job.block == block_id)).order_by(Job.id.desc()).limit(1)
    )
)
# The first unfinished job of one graph kind and status in a namespace (a seek per kind and status:
# an IN over both would sort every unfinished graph job of the namespace on each claim).
_FIRST_OF = Prepared(
    lambda ns, kind, status: (
        Job.select()
        .where((Job.namespace == ns) & (Job.kind == kind) & (Job.status == status) & _retryable())
        .order_by(Job.priority.desc(), Job.id)
        .limit(1)
    )
)
_UNFINISHED_NAMESPACES = Prepared(
    lambda kinds: (
        Job.select(Job.namespace)
        .where(
            Job.kind.in_(kinds) & (Job.status.in_(["pending", "running"]) | ((Job.status == "failed") & _retryable()))
        )
        .distinct()
        .tuples()
    )
)


def _summary_due(namespace_id: int | None, now: float) -> Job | None:
    return _PENDING.first(namespace_id, ["summary"]) or _DUE_RETRY.first(now, namespace_id, ["summary"])


_EXHAUSTED = object()  # a namespace without ordered work left


def _ordered_due(namespace_id: int, kinds: tuple[str, ...], now: float):
    """The one job of a namespace's ordered work (extractions, then the graph chain) that may run
    now; None when that job is running, waiting for its retry, or waiting for a summary;
    ``_EXHAUSTED`` when the namespace has no such work left."""
    head = _HEAD_BLOCK.first(namespace_id)
    if head is not None:
        job = _BLOCK_JOB.first(head.id, "extraction") if "extraction" in kinds else None
        if job is None or not is_due(job, now):
            return None
        following = _NEXT_IN_THREAD.first(head.thread_id, head.sequence)
        if following is not None and following.status == "pending" and following.l2_keypoints is None:
            return None  # its key points are part of this block's extraction context
        return job
    first = None
    for kind in GRAPH_KINDS:
        for status in ("pending", "running", "failed"):
            job = _FIRST_OF.first(namespace_id, kind, status)
            if job is not None and (first is None or (-job.priority, job.id) < (-first.priority, first.id)):
                first = job
    if first is None:
        return _EXHAUSTED
    return first if first.kind in kinds and is_due(first, now) else None


def namespaces_with_work(namespace_id: int | None = None, kinds: tuple[str, ...] = ALL_KINDS) -> list[int]:
    """Namespaces holding unfinished jobs of ``kinds`` (just ``namespace_id`` when it is given)."""
    if namespace_id is not None:
        return [namespace_id]
    return sorted(row[0] for row in _UNFINISHED_NAMESPACES.rows(list(kinds)))


def claim_next(
    namespace_id: int | None = None, *, kinds: tuple[str, ...] | None = None, namespaces: list[int] | None = None
) -> Job | None:
    """Take the next job that may run (see the module's docstring): any due summary first, then the
    one ordered job of the first namespace (of ``namespaces``, else of those with work) that has one.
    A namespace found to have no ordered work left is dropped from a ``namespaces`` list passed in,
    so a long run does not ask about finished namespaces on every claim.

    Each lookup follows an index and stops at its first match, so a claim costs the same with ten
    pending jobs or a hundred thousand.
    """
    wanted = tuple(kinds) if kinds else ALL_KINDS
    now = wall()
    with write_transaction():
        job = _summary_due(namespace_id, now) if "summary" in wanted else None
        if job is None and any(kind != "summary" for kind in wanted):
            scope = namespaces if namespaces is not None else namespaces_with_work(namespace_id, wanted)
            for ns in list(scope):
                job = _ordered_due(ns, wanted, now)
                if job is _EXHAUSTED:
                    job = None
                    if namespaces is not None:
                        namespaces.remove(ns)
                elif job is not None:
                    break
        if job is None:
            return None
        job.status = "running"
        job.attempts += 1
        job.updated_at = now_iso()
        job.claimed_by, job.claimed_at = claimant(), now
        update_by_id(
            Job,
            job.id,
            dict(
                status=job.status,
                attempts=job.attempts,
                updated_at=job.updated_at,
                claimed_by=job.claimed_by,
                claimed_at=job.claimed_at,
            ),
        )
    return job


@dataclass(frozen=True)
class Waiting:
    """Why nothing could be claimed although jobs are unfinished."""

    running: int  # jobs another worker holds: what they finish may free ours
    next_due: float | None  # the earliest scheduled retry
    stuck: list[JobRow]  # out of attempts on a passing failure: the next run tries them again


def waiting(namespace_id: int | None = None, kinds: tuple[str, ...] | None = None) -> Waiting:
    wanted = list(kinds) if kinds else list(ALL_KINDS)
    scope = Job.select().where(Job.kind.in_(wanted))
    if namespace_id is not None:
        scope = scope.where(Job.namespace == namespace_id)
    running = scope.where(Job.status == "running").count()
    if running and recover_interrupted():  # a worker that died holds nothing back
        running = scope.where(Job.status == "running").count()
    stuck = [job_row(j) for j in scope.where(_stuck()).order_by(Job.id).limit(LIST_MAX)]
    return Waiting(running=running, next_due=next_due_at(namespace_id, tuple(wanted)), stuck=stuck)


def retry_transient(namespace_id: int | None = None, kinds: tuple[str, ...] | None = None) -> int:
    """Jobs out of attempts on a failure that passes (network, timeout, 5xx, a killed process) get
    their attempts back; returns how many. A run calls this first, so a provider outage is healed by
    running `strata derive` again instead of one `strata retry` per job."""
    query = Job.update(status="pending", attempts=0, next_retry_at=None, updated_at=now_iso()).where(_stuck())
    if namespace_id is not None:
        query = query.where(Job.namespace == namespace_id)
    if kinds:
        query = query.where(Job.kind.in_(list(kinds)))
    with write_transaction():
        return query.execute()


def claimant() -> str:
    """This process, as a running job records it."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: existence and permission check only
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return False
    return True


def abandoned(claimed_by: str | None, claimed_at: float | None, now: float) -> bool:
    """Whether a running job's claimant is gone: a claim from before schema 17, a process of
    this host that no longer runs, or a claim older than STALE_CLAIM_SECONDS. Another host's
    live process cannot be checked, so its claim stands until it is stale."""
    if not claimed_by or claimed_at is None:
        return True
    if now - claimed_at > STALE_CLAIM_SECONDS:
        return True
    host, _, pid = claimed_by.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False  # a worker thread of this process is on it
    # On Windows os.kill(pid, 0) would terminate the process: there, only staleness counts.
    return sys.platform != "win32" and not _process_alive(int(pid))


def still_claimed(job: Job) -> bool:
    """True while nobody has recovered, retried or finished the job since we claimed it."""
    current = _JOB.first(job.id)
    return current is not None and current.status == "running" and current.attempts == job.attempts


def fail(job: Job, error: str, *, transient: bool = False) -> None:
    """Record a failed attempt; schedule a retry by backoff or make it terminal. A block whose
    job fails for good (out of attempts, not ``transient``) is marked failed, so the blocks after
    it in its namespace go on; a passing failure keeps its place for the next run."""
    with write_transaction():
        if not still_claimed(job):
            return
        attempts = job.attempts
        Job.update(
            status="failed",
            # Masked before the cut, which could leave a prefix of a provider key no pattern knows.
            last_error=redact_text(error)[:2000],
            next_retry_at=(wall() + backoff_seconds(attempts)) if attempts < MAX_ATTEMPTS else None,
            transient=transient,
            updated_at=now_iso(),
        ).where(Job.id == job.id).execute()
        if attempts >= MAX_ATTEMPTS and not transient and job.block_id is not None and job.kind in BLOCK_KINDS:
            Block.update(status="failed").where((Block.id == job.block_id) & (Block.status == "pending")).execute()


def release(job: Job) -> bool:
    """Give a claimed job back untried (a cost preflight blocked it): pending again, the attempt it
    was charged returned. False when somebody recovered, retried or finished it meanwhile."""
    with write_transaction():
        if not still_claimed(job):
            return False
        update_by_id(
            Job,
            job.id,
            dict(
                status="pending",
                attempts=max(0, job.attempts - 1),
                claimed_by=None,
                claimed_at=None,
                updated_at=now_iso(),
            ),
        )
    return True


def next_due_at(namespace_id: int | None = None, kinds: tuple[str, ...] | None = None) -> float | None:
    """When the earliest scheduled retry becomes due (None when nothing is waiting)."""
    query = Job.select(fn.MIN(Job.next_retry_at)).where(
        (Job.status == "failed") & (Job.attempts < MAX_ATTEMPTS) & Job.next_retry_at.is_null(False)
    )
    if namespace_id is not None:
        query = query.where(Job.namespace == namespace_id)
    if kinds:
        query = query.where(Job.kind.in_(kinds))
    return query.scalar()


def recover_interrupted() -> int:
    """Jobs whose claimant is gone (``abandoned``) become failed and due now (if attempts
    remain). Nothing is written, and no write lock taken, when there are none; when another
    writer holds the lock the recovery is left to the next open."""
    now = wall()
    running = Job.select(Job.id, Job.claimed_by, Job.claimed_at).where(Job.status == "running").tuples()
    stuck = [(job_id, by, at) for job_id, by, at in running if abandoned(by, at, now)]
    if not stuck:
        return 0
    recovered = 0
    try:
        with write_transaction():
            for job_id, by, at in stuck:
                # Only if nobody finished, failed or re-claimed it since it was read.
                recovered += (
                    Job.update(
                        status="failed",
                        last_error="interrupted: the process stopped while this job was running",
                        next_retry_at=Case(None, [(Job.attempts < MAX_ATTEMPTS, now)], None),
                        transient=True,
                        updated_at=now_iso(),
                    )
                    .where((Job.id == job_id) & (Job.status == "running") & _same_claim(by, at))
                    .execute()
                )
    except StoreUnavailableError:
        return 0  # another writer holds the lock: the next open recovers
    return recovered


def _same_claim(claimed_by: str | None, claimed_at: float | None):
    by = Job.claimed_by.is_null() if claimed_by is None else (Job.claimed_by == claimed_by)
    at = Job.claimed_at.is_null() if claimed_at is None else (Job.claimed_at == claimed_at)
    return by & at


def retry(job_id: int) -> JobRow:
    """Manual retry: attempts reset, pending again. Retrying a pending job changes nothing."""
    with write_transaction():
        job = Job.get_or_none(Job.id == job_id) if is_row_id(job_id) else None
        if job is None:
            raise NotFoundError(f"job {job_id} does not exist (see `strata jobs`)")
        if job.status in ("succeeded", "skipped", "running"):
            raise InvalidInputError(f"job {job_id} is {job.status}; only failed or pending jobs can be retried")
        if job.status == "failed":
            job.status = "pending"
            job.attempts = 0
            job.next_retry_at = None
            job.updated_at = now_iso()
            job.save()
            if job.block_id is not None and job.kind in BLOCK_KINDS:
                Block.update(status="pending").where((Block.id == job.block_id) & (Block.status == "failed")).execute()
    return get_job(job_id)


def get_job(job_id: int) -> JobRow:
    job = Job.select(Job, Namespace).join(Namespace).where(Job.id == job_id).first() if is_row_id(job_id) else None
    if job is None:
        raise NotFoundError(f"job {job_id} does not exist")
    return job_row(job)


def list_jobs(namespace: str | None = None, status: str | None = None, limit: int = 200) -> list[JobRow]:
    """Jobs newest first, at most ``limit`` (1..LIST_MAX)."""
    if status is not None and status not in STATUSES:
        raise InvalidInputError(f"job status must be one of {', '.join(STATUSES)}, got {status!r}")
    query = Job.select(Job, Namespace).join(Namespace)
    if namespace is not None:
        query = query.where(Job.namespace == get_namespace(namespace))
    if status is not None:
        query = query.where(Job.status == status)
    return [job_row(j) for j in query.order_by(Job.id.desc()).limit(clamp(limit, 1, LIST_MAX, 200))]


def job_counts(namespace: str | None = None) -> dict[str, int]:
    query = Job.select(Job.status, fn.COUNT(Job.id).alias("n")).join(Namespace)
    if namespace is not None:
        query = query.where(Namespace.name == validate_name(namespace))
    counts = {status: 0 for status in STATUSES}
    for row in query.group_by(Job.status).tuples():
        counts[row[0]] = row[1]
    return counts


def claimable_count(namespace_id: int | None = None, kinds: tuple[str, ...] | None = None) -> int:
    query = Job.select().where(_claimable(wall()))
    if namespace_id is not None:
        query = query.where(Job.namespace == namespace_id)
    if kinds:
        query = query.where(Job.kind.in_(kinds))
    return query.count()


def create_job(
    namespace: Namespace | int,
    kind: str,
    block: Block | int | None = None,
    *,
    status: str = "pending",
    priority: int = 0,
    payload=None,
) -> Job:
    now = now_iso()
    return insert_one(
        Job,
        dict(
            namespace=namespace,
            kind=kind,
            block=block,
            status=status,
            priority=priority,
            payload=payload,
            created_at=now,
            updated_at=now,
        ),
    )
