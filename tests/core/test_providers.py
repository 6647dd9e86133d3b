"""Providers: JSON recovery, the OpenAI-compatible client (against a local fake server), scripting."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest

from core.errors import InvalidInputError
from core.providers import PROVIDERS, get_provider
from core.providers.base import BlockSummary, Extraction, ProviderOutputError
from core.providers.jsonrecover import extract_json_object
from core.providers.openai_compat import (
    CORRECTIVE_MESSAGE,
    DEFAULT_BASE_URL,
    DEFAULT_MODEL,
    OpenAICompatProvider,
    ProviderCallError,
)
from core.providers.schemas import (
    EXTRACTION_SCHEMA,
    GRAPH_SCHEMA,
    SUMMARY_INSTRUCTIONS,
    SUMMARY_SCHEMA,
)
from core.providers.scripted import ScriptedProvider

KEY = "sk-test-9f8e7d6c5b4a-secret"

GOOD_SUMMARY = {
    "title": "Database migration",
    "tags": ["postgres", "migration"],
    "summary": "The user decided to move the store to Postgres.",
    "keypoints": ["Postgres chosen", "Migration starts Monday"],
    "should_extract": True,
}
GOOD_EXTRACTION = {
    "should_extract": True,
    "reason": "one decision",
    "events": [
        {
            "title": "Move to Postgres",
            "summary": "The user decided to move the store to Postgres.",
            "source_message_ids": [3],
            "temporal": {"precision": "unknown", "basis": "unknown"},
        }
    ],
}
GOOD_GRAPH = {
    "reason": "one project",
    "nodes": [{"ref": "n1", "name": "Strata", "type": "project", "source_event_ids": [7], "provenance": {"name": [7]}}],
    "edges": [],
}


# The canned bodies and the fake OpenAI-compatible server on 127.0.0.1 are shared with the
# import tests (tests/fake_llm.py).
from tests.fake_llm import FakeLLM, llm, text_reply, tool_call  # noqa: E402,F401 (llm is a fixture)


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch):
    for name in ("STRATA_LLM_BASE_URL", "STRATA_LLM_MODEL", "STRATA_LLM_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def make(llm: FakeLLM, **kw: Any) -> OpenAICompatProvider:
    kw.setdefault("retry_delay", 0)
    kw.setdefault("timeout", 5)
    return OpenAICompatProvider(
        base_url=kw.pop("base_url", llm.url), model=kw.pop("model", "test-model"), api_key=KEY, **kw
    )


MESSAGES = [
    {"id": 3, "role": "user", "text": "好的, let's move the store to Postgres."},
    {"id": 4, "role": "assistant", "text": "Noted: migration starts Monday."},
]


# -- jsonrecover ------------------------------------------------------------------------


class TestJsonRecover:
    def test_plain_object(self):
        assert extract_json_object('{"a": 1}') == {"a": 1}

    def test_bom_and_whitespace(self):
        assert extract_json_object('\ufeff  {"a": 1}\n', ["a"]) == {"a": 1}

    def test_fenced_after_reasoning(self):
        text = 'Let me think about {this}.\nThe answer is:\n```json\n{"title": "x", "n": [1, 2]}\n```\nDone.'
        assert extract_json_object(text, ["title"]) == {"title": "x", "n": [1, 2]}

    def test_last_complete_object_with_required_keys(self):
        text = (
            'Draft: {"title": "first", "summary": "s1"}\n'
            'Final: {"title": "second", "summary": "s2"}\n'
            'Note: {"unrelated": true} trailing junk ]]'
        )
        assert extract_json_object(text, ["title", "summary"])["title"] == "second"
        assert extract_json_object(text) == {"unrelated": True}

    def test_braces_and_quotes_inside_strings(self):
        text = 'x {"title": "a } b { \\" c", "k": {"nested": "}"}} y'
        assert extract_json_object(text, ["title"]) == {"title": 'a } b { " c', "k": {"nested": "}"}}

    def test_stray_brace_in_prose_is_skipped(self):
        text = 'I will output an object { like this:\n{"title": "x"}'
        assert extract_json_object(text, ["title"]) == {"title": "x"}

    def test_truncated_raises(self):
        with pytest.raises(ProviderOutputError, match="truncated"):
            extract_json_object('Sure: {"title": "x", "summary": "cut of', ["title"])

    def test_nested_member_of_truncated_object_is_not_an_answer(self):
        with pytest.raises(ProviderOutputError, match="truncated"):
            extract_json_object('{"title": "x", "meta": {"k": 1}, "summary": "cu')

    def test_complete_object_before_truncated_one_is_used(self):
        text = '{"title": "draft", "summary": "s"} then {"title": "final", "summ'
        assert extract_json_object(text, ["title", "summary"])["title"] == "draft"

    def test_no_object(self):
        with pytest.raises(ProviderOutputError, match="no JSON object"):
            extract_json_object("I cannot help with that. [1, 2, 3]")
        with pytest.raises(ProviderOutputError, match="empty"):
            extract_json_object("  \ufeff ")

    def test_missing_required_keys(self):
        with pytest.raises(ProviderOutputError, match="keys title, summary"):
            extract_json_object('{"title": "x"}', ["title", "summary"])

    def test_not_text(self):
        with pytest.raises(ProviderOutputError):
            extract_json_object(None)  # type: ignore[arg-type]
        assert extract_json_object(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}  # type: ignore[arg-type]


# -- OpenAI-compatible provider ---------------------------------------------------------


def test_summary_request_shape_and_result(llm):
    llm.queue(tool_call(GOOD_SUMMARY))
    provider = make(llm, max_output_tokens=777)
    result = provider.summarize_block(MESSAGES)

    assert isinstance(result, BlockSummary)
    assert result.title == "Database migration" and result.should_extract is True
    assert llm.count == 1
    request = llm.requests[0]
    assert request["path"] == "/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    assert request["headers"]["Content-Type"] == "application/json"
    body = request["json"]
    assert body["model"] == "test-model"
    assert body["max_tokens"] == 777
    assert body["temperature"] == 0
    assert body["tool_choice"] == {"type": "function", "function": {"name": "strata_summarize_block"}}
    assert len(body["tools"]) == 1
    assert body["tools"][0]["type"] == "function"
    assert body["tools"][0]["function"]["name"] == "strata_summarize_block"
    assert body["tools"][0]["function"]["parameters"] == SUMMARY_SCHEMA
    system, user = body["messages"]
    assert system == {"role": "system", "content": SUMMARY_INSTRUCTIONS}
    assert user["role"] == "user"
    assert json.loads(user["content"]) == {"messages": MESSAGES}
    assert "好的" in user["content"]  # ensure_ascii=False
    assert len(provider.recent_responses) == 1


def test_extraction_and_graph_tasks(llm):
    llm.queue(tool_call(GOOD_EXTRACTION, name="strata_extract_events"))
    llm.queue(tool_call(GOOD_GRAPH, name="strata_project_graph"))
    provider = make(llm)
    context = {"target": {"id": 1, "messages": MESSAGES}, "allowed_source_message_ids": [3, 4]}

    extraction = provider.extract_events(context)
    assert isinstance(extraction, Extraction)
    assert extraction.should_extract is True and len(extraction.events) == 1
    assert extraction.events[0]["source_message_ids"] == [3]

    graph = provider.project_graph({"job_id": 5, "events": [{"id": 7, "title": "Strata"}]})
    assert graph == GOOD_GRAPH

    first, second = (r["json"] for r in llm.requests)
    assert first["tool_choice"]["function"]["name"] == "strata_extract_events"
    assert first["tools"][0]["function"]["parameters"] == EXTRACTION_SCHEMA
    assert json.loads(first["messages"][1]["content"]) == context
    assert second["tool_choice"]["function"]["name"] == "strata_project_graph"
    assert second["tools"][0]["function"]["parameters"] == GRAPH_SCHEMA


@pytest.mark.parametrize("base", ["{url}", "{url}/", "{url}/v1", "{url}/v1/"])
def test_base_url_with_or_without_v1(llm, base):
    llm.queue(tool_call(GOOD_SUMMARY))
    provider = make(llm, base_url=base.format(url=llm.url))
    provider.summarize_block(MESSAGES)
    expected = "/v1/chat/completions" if "/v1" in base else "/chat/completions"
    assert llm.requests[0]["path"] == expected


def test_malformed_arguments_are_retried_with_corrective_message(llm):
    llm.queue(tool_call('{"title": "Database migration", "summary": '))
    llm.queue(tool_call(GOOD_SUMMARY))
    provider = make(llm)
    assert provider.summarize_block(MESSAGES).title == "Database migration"

    assert llm.count == 2
    assert len(llm.messages(0)) == 2
    retry = llm.messages(1)
    assert retry[:2] == llm.messages(0)
    assert retry[2] == {"role": "user", "content": CORRECTIVE_MESSAGE.format(tool="strata_summarize_block")}
    assert "exactly once" in retry[2]["content"]
    assert len(provider.recent_responses) == 1


def test_malformed_twice_fails_after_two_attempts(llm):
    llm.queue(tool_call("not json at all"))
    llm.queue(tool_call('{"title": "only a title"}'))
    provider = make(llm)
    with pytest.raises(ProviderOutputError, match="after 2 attempt"):
        provider.summarize_block(MESSAGES)
    assert llm.count == 2
    assert not provider.recent_responses


def test_invalid_content_counts_as_a_failed_attempt(llm):
    llm.queue(tool_call({**GOOD_SUMMARY, "title": "   "}))
    llm.queue(tool_call(GOOD_SUMMARY))
    assert make(llm).summarize_block(MESSAGES).title == "Database migration"
    assert llm.count == 2
    assert len(llm.messages(1)) == 3


def test_attempts_setting_is_respected(llm):
    for _ in range(3):
        llm.queue(text_reply("no idea"))
    with pytest.raises(ProviderOutputError, match="after 3 attempt"):
        make(llm, attempts=3).summarize_block(MESSAGES)
    assert llm.count == 3
    llm.requests.clear()
    llm.responses.clear()
    llm.queue(text_reply("no idea"))
    with pytest.raises(ProviderOutputError, match="after 1 attempt"):
        make(llm, attempts=1).summarize_block(MESSAGES)
    assert llm.count == 1


def test_text_reply_with_fenced_json_is_recovered(llm):
    reply = (
        "The block is about a database move. I considered {title} carefully.\n"
        "```json\n" + json.dumps(GOOD_SUMMARY, indent=2) + "\n```\n"
    )
    llm.queue(text_reply(reply))
    result = make(llm).summarize_block(MESSAGES)
    assert result.keypoints == ("Postgres chosen", "Migration starts Monday")
    assert llm.count == 1


def test_truncated_summary_is_retried(llm):
    llm.queue(tool_call('{"title": "Database migr', finish="length"))
    llm.queue(tool_call(GOOD_SUMMARY))
    assert make(llm).summarize_block(MESSAGES).title == "Database migration"
    assert llm.count == 2
    assert len(llm.messages(1)) == 3


def test_truncated_even_when_arguments_parse(llm):
    llm.queue(tool_call(GOOD_EXTRACTION, name="strata_extract_events", finish="length"))
    llm.queue(tool_call(GOOD_EXTRACTION, name="strata_extract_events", finish="length"))
    with pytest.raises(ProviderOutputError, match="truncated"):
        make(llm).extract_events({"target": {}})
    assert llm.count == 2


def test_truncated_graph_is_not_retried(llm):
    llm.queue(tool_call('{"reason": "x", "nodes": [', name="strata_project_graph", finish="length"))
    llm.queue(tool_call(GOOD_GRAPH, name="strata_project_graph"))
    with pytest.raises(ProviderOutputError, match="truncated") as info:
        make(llm).project_graph({"events": []})
    assert not isinstance(info.value, ProviderCallError)
    assert llm.count == 1


def test_server_error_then_success(llm):
    llm.queue({"error": {"message": "overloaded"}}, status=500)
    llm.queue(tool_call(GOOD_SUMMARY))
    provider = make(llm)
    assert provider.summarize_block(MESSAGES).title == "Database migration"
    assert llm.count == 2
    assert llm.messages(1) == llm.messages(0)  # a transport retry resends the same request


def test_rate_limit_twice_fails_with_status(llm):
    llm.queue({"error": "slow down"}, status=429)
    llm.queue({"error": "slow down"}, status=429)
    with pytest.raises(ProviderCallError) as info:
        make(llm).summarize_block(MESSAGES)
    assert info.value.status == 429 and "429" in str(info.value)
    assert llm.count == 2


@pytest.mark.parametrize("status", [400, 401, 403])
def test_client_errors_are_not_retried(llm, status):
    llm.queue({"error": {"message": "Incorrect API key provided: " + KEY}}, status=status)
    llm.queue(tool_call(GOOD_SUMMARY))
    with pytest.raises(ProviderCallError) as info:
        make(llm).summarize_block(MESSAGES)
    assert info.value.status == status
    assert f"HTTP {status}" in str(info.value)
    assert "Incorrect API key" in str(info.value)
    assert KEY not in str(info.value)
    assert llm.count == 1


def test_error_body_is_clipped(llm):
    llm.queue(raw="x" * 5000, status=401)
    with pytest.raises(ProviderCallError) as info:
        make(llm).summarize_block(MESSAGES)
    assert "x" * 300 not in str(info.value)
    assert "x" * 250 in str(info.value)
    assert len(str(info.value)) < 500


def test_slow_answer_times_out_and_is_retried(llm):
    llm.queue(tool_call(GOOD_SUMMARY), delay=1.0)
    llm.queue(tool_call(GOOD_SUMMARY), delay=1.0)
    started = time.monotonic()
    with pytest.raises(ProviderCallError, match="within 0.5 s"):
        make(llm, timeout=0.5).summarize_block(MESSAGES)
    assert time.monotonic() - started < 3.0
    assert llm.count == 2


def test_slow_first_answer_then_fast(llm):
    llm.queue(tool_call(GOOD_SUMMARY), delay=1.0)
    llm.queue(tool_call(GOOD_SUMMARY))
    assert make(llm, timeout=0.5).summarize_block(MESSAGES).title == "Database migration"
    assert llm.count == 2


def test_body_that_is_not_json(llm):
    llm.queue(raw="<html>502 Bad Gateway</html>")
    llm.queue(raw="still not json")
    with pytest.raises(ProviderOutputError, match="not JSON"):
        make(llm).summarize_block(MESSAGES)
    assert llm.count == 2


def test_body_that_is_not_json_then_good(llm):
    llm.queue(raw="<html>oops</html>")
    llm.queue(tool_call(GOOD_SUMMARY))
    assert make(llm).summarize_block(MESSAGES).title == "Database migration"
    assert llm.count == 2


def test_body_without_choices(llm):
    llm.queue({"error": {"message": "model busy"}})
    llm.queue({"choices": []})
    with pytest.raises(ProviderOutputError, match="no choices"):
        make(llm).summarize_block(MESSAGES)
    assert llm.count == 2


def test_unreachable_server():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAICompatProvider(base_url=f"http://127.0.0.1:{port}", api_key=KEY, timeout=1, retry_delay=0)
    with pytest.raises(ProviderCallError, match="127.0.0.1"):
        provider.summarize_block(MESSAGES)


def test_recent_responses_keeps_last_five(llm):
    for i in range(7):
        llm.queue(tool_call({**GOOD_SUMMARY, "title": f"title {i}"}))
    provider = make(llm)
    for _ in range(7):
        provider.summarize_block(MESSAGES)
    assert len(provider.recent_responses) == 5
    assert provider.recent_responses.maxlen == 5
    assert "title 2" in provider.recent_responses[0]
    assert "title 6" in provider.recent_responses[-1]


def test_key_never_leaks(llm):
    """Provoke every error path; the key appears in no message, repr or stored response."""
    provider = make(llm, timeout=0.5)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    unreachable = OpenAICompatProvider(base_url=dead, api_key=KEY, timeout=0.5, retry_delay=0)
    echo = {"error": {"message": f"bad key {KEY}"}}
    scenarios = [
        lambda: llm.queue(echo, status=401),
        lambda: llm.queue(echo, status=403),
        lambda: llm.queue(echo, status=400),
        lambda: (llm.queue(echo, status=500), llm.queue(echo, status=503)),
        lambda: (llm.queue(echo, status=429), llm.queue(echo, status=429)),
        lambda: (llm.queue(raw=f"not json {KEY}"), llm.queue(raw=f"not json {KEY}")),
        lambda: (llm.queue(tool_call(f"{{{KEY}")), llm.queue(tool_call(f'{{"title": "{KEY}"}}'))),
        lambda: (llm.queue(text_reply(f"no object {KEY}")), llm.queue(text_reply(KEY))),
        lambda: [llm.queue(tool_call({**GOOD_SUMMARY, "summary": ""})) for _ in range(2)],
        lambda: (llm.queue(tool_call("{}"), delay=1.0), llm.queue(tool_call("{}"), delay=1.0)),
        lambda: llm.queue({"choices": [], "error": KEY}),
    ]
    errors: list[BaseException] = []
    for setup in scenarios:
        llm.responses.clear()
        setup()
        with pytest.raises(ProviderOutputError) as info:
            provider.summarize_block(MESSAGES)
        errors.append(info.value)
    llm.responses.clear()
    llm.queue(tool_call('{"nodes": [', name="strata_project_graph", finish="length"))
    with pytest.raises(ProviderOutputError) as info:
        provider.project_graph({"events": []})
    errors.append(info.value)
    with pytest.raises(ProviderCallError) as info:
        unreachable.summarize_block(MESSAGES)
    errors.append(info.value)
    with pytest.raises(InvalidInputError) as info:
        OpenAICompatProvider(base_url="ftp://example.invalid", api_key=KEY)
    errors.append(info.value)

    assert len(errors) == len(scenarios) + 3
    for error in errors:
        text = f"{error} {error!r} {error.args!r}"
        assert KEY not in text, text
        for linked in (error.__cause__, error.__context__):
            assert linked is None or KEY not in f"{linked} {linked!r}"
    for holder in (provider, unreachable):
        assert KEY not in repr(holder)
        assert KEY not in str(vars(holder))
        assert all(KEY not in r for r in holder.recent_responses)

    # A successful answer echoing the key is stored scrubbed.
    llm.responses.clear()
    llm.queue(tool_call({**GOOD_SUMMARY, "keypoints": [KEY]}))
    provider.summarize_block(MESSAGES)
    assert provider.recent_responses and KEY not in provider.recent_responses[-1]


def test_a_short_key_is_not_masked_in_messages(llm, monkeypatch):
    """A one-letter key is no secret; masking it turned 'deepseek-chat' into 'deepsee***-chat'."""
    monkeypatch.setenv("STRATA_LLM_API_KEY", "k")
    llm.queue({"error": {"message": "unknown model"}}, status=400)
    with pytest.raises(ProviderCallError) as info:
        OpenAICompatProvider(base_url=llm.url, model="deepseek-chat", retry_delay=0).summarize_block(MESSAGES)
    assert "(deepseek-chat)" in str(info.value) and "***" not in str(info.value)


def test_repr_hides_key(llm):
    provider = make(llm)
    text = repr(provider)
    assert KEY not in text
    assert "test-model" in text and llm.url in text


def test_missing_key_names_the_variables():
    with pytest.raises(InvalidInputError) as info:
        OpenAICompatProvider()
    assert "STRATA_LLM_API_KEY" in str(info.value) and "DEEPSEEK_API_KEY" in str(info.value)


def test_defaults_and_environment(monkeypatch, llm):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek")
    provider = OpenAICompatProvider()
    assert provider.name == "openai"
    assert provider.base_url == DEFAULT_BASE_URL == "https://api.deepseek.com"
    assert provider.endpoint == "https://api.deepseek.com/chat/completions"
    assert provider.model == DEFAULT_MODEL == "deepseek-chat"
    assert provider.timeout == 45.0 and provider.max_output_tokens == 2048 and provider.attempts == 2

    monkeypatch.setenv("STRATA_LLM_API_KEY", "sk-strata")
    monkeypatch.setenv("STRATA_LLM_BASE_URL", llm.url + "/v1/")
    monkeypatch.setenv("STRATA_LLM_MODEL", "my-model")
    llm.queue(tool_call(GOOD_SUMMARY))
    provider = get_provider("DeepSeek")
    assert isinstance(provider, OpenAICompatProvider)
    provider.summarize_block(MESSAGES)
    request = llm.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["json"]["model"] == "my-model"
    assert request["headers"]["Authorization"] == "Bearer sk-strata"  # STRATA_LLM_API_KEY wins


def test_get_provider_names(monkeypatch):
    assert get_provider().name == "offline"
    assert set(PROVIDERS) >= {"offline", "openai", "deepseek"}
    with pytest.raises(InvalidInputError):
        get_provider("openai")  # no key in the environment
    monkeypatch.setenv("STRATA_LLM_API_KEY", "sk-x")
    assert isinstance(get_provider("openai"), OpenAICompatProvider)
    with pytest.raises(InvalidInputError, match="unknown provider"):
        get_provider("scripted")


def test_invalid_settings():
    for kw in ({"timeout": 0}, {"attempts": 0}, {"max_output_tokens": 0}, {"base_url": "api.deepseek.com"}):
        with pytest.raises(InvalidInputError):
            OpenAICompatProvider(api_key=KEY, **kw)


# -- ScriptedProvider -------------------------------------------------------------------


class TestScripted:
    def test_pops_answers_in_order_and_records_calls(self):
        script = [GOOD_SUMMARY, {**GOOD_SUMMARY, "title": "Second"}]
        provider = ScriptedProvider({"summarize_block": script, "project_graph": [GOOD_GRAPH]})
        first = provider.summarize_block(MESSAGES)
        second = provider.summarize_block([])
        assert isinstance(first, BlockSummary) and first.title == "Database migration"
        assert second.title == "Second"
        assert provider.project_graph({"events": [7]}) == GOOD_GRAPH
        assert provider.calls == [
            ("summarize_block", MESSAGES),
            ("summarize_block", []),
            ("project_graph", {"events": [7]}),
        ]
        assert len(script) == 2  # the caller's list is not consumed
        assert provider.name == "scripted" and provider.remaining("summarize_block") == 0

    def test_extraction_is_validated(self):
        provider = ScriptedProvider({"extract_events": [GOOD_EXTRACTION, {"events": []}]})
        result = provider.extract_events({})
        assert isinstance(result, Extraction) and result.events[0]["title"] == "Move to Postgres"
        with pytest.raises(ProviderOutputError, match="should_extract"):
            provider.extract_events({})

    def test_invalid_summary_fails_like_a_model_answer(self):
        provider = ScriptedProvider({"summarize_block": [{**GOOD_SUMMARY, "summary": ""}]})
        with pytest.raises(ProviderOutputError, match="invalid L0-L2 layers"):
            provider.summarize_block(MESSAGES)

    def test_exceptions_are_raised(self):
        boom = ProviderCallError("HTTP 500", status=500)
        provider = ScriptedProvider({"summarize_block": [boom, GOOD_SUMMARY], "project_graph": [TimeoutError("t")]})
        with pytest.raises(ProviderCallError) as info:
            provider.summarize_block(MESSAGES)
        assert info.value is boom
        assert provider.summarize_block(MESSAGES).title == "Database migration"
        with pytest.raises(TimeoutError):
            provider.project_graph({})
        assert len(provider.calls) == 3

    def test_running_out(self):
        provider = ScriptedProvider({}, name="fake")
        assert provider.name == "fake"
        with pytest.raises(ProviderOutputError, match="no scripted answer left for extract_events"):
            provider.extract_events({})
        assert provider.calls == [("extract_events", {})]

    def test_graph_answer_must_be_an_object(self):
        with pytest.raises(ProviderOutputError):
            ScriptedProvider({"project_graph": [["not", "a", "dict"]]}).project_graph({})

    def test_unknown_task(self):
        with pytest.raises(InvalidInputError, match="summarise"):
            ScriptedProvider({"summarise": [GOOD_SUMMARY]})


def test_the_offline_block_title_is_a_short_readable_sentence():
    from core.providers.offline import TITLE_CHARS, OfflineProvider

    summary = OfflineProvider().summarize_block(
        [
            {
                "role": "user",
                "speaker": "Maya",
                "text": "Morning! Quick context so you can help me keep track of things: I'm Maya Brennan, a "
                "senior data engineer at Kestrel Logistics here in Utrecht. Can you help?",
            },
            {
                "role": "assistant",
                "text": "Of course. Noted: we moved the Atlas launch to Tuesday, March 17, "
                "after Priya approved the new plan on February 2 in the weekly review with the whole data team.",
            },
        ]
    )
    assert summary.title[0].isupper() and len(summary.title) <= TITLE_CHARS
    assert "," not in summary.title.split()[0] and not summary.title.endswith("?")
    assert summary.title in (
        "I'm Maya Brennan, a senior data engineer at Kestrel Logistics here in Utrecht.",
        "We moved the Atlas launch to Tuesday, March 17…",
    )
    assert summary.tags  # the distinctive words stay as tags
