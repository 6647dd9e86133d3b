"""The headless CLI commands, run in-process against a temporary database."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stores import copy_of, fresh_url
from workbench.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run_json(capsys, *argv: str):
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


@pytest.fixture
def demo_db(demo_template, tmp_path):
    return copy_of(demo_template, tmp_path / "demo.db")


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip().startswith("strata 0.")


@pytest.fixture
def cli_demo_db(tmp_path, capsys):
    """The demo built by the command itself (the other tests take a copy of one built once)."""
    url = fresh_url(tmp_path, "demo.db")
    assert main(["demo", "--no-ui", "--db", url]) == 0
    capsys.readouterr()
    return url


def test_demo_builds_a_derived_store(cli_demo_db, capsys):
    demo_db = cli_demo_db
    stats = run_json(capsys, "stats", "--db", demo_db)
    assert stats["messages"] == 272 and stats["threads"] == 4
    assert stats["blocks_ready"] >= 12 and stats["blocks_pending"] == 0
    assert stats["open_tail_turns"] == 0  # the finished sample conversations are sealed
    assert stats["jobs"]["failed"] == 0 and stats["jobs"]["pending"] == 0
    names = [n["name"] for n in run_json(capsys, "namespaces", "--db", demo_db)]
    assert names == ["demo"]


def test_demo_outside_a_terminal_builds_without_opening_the_workbench(tmp_path, capsys, monkeypatch):
    # Under pytest standard input is no terminal, as in a script or CI: the demo must end, not wait for keys.
    import workbench.app

    monkeypatch.setattr(workbench.app, "run_app", lambda **_: pytest.fail("opened the workbench"))
    url = fresh_url(tmp_path, "demo.db")
    assert main(["demo", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "needs a terminal" in out and f"export STRATA_DB={shlex.quote(url)}" in out  # see test_cli_database.py
    assert run_json(capsys, "stats", "--db", url)["blocks_ready"] >= 12


def test_demo_rebuilds_an_earlier_demo(demo_db, capsys):
    assert main(["demo", "--no-ui", "--db", demo_db]) == 0
    capsys.readouterr()
    assert [n["name"] for n in run_json(capsys, "namespaces", "--db", demo_db)] == ["demo"]


def test_demo_refuses_a_store_holding_other_namespaces(tmp_path, capsys):
    lines = tmp_path / "one.jsonl"
    lines.write_text(
        json.dumps({"thread": "t", "role": "user", "content": "keep me", "created_at": "2024-01-01T00:00:00Z"}) + "\n",
        encoding="utf-8",
    )
    url = fresh_url(tmp_path, "mine.db")
    assert main(["ingest", "jsonl", str(lines), "--db", url, "--namespace", "mine"]) == 0
    capsys.readouterr()
    assert main(["--db", url, "demo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("strata: error:") and "'mine'" in err and err.strip().count("\n") == 0
    assert [(n["name"], n["messages"]) for n in run_json(capsys, "namespaces", "--db", url)] == [("mine", 1)]


@pytest.mark.sqlite_only(reason="a file at the demo's path that is not a database")
def test_demo_refuses_a_file_that_is_not_a_strata_database(tmp_path, capsys):
    target = tmp_path / "notes.txt"
    target.write_text("my notes\n", encoding="utf-8")
    assert main(["demo", "--no-ui", "--db", str(target)]) == 2
    assert "is not a Strata database" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "my notes\n"
    assert main(["demo", "--no-ui", "--db", str(tmp_path)]) == 2  # a directory
    assert "not a regular file" in capsys.readouterr().err


@pytest.mark.sqlite_only(reason="the demo's default store is a SQLite file in the data directory")
def test_demo_never_builds_over_strata_db(tmp_path, capsys, monkeypatch):
    from workbench.cli import memory

    kept = tmp_path / "kept.db"
    kept.write_bytes(b"not even a database")
    monkeypatch.setenv("STRATA_DB", f"sqlite:///{kept}")
    monkeypatch.setattr(memory, "demo_db_path", lambda: tmp_path / "data" / "demo.db")
    assert main(["demo", "--no-ui"]) == 0
    assert str(tmp_path / "data" / "demo.db") in " ".join(capsys.readouterr().out.split())
    assert kept.read_bytes() == b"not even a database"


@pytest.mark.parametrize("argv", [["ui"], []])
def test_workbench_outside_a_terminal_is_a_clear_error(argv, demo_db, capsys):
    assert main([*argv, "--db", demo_db]) == 2
    assert "the workbench needs a terminal" in capsys.readouterr().err


def test_workbench_in_a_terminal_opens_with_the_options(demo_db, monkeypatch):
    import workbench.app
    from workbench.cli import ui

    opened = []
    monkeypatch.setattr(ui, "in_terminal", lambda: True)
    monkeypatch.setattr(workbench.app, "run_app", lambda **kw: opened.append(kw) or 0)
    assert main(["ui", "--db", demo_db, "--namespace", "demo", "--theme", "nord"]) == 0
    # called with the arguments given (not as the program): the workbench leaves the process running when quit
    assert opened == [{"db_url": demo_db, "namespace": "demo", "theme": "nord", "ends_process": False}]


def test_blocks_block_and_expand(demo_db, capsys):
    blocks = run_json(capsys, "blocks", "--db", demo_db, "--namespace", "demo", "--thread", "work-planning")
    assert [b["thread"] for b in blocks] == ["work-planning"] * len(blocks)
    oldest = blocks[0]
    assert oldest["status"] == "ready" and oldest["current_level"] < 5
    assert set(oldest["tokens"]) == {"0", "1", "2", "3", "4", "5"}
    view = run_json(capsys, "block", str(oldest["id"]), "--db", demo_db, "--level", "5")
    assert view["level"] == 5 and "Maya" in view["content"]
    lifted = run_json(capsys, "expand-block", str(oldest["id"]), "--db", demo_db, "--level", "next")
    # "next" passes over a level showing nothing new (L3 equal to L4 when the chat has nothing to fold)
    same = oldest["current_level"] == 3 and oldest["tokens"]["3"] == oldest["tokens"]["4"]
    assert lifted["level"] == (5 if same else oldest["current_level"] + 1)
    again = run_json(capsys, "blocks", "--db", demo_db, "--namespace", "demo", "--thread", "work-planning")
    assert again[0]["last_lifted_by"] == "user" and again[0]["current_level"] == lifted["level"]


@pytest.mark.parametrize("level", ["inf", "-inf", "1e400", "foo", "L9", "L-1", "7", "-3", "2.5", ""])
def test_expand_block_rejects_a_level_it_does_not_know_and_saves_nothing(level, demo_db, capsys):
    block = run_json(capsys, "blocks", "--db", demo_db, "--namespace", "demo")[0]
    with pytest.raises(SystemExit) as exited:
        main(["expand-block", str(block["id"]), "--db", demo_db, f"--level={level}"])
    assert exited.value.code == 2
    assert "expansion target must be next, 0..5, L0..L5 or raw" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["block", str(block["id"]), "--db", demo_db, f"--level={level}"])
    assert "level must be 0..5, L0..L5 or raw" in capsys.readouterr().err
    assert run_json(capsys, "blocks", "--db", demo_db, "--namespace", "demo")[0] == block


def test_expand_block_only_lifts(demo_db, capsys):
    """Expanding re-anchors the block's decay: a shallower target would age it early, so it is refused;
    reading it shallower is `block --level`, which takes the same spellings."""
    block = next(
        b for b in run_json(capsys, "blocks", "--db", demo_db, "--namespace", "demo") if 0 < b["current_level"] < 5
    )
    below = block["current_level"] - 1
    assert main(["expand-block", str(block["id"]), "--db", demo_db, "--level", f"L{below}"]) == 2
    err = capsys.readouterr().err
    assert f"is shown at L{block['current_level']}; expanding only lifts it" in err and err.count("\n") == 1
    assert run_json(capsys, "block", str(block["id"]), "--db", demo_db, "--level", f"L{below}")["level"] == below
    same = run_json(capsys, "expand-block", str(block["id"]), "--db", demo_db, "--level", str(block["current_level"]))
    assert same["level"] == block["current_level"]  # re-anchored where it is: it fades again from there
    assert run_json(capsys, "expand-block", str(block["id"]), "--db", demo_db, "--level", "RAW")["level"] == 5
    assert run_json(capsys, "expand-block", str(block["id"]), "--db", demo_db, "--level", "next")["level"] == 5


def test_blocks_come_a_page_at_a_time(demo_db, capsys, monkeypatch):
    """At a million messages there are ~30k blocks: the list is bounded by default and pages by position."""
    everything = run_json(capsys, "blocks", "--db", demo_db, "--namespace", "demo", "--limit", "0")
    assert len(everything) >= 12
    assert main(["blocks", "--db", demo_db, "--namespace", "demo", "--limit", "5"]) == 0
    out = capsys.readouterr()
    assert f"--after {everything[4]['sequence']}" in out.err
    pages, after = [], 0
    while True:
        page = run_json(capsys, "blocks", "--db", demo_db, "--namespace", "demo", "--limit", "5", "--after", str(after))
        if not page:
            break
        pages.append(page)
        after = page[-1]["sequence"]
    assert [b["id"] for page in pages for b in page] == [b["id"] for b in everything]
    assert all(len(page) <= 5 for page in pages)
    import core.services.blocks as blocks

    seen = {}
    real = blocks.list_blocks
    monkeypatch.setattr(blocks, "list_blocks", lambda *a, **k: seen.update(k) or real(*a, **k))
    run_json(capsys, "blocks", "--db", demo_db, "--namespace", "demo")
    assert seen["limit"] == 200


def test_events_come_a_page_at_a_time(demo_db, capsys):
    """`--after EVENT` continues where a page ended, along the time-order index (no OFFSET walk),
    across dated and undated events alike; the hint names the next page's argument."""
    everything = run_json(capsys, "events", "--db", demo_db, "--namespace", "demo", "--limit", "1000")
    assert (
        len(everything) >= 12
        and any(e["happened_start"] for e in everything)
        and any(not e["happened_start"] for e in everything)
    )
    assert main(["events", "--db", demo_db, "--namespace", "demo", "--limit", "7"]) == 0
    assert f"--after {everything[6]['id']}" in capsys.readouterr().err
    pages, after = [], []
    while True:
        page = run_json(capsys, "events", "--db", demo_db, "--namespace", "demo", "--limit", "7", *after)
        if not page:
            break
        pages.append(page)
        after = ["--after", str(page[-1]["id"])]
    assert [e["id"] for page in pages for e in page] == [e["id"] for e in everything]
    assert main(["events", "--db", demo_db, "--after", "99999999"]) != 0
    assert "event 99999999 does not exist" in capsys.readouterr().err


def test_events_text_takes_many_words_and_says_when_too_many(demo_db, capsys):
    assert run_json(capsys, "events", "--db", demo_db, "--text", " ".join(f"w{i}" for i in range(150))) == []
    assert main(["events", "--db", demo_db, "--text", " ".join(f"w{i}" for i in range(500))]) == 2
    err = capsys.readouterr().err
    assert "500 distinct words; at most 200" in err and err.count("\n") == 1


def test_events_type_is_a_known_type_or_a_spelling_of_one(demo_db, capsys):
    assert main(["events", "--db", demo_db, "--type", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "unknown event type 'nosuch'" in err and "decision" in err and "migration" in err
    decided = run_json(capsys, "events", "--db", demo_db, "--type", "decided")
    assert decided and decided == run_json(capsys, "events", "--db", demo_db, "--type", "decision")
    assert {e["event_type"] for e in decided} == {"decision"}


def test_verify_passes_the_demo_and_fails_on_a_broken_citation(demo_db, capsys):
    report = run_json(capsys, "verify", "--db", demo_db, "--namespace", "demo")
    assert report["ok"] is True and report["events"] > 0 and report["problems"] == []
    from core.db import db
    from core.models import EventSource
    from core.api import open_store

    open_store(demo_db)
    event_id = EventSource.select(EventSource.event).order_by(EventSource.event).first().event_id
    EventSource.delete().where(EventSource.event == event_id).execute()
    db.close()
    assert main(["verify", "--db", demo_db, "--namespace", "demo"]) == 1
    out = capsys.readouterr()
    assert f"event {event_id} cites no message" in out.out and "verify" in out.err  # the progress bar


def test_derive_reports_nothing_left(demo_db, capsys):
    report = run_json(capsys, "derive", "--db", demo_db)
    assert report["processed"] == 0 and report["failed"] == 0


def _ingested_chat(tmp_path, name: str, *, turns: int, capsys) -> str:
    """A new store holding one thread of ``turns`` user/assistant turns, not derived; its URL."""
    lines = tmp_path / f"{name}.jsonl"
    lines.write_text(
        "".join(
            json.dumps(
                {"thread": "t", "role": role, "content": f"{role} turn {i}", "created_at": f"2024-01-01T00:00:{i:02d}Z"}
            )
            + "\n"
            for i in range(turns)
            for role in ("user", "assistant")
        ),
        encoding="utf-8",
    )
    url = fresh_url(tmp_path, name)
    assert main(["ingest", "jsonl", str(lines), "--db", url]) == 0
    capsys.readouterr()
    return url


def test_derive_exits_1_when_a_job_is_left_failed(tmp_path, capsys, monkeypatch):
    from core.providers.offline import OfflineProvider
    from core.services import derive, jobs

    class Broken(OfflineProvider):
        def summarize_block(self, messages):
            raise TimeoutError("model did not answer")

    monkeypatch.setattr(derive, "get_provider", lambda name: Broken())
    monkeypatch.setattr(jobs, "backoff_seconds", lambda attempts: 3600)  # no retry falls due during the test
    url = _ingested_chat(tmp_path, "fail.db", turns=30, capsys=capsys)
    assert main(["derive", "--db", url]) == 1
    out = capsys.readouterr()
    assert "0 succeeded" in out.out and "still failed" in out.err and "model did not answer" in out.err
    assert "tried again by the next `strata derive`" in out.err
    # Not silent on the next run either: nothing was due, but the jobs are still failed.
    assert main(["derive", "--db", url, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["processed"] == 0
    # The outage is over: the next run after the backoff derives everything and exits 0.
    from core.models import Job
    from core.api import open_store

    monkeypatch.setattr(derive, "get_provider", lambda name: OfflineProvider())
    open_store(url)
    Job.update(next_retry_at=0).where(Job.status == "failed").execute()
    assert main(["derive", "--db", url]) == 0
    assert "still failed" not in capsys.readouterr().err


def test_derive_names_a_job_failed_for_good_and_how_to_retry_it(tmp_path, capsys, monkeypatch):
    from core.providers.base import ProviderOutputError
    from core.providers.offline import OfflineProvider
    from core.services import derive

    class Wrong(OfflineProvider):
        def summarize_block(self, messages):
            raise ProviderOutputError("the model answered with no title")

    monkeypatch.setattr(derive, "get_provider", lambda name: Wrong())
    monkeypatch.setattr(derive, "MAX_BACKOFF_WAIT", 10.0)  # the run waits out its own retries (1 s, 2 s)
    monkeypatch.setattr("core.services.jobs.backoff_seconds", lambda attempts: 0.01)
    url = _ingested_chat(tmp_path, "wrong.db", turns=14, capsys=capsys)
    assert main(["derive", "--db", url]) == 1
    err = capsys.readouterr().err
    assert "failed for good: `strata retry 1` after fixing the cause" in err and "no title" in err


def test_errors_are_one_line_with_nonzero_exit(demo_db, capsys):
    assert main(["block", "99999", "--db", demo_db]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "block 99999" in err
    assert main(["stats", "--db", demo_db, "--namespace", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["jobs", "--db", demo_db, "--namespace", "nope"]) == 2  # not an empty list
    assert "namespace 'nope' does not exist" in capsys.readouterr().err


HUGE = "99999999999999999999"  # past 2**63 - 1: SQLite cannot even bind it


@pytest.mark.parametrize(
    "argv",
    [
        ["block", HUGE],
        ["event", HUGE],
        ["forget", HUGE],
        ["restore", HUGE],
        ["retry", HUGE],
        ["trace", HUGE],
        ["expand-block", HUGE, "--level", "next"],
        ["import", "show", HUGE],
        ["import", "undo", HUGE],
        ["import", "decide", "1", HUGE, "add"],
        ["event", "0"],
        ["event", "-1"],
        ["blocks", "--after", HUGE],
        ["blocks", "--limit", HUGE],
        ["blocks", "--limit", "-1"],
        ["events", "--after", HUGE],
        ["events", "--offset", HUGE],
        ["events", "--offset", "-1"],
        ["events", "--limit", "0"],
        ["events", "--limit", "-1"],
        ["events", "--limit", "10001"],
        ["graph", "--limit", "0"],
        ["graph", "--limit", "-1"],
        ["jobs", "--limit", "0"],
        ["jobs", "--limit", "-3"],
        ["jobs", "--limit", HUGE],
        ["traces", "--limit", "0"],
        ["import", "list", "--limit", "0"],
        ["search", "raw", "x", "--limit", "0"],
        ["ask", "x", "--limit", "-1"],
        ["events", "--limit", "ten"],
    ],
)
def test_ids_limits_and_offsets_out_of_range_are_usage_errors(argv, demo_db, capsys):
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--db", demo_db])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "error: argument" in err and "expected an integer" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [["stats"], ["blocks"], ["events"], ["jobs"], ["verify"], ["graph"], ["search", "raw", "x"], ["export"], ["mcp"]],
)
def test_a_blank_namespace_is_a_usage_error_not_every_namespace(argv, demo_db, capsys):
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--namespace", " ", "--db", demo_db])
    assert exited.value.code == 2
    assert "namespace name cannot be empty" in capsys.readouterr().err


def test_a_search_limit_is_checked_against_its_channel(demo_db, capsys):
    assert main(["search", "events", "Maya", "--db", demo_db, "--limit", "21"]) == 2
    assert "--limit for events search is 1-20" in capsys.readouterr().err
    assert main(["search", "raw", "Maya", "--db", demo_db, "--limit", "21", "--json"]) == 0


def test_node_past_64_bits_does_not_exist(demo_db, capsys):
    assert main(["node", HUGE, "--db", demo_db]) == 2
    assert f"graph node {HUGE} does not exist" in capsys.readouterr().err


def test_python_dash_m_workbench_runs():
    out = subprocess.run([sys.executable, "-m", "workbench", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.startswith("strata ")


def test_a_reader_that_stops_early_ends_the_command_quietly(demo_db):
    """`strata export | head -c 10`: no traceback, and the exit status a shell gives a SIGPIPE'd tool."""
    process = subprocess.Popen(
        [sys.executable, "-m", "workbench", "export", "--db", demo_db, "--namespace", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdout.read(10) == b'{\n  "block'
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(60) == 141 and err == ""


def test_cli_import_does_not_load_textual():
    code = "import sys, workbench.cli, workbench.cli.memory; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"
