"""Derivation in several processes: ``strata derive --workers N``.

Each worker is a process of its own (the offline rules are Python: threads would share one core)
that opens the store and runs ``run_pending``. Claims are atomic and the order in which jobs may
run is fixed by ``core.services.jobs``, so N workers derive exactly what one run derives; the
speed-up comes from summaries, and from different namespaces, running side by side.
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import fields

from peewee import fn

from core.errors import InvalidInputError
from core.models import Job
from core.services import jobs as jobsvc
from core.services.derive import DeriveReport, ProgressFn, run_pending
from core.services.spaces import get_namespace
from core.store import open_store

MAX_WORKERS = 64
POLL_SECONDS = 0.5


def _work(url: str, namespace: str | None, provider: str | None, kinds: tuple[str, ...] | None) -> DeriveReport:
    store = open_store(url)
    jobsvc.recover_interrupted()  # a worker of an earlier run killed mid-job holds nothing back
    try:
        # The parent gave passing failures their attempts back once; a worker doing it again could
        # reset a job another worker has just failed.
        return run_pending(namespace, provider=provider, kinds=kinds, retry_transient=False)
    finally:
        store.close()


def merge(reports: list[DeriveReport]) -> DeriveReport:
    merged = DeriveReport()
    for report in reports:
        for f in fields(DeriveReport):
            value = getattr(report, f.name)
            if f.name == "seconds":
                merged.seconds = max(merged.seconds, value)
            elif f.name == "blocked":
                merged.blocked = merged.blocked or value
            elif isinstance(value, list):
                getattr(merged, f.name).extend(value)
            else:
                setattr(merged, f.name, getattr(merged, f.name) + value)
    merged.stuck = sorted(set(merged.stuck))
    return merged


def _finished(namespace_id: int | None) -> tuple[int, int]:
    """(jobs finished, jobs unfinished) in the scope, for progress: counted in SQL, since the job
    table of a large store holds hundreds of thousands of rows."""
    query = Job.select(Job.status, fn.COUNT(Job.id)).group_by(Job.status)
    dead = Job.select().where(jobsvc.failed_for_good())
    if namespace_id is not None:
        query, dead = query.where(Job.namespace == namespace_id), dead.where(Job.namespace == namespace_id)
    counts = dict(query.tuples())
    failed_for_good = dead.count() if counts.get("failed") else 0
    done = counts.get("succeeded", 0) + counts.get("skipped", 0) + failed_for_good
    return done, sum(counts.values()) - done


class _NoPool:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def run_workers(
    url: str,
    namespace: str | None = None,
    *,
    workers: int = 2,
    provider: str | None = None,
    kinds: tuple[str, ...] | None = None,
    progress: ProgressFn | None = None,
) -> DeriveReport:
    """Run due jobs in ``workers`` processes on the store at ``url`` (open in this process too, for
    progress); returns the workers' reports merged. ``provider`` is a provider's name: each worker
    makes its own."""

    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= MAX_WORKERS:
        raise InvalidInputError(f"--workers must be a whole number from 1 to {MAX_WORKERS}, got {workers!r}")
    started = time.monotonic()
    ns_id = get_namespace(namespace).id if namespace else None
    retried = jobsvc.retry_transient(ns_id, kinds)
    baseline, _ = _finished(ns_id)
    context = multiprocessing.get_context("spawn")  # no copy of this process's open connection
    shown = [0.0]

    def overall(done_here: int, total_here: int, label: str) -> None:
        # What every worker has finished, read at most every POLL_SECONDS (it counts the jobs).
        if progress and time.monotonic() - shown[0] >= POLL_SECONDS:
            shown[0] = time.monotonic()
            done, left = _finished(ns_id)
            progress(done - baseline, done - baseline + left, label)

    # This process is one of the workers: it has everything imported and the store open already.
    with context.Pool(workers - 1) if workers > 1 else _NoPool() as pool:
        others = [pool.apply_async(_work, (url, namespace, provider, kinds)) for _ in range(workers - 1)]
        mine = run_pending(namespace, provider=provider, kinds=kinds, retry_transient=False, progress=overall)
        reports = [mine, *(result.get() for result in others)]
    if progress:
        done, left = _finished(ns_id)
        progress(done - baseline, done - baseline + left, "done")
    report = merge(reports)
    report.retried += retried
    report.seconds = time.monotonic() - started
    return report
