"""A harness adapter: what an agent loop calls around each model call so that memory "just works".

    harness = Harness("my-project", session="session-42")
    context = harness.before_model_call(messages)      # memory to place before the model's messages
    ... the model answers, calling harness.tools (search, assess, record_use, remember …) as it likes ...
    harness.after_turn(user_text, answer_text, receipt_id="session-42:turn:7")
    report = harness.end_turn()                          # batches the agent opened and never closed

Every turn is captured as it happens (idempotent by receipt: a replay stores nothing), context is
assembled before each call (token-bounded, written to the ledger, governance applied), and the end
of a turn checks that every retrieval batch was closed with ``record_use``, as the evidence gate
requires. Nothing here calls a model: the loop does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from core.agent_tools import MemoryTools
from core.dto import ToolTrace
from core.models import Namespace
from core.services.capture import AppendResult, append_turn, close_thread
from core.services.context import AutoContext, auto_context
from core.services.gate import unresolved_batches
from core.services.spaces import validate_name

RECENT_TURNS = 2


@dataclass(frozen=True)
class TurnEnd:
    """The turn-end check: batches of this session still open (not closed by ``record_use``)."""

    unclosed: tuple[str, ...]  # batch labels, oldest first

    @property
    def ok(self) -> bool:
        return not self.unclosed

    @property
    def message(self) -> str:
        if self.ok:
            return "every retrieval batch of this turn was closed"
        return (
            f"{len(self.unclosed)} retrieval batch(es) still open: {', '.join(self.unclosed)}; close each with "
            "record_use (evidence_refs: the refs the answer used, or [] for none)"
        )


class Harness:
    """Memory around one agent session. ``thread`` is the conversation turns are captured into
    (default: the session); ``token_budget`` bounds the context placed before each call."""

    def __init__(
        self,
        namespace: str,
        *,
        session: str,
        thread: str | None = None,
        token_budget: int = 900,
        budget: int | None = None,
    ) -> None:
        self.namespace = validate_name(namespace)
        self.session = validate_name(session, "session")
        self.thread = validate_name(thread, "thread") if thread is not None else self.session
        self.token_budget = token_budget
        self.tools = MemoryTools(self.namespace, session=self.session, thread=self.thread, budget=budget)

    def before_model_call(self, messages: Sequence[Mapping[str, Any]]) -> AutoContext:
        """Memory for the next call: ``messages`` are the chat so far ({role, content}); the last
        user message is the question, the turns before it its recent context. Messages already in
        this conversation are not repeated. An empty store (nothing captured yet) gives no context."""
        texts = [(m.get("role"), m.get("content")) for m in messages if isinstance(m, Mapping)]
        users = [c for r, c in texts if r == "user" and isinstance(c, str) and c.strip()]
        if not users:
            return AutoContext(text="", event_ids=(), node_ids=(), tokens=0)
        recent = [c for _, c in texts if isinstance(c, str) and c.strip()][:-1][-RECENT_TURNS * 2 :]
        if Namespace.get_or_none(Namespace.name == self.namespace) is None:
            return AutoContext(text="", event_ids=(), node_ids=(), tokens=0)
        return auto_context(
            self.namespace,
            users[-1],
            recent_turns=recent,
            exclude_thread=self.thread,
            token_budget=self.token_budget,
            session=self.session,
        )

    def after_turn(
        self,
        user: str,
        assistant: str,
        *,
        tool_calls: Sequence[ToolTrace | Mapping[str, Any]] = (),
        receipt_id: str | None = None,
        created_at: str | None = None,
    ) -> AppendResult:
        """Capture the completed turn (the assistant's tool calls with their results go with its
        message). With ``receipt_id`` a replay of the same turn stores nothing."""
        return append_turn(
            self.namespace,
            self.thread,
            user,
            assistant,
            created_at=created_at,
            receipt_id=receipt_id,
            assistant_tool_calls=[dict(t) if isinstance(t, Mapping) else t for t in tool_calls],
        )

    def end_turn(self) -> TurnEnd:
        """The turn-end check: which retrieval batches of this session were left open."""
        if Namespace.get_or_none(Namespace.name == self.namespace) is None:
            return TurnEnd(unclosed=())
        return TurnEnd(unclosed=tuple(b.label for b in unresolved_batches(self.namespace, self.session)))

    def end_session(self) -> tuple[int, ...]:
        """Seal what is left of the conversation as a (shorter) block so it is derived; returns the
        block ids sealed."""
        return close_thread(self.namespace, self.thread)


__all__ = ["Harness", "TurnEnd"]
