"""Fixtures for the workbench tests: one seeded demo store, copied per test.

The template is the demo memory plus a few agent retrievals (traces, an assessment with a
rejected ref, a use receipt), a failed and a pending job, and every clock-dependent
timestamp pinned, so screens and snapshots are the same on every run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.db import db
from tests import stores
from tests.stores import copy_of

FIXED = "2026-03-01T12:00:00+00:00"


def seed_workbench_store(url: str, *, built: bool = False) -> None:
    """Build the demo store at ``url`` (unless ``built``: a copy of it is there) and add
    traces and jobs (used by tests and docs)."""
    from core.agent_tools import MemoryTools
    from core.demo import build_demo
    from core.models import Block, Event, Job, Namespace, RetrievalBatch, RetrievalTrace, UsageReceipt
    from core.services.jobs import create_job
    from core.api import open_store

    if built:
        open_store(url)
    else:
        build_demo(url)
    tools = MemoryTools("demo", session="agent-1", budget=None)
    found = tools.call("search_events", {"query": "Atlas launch date"})
    refs = found["evidence_refs"]
    tools.call(
        "assess",
        {
            "verdict": "sufficient",
            "evidence_refs": [refs[1], refs[0], "event:99999"],
            "fit": "the launch moved to March 17",
            "missing": "",
            "next_strategy": "answer",
        },
    )
    tools.call("record_use", {"evidence_refs": [refs[1]]})
    tools.call("search_graph", {"query": "Ivy passport"})
    tools.call(
        "assess",
        {
            "verdict": "insufficient",
            "evidence_refs": [],
            "fit": "only the person",
            "missing": "the renewal appointment",
            "next_strategy": "raw",
        },
    )
    tools.call("search_raw", {"query": "passport renewal appointment"})
    ns = Namespace.get(Namespace.name == "demo")
    block = Block.select().where(Block.namespace == ns).order_by(Block.sequence.desc()).first()
    failed = create_job(ns, "extraction", block, status="failed")
    Job.update(
        attempts=3, last_error="provider timeout after 30 s (offline provider stubbed to fail)", next_retry_at=None
    ).where(Job.id == failed.id).execute()
    create_job(ns, "graph", None, payload={"event_ids": [1, 2]})
    # Governed records waiting for a person (quarantined: no other view shows them).
    from core.models import AuditEntry, MemoryRecord
    from core.services import governance

    governance.remember("demo", "Maya prefers meetings before 11 in the morning.", source="agent", actor="planner-bot")
    governance.remember(
        "demo",
        "The Atlas launch checklist lives in the team wiki.",
        source="tool",
        actor="wiki-sync",
        key="atlas.checklist",
    )
    governance.remember("demo", "Maya's office badge PIN is 0000.", source="user", privacy="secret")
    AuditEntry.update(at=FIXED).execute()
    for model in (RetrievalTrace, RetrievalBatch, UsageReceipt, Job, Event, MemoryRecord):
        fields = {"created_at": FIXED}
        if hasattr(model, "updated_at"):
            fields["updated_at"] = FIXED
        model.update(**fields).execute()
    Event.update(last_retrieved_at=None).execute()
    RetrievalTrace.update(elapsed_ms=1.5).execute()
    Block.update(created_at=FIXED).execute()
    stores.close_template()


@pytest.fixture(scope="session")
def workbench_template(demo_template, tmp_path_factory) -> Path | str:
    url = copy_of(demo_template, tmp_path_factory.mktemp("workbench") / "template.db")
    seed_workbench_store(url, built=True)
    yield url if stores.on_postgres() else Path(url[len("sqlite:///") :])
    if stores.on_postgres():
        stores.drop(url)


@pytest.fixture
def wb_url(workbench_template, tmp_path) -> str:
    """A private copy of the seeded store (tests may write to it)."""
    yield copy_of(workbench_template, tmp_path / "wb.db")
    if db.obj is not None and not db.is_closed():
        db.close()


@pytest.fixture
def config():
    from workbench.config import Config

    return Config(theme="strata-dark", path=None)


@pytest.fixture
def make_app(wb_url, config):
    from workbench.app import Workbench

    def make(**kwargs):
        kwargs.setdefault("config", config)
        return Workbench(db_url=kwargs.pop("db_url", wb_url), **kwargs)

    return make
