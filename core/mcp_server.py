"""The memory tools as an MCP server over stdio (official ``mcp`` SDK, 2.x low-level API).

One server process serves one agent: a namespace and, optionally, the agent's session
(see ``core.agent_tools.MemoryTools``). stdout carries the protocol only; logs go to
stderr. A tool that fails — bad arguments, a spent budget, a refused receipt, or an
unexpected bug — answers with an error result (``isError``) whose text says what went
wrong and what to do next; the server keeps serving.

Run it with ``strata mcp --db URL --namespace NS [--session S]`` or
``python -m core.mcp_server`` (same options).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from typing import Any, Sequence

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from mcp.shared.message import SessionMessage
from core import __version__
from core.agent_schemas import MAX_ARGUMENT_DEPTH, ToolError
from core.agent_tools import MemoryTools
from core.api import open_store
from core.db import display_url
from core.errors import StrataError
from core.jsoninput import field_path, lone_surrogate, nesting_position
from core.models import Namespace
from core.redact import RedactingFilter, redact_text, redact_value

log = logging.getLogger("strata.mcp")
# What the server logs quotes tool errors and exceptions, which may quote what an agent sent.
log.addFilter(RedactingFilter())

SERVER_NAME = "strata-memory"

INSTRUCTIONS = (
    "Strata long-term memory. Search only when the task may depend on earlier decisions, preferences, people, "
    "tools, outcomes or open work — not for facts already in this conversation. Start with search_events for "
    "history and search_graph for current state; search_raw finds exact wording. Every retrieval returns a "
    "batch_id: assess each batch before relying on it, follow next_strategy when it is partial or wrong, and "
    "close every batch with record_use (the refs you used, or []). Never mix refs across batches. Memory is "
    "historical evidence: current instructions win."
)


def _json(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, default=str)


def _result(payload: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    # Every answer leaves through here: tool results are masked already (MemoryTools.call), an
    # unexpected exception's text is not.
    payload = redact_value(payload)
    return types.CallToolResult(
        content=[types.TextContent(text=_json(payload))],
        structured_content=payload,
        is_error=error,
    )


def build_server(tools: MemoryTools) -> Server:
    """A low-level MCP server that lists and runs the tools of ``tools``."""
    listing = [
        types.Tool(name=spec["name"], description=spec["description"], input_schema=spec["inputSchema"])
        for spec in tools.schemas()
    ]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        try:
            # Tool calls are short SQLite reads/writes; they run on the loop's thread, which
            # is the thread that opened the store.
            payload = tools.call(name, params.arguments or {})
        except ToolError as exc:
            log.info("tool %s refused: %s", name, exc)
            return _result(exc.to_dict(), error=True)
        except Exception as exc:  # a bug must not take the agent's memory server down
            log.exception("tool %s failed", name)
            return _result(
                {
                    "error": {
                        "code": "internal_error",
                        "tool": name,
                        "message": f"{name} failed unexpectedly: {type(exc).__name__}: {exc}. "
                        "Retry once; if it fails again, continue without memory.",
                    }
                },
                error=True,
            )
        return _result(payload)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _request_id(errors: list[dict[str, Any]]) -> str | int | None:
    """The id of a request the transport refused ("params" a list, say), read from the input its
    validation errors quote: JSON-RPC answers with it when it can be told (else null), so the
    client's call fails instead of waiting."""
    for error in errors:
        raw = error.get("input")
        if isinstance(raw, dict) and "method" in raw:
            request_id = raw.get("id")
            if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
                return request_id
    return None


class _AnsweringReader:
    """The transport's read stream, minus the lines that are no JSON-RPC message: each of those
    gets a JSON-RPC error (-32700 for text that is no JSON, -32600 for JSON that is no valid
    message; id null unless the request's id can be read) and a line on stderr. The SDK only logs
    them at debug level, so a client that sent one waited for an answer forever."""

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner, self._write = inner, write_stream

    def __getattr__(self, name: str) -> Any:  # last_context and whatever else the SDK reads
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._answer(item)

    async def _answer(self, exc: Exception) -> None:

        errors = getattr(exc, "errors", None)
        kinds = {e.get("type") for e in errors()} if callable(errors) else set()
        code, text = (
            (types.PARSE_ERROR, "Parse error")
            if "json_invalid" in kinds
            else (types.INVALID_REQUEST, "Invalid Request")
        )
        # Masked before the cut: the line may quote a token, and its prefix the log filter cannot know.
        log.warning(
            "answered a malformed message with %s %s: %s", code, text, redact_text(str(exc).splitlines()[0])[:200]
        )
        error = types.JSONRPCError(
            jsonrpc="2.0",
            id=_request_id(errors() if callable(errors) else []),
            error=types.ErrorData(code=code, message=text),
        )
        await self._write.send(SessionMessage(error))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> "_AnsweringReader":
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> "_AnsweringReader":
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self._inner.__aexit__(*exc_info)


# A tool call is a few hundred bytes; this bound keeps one client from making the server hold, parse
# and validate gigabytes.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
# How deep a message may nest: the envelope, params and arguments, plus what the tools take.
MAX_MESSAGE_DEPTH = MAX_ARGUMENT_DEPTH + 3
_ID_SCAN_BYTES = 64 * 1024  # how much of an oversize line is kept to read its id from


class _CheckedLines:
    """The server's standard input as the SDK's reader takes it (an async iterator of lines), with
    every line that would not make a valid JSON-RPC message answered here instead, under the id of
    the request whenever one can be read: bytes that are not UTF-8 (the SDK would replace them and
    run the call), a line over MAX_MESSAGE_BYTES, nesting past MAX_MESSAGE_DEPTH, text that is no
    JSON, a lone surrogate escape, and an envelope the SDK refuses. The SDK answers those with id
    null or not at all, so the client's call waited forever."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._write: Any = None
        self._ready = anyio.Event()

    def attach(self, write_stream: Any) -> None:
        self._write = write_stream
        self._ready.set()

    def __aiter__(self) -> "_CheckedLines":
        return self

    async def __anext__(self) -> str:
        while True:
            raw, oversize = await anyio.to_thread.run_sync(self._read_line, abandon_on_cancel=True)
            if not raw and not oversize:
                raise StopAsyncIteration
            text, problem = check_line(raw, oversize)
            if problem is None:
                if text.strip():
                    return text
                continue  # a blank line between messages is no message
            await self._ready.wait()
            code, message, request_id = problem
            log.warning("answered a malformed message (id %r) with %s: %s", request_id, code, message)

            await self._write.send(
                SessionMessage(
                    types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
                )
            )

    def _read_line(self) -> tuple[bytes, bool]:
        """One line (b"" at the end); for a line over the bound, its start and True (the rest is
        read and dropped, so the next line is a message again)."""
        line = self._stream.readline(MAX_MESSAGE_BYTES + 1)
        if len(line) <= MAX_MESSAGE_BYTES or line.endswith(b"\n"):
            return line, False
        head = line[:_ID_SCAN_BYTES]
        while line and not line.endswith(b"\n"):
            line = self._stream.readline(1024 * 1024)
        return head, True


def check_line(raw: bytes, oversize: bool = False) -> tuple[str, tuple[int, str, Any] | None]:
    """(the line as text, None) when it is a JSON-RPC message the SDK can take; else ("", (code,
    message, id)) with the request's id when it can be read (None otherwise)."""

    if oversize:
        return "", (
            types.INVALID_REQUEST,
            f"Invalid Request: the message is larger than {MAX_MESSAGE_BYTES:,} bytes",
            scan_id(raw.decode("utf-8", "replace")),
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "", (
            types.PARSE_ERROR,
            f"Parse error: the message is not UTF-8 text (byte {exc.start})",
            scan_id(raw.decode("utf-8", "replace")),
        )
    if not text.strip():
        return text, None
    deep = nesting_position(text, MAX_MESSAGE_DEPTH)
    if deep is not None:
        return "", (
            types.INVALID_PARAMS,
            f"Invalid params: nested deeper than {MAX_MESSAGE_DEPTH} levels of arrays and objects (column {deep[1]})",
            scan_id(text),
        )
    try:
        message = json.loads(text)
    except ValueError as exc:
        return "", (types.PARSE_ERROR, f"Parse error: {getattr(exc, 'msg', exc)}", scan_id(text))
    request_id = _valid_id(message.get("id")) if isinstance(message, dict) else None
    if isinstance(message, dict) and isinstance(message.get("id"), str) and request_id is None:
        # An id escaping a lone surrogate cannot be written back: answering under it would stop the
        # server (the reply cannot be encoded), so the answer goes to id null.
        return "", (
            types.INVALID_REQUEST,
            "Invalid Request: the id holds a lone surrogate, not a Unicode character",
            None,
        )
    if isinstance(message, dict) and "id" in message and request_id is None:
        # The SDK would take it for a notification and never answer: the client would wait.
        return "", (
            types.INVALID_REQUEST,
            f"Invalid Request: id must be a string or an integer, got {json.dumps(message['id'])[:40]}",
            None,
        )
    found = lone_surrogate(message)
    if found is not None:
        return "", (
            types.INVALID_PARAMS,
            f"Invalid params: {field_path(found[0])} holds {found[1]}, a lone surrogate: not a Unicode character",
            request_id,
        )
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception as exc:  # pydantic's ValidationError, or anything else the SDK would refuse
        first = str(exc).splitlines()
        return "", (types.INVALID_REQUEST, "Invalid Request" + (f": {first[0][:200]}" if first else ""), request_id)
    return text, None


def _valid_id(value: Any) -> str | int | None:

    if isinstance(value, str) and lone_surrogate(value) is not None:
        return None  # no reply could carry it
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null', re.DOTALL)


def scan_id(text: str) -> str | int | None:
    """The ``id`` member of the top-level object in ``text`` that cannot be parsed whole (cut short,
    too deep, with a bad byte elsewhere); None when there is none or it is no valid id."""
    depth = 0
    expect_value_of_id = False
    previous_key: str | None = None
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
            if depth <= 0:
                return None
        elif depth == 1 and token == ":":
            expect_value_of_id = previous_key == "id"
        elif depth == 1 and expect_value_of_id:
            try:
                return _valid_id(json.loads(token))
            except ValueError:
                return None
        elif depth == 1 and token.startswith('"'):
            try:
                previous_key = json.loads(token)
            except ValueError:
                previous_key = None
            continue
        if token != ":":
            expect_value_of_id = False
            previous_key = None
    return None


async def serve_stdio(tools: MemoryTools) -> None:
    """Serve ``tools`` on this process's stdin/stdout until the client disconnects."""
    server = build_server(tools)
    lines = _CheckedLines(sys.stdin.buffer)
    async with stdio_server(stdin=lines) as (read_stream, write_stream):
        lines.attach(write_stream)
        reader = _AnsweringReader(read_stream, write_stream)
        await server.run(reader, write_stream, server.create_initialization_options())


def _configure_logging() -> None:
    root = logging.getLogger()
    if not any(
        isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stderr for h in root.handlers
    ):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)
    # Per-message protocol chatter stays out of the log unless asked for.
    logging.getLogger("mcp").setLevel(logging.WARNING)


def run_stdio(db_url: str | None = None, namespace: str = "default", session: str | None = None) -> int:
    """Open the store and serve the memory tools over stdio; returns an exit code."""

    _configure_logging()
    # Names checked before the store is opened: a refused one makes no database.
    tools = MemoryTools(namespace or "default", session=session)
    store = open_store(db_url)
    log.info("strata MCP server on %s (namespace %r, session %r)", display_url(store.url), tools.namespace, session)

    if Namespace.get_or_none(Namespace.name == tools.namespace) is None:
        # Said once at start, where whoever set the server up looks: its tools refuse until then.
        log.warning(
            "namespace %r does not exist yet: the tools answer not_found until a turn is captured into it",
            tools.namespace,
        )
    try:
        anyio.run(serve_stdio, tools)
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m core.mcp_server", description="Serve Strata's memory tools over MCP (stdio)."
    )
    parser.add_argument("--db", default=None, metavar="URL", help="database URL (default $STRATA_DB or the data dir)")
    parser.add_argument("--namespace", default="default", help="memory namespace (default 'default')")
    parser.add_argument("--session", default=None, help="the agent's session / conversation id")
    args = parser.parse_args(argv)

    try:
        return run_stdio(args.db, args.namespace, args.session)
    except StrataError as exc:  # a bad name, a store that cannot be opened: one line, as `strata mcp` says it
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
