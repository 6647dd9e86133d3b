"""Derivation jobs: claiming, failing with backoff, recovery and manual retry.

A job is claimed in one short write transaction (running, attempts + 1, the claiming
process as ``host:pid``), its model call runs outside any transaction, and its result is
committed in another. A process killed in between leaves the job ``running``; the next open
turns it into a retryable failure — but only once the claimant is gone: any command run while
another process derives (``strata stats`` beside ``strata derive``) leaves its jobs alone.
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
from core.services.spaces import get_namespace
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


def backoff_seconds(attempts: int) -> float:
    """Delay before the next try after ``attempts`` failed tries: 1 s, then 2 s."""
    return 1.0 * 2 ** max(0, attempts - 1)


def _row(job: Job) -> JobRow:
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
    )


def _claimable(now: float):
    return (Job.attempts < MAX_ATTEMPTS) & (
        (Job.status == "pending") | ((Job.status == "failed") & (Job.next_retry_at <= now))
    )


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


def claim_next(namespace_id: int | None = None, *, kinds: tuple[str, ...] | None = None) -> Job | None:
    """Take the next due job: pending before retries, then priority, then age.

    Each of the two lookups follows the (status, priority desc, id) index and stops at the
    first match, so a claim costs the same with ten pending jobs or a hundred thousand.
    """
    now = wall()
    with write_transaction():
        wanted = list(kinds) if kinds else None
        job = _PENDING.first(namespace_id, wanted) or _DUE_RETRY.first(now, namespace_id, wanted)
        if job is None:
            return None
        job.status = "running"
        job.attempts += 1
        job.updated_at = now_iso()
        job.claimed_by, job.claimed_at = claimant(), now
        update_by_id(Job, job.id, dict(status=job.status, attempts=job.attempts, updated_at=job.updated_at,
                                       claimed_by=job.claimed_by, claimed_at=job.claimed_at))
    return job


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


def fail(job: Job, error: str) -> None:
    """Record a failed attempt; schedule a retry by backoff or make it terminal."""
    with write_transaction():
        if not still_claimed(job):
            return
        attempts = job.attempts
        Job.update(
            status="failed",
            last_error=error[:2000],
            next_retry_at=(wall() + backoff_seconds(attempts)) if attempts < MAX_ATTEMPTS else None,
            updated_at=now_iso(),
        ).where(Job.id == job.id).execute()


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
                recovered += Job.update(
                    status="failed",
                    last_error="interrupted: the process stopped while this job was running",
                    next_retry_at=Case(None, [(Job.attempts < MAX_ATTEMPTS, now)], None),
                    updated_at=now_iso(),
                ).where((Job.id == job_id) & (Job.status == "running") & _same_claim(by, at)).execute()
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
    return get_job(job_id)


def get_job(job_id: int) -> JobRow:
    job = Job.select(Job, Namespace).join(Namespace).where(Job.id == job_id).first() if is_row_id(job_id) else None
    if job is None:
        raise NotFoundError(f"job {job_id} does not exist")
    return _row(job)


def list_jobs(namespace: str | None = None, status: str | None = None, limit: int = 200) -> list[JobRow]:
    """Jobs newest first, at most ``limit`` (1..LIST_MAX)."""
    if status is not None and status not in STATUSES:
        raise InvalidInputError(f"job status must be one of {', '.join(STATUSES)}, got {status!r}")
    query = Job.select(Job, Namespace).join(Namespace)
    if namespace is not None:
        query = query.where(Job.namespace == get_namespace(namespace))
    if status is not None:
        query = query.where(Job.status == status)
    return [_row(j) for j in query.order_by(Job.id.desc()).limit(clamp(limit, 1, LIST_MAX, 200))]


def job_counts(namespace: str | None = None) -> dict[str, int]:
    query = Job.select(Job.status, fn.COUNT(Job.id).alias("n")).join(Namespace)
    if namespace is not None:
        query = query.where(Namespace.name == namespace)
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


def create_job(namespace: Namespace | int, kind: str, block: Block | int | None = None, *,
               status: str = "pending", priority: int = 0, payload=None) -> Job:
    now = now_iso()
    return insert_one(Job, dict(namespace=namespace, kind=kind, block=block, status=status, priority=priority,
                                payload=payload, created_at=now, updated_at=now))
