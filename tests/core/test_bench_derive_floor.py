"""The derive-floor bench: a build whose rule answers are replayed derives the very same store."""

from __future__ import annotations

import sqlite3

import pytest

from core.bench.derive_floor import RecordingProvider, ReplayingProvider, ReplayMismatch, run_floor
from core.db import db


def _derived(path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return (
            conn.execute(
                "SELECT title, summary, status, superseded_by, happened_start FROM event ORDER BY id"
            ).fetchall()
            + conn.execute("SELECT key, value, status FROM graphfact ORDER BY id").fetchall()
        )


@pytest.mark.sqlite_only(reason="the benchmark builds and measures SQLite files in its workdir")
def test_replayed_answers_derive_the_same_store_and_are_timed_apart(tmp_path):
    seen = []
    try:
        report = run_floor(300, tmp_path, progress=lambda done, total, label: seen.append(label))
    finally:
        if db.obj is not None and not db.is_closed():
            db.close()
    rules, replayed = tmp_path / "floor-300-rules.db", tmp_path / "floor-300-replay.db"
    assert _derived(rules) and _derived(rules) == _derived(replayed)
    assert report["counts"]["events"] > 0 and report["provider_calls"] >= report["counts"]["blocks"]
    assert 0 < report["rules_s"] <= report["with_rules"]["derive_s"]
    assert 0 < report["rules_share_of_derivation"] <= 1
    assert report["rules_replayed"]["derive_only_msgs_per_s"] > 0
    assert {"with rules", "rules replayed"} <= set(seen)
    assert not list(tmp_path.glob("*.tape"))  # the recorded answers are not left behind


def test_a_replay_gives_back_what_was_recorded_and_stops_at_anything_else():
    import io

    tape = io.BytesIO()
    recorder = RecordingProvider(tape)
    said = recorder.summarize_block([{"role": "user", "text": "We decided to ship on Friday.", "speaker": "Ann"}])
    assert recorder.calls == 1 and recorder.rules_s > 0
    tape.seek(0)
    assert ReplayingProvider(tape).summarize_block([]) == said
    tape.seek(0)
    with pytest.raises(ReplayMismatch, match="asked extract_events, recorded summarize_block"):
        ReplayingProvider(tape).extract_events({})
    with pytest.raises(ReplayMismatch, match="nothing more"):
        ReplayingProvider(io.BytesIO()).project_graph({})
