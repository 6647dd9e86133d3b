"""The MCP server, driven by a real MCP client session over stdio (official SDK)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from core.agent_schemas import TOOL_NAMES
from core.models import Event, Namespace
from core.services.capture import append_turn
from core.services.derive import run_pending
from core.services.spaces import configure_namespace

ROOT = Path(__file__).resolve().parents[2]
SESSION_TIMEOUT = 15  # seconds for the whole client session (spawn, handshake, five calls)


def _seed() -> None:
    configure_namespace("ns", block_turn_size=2)
    for user, assistant in [
        ("We decided to use PostgreSQL for the billing service.", "Noted: PostgreSQL for billing."),
        ("My sister Ana lives in Porto.", "Good to know."),
        ("Last week I adopted a cat named Miso.", "Congrats on Miso!"),
        ("The release of version 2 is planned for March.", "Got it, v2 in March."),
    ]:
        append_turn("ns", "chat-1", user, assistant)
    report = run_pending("ns")
    assert report.failed == 0 and report.events > 0


def _workbench_has_mcp() -> bool:
    from workbench.cli import build_parser

    parser = build_parser()
    for action in parser._subparsers._group_actions:  # noqa: SLF001 — argparse keeps subcommands here
        if "mcp" in getattr(action, "choices", {}):
            return True
    return False


def _launchers(db_url: str) -> list[list[str]]:
    options = ["--db", db_url, "--namespace", "ns", "--session", "agent-1"]
    commands = [[sys.executable, "-m", "core.mcp_server", *options]]
    if _workbench_has_mcp():  # `strata mcp`, once workbench/cli registers the agent commands
        commands.append([sys.executable, "-m", "workbench", "mcp", *options])
    return commands


def _payload(result) -> dict:
    assert result.content and result.content[0].type == "text"
    data = json.loads(result.content[0].text)
    if result.structured_content is not None:
        assert result.structured_content == data
    return data


@contextlib.asynccontextmanager
async def _client_session(command: list[str]):
    """An MCP client session with ``command`` (``strata mcp`` of this checkout) started as a
    subprocess, within SESSION_TIMEOUT."""
    env = {"PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(ROOT))
    with anyio.fail_after(SESSION_TIMEOUT):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=10) as session:
                yield session


async def _session_run(command: list[str]) -> dict:
    seen: dict = {}
    async with _client_session(command) as session:
        init = await session.initialize()
        seen["server"] = init.server_info.name
        seen["instructions"] = init.instructions
        listing = await session.list_tools()
        seen["tools"] = {t.name: t for t in listing.tools}

        found = await session.call_tool("search_events", {"query": "PostgreSQL billing", "limit": 5})
        seen["search"] = (found.is_error, _payload(found))
        search = seen["search"][1]
        batch, ref = search["batch_id"], search["evidence_refs"][0]

        bad = await session.call_tool("search_events", {"query": "x", "limit": 99})
        seen["bad"] = (bad.is_error, _payload(bad))

        judged = await session.call_tool(
            "assess",
            {
                "batch_id": batch,
                "verdict": "sufficient",
                "evidence_refs": [ref, "event:99999"],
                "fit": "states the database decision",
                "missing": "",
                "next_strategy": "answer",
            },
        )
        seen["assess"] = (judged.is_error, _payload(judged))

        used = await session.call_tool("record_use", {"batch_id": batch, "evidence_refs": [ref]})
        seen["use"] = (used.is_error, _payload(used))

        again = await session.call_tool("record_use", {"batch_id": batch, "evidence_refs": ["event:99999"]})
        seen["refused"] = (again.is_error, _payload(again))

        # The server survived every error: it still answers.
        alive = await session.call_tool("search_graph", {"query": "PostgreSQL"})
        seen["alive"] = (alive.is_error, _payload(alive))
    return seen


def test_real_mcp_client_session_over_stdio(store, db_url):
    _seed()
    for command in _launchers(db_url):
        seen = anyio.run(_session_run, command)
        assert seen["server"] == "strata-memory" and "record_use" in seen["instructions"]

        tools = seen["tools"]
        assert set(TOOL_NAMES) <= set(tools) and len(TOOL_NAMES) == 18
        for tool in tools.values():
            assert tool.input_schema["type"] == "object" and tool.description
        assert tools["search_events"].input_schema["required"] == ["query"]

        is_error, search = seen["search"]
        assert not is_error and search["batch_id"].startswith("batch_")
        top = search["results"][0]
        assert top["ref"] == search["evidence_refs"][0] and top["ref"].startswith("event:")
        assert "PostgreSQL" in top["title"] and isinstance(top["rank_score"], float)
        assert "not a confidence" in search["score_meaning"]

        is_error, bad = seen["bad"]
        assert is_error and bad["error"]["code"] == "invalid_arguments" and bad["error"]["field"] == "limit"

        is_error, judged = seen["assess"]
        assert not is_error and judged["verdict"] == "sufficient" and judged["evidence_refs"] == [top["ref"]]
        assert [r["reason"] for r in judged["rejected_evidence_refs"]] == ["not_in_batch"]

        is_error, used = seen["use"]
        assert not is_error and used["batch_status"] == "recorded" and used["event_ids"] == [top["id"]]
        assert used["receipt_id"] == f"strata:agent-1:batch:{int(search['batch_id'].split('_')[1])}"

        is_error, refused = seen["refused"]
        assert is_error and refused["error"]["code"] == "batch_closed" and "closed" in refused["error"]["message"]

        is_error, alive = seen["alive"]
        assert not is_error and "batch_id" in alive

        # The use went through the server into this database.
        event = Event.get_by_id(top["id"])
        assert event.mention_count >= 2


async def _fresh_namespace_run(command: list[str]) -> dict:
    seen: dict = {}
    async with _client_session(command) as session:
        await session.initialize()
        early = await session.call_tool("search_events", {"query": "PostgreSQL"})
        seen["early"] = (early.is_error, _payload(early))
        seen["namespaces_after_read"] = [n.name for n in Namespace.select()]
        # The harness captures the agent's first turns into the namespace the server serves.
        append_turn("new-project", "s1", "We decided to use PostgreSQL for billing.", "Noted.")
        later = await session.call_tool("search_raw", {"query": "PostgreSQL", "scope": "session"})
        seen["later"] = (later.is_error, _payload(later))
    return seen


def test_a_server_on_a_new_namespace_works_once_a_turn_is_captured(store, db_url):
    """`strata mcp --namespace new-project` on an empty store: reads are refused (not_found) without
    creating the namespace, so a mistyped name leaves nothing behind; capturing creates it, and the
    running server then serves it."""
    command = [
        sys.executable,
        "-m",
        "workbench",
        "mcp",
        "--db",
        db_url,
        "--namespace",
        "new-project",
        "--session",
        "s1",
    ]
    seen = anyio.run(_fresh_namespace_run, command)
    is_error, early = seen["early"]
    assert is_error and early["error"]["code"] == "not_found" and "new-project" in early["error"]["message"]
    assert seen["namespaces_after_read"] == []
    is_error, later = seen["later"]
    assert not is_error and later["results"] and "PostgreSQL" in later["results"][0]["message"]["content"]
    assert [n.name for n in Namespace.select()] == ["new-project"]


def test_strata_mcp_subcommand_parses_and_hands_over(monkeypatch):
    from workbench.cli import _common
    from workbench.cli import agent

    parser = argparse.ArgumentParser(prog="strata")
    parser.add_argument("--namespace", default=None)
    sub = parser.add_subparsers(dest="command")
    agent.register(sub, _common())

    calls = []
    monkeypatch.setattr(
        "core.mcp_server.run_stdio", lambda db, namespace, session: calls.append((db, namespace, session)) or 0
    )
    args = parser.parse_args(["mcp", "--db", "sqlite:///x.db", "--namespace", "ns", "--session", "s"])
    assert args.handler(args) == 0
    args = parser.parse_args(["mcp"])
    assert args.handler(args) == 0
    assert calls == [("sqlite:///x.db", "ns", "s"), (None, "default", None)]


def test_cli_module_does_not_import_textual():
    import subprocess

    code = "import sys, workbench.cli.agent, core.mcp_server; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_server_logs_to_stderr_only(db_url, tmp_path):
    """Before any client speaks, the server writes nothing to stdout (the protocol channel)."""
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "core.mcp_server", "--db", db_url, "--namespace", "ns"],
        cwd=ROOT,
        input="",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "strata MCP server" in proc.stderr
    assert "namespace 'ns' does not exist yet" in proc.stderr  # said where whoever set it up looks


def test_malformed_messages_get_a_json_rpc_error_and_the_server_keeps_serving(store, db_url):
    import json as jsonlib
    import subprocess

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    lines = [
        jsonlib.dumps(init),
        jsonlib.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "{not json",
        "42",
        jsonlib.dumps({"jsonrpc": "2.0", "id": 2}),
        jsonlib.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": ["search_raw"]}),
        jsonlib.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.mcp_server", "--db", db_url, "--namespace", "ns"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        replies = []
        while not any(r.get("id") == 3 for r in replies):  # the request after the bad ones is answered
            line = proc.stdout.readline()
            assert line, f"server stopped: {replies}"
            replies.append(jsonlib.loads(line))
    finally:
        _, stderr = proc.communicate("", timeout=60)
    errors = [r["error"]["code"] for r in replies if "error" in r and r.get("id") is None]
    assert errors == [-32700, -32600], replies
    # A request whose id can be read is answered under it: the client's call fails, no wait.
    assert [r["error"]["code"] for r in replies if r.get("id") == 4] == [-32600], replies
    assert [r["error"]["code"] for r in replies if r.get("id") == 2] == [-32600], replies
    assert [r for r in replies if r.get("id") == 3][0]["result"]["tools"]
    assert "malformed message" in stderr


def test_in_process_client_sees_errors_as_results_and_the_server_survives(store, monkeypatch):
    """The SDK's in-process client (modern protocol path): a crashing tool is an isError result."""
    from mcp import Client

    from core.agent_tools import MemoryTools
    from core.mcp_server import build_server

    _seed()
    tools = MemoryTools("ns", session="agent-2")

    def explode(args):
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(tools._handlers, "search_graph", explode)  # noqa: SLF001

    async def run() -> dict:
        seen = {}
        with anyio.fail_after(SESSION_TIMEOUT):
            async with Client(build_server(tools)) as client:
                seen["tools"] = [t.name for t in (await client.list_tools()).tools]
                crashed = await client.call_tool("search_graph", {"query": "Porto"})
                seen["crashed"] = (crashed.is_error, _payload(crashed))
                unknown = await client.call_tool("memory_feedback_prepare", {})
                seen["unknown"] = (unknown.is_error, _payload(unknown))
                found = await client.call_tool("search_raw", {"query": "Porto", "scope": "session"})
                seen["found"] = (found.is_error, _payload(found))
        return seen

    seen = anyio.run(run)
    assert seen["tools"] == list(TOOL_NAMES)
    is_error, crashed = seen["crashed"]
    assert is_error and crashed["error"]["code"] == "internal_error" and "disk on fire" in crashed["error"]["message"]
    is_error, unknown = seen["unknown"]
    assert is_error and unknown["error"]["code"] == "unknown_tool"
    is_error, found = seen["found"]
    # Session agent-2 has no conversation of its own yet: an empty, explained result.
    assert not is_error and found["results"] == [] and found["empty_reason"]


def _call_line(request_id, arguments: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"search_raw","arguments":%s}}' % (
        json.dumps(request_id).encode(),
        arguments,
    )


def test_every_bad_request_whose_id_can_be_read_is_answered_under_its_id(store, db_url):
    """Bytes that are not UTF-8, a lone surrogate escape, deep nesting, an oversize or cut-short line,
    bad params, an unknown method: each is a JSON-RPC error carrying the request's own id (never
    null, never silence), nothing runs, and the server goes on serving."""
    import subprocess

    from core.mcp_server import MAX_MESSAGE_BYTES
    from core.models import RetrievalBatch

    _seed()
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    bad = {
        11: _call_line(11, b'{"query":"Porto\xff"}'),
        12: _call_line(12, b'{"query":"Porto\\ud800"}'),
        13: _call_line(13, b'{"query":' + b"[" * 10_000 + b"]" * 10_000 + b"}"),
        14: _call_line(14, b'{"query":' + b"[" * 100 + b"]" * 100 + b"}"),
        15: _call_line(15, b'{"query":"' + b"x" * (MAX_MESSAGE_BYTES + 10) + b'"}'),
        16: b'{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"search_raw","argu',
        17: b'{"jsonrpc":"2.0","id":17,"method":"tools/call","params":["search_raw"]}',
        18: b'{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":5}}',
        19: b'{"jsonrpc":"2.0","id":19,"method":"no/such/method"}',
        "s-20": _call_line("s-20", b'{"query":"a\xc3"}'),
        21: b'{"jsonrpc":"2.0","id":21,"method":"tools/\xfflist"}',
    }
    lines = [
        json.dumps(init).encode(),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        *bad.values(),
        b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":99,"method":"tools/list"}',
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.mcp_server", "--db", db_url, "--namespace", "ns"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        proc.stdin.write(b"\n".join(lines) + b"\n")
        proc.stdin.flush()
        replies = []
        while not any(r.get("id") == 99 for r in replies):
            line = proc.stdout.readline()
            assert line, f"server stopped: {replies}"
            replies.append(json.loads(line))
    finally:
        proc.communicate(b"", timeout=60)
    by_id = {r.get("id"): r for r in replies}
    for request_id in bad:
        assert request_id in by_id and "error" in by_id[request_id], (request_id, replies)
    assert by_id[11]["error"]["code"] == -32700 and "UTF-8" in by_id[11]["error"]["message"]
    assert by_id[12]["error"]["code"] == -32602 and "surrogate" in by_id[12]["error"]["message"]
    assert by_id[13]["error"]["code"] == by_id[14]["error"]["code"] == -32602
    assert by_id[15]["error"]["code"] == -32600 and "larger than" in by_id[15]["error"]["message"]
    assert by_id[16]["error"]["code"] == -32700
    assert by_id[19]["error"]["code"] == -32601
    # An id that is no valid id cannot be echoed, but is still answered rather than taken for a notification.
    assert [r["error"]["code"] for r in replies if r.get("id") is None] == [-32600], replies
    assert by_id[99]["result"]["tools"]
    assert RetrievalBatch.select().count() == 0  # no tool ran on a refused request


def test_a_request_id_escaping_a_lone_surrogate_is_answered_under_null_and_the_server_keeps_serving(store, db_url):
    """Answering under such an id stopped the server: the reply could not be encoded."""
    import subprocess

    from core.mcp_server import check_line, scan_id

    line = '{"jsonrpc": "2.0", "id": "r1\\udfff", "method": "tools/call", "params": {"name": "search_raw"}}'
    assert check_line(line.encode())[1][2] is None and scan_id(line[:40]) is None
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    lines = [
        json.dumps(init),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        line,
        line[:40],
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.mcp_server", "--db", db_url, "--namespace", "ns"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdin.write("\n".join(lines) + "\n")
    proc.stdin.flush()
    replies = []
    # Standard input stays open until the last answer is in: at end of input the server stops, and
    # a request still being answered then may be dropped (a race the test must not depend on).
    while not any(r.get("id") == 3 for r in replies):
        out = proc.stdout.readline()
        assert out, proc.stderr.read()[-2000:]
        replies.append(json.loads(out))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert [r["id"] for r in replies if "error" in r] == [None, None]
    assert [r for r in replies if r.get("id") == 3][0]["result"]["tools"]
