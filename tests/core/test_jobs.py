"""Derivation jobs: retries with backoff, terminal failure, recovery, manual retry."""

from __future__ import annotations

import pytest

from core.db import db
from core.errors import InvalidInputError, NotFoundError
from core.models import Block, Job, Message
from core.providers.base import BlockSummary, Extraction, ProviderOutputError
from core.providers.offline import OfflineProvider
from core.services import jobs as jobsvc
from core.services.blocks import get_block_context
from core.services.capture import append_turn
from core.services.derive import run_pending
from core.services.spaces import configure_namespace
from core.api import open_store


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(jobsvc, "wall", c)
    monkeypatch.setattr("core.services.derive.wall", c)
    return c


class BrokenSummarizer(OfflineProvider):
    """Fails the first ``failures`` summary calls (with ``error``: a timeout passes, a wrong answer
    does not), then behaves."""

    def __init__(self, failures: int, error: Exception | None = None) -> None:
        self.failures = failures
        self.error = error or TimeoutError("model did not answer")
        self.calls = 0

    def summarize_block(self, messages):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return super().summarize_block(messages)


def _one_block(size: int = 1) -> int:
    configure_namespace("ns", block_turn_size=size)
    append_turn("ns", "t", "We will migrate the billing service to Postgres in May.", "Noted, May migration.")
    return Block.get().id


def _summary_job() -> Job:
    return Job.get(Job.kind == "summary")


def test_failed_summary_retries_after_one_then_two_seconds_then_stops(store, clock):
    block_id = _one_block()
    provider = BrokenSummarizer(failures=10, error=ProviderOutputError("the model answered nonsense"))
    run_pending("ns", provider=provider, wait_for_retries=False)
    job = _summary_job()
    assert (job.status, job.attempts, job.next_retry_at) == ("failed", 1, clock.now + 1.0)
    assert "answered nonsense" in job.last_error
    run_pending("ns", provider=provider, wait_for_retries=False)
    assert provider.calls == 1  # not due yet
    clock.now += 1.0
    run_pending("ns", provider=provider, wait_for_retries=False)
    job = _summary_job()
    assert (job.attempts, job.next_retry_at) == (2, clock.now + 2.0)
    clock.now += 2.0
    run_pending("ns", provider=provider, wait_for_retries=False)
    job = _summary_job()
    assert (job.status, job.attempts, job.next_retry_at) == ("failed", 3, None)
    clock.now += 100
    run_pending("ns", provider=provider, wait_for_retries=False)
    assert provider.calls == 3
    block = Block.get_by_id(block_id)
    assert block.status == "failed" and block.l1_summary is None
    assert get_block_context("ns") == []
    assert Message.select().where(Message.block == block_id).count() == 2  # raw turns kept


class OutageFor(OfflineProvider):
    """Times out on the first ``failures`` summaries of blocks that mention ``word``."""

    def __init__(self, word: str, failures: int) -> None:
        self.word, self.failures = word, failures

    def summarize_block(self, messages):
        if self.failures and any(self.word in m["text"] for m in messages):
            self.failures -= 1
            raise TimeoutError("model did not answer")
        return super().summarize_block(messages)


def test_a_passing_failure_is_tried_again_by_the_next_run_and_holds_its_place(store, clock):
    configure_namespace("ns", block_turn_size=1)
    for text in ("We will migrate billing to Postgres in May.", "The launch moves to June 3.", "Ana leads QA."):
        append_turn("ns", "t", text, "Noted.")
    first = Block.select().order_by(Block.sequence).first()
    outage = OutageFor("billing", failures=3)  # the first block's summary times out three times
    report = run_pending("ns", provider=outage, wait_for_retries=False)
    job = Job.get((Job.kind == "summary") & (Job.block == first.id))
    assert (job.status, job.attempts, job.transient) == ("failed", 1, True)
    for _ in range(2):
        clock.now += 10
        report = run_pending("ns", provider=outage, wait_for_retries=False)
    job = Job.get_by_id(job.id)
    assert (job.status, job.attempts) == ("failed", 3) and report.stuck == [job.id]
    # The blocks after it wait: extracting them first would derive other memory than a run without
    # the outage (their context reads the earlier block's events).
    assert Block.get_by_id(first.id).status == "pending"
    assert Block.select().where(Block.status == "ready").count() == 0
    report = run_pending("ns", provider=outage, wait_for_retries=False)
    assert report.retried == 1 and report.stuck == []
    assert [b.status for b in Block.select().order_by(Block.sequence)] == ["ready"] * 3
    assert [b.ready_position for b in Block.select().order_by(Block.sequence)] == [1, 2, 3]


def test_failed_jobs_do_not_block_later_sealing(store, clock):
    _one_block()
    run_pending("ns", provider=BrokenSummarizer(failures=10), wait_for_retries=False)
    append_turn("ns", "t", "Second decision: keep weekly demos on Friday.", "ok")
    assert Block.select().count() == 2


def test_manual_retry_resets_attempts(store, clock):
    block_id = _one_block()
    provider = BrokenSummarizer(failures=3)
    for step in (0, 1.0, 2.0):
        clock.now += step
        run_pending("ns", provider=provider, wait_for_retries=False)
    job = _summary_job()
    assert (job.status, job.attempts) == ("failed", 3)
    row = jobsvc.retry(job.id)
    assert (row.status, row.attempts, row.next_retry_at) == ("pending", 0, None)
    run_pending("ns", provider=provider, wait_for_retries=False)
    assert Block.get_by_id(block_id).status == "ready"
    assert _summary_job().status == "succeeded"
    with pytest.raises(InvalidInputError):
        jobsvc.retry(job.id)  # succeeded jobs are not retried


def test_listing_jobs_of_an_unknown_namespace_is_an_error(store):
    _one_block()
    assert [j.namespace for j in jobsvc.list_jobs("ns")] and jobsvc.list_jobs(None)
    with pytest.raises(NotFoundError, match="namespace 'nope' does not exist"):
        jobsvc.list_jobs("nope")  # it used to be an empty list, as if the namespace had no jobs


def test_run_pending_waits_out_short_backoffs(store):
    block_id = _one_block()
    report = run_pending("ns", provider=BrokenSummarizer(failures=1))
    assert report.failed == 1 and Block.get_by_id(block_id).status == "ready"
    assert report.left_failed == 0  # the retry in the same run succeeded


def test_a_job_whose_last_attempt_failed_is_left_failed(store, clock):
    _one_block()
    report = run_pending("ns", provider=BrokenSummarizer(failures=10), wait_for_retries=False)
    assert (report.processed, report.failed, report.left_failed) == (1, 1, 1)


_CLAIM_IN_CHILD = """
import sys
from core.api import open_store
from core.services import jobs
open_store(sys.argv[1])
job = jobs.claim_next()
print(job.id, flush=True)
if sys.argv[2] == "die":
    import os
    os._exit(0)  # as if killed: the job stays running
sys.stdin.readline()  # alive, holding the claim, until told to go
"""


def _claiming_child(db_url: str, mode: str):
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-c", _CLAIM_IN_CHILD, db_url, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    job_id = int(child.stdout.readline())
    return child, job_id


def test_running_jobs_of_a_killed_process_become_retryable_at_open(db_url, store):
    block_id = _one_block()
    db.close()
    child, job_id = _claiming_child(db_url, "die")
    child.wait()
    open_store(db_url)
    job = Job.get_by_id(job_id)
    assert job.status == "failed" and job.next_retry_at is not None and "interrupted" in job.last_error
    run_pending("ns", wait_for_retries=False)
    assert Block.get_by_id(block_id).status == "ready"


def test_a_live_process_keeps_its_running_jobs_when_another_opens_the_store(db_url, store):
    _one_block()
    db.close()
    child, job_id = _claiming_child(db_url, "wait")
    try:
        open_store(db_url)  # `strata stats` while `strata derive` works
        job = Job.get_by_id(job_id)
        assert job.status == "running" and job.claimed_by.endswith(f":{child.pid}")
    finally:
        child.communicate("go\n")
    assert jobsvc.recover_interrupted() == 1  # its process is gone now
    assert Job.get_by_id(job_id).status == "failed"


def test_legacy_and_stale_claims_are_abandoned(store, clock):
    _one_block()
    job = jobsvc.claim_next()
    assert job.claimed_at == clock.now and not jobsvc.abandoned(job.claimed_by, job.claimed_at, clock.now)
    assert jobsvc.abandoned(None, None, clock.now)  # claimed before schema 17
    assert jobsvc.abandoned("elsewhere:1", clock.now - jobsvc.STALE_CLAIM_SECONDS - 1, clock.now)
    assert not jobsvc.abandoned("elsewhere:1", clock.now - 60, clock.now)  # another host: cannot tell yet
    clock.now += jobsvc.STALE_CLAIM_SECONDS + 1
    assert jobsvc.recover_interrupted() == 1 and _summary_job().status == "failed"


def test_a_stale_result_is_discarded_after_recovery(store, clock, monkeypatch):
    _one_block()
    job = jobsvc.claim_next()
    monkeypatch.setattr(jobsvc, "abandoned", lambda *_: True)
    jobsvc.recover_interrupted()  # someone else decided the job was abandoned
    jobsvc.fail(job, "late failure from the old worker")
    assert _summary_job().last_error.startswith("interrupted")


def test_summary_then_extraction_then_ready(store):
    block_id = _one_block()
    report = run_pending("ns")
    kinds = {j.kind: j.status for j in Job.select()}
    assert kinds["summary"] == "succeeded" and kinds["extraction"] in ("succeeded", "skipped")
    block = Block.get_by_id(block_id)
    assert block.status == "ready" and block.l0_title and block.l1_summary
    assert (block.pointer_current_level, block.pointer_anchor_level, block.ready_position) == (5, 5, 1)
    assert report.blocks_ready == 1


def test_run_pending_limited_to_some_kinds_leaves_the_others_pending(store, clock):
    block_id = _one_block()
    with pytest.raises(InvalidInputError, match="unknown job kind"):
        run_pending("ns", kinds=["summary", "dream"])
    report = run_pending("ns", kinds=["summary", "extraction"])
    statuses = {j.kind: j.status for j in Job.select()}
    assert Block.get_by_id(block_id).status == "ready" and report.events >= 1
    assert statuses["summary"] == "succeeded" and statuses["graph"] == "pending"
    # A graph job waiting for its retry must not keep a summaries-only run waiting for it.
    Job.update(status="failed", attempts=1, next_retry_at=clock.now + 1).where(Job.kind == "graph").execute()
    clock.now += 2
    assert run_pending("ns", kinds=["summary"]).processed == 0
    assert run_pending("ns").processed == 1 and Job.get(Job.kind == "graph").status == "succeeded"


class EmptyButClaimsEvents(OfflineProvider):
    def extract_events(self, context):
        return Extraction(should_extract=True, reason="there should be events", events=())


def test_should_extract_with_zero_events_fails_the_job(store, clock):
    block_id = _one_block()
    run_pending("ns", provider=EmptyButClaimsEvents(), wait_for_retries=False)
    job = Job.get(Job.kind == "extraction")
    assert job.status == "failed" and "no valid events" in job.last_error
    assert Block.get_by_id(block_id).status == "pending"


class InvalidSummary(OfflineProvider):
    def summarize_block(self, messages):
        return {"title": "", "summary": "x", "tags": [], "keypoints": [], "should_extract": True}


def test_invalid_summary_output_fails_the_job_not_the_store(store, clock):
    block_id = _one_block()
    run_pending("ns", provider=InvalidSummary(), wait_for_retries=False)
    assert "invalid L0-L2" in _summary_job().last_error
    assert Block.get_by_id(block_id).l0_title is None


def test_summary_validation_clamps():
    summary = BlockSummary.validated(
        {
            "title": "t" * 300,
            "summary": "s" * 5000,
            "tags": [f"tag{i}" for i in range(30)],
            "keypoints": [f"p{i}" for i in range(40)],
            "should_extract": False,
        }
    )
    assert len(summary.title) == 120 and len(summary.summary) == 2000
    assert len(summary.tags) == 12 and len(summary.keypoints) == 20
    with pytest.raises(Exception):
        BlockSummary.validated({"title": "t", "summary": "s", "tags": [], "keypoints": [], "should_extract": "yes"})


def test_a_job_failed_for_good_before_the_transient_flag_counts_as_failed_for_good(store):
    _one_block()
    job = _summary_job()
    Job.update(status="failed", attempts=jobsvc.MAX_ATTEMPTS, transient=None).where(Job.id == job.id).execute()
    assert [j.id for j in Job.select().where(jobsvc.failed_for_good())] == [job.id]
    assert jobsvc.is_dead(Job.get_by_id(job.id))
