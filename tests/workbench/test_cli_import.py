"""`strata import …`, `strata export` and `strata bench import` against a temporary store."""

from __future__ import annotations

import json

import pytest

from tests.stores import fresh_url
from workbench.cli import main

EXPORT = {
    "schemaVersion": "stratagate.external-memory.v2",
    "sourceType": "external_ai_memory_export",
    "sourceSystem": "OtherAI",
    "exportedAt": "2025-06-01",
    "candidates": [
        {
            "title": "Maya moved",
            "summary": "Maya moved from Lisbon to Porto in 2025.",
            "temporal": {"participants": ["Maya"], "mentionedAt": "2025-05-01"},
        },
        {"title": "Priya", "summary": "Priya plays the cello in a community orchestra.", "confidence": 0.9},
        {"title": "hello", "summary": "User said hello to the assistant."},
    ],
}


def run(capsys, *argv: str, code: int = 0):
    result = main(list(argv))
    captured = capsys.readouterr()
    assert result == code, captured.err
    return captured


def run_json(capsys, *argv: str):
    return json.loads(run(capsys, *argv, "--json").out)


@pytest.fixture
def url(tmp_path):
    from core.db import db
    from core.services.capture import append_messages
    from core.services.derive import run_pending
    from core.api import open_store

    url = fresh_url(tmp_path, "cli.db")
    open_store(url)
    messages = []
    for text in ("Maya lives in Lisbon.", "Ben has a dog named Rex."):
        messages += [
            {"role": "user", "content": text, "created_at": "2024-03-01T10:00:00+00:00"},
            {"role": "assistant", "content": "Noted.", "created_at": "2024-03-01T10:00:05+00:00"},
        ]
    append_messages("ns", "chat", messages, close_turn=True, close_thread=True)
    assert run_pending("ns").failed == 0
    db.close()
    return url


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_preview_decide_commit_show_list_undo_round_trip(url, tmp_path, capsys):
    before = run(capsys, "export", "--db", url, "--namespace", "ns").out
    file = write(tmp_path, "export.json", "```json\n" + json.dumps(EXPORT) + "\n```")
    table = run(capsys, "import", "preview", file, "--db", url, "--namespace", "ns")
    assert "Import batch 1" in table.out and "batch 1: 3 items" in table.out and "IGNORE" in table.out
    assert "import batch 1: 3 candidates" in table.err
    assert run(capsys, "export", "--db", url, "--namespace", "ns").out == before  # preview writes no memory

    preview = run_json(capsys, "import", "show", "1", "--db", url)
    items = preview["items"]
    assert [i["position"] for i in items] == [1, 2, 3] and preview["batch"]["status"] in (
        "ready",
        "awaiting_confirmation",
    )
    first = items[0]
    assert first["action"] == "supersede" and first["matches"] and first["reason"]
    row = run_json(capsys, "import", "decide", "1", "2", "ignore", "--db", url)
    assert row["effective_action"] == "ignore" and row["choice_action"] == "ignore"
    error = run(capsys, "import", "decide", "1", "1", "conflict", "--target", "9999", "--db", url, code=2).err
    assert "event 9999 is neither among item 1's matches" in error
    # Several targets, and one the person knows of outside the matches (any live event).
    events = {e["summary"]: e["id"] for e in run_json(capsys, "events", "--db", url, "--namespace", "ns")}
    lisbon, rex = (next(i for s, i in events.items() if key in s) for key in ("Lisbon", "Rex"))
    row = run_json(
        capsys, "import", "decide", "1", "3", "conflict", "--target", str(lisbon), "--target", str(rex), "--db", url
    )
    assert row["choice_target_ids"] == [lisbon, rex] and row["effective_target_ids"] == [lisbon, rex]
    shown = run(capsys, "import", "show", "1", "--db", url).out
    assert "chosen CONFLICT" in shown and f"#{rex} " in shown and "Ben has a dog named Rex" in shown
    assert "reset to the preview's decision" in run(capsys, "import", "reset", "1", "3", "--db", url).out
    assert run_json(capsys, "import", "show", "1", "--db", url)["items"][2]["choice_action"] is None

    committed = run_json(capsys, "import", "commit", "1", "--db", url)
    assert committed["batch"]["status"] == "committed" and committed["batch"]["imported_count"] >= 1
    assert "1 succeeded" in run(capsys, "derive", "--db", url).out  # the import's graph projection
    listed = run_json(capsys, "import", "list", "--db", url)
    assert [(b["id"], b["status"]) for b in listed] == [(1, "committed")]
    assert "Import batches" in run(capsys, "import", "list", "--db", url).out

    undone = run_json(capsys, "import", "undo", "1", "--db", url)
    assert undone["batch"]["status"] == "undone" and undone["removed_event_ids"]
    assert run(capsys, "export", "--db", url, "--namespace", "ns").out == before  # byte-identical
    assert "already undone" in run(capsys, "import", "undo", "1", "--db", url, code=2).err
    assert "was undone" in run(capsys, "import", "commit", "1", "--db", url, code=2).err


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("notjson.json", "this is not json", "not JSON at line 1 column 1"),
        ("version.json", json.dumps({**EXPORT, "schemaVersion": "stratagate.external-memory.v9"}), "schemaVersion"),
        ("source.json", json.dumps({**EXPORT, "sourceType": "chat_log"}), "sourceType"),
        (
            "many.json",
            json.dumps({**EXPORT, "candidates": [{"title": f"t{i}", "summary": "s"} for i in range(201)]}),
            "201 candidates",
        ),
        (
            "title.json",
            json.dumps({**EXPORT, "candidates": [{"summary": "no title"}]}),
            "candidates[0].title: required",
        ),
        (
            "confidence.json",
            json.dumps({**EXPORT, "candidates": [{"title": "t", "summary": "s", "confidence": "high"}]}),
            "candidates[0].confidence",
        ),
        (
            "date.json",
            json.dumps(
                {
                    **EXPORT,
                    "candidates": [
                        {"title": "t", "summary": "s", "temporal": {"happenedStart": "2024-13-40", "precision": "day"}}
                    ],
                }
            ),
            "'2024-13-40' is not a valid date",
        ),
        pytest.param(
            "surrogate.json",
            json.dumps({**EXPORT, "candidates": [{"title": "Maya \ud800", "summary": "s"}]}),
            "field 'candidates[0].title': \\ud800 is a lone surrogate",
            id="lone-surrogate",
        ),
        pytest.param(
            "deep.json",
            "[" * 5000,
            "nested too deeply to read (more than 512 levels of arrays and objects) at line 1 column 513",
            id="nested-too-deep",
        ),
    ],
)
def test_bad_input_is_rejected_with_its_location_and_nothing_written(url, tmp_path, capsys, name, text, message):
    before = run(capsys, "export", "--db", url, "--namespace", "ns").out
    file = write(tmp_path, name, text)
    error = run(capsys, "import", "preview", file, "--db", url, "--namespace", "ns", code=2).err
    assert message in " ".join(error.split()) and name in error
    assert run_json(capsys, "import", "list", "--db", url) == []
    assert run(capsys, "export", "--db", url, "--namespace", "ns").out == before


def test_a_directory_or_an_empty_namespace_is_refused(url, tmp_path, capsys):
    assert f"{tmp_path}: is a directory" in run(capsys, "import", "preview", str(tmp_path), "--db", url, code=2).err
    file = write(tmp_path, "export.json", json.dumps(EXPORT))
    with pytest.raises(SystemExit) as exited:
        main(["import", "preview", file, "--db", url, "--namespace", ""])
    assert exited.value.code == 2 and "namespace name cannot be empty" in capsys.readouterr().err
    assert run_json(capsys, "import", "list", "--db", url) == []


def test_a_file_over_four_megabytes_is_refused(url, tmp_path, capsys):
    file = write(tmp_path, "big.json", json.dumps(EXPORT) + " " * 4_000_001)
    error = run(capsys, "import", "preview", file, "--db", url, code=2).err
    assert "at most 4,000,000 bytes" in error and run_json(capsys, "import", "list", "--db", url) == []


def test_mem0_and_text_formats_and_stale_commit(url, tmp_path, capsys):
    mem0 = write(
        tmp_path, "mem0.json", json.dumps([{"memory": "Ravi speaks Hindi", "created_at": "2025-01-01T00:00:00Z"}])
    )
    preview = run_json(capsys, "import", "preview", mem0, "--format", "mem0", "--db", url)
    assert preview["batch"]["format"] == "mem0" and preview["items"][0]["candidate"]["summary"] == "Ravi speaks Hindi"
    text = write(tmp_path, "facts.md", "- Lena paints with oils\n- Omar runs marathons\n")
    second = run_json(capsys, "import", "preview", text, "--format", "text", "--db", url, "--top-k", "3")
    assert second["batch"]["total"] == 2 and second["batch"]["top_k"] == 3
    # Committing the first preview after the second batch was... only previewed: still fresh.
    assert (
        run_json(capsys, "import", "commit", str(second["batch"]["id"]), "--db", url)["batch"]["status"] == "committed"
    )
    stale = run(capsys, "import", "commit", str(preview["batch"]["id"]), "--db", url, code=2)
    assert "changed since the preview" in stale.err and "Refreshed preview" in stale.out
    assert (
        run_json(capsys, "import", "commit", str(preview["batch"]["id"]), "--db", url)["batch"]["status"] == "committed"
    )


def test_a_preview_into_a_new_namespace_leaves_the_namespaces_as_they_are(url, tmp_path, capsys):
    """Preview writes no memory, so it creates no namespace (only the commit does): a mistyped
    --namespace must not leave one behind, or every command without --namespace stops working."""
    file = write(tmp_path, "export.json", json.dumps(EXPORT))
    shown = run(capsys, "import", "preview", file, "--db", url, "--namespace", "nss")
    assert "namespace 'nss' does not exist yet" in shown.err and "import commit" in shown.err
    assert [n["name"] for n in run_json(capsys, "namespaces", "--db", url)] == ["ns"]
    assert "Maya" in run(capsys, "events", "--db", url).out  # still the only namespace: no --namespace needed
    assert [b["namespace"] for b in run_json(capsys, "import", "list", "--db", url, "--namespace", "nss")] == ["nss"]
    assert (
        "namespace 'nope' does not exist"
        in run(capsys, "import", "list", "--db", url, "--namespace", "nope", code=2).err
    )
    run_json(capsys, "import", "commit", "1", "--db", url)
    assert [n["name"] for n in run_json(capsys, "namespaces", "--db", url)] == ["ns", "nss"]


def test_prompt_export_formats_and_namespace_choice(url, capsys):
    prompt = run(capsys, "import", "prompt").out
    assert "stratagate.external-memory.v2" in prompt and "ONE JSON document" in prompt
    assert "stratagate" in run_json(capsys, "import", "prompt")["prompt"]
    first = run(capsys, "export", "--db", url).out  # the only namespace
    assert first == run(capsys, "export", "--db", url, "--namespace", "ns").out
    data = json.loads(first)
    sections = {"export_version", "namespace", "threads", "messages", "blocks", "events", "graph", "receipts", "notes"}
    assert set(data) == sections
    assert data["events"] and all("weight" in e for e in data["events"])
    markdown = run(capsys, "export", "--db", url, "--format", "markdown").out
    assert markdown.startswith("# Strata export: ns") and "## Events" in markdown
    assert "does not exist" in run(capsys, "export", "--db", url, "--namespace", "nope", code=2).err


def test_bench_import_prints_a_table_and_writes_the_report_keys(tmp_path, capsys):
    out = tmp_path / "report.json"
    printed = run(
        capsys, "bench", "import", "--candidates", "30", "--people", "5", "--seed", "3", "--json-out", str(out)
    )
    table = " ".join(printed.out.split())
    assert "Import decisions, seed 3" in table and "undo round trip identical" in table
    report = json.loads(out.read_text())
    assert {"accuracy", "auto_applied_share", "auto_applied_precision", "undo_round_trip"} <= set(report)
    assert set(report["accuracy"]) == {"overall", "add", "merge", "supersede", "conflict", "ignore"}
    assert report["undo_round_trip"] is True and report["benchmark"] == "import" and report["candidates"] == 30


def test_a_text_file_is_a_list_of_facts_unless_a_format_is_given(url, tmp_path, capsys):
    facts = write(tmp_path, "facts.txt", "- Lena paints with oils\n- Omar runs marathons\n")
    preview = run_json(capsys, "import", "preview", facts, "--db", url, "--namespace", "ns")
    assert preview["batch"]["format"] == "text" and preview["batch"]["total"] == 2
    error = run(capsys, "import", "preview", facts, "--format", "v2", "--no-recover", "--db", url, code=2).err
    assert "not JSON" in error


def test_show_prints_the_subject_slot_and_value_a_decision_or_match_carries(capsys):
    """Whatever shape the decider gives them (fields, or nested), and nothing when there are none."""
    from types import SimpleNamespace as NS

    from workbench.cli.imports import _print_matches
    from workbench.import_facts import facts_text

    match = NS(
        event_id=7,
        title="Maya lives in Lisbon",
        status="active",
        score=0.5,
        matched={"subject": "Maya", "slot": "home", "value": ["Lisbon"]},
    )
    bare = NS(event_id=8, title="Ben has a dog", status="active", score=0.25)
    item = NS(
        position=1,
        candidate=NS(title="Maya moved to Porto"),
        action="supersede",
        choice_action=None,
        reason="Maya's home changes [subject Maya; slot home; new Porto]",
        target_ids=(7,),
        effective_target_ids=(),
        matches=(match, bare),
        subject="Maya",
        slot="home",
        value="Porto",
    )
    _print_matches(NS(items=(item,)))
    out = capsys.readouterr().out
    assert "proposed SUPERSEDE: Maya's home changes [subject Maya; slot home; new Porto]" in out
    assert "matched subject Maya · slot home · value Porto" in out
    assert "* #7 Maya lives in Lisbon (active, score 0.500)\n      subject Maya · slot home · value Lisbon" in out
    assert "#8 Ben has a dog (active, score 0.250)\n" in out
    assert facts_text(bare) == "" and facts_text({"decision": {"slot": "pet"}}) == "slot pet"
