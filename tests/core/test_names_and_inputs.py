"""Namespace and thread names have one spelling; tool arguments that are not text or nest too deep
are refused before anything runs."""

from __future__ import annotations

import json
import unicodedata

import pytest

from core.agent_schemas import MAX_ARGUMENT_DEPTH, InvalidArgumentsError, ToolError
from core.agent_tools import MemoryTools
from core.errors import InvalidInputError, StrataError
from core.ingest import ingest
from core.models import Message, Namespace, RetrievalBatch, Thread
from core.services.capture import append_turn
from core.services.spaces import get_namespace, validate_name


@pytest.mark.parametrize(
    "given, stored",
    [
        (" me", "me"),
        ("me\t", "me"),
        ("\u3000me\n", "me"),
        (unicodedata.normalize("NFD", "café"), "café"),
        ("a b", "a b"),
        ("👩\u200d💻", "👩\u200d💻"),
    ],
)
def test_a_name_is_stripped_and_nfc(given, stored):
    assert validate_name(given) == stored


@pytest.mark.parametrize(
    "given, words",
    [
        ("", "cannot be empty"),
        (" \t", "cannot be empty"),
        ("a\x00b", "control character"),
        ("a\nb", "control character"),
        ("a\x1bb", "control character"),
        ("a\u2028b", "control character"),
        ("a\udcffb", "not valid UTF-8"),
        ("\ud800", "not valid UTF-8"),
        ("n" * 256, "longer than 255"),
        (3, "string"),
    ],
)
def test_a_bad_name_is_refused_with_what_is_wrong(given, words):
    with pytest.raises(InvalidInputError, match=words):
        validate_name(given)


def test_a_namespace_made_as_one_spelling_is_found_by_another(store):
    append_turn(" me ", " chat ", "We ship on Friday.", "Noted.")
    assert [n.name for n in Namespace.select()] == ["me"] and [t.name for t in Thread.select()] == ["chat"]
    assert get_namespace("me").id == get_namespace(" me").id == get_namespace("me\n").id
    decomposed = unicodedata.normalize("NFD", "café")
    append_turn(decomposed, "t", "hello", "hi")
    assert get_namespace("café").name == "café"


def test_an_ingest_into_a_padded_namespace_is_looked_up_under_its_stored_name(store, tmp_path):
    path = tmp_path / "chat.jsonl"
    lines = [
        {"thread": " t1", "role": "user", "content": "hello", "created_at": "2024-01-01T10:00:00Z"},
        {"thread": "t1", "role": "assistant", "content": "hi", "created_at": "2024-01-01T10:00:01Z"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    report = ingest("jsonl", path, namespace=" me")
    assert report.namespaces == ["me"] and report.messages == 2
    assert [t.name for t in Thread.select()] == ["t1"]
    assert Message.select().join(Namespace).where(Namespace.name == "me").count() == 2


def test_a_locomo_conversation_named_with_padding_lands_under_its_stored_name(store, tmp_path):
    sample = {
        "sample_id": " conv-1 ",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "We moved to Porto."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice!"},
            ],
        },
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    report = ingest("locomo", path)
    assert report.namespaces == ["conv-1"]
    assert get_namespace("conv-1").name == "conv-1"


def _deep(levels: int):
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.fixture
def tools(store):
    append_turn("ns", "s1", "We decided to use PostgreSQL for billing.", "Noted.")
    return MemoryTools("ns", session="s1")


def test_call_safe_refuses_arguments_nested_ten_thousand_deep(tools):
    deep = _deep(10_000)
    result = tools.call_safe("search_raw", {"query": deep})
    assert result["error"]["code"] == "invalid_arguments" and result["error"]["field"] == "query"
    assert f"deeper than {MAX_ARGUMENT_DEPTH} levels" in result["error"]["message"]
    with pytest.raises(InvalidInputError):  # a StrataError a harness can catch as bad input
        tools.call("record_use", {"batch_id": 1, "evidence_refs": deep})
    deep_object: dict = {}
    for _ in range(10_000):
        deep_object = {"a": deep_object}
    assert tools.call_safe("assess", deep_object)["error"]["code"] == "invalid_arguments"
    assert RetrievalBatch.select().count() == 0  # nothing ran


def test_nesting_up_to_the_limit_is_not_refused_for_its_depth(tools):
    result = tools.call_safe("search_raw", {"query": _deep(MAX_ARGUMENT_DEPTH - 1)})
    assert "deeper than" not in result["error"]["message"]  # refused as no string, not for depth


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"query": "Postgre\udcffSQL"}, "query"),
        ({"query": "x", "participants": ["Ana\ud800"]}, "participants"),
    ],
)
def test_call_safe_refuses_text_that_is_not_utf8_and_writes_nothing(tools, arguments, field):
    result = tools.call_safe("search_events", arguments)
    assert result["error"]["code"] == "invalid_arguments" and result["error"]["field"] == field
    assert "not valid UTF-8" in result["error"]["message"]
    json.dumps(result, ensure_ascii=False).encode("utf-8")  # the error itself can be sent
    assert RetrievalBatch.select().count() == 0


def test_record_use_refs_with_a_lone_surrogate_are_refused_before_the_gate(tools):
    found = tools.call("search_raw", {"query": "PostgreSQL"})
    with pytest.raises(InvalidArgumentsError) as caught:
        tools.call("record_use", {"batch_id": found["batch_id"], "evidence_refs": ["\udcffevent:1"]})
    assert isinstance(caught.value, (ToolError, StrataError)) and caught.value.field == "evidence_refs"


def test_a_tool_name_or_namespace_that_is_not_utf8_is_refused(tools, store):
    assert tools.call_safe("search\udcff", {})["error"]["code"] == "unknown_tool"
    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        MemoryTools("ns\udcff")
    assert MemoryTools(" ns ", session=" s1").namespace == "ns"


def test_thread_lookups_take_the_stored_spelling(store):
    from core.services.capture import close_thread, thread_messages

    append_turn("ns", "session-42", "We ship on Friday.", "Noted.")
    assert len(thread_messages("ns", " session-42\n")) == 2
    assert close_thread("ns", " session-42 ")  # its open tail is sealed, found under the padded name


def test_a_nul_character_is_refused_at_every_door_and_nothing_is_written(store, tmp_path):
    """PostgreSQL cannot store a NUL in text; refused as input on every engine, it never reaches
    the driver (whose ValueError escaped every caller) and a file holding one writes nothing."""
    import json

    from core.agent_tools import MemoryTools
    from core.errors import InvalidInputError
    from core.imports.formats import ImportFormatError
    from core.ingest import ingest
    from core.models import Message
    from core.services.capture import append_turn
    from core.services.import_preview import start_import

    append_turn("ns", "t", "tea at four", "ok")
    before = Message.select().count()
    with pytest.raises(InvalidInputError, match="content: a NUL character at character 1"):
        append_turn("ns", "t", "x\x00y", "ok")
    with pytest.raises(InvalidInputError, match="speaker: a NUL character"):
        append_turn("ns", "t", {"role": "user", "content": "hi", "speaker": "A\x00"}, "ok")
    lines = tmp_path / "nul.jsonl"
    lines.write_text(
        "\n".join(
            json.dumps({"thread": thread, "role": "user", "content": content, "created_at": "2024-03-01T10:00:00Z"})
            for thread, content in (("a", "tea"), ("b", "x\x00y"))
        )
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InvalidInputError, match=r"nul.jsonl:2: content: a NUL character"):
        ingest("jsonl", lines, namespace="ns")
    assert Message.select().count() == before  # thread "a" before it is not stored either
    answer = MemoryTools("ns").call_safe("search_events", {"query": "tea", "participants": ["A\x00"]})
    assert answer["error"]["code"] == "invalid_arguments" and "NUL character" in answer["error"]["message"]
    with pytest.raises(ImportFormatError, match="a NUL character at character"):
        start_import("ns", "- likes tea\x00\n", format="text")


def test_a_count_reads_singular_for_one():
    from core.text import counted

    assert [counted(1, "node"), counted(3, "node"), counted("12+", "block"), counted(1, "entry", "entries")] == [
        "1 node",
        "3 nodes",
        "12+ blocks",
        "1 entry",
    ]
    assert counted(2, "entry", "entries") == "2 entries"
