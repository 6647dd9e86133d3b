"""Agent-facing commands: `strata mcp` serves the memory tools over MCP (stdio).

Headless: nothing here imports Textual, and the MCP SDK is imported only when the
server actually starts.
"""

from __future__ import annotations

import argparse
from workbench.cli.argtypes import namespace_name


def cmd_mcp(args: argparse.Namespace) -> int:
    # start-up time: the MCP SDK (~0.4 s) loads only for `strata mcp`
    from core.mcp_server import run_stdio

    return run_stdio(
        getattr(args, "db", None),
        namespace=getattr(args, "namespace", None) or "default",
        session=getattr(args, "session", None),
    )


def register(sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "mcp",
        parents=[common],
        help="serve the agent memory tools over MCP (stdio)",
        description="Run an MCP server on stdin/stdout exposing Strata's nine memory tools (search, expand, "
        "assess, record_use) for one namespace. Logs go to stderr; stdout is the protocol.",
    )
    p.add_argument(
        "--namespace", type=namespace_name, default=argparse.SUPPRESS, help="memory namespace (default 'default')"
    )
    p.add_argument(
        "--session",
        default=None,
        help="the agent's session id: scopes batches and budget, and is the conversation that scope 'session' searches",
    )
    p.set_defaults(handler=cmd_mcp)
