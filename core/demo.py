"""The demo memory: a bundled sample conversation, ingested and derived."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Callable

DEMO_NAMESPACE = "demo"


@dataclass(frozen=True)
class DemoResult:
    path: str | None
    namespace: str
    messages: int
    threads: int
    blocks_ready: int
    blocks_pending: int
    open_tail_turns: int


def demo_source() -> Path:
    return Path(str(files("core") / "demo_data" / "demo.jsonl"))


def build_demo(url: str, progress: Callable[[int, int, str], None] | None = None) -> DemoResult:
    """Build the demo database from scratch at ``url`` (an existing demo file is replaced)."""
    from core.db import db, sqlite_path
    from core.ingest import ingest
    from core.services.derive import run_pending
    from core.services.stats import stats
    from core.store import open_store

    path = sqlite_path(url)
    if path is not None:
        if db.obj is not None and not db.is_closed():
            db.close()
        for suffix in ("", "-wal", "-shm"):
            candidate = Path(str(path) + suffix)
            if candidate.exists():
                candidate.unlink()
    open_store(url)
    ingest("jsonl", demo_source(), namespace=DEMO_NAMESPACE)
    from core.models import Thread
    from core.services.capture import close_thread
    from core.services.spaces import get_namespace

    # The sample conversations are finished: seal their short tails so everything is derived.
    for thread in Thread.select().where(Thread.namespace == get_namespace(DEMO_NAMESPACE)):
        close_thread(DEMO_NAMESPACE, thread.name)
    run_pending(DEMO_NAMESPACE, progress=progress)
    result = stats(DEMO_NAMESPACE)
    return DemoResult(
        path=str(path) if path is not None else url,
        namespace=DEMO_NAMESPACE,
        messages=result.messages,
        threads=result.threads,
        blocks_ready=result.blocks_ready,
        blocks_pending=result.blocks_pending,
        open_tail_turns=result.open_tail_turns,
    )
