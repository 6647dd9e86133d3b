"""The scale benchmark's pieces: the synthetic corpus, one size built and measured, the plot."""

from __future__ import annotations

from itertools import islice

import pytest

from core.bench import git_commit, scale
from core.bench.plot import scale_svg
from core.bench.synthetic import conversation, queries
from core.db import db


def test_the_synthetic_corpus_is_deterministic_and_varied():
    first = list(conversation(600, seed=3))
    assert first == list(conversation(600, seed=3))
    messages = [m for _, batch in first for m in batch]
    assert len(messages) == 600
    assert len({thread for thread, _ in first}) >= 3
    assert {m["role"] for m in messages} >= {"user", "assistant", "tool"}
    assert any(m.get("tool_calls") for m in messages)
    text = " ".join(m["content"] for m in messages)
    for cue in ("decided", "plan to", "Correction:", "deadline"):
        assert cue in text
    years = {m["created_at"][:4] for m in messages}
    assert len(years) >= 3  # dates spread over years
    asked = queries(20)
    assert asked == queries(20) and all(3 <= len(q.split()) <= 8 for q in asked)
    assert next(islice(conversation(10**6), 1)) is not None  # streams: nothing is built up front


@pytest.mark.sqlite_only(reason="the benchmark builds and measures SQLite files in its workdir")
def test_one_size_builds_measures_and_plots(tmp_path):
    path = tmp_path / "scale.db"
    seen = []
    try:
        built = scale.build(240, path, progress=lambda *a: seen.append(a))
        measured = scale.measure(path, queries(4), progress=lambda *a: None)
        base = scale.baseline(path, queries(4), progress=lambda *a: None)
    finally:
        if db.obj is not None and not db.is_closed():
            db.close()
    assert built["messages"] == 240 and built["blocks_ready"] == built["blocks"] > 0 and built["events"] > 0
    assert built["ingest_msgs_per_s"] > 0 and built["build_peak_rss_bytes"] > 0 and seen
    assert built["built_at_commit"] == git_commit()  # kept in the marker, so a reused database says its code
    assert set(measured["latency_ms"]) == set(scale.CHANNELS)
    assert all(v["p95"] >= v["p50"] >= 0 for v in measured["latency_ms"].values())
    assert measured["answered"]["search_raw"] == 4
    assert measured["after_capture_ms"]["p95"] >= measured["after_capture_ms"]["p50"] > 0
    assert measured["after_capture_ms"]["first"] > 0  # the process's first capture, reported apart too
    import sqlite3

    with sqlite3.connect(path) as check:  # the captured turns were rolled back: the corpus is as built
        assert check.execute("SELECT COUNT(*) FROM message").fetchone()[0] == 240
        assert check.execute("SELECT COUNT(*) FROM thread WHERE name = 'bench-capture'").fetchone()[0] == 0
    assert base["baseline_latency_ms"]["p95"] > 0
    row = {"messages": 240, **measured, **base}
    svg = scale_svg({"results": {"240": row, "2400": {**row, "messages": 2400}}})
    assert svg.startswith("<svg") and "default_retrieval" in svg and "rank-bm25" in svg
    assert scale.database_bytes(path) > 0
