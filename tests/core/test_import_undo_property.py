"""Property: import → commit → (later unrelated writes) → undo leaves the store that the same
later writes leave without the import.

Each example copies one derived store twice. Store B gets a random batch (random decisions
overridden at random by a "person"), is committed, sometimes has its graph projection run,
then gets random later writes that do not touch what the batch touched (new conversations
by other people, derivation, forgetting or using other events), and is undone. Store A gets
only the later writes. Their exports must be equal once database ids are relabelled by
rank (B's later rows got higher ids than A's) — with the clock frozen, timestamps included.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.db import db
from core.models import Event
from core.services.capture import append_messages
from core.services.derive import run_pending
from core.services.events import forget_event
from core.services.export import export_data, relabel_ids
from core.services.import_choices import decide
from core.services.import_commit import commit_batch
from core.services.import_preview import preview_import
from core.services.import_undo import undo_batch
from core.api import open_store
from tests.stores import close_template, copy_of, drop, fresh_url, on_postgres

NS = "ns"
FACTS = [
    "Maya lives in Lisbon.",
    "Maya works at Acme as a designer.",
    "Ben has a dog named Rex.",
    "Olga moved to Oslo in 2021 to work at Equinor.",
    "Farid works at Siemens as an engineer.",
]
KEYS = ["Lisbon", "Acme", "Rex", "Oslo", "Siemens"]
IMPORTABLE = 3  # candidates only speak about the first three facts; later writes touch the others
FROZEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)

TEXTS = {
    "para": ["Maya is based in Lisbon.", "Maya is employed by Acme as a designer.", "Ben's dog is called Rex."],
    "update": ["Maya moved to Porto in 2025.", "Maya left Acme and joined Globex.", "Ben now has a dog named Max."],
    "negate": ["Maya does not live in Lisbon.", "Maya has never worked at Acme.", "Ben does not have a dog."],
    "elab": [
        "Maya lives in Lisbon, in a flat near the river with her partner.",
        "Maya works at Acme as a designer on the mobile banking app.",
        "Ben has a dog named Rex, a three-year-old beagle who loves the beach.",
    ],
    "new": ["Ravi plays chess every Sunday.", "Lena paints with oils in her studio.", "Tomas speaks fluent Japanese."],
    "noise": ["User said good morning.", "Maya is tired today.", "Asked the assistant for a joke."],
}
LATER = [
    "Kenji repaired an antique clock for his neighbour.",
    "Kenji booked a ferry to the northern islands.",
    "Kenji finished knitting a green scarf.",
    "Kenji adopted two goldfish named Pip and Pop.",
    "Kenji started learning the accordion.",
]

candidates = st.lists(st.tuples(st.sampled_from(["dup", *TEXTS]), st.integers(0, 2)), min_size=1, max_size=5)
later_ops = st.lists(
    st.one_of(
        st.tuples(st.just("turns"), st.integers(1, 3), st.booleans()),
        st.just(("derive",)),
        st.tuples(st.just("forget"), st.integers(IMPORTABLE, len(FACTS) - 1)),
        st.tuples(st.just("use"), st.integers(IMPORTABLE, len(FACTS) - 1)),
    ),
    max_size=3,
)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    url = fresh_url(tmp_path_factory.mktemp("undo-property"), "template.db")
    with mock.patch("core.timeutil.now_local", lambda: FROZEN):
        open_store(url)
        messages = []
        for i, fact in enumerate(FACTS):
            messages += [
                {"role": "user", "content": fact, "created_at": f"2024-03-0{i + 1}T10:00:00+00:00"},
                {"role": "assistant", "content": "Noted.", "created_at": f"2024-03-0{i + 1}T10:00:05+00:00"},
            ]
        append_messages(NS, "chat", messages, close_turn=True, close_thread=True)
        assert run_pending(NS).failed == 0
        summaries = {e.summary: e.id for e in Event.select()}
        ids = [next(i for s, i in summaries.items() if key in s) for key in KEYS]
        close_template()
    yield url, ids
    if on_postgres():
        drop(url)


def _candidate(kind: str, index: int) -> dict:
    if kind == "dup":
        event = Event.get_by_id(_ids[index])
        return {"title": event.title, "summary": event.summary}
    text = TEXTS[kind][index]
    return {"title": text.rstrip(".")[:60], "summary": text, "temporal": {"mentionedAt": "2025-06-01"}}


_ids: list[int] = []


def _apply(ops: list[tuple], ids: list[int], skip: set[int], step: int) -> None:
    """Apply later writes; ``skip`` holds events the batch touched (those ops are dropped)."""
    from core.services.gate import assess, open_batch, record_use

    for number, op in enumerate(ops):
        if op[0] == "turns":
            messages = []
            for turn in range(op[1]):
                day = 10 + number * 4 + turn
                messages += [
                    {
                        "role": "user",
                        "speaker": "Kenji",
                        "content": LATER[(number + turn) % len(LATER)],
                        "created_at": f"2025-07-{day:02d}T09:00:00+00:00",
                    },
                    {"role": "assistant", "content": "Lovely.", "created_at": f"2025-07-{day:02d}T09:00:05+00:00"},
                ]
            append_messages(NS, f"later-{step}-{number}", messages, close_turn=True, close_thread=op[2])
        elif op[0] == "derive":
            run_pending(NS)
        elif ids[op[1]] not in skip:
            event_id = ids[op[1]]
            if op[0] == "forget":
                if Event.get_by_id(event_id).status != "forgotten":
                    forget_event(event_id)
            else:
                ref = f"event:{event_id}"
                batch = open_batch(NS, "events", KEYS[op[1]], [(ref, [event_id])])
                assess(NS, batch.id, "sufficient", [ref], "it answers", "", "answer")
                record_use(NS, batch.id, [ref], receipt_id=f"use-{step}-{number}")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batch=candidates,
    choices=st.lists(
        st.tuples(
            st.integers(0, 4), st.sampled_from(["add", "ignore", "merge", "supersede", "conflict"]), st.integers(0, 4)
        ),
        max_size=3,
    ),
    project_first=st.booleans(),
    ops=later_ops,
)
def test_undo_equals_never_importing(template, tmp_path_factory, batch, choices, project_first, ops):
    path, ids = template
    _ids[:] = ids
    copies = []
    work = tmp_path_factory.mktemp("example")
    with mock.patch("core.timeutil.now_local", lambda: FROZEN):
        # B: import, commit, later writes, undo.
        copies.append(copy_of(path, work / "b.db"))
        open_store(copies[-1])
        text = json.dumps(
            {
                "schemaVersion": "stratagate.external-memory.v2",
                "sourceType": "external_ai_memory_export",
                "candidates": [_candidate(kind, index) for kind, index in batch],
            }
        )
        preview = preview_import(NS, text)
        allowed = set(ids[:IMPORTABLE])
        for position, action, pick in choices:
            if position >= len(preview.items):
                continue
            item = preview.items[position]
            targets = [m.event_id for m in item.matches if m.event_id in allowed]
            if action in ("merge", "supersede", "conflict"):
                if not targets:
                    continue
                decide(preview.batch.id, item.position, action, [targets[pick % len(targets)]])
            else:
                decide(preview.batch.id, item.position, action)
        committed = commit_batch(preview.batch.id)
        touched = {t for item in committed.items for t in item.effective_target_ids}
        if project_first:
            run_pending(NS)
        _apply(ops, ids, touched, 0)
        run_pending(NS)
        undo_batch(preview.batch.id)
        after_undo = relabel_ids(export_data(NS))
        db.close()

        # A: the same later writes, never imported.
        copies.append(copy_of(path, work / "a.db"))
        open_store(copies[-1])
        _apply(ops, ids, touched, 0)
        run_pending(NS)
        never = relabel_ids(export_data(NS))
        db.close()
    if on_postgres():  # twenty examples in one test: each drops its own two copies
        for url in copies:
            drop(url)
    assert after_undo == never
