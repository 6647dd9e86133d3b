"""`strata bench ui`: how fast the workbench paints and reacts on a large store.

``generate_store`` writes a deterministic store with N events (threads, messages,
blocks, events with sources and participants, a graph, traces and jobs) straight into
the tables with bulk inserts, so 100k events take seconds rather than a derivation run.
``measure`` then drives the real app headlessly (``App.run_test``) and reads the marks
the views record right after a frame is painted: first paint, the first view's data,
when the other views are built in the background, each screen switch (cold: first visit,
after that; warm: revisit; ``prebuild=False`` makes first visits build their view) and
each filter.

Targets: first paint < 1 s; every switch and filter < 200 ms.

Those are measured inside the process, from the app's start. What a user sees from pressing Enter
on `strata ui` (the interpreter, the imports, opening the store, the first frame) and how long
quitting takes are measured by launching the real command in a pseudo-terminal
(``workbench.bench_launch``), on the demo and on the generated store: ``run(..., launch_runs=N)``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from textual.widgets import Input, Select

from core.api import open_store
from core.db import bulk_insert, db, sqlite_path, write_transaction
from core.errors import InvalidInputError
from core.models import (
    Block,
    Event,
    EventParticipant,
    EventSource,
    GraphEdge,
    GraphFact,
    GraphNode,
    GraphSource,
    Job,
    Message,
    Namespace,
    RetrievalTrace,
    Thread,
)
from core.vocab import EVENT_TYPES
from workbench.app import Workbench
from workbench.bench_launch import TARGET_FIRST_PAINT_LARGE_MS, measure_launch
from workbench.config import Config

TARGET_FIRST_PAINT_MS = 1000
TARGET_SWITCH_MS = 200
NAMESPACE = "bench"
FIXED = "2026-03-01T12:00:00+00:00"

_WORDS = (
    "alpha budget launch atlas pipeline review invoice design airflow dagster schema migration passport "
    "lisbon utrecht kestrel dashboard freeze hotfix retro onboarding vendor contract deadline sprint "
    "roadmap backlog incident latency cache index replica snapshot quarterly planning offsite"
).split()
_PEOPLE = ("Maya", "Priya", "Jonas", "Lena", "Sam", "Ivy", "Tomás", "Anouk", "Ruth", "Finn", "Omar", "Chen")
_NODE_TYPES = ("person", "project", "organization", "tool", "place")


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def generate_store(
    url: str, events: int = 100_000, *, seed: int = 7, progress: Callable[[int, int, str], None] | None = None
) -> dict[str, int]:
    """Create a fresh store at ``url`` holding ``events`` events (and what they hang off)."""

    path = sqlite_path(url)
    if path is not None:
        if db.obj is not None and not db.is_closed():
            db.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
    open_store(url)
    rng = random.Random(seed)
    report = progress or (lambda done, total, label: None)
    threads = 20
    per_block = 20  # messages per block (10 turns)
    blocks = max(1, events // per_block)
    messages = blocks * per_block
    start = 1_704_067_200.0  # 2024-01-01
    span = 2.5 * 365 * 86400
    with write_transaction():
        bulk_insert(
            Namespace,
            [
                "id",
                "name",
                "revision",
                "current_turn",
                "block_count",
                "block_turn_size",
                "block_decay_lambda",
                "created_at",
                "updated_at",
            ],
            [(1, NAMESPACE, 1, messages // 2, blocks, 10, 0.3, FIXED, FIXED)],
        )
        per_thread = blocks // threads
        bulk_insert(
            Thread,
            [
                "id",
                "namespace_id",
                "name",
                "message_count",
                "turn_count",
                "sealed_turns",
                "block_count",
                "ready_count",
                "created_at",
                "updated_at",
            ],
            [
                (
                    t + 1,
                    1,
                    f"thread-{t:02d}",
                    per_thread * per_block,
                    per_thread * 10,
                    per_thread * 10,
                    per_thread,
                    per_thread,
                    FIXED,
                    FIXED,
                )
                for t in range(threads)
            ],
        )
        report(0, 6, "blocks")
        rows = []
        for b in range(blocks):
            thread = b % threads
            local = b // threads
            title = _sentence(rng, 4).capitalize()
            text = _sentence(rng, 60)
            rows.append(
                (
                    b + 1,
                    1,
                    thread + 1,
                    b + 1,
                    local * 10 + 1,
                    local * 10 + 10,
                    per_block,
                    FIXED,
                    "ready",
                    title,
                    json.dumps([rng.choice(_WORDS)]),
                    _sentence(rng, 25),
                    json.dumps([_sentence(rng, 8)]),
                    True,  # should_extract: a boolean column on PostgreSQL
                    text,
                    text,
                    80,
                    80,
                    120,
                    local + 1,
                    3,
                    3,
                    local + 1,
                )
            )
        bulk_insert(
            Block,
            [
                "id",
                "namespace_id",
                "thread_id",
                "sequence",
                "start_turn",
                "end_turn",
                "message_count",
                "created_at",
                "status",
                "l0_title",
                "l0_tags",
                "l1_summary",
                "l2_keypoints",
                "should_extract",
                "l3_text",
                "l4_text",
                "tokens_l3",
                "tokens_l4",
                "tokens_l5",
                "ready_position",
                "pointer_current_level",
                "pointer_anchor_level",
                "pointer_anchor_position",
            ],
            rows,
        )
        report(1, 6, "messages")
        rows = []
        for m in range(messages):
            b = m // per_block
            thread = b % threads
            position = (b // threads) * per_block + m % per_block
            ts = start + span * m / messages
            role = "user" if m % 2 == 0 else "assistant"
            rows.append(
                (
                    m + 1,
                    1,
                    thread + 1,
                    b + 1,
                    position,
                    position // 2 + 1,
                    m // 2 + 1,
                    role,
                    rng.choice(_PEOPLE) if role == "user" else "Assistant",
                    _sentence(rng, 25),
                    time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ts)),
                    ts,
                )
            )
        bulk_insert(
            Message,
            [
                "id",
                "namespace_id",
                "thread_id",
                "block_id",
                "position",
                "turn",
                "ns_turn",
                "role",
                "speaker",
                "content",
                "created_at",
                "created_ts",
            ],
            rows,
        )
        report(2, 6, "events")
        rows, sources, participants = [], [], []
        for e in range(events):
            m = e % messages
            b = m // per_block
            ts = start + span * m / messages
            mentioned = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ts))
            dated = e % 3 != 0
            day = time.strftime("%Y-%m-%d", time.gmtime(ts - 86400 * rng.randint(0, 30)))
            happened_ts = time.mktime(time.strptime(day, "%Y-%m-%d")) - time.timezone if dated else None
            who = rng.sample(_PEOPLE, 2)
            status = "superseded" if e % 17 == 0 else "active"
            rows.append(
                (
                    e + 1,
                    1,
                    b + 1,
                    b % threads + 1,
                    _sentence(rng, 7).capitalize(),
                    _sentence(rng, 18),
                    "[]",
                    "[]",
                    json.dumps(who),
                    "[]",
                    rng.choice(EVENT_TYPES),
                    "project",
                    "routine",
                    status,
                    mentioned,
                    ts,
                    day if dated else None,
                    day if dated else None,
                    happened_ts,
                    happened_ts + 86399 if dated else None,
                    "day" if dated else "unknown",
                    "explicit" if dated else "unknown",
                    "occurred" if dated else "unknown",
                    m // 2 + 1,
                    1,
                    m // 2 + 1,
                    False,  # pinned: a boolean column on PostgreSQL
                    0.0,
                    0.1 if status == "superseded" else None,
                    "extraction",
                    FIXED,
                    FIXED,
                )
            )
            sources.append((e + 1, m + 1, 0))
            participants.extend((e + 1, name, name.lower()) for name in who)
        bulk_insert(
            Event,
            [
                "id",
                "namespace_id",
                "block_id",
                "thread_id",
                "title",
                "summary",
                "tags",
                "quotes",
                "participants",
                "participant_node_ids",
                "event_type",
                "scope",
                "criticality",
                "status",
                "mentioned_at",
                "mentioned_ts",
                "happened_start",
                "happened_end",
                "happened_start_ts",
                "happened_end_ts",
                "precision",
                "basis",
                "time_status",
                "formed_turn",
                "mention_count",
                "last_adopted_turn",
                "pinned",
                "floor_weight",
                "forced_cap",
                "origin",
                "created_at",
                "updated_at",
            ],
            rows,
        )
        bulk_insert(EventSource, ["event_id", "message_id", "position"], sources)
        bulk_insert(EventParticipant, ["event_id", "name", "name_norm"], participants)
        report(3, 6, "graph")
        nodes = max(50, events // 50)
        bulk_insert(
            GraphNode,
            [
                "id",
                "namespace_id",
                "name",
                "name_norm",
                "type",
                "aliases",
                "tags",
                "provenance",
                "status",
                "confidence",
                "created_at",
                "updated_at",
            ],
            [
                (
                    n + 1,
                    1,
                    f"{rng.choice(_WORDS).capitalize()} {n}",
                    f"{rng.choice(_WORDS)} {n}",
                    _NODE_TYPES[n % len(_NODE_TYPES)],
                    "[]",
                    "[]",
                    "{}",
                    "active",
                    0.8,
                    FIXED,
                    FIXED,
                )
                for n in range(nodes)
            ],
        )
        facts = [
            (
                f + 1,
                f % nodes + 1,
                f"attr_{f % 7}",
                json.dumps(_sentence(rng, 3)),
                "active" if f % 5 else "superseded",
                0.8,
                FIXED,
                FIXED,
            )
            for f in range(nodes * 2)
        ]
        bulk_insert(
            GraphFact, ["id", "node_id", "key", "value", "status", "confidence", "created_at", "updated_at"], facts
        )
        edges = [
            (
                g + 1,
                1,
                g % nodes + 1,
                (g * 7 + 3) % nodes + 1,
                rng.choice(("knows", "works_on", "uses")),
                "active",
                0.8,
                FIXED,
                FIXED,
            )
            for g in range(int(nodes * 1.5))
        ]
        bulk_insert(
            GraphEdge,
            [
                "id",
                "namespace_id",
                "from_node_id",
                "to_node_id",
                "relation",
                "status",
                "confidence",
                "created_at",
                "updated_at",
            ],
            edges,
        )
        cites = [("node", n + 1, (n * 37) % events + 1) for n in range(nodes)]
        cites += [("fact", f[0], (f[0] * 53) % events + 1) for f in facts]
        cites += [("edge", g[0], (g[0] * 71) % events + 1) for g in edges]
        bulk_insert(GraphSource, ["kind", "record_id", "event_id"], cites, ignore_conflicts=True)
        report(4, 6, "traces and jobs")
        traces = max(10, events // 50)
        bulk_insert(
            RetrievalTrace,
            ["namespace_id", "kind", "channel", "query", "candidates", "selected", "elapsed_ms", "created_at"],
            [
                (
                    1,
                    "search",
                    rng.choice(("events", "graph", "raw")),
                    _sentence(rng, 4),
                    json.dumps(
                        [
                            {
                                "components": {"bm25": 1.0},
                                "ref": f"event:{(t * 13 + k) % events + 1}",
                                "score": 1.0 - k / 10,
                            }
                            for k in range(8)
                        ],
                        separators=(",", ":"),
                        sort_keys=True,
                    ),
                    "[]",
                    3.0,
                    FIXED,
                )
                for t in range(traces)
            ],
        )
        bulk_insert(
            Job,
            [
                "namespace_id",
                "kind",
                "block_id",
                "status",
                "attempts",
                "priority",
                "last_error",
                "created_at",
                "updated_at",
            ],
            [
                (
                    1,
                    "extraction",
                    j % blocks + 1,
                    "failed" if j % 4 == 0 else "succeeded",
                    3 if j % 4 == 0 else 1,
                    0,
                    "provider timeout" if j % 4 == 0 else None,
                    FIXED,
                    FIXED,
                )
                for j in range(400)
            ],
        )
    db.execute_sql("ANALYZE")
    db.close()
    report(6, 6, "done")
    return {
        "events": events,
        "messages": messages,
        "blocks": blocks,
        "threads": threads,
        "nodes": nodes,
        "traces": traces,
    }


async def _wait_mark(app, name: str, since: float, timeout: float = 60.0) -> float:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        for mark, at in reversed(app.marks):
            if mark == name and at >= since:
                return at
        await asyncio.sleep(0.002)
    raise TimeoutError(f"the workbench never reported {name!r}")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


async def _measure(url: str, namespace: str, size: tuple[int, int], prebuild: bool = True) -> dict[str, Any]:

    started = time.perf_counter()
    app = Workbench(db_url=url, namespace=namespace, config=Config(path=None), prebuild=prebuild)
    out: dict[str, Any] = {"prebuild": prebuild}
    async with app.run_test(size=size) as pilot:
        out["first_paint_ms"] = _ms(await _wait_mark(app, "blocks:paint", started) - started)
        out["first_data_ms"] = _ms(await _wait_mark(app, "blocks:list", started) - started)
        if prebuild:
            # The other views are built in the background once the first one shows its data;
            # a first visit after that is a switch. (--no-prebuild measures first visits that
            # build the view, as when a key is pressed before its view is built.)
            out["views_built_ms"] = _ms(await _wait_mark(app, "app:views-built", started) - started)
            await pilot.pause()
        switches: dict[str, dict[str, float]] = {}
        for visit in ("cold", "warm"):
            for mode in ("timeline", "graph", "traces", "jobs", "search", "blocks"):
                if visit == "cold" and mode == "blocks":
                    continue
                t = time.perf_counter()
                await app.switch_mode(mode)
                entry = switches.setdefault(mode, {})
                entry[f"{visit}_paint_ms"] = _ms(await _wait_mark(app, f"{mode}:paint", t) - t)
                if visit == "cold" and mode != "search":
                    entry["cold_data_ms"] = _ms(await _wait_mark(app, f"{mode}:list", t) - t)
                await pilot.pause()
        out["switch"] = switches

        filters: dict[str, float] = {}

        async def timed(label: str, mode: str, mark: str, change: Callable[[], None]) -> None:
            if app.current_mode != mode:
                await app.switch_mode(mode)
                await pilot.pause()
            t = time.perf_counter()
            change()
            filters[label] = _ms(await _wait_mark(app, mark, t) - t)
            await pilot.pause()

        def submit(selector: str, value: str) -> Callable[[], None]:
            def change() -> None:
                field = app.screen.query_one(selector, Input)
                field.value = value
                field.post_message(Input.Submitted(field, value))

            return change

        def choose(selector: str, value: Any) -> Callable[[], None]:
            return lambda: setattr(app.screen.query_one(selector, Select), "value", value)

        await timed("timeline text", "timeline", "timeline:list", submit("#f-text", "budget"))
        await timed("timeline participant", "timeline", "timeline:list", submit("#f-who", "maya"))
        await timed("timeline dates", "timeline", "timeline:list", submit("#f-from", "2025-06"))
        await timed("timeline type", "timeline", "timeline:list", choose("#f-type", "decision"))
        await timed("timeline lane", "timeline", "timeline:list", choose("#f-lane", "undated"))
        # A lane reuses the day counts of the filter (one grouped query per filter, cached)...
        await timed("timeline histogram (lane)", "timeline", "timeline:histogram", choose("#f-lane", "dated"))
        # ... a filter seen for the first time runs it after its list.
        await timed("timeline histogram (new filter)", "timeline", "timeline:histogram", choose("#f-status", "active"))
        await timed("timeline clear", "timeline", "timeline:list", lambda: app.screen.action_clear_filters())
        await timed("graph search", "graph", "graph:list", submit("#g-search", "atlas"))
        await timed("graph type", "graph", "graph:list", choose("#g-type", "tool"))
        await timed("traces query", "traces", "traces:list", submit("#t-filter", "budget"))
        await timed("traces ref", "traces", "traces:list", submit("#t-filter", "event:42"))
        await timed("jobs failed", "jobs", "jobs:list", choose("#j-show", "failed"))
        await timed("blocks status", "blocks", "blocks:list", choose("#status-filter", "ready"))
        out["filters"] = filters
    return out


def measure(
    url: str, namespace: str = NAMESPACE, size: tuple[int, int] = (120, 36), *, prebuild: bool = True
) -> dict[str, Any]:
    """Drive the workbench headlessly on ``url`` and return the timings (ms)."""
    timings = asyncio.run(_measure(url, namespace, size, prebuild))
    worst_switch = max(v for entry in timings["switch"].values() for k, v in entry.items())
    worst_filter = max(timings["filters"].values())
    timings["worst_switch_ms"] = worst_switch
    timings["worst_filter_ms"] = worst_filter
    timings["targets"] = {
        "first_paint_ms": TARGET_FIRST_PAINT_MS,
        "switch_and_filter_ms": TARGET_SWITCH_MS,
        "first_paint_met": timings["first_paint_ms"] < TARGET_FIRST_PAINT_MS,
        "switch_met": worst_switch < TARGET_SWITCH_MS,
        "filter_met": worst_filter < TARGET_SWITCH_MS,
    }
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    timings["machine"] = {"cpus": os.cpu_count(), "load_avg_1m": round(load[0], 2) if load else None}
    return timings


def run(
    url: str | None,
    events: int,
    *,
    reuse: bool = False,
    seed: int = 7,
    prebuild: bool = True,
    in_process: bool = True,
    launch_runs: int = 0,
    demo_url: str | None = None,
    quit_delay: float | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """Generate (or reuse) the store, then measure: inside the process (unless ``in_process`` is
    False), then, with ``launch_runs``, `strata ui` launched that many times on the demo
    (``demo_url``, else one built in a temporary folder) and on the store. Returns the JSON report."""

    if launch_runs and demo_url is not None:
        demo_path = sqlite_path(demo_url)
        if demo_path is not None and not demo_path.exists():  # said before the store is generated
            raise InvalidInputError(f"--demo {demo_url}: no database there (`strata demo --db URL --no-ui` makes one)")
    given = url is not None
    holder = None
    if not given or (launch_runs and demo_url is None):
        holder = tempfile.TemporaryDirectory(prefix="strata-bench-ui-")
    if url is None:
        url = f"sqlite:///{Path(holder.name) / 'bench-ui.db'}"
    try:
        path = sqlite_path(url)
        t = time.perf_counter()
        if reuse and path is not None and path.exists():
            counts = {"events": events, "reused": True}
        elif given and path is not None and path.exists():
            raise InvalidInputError(
                f"{path} exists: pass --reuse to measure it as it is, or remove it first "
                "(the benchmark writes a fresh store)"
            )
        else:
            counts = generate_store(url, events, seed=seed, progress=progress)
        generate_s = round(time.perf_counter() - t, 2)
        report: dict[str, Any] = {"store": counts, "generate_s": generate_s}
        if in_process:
            report.update(measure(url, prebuild=prebuild))
        if launch_runs:
            report["launch"] = _launches(url, launch_runs, demo_url, holder, quit_delay, progress)
    finally:
        if holder is not None:
            holder.cleanup()
    return report


def _launches(
    url: str,
    runs: int,
    demo_url: str | None,
    holder: tempfile.TemporaryDirectory | None,
    quit_delay: float | None,
    progress: Callable[[int, int, str], None] | None,
) -> dict[str, Any]:
    """`strata ui` launched ``runs`` times on the demo, then on the generated store."""
    built = None
    if demo_url is None:
        # the demo's build (ingest, derivation) loads only when the bench makes a demo
        from core.demo import build_demo

        assert holder is not None
        demo_url = f"sqlite:///{Path(holder.name) / 'demo.db'}"
        t = time.perf_counter()
        build_demo(demo_url)
        db.close()
        built = round(time.perf_counter() - t, 2)
    out: dict[str, Any] = {
        "demo": {
            "url": demo_url,
            "built_s": built,
            **measure_launch(demo_url, runs=runs, quit_delay=quit_delay, progress=progress),
        },
        "large": measure_launch(
            url,
            runs=runs,
            quit_delay=quit_delay,
            target_first_paint_ms=TARGET_FIRST_PAINT_LARGE_MS,
            target_quit_ms=None,
            progress=progress,
        ),
    }
    return out
