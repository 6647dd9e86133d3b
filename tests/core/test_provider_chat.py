"""The OpenAI-compatible client's plain chat call with tools (an agent loop's turn), against the local
fake server (tests/fake_llm.py): the request it sends, the message it returns, retries and metering."""

from __future__ import annotations

import json

import pytest

from core.providers.base import ProviderOutputError
from core.providers.openai_compat import OpenAICompatProvider, ProviderCallError
from tests.fake_llm import llm, text_reply, tool_call, usage  # noqa: F401 (llm is a fixture)

KEY = "sk-test-chat-0123456789-secret"
TOOLS = [
    {
        "name": "search_raw",
        "description": "Search past messages.",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    }
]


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch):
    for name in ("STRATA_LLM_BASE_URL", "STRATA_LLM_MODEL", "STRATA_LLM_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def make(llm, **kw) -> OpenAICompatProvider:
    return OpenAICompatProvider(base_url=llm.url, model="chat-model", api_key=KEY, retry_delay=0, timeout=5, **kw)


def test_chat_offers_the_tools_and_returns_the_call(llm):
    llm.queue(tool_call({"query": "Atlas"}, name="search_raw", usage=usage(120, 9)))
    provider = make(llm)
    messages = [{"role": "system", "content": "Use memory."}, {"role": "user", "content": "When does Atlas ship?"}]
    reply = provider.chat(messages, TOOLS)
    assert reply["role"] == "assistant" and reply["content"] is None
    [call] = reply["tool_calls"]
    assert call["function"] == {"name": "search_raw", "arguments": json.dumps({"query": "Atlas"})}
    assert call["id"] == "call_1" and call["type"] == "function"
    sent = llm.requests[0]["json"]
    assert llm.requests[0]["path"] == "/chat/completions"
    assert sent["model"] == "chat-model" and sent["messages"] == messages and "tool_choice" not in sent
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "search_raw",
                "description": "Search past messages.",
                "parameters": TOOLS[0]["inputSchema"],
            },
        }
    ]
    assert provider.usage["calls"] == 1 and provider.usage["prompt_tokens"] == 120
    assert provider.usage["completion_tokens"] == 9 and provider.usage["estimated_prompt_tokens"] > 0


def test_chat_without_tools_returns_the_text_and_sends_no_tools(llm):
    llm.queue({**text_reply("March 17."), "usage": usage(40, 3)})
    provider = make(llm)
    assert provider.chat([{"role": "user", "content": "When?"}]) == {"role": "assistant", "content": "March 17."}
    assert "tools" not in llm.requests[0]["json"]
    assert provider.usage["completion_tokens"] == 3


def test_chat_mends_a_call_without_id_and_with_object_arguments(llm):
    body = tool_call({"query": "x"}, name="search_raw")
    call = body["choices"][0]["message"]["tool_calls"][0]
    del call["id"]
    call["function"]["arguments"] = {"query": "x"}
    body["choices"][0]["message"]["tool_calls"].append({"function": {"arguments": "{}"}})  # no name: dropped
    llm.queue(body)
    reply = make(llm).chat([{"role": "user", "content": "q"}], TOOLS)
    assert reply["tool_calls"] == [
        {"id": "call_0", "type": "function", "function": {"name": "search_raw", "arguments": '{"query": "x"}'}}
    ]


def test_chat_retries_a_server_error_and_an_unusable_body_then_gives_up(llm):
    llm.queue(status=503, raw='{"error": "busy"}')
    llm.queue(text_reply("fine"))
    provider = make(llm, attempts=2)
    assert provider.chat([{"role": "user", "content": "q"}])["content"] == "fine"
    assert provider.usage["calls"] == 2
    llm.queue(raw="not json")
    llm.queue({"choices": [{"message": {"role": "assistant", "content": None}}]})
    with pytest.raises(ProviderOutputError, match="neither text nor a tool call"):
        provider.chat([{"role": "user", "content": "q"}])
    assert provider.usage["calls"] == 4


def test_chat_does_not_retry_a_client_error_and_hides_the_key(llm):
    llm.queue(status=401, raw=json.dumps({"error": f"bad key {KEY}"}))
    provider = make(llm, attempts=3)
    with pytest.raises(ProviderCallError) as caught:
        provider.chat([{"role": "user", "content": "q"}])
    assert caught.value.status == 401 and not caught.value.retryable
    assert KEY not in str(caught.value) and llm.count == 1
    assert llm.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"


def test_chat_passes_a_tool_already_in_function_shape():
    from core.providers.openai_compat import _function_tool

    wrapped = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    assert _function_tool(wrapped) is wrapped
    assert _function_tool({"name": "g"})["function"]["parameters"] == {"type": "object", "properties": {}}
