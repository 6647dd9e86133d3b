"""A chat loop with Strata memory around it: an OpenAI-compatible model, context before each call,
the memory tools offered to the model, every turn captured, the turn-end check after it.

    pip install -e .            # Strata
    export STRATA_LLM_API_KEY=…  # and STRATA_LLM_BASE_URL / STRATA_LLM_MODEL for a non-DeepSeek endpoint
    python docs/examples/harness_loop.py

``run_turn`` takes the function that calls the model, so the loop runs unchanged against a scripted
model (the tests do that) or a real one (``openai_chat`` below, standard library only).
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any, Callable

from core.api import Harness, open_store

ChatFn = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]


def openai_chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One call to an OpenAI-compatible /chat/completions endpoint; returns the assistant message."""
    base = os.environ.get("STRATA_LLM_BASE_URL", "https://api.deepseek.com")
    body = {
        "model": os.environ.get("STRATA_LLM_MODEL", "deepseek-chat"),
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                    "parameters": t["inputSchema"]}} for t in tools],
    }
    request = urllib.request.Request(
        f"{base.rstrip('/')}/chat/completions",
        data=json.dumps(body).encode("utf-8"),
        headers={"Authorization": f"Bearer {os.environ['STRATA_LLM_API_KEY']}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["choices"][0]["message"]


def run_turn(harness: Harness, history: list[dict[str, Any]], user: str, chat: ChatFn, *, turn: int) -> str:
    """One user turn: context in, tool calls served by Strata, the answer captured, batches checked."""
    messages = [*history, {"role": "user", "content": user}]
    context = harness.before_model_call(messages)
    prompt = [{"role": "system", "content": context.text}] if context.text else []
    tools = [t for t in harness.tools.schemas() if t["name"] not in ("capture_turn", "close_thread", "get_context")]
    calls: list[dict[str, Any]] = []
    for _ in range(8):  # the model may search, assess and record use before it answers
        reply = chat(prompt + messages, tools)
        requested = reply.get("tool_calls") or []
        if not requested:
            break
        messages.append(reply)
        for call in requested:
            name, args = call["function"]["name"], json.loads(call["function"]["arguments"] or "{}")
            result = harness.tools.call_safe(name, args)
            calls.append({"name": name, "arguments": args, "result": result})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
    answer = reply.get("content") or ""
    harness.after_turn(user, answer, tool_calls=calls, receipt_id=f"{harness.session}:turn:{turn}")
    check = harness.end_turn()
    if not check.ok:
        print(f"[strata] {check.message}")
    history += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    return answer


def main() -> None:
    open_store()  # $STRATA_DB or the data directory
    harness = Harness("my-project", session="example-session")
    history: list[dict[str, Any]] = []
    for turn, line in enumerate(iter(lambda: input("you> "), "")):
        print("assistant>", run_turn(harness, history, line, openai_chat, turn=turn))
    harness.end_session()


if __name__ == "__main__":
    main()
