"""`strata ingest` end to end, in-process through workbench.cli.main.

Bad input must exit non-zero with exactly one error line that says where the problem
is, and leave an existing database exactly as it was.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workbench.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCOMO_REAL = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"

DATE_1 = "1:56 pm on 8 May, 2023"

SAVED = pytest.mark.sqlite_only(reason="search index copies are saved beside a SQLite file; a server database has none")


# --------------------------------------------------------------------------- helpers


pytestmark = pytest.mark.usefixtures("cli_without_strata_db")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def snapshot(capsys, db_url: str) -> tuple:
    """`strata stats --json` plus `strata namespaces --json` (whose revisions move on any write)."""
    return run_json(capsys, "stats", "--db", db_url), run_json(capsys, "namespaces", "--db", db_url)


def locomo_sample(sample_id: str, user_turns: int, *, date: str = DATE_1) -> dict:
    turns = []
    for i in range(user_turns):
        turns.append({"speaker": "Ann", "dia_id": f"D1:{2 * i + 1}", "text": f"question {i}"})
        turns.append(
            {
                "speaker": "Bob",
                "dia_id": f"D1:{2 * i + 2}",
                "text": f"answer {i}",
                **({"blip_caption": "a dog on a beach"} if i == 0 else {}),
            }
        )
    return {
        "sample_id": sample_id,
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": date, "session_1": turns},
        "qa": [],
    }


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def jl(thread: str, role, content, created_at="2024-03-01T09:00:00", **extra) -> dict:
    return {"thread": thread, "role": role, "content": content, "created_at": created_at, **extra}


@pytest.fixture
def seeded(tmp_path, db_url, capsys) -> str:
    """A database that already holds a LoCoMo conversation and a JSONL thread."""
    seed = write_json(tmp_path / "seed-locomo.json", [locomo_sample("seed-conv", 14)])
    assert run_json(capsys, "ingest", "locomo", str(seed), "--db", db_url)["messages"] == 28
    lines = write_jsonl(tmp_path / "seed.jsonl", [jl("notes", "user", "remember milk", id="n1")])
    assert run_json(capsys, "ingest", "jsonl", str(lines), "--db", db_url)["messages"] == 1
    return db_url


# --------------------------------------------------------------------------- happy paths


@SAVED
def test_cli_ingest_leaves_the_search_index_ready(tmp_path, db_url, capsys, monkeypatch):
    """A large import ends by building and saving the message segment, so the first search does not
    read every posting from SQL (35 s after a million messages)."""
    from core.search import segment

    monkeypatch.setattr(segment, "MERGE_MIN", 50)  # "large": a few hundred postings here
    rows = [
        jl("t", "user" if i % 2 == 0 else "assistant", f"message {i} about the harbour walk and the ferry times")
        for i in range(60)
    ]
    assert (
        run_json(capsys, "ingest", "jsonl", str(write_jsonl(tmp_path / "big.jsonl", rows)), "--db", db_url)["messages"]
        == 60
    )
    saved = list((tmp_path / "strata.db.search").glob("message-*"))
    assert saved, "no saved message segment after ingest"


def test_cli_ingest_locomo_reports_and_is_idempotent(tmp_path, db_url, capsys):
    path = write_json(tmp_path / "locomo.json", [locomo_sample("c-1", 30), locomo_sample("c-2", 24)])

    report = run_json(capsys, "ingest", "locomo", str(path), "--db", db_url)

    assert report == {
        "format": "locomo",
        "path": str(path),
        "units": 2,
        "units_skipped": 0,
        "units_empty": 0,
        "messages": 108,
        "blocks_sealed": 5,
        "namespaces": ["c-1", "c-2"],
    }
    stats = run_json(capsys, "stats", "--db", db_url)
    assert (stats["namespaces"], stats["threads"], stats["messages"]) == (2, 2, 108)
    assert (stats["blocks_pending"], stats["open_tail_turns"], stats["open_tail_messages"]) == (5, 0, 0)
    c1 = run_json(capsys, "stats", "--namespace", "c-1", "--db", db_url)
    assert (c1["messages"], c1["blocks_pending"], c1["open_tail_turns"]) == (60, 3, 0)

    again = run_json(capsys, "ingest", "locomo", str(path), "--db", db_url)

    assert (again["units"], again["units_skipped"], again["messages"], again["blocks_sealed"]) == (0, 2, 0, 0)
    assert run_json(capsys, "stats", "--db", db_url) == stats


def test_cli_ingest_plain_output_and_options(tmp_path, db_url, capsys):
    path = write_json(tmp_path / "locomo.json", [locomo_sample("c-1", 2), locomo_sample("c-2", 2)])

    code, out, err = run(
        capsys, "ingest", "locomo", str(path), "--db", db_url, "--namespace", "bench", "--limit", "1", "--tz", "+02:00"
    )

    assert code == 0, err
    text = " ".join(out.split())  # rich wraps plain output at the console width
    assert text == "ingested 4 messages in 1 unit(s) (0 already stored), sealed 1 blocks into 1 namespace(s)"
    from core.services.capture import thread_messages

    messages = thread_messages("bench", "c-1")
    assert [m.created_at for m in messages] == ["2023-05-08T13:56:00+02:00"] * 4
    assert [m.external_id for m in messages] == ["D1:1", "D1:2", "D1:3", "D1:4"]
    assert messages[1].content == "answer 0 [image: a dog on a beach]"
    names = [n["name"] for n in run_json(capsys, "namespaces", "--db", db_url)]
    assert names == ["bench"]


def test_cli_ingest_jsonl_appended_lines(tmp_path, db_url, capsys):
    rows = [jl("t", "user", "one", id="1"), jl("u", "user", "other", id="2"), jl("t", "assistant", "two", id="3")]
    path = write_jsonl(tmp_path / "chat.jsonl", rows)
    assert run_json(capsys, "ingest", "jsonl", str(path), "--db", db_url)["messages"] == 3
    write_jsonl(path, rows + [jl("t", "user", "three", id="4")])

    report = run_json(capsys, "ingest", "jsonl", str(path), "--db", db_url)

    assert (report["messages"], report["units"], report["units_skipped"]) == (1, 1, 0)
    assert run_json(capsys, "stats", "--db", db_url)["messages"] == 4


def test_cli_ingest_longmemeval_gz(tmp_path, db_url, capsys):
    import gzip

    item = {
        "question_id": "q-9",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/30 (Tue) 23:40", "2023/05/31 (Wed) 06:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            [{"role": "user", "content": "again"}],
        ],
    }
    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump([item], handle)

    report = run_json(capsys, "ingest", "longmemeval", str(path), "--db", db_url)

    assert (report["messages"], report["namespaces"]) == (3, ["q-9"])
    stats = run_json(capsys, "stats", "--namespace", "q-9", "--db", db_url)
    assert (stats["threads"], stats["messages"]) == (2, 3)


# --------------------------------------------------------------------------- bad input


def _truncated_locomo(tmp_path: Path):
    text = json.dumps([locomo_sample("a", 3), locomo_sample("b", 3)], indent=2)
    cut = text[: len(text) * 2 // 3]
    path = tmp_path / "truncated.json"
    path.write_text(cut, encoding="utf-8")
    return "locomo", path, [rf"{re.escape(str(path))}:{cut.count(chr(10)) + 1}:\d+: not valid JSON"]


def _locomo_bad_middle(tmp_path: Path):
    data = [locomo_sample("a", 3), locomo_sample("b", 3), locomo_sample("c", 3)]
    data[1]["conversation"]["session_1"][3]["speaker"] = 42
    path = write_json(tmp_path / "middle.json", data)
    return "locomo", path, [re.escape(str(path)), r"item 1 \(b\)", r"session_1\[3\]", r"'speaker'", "int"]


def _locomo_bad_date(tmp_path: Path):
    data = [locomo_sample("a", 3), locomo_sample("b", 3, date="the day after")]
    path = write_json(tmp_path / "date.json", data)
    return "locomo", path, [re.escape(str(path)), r"item 1 \(b\)", "session_1_date_time", "'the day after'"]


def _jsonl(name: str, bad, lineno: int = 3):
    def build(tmp_path: Path):
        rows = [jl("t", "user", "fine"), jl("t", "assistant", "fine too")]
        rows.insert(lineno - 1, bad)
        path = write_jsonl(tmp_path / f"{name}.jsonl", rows)
        return "jsonl", path, [rf"{re.escape(str(path))}:{lineno}: "] + NEEDLES[name]

    return build


NEEDLES = {
    "content-int": ["content", "expected a string, got int"],
    "role-int": ["role", "got 3"],
    "content-empty": ["content", "no content"],
    "date-words": ["created_at", "'next friday'", "ISO-8601"],
    "missing-thread": ["missing field 'thread'"],
}


def _lme_mismatch(tmp_path: Path):
    item = {
        "question_id": "q-1",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/30 (Tue) 23:40"],
        "haystack_sessions": [[{"role": "user", "content": "x"}], []],
    }
    path = write_json(tmp_path / "lme.json", [item])
    return "longmemeval", path, [re.escape(str(path)), r"item 0 \(q-1\)", "haystack_dates", "differ in length"]


def _lme_bad_date(tmp_path: Path):
    item = {
        "question_id": "q-1",
        "haystack_session_ids": ["s1"],
        "haystack_dates": ["yesterday"],
        "haystack_sessions": [[{"role": "user", "content": "x"}]],
    }
    path = write_json(tmp_path / "lme.json", [item])
    return "longmemeval", path, [re.escape(str(path)), r"item 0 \(q-1\)", "session 0", "haystack_dates", "'yesterday'"]


def _jsonl_raw(name: str, line: str, lineno: int, needles: list[str]):
    """A JSON Lines file whose line ``lineno`` is ``line`` as written (not built with json.dumps)."""

    def build(tmp_path: Path):
        rows = [jl("t", "user", "fine"), jl("t", "assistant", "fine too")]
        rows.insert(lineno - 1, line)
        path = write_jsonl(tmp_path / f"{name}.jsonl", rows)
        return "jsonl", path, [rf"{re.escape(str(path))}:{lineno}"] + needles

    return build


def _locomo_lone_surrogate(tmp_path: Path):
    data = [locomo_sample("a", 3), locomo_sample("b", 3)]
    data[1]["conversation"]["session_1"][2]["text"] = "half an emoji \ud83d"
    path = write_json(tmp_path / "surrogate.json", data)  # json.dumps writes it as the escape \ud83d
    return (
        "locomo",
        path,
        [
            re.escape(str(path)),
            "item 1",
            re.escape("field 'conversation.session_1[2].text'"),
            re.escape("\\ud83d is a lone surrogate"),
        ],
    )


def _lme_lone_surrogate(tmp_path: Path):
    item = {
        "question_id": "q-1",
        "haystack_session_ids": ["s1"],
        "haystack_dates": ["2023/05/30 (Tue) 23:40"],
        "haystack_sessions": [[{"role": "user", "content": "x \udc00"}]],
    }
    path = write_json(tmp_path / "lme.json", [item])
    return (
        "longmemeval",
        path,
        [re.escape(str(path)), "item 0", re.escape("field 'haystack_sessions[0][0].content'"), "lone surrogate"],
    )


def _locomo_too_deep(tmp_path: Path):
    path = tmp_path / "deep.json"
    path.write_text("[\n" + "[" * 5000, encoding="utf-8")
    return "locomo", path, [rf"{re.escape(str(path))}:2:512: JSON nested too deeply to read"]


def _missing_file(tmp_path: Path):
    path = tmp_path / "nowhere" / "absent.json"
    return "locomo", path, [re.escape(str(path)), "no such file"]


def _directory(tmp_path: Path):
    folder = tmp_path / "exports"
    folder.mkdir()
    return "jsonl", folder, [rf"^strata: error: {re.escape(str(folder))}: is a directory"]


def _jsonl_thread_too_long(tmp_path: Path):
    path = write_jsonl(tmp_path / "long.jsonl", [jl("t", "user", "fine"), jl("t" * 300, "user", "x")])
    # Once the file, with the line: not "long.jsonl: long.jsonl: …".
    return "jsonl", path, [rf"^strata: error: {re.escape(str(path))}:2: thread name is longer than 255 characters$"]


def _unknown_format(tmp_path: Path):
    path = write_json(tmp_path / "locomo.json", [locomo_sample("a", 1)])
    return "csv", path, ["unknown ingest format 'csv'", "locomo, longmemeval, jsonl"]


BAD_INPUTS = {
    "locomo-truncated": _truncated_locomo,
    "locomo-bad-middle-unit": _locomo_bad_middle,
    "locomo-date-not-a-date": _locomo_bad_date,
    "jsonl-content-int": _jsonl("content-int", jl("t", "user", 5)),
    "jsonl-role-int": _jsonl("role-int", jl("t", 3, "hello"), lineno=2),
    "jsonl-content-empty": _jsonl("content-empty", jl("t", "user", "")),
    "jsonl-created_at-not-a-date": _jsonl("date-words", jl("t", "user", "hi", "next friday"), lineno=1),
    "jsonl-missing-thread": _jsonl("missing-thread", {"role": "user", "content": "x", "created_at": "2024-01-01"}),
    "jsonl-lone-surrogate": _jsonl_raw(
        "surrogate",
        '{"thread": "t", "role": "user", "content": "\\ud800", "created_at": "2024-01-01T00:00:00Z"}',
        2,
        [re.escape("field 'content': \\ud800 is a lone surrogate")],
    ),
    "jsonl-nested-too-deep": _jsonl_raw("deep", "[" * 100_000, 3, [":3:513: JSON nested too deeply to read"]),
    "locomo-lone-surrogate": _locomo_lone_surrogate,
    "locomo-nested-too-deep": _locomo_too_deep,
    "longmemeval-lone-surrogate": _lme_lone_surrogate,
    "longmemeval-length-mismatch": _lme_mismatch,
    "longmemeval-date-not-a-date": _lme_bad_date,
    "missing-file": _missing_file,
    "directory": _directory,
    "jsonl-thread-too-long": _jsonl_thread_too_long,
    "unknown-format": _unknown_format,
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_cli_bad_input_one_error_line_and_nothing_written(tmp_path, seeded, capsys, case):
    fmt, path, patterns = BAD_INPUTS[case](tmp_path)
    before = snapshot(capsys, seeded)

    code, out, err = run(capsys, "ingest", fmt, str(path), "--db", seeded)

    assert code != 0
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("strata: error: ")
    for pattern in patterns:
        assert re.search(pattern, lines[0]), (pattern, lines[0])
    assert snapshot(capsys, seeded) == before


def test_cli_receipt_conflict_exits_non_zero_and_writes_nothing(tmp_path, seeded, capsys):
    rows = [jl("t", "user", "first", id="m1"), jl("t", "assistant", "second", id="m2")]
    path = write_jsonl(tmp_path / "chat.jsonl", rows)
    assert run_json(capsys, "ingest", "jsonl", str(path), "--db", seeded)["messages"] == 2
    write_jsonl(
        path,
        [
            jl("t", "user", "new before", id="m0"),
            jl("t", "user", "first, edited", id="m1"),
            rows[1],
            jl("t", "user", "new after", id="m3"),
        ],
    )
    before = snapshot(capsys, seeded)

    code, out, err = run(capsys, "ingest", "jsonl", str(path), "--db", seeded)

    assert code != 0
    assert len(err.splitlines()) == 1 and "'jsonl:t:m1'" in err and "different payload" in err
    assert snapshot(capsys, seeded) == before


@pytest.mark.parametrize("namespace", [pytest.param("", id="empty"), pytest.param("   ", id="blank")])
def test_cli_a_blank_namespace_option_is_a_usage_error(tmp_path, seeded, capsys, namespace):
    path = write_jsonl(tmp_path / "chat.jsonl", [jl("t", "user", "hello")])
    before = snapshot(capsys, seeded)
    with pytest.raises(SystemExit) as exited:
        main(["ingest", "jsonl", str(path), "--db", seeded, "--namespace", namespace])
    assert exited.value.code == 2 and "namespace name cannot be empty" in capsys.readouterr().err
    assert snapshot(capsys, seeded) == before


def test_cli_a_namespace_name_too_long_is_refused(tmp_path, seeded, capsys):
    path = write_jsonl(tmp_path / "chat.jsonl", [jl("t", "user", "hello")])
    before = snapshot(capsys, seeded)

    with pytest.raises(SystemExit) as exited:  # a usage error, like an empty name
        run(capsys, "ingest", "jsonl", str(path), "--db", seeded, "--namespace", "n" * 300)

    assert exited.value.code == 2
    assert "argument --namespace: namespace name is longer than 255 characters" in capsys.readouterr().err
    assert snapshot(capsys, seeded) == before


def _lme_item(qid: str, content: str) -> dict:
    return {
        "question_id": qid,
        "haystack_session_ids": ["s1"],
        "haystack_dates": ["2023/05/30 (Tue) 23:40"],
        "haystack_sessions": [[{"role": "user", "content": content}]],
    }


@pytest.mark.parametrize(
    "fmt, data, needles",
    [
        (
            "locomo",
            [locomo_sample("a", 2), locomo_sample("b", 2), {**locomo_sample("b", 3)}],
            ["item 2 (b): repeats item 1 (b) with different messages", "'locomo:b#b'"],
        ),
        (
            "longmemeval",
            [_lme_item("q-1", "first"), _lme_item("q-2", "x"), _lme_item("q-1", "first, edited")],
            ["item 2 (q-1): repeats item 0 (q-1) with different messages", "'longmemeval:q-1#s1'"],
        ),
    ],
)
def test_cli_an_item_repeated_with_other_content_writes_nothing(tmp_path, seeded, capsys, fmt, data, needles):
    path = write_json(tmp_path / "repeated.json", data)
    before = snapshot(capsys, seeded)

    code, _, err = run(capsys, "ingest", fmt, str(path), "--db", seeded)

    assert code == 2 and len(err.splitlines()) == 1 and err.startswith(f"strata: error: {path}: ")
    for needle in needles:
        assert needle in err, err
    assert snapshot(capsys, seeded) == before


def test_cli_an_item_stored_earlier_with_other_content_writes_nothing(tmp_path, seeded, capsys):
    """The conflicting conversation comes second: the first must not be committed before it is found."""
    changed = locomo_sample("seed-conv", 14)
    changed["conversation"]["session_1"][0]["text"] = "edited since the first ingest"
    path = write_json(tmp_path / "second.json", [locomo_sample("fresh", 2), changed])
    before = snapshot(capsys, seeded)

    code, _, err = run(capsys, "ingest", "locomo", str(path), "--db", seeded)

    assert code == 2 and len(err.splitlines()) == 1
    assert f"{path}: item 1 (seed-conv): receipt 'locomo:seed-conv#seed-conv' in namespace 'seed-conv'" in err
    assert "nothing was written" in err
    assert snapshot(capsys, seeded) == before


@pytest.mark.parametrize(
    "tz, message",
    [
        ("Mars/Olympus", "unknown timezone 'Mars/Olympus'"),
        ("+99:00", "timezone offset '+99:00' is out of range"),
        ("UTC+02:75", "timezone offset 'UTC+02:75' is out of range"),
    ],
)
def test_cli_unknown_timezone_is_an_error(tmp_path, seeded, capsys, tz, message):
    path = write_json(tmp_path / "locomo.json", [locomo_sample("a", 1)])
    before = snapshot(capsys, seeded)

    code, _, err = run(capsys, "ingest", "locomo", str(path), "--db", seeded, "--tz", tz)

    assert code == 2 and len(err.splitlines()) == 1 and message in err
    assert snapshot(capsys, seeded) == before


# --------------------------------------------------------------------------- the real dataset (opt-in)


@pytest.mark.skipif(not LOCOMO_REAL.is_file(), reason=f"real LoCoMo data not found at {LOCOMO_REAL}")
def test_cli_ingest_real_locomo10(tmp_path, db_url, capsys):
    report = run_json(capsys, "ingest", "locomo", str(LOCOMO_REAL), "--db", db_url)

    assert report["units"] == 10 and report["messages"] == 5882
    assert len(report["namespaces"]) == 10
    stats = run_json(capsys, "stats", "--db", db_url)
    assert (stats["namespaces"], stats["threads"], stats["messages"]) == (10, 10, 5882)
    from core.models import Message

    ids = [row[0] for row in Message.select(Message.external_id).tuples()]
    assert len(ids) == 5882
    bad = [i for i in ids if not isinstance(i, str) or not re.fullmatch(r"D\d+:\d+", i)]
    assert bad == []

    again = run_json(capsys, "ingest", "locomo", str(LOCOMO_REAL), "--db", db_url)

    assert (again["messages"], again["units"], again["units_skipped"]) == (0, 0, 10)
    assert run_json(capsys, "stats", "--db", db_url) == stats
