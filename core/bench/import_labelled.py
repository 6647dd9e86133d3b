"""`strata bench import --labels DIR`: the import decider against the hand-labelled set.

The store is built the way a user's is: the LoCoMo conversations the labels name and the demo
conversation are ingested and derived with the offline provider (real extraction, not an
oracle, so the events are whatever Strata makes of the conversations). Each label file then
becomes one v2 export file, previewed into its conversation's namespace, and every decision is
judged against the labels (``core.bench.import_labels``). A file is always previewed whole, both
splits, because an in-file duplicate is labelled relative to an earlier item that may sit in the
other split; only the scoring is per split.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from core.api import open_store
from core.bench import git_commit
from core.bench.import_labels import (
    DEMO,
    LABEL_DIR,
    SPLITS,
    Decision,
    Item,
    conversations,
    export_document,
    load,
    score,
)
from core.bench.imports import decision_provider, model_usage
from core.demo import DEMO_NAMESPACE, demo_source
from core.errors import InvalidInputError
from core.ingest import IngestReport, ingest, parse, write_units
from core.models import Event, EventSource, Message, Thread
from core.services.capture import close_thread
from core.services.derive import run_pending
from core.services.import_preview import preview_file
from core.services.spaces import get_namespace

ProgressFn = Callable[[int, int, str], None]


def _check_data(data: str | Path | None, locomo: list[str]) -> None:
    if not locomo:
        return
    if data is None:
        raise InvalidInputError(
            f"--data: the labels name LoCoMo conversations ({', '.join(locomo)}); give the path to locomo10.json"
        )
    if not Path(data).is_file():
        raise InvalidInputError(f"--data {data}: no such file")


def build_store(data: str | Path | None, wanted: list[str], progress: ProgressFn | None = None) -> dict[str, Any]:
    """Ingest the demo and the LoCoMo conversations in ``wanted`` into the open store and derive
    them offline. Returns counts for the report."""

    locomo = [c for c in wanted if c != DEMO]
    _check_data(data, locomo)
    if DEMO in wanted:
        ingest("jsonl", demo_source(), namespace=DEMO_NAMESPACE)
        # As `strata demo` does: the sample threads are finished, so their tails are derived too.
        for thread in Thread.select().where(Thread.namespace == get_namespace(DEMO_NAMESPACE)):
            close_thread(DEMO_NAMESPACE, thread.name)
    if locomo:
        units = [u for u in parse("locomo", data) if u.label in locomo]
        absent = sorted(set(locomo) - {u.label for u in units})
        if absent:
            raise InvalidInputError(f"{data}: no conversation {', '.join(absent)}")
        write_units(units, IngestReport(format="locomo", path=str(data)))

    derived = run_pending(provider="offline", progress=progress)
    return {"conversations": wanted, "events": derived.events, "blocks": derived.blocks_ready}


def event_citations(namespace: str) -> dict[int, set[str]]:
    """Event id → external ids of the messages it cites, for every event of ``namespace``."""

    rows = (
        EventSource.select(EventSource.event, Message.external_id)
        .join(Message, on=(EventSource.message == Message.id))
        .join(Event, on=(EventSource.event == Event.id))
        .where(Event.namespace == get_namespace(namespace))
        .tuples()
    )
    out: dict[int, set[str]] = {}
    for event_id, external_id in rows:
        if external_id:
            out.setdefault(event_id, set()).add(external_id)
    return out


def _summary(result: dict[str, Any], *drop: str) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "per_item" and k not in drop}


def run_labelled_import_bench(
    labels: str | Path = LABEL_DIR,
    split: str = "dev",
    *,
    data: str | Path | None = None,
    threshold: float = 0.85,
    top_k: int = 5,
    provider: str | None = None,
    db_url: str | None = None,
    progress: ProgressFn | None = None,
) -> dict[str, Any]:

    if split not in SPLITS:
        raise InvalidInputError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    everything = load("all", labels)
    wanted = [i.id for i in everything if split == "all" or i.split == split]
    files = conversations(everything)
    _check_data(data, [c for c in files if c != DEMO])  # before a store is made

    prov, described = decision_provider(provider)  # so is a model provider's missing key
    started = time.monotonic()
    holder = tempfile.TemporaryDirectory(prefix="strata-bench-labelled-")
    work = Path(holder.name)
    if db_url is None:
        db_url = f"sqlite:///{work / 'bench.db'}"
    store = open_store(db_url)
    try:
        built = build_store(data, list(files), progress)
        stored = time.monotonic()
        scored_items: list[Item] = []
        decisions: list[Decision] = []
        citations: dict[int, set[str]] = {}
        unreachable: list[str] = []
        batches: list[Any] = []
        keep = set(wanted)
        for conversation, items in files.items():
            path = work / f"{conversation}.export.json"
            path.write_text(
                json.dumps(export_document(items, conversation), ensure_ascii=False, indent=1), encoding="utf-8"
            )
            preview = preview_file(
                conversation, path, provider=prov, top_k=top_k, threshold=threshold, progress=progress
            )
            batches.append(preview.batch)
            cited = event_citations(conversation)
            citations.update(cited)
            anywhere = set().union(*cited.values()) if cited else set()
            for item, row in zip(items, sorted(preview.items, key=lambda r: r.position)):
                if item.id in keep:
                    # No decision can be right when every acceptable action needs a target and no
                    # stored event cites the labelled turns: an extraction miss, not the decider's.
                    if all(a.targets and not set(a.targets) & anywhere for a in item.acceptable):
                        unreachable.append(item.id)
                    scored_items.append(item)
                    decisions.append(Decision(row.action or "ignore", tuple(row.target_ids), row.confidence))
        previewed = time.monotonic()
    finally:
        store.close()
        holder.cleanup()
    result = score(scored_items, decisions, lambda event_id: citations.get(event_id, set()), threshold)
    per_conversation = {}
    for conversation in files:
        picked = [(i, d) for i, d in zip(scored_items, decisions) if i.conversation == conversation]
        if picked:
            part = score(
                [i for i, _ in picked],
                [d for _, d in picked],
                lambda event_id: citations.get(event_id, set()),
                threshold,
            )
            per_conversation[conversation] = _summary(part, "per_conversation")
    return {
        "benchmark": "import-labelled",
        "provider": described["provider"],
        "model": described["model"],
        "usage": model_usage(described, batches),
        "commit": git_commit(),
        "labels": str(labels),
        "split": split,
        "threshold": threshold,
        "top_k": top_k,
        "store": built,
        **_summary(result),
        "per_conversation": per_conversation,
        "unreachable": unreachable,
        "per_item": result["per_item"],
        "timing": {
            "store_s": round(stored - started, 2),
            "preview_s": round(previewed - stored, 2),
            "total_s": round(previewed - started, 2),
        },
    }
