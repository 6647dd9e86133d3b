"""`strata bench workers`: derivation with one worker against N, on the same store.

The LoCoMo conversations are ingested once; copies of that store are derived by `strata derive`
and by `strata derive --workers N`, each in a process of its own and timed from its start to its
exit, as a user would run them. The report gives both times, the speed-up, and whether the two
derived the same memory (``comparable_memory`` per namespace): a faster run that derives other
memory would be no speed-up at all.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from core.api import open_store
from core.bench import git_commit
from core.db import db
from core.errors import StrataError
from core.ingest import ingest
from core.services.export import comparable_memory
from core.services.spaces import list_namespaces

ProgressFn = Callable[[int, int, str], None]


def _derive(url: str, workers: int) -> float:
    command = [sys.executable, "-m", "workbench", "derive", "--db", url, "--json"]
    if workers > 1:
        command += ["--workers", str(workers)]
    started = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise StrataError(f"`{' '.join(command[2:])}` exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return seconds


def _memory(url: str) -> dict[str, Any]:

    open_store(url)
    try:
        return {space.name: comparable_memory(space.name) for space in list_namespaces()}
    finally:
        db.close()


def run(
    data: str | Path, workdir: Path, *, workers: int = 2, limit: int | None = None, progress: ProgressFn | None = None
) -> dict[str, Any]:
    """Ingest ``data`` (LoCoMo) into ``workdir``, derive one copy with one worker and one with
    ``workers``, and compare."""

    steps = 4
    workdir.mkdir(parents=True, exist_ok=True)
    base = workdir / "base.db"
    for name in ("base", "one", "many"):  # this bench's own files only: a workdir may hold others
        for suffix in (".db", ".db-wal", ".db-shm"):
            (workdir / f"{name}{suffix}").unlink(missing_ok=True)
    if progress:
        progress(0, steps, "ingest")
    open_store(f"sqlite:///{base}")
    report = ingest("locomo", data, limit=limit)
    db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")  # the copies below take the whole store
    db.close()
    urls = {}
    for name in ("one", "many"):
        shutil.copy(base, workdir / f"{name}.db")
        urls[name] = f"sqlite:///{workdir / f'{name}.db'}"
    if progress:
        progress(1, steps, "derive, one worker")
    one = _derive(urls["one"], 1)
    if progress:
        progress(2, steps, f"derive, {workers} workers")
    many = _derive(urls["many"], workers)
    if progress:
        progress(3, steps, "compare the memory")
    first, second = _memory(urls["one"]), _memory(urls["many"])
    differing = sorted(name for name in first if first[name] != second.get(name))
    if progress:
        progress(steps, steps, "done")
    return {
        "benchmark": "workers",
        "commit": git_commit(),
        "data": str(data),
        "conversations": len(report.namespaces),
        "messages": report.messages,
        "workers": workers,
        "one_worker_s": round(one, 2),
        "workers_s": round(many, 2),
        "speedup": round(one / many, 2) if many else None,
        "same_memory": not differing and set(first) == set(second),
        "differing_namespaces": differing,
        "events": sum(len(memory["events"]) for memory in first.values()),
    }
