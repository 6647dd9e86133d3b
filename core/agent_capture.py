"""The agent tools a harness uses around its loop, over MCP as in Python: capture a completed turn,
seal a finished conversation, and fetch the memory context for the next model call.

They are part of ``core.agent_tools.MemoryTools`` (this class is one of its bases); they open no
retrieval batch: capturing is not retrieval, and the context builder writes its own ledger row."""

from __future__ import annotations

from typing import Any

from core.agent_schemas import ToolError
from core.services.capture import append_turn, close_thread
from core.services.context import auto_context

# What the context builder leaves out that an agent may be told about; the rest (governance) it may not.
SHOWN_EXCLUSIONS = ("over_budget", "limit", "out_of_scope")


class CaptureTools:
    namespace: str
    session: str | None
    thread: str | None

    def _capture_turn(self, args: dict[str, Any]) -> dict[str, Any]:
        thread = args.get("thread") or self.thread or self.session
        if not thread:
            raise ToolError(
                "capture_turn: no thread: pass 'thread', or start the tools with a session",
                field="thread",
                tool="capture_turn",
            )
        done = append_turn(
            self.namespace,
            thread,
            args["user"],
            args["assistant"],
            created_at=args.get("created_at"),
            receipt_id=args.get("receipt_id"),
            assistant_tool_calls=args.get("tool_calls") or (),
        )
        return {
            "tool": "capture_turn",
            "thread": done.thread,
            "message_ids": list(done.message_ids),
            "sealed_block_ids": list(done.sealed_block_ids),
            "duplicate": done.duplicate,
        }

    def _close_thread(self, args: dict[str, Any]) -> dict[str, Any]:
        thread = args.get("thread") or self.thread or self.session
        sealed = close_thread(self.namespace, thread) if thread else ()
        return {"tool": "close_thread", "thread": thread, "sealed_block_ids": list(sealed)}

    def _get_context(self, args: dict[str, Any]) -> dict[str, Any]:
        ctx = auto_context(
            self.namespace,
            args["question"],
            recent_turns=args.get("recent_turns") or (),
            exclude_thread=self.thread,
            token_budget=args.get("budget", 900),
            session=self.session,
        )
        return {
            "tool": "get_context",
            "context": ctx.text,
            "tokens": ctx.tokens,
            "budget": args.get("budget", 900),
            "selected": ctx.selected,
            "excluded": [e for e in ctx.excluded if e["reason"] in SHOWN_EXCLUSIONS],
            "ledger_id": ctx.ledger_id,
        }
