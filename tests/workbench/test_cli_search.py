"""`strata search`, `strata ask`, `strata traces` and `strata trace` on the demo memory."""

from __future__ import annotations

import json
import re


from tests.stores import fresh_url
from workbench.cli import main


def run_json(capsys, *argv):
    capsys.readouterr()
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def test_search_raw_finds_the_obsidian_switch(demo_url, capsys):
    hits = run_json(capsys, "search", "raw", "Obsidian notes", "--db", demo_url, "--namespace", "demo")
    assert hits and "Obsidian" in hits[0]["message"]["content"]
    assert all(set(h) >= {"message", "score", "nearby", "block_id"} for h in hits)


def test_search_events_with_a_participant_filter(demo_url, capsys):
    hits = run_json(
        capsys, "search", "events", "launch date", "--db", demo_url, "--namespace", "demo", "--participant", "Maya"
    )
    assert hits and all("Maya" in h["event"]["participants"] for h in hits)


def test_search_graph_returns_visible_nodes(demo_url, capsys):
    hits = run_json(capsys, "search", "graph", "Maya", "--db", demo_url, "--namespace", "demo")
    assert hits and hits[0]["name"].startswith("Maya") and "name" in hits[0]["matched_fields"]


def test_ask_prints_ranked_evidence_with_sources(demo_url, capsys):
    rows = run_json(capsys, "ask", "When is the Lisbon trip?", "--db", demo_url, "--namespace", "demo", "--limit", "5")
    assert len(rows) == 5 and [r["rank"] for r in rows] == [1, 2, 3, 4, 5]
    assert any("Lisbon" in r["message"]["content"] for r in rows)


def test_ask_says_which_rankings_recalled_each_message(demo_url, capsys):
    # The demo never says Maya "works" at Kestrel: the graph's works_at fact recalls it.
    assert main(["ask", "Where does Maya work now?", "--db", demo_url, "--namespace", "demo", "--limit", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Kestrel Logistics" in out and re.search(r"via [a-z, ]*facts\]", out)
    rows = run_json(capsys, "ask", "Where does Maya work now?", "--db", demo_url, "--namespace", "demo", "--limit", "1")
    assert "facts" in rows[0]["retrieved"]["channels"] and "Kestrel" in rows[0]["message"]["content"]


def test_ask_follows_an_outdated_statement_with_its_correction(demo_url, capsys):
    # "I no longer use Notion, I switched to Obsidian" shares no word with the question.
    rows = run_json(
        capsys, "ask", "which app do I keep my notes in?", "--db", demo_url, "--namespace", "demo", "--limit", "3"
    )
    old = next(i for i, r in enumerate(rows) if "notes in Notion" in r["message"]["content"])
    assert any(e["superseded_by"] for e in rows[old]["events"])
    assert "Obsidian" in rows[old + 1]["message"]["content"] and "correction" in rows[old + 1]["retrieved"]["channels"]
    assert (
        main(["ask", "which app do I keep my notes in?", "--db", demo_url, "--namespace", "demo", "--limit", "3"]) == 0
    )
    assert re.search(r"event \d+ \(superseded by event \d+\)", " ".join(capsys.readouterr().out.split()))


def test_searches_are_traced_newest_first(demo_url, capsys):
    run_json(capsys, "search", "raw", "beagle vet", "--db", demo_url, "--namespace", "demo")
    traces = run_json(capsys, "traces", "--db", demo_url, "--namespace", "demo", "--limit", "5")
    assert traces[0]["query"] == "beagle vet" and traces[0]["kind"] == "search"
    assert [t["id"] for t in traces] == sorted((t["id"] for t in traces), reverse=True)
    detail = run_json(capsys, "trace", str(traces[0]["id"]), "--db", demo_url)
    assert detail["trace"]["channel"] == "raw" and detail["candidates"]


def test_search_needs_a_namespace_when_several_exist(tmp_path, capsys):
    url = fresh_url(tmp_path, "s.db")
    for ns in ("a", "b"):
        path = tmp_path / f"{ns}.jsonl"
        path.write_text(
            json.dumps(
                {"thread": "t", "role": "user", "content": "hello there", "created_at": "2026-01-01T00:00:00+00:00"}
            )
            + "\n"
        )
        assert main(["ingest", "jsonl", str(path), "--namespace", ns, "--db", url]) == 0
    capsys.readouterr()
    assert main(["search", "raw", "hello", "--db", url]) == 2
    assert "--namespace is required" in capsys.readouterr().err


def test_ask_is_traced_with_what_ranked_just_below_the_cut(demo_url, capsys):
    rows = run_json(capsys, "ask", "When is the Lisbon trip?", "--db", demo_url, "--namespace", "demo", "--limit", "3")
    traces = run_json(capsys, "traces", "--db", demo_url, "--namespace", "demo", "--limit", "1")
    assert traces[0]["query"] == "When is the Lisbon trip?" and traces[0]["kind"] == "search"
    detail = run_json(capsys, "trace", str(traces[0]["id"]), "--db", demo_url)
    assert detail["trace"]["channel"] == "default"
    assert detail["selected"] == [f"message:{r['retrieved']['message_id']}" for r in rows]
    lost = detail["detail"]["not_recalled"]
    assert len(lost) == 5 and {w["reason"] for w in lost} == {"limit"}
    assert all(w["score"] <= rows[-1]["retrieved"]["score"] for w in lost)
    assert [c["ref"] for c in detail["candidates"]] == detail["selected"] + [w["ref"] for w in lost]
    assert main(["trace", str(traces[0]["id"]), "--db", demo_url]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Why not recalled" in out and lost[0]["ref"] in out and "limit" in out


def test_ask_about_history_prints_the_chain_old_to_new_with_dates(demo_url, capsys):
    question = "which app did I use for my notes before?"
    assert main(["ask", question, "--db", demo_url, "--namespace", "demo", "--limit", "5"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    chain = re.search(r"history: event (\d+) \((\d{4}-\d\d-\d\d)\): ([^→]*)→ event (\d+) \((\d{4}-\d\d-\d\d)\)", out)
    assert chain and "Notion" in chain.group(3) and chain.group(2) <= chain.group(5), out
    rows = run_json(capsys, "ask", question, "--db", demo_url, "--namespace", "demo", "--limit", "5")
    links = next(e["history"] for r in rows for e in r["events"] if e.get("history"))
    assert links[0]["status"] == "superseded" and links[-1]["status"] != "superseded"
    # A plain question prints no chain.
    assert main(["ask", "which app do I keep my notes in?", "--db", demo_url, "--namespace", "demo"]) == 0
    assert "history:" not in capsys.readouterr().out
