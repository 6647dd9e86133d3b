"""Bulk ingest (core.ingest): LoCoMo, LongMemEval and JSON Lines parsers and writers.

Every input file here is synthetic and written by the test itself; the real datasets
are only touched by the opt-in test in tests/workbench/test_cli_ingest.py.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from datetime import timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from core.dto import ToolTrace
from core.errors import InvalidInputError, ReceiptConflictError
from core.ingest import FORMATS, IngestReport, ingest, parse
from core.models import Block, IngestionReceipt, Message
from core.services.blocks import list_blocks
from core.services.capture import append_turn, thread_messages
from core.services.spaces import list_namespaces
from core.services.stats import stats
from core.api import open_store
from tests.stores import fresh_url

DATE_1 = "1:56 pm on 8 May, 2023"
DATE_2 = "10:04 am on 12 June, 2023"
DATE_10 = "7:30 pm on 1 January, 2024"

SAVED = pytest.mark.sqlite_only(reason="search index copies are saved beside a SQLite file; a server database has none")


# --------------------------------------------------------------------------- fixtures and builders


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.delenv("STRATA_DB", raising=False)
    opened = open_store(fresh_url(tmp_path))
    yield opened
    opened.close()


@pytest.fixture
def seeded(store):
    """A store that already holds one namespace, so 'unchanged' is not the same as 'empty'."""
    append_turn("existing", "main", "hello there", "hi!", created_at="2024-01-01T10:00:00+00:00")
    return store


def snapshot() -> tuple:
    """Everything an ingest could change, in comparable form."""
    return (
        dataclasses.asdict(stats()),
        [dataclasses.asdict(n) for n in list_namespaces()],
        IngestionReceipt.select().count(),
    )


def turn(speaker: str, dia_id: str, text: str, caption: str | None = None) -> dict:
    out = {"speaker": speaker, "dia_id": dia_id, "text": text}
    if caption is not None:
        out["blip_caption"] = caption
        out["img_url"] = ["https://example.invalid/x.jpg"]
    return out


def alternating(session: int, user_turns: int, *, a: str = "Ann", b: str = "Bob", replies: bool = True) -> list[dict]:
    """``user_turns`` turns of speaker_a, each followed by a reply from speaker_b."""
    out, n = [], 0
    for i in range(user_turns):
        n += 1
        out.append(turn(a, f"D{session}:{n}", f"{a} says {i}"))
        if replies:
            n += 1
            out.append(turn(b, f"D{session}:{n}", f"{b} answers {i}"))
    return out


def locomo_sample(
    sample_id: str, sessions: dict[int, tuple[str, list[dict]]], *, a: str = "Ann", b: str = "Bob"
) -> dict:
    conv: dict = {"speaker_a": a, "speaker_b": b}
    for number, (date, turns) in sessions.items():
        conv[f"session_{number}_date_time"] = date
        conv[f"session_{number}"] = turns
    return {"sample_id": sample_id, "conversation": conv, "qa": [], "event_summary": {}}


def write_json(path: Path, data, *, gz: bool = False) -> Path:
    text = json.dumps(data, indent=2)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def two_conversations() -> list[dict]:
    conv_a = locomo_sample(
        "conv-a",
        {
            # keys deliberately out of order: session_10 must come after session_2
            10: (DATE_10, [turn("Ann", "D10:1", "back again"), turn("Bob", "D10:2", "welcome back")]),
            1: (
                DATE_1,
                [
                    turn("Ann", "D1:1", "Hi Bob, how are you?"),
                    turn("Bob", "D1:2", "Great! Look at this.", caption="a photo of a red bicycle"),
                    turn("Ann", "D1:3", "Nice bike."),
                ],
            ),
            2: (DATE_2, [turn("Bob", "D2:1", "Morning!"), turn("Ann", "D2:2", "Morning, Bob.")]),
        },
    )
    conv_b = locomo_sample(
        "conv-b",
        {
            1: (
                "9:00 am on 3 March, 2022",
                [
                    turn("Caroline", "D1:1", "I went hiking."),
                    turn("Melanie", "D1:2", "Where?"),
                    turn("Caroline", "D1:3", "Up the hill.", caption="a mountain trail"),
                ],
            ),
        },
        a="Caroline",
        b="Melanie",
    )
    return [conv_a, conv_b]


# --------------------------------------------------------------------------- LoCoMo


def test_locomo_one_namespace_and_thread_per_conversation(store, tmp_path):
    path = write_json(tmp_path / "locomo.json", two_conversations())

    report = ingest("locomo", path)

    assert report.format == "locomo"
    assert report.units == 2 and report.units_skipped == 0
    assert report.messages == 10
    assert report.namespaces == ["conv-a", "conv-b"]
    infos = {n.name: n for n in list_namespaces()}
    assert sorted(infos) == ["conv-a", "conv-b"]
    assert infos["conv-a"].threads == 1 and infos["conv-a"].messages == 7
    assert infos["conv-b"].threads == 1 and infos["conv-b"].messages == 3

    a = thread_messages("conv-a", "conv-a")
    assert [m.external_id for m in a] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D10:1", "D10:2"]
    assert [m.position for m in a] == list(range(1, 8))
    assert [(m.role, m.speaker) for m in a] == [
        ("user", "Ann"),
        ("assistant", "Bob"),
        ("user", "Ann"),
        ("assistant", "Bob"),
        ("user", "Ann"),
        ("user", "Ann"),
        ("assistant", "Bob"),
    ]
    assert a[0].content == "Hi Bob, how are you?"
    assert a[1].content == "Great! Look at this. [image: a photo of a red bicycle]"
    assert [m.created_at for m in a] == (
        ["2023-05-08T13:56:00+00:00"] * 3 + ["2023-06-12T10:04:00+00:00"] * 2 + ["2024-01-01T19:30:00+00:00"] * 2
    )

    b = thread_messages("conv-b", "conv-b")
    assert [(m.role, m.speaker, m.external_id) for m in b] == [
        ("user", "Caroline", "D1:1"),
        ("assistant", "Melanie", "D1:2"),
        ("user", "Caroline", "D1:3"),
    ]
    assert b[2].content == "Up the hill. [image: a mountain trail]"
    assert b[0].created_at == "2022-03-03T09:00:00+00:00"
    # the thread is named by sample_id, nothing else was created
    assert thread_messages("conv-b", "conv-a") == []


def test_locomo_namespace_override_keeps_one_thread_per_conversation(store, tmp_path):
    path = write_json(tmp_path / "locomo.json", two_conversations())

    report = ingest("locomo", path, namespace="bench")

    assert report.namespaces == ["bench"]
    [info] = list_namespaces()
    assert (info.name, info.threads, info.messages) == ("bench", 2, 10)
    assert [m.external_id for m in thread_messages("bench", "conv-b")] == ["D1:1", "D1:2", "D1:3"]
    assert len(thread_messages("bench", "conv-a")) == 7


@pytest.mark.parametrize(
    ("date", "tz", "expected"),
    [
        (DATE_1, None, "2023-05-08T13:56:00+00:00"),
        (DATE_1, timezone(timedelta(hours=2)), "2023-05-08T13:56:00+02:00"),
        (DATE_1, timezone(timedelta(hours=-5, minutes=-30)), "2023-05-08T13:56:00-05:30"),
        (DATE_1, ZoneInfo("America/New_York"), "2023-05-08T13:56:00-04:00"),
        ("12:05 am on 1 January, 2023", None, "2023-01-01T00:05:00+00:00"),
        ("12:30 pm on 3 Feb, 2023", None, "2023-02-03T12:30:00+00:00"),
        ("8:00 PM on 25 Dec 2022", None, "2022-12-25T20:00:00+00:00"),
    ],
)
def test_locomo_session_date_becomes_created_at_with_offset(store, tmp_path, date, tz, expected):
    path = write_json(tmp_path / "locomo.json", [locomo_sample("c", {1: (date, alternating(1, 1))})])

    ingest("locomo", path, tz=tz)

    assert [m.created_at for m in thread_messages("c", "c")] == [expected, expected]


def test_locomo_reingest_adds_nothing(store, tmp_path):
    path = write_json(tmp_path / "locomo.json", two_conversations())
    first = ingest("locomo", path)
    before = snapshot()

    second = ingest("locomo", path)

    assert first.units == 2 and first.messages == 10
    assert (second.units, second.units_skipped, second.messages, second.blocks_sealed) == (0, 2, 0, 0)
    assert second.namespaces == ["conv-a", "conv-b"]
    assert snapshot() == before


@pytest.mark.parametrize(
    ("user_turns", "blocks"),
    [
        (30, 3),  # sealed at the 13th and 25th user turn; the finished conversation seals the last 6
        (24, 2),
        (12, 1),
        (11, 1),  # a short finished conversation is still one block
        (13, 2),
    ],
)
def test_locomo_block_sealing(store, tmp_path, user_turns, blocks):
    # split over two sessions so sealing has to run across a session boundary
    first = min(user_turns, 7)
    sessions = {1: (DATE_1, alternating(1, first))}
    if user_turns > first:
        sessions[2] = (DATE_2, alternating(2, user_turns - first))
    path = write_json(tmp_path / "locomo.json", [locomo_sample("c", sessions)])

    report = ingest("locomo", path)

    assert report.messages == 2 * user_turns
    assert report.blocks_sealed == blocks
    s = stats("c")
    assert (s.blocks_pending, s.open_tail_turns, s.open_tail_messages) == (blocks, 0, 0)
    rows = sorted(list_blocks("c"), key=lambda b: b.start_turn)
    spans = [(1 + 12 * i, min(12 * (i + 1), user_turns)) for i in range(blocks)]
    assert [(b.start_turn, b.end_turn, b.message_count) for b in rows] == [
        (start, end, 2 * (end - start + 1)) for start, end in spans
    ]
    # each block holds its user turns and the reply that follows each of them
    messages = thread_messages("c", "c")
    for block, (start, end) in zip(rows, spans):
        members = [m for m in messages if m.block_id == block.id]
        assert [m.position for m in members] == list(range(2 * start - 1, 2 * end + 1))
        assert members[-1].role == "assistant"


def test_locomo_block_sealing_is_not_repeated_on_reingest(store, tmp_path):
    path = write_json(tmp_path / "locomo.json", [locomo_sample("c", {1: (DATE_1, alternating(1, 30))})])
    ingest("locomo", path)

    again = ingest("locomo", path)

    assert (again.messages, again.blocks_sealed, again.units_skipped) == (0, 0, 1)
    assert Block.select().count() == 3
    assert stats("c").open_tail_turns == 0


def test_locomo_file_conflicting_with_a_stored_conversation_writes_none_of_it(store, tmp_path):
    """Each conversation is its own transaction, so a receipt conflict found while writing the second
    would leave the first committed: receipts are checked against the store before anything is written."""
    conv_a, conv_b = two_conversations()
    ingest("locomo", write_json(tmp_path / "first.json", [conv_b]))
    before = snapshot()
    conv_b["conversation"]["session_1"][0]["text"] = "I went sailing."
    second = write_json(tmp_path / "second.json", [conv_a, conv_b])
    with pytest.raises(ReceiptConflictError, match=r"second.json: item 1 \(conv-b\): receipt 'locomo:conv-b#conv-b'"):
        ingest("locomo", second)
    assert snapshot() == before


def test_locomo_limit_takes_the_first_conversations(store, tmp_path):
    path = write_json(tmp_path / "locomo.json", two_conversations())

    report = ingest("locomo", path, limit=1)

    assert report.namespaces == ["conv-a"] and report.messages == 7
    assert [n.name for n in list_namespaces()] == ["conv-a"]


@pytest.mark.parametrize(
    ("mutate", "needles"),
    [
        (
            lambda data: data[1]["conversation"]["session_1"][1].pop("dia_id"),
            ["item 1 (conv-b)", "session_1[1]", "'dia_id'"],
        ),
        (
            lambda data: data[1]["conversation"]["session_1"][0].update(text=5),
            ["item 1 (conv-b)", "session_1[0]", "'text'", "int"],
        ),
        (
            lambda data: data[1]["conversation"]["session_1"][2].update(blip_caption=["x"]),
            ["item 1 (conv-b)", "session_1[2]", "'blip_caption'"],
        ),
        (
            lambda data: data[1]["conversation"].update(session_1_date_time="last Tuesday"),
            ["item 1 (conv-b)", "session_1_date_time", "'last Tuesday'"],
        ),
        (
            lambda data: data[1]["conversation"].update(session_1_date_time="1:56 pm on 31 February, 2023"),
            ["item 1 (conv-b)", "session_1_date_time"],
        ),
        (lambda data: data[1]["conversation"].pop("session_1_date_time"), ["item 1 (conv-b)", "'session_1_date_time'"]),
        (lambda data: data[1]["conversation"].pop("speaker_a"), ["item 1 (conv-b)", "'speaker_a'"]),
        (lambda data: data[1].pop("sample_id"), ["item 1", "'sample_id'"]),
        (lambda data: data[1]["conversation"].update(session_1="oops"), ["item 1 (conv-b)", "'session_1'", "list"]),
    ],
    ids=[
        "no-dia_id",
        "text-int",
        "caption-list",
        "date-words",
        "date-impossible",
        "no-date",
        "no-speaker_a",
        "no-sample_id",
        "session-not-list",
    ],
)
def test_locomo_invalid_unit_is_located_and_nothing_is_written(seeded, tmp_path, mutate, needles):
    data = two_conversations()
    data.insert(2, locomo_sample("conv-c", {1: (DATE_1, alternating(1, 3))}))
    mutate(data)  # data[1] is conv-b: valid conversations on both sides of it
    path = write_json(tmp_path / "locomo.json", data)
    before = snapshot()

    with pytest.raises(InvalidInputError) as info:
        ingest("locomo", path)

    message = str(info.value)
    assert message.startswith(str(path))
    for needle in needles:
        assert needle in message
    assert snapshot() == before
    assert [n.name for n in list_namespaces()] == ["existing"]


@pytest.mark.parametrize(
    ("mutate", "needles"),
    [
        (
            lambda data: data[1]["conversation"]["session_1"][1].update(text=""),
            ["item 1 (conv-b)", "session_1[1]", "content"],
        ),
        (
            lambda data: data[1]["conversation"]["session_1"][1].update(text="  \n "),
            ["item 1 (conv-b)", "session_1[1]", "content"],
        ),
        (lambda data: data[1].update(sample_id="   "), ["item 1", "sample_id"]),
    ],
    ids=["empty-text", "blank-text", "blank-sample_id"],
)
def test_locomo_unit_the_capture_rules_reject_writes_nothing(seeded, tmp_path, mutate, needles):
    """Values the parser's type checks accept but capture would refuse are caught before writing."""
    data = two_conversations()
    mutate(data)
    path = write_json(tmp_path / "locomo.json", data)
    before = snapshot()

    with pytest.raises(InvalidInputError) as info:
        ingest("locomo", path)

    assert str(info.value).startswith(str(path))
    for needle in needles:
        assert needle in str(info.value)
    assert snapshot() == before


def test_locomo_overlong_sample_id_writes_nothing(seeded, tmp_path):
    data = two_conversations()
    data[1]["sample_id"] = "x" * 300
    path = write_json(tmp_path / "locomo.json", data)
    before = snapshot()

    with pytest.raises(InvalidInputError) as info:
        ingest("locomo", path)

    assert snapshot() == before
    assert str(info.value).startswith(str(path)) and "item 1" in str(info.value)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"sample_id": "x"}, "expected a JSON list"),
        ([locomo_sample("empty", {1: (DATE_1, [])})], "no turns"),
        (["not an object"], "item 0: expected an object"),
    ],
)
def test_locomo_rejects_wrong_shapes(store, tmp_path, data, needle):
    path = write_json(tmp_path / "locomo.json", data)

    with pytest.raises(InvalidInputError, match=needle):
        parse("locomo", path)


def test_truncated_json_names_the_line(store, tmp_path):
    text = json.dumps(two_conversations(), indent=2)
    cut = text[: len(text) // 2]
    path = tmp_path / "locomo.json"
    path.write_text(cut, encoding="utf-8")

    with pytest.raises(InvalidInputError) as info:
        parse("locomo", path)

    assert str(info.value).startswith(f"{path}:{cut.count(chr(10)) + 1}:")
    assert "not valid JSON" in str(info.value)


# --------------------------------------------------------------------------- LongMemEval


def lme_item(qid: str, sessions: list[tuple[str, str, list[dict]]]) -> dict:
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "What?",
        "answer": "That.",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": [s[0] for s in sessions],
        "haystack_dates": [s[1] for s in sessions],
        "haystack_sessions": [s[2] for s in sessions],
        "answer_session_ids": [sessions[0][0]],
    }


def lme_turns(*pairs: str) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": text} for i, text in enumerate(pairs)]


def lme_data() -> list[dict]:
    return [
        lme_item(
            "q-1",
            [
                (
                    "sess_a",
                    "2023/05/30 (Tue) 23:40",
                    lme_turns("I adopted a cat.", "Congratulations!", "Her name is Mia."),
                ),
                ("sess_b", "2023/06/02 (Fri) 08:05", lme_turns("Any tips for sleep?", "Keep a schedule.")),
            ],
        ),
        lme_item(
            "q-2",
            [
                ("sess_a", "2022/01/09 (Sun) 7:15", lme_turns("Different question, same session id.", "Ok.")),
            ],
        ),
        lme_item("q-3", [("sess_z", "2021/12/31 (Fri) 00:00", lme_turns("Last one.", "Yes."))]),
    ]


@pytest.mark.parametrize("gz", [False, True], ids=["json", "gz"])
def test_longmemeval_namespace_per_question_thread_per_session(store, tmp_path, gz):
    name = "lme.json.gz" if gz else "lme.json"
    path = write_json(tmp_path / name, lme_data(), gz=gz)

    report = ingest("longmemeval", path)

    assert report.namespaces == ["q-1", "q-2", "q-3"]
    assert (report.units, report.messages) == (3, 9)
    infos = {n.name: n for n in list_namespaces()}
    assert {k: (v.threads, v.messages) for k, v in infos.items()} == {"q-1": (2, 5), "q-2": (1, 2), "q-3": (1, 2)}

    a = thread_messages("q-1", "sess_a")
    assert [(m.role, m.content, m.external_id) for m in a] == [
        ("user", "I adopted a cat.", "sess_a:0"),
        ("assistant", "Congratulations!", "sess_a:1"),
        ("user", "Her name is Mia.", "sess_a:2"),
    ]
    assert {m.created_at for m in a} == {"2023-05-30T23:40:00+00:00"}
    b = thread_messages("q-1", "sess_b")
    assert [m.external_id for m in b] == ["sess_b:0", "sess_b:1"]
    assert {m.created_at for m in b} == {"2023-06-02T08:05:00+00:00"}
    q2 = thread_messages("q-2", "sess_a")
    assert [m.content for m in q2] == ["Different question, same session id.", "Ok."]
    assert q2[0].created_at == "2022-01-09T07:15:00+00:00"


def test_longmemeval_tz_and_limit(store, tmp_path):
    path = write_json(tmp_path / "lme.json", lme_data())

    report = ingest("longmemeval", path, limit=2, tz=timezone(timedelta(hours=9)))

    assert report.namespaces == ["q-1", "q-2"] and report.messages == 7
    assert [n.name for n in list_namespaces()] == ["q-1", "q-2"]
    assert thread_messages("q-1", "sess_a")[0].created_at == "2023-05-30T23:40:00+09:00"


def test_longmemeval_namespace_override_prefixes_threads(store, tmp_path):
    path = write_json(tmp_path / "lme.json", lme_data())

    ingest("longmemeval", path, namespace="lme")

    [info] = list_namespaces()
    assert (info.name, info.threads, info.messages) == ("lme", 4, 9)
    assert [m.content for m in thread_messages("lme", "q-2/sess_a")] == ["Different question, same session id.", "Ok."]


def test_longmemeval_reingest_adds_nothing(store, tmp_path):
    path = write_json(tmp_path / "lme.json.gz", lme_data(), gz=True)
    ingest("longmemeval", path)
    before = snapshot()

    again = ingest("longmemeval", path)

    assert (again.units, again.units_skipped, again.messages) == (0, 3, 0)
    assert snapshot() == before


def test_longmemeval_empty_turns_are_skipped_and_ids_keep_the_turn_index(store, tmp_path):
    data = [lme_item("q-1", [("s", "2023/05/30 (Tue) 23:40", lme_turns("hello", "", "still here"))])]
    path = write_json(tmp_path / "lme.json", data)

    report = ingest("longmemeval", path)

    assert report.messages == 2
    assert [(m.content, m.external_id) for m in thread_messages("q-1", "s")] == [
        ("hello", "s:0"),
        ("still here", "s:2"),
    ]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d[1].update(question_id="  "),
        lambda d: d[1]["haystack_session_ids"].__setitem__(0, ""),
    ],
    ids=["blank-question_id", "blank-session-id"],
)
def test_longmemeval_blank_names_write_nothing(seeded, tmp_path, mutate):
    data = lme_data()
    mutate(data)
    path = write_json(tmp_path / "lme.json", data)
    before = snapshot()

    with pytest.raises(InvalidInputError) as info:
        ingest("longmemeval", path)

    assert snapshot() == before
    assert str(info.value).startswith(str(path)) and "item 1 (" in str(info.value)


def test_longmemeval_question_without_turns_is_not_reported_as_already_stored(store, tmp_path):
    data = lme_data()
    data[1]["haystack_sessions"][0] = [{"role": "user", "content": ""}]
    path = write_json(tmp_path / "lme.json", data)

    report = ingest("longmemeval", path)

    assert report.units_skipped == 0
    assert report.namespaces == [n.name for n in list_namespaces()]


@pytest.mark.parametrize(
    ("mutate", "needles"),
    [
        (
            lambda d: d[1]["haystack_dates"].append("2023/05/30 (Tue) 23:40"),
            ["item 1 (q-2)", "haystack_dates", "differ in length", "(1, 2, 1)"],
        ),
        (lambda d: d[1]["haystack_sessions"].append([]), ["item 1 (q-2)", "differ in length", "(1, 1, 2)"]),
        (
            lambda d: d[1]["haystack_dates"].__setitem__(0, "30 May 2023"),
            ["item 1 (q-2)", "session 0", "haystack_dates", "'30 May 2023'"],
        ),
        (
            lambda d: d[1]["haystack_sessions"][0][1].update(role="system"),
            ["item 1 (q-2)", "session 0 turn 1", "'role'"],
        ),
        (
            lambda d: d[1]["haystack_sessions"][0][0].update(content=None),
            ["item 1 (q-2)", "session 0 turn 0", "'content'"],
        ),
        (lambda d: d[1].pop("haystack_session_ids"), ["item 1 (q-2)", "'haystack_session_ids'"]),
    ],
    ids=["dates-longer", "sessions-longer", "bad-date", "bad-role", "content-null", "no-ids"],
)
def test_longmemeval_invalid_item_is_located_and_nothing_is_written(seeded, tmp_path, mutate, needles):
    data = lme_data()
    mutate(data)
    path = write_json(tmp_path / "lme.json", data)
    before = snapshot()

    with pytest.raises(InvalidInputError) as info:
        ingest("longmemeval", path)

    assert str(info.value).startswith(str(path))
    for needle in needles:
        assert needle in str(info.value)
    assert snapshot() == before


# --------------------------------------------------------------------------- JSON Lines


def write_jsonl(path: Path, rows: list[dict | str]) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def jl(thread: str, role: str, content, created_at: str = "2024-03-01T09:00:00", **extra) -> dict:
    return {"thread": thread, "role": role, "content": content, "created_at": created_at, **extra}


INTERLEAVED = [
    jl("alpha", "user", "a1", "2024-03-01T09:00:00", id="a-1", speaker="Dana"),
    jl("beta", "user", "b1", "2024-03-01T09:00:30+05:30", id="b-1"),
    jl(
        "alpha",
        "assistant",
        "a2",
        "2024-03-01T09:01:00",
        id="a-2",
        tool_calls=[{"name": "search", "arguments": {"q": "cats"}, "result": {"hits": [1, 2]}}],
    ),
    jl("beta", "assistant", "b2", "2024-03-01T09:01:30Z", id="b-2"),
    jl("alpha", "user", "a3", "2024-03-01T09:02:00", id="a-3"),
    jl("beta", "user", "b3", "2024-03-01T09:02:30", id="b-3"),
]


def test_jsonl_interleaved_threads_keep_their_order_and_fields(store, tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", INTERLEAVED)

    report = ingest("jsonl", path)

    assert (report.units, report.messages, report.namespaces) == (1, 6, ["default"])
    [info] = list_namespaces()
    assert (info.name, info.threads, info.messages) == ("default", 2, 6)
    alpha = thread_messages("default", "alpha")
    beta = thread_messages("default", "beta")
    assert [(m.position, m.role, m.content, m.external_id) for m in alpha] == [
        (1, "user", "a1", "a-1"),
        (2, "assistant", "a2", "a-2"),
        (3, "user", "a3", "a-3"),
    ]
    assert [m.content for m in beta] == ["b1", "b2", "b3"]
    assert alpha[0].speaker == "Dana" and alpha[1].speaker is None
    assert alpha[1].tool_calls == (ToolTrace("search", {"q": "cats"}, {"hits": [1, 2]}),)
    assert alpha[0].tool_calls == ()
    # naive timestamps get the default offset (UTC), explicit ones are kept
    assert alpha[0].created_at == "2024-03-01T09:00:00+00:00"
    assert beta[0].created_at == "2024-03-01T09:00:30+05:30"
    assert beta[1].created_at == "2024-03-01T09:01:30+00:00"


def test_jsonl_namespace_tz_and_limit(store, tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", INTERLEAVED)

    report = ingest("jsonl", path, namespace="mine", limit=4, tz=timezone(timedelta(hours=-3)))

    assert report.messages == 4 and report.namespaces == ["mine"]
    assert [m.content for m in thread_messages("mine", "alpha")] == ["a1", "a2"]
    assert [m.content for m in thread_messages("mine", "beta")] == ["b1", "b2"]
    assert thread_messages("mine", "alpha")[0].created_at == "2024-03-01T09:00:00-03:00"
    assert thread_messages("mine", "beta")[0].created_at == "2024-03-01T09:00:30+05:30"


def test_jsonl_lines_without_id_are_idempotent_too(store, tmp_path):
    rows = [jl("t", "user", f"msg {i}", f"2024-03-01T09:0{i}:00") for i in range(4)]
    path = write_jsonl(tmp_path / "noid.jsonl", rows)
    ingest("jsonl", path)
    before = snapshot()

    again = ingest("jsonl", path)

    assert (again.messages, again.units, again.units_skipped) == (0, 0, 1)
    assert snapshot() == before
    assert Message.select().count() == 4


def test_jsonl_reingest_adds_nothing_and_appended_lines_add_only_new(store, tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", INTERLEAVED)
    ingest("jsonl", path)
    before = snapshot()

    again = ingest("jsonl", path)

    assert (again.messages, again.units, again.units_skipped) == (0, 0, 1)
    assert snapshot() == before

    more = INTERLEAVED + [
        jl("beta", "assistant", "b4", "2024-03-01T09:03:00", id="b-4"),
        jl("gamma", "user", "g1", "2024-03-01T09:04:00"),
    ]
    write_jsonl(path, more)

    grown = ingest("jsonl", path)

    assert (grown.messages, grown.units, grown.units_skipped) == (2, 1, 0)
    assert stats().messages == 8
    assert [m.content for m in thread_messages("default", "beta")] == ["b1", "b2", "b3", "b4"]
    assert [m.content for m in thread_messages("default", "gamma")] == ["g1"]
    assert [m.content for m in thread_messages("default", "alpha")] == ["a1", "a2", "a3"]


def test_jsonl_lines_are_appended_in_chunks_as_if_one_by_one(store, tmp_path, monkeypatch):
    """Appending a thousand lines per call (a line per call took 30 minutes at a million) seals the same
    blocks and keeps a receipt per line, whatever the chunk size."""
    import core.ingest as ingest_module
    from core.models import Block, IngestionReceipt, Namespace

    rows = []
    for i in range(40):
        rows.append(jl("t", "user", f"question {i} about the harbour", f"2024-03-01T09:{i:02d}:00"))
        rows.append(jl("t", "assistant", f"answer {i}", f"2024-03-01T09:{i:02d}:30", id=f"a-{i}"))
    path = write_jsonl(tmp_path / "long.jsonl", rows)
    shapes = {}
    for namespace, chunk in (("small", 7), ("whole", 10_000)):
        monkeypatch.setattr(ingest_module, "APPEND_CHUNK", chunk)
        assert ingest("jsonl", path, namespace=namespace).messages == 80
        ns = Namespace.get(Namespace.name == namespace)
        shapes[namespace] = (
            [
                (b.start_turn, b.end_turn, b.message_count)
                for b in Block.select().where(Block.namespace == ns).order_by(Block.sequence)
            ],
            [m.content for m in thread_messages(namespace, "t")],
            IngestionReceipt.select().where(IngestionReceipt.namespace == ns).count(),
        )
        assert ingest("jsonl", path, namespace=namespace).messages == 0
    assert shapes["small"] == shapes["whole"] and shapes["small"][2] == 80 and len(shapes["small"][0]) >= 2


def test_jsonl_progress_counts_lines_as_they_are_written(store, tmp_path, monkeypatch):
    """One file can be a million lines written for minutes: progress is in lines, chunk by chunk."""
    import core.ingest as ingest_module

    monkeypatch.setattr(ingest_module, "APPEND_CHUNK", 4)
    rows = [jl("a" if i % 3 else "b", "user", f"line {i}", id=f"p-{i}") for i in range(20)]
    calls = []
    ingest("jsonl", write_jsonl(tmp_path / "p.jsonl", rows), progress=lambda d, t, label: calls.append((d, t)))
    done = [d for d, _ in calls]
    assert {t for _, t in calls} == {20} and done == sorted(done) and done[-1] == 20 and len(calls) >= 6


def test_jsonl_a_line_repeated_in_one_file_is_stored_once_and_a_reused_id_is_refused(store, tmp_path):
    line = jl("t", "user", "the same line twice", "2024-03-01T09:00:00")
    assert ingest("jsonl", write_jsonl(tmp_path / "twice.jsonl", [line, line])).messages == 1
    reused = [jl("u", "user", "first", id="x-1"), jl("u", "user", "second", id="x-1")]
    with pytest.raises(ReceiptConflictError, match=r"reused.jsonl:2.*x-1"):
        ingest("jsonl", write_jsonl(tmp_path / "reused.jsonl", reused))
    assert thread_messages("default", "u") == []


def test_jsonl_same_id_with_changed_content_is_a_conflict_and_writes_nothing(store, tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", INTERLEAVED)
    ingest("jsonl", path)
    before = snapshot()
    # a new line before the conflicting one and one after it: neither may be stored
    changed = [jl("delta", "user", "new thread, written before the conflict", id="d-1")]
    changed += [dict(row, content="a3 edited") if row["id"] == "a-3" else row for row in INTERLEAVED]
    changed.append(jl("beta", "assistant", "b4", "2024-03-01T09:03:00", id="b-4"))
    write_jsonl(path, changed)

    with pytest.raises(ReceiptConflictError, match="a-3"):
        ingest("jsonl", path)

    assert snapshot() == before
    assert [m.content for m in thread_messages("default", "alpha")] == ["a1", "a2", "a3"]
    assert thread_messages("default", "delta") == []


@pytest.mark.parametrize(
    ("bad", "needles"),
    [
        (jl("t", "user", 5), [":2: content", "expected a string", "int"]),
        (jl("t", 3, "hi"), [":2: role", "got 3"]),
        (jl("t", "robot", "hi"), [":2: role", "'robot'"]),
        (jl("t", "user", "   "), [":2: content", "no content"]),
        (jl("t", "user", "hi", "not a date"), [":2: created_at", "'not a date'"]),
        (jl("t", "user", "hi", 20240301), [":2: created_at", "int"]),
        (jl("", "user", "hi"), [":2: thread"]),
        ({"thread": "t", "role": "user", "content": "hi"}, [":2: missing field 'created_at'"]),
        (jl("t", "user", "hi", speaker=7), [":2: speaker"]),
        (jl("t", "user", "hi", tool_calls={"name": "x"}), [":2: tool_calls", "list"]),
        (jl("t", "user", "hi", tool_calls=[{"arguments": {}}]), [":2: tool_calls[0].name"]),
        ('{"thread": "t", "role": "user", "content": "hi"', [":2: not valid JSON"]),
        ("[1, 2]", [":2: expected a JSON object", "list"]),
    ],
    ids=[
        "content-int",
        "role-int",
        "role-unknown",
        "content-blank",
        "date-words",
        "date-int",
        "thread-empty",
        "no-created_at",
        "speaker-int",
        "tool_calls-dict",
        "tool_call-nameless",
        "broken-json",
        "not-object",
    ],
)
def test_jsonl_invalid_line_is_located_and_nothing_is_written(seeded, tmp_path, bad, needles):
    path = write_jsonl(tmp_path / "bad.jsonl", [jl("t", "user", "fine"), bad, jl("t", "assistant", "also fine")])
    before = snapshot()

    with pytest.raises(InvalidInputError) as info:
        ingest("jsonl", path)

    message = str(info.value)
    assert message.startswith(f"{path}:2:")
    for needle in needles:
        assert needle in message
    assert snapshot() == before


def test_jsonl_blank_lines_are_skipped_but_line_numbers_stay_true(store, tmp_path):
    path = tmp_path / "gaps.jsonl"
    path.write_text("\n" + json.dumps(jl("t", "user", "one")) + "\n\n" + json.dumps(jl("t", "user", 5)) + "\n")

    with pytest.raises(InvalidInputError, match=r":4: content"):
        parse("jsonl", path)


def test_jsonl_that_is_not_utf8_is_refused_and_nothing_is_written(store, tmp_path):
    path = tmp_path / "latin1.jsonl"
    good = json.dumps(jl("t", "user", "fine line")).encode()
    path.write_bytes(
        good + b"\n" + json.dumps(jl("t", "user", "caf\u00e9")).encode().replace(b"\\u00e9", b"\xe9") + b"\n"
    )
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        ingest("jsonl", path)
    assert Message.select().count() == 0


def test_jsonl_is_read_again_as_it_is_written_and_a_changed_file_is_refused(store, tmp_path):
    """Validated in one pass, then each thread's lines read again while written (a million lines are
    never held): a file edited in between is refused and nothing is written."""
    from core.ingest import IngestReport, parse, write_units

    rows = [jl("t", "user", f"line {i}", id=f"l-{i}") for i in range(5)]
    path = write_jsonl(tmp_path / "moving.jsonl", rows)
    units = parse("jsonl", path)
    write_jsonl(path, rows[:2] + [jl("other", "user", "moved here", id="x")] + rows[3:])
    with pytest.raises(InvalidInputError, match=r"moving.jsonl:3: the file changed"):
        write_units(units, IngestReport(format="jsonl", path=str(path)))
    assert Message.select().count() == 0
    write_jsonl(path, rows)
    assert write_units(parse("jsonl", path), IngestReport(format="jsonl", path=str(path))).messages == 5


def test_jsonl_escaped_surrogate_pair_is_a_character_not_a_lone_surrogate(store, tmp_path):
    """Only a lone surrogate is refused: an escaped pair (JSON's way to write an emoji) is one character."""
    path = tmp_path / "emoji.jsonl"
    path.write_text(json.dumps(jl("t", "user", "party \U0001f389")) + "\n", encoding="utf-8")  # ensure_ascii: a pair
    assert "\\ud83c\\udf89" in path.read_text(encoding="utf-8")
    assert ingest("jsonl", path).messages == 1
    assert thread_messages("default", "t")[0].content == "party \U0001f389"


def test_jsonl_with_windows_line_endings(store, tmp_path):
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(b"".join(json.dumps(jl("t", "user", f"m{i}")).encode() + b"\r\n" for i in range(3)) + b"\r\n")
    assert ingest("jsonl", path).messages == 3
    assert [m.content for m in thread_messages("default", "t")] == ["m0", "m1", "m2"]


def test_jsonl_empty_file_is_rejected(store, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")

    with pytest.raises(InvalidInputError, match="no messages"):
        parse("jsonl", path)


# --------------------------------------------------------------------------- dispatch


def test_unknown_format_and_missing_file(store, tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", INTERLEAVED)

    with pytest.raises(InvalidInputError, match="unknown ingest format 'csv'") as info:
        parse("csv", path)
    for fmt in FORMATS:
        assert fmt in str(info.value)
    with pytest.raises(InvalidInputError, match="no such file") as info:
        parse("jsonl", tmp_path / "absent.jsonl")
    assert str(tmp_path / "absent.jsonl") in str(info.value)
    with pytest.raises(InvalidInputError, match="--limit"):
        parse("jsonl", path, limit=0)
    assert stats().messages == 0


def test_report_is_a_plain_dataclass():
    report = IngestReport(format="jsonl", path="x")
    assert dataclasses.asdict(report) == {
        "format": "jsonl",
        "path": "x",
        "units": 0,
        "units_skipped": 0,
        "units_empty": 0,
        "messages": 0,
        "blocks_sealed": 0,
        "namespaces": [],
    }


def test_longmemeval_session_shown_twice_gets_two_threads(store, tmp_path):
    turns = lme_turns("I moved to Denver.", "Nice city!")
    data = [
        lme_item(
            "q-dup",
            [
                ("sess_a", "2023/05/01 (Mon) 10:00", turns),
                ("sess_b", "2023/05/02 (Tue) 10:00", lme_turns("Other talk.", "Sure.")),
                ("sess_a", "2023/05/09 (Tue) 10:00", turns),
            ],
        )
    ]
    path = write_json(tmp_path / "lme.json", data)
    report = ingest("longmemeval", path)
    assert report.messages == 6
    first = thread_messages("q-dup", "sess_a")
    again = thread_messages("q-dup", "sess_a (repeat 2)")
    assert [m.external_id for m in again] == [m.external_id for m in first] == ["sess_a:0", "sess_a:1"]
    assert again[0].created_at.startswith("2023-05-09") and first[0].created_at.startswith("2023-05-01")
    assert ingest("longmemeval", path).messages == 0


@SAVED
def test_bulk_ingest_leaves_the_search_segment_saved(store, tmp_path, monkeypatch):
    """After a large ingest the next process loads the message segment instead of reading every
    posting from SQL; a small ingest leaves search alone."""
    import core.ingest as ingest_module
    from core.search import segment
    from core.services.search import search_raw

    monkeypatch.setattr(ingest_module, "BULK_INDEX_MIN", 40)
    monkeypatch.setattr(segment, "MERGE_MIN", 10)  # a segment this small is saved too
    small = [jl("alpha", "user", f"small note {i} about kubernetes", id=f"s-{i}") for i in range(10)]
    ingest("jsonl", write_jsonl(tmp_path / "small.jsonl", small), namespace="small")
    folder = segment.saved_folder()
    assert not folder.exists() or not list(folder.glob("message-*.json"))
    rows = [
        jl(
            f"t{i % 3}",
            "user" if i % 2 else "assistant",
            f"turn {i}: the kubernetes rollback plan step {i}",
            id=f"b-{i}",
        )
        for i in range(60)
    ]
    report = ingest("jsonl", write_jsonl(tmp_path / "bulk.jsonl", rows), namespace="bulk")
    assert report.messages == 60
    assert list(folder.glob("message-*.json"))  # saved beside the database
    segment.forget_views()  # a new process
    monkeypatch.setattr(segment, "build_view", lambda *a, **k: pytest.fail("the saved segment was not used"))
    hits = search_raw("bulk", "kubernetes rollback", limit=3)
    assert len(hits) == 3


@SAVED
def test_a_derivation_pass_keeps_the_message_segment_current(store, monkeypatch):
    """Messages captured through the API (no ingest command) are put into the saved segment by the
    next derivation pass, each pass adding only what was captured since the last: the first search
    of a new process loads it instead of reading every posting from SQL."""
    from core.search import segment
    from core.services.capture import append_messages
    from core.services.derive import run_pending
    from core.services.search import search_raw

    monkeypatch.setattr(segment, "MERGE_MIN", 10)  # a segment this small is saved too
    segment.forget_views()
    append_messages(
        "api", "t", [{"role": "user", "content": f"kubernetes rollback step {i} of the plan"} for i in range(24)]
    )
    folder = segment.saved_folder()
    assert not folder.exists() or not list(folder.glob("message-*.json"))
    run_pending("api", provider="offline")
    assert list(folder.glob("message-*.json"))
    append_messages("api", "t", [{"role": "user", "content": f"redis failover drill {i} tonight"} for i in range(24)])
    built = []
    monkeypatch.setattr(segment, "build_view", lambda *a, **k: built.append(a) or pytest.fail("rebuilt"))
    run_pending("api", provider="offline")  # the second pass reads only the new postings
    segment.forget_views()  # a new process
    monkeypatch.setattr(segment, "_read_postings", lambda *a, **k: pytest.fail("postings read from SQL"))
    assert len(search_raw("api", "redis failover", limit=30)) == 24
    assert len(search_raw("api", "kubernetes rollback", limit=30)) == 24
    assert not built


@SAVED
def test_a_derivation_pass_that_cannot_save_the_segment_still_reports_its_work(store, monkeypatch):
    from core.search import segment
    from core.services.capture import append_messages
    from core.services.derive import run_pending

    monkeypatch.setattr(segment, "MERGE_MIN", 10)
    segment.forget_views()
    append_messages("api", "t", [{"role": "user", "content": f"kubernetes rollback step {i}"} for i in range(24)])

    def full_disk(view):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(segment, "save", full_disk)
    report = run_pending("api", provider="offline")
    assert report.blocks_ready >= 1 and report.failed == 0
    assert any("search index not saved" in e and "No space left" in e for e in report.errors)


@SAVED
def test_a_new_process_saves_the_delta_it_had_to_read(store, tmp_path, monkeypatch):
    """Postings added after the last save (below the share that makes a running process merge)
    are read by the first process that loads the segment, which saves them for the next."""
    from core.search import segment
    from core.services.capture import append_messages
    from core.services.search import search_raw

    monkeypatch.setattr(segment, "MERGE_MIN", 10)
    monkeypatch.setattr(segment, "MERGE_SHARE", 100.0)  # a running process never merges here
    append_messages("ns", "t", [{"role": "user", "content": f"kubernetes rollback step {i}"} for i in range(30)])
    search_raw("ns", "kubernetes")  # builds and saves the static part
    from core.services.spaces import get_namespace

    pointer = segment.saved_folder() / f"message-{get_namespace('ns').id}.json"
    saved = json.loads(pointer.read_text())["watermark"]
    append_messages("ns", "t", [{"role": "user", "content": f"redis failover drill {i}"} for i in range(8)])
    search_raw("ns", "redis")  # the running process keeps its delta in memory
    assert json.loads(pointer.read_text())["watermark"] == saved
    segment.forget_views()  # a new process
    assert len(search_raw("ns", "redis failover", limit=20)) == 8
    assert json.loads(pointer.read_text())["watermark"] > saved
    segment.forget_views()
    monkeypatch.setattr(segment, "_read_postings", lambda *a, **k: pytest.fail("the delta was read again"))
    assert len(search_raw("ns", "redis failover", limit=20)) == 8


@pytest.mark.parametrize("namespace", ["", "   "])
def test_a_blank_namespace_is_refused_not_read_as_the_default(store, tmp_path, namespace):
    path = write_jsonl(tmp_path / "chat.jsonl", [jl("t", "user", "hello")])
    with pytest.raises(InvalidInputError, match="non-empty string"):
        ingest("jsonl", path, namespace=namespace)
    assert Message.select().count() == 0


def test_a_long_jsonl_ingest_commits_in_chunks_so_a_capture_beside_it_never_waits_long(store, tmp_path, monkeypatch):
    """Each chunk is a transaction of its own: between two chunks another writer gets the lock."""
    import core.ingest as ingest_module
    from core.db import db as database
    from core.services.capture import append_turn

    monkeypatch.setattr(ingest_module, "APPEND_CHUNK", 5)
    rows = [
        jl("bulk", "user" if i % 2 == 0 else "assistant", f"line {i}", f"2024-03-01T09:{i:02d}:00", id=f"x-{i}")
        for i in range(23)
    ]
    path = write_jsonl(tmp_path / "bulk.jsonl", rows)
    commits = []
    original = ingest_module._line_receipts

    def receipts_then_capture(namespace, result, part):
        original(namespace, result, part)
        assert database.in_transaction()
        commits.append(len(part))

    monkeypatch.setattr(ingest_module, "_line_receipts", receipts_then_capture)
    seen_between = []

    def progress(done, total, label):
        if not database.in_transaction() and done < total:
            append_turn("default", f"agent-{done}", "a capture between chunks", "ok")  # would raise if locked
            seen_between.append(done)

    ingest("jsonl", path, progress=progress)
    assert commits == [5, 5, 5, 5, 3]
    assert seen_between == [5, 10, 15, 20]
    assert [m.content for m in thread_messages("default", "bulk")] == [f"line {i}" for i in range(23)]
    # A rerun resumes from the receipts: nothing is stored twice.
    report = ingest("jsonl", path)
    assert report.messages == 0 and len(thread_messages("default", "bulk")) == 23
