"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, and canned response bodies.

Responses are queued; once the queue is empty, ``respond`` (when set) answers from the request,
so a test whose number of calls depends on the data (a benchmark) can still be served.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest


# -- canned chat-completions bodies ---------------------------------------------------


def tool_call(
    args: Any, name: str = "strata_summarize_block", finish: str = "tool_calls", usage: dict | None = None
) -> dict:
    arguments = args if isinstance(args, str) else json.dumps(args)
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
                    ],
                },
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def usage(prompt: int, completion: int, **extra: int) -> dict:
    """A ``usage`` object as an OpenAI-compatible API reports it."""
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, **extra}


def text_reply(content: str, finish: str = "stop") -> dict:
    return {"choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": content}}]}


# -- a fake OpenAI-compatible server on 127.0.0.1 ---------------------------------------


class FakeLLM:
    """Queued responses; every request it saw (path, headers, JSON body)."""

    def __init__(self) -> None:
        self.responses: deque[tuple[int, bytes, float]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.url = ""
        # Answers a request (its JSON body) when nothing is queued: (status, body).
        self.respond: Callable[[Any], tuple[int, Any]] | None = None

    def queue(self, body: Any = None, *, status: int = 200, raw: bytes | str | None = None, delay: float = 0.0):
        if raw is None:
            raw = json.dumps(body)
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        self.responses.append((status, raw, delay))

    @property
    def count(self) -> int:
        return len(self.requests)

    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        return self.requests[index]["json"]["messages"]


def _handler_for(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            length = int(self.headers.get("Content-Length", "0"))
            data = self.rfile.read(length)
            try:
                parsed = json.loads(data)
            except ValueError:
                parsed = None
            with fake.lock:
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "json": parsed})
                if fake.responses:
                    status, raw, delay = fake.responses.popleft()
                elif fake.respond is not None:
                    status, body = fake.respond(parsed)
                    raw, delay = json.dumps(body).encode("utf-8"), 0.0
                else:
                    status, raw, delay = 500, b'{"error": "nothing queued"}', 0.0
            if delay:
                time.sleep(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except OSError:  # the client gave up (timeout test)
                pass

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def llm():
    fake = FakeLLM()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(fake))
    server.daemon_threads = True
    server.block_on_close = False
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=2)
