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
import sys
from typing import Any, Sequence

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from core import __version__
from core.agent_tools import MemoryTools, ToolError
from core.redact import RedactingFilter, redact_value

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
            return _result({"error": {"code": "internal_error", "tool": name,
                                      "message": f"{name} failed unexpectedly: {type(exc).__name__}: {exc}. "
                                                 "Retry once; if it fails again, continue without memory."}},
                           error=True)
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
    message; id null unless the request's id can be read) and a line on stderr. The SDK only logs them at debug level, so a client that sent
    one waited for an answer forever."""

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
        from mcp.shared.message import SessionMessage

        errors = getattr(exc, "errors", None)
        kinds = {e.get("type") for e in errors()} if callable(errors) else set()
        code, text = (types.PARSE_ERROR, "Parse error") if "json_invalid" in kinds else (
            types.INVALID_REQUEST, "Invalid Request")
        log.warning("answered a malformed message with %s %s: %s", code, text, str(exc).splitlines()[0][:200])
        error = types.JSONRPCError(jsonrpc="2.0", id=_request_id(errors() if callable(errors) else []),
                                   error=types.ErrorData(code=code, message=text))
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


async def serve_stdio(tools: MemoryTools) -> None:
    """Serve ``tools`` on this process's stdin/stdout until the client disconnects."""
    server = build_server(tools)
    async with stdio_server() as (read_stream, write_stream):
        reader = _AnsweringReader(read_stream, write_stream)
        await server.run(reader, write_stream, server.create_initialization_options())


def _configure_logging() -> None:
    root = logging.getLogger()
    if not any(isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stderr
               for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)
    # Per-message protocol chatter stays out of the log unless asked for.
    logging.getLogger("mcp").setLevel(logging.WARNING)


def run_stdio(db_url: str | None = None, namespace: str = "default", session: str | None = None) -> int:
    """Open the store and serve the memory tools over stdio; returns an exit code."""
    from core.db import display_url
    from core.store import open_store

    _configure_logging()
    store = open_store(db_url)
    tools = MemoryTools(namespace or "default", session=session)
    log.info("strata MCP server on %s (namespace %r, session %r)", display_url(store.url), tools.namespace, session)
    from core.models import Namespace

    if Namespace.get_or_none(Namespace.name == tools.namespace) is None:
        # Said once at start, where whoever set the server up looks: its tools refuse until then.
        log.warning("namespace %r does not exist yet: the tools answer not_found until a turn is captured into it",
                    tools.namespace)
    try:
        anyio.run(serve_stdio, tools)
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.mcp_server",
                                     description="Serve Strata's memory tools over MCP (stdio).")
    parser.add_argument("--db", default=None, metavar="URL", help="database URL (default $STRATA_DB or the data dir)")
    parser.add_argument("--namespace", default="default", help="memory namespace (default 'default')")
    parser.add_argument("--session", default=None, help="the agent's session / conversation id")
    args = parser.parse_args(argv)
    return run_stdio(args.db, args.namespace, args.session)


if __name__ == "__main__":
    sys.exit(main())
