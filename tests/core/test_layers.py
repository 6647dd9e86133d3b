"""Deterministic layer rendering (design §3.2, §3.3, §3.5) and the token estimate."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.dto import MessageIn, RawMessage, ToolTrace
from core.layers import (
    LEVEL_LABELS,
    REPEATED_PASTE_MARKER,
    _is_code_like,
    _render_l3_unguarded,
    _render_l4_unguarded,
    derivation_view,
    detect_tool_json,
    deterministic_layers,
    render_l0,
    render_l1,
    render_l2,
    render_l3,
    render_l4,
    render_l5,
    summarize_tool_result,
)
from core.tokens import estimate_tokens

FILLERS = [
    "ok",
    "okay",
    "got it",
    "thanks",
    "thank you",
    "yes",
    "correct",
    "sure",
    "好",
    "好的",
    "嗯",
    "嗯嗯",
    "明白",
    "收到",
    "谢谢",
    "感谢",
    "辛苦了",
    "是",
    "是的",
    "对",
    "对的",
    "没错",
    "可以",
    "行",
    "同意",
    "就这样",
]

LONG_PASTE = (
    "Traceback (most recent call last): the worker crashed while reading the "
    "configuration file at /etc/strata/config.yaml because the key was missing"
)

LONG_FENCE = (
    "```python\nfor index, row in enumerate(rows):\n    print(index, row['name'], row['value'], sep=' | ')\n```"
)


def user(content: str, **kw) -> MessageIn:
    return MessageIn(role="user", content=content, **kw)


def assistant(content: str, **kw) -> MessageIn:
    return MessageIn(role="assistant", content=content, **kw)


def condensed(messages) -> str:
    """L3 of the messages, checked to come from the rules and not from the L4 fallback."""
    result = render_l3(messages)
    assert result == _render_l3_unguarded(messages), "token guard replaced L3"
    return result


# --------------------------------------------------------------------------- tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abcd", 1),
        ("abcde", 2),
        ("hello world", 3),  # 11 ASCII characters
        ("你好世界", 4),
        ("ab你好cd", 4),  # 1 + 2 + 1: each ASCII run rounds up on its own
        ("abcde中abcde", 5),  # 2 + 1 + 2
        ("記憶 memory", 2 + 2),  # 2 CJK + ceil(7/4)
    ],
)
def test_estimate_tokens(text, expected):
    assert estimate_tokens(text) == expected


# --------------------------------------------------------------------------- tool summaries


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "no result"),
        (42, "42"),
        (2.5, "2.5"),
        (True, "true"),
        (False, "false"),
        ("  many   spaced\n\nwords  ", "many spaced words"),
        ('{"ok": true}', "completed"),
        ("17", "17"),
        ({"error": "disk   full"}, "failed: disk full"),
        ({"error": "e" * 300}, "failed: " + "e" * 140),
        ({"summary": "Found three matches", "items": [1]}, "Found three matches"),
        ({"message": "saved"}, "saved"),
        ({"hits": [1, 2], "files": [], "arguments": [1, 2, 3], "params": [1]}, "hits: 2, files: 0"),
        ({"input": [1], "request": [2], "ok": True}, "completed"),
        ({"ok": False}, "not completed"),
        ({"value": {"nested": 1}}, "structured result returned"),
        ([1, 2, 3], "3 items"),
        ([], "0 items"),
        (["only"], "1 item"),
        ("x" * 500, "x" * 160),
        ({"error": {"code": 5}, "ok": False}, "not completed"),
    ],
)
def test_summarize_tool_result(value, expected):
    assert summarize_tool_result(value) == expected


def test_summarize_tool_result_never_exceeds_160_chars():
    big = {f"key{i}": list(range(i)) for i in range(60)}
    assert len(summarize_tool_result(big)) <= 160
    assert len(summarize_tool_result({"message": "m" * 400})) == 160


# --------------------------------------------------------------------------- tool JSON detection


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ('{"name": "search", "arguments": {"q": "x"}}', ("search",)),
        ('{"name": "search", "parameters": {"q": "x"}}', ("search",)),
        ('{"tool": "shell", "cmd": "ls"}', ("shell",)),
        ('{"tool_calls": [{"function": {"name": "run", "arguments": "{}"}}]}', ("run",)),
        ('[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]', ("a", "b")),
        ('```json\n{"name": "fenced", "arguments": {}}\n```', ("fenced",)),
    ],
)
def test_detect_tool_json_collects_names(text, names):
    info = detect_tool_json(text)
    assert info is not None and info.parsed
    assert info.names == names


@pytest.mark.parametrize(
    "text",
    ['{"name": "just a name"}', '{"ok": true}', "plain words", "", "[1, 2]", '"tool_calls"'],
)
def test_detect_tool_json_rejects_non_tool_text(text):
    assert detect_tool_json(text) is None


def test_detect_tool_json_summary_prefers_result_then_content():
    with_result = detect_tool_json('{"name": "s", "arguments": {}, "result": {"hits": [1, 2]}, "content": "ignored"}')
    with_content = detect_tool_json('{"name": "s", "arguments": {}, "content": "done"}')
    assert with_result.line == "Tool call: s (hits: 2)"
    assert with_content.line == "Tool call: s (done)"


def test_detect_tool_json_fallback_for_truncated_payload():
    info = detect_tool_json('{"tool_calls": [{"name": "write_file", "arguments": {"path": "/tm')
    assert info is not None and not info.parsed
    assert info.line == "Tool call: write_file (raw arguments omitted)"
    nameless = detect_tool_json('{"arguments": {"path": "/tm')
    assert nameless.line == "Tool call (raw arguments omitted)"


def test_prose_mentioning_tool_calls_is_not_tool_json():
    assert detect_tool_json('What does "arguments" mean inside tool_calls?') is None


# --------------------------------------------------------------------------- L5


def test_l5_is_raw_and_includes_system_and_traces():
    trace = ToolTrace("search", {"query": "secret-arg", "city": "北京"}, {"hits": [1]})
    messages = [
        MessageIn("system", "You are a memory agent."),
        MessageIn("user", "  hi  ", speaker="Ann"),
        MessageIn("assistant", "looking", tool_calls=(trace,)),
    ]
    expected_trace = json.dumps(trace.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert render_l5(messages) == (
        "system: You are a memory agent.\n\n"
        "user (Ann):   hi  \n\n"
        "assistant: looking\n\n"
        f"Tool call (raw): {expected_trace}"
    )
    assert '"arguments":{"city":"北京","query":"secret-arg"}' in expected_trace


# --------------------------------------------------------------------------- L4


def test_l4_labels_trims_and_skips_system():
    messages = [
        MessageIn("system", "secret system prompt"),
        MessageIn("user", "  Where is the config?  "),
        MessageIn("assistant", "In /etc.", speaker="Strata"),
        MessageIn("tool", "plain tool output text"),
    ]
    assert render_l4(messages) == ("User: Where is the config?\n\nStrata: In /etc.\n\nTool: plain tool output text")


def test_l4_replaces_tool_json_and_summarises_traces():
    messages = [
        MessageIn(
            "tool",
            '{"name": "grep", "arguments": {"pattern": "hidden-pattern"}, "result": {"matches": [1, 2, 3]}}',
        ),
        assistant(
            "Found them, now I will open the first file to confirm the details.",
            tool_calls=(ToolTrace("open", {"path": "hidden/path.txt"}, "file body text"),),
        ),
    ]
    l4 = render_l4(messages)
    assert l4 == (
        "Tool: Tool call: grep (matches: 3)\n\n"
        "Assistant: Found them, now I will open the first file to confirm the details.\n\n"
        "Tool call: open (file body text)"
    )


def test_l4_guard_falls_back_to_l5_when_larger():
    # A tiny tool payload expands into a longer summary line than the raw text.
    messages = [assistant('{"tool":"t"}'), assistant('{"tool":"u"}')]
    unguarded = _render_l4_unguarded(messages)
    assert estimate_tokens(unguarded) > estimate_tokens(render_l5(messages))
    assert render_l4(messages) == render_l5(messages)


# --------------------------------------------------------------------------- L3 rules


@pytest.mark.parametrize("filler", FILLERS)
@pytest.mark.parametrize("suffix", ["", "!", "。", "～"])
def test_l3_drops_each_filler(filler, suffix):
    messages = [user(f"{filler}{suffix}\nPlease rotate the API keys tonight")]
    assert condensed(messages) == "User: Please rotate the API keys tonight"


@pytest.mark.parametrize("filler", ["OK", "Thanks!", "Got it.", "Thank you!!", " sure ~"])
def test_l3_filler_match_ignores_case_and_trailing_marks(filler):
    assert condensed([user(f"{filler}\nShip the release")]) == "User: Ship the release"


def test_l3_filler_sentence_split_on_marks_without_newline():
    assert condensed([user("好的。明天上线新版本。")]) == "User: 明天上线新版本。"
    assert condensed([user("Thanks! Deploy now?")]) == "User: Deploy now?"


def test_l3_does_not_drop_filler_embedded_in_a_sentence():
    text = "Ok, deploy it to staging first"
    assert condensed([user(text)]) == f"User: {text}"


def test_l3_paragraph_without_fillers_stays_verbatim():
    text = "First we migrate the schema!\n   Then we backfill the index?\nFinally we ship"
    assert condensed([user(text)]) == f"User: {text}"


def test_l3_paragraph_with_filler_rejoins_kept_sentences_by_newline():
    text = "Thanks! Then we backfill the index? Finally we ship"
    assert condensed([user(text)]) == "User: Then we backfill the index?\nFinally we ship"


def test_l3_keeps_paragraph_breaks():
    text = "Plan A is cheap\n\n\nok\n\nPlan B is fast"
    assert condensed([user(text)]) == "User: Plan A is cheap\n\nPlan B is fast"


def test_l3_second_copy_of_long_paste_becomes_marker():
    messages = [user(LONG_PASTE), assistant("Checking."), user(LONG_PASTE)]
    l3 = condensed(messages)
    assert l3.count(LONG_PASTE) == 1
    assert l3.endswith(f"User: {REPEATED_PASTE_MARKER}")
    assert l3.startswith(f"User: {LONG_PASTE}")


def test_l3_long_paste_duplicate_ignores_whitespace_and_case():
    reflowed = LONG_PASTE.upper().replace(" ", "\n  ", 3)
    l3 = condensed([user(LONG_PASTE), user(reflowed)])
    assert l3.endswith(REPEATED_PASTE_MARKER)


def test_l3_repeated_fenced_code_becomes_marker():
    messages = [user(f"Here:\n\n{LONG_FENCE}"), assistant(f"Same again:\n{LONG_FENCE}")]
    l3 = condensed(messages)
    assert l3.count(LONG_FENCE) == 1
    assert l3.endswith(f"Assistant: Same again:\n\n{REPEATED_PASTE_MARKER}")


def test_l3_short_repeated_message_is_kept():
    messages = [
        user("sounds good, go ahead"),
        assistant(LONG_PASTE),
        user("sounds good, go ahead"),
        assistant(LONG_PASTE),
    ]
    l3 = condensed(messages)
    assert l3.count("sounds good, go ahead") == 2
    assert l3.count(REPEATED_PASTE_MARKER) == 1


def test_l3_repeated_code_like_paragraph_under_80_chars_becomes_marker():
    code = "def add(left, right):\n    total = left + right\n    return total"
    assert len(" ".join(code.split())) < 80
    l3 = condensed([user(code), user(code)])
    assert l3 == f"User: {code}\n\nUser: {REPEATED_PASTE_MARKER}"


def test_l3_code_like_paragraph_keeps_filler_lines():
    code = "const flag = 1;\nok\nexport default flag;"
    assert condensed([user(code)]) == f"User: {code}"


@pytest.mark.parametrize(
    ("paragraph", "expected"),
    [
        ("const a = 1\nconst b = 2", True),
        ("SELECT id\nFROM blocks", True),
        ("xs.map(x\n=> x + 1)", True),
        ("if (a) { b;\n}", True),
        ("import os\nos.getcwd()", True),
        ("def f(): return 1", False),  # single line
        ("we met at noon\nand talked", False),
        ("select a row\nfrom the list", False),  # keywords are case-sensitive
        ("{ a }\n{ b }", False),  # braces without semicolon
    ],
)
def test_code_like_paragraph_detection(paragraph, expected):
    assert _is_code_like(paragraph) is expected


def test_l3_tool_json_message_is_one_summary_line():
    payload = json.dumps(
        {
            "tool_calls": [{"function": {"name": "fetch", "arguments": '{"url": "https://x"}'}}],
            "content": "page fetched",
        }
    )
    assert condensed([assistant(payload)]) == "Assistant: Tool call: fetch (page fetched)"


def test_tool_arguments_hidden_in_l3_l4_present_in_l5():
    trace = ToolTrace("search", {"query": "secret-argument-value"}, {"hits": [1, 2]})
    messages = [assistant("Let me look that up in the archive for you.", tool_calls=(trace,))]
    layers = deterministic_layers(messages)
    for level in (3, 4):
        assert "secret-argument-value" not in layers[level]
        assert "Tool call: search (hits: 2)" in layers[level]
    assert "secret-argument-value" in layers[5]


def test_system_messages_absent_from_l3_l4_present_in_l5():
    messages = [MessageIn("system", "SYSTEM-ONLY-TEXT"), user("What changed yesterday?")]
    layers = deterministic_layers(messages)
    assert "SYSTEM-ONLY-TEXT" not in layers[3]
    assert "SYSTEM-ONLY-TEXT" not in layers[4]
    assert "system: SYSTEM-ONLY-TEXT" in layers[5]


def test_l3_drops_message_that_becomes_empty():
    messages = [user("Move the cron job to 3am"), assistant("好的！"), user("thanks")]
    assert condensed(messages) == "User: Move the cron job to 3am"


def test_l3_keeps_tool_trace_of_otherwise_empty_message():
    messages = [assistant("ok", tool_calls=(ToolTrace("save", {"k": "v"}, {"ok": True}),))]
    assert condensed(messages) == "Assistant: Tool call: save (completed)"


def test_l3_keeps_a_long_prose_paragraph_once_after_dropping_its_fillers():
    messages = [user(f"Thanks!\n{LONG_PASTE}"), user(f"{LONG_PASTE}\nok")]
    assert condensed(messages) == f"User: {LONG_PASTE}\n\nUser: {REPEATED_PASTE_MARKER}"


def test_l3_uses_speaker_label():
    assert condensed([user("Ship it on Friday", speaker="Dana")]) == "Dana: Ship it on Friday"


def test_l3_guard_falls_back_to_l4_when_larger():
    # Tiny repeated fences are replaced by a marker longer than themselves.
    messages = [user("```\nx\n```"), user("```\nx\n```"), user("```\nx\n```")]
    l4 = render_l4(messages)
    assert estimate_tokens(_render_l3_unguarded(messages)) > estimate_tokens(l4)
    assert render_l3(messages) == l4


def test_layers_accept_raw_messages():
    raw = [
        RawMessage(
            id=1,
            role="user",
            content="ok\nRename the table",
            created_at="2024-05-01T10:00:00+02:00",
            thread="t",
            position=1,
            turn=1,
        ),
        RawMessage(
            id=2,
            role="assistant",
            content="Done.",
            created_at="2024-05-01T10:00:00+02:00",
            thread="t",
            position=2,
            turn=1,
        ),
    ]
    assert render_l3(raw) == "User: Rename the table\n\nAssistant: Done."


# --------------------------------------------------------------------------- token ordering property

_TEXT_PIECES = st.sampled_from(
    [
        "ok",
        "好的。",
        "Thanks!",
        "收到",
        "Please check the logs",
        "明天上线新版本。",
        LONG_PASTE,
        LONG_FENCE,
        "```\nx\n```",
        "const a = 1;\nlet b = a;",
        '{"name": "s", "arguments": {"q": 1}}',
        '{"tool":"t"}',
        '{"tool_calls": [{"name": "x"',
        "",
        "   ",
        "line one\nline two",
        "why? because!",
    ]
)
_TRACES = st.builds(
    ToolTrace,
    name=st.sampled_from(["search", "open", "写入"]),
    arguments=st.one_of(st.none(), st.just({"q": "secret"})),
    result=st.one_of(st.none(), st.just({"hits": [1, 2]}), st.text(max_size=40), st.integers()),
)
_MESSAGES = st.builds(
    MessageIn,
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    content=st.lists(_TEXT_PIECES, max_size=4).map("\n\n".join) | st.text(max_size=60),
    speaker=st.one_of(st.none(), st.sampled_from(["Ann", "小明"])),
    tool_calls=st.lists(_TRACES, max_size=2).map(tuple),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_MESSAGES, max_size=6))
def test_token_order_l3_le_l4_le_l5(messages):
    layers = deterministic_layers(messages)
    assert estimate_tokens(layers[3]) <= estimate_tokens(layers[4]) <= estimate_tokens(layers[5])
    assert layers[3] == render_l3(messages)
    assert layers[4] == render_l4(messages)


# --------------------------------------------------------------------------- L0-L2 and labels


def test_render_l0_l1_l2():
    assert render_l0("Schema migration", ["sqlite", "fts"]) == "Schema migration\nTags: sqlite, fts"
    assert render_l0("Chat", []) == "Chat\nTags: none"
    assert render_l1("  We moved to SQLite.  ") == "We moved to SQLite."
    assert render_l2(["a", "  b "], "summary") == "- a\n- b"
    assert render_l2([], "We moved to SQLite.") == "We moved to SQLite."
    assert render_l2(None, "fallback") == "fallback"


def test_level_labels():
    assert LEVEL_LABELS == {
        0: "L0 title and tags",
        1: "L1 narrative summary",
        2: "L2 key points",
        3: "L3 rule-condensed transcript",
        4: "L4 readable near-verbatim transcript",
        5: "L5 raw transcript",
    }


# --------------------------------------------------------------------------- derivation view


def test_derivation_view_compacts_tool_payloads_and_long_code():
    long_code = "```python\n" + "x = 1\n" * 200 + "```"
    big_result = json.dumps({"rows": list(range(500))})
    messages = [
        RawMessage(
            id=7,
            role="user",
            content=f"Run this:\n{long_code}",
            created_at="2024-01-01T00:00:00+00:00",
            thread="t",
            position=1,
            turn=1,
            speaker="Ann",
        ),
        RawMessage(
            id=8,
            role="assistant",
            content="Running.",
            created_at="2024-01-01T00:00:01+00:00",
            thread="t",
            position=2,
            turn=1,
            tool_calls=(ToolTrace("exec", {"code": "x = 1" * 100}, big_result),),
        ),
        RawMessage(
            id=9,
            role="tool",
            content=big_result,
            created_at="2024-01-01T00:00:02+00:00",
            thread="t",
            position=3,
            turn=1,
        ),
    ]
    view = derivation_view(messages, max_tool_chars=100)
    assert [row["id"] for row in view] == [7, 8, 9]
    assert view[0]["speaker"] == "Ann" and view[0]["created_at"] == "2024-01-01T00:00:00+00:00"
    assert view[0]["text"].startswith("Run this:\n```python\nx = 1")
    assert "[code cut:" in view[0]["text"] and len(view[0]["text"]) < 300
    assert view[1]["text"] == "Running.\nTool call: exec (rows: 500)"
    assert view[2]["text"] == "rows: 500"
    total = sum(len(row["text"]) for row in view)
    assert total < len(render_l5(messages)) / 5


def test_derivation_view_keeps_short_content_and_tolerates_missing_ids():
    view = derivation_view([user("Remember that I prefer tea")])
    assert view == [
        {"id": None, "role": "user", "speaker": None, "created_at": None, "text": "Remember that I prefer tea"}
    ]
