"""The agent tool set: nine memory tools, each a handler for a JSON schema of ``core.agent_schemas``.

Harnesses use it straight from Python; the MCP server (``core.mcp_server``) exposes the
same tools over stdio. One ``MemoryTools`` object serves one agent: a namespace, and
optionally the agent's session (which scopes batches, budget and receipts) and its
conversation thread (what ``scope: "session"`` means for raw search and blocks).

Every retrieval or expansion opens a batch through the evidence gate
(``core.services.gate``) and returns ``{batch_id, evidence_refs, results, …}``. The
agent then assesses the batch (``assess``) and closes it (``record_use``); only refs
adopted by a sufficient assessment and then used reinforce memory (§8, §9.1).

Results are compact (§12.1): titles cut to 240 characters, summaries to 800, raw message
content to 500. Secrets in them (tokens, API keys, passwords; see ``core.redact``) are masked
before any cut, in every result and error; the stored text stays exact. ``rank_score``
orders hits within one result list; it is not a confidence. Every problem an agent can
cause (bad arguments, a spent budget, a repeated empty channel, a refused receipt) raises
``ToolError``, whose message says what to do next; ``call_safe`` turns it into an error
dict instead.
"""

from __future__ import annotations

import copy
from datetime import timezone
from typing import Any, Callable, Mapping, Sequence

from core.agent_capture import CaptureTools
from core.agent_notes import NoteTools
from core.agent_schemas import (
    BLOCK_LIST_TOKENS,
    TOOL_SPECS,
    ToolError,
    check_arguments,
    parse_batch_id,
    parse_id,
)
from core.db import DRIVER_FAILURES, store_failure
from core.decay import normalize_target
from core.errors import (
    BlockNotReadyError,
    InvalidInputError,
    NotFoundError,
    ReceiptConflictError,
    StoreUnavailableError,
    StrataError,
)
from core.models import LIVE, Namespace, RetrievalBatch, Thread
from core.services import gate
from core.services.events import get_event
from core.services.governance import THREAD as GOVERNED_THREAD, DuplicateRecordError, remember, withheld
from core.redact import redact_text, redact_value
from core.services.graph import node_view
from core.services.search import mark_retrieved, search_events, search_graph, search_raw
from core.services.spaces import validate_name
from core.timeutil import period_bounds

SCORE_MEANING = (
    "rank_score only orders the hits of this result list (higher ranks first); "
    "it is not a confidence or a probability and is not comparable across calls."
)
TITLE_LIMIT = 240
SUMMARY_LIMIT = 800
CONTENT_LIMIT = 500
ALIASES_LIMIT = 160
STATE_LIMIT = 500
_DEFAULT_BUDGET = object()  # "use the gate's default round budget"

# Tool-facing strategy names (the tool an agent calls next) and the gate's spelling.
_STRATEGY_TO_GATE = {"search_raw": "search_raw_memory"}
_STRATEGY_FROM_GATE = {v: k for k, v in _STRATEGY_TO_GATE.items()}

_NEXT_STEP = (
    "Assess this batch with assess(batch_id, verdict, evidence_refs, fit, missing, next_strategy), "
    "then close it with record_use(batch_id, evidence_refs) — use [] when nothing was used."
)


# ----------------------------------------------------------------------------- compact rendering


def clip(text: str | None, limit: int) -> str:
    """``text`` with its secrets masked, then cut to at most ``limit`` characters (an ellipsis
    marks a cut). Masked first: a cut through a token leaves a prefix no pattern knows."""
    if not text:
        return ""
    text = redact_text(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _join_clipped(values: tuple[str, ...] | list[str], limit: int) -> list[str]:
    """Leading values whose combined length (with ', ') stays within ``limit``."""
    out, used = [], 0
    for value in values:
        cost = len(value) + (2 if out else 0)
        if used + cost > limit:
            break
        out.append(value)
        used += cost
    return out


def _temporal(event: Any) -> dict[str, Any]:
    return {
        "mentioned_at": event.mentioned_at,
        "happened_start": event.happened_start,
        "happened_end": event.happened_end,
        "precision": event.precision,
        "status": event.time_status,
        "event_type": event.event_type,
    }


def _event_brief(hit: Any, ref: str) -> dict[str, Any]:
    event = hit.event
    return {
        "ref": ref,
        "id": event.id,
        "title": clip(event.title, TITLE_LIMIT),
        "summary": clip(event.summary, SUMMARY_LIMIT),
        "source_time": event.happened_start or event.mentioned_at,
        "temporal": _temporal(event),
        "participants": list(event.participants),
        "source_block_id": hit.source_block_id,
        "status": event.status,
        "scope": event.scope,
        "criticality": event.criticality,
        "rank_score": hit.rank_score,
        # A history question is shown superseded events: each names what replaced it.
        **({"superseded_by": hit.superseded_by} if getattr(hit, "superseded_by", None) else {}),
    }


_FIELD_WORDS = {
    "name": "name",
    "aliases": "an alias",
    "tags": "a tag",
    "type": "the node type",
    "currentFacts": "a current fact",
    "historicalFacts": "a historical fact",
    "currentEdgeEndpoints": "a current relation",
    "historicalEdgeEndpoints": "a historical relation",
    "relations": "a relation label",
}


def _match_reason(hit: Any) -> str:
    words = [_FIELD_WORDS.get(f, f) for f in hit.matched_fields]
    reason = "matched " + ", ".join(words) if words else "matched"
    if hit.match_type == "historical":
        reason += " (only past values match; check current_state for what holds now)"
    elif hit.match_type == "both":
        reason += " (current and past values)"
    return reason


def _node_brief(hit: Any, ref: str) -> dict[str, Any]:
    return {
        "ref": ref,
        "id": hit.node_id,
        "name": hit.name,
        "type": hit.type,
        "aliases": _join_clipped(list(hit.aliases), ALIASES_LIMIT),
        "current_state": clip(hit.current_state, STATE_LIMIT),
        "status": hit.status,
        "rank_score": hit.rank_score,
        "matched_fields": list(hit.matched_fields),
        "match_type": hit.match_type,
        "match_reason": _match_reason(hit),
        "provenance_event_ids": list(hit.provenance_event_ids),
    }


def _raw_brief(hit: Any, ref: str) -> dict[str, Any]:
    message = hit.message
    if hit.block_id is not None:
        hint = (
            f"Part of block {hit.block_id} (turns {hit.turn_range[0]}-{hit.turn_range[1]}); "
            f"expand_block id={hit.block_id} target='raw' reads the whole exchange."
        )
    else:
        hint = "Still in the open (unsealed) part of its conversation; the content shown is the stored message."
    return {
        "ref": ref,
        "id": message.id,
        "block_id": hit.block_id,
        "turn_range": list(hit.turn_range) if hit.turn_range else None,
        "message": {
            "id": message.id,
            "role": message.role,
            "speaker": message.speaker,
            "content": clip(message.content, CONTENT_LIMIT),
            "created_at": message.created_at,
            "thread": message.thread,
        },
        "source_time": message.created_at,
        "rank_score": hit.score,
        "detail_hint": hint,
    }


def _block_entry(view: Any, ref: str) -> dict[str, Any]:
    return {
        "ref": ref,
        "id": view.id,
        "thread": view.thread,
        "turn_range": [view.start_turn, view.end_turn],
        "status": view.status,
        "age": view.age,
        "level": view.level,
        "label": view.label,
        "content": view.content,
    }


def _links(links: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        kind: [{"id": e.id, "title": clip(e.title, TITLE_LIMIT), "status": e.status} for e in events]
        for kind, events in links.items()
    }


def _ended_by(record: Any) -> dict[str, Any]:
    """Why a historical record ended, when known: [{"cause": "event"|"fact"|"edge", "id", "text"}]."""
    return (
        {"ended_by": [{"cause": r.cause, "id": r.id, "text": clip(r.text, TITLE_LIMIT)} for r in record.ended_by]}
        if record.ended_by
        else {}
    )


def _fact(fact: Any) -> dict[str, Any]:
    return {
        "key": fact.key,
        "value": fact.value,
        "status": fact.status,
        "valid_from": fact.valid_from,
        "valid_to": fact.valid_to,
        "source_event_ids": list(fact.source_event_ids),
        **_ended_by(fact),
    }


def _edge(edge: Any, direction: str) -> dict[str, Any]:
    return {
        "direction": direction,
        "relation": edge.relation,
        "current": edge.current,
        "status": edge.status,
        "other": {"id": edge.other_id, "name": edge.other_name, "type": edge.other_type},
        "valid_from": edge.valid_from,
        "valid_to": edge.valid_to,
        "source_event_ids": list(edge.source_event_ids),
        **_ended_by(edge),
    }


def _strategy_for_tools(name: str | None) -> str | None:
    return _STRATEGY_FROM_GATE.get(name, name) if name else name


# ----------------------------------------------------------------------------- the tool set


# Capturing the first turn is what creates a namespace: over MCP, the harness's first call.
CREATES_NAMESPACE = frozenset({"capture_turn"})


NOT_RECALLED = 5  # the best results below a search's cut that its trace keeps


def _below_cut(deeper: Sequence[Any], shown: Sequence[Any]) -> list[dict[str, Any]]:
    """The refs a deeper search found that the shown results do not hold: ranked below the limit."""
    kept = {s.ref for s in shown}
    return [{"ref": d.ref, "score": d.score, "reason": "limit"} for d in deeper if d.ref not in kept][:NOT_RECALLED]


class MemoryTools(CaptureTools, NoteTools):
    """The memory tools of one agent over one namespace.

    ``session`` scopes the agent's batches (round budget, strategy switching, "latest
    batch") and its default receipt ids; ``thread`` is the conversation that
    ``scope: "session"`` means (default: the session id, which is how conversations
    are captured). ``budget`` is the number of retrieval batches per round (§8.3;
    ``None`` disables the cap).
    """

    def __init__(
        self,
        namespace: str,
        *,
        session: str | None = None,
        thread: str | None = None,
        budget: int | None | object = _DEFAULT_BUDGET,
    ):

        self.namespace = validate_name(namespace)
        # Spelled as capture spells the thread a session's turns go to, so 'session' scope finds them.
        self.session = validate_name(session, "session") if session is not None else None
        self.thread = validate_name(thread, "thread") if thread is not None else self.session
        self.budget = gate.DEFAULT_BUDGET if budget is _DEFAULT_BUDGET else budget
        self._ready = False
        self._handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "search_events": self._search_events,
            "search_graph": self._search_graph,
            "search_raw": self._search_raw,
            "get_blocks": self._get_blocks,
            "expand_block": self._expand_block,
            "expand_event": self._expand_event,
            "expand_graph_node": self._expand_graph_node,
            "assess": self._assess,
            "record_use": self._record_use,
            "remember": self._remember,
            "capture_turn": self._capture_turn,
            "close_thread": self._close_thread,
            "get_context": self._get_context,
            **self._note_handlers(),
        }

    # -- public API

    @staticmethod
    def schemas() -> list[dict[str, Any]]:
        """Every tool as ``{name, description, inputSchema}`` (a JSON Schema object)."""

        return [
            {"name": name, "description": spec["description"], "inputSchema": copy.deepcopy(spec["inputSchema"])}
            for name, spec in TOOL_SPECS.items()
        ]

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run one tool; return its JSON-ready result or raise ``ToolError``."""
        args = check_arguments(name, arguments)
        try:
            if name not in CREATES_NAMESPACE:
                self._require_namespace()
            # The one door every result leaves by: the fields not clipped (block content, an
            # event's full summary, facts) are masked here.
            return redact_value(self._handlers[name](args))
        except ToolError as exc:
            exc.tool = exc.tool or name
            raise
        except StrataError as exc:
            raise _translate(name, exc) from exc
        except DRIVER_FAILURES as exc:  # the store failed under a read
            raise ToolError(redact_text(str(store_failure(exc))), code="store_unavailable", tool=name) from exc

    def call_safe(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Like ``call``, but a ``ToolError`` comes back as ``{"error": {code, message, …}}``."""
        try:
            return self.call(name, arguments)
        except ToolError as exc:
            return exc.to_dict()

    # -- plumbing

    def _require_namespace(self) -> None:
        """Every tool reads (or assesses) memory that lives in the namespace, so a missing one is an
        error, never created here: a mistyped --namespace would otherwise answer "nothing found" and
        leave a second namespace behind. Capturing the first turn creates it; from then on the tools
        work (only its existence is remembered, so a later capture is seen)."""
        if self._ready:
            return

        if Namespace.get_or_none(Namespace.name == self.namespace) is None:
            names = [n for (n,) in Namespace.select(Namespace.name).order_by(Namespace.name).limit(11).tuples()]
            known = (
                f"the namespaces are {', '.join(names[:10])}{', …' if len(names) > 10 else ''}"
                if names
                else "the store has no namespace yet"
            )
            raise ToolError(
                f"namespace {self.namespace!r} does not exist yet: nothing was captured into it "
                f"({known}). If the name is right, memory starts with the first captured turn; "
                "continue without memory until then.",
                code="not_found",
            )
        self._ready = True

    def _open(
        self,
        tool: str,
        channel: str,
        query: str,
        specs: list[Any],
        params: dict[str, Any],
        results: list[dict[str, Any]],
        excluded: Sequence[dict[str, str]] = (),
        below: Sequence[dict[str, Any]] = (),
        **extra: Any,
    ) -> dict[str, Any]:
        """Open the batch for a retrieval and wrap its results with the batch id and refs; what the
        search withheld (``excluded``) and the best few below the cut (``below``) go to the trace,
        never to the agent."""

        batch = gate.open_batch(
            self.namespace,
            channel,
            query,
            specs,
            session=self.session,
            params=params,
            budget=self.budget,
            excluded=excluded,
            not_recalled=below,
        )
        out: dict[str, Any] = {
            "tool": tool,
            "batch_id": batch.label,
            "evidence_refs": list(batch.available_refs),
            "results": results,
            "count": len(results),
        }
        out.update(extra)
        out["next_step"] = _NEXT_STEP
        return out

    def _thread_exists(self) -> bool:

        return (
            Thread.select()
            .join(Namespace)
            .where((Namespace.name == self.namespace) & (Thread.name == self.thread))
            .exists()
        )

    def _session_scope(self, tool: str, scope: str | None, default: str) -> str:
        scope = scope or default
        if scope == "session" and self.thread is None:
            raise ToolError(
                f"{tool}: scope 'session' needs a conversation, but this memory tool set was started "
                "without a session; use scope 'namespace'",
                field="scope",
                tool=tool,
            )
        return scope

    # -- retrieval

    def _search_events(self, args: dict[str, Any]) -> dict[str, Any]:

        query = args["query"].strip()
        participants = args.get("participants") or []
        for name in ("happened_from", "happened_to"):
            if name in args and period_bounds(args[name], timezone.utc) is None:
                raise ToolError(
                    f"search_events: argument '{name}' must be a date like 2023, 2023-05 or 2023-05-07, "
                    f"got {args[name]!r}",
                    field=name,
                    tool="search_events",
                )
        filters = bool(participants or args.get("event_type") or args.get("happened_from") or args.get("happened_to"))
        if not query and not filters:
            raise ToolError(
                "search_events: argument 'query' is empty; give words to search for, or a filter "
                "(participants, event_type, happened_from/happened_to)",
                field="query",
                tool="search_events",
            )
        limit = args.get("limit", 6)
        excluded: list[dict[str, str]] = []
        search = dict(
            participants=participants or None,
            event_type=args.get("event_type"),
            happened_from=args.get("happened_from"),
            happened_to=args.get("happened_to"),
            temporal_intent=args.get("temporal_intent"),
            track=False,
            for_agent=True,
            session=self.session,
        )
        hits = search_events(self.namespace, query, limit, excluded=excluded, **search)
        specs = gate.refs_for_events(hits)
        results = [_event_brief(hit, spec.ref) for hit, spec in zip(hits, specs)]
        below: list[dict[str, Any]] = []
        if len(hits) == limit:  # the best few below the cut, for the trace ("why not recalled")
            deeper = search_events(self.namespace, query, limit + NOT_RECALLED, **search)
            below = _below_cut(gate.refs_for_events(deeper), specs)
        params = {k: v for k, v in args.items() if k != "query"}
        extra: dict[str, Any] = {"score_meaning": SCORE_MEANING}
        if not results:
            extra["empty_reason"] = (
                "No event matched. Try other words, fewer filters, search_raw for the exact "
                "wording, or search_graph for current state."
            )
        out = self._open("search_events", "events", query, specs, params, results, excluded, below, **extra)
        # Stamped only once the gate has opened the batch: a refused search changes nothing.
        mark_retrieved([hit.event.id for hit in hits])
        return out

    def _search_graph(self, args: dict[str, Any]) -> dict[str, Any]:

        query = args["query"].strip()
        hits = search_graph(self.namespace, query, args.get("limit", 8))
        specs = gate.refs_for_nodes(hits)
        results = [_node_brief(hit, spec.ref) for hit, spec in zip(hits, specs)]
        extra: dict[str, Any] = {"score_meaning": SCORE_MEANING}
        if not results:
            extra["empty_reason"] = (
                "No graph node matched (a relation word alone never matches). Try an entity "
                "name, search_events, or search_raw."
            )
        return self._open("search_graph", "graph", query, specs, {"limit": args.get("limit", 8)}, results, **extra)

    def _search_raw(self, args: dict[str, Any]) -> dict[str, Any]:

        query = args["query"].strip()
        scope = self._session_scope("search_raw", args.get("scope"), "namespace")
        limit = args.get("limit", 6)
        empty_reason = None
        excluded: list[dict[str, str]] = []
        search = dict(thread=self.thread if scope == "session" else None, for_agent=True, session=self.session)
        if scope == "session" and not self._thread_exists():
            hits = []
            empty_reason = "This conversation has no stored messages yet; use scope 'namespace'."
        else:
            hits = search_raw(self.namespace, query, limit, excluded=excluded, **search)
        specs = gate.refs_for_raw(hits)
        results = [_raw_brief(hit, spec.ref) for hit, spec in zip(hits, specs)]
        below: list[dict[str, Any]] = []
        if len(hits) == limit:  # the best few below the cut, for the trace
            deeper = search_raw(self.namespace, query, limit + NOT_RECALLED, **search)
            below = _below_cut(gate.refs_for_raw(deeper), specs)
        extra: dict[str, Any] = {"scope": scope, "score_meaning": SCORE_MEANING}
        if scope == "session":
            extra["thread"] = self.thread
        if not results:
            extra["empty_reason"] = empty_reason or "No stored message contains these words; try other words."
        return self._open(
            "search_raw", "raw", query, specs, {"limit": limit, "scope": scope}, results, excluded, below, **extra
        )

    def _get_blocks(self, args: dict[str, Any]) -> dict[str, Any]:
        # start-up time: core.api loads this module; the block service (~5 ms) only when a block tool is called
        from core.services.blocks import block_counts, get_block_context

        scope = self._session_scope("get_blocks", args.get("scope"), "session" if self.thread else "namespace")
        thread = self.thread if scope == "session" else None
        before = args.get("before")
        views = get_block_context(self.namespace, thread, token_budget=BLOCK_LIST_TOKENS, before=before)
        # Governed records are reached through search, where each is checked (governance.withheld).
        views = [v for v in views if v.thread != GOVERNED_THREAD]
        counts = block_counts(self.namespace, thread)
        empty_reason = None
        if not views:
            if thread is not None and not self._thread_exists():
                empty_reason = "This conversation has nothing stored yet."
            elif before is not None and counts["ready"]:
                empty_reason = f"No ready block before position {before}: the oldest has been listed."
            elif not counts["blocks"]:
                empty_reason = "No block is sealed yet: too few turns so far (recent turns stay in the open tail)."
            else:
                empty_reason = (
                    f"{counts['blocks']} block(s) exist but none is ready: their summaries are still "
                    "being derived. search_raw finds their messages meanwhile."
                )
        specs = gate.refs_for_blocks(views)
        results = [_block_entry(view, spec.ref) for view, spec in zip(views, specs)]
        extra: dict[str, Any] = {"scope": scope, "namespace": self.namespace, "thread": thread, "counts": counts}
        if views:
            older = block_counts(self.namespace, thread, before=views[0].sequence)["ready"]
            if older:  # a long memory is listed newest first, a page at a time
                extra["older"] = {"blocks": older, "before": views[0].sequence}
        if empty_reason:
            extra["empty_reason"] = empty_reason
        params: dict[str, Any] = {"scope": scope} if before is None else {"scope": scope, "before": before}
        return self._open("get_blocks", "blocks", "", specs, params, results, **extra)

    # -- expansion

    def _expand_block(self, args: dict[str, Any]) -> dict[str, Any]:
        # start-up time: as in the first block tool above
        from core.services.blocks import expand_block, expansion_level, get_block, render_block

        block_id = parse_id("expand_block", args["id"], "block", "block")
        target = args.get("target", "next")
        row = get_block(block_id)
        if row.namespace != self.namespace or row.thread == GOVERNED_THREAD:
            raise NotFoundError(f"block {block_id} does not exist in namespace {self.namespace!r}")
        note = None
        try:
            # A pending block is shown raw whatever the target, but a target no block has is still a mistake.
            level = (
                expansion_level(block_id, target, row.current_level)
                if row.status == "ready"
                else normalize_target(target, 5)
            )
        except InvalidInputError as exc:
            raise ToolError(f"expand_block: {exc}", field="target", tool="expand_block") from exc
        if row.status == "ready":
            ref = gate.block_ref(block_id, level)
            # Expanding writes (it re-anchors decay): ask the gate first so a refused batch changes nothing.
            gate.check_batch_allowed(self.namespace, "block_detail", [ref], session=self.session, budget=self.budget)
            view = expand_block(block_id, target, by="agent")
        else:
            # A pending block has no summary levels and does not decay: show its transcript as it is.
            view = render_block(block_id, 5)
            note = (
                f"Block {block_id} is {row.status} (not summarized yet), so it is shown raw and its decay "
                "anchor is unchanged."
            )
        specs = gate.refs_for_blocks([view])
        entry = _block_entry(view, specs[0].ref)
        entry["previous_level"] = row.current_level
        if note:
            entry["note"] = note
        return self._open(
            "expand_block", "block_detail", str(block_id), specs, {"id": block_id, "target": target}, [entry]
        )

    def _expand_event(self, args: dict[str, Any]) -> dict[str, Any]:

        event_id = parse_id("expand_event", args["id"], "event", "event")
        card = get_event(event_id)
        event = card.event
        if event.namespace != self.namespace or event.status not in LIVE:
            raise NotFoundError(
                f"event {event_id} does not exist in namespace {self.namespace!r} (or it was forgotten)"
            )
        hidden = withheld(event_ids=[event_id], for_agent=True, session=self.session)
        if hidden:
            raise NotFoundError(f"event {event_id} is withheld from agents ({hidden[('event', event_id)]})")
        specs = gate.refs_for_events([card])
        hint = (
            f"expand_block id={event.block_id} target='raw' shows the source messages."
            if event.block_id is not None
            else "This event has no source block."
        )
        result = {
            "ref": specs[0].ref,
            "id": event.id,
            "title": event.title,
            "summary": event.summary,
            "event_type": event.event_type,
            "status": event.status,
            "participants": list(event.participants),
            "tags": list(event.tags),
            "quotes": list(card.quotes),
            "temporal": {**_temporal(event), "basis": event.basis, "original_text": event.original_text},
            "source_time": event.happened_start or event.mentioned_at,
            "source_block_id": event.block_id,
            "thread": event.thread,
            "source_message_ids": [m.id for m in card.sources],
            "links": _links(card.links),
            "linked_from": _links(card.linked_from),
            "superseded_by": card.superseded_by,
            "scope": event.scope,
            "criticality": event.criticality,
            "weight": event.weight,
            "mention_count": card.mention_count,
            "formed_turn": card.formed_turn,
            "last_adopted_turn": card.last_adopted_turn,
            "pinned": card.pinned,
            "detail_hint": hint,
        }
        return self._open("expand_event", "event_detail", str(event_id), specs, {"id": event_id}, [result])

    def _expand_graph_node(self, args: dict[str, Any]) -> dict[str, Any]:

        node_id = parse_id("expand_graph_node", args["id"], "graph-node", "graph node")
        view = node_view(node_id)
        if view.namespace != self.namespace:
            raise NotFoundError(f"graph node {node_id} does not exist in namespace {self.namespace!r}")
        specs = gate.refs_for_nodes([view], expanded=True)
        result = {
            "ref": specs[0].ref,
            "node": {
                "id": view.id,
                "name": view.name,
                "type": view.type,
                "aliases": list(view.aliases),
                "tags": list(view.tags),
                "status": view.status,
                "current_state": view.current_state,
            },
            "current_facts": [_fact(f) for f in view.current_facts],
            "historical_facts": [_fact(f) for f in view.historical_facts],
            "edges": [_edge(e, "out") for e in view.edges_out] + [_edge(e, "in") for e in view.edges_in],
            "supporting_events": [
                {
                    "id": e.id,
                    "title": clip(e.title, TITLE_LIMIT),
                    "status": e.status,
                    "happened_start": e.happened_start,
                }
                for e in view.events
            ],
            "detail_hint": "expand_event reads a supporting event in full.",
        }
        return self._open("expand_graph_node", "graph_detail", str(node_id), specs, {"id": node_id}, [result])

    # -- the gate

    def _assess(self, args: dict[str, Any]) -> dict[str, Any]:

        strategy = args["next_strategy"]
        if isinstance(strategy, str):
            strategy = strategy.strip().lower()
            strategy = _STRATEGY_TO_GATE.get(strategy, strategy)
        verdict = args["verdict"].strip().lower()
        batch_id = parse_batch_id("assess", args["batch_id"]) if "batch_id" in args else None
        result = gate.assess(
            self.namespace,
            batch_id,
            verdict,
            args["evidence_refs"],
            args["fit"],
            args["missing"],
            strategy,
            session=self.session,
        )
        assessment = result.to_json()
        assessment.pop("assessed_at")  # the tool result never carried the timestamp
        out = {
            "tool": "assess",
            "batch_id": gate.batch_label(result.batch_id),
            "batch_status": result.batch_status,
            "latest_batch_id": gate.batch_label(result.latest_batch_id) if result.latest_batch_id else None,
            **assessment,
            "next_strategy": _strategy_for_tools(result.next_strategy),
            "strategy_rewritten_from": _strategy_for_tools(result.strategy_rewritten_from),
            "notes": [_tool_words(n) for n in result.notes],
            "unresolved_batch_ids": [gate.batch_label(i) for i in result.unresolved_batch_ids],
        }
        if result.verdict == "sufficient":
            out["next_step"] = (
                "Answer now, then close this batch with record_use naming the refs you used (any of evidence_refs)."
            )
        else:
            out["next_step"] = (
                f"Not sufficient yet: follow next_strategy ({out['next_strategy']}). Close this "
                "batch with record_use(batch_id, []) when you move on."
            )
        return out

    # -- writing

    def _remember(self, args: dict[str, Any]) -> dict[str, Any]:

        try:
            done = remember(
                self.namespace,
                args["text"],
                source="agent",
                actor=self.session or "agent",
                title=args.get("title"),
                scope=args.get("scope", "project"),
                privacy=args.get("privacy", "normal"),
                expires=args.get("expires"),
                review_by=args.get("review_by"),
                key=args.get("key"),
                evidence=args.get("evidence_refs") or (),
            )
        except DuplicateRecordError as exc:
            raise ToolError(f"remember: {exc}", code="duplicate", tool="remember") from exc
        record = done.record
        out: dict[str, Any] = {
            "tool": "remember",
            "record_id": f"record:{record.id}",
            "status": record.status,
            "title": record.title,
        }
        if record.status == "quarantined":
            out["note"] = "Stored in quarantine: a person reviews it (strata review list) before any search returns it."
        if done.near_duplicate_of:
            out["near_duplicate_of"] = f"record:{done.near_duplicate_of}"
        return out

    def _latest_batch_id(self) -> int:

        scope = RetrievalBatch.session.is_null() if self.session is None else RetrievalBatch.session == self.session
        batch_id = (
            RetrievalBatch.select(RetrievalBatch.id)
            .join(Namespace)
            .where((Namespace.name == self.namespace) & scope)
            .order_by(RetrievalBatch.sequence.desc())
            .scalar()
        )
        if batch_id is None:
            raise ToolError(
                "record_use: there is no batch to close yet; search first",
                code="not_found",
                field="batch_id",
                tool="record_use",
            )
        return batch_id

    def default_receipt_id(self, batch_id: int) -> str:
        """The receipt id ``record_use`` uses when none is given: stable per session and batch."""
        return f"strata:{self.session or '-'}:batch:{batch_id}"

    def _record_use(self, args: dict[str, Any]) -> dict[str, Any]:

        raw_id = args.get("batch_id")
        if raw_id is None:
            batch_id = self._latest_batch_id()
        else:
            batch_id = parse_batch_id("record_use", raw_id)
        receipt_id = args.get("receipt_id") or self.default_receipt_id(batch_id)
        try:
            result = gate.record_use(
                self.namespace, batch_id, args["evidence_refs"], receipt_id=receipt_id, session=self.session
            )
        except ReceiptConflictError as exc:
            if "receipt_id" in args:
                raise
            # The derived receipt is per batch: a conflict means this batch was closed with other refs.
            raise ToolError(
                f"{gate.batch_label(batch_id)} was already closed by record_use with other refs; a batch "
                "is closed once. Search again for a new batch if you need more evidence.",
                code="batch_closed",
                field="batch_id",
                tool="record_use",
            ) from exc
        return {
            "tool": "record_use",
            "batch_id": gate.batch_label(result.batch_id),
            "batch_status": result.batch_status,
            "receipt_id": result.receipt_id,
            "evidence_refs": list(result.evidence_refs),
            "duplicate_evidence_refs": list(result.duplicate_refs),
            "event_ids": list(result.event_ids),
            "incremented": result.incremented,
            "citations": list(result.citations),
            "retrieved_memories": list(result.retrieved),
            "unresolved_batch_ids": [gate.batch_label(i) for i in result.unresolved_batch_ids],
            "replayed": result.replayed,
        }


# ----------------------------------------------------------------------------- errors


def _tool_words(text: str) -> str:
    """Gate messages name strategies; speak in tool names instead."""
    return text.replace("search_raw_memory", "search_raw")


def _translate(tool: str, exc: StrataError) -> ToolError:
    """A core error as a ToolError the agent can act on."""

    message = _tool_words(str(exc))
    if isinstance(exc, gate.BudgetExhaustedError):
        return ToolError(
            message,
            code="budget_exhausted",
            tool=tool,
            details={"budget": exc.budget, "open_batch_ids": [gate.batch_label(i) for i in exc.open_batch_ids]},
        )
    if isinstance(exc, gate.StrategyRepeatError):
        alternatives = [_strategy_for_tools(s) for s in exc.alternatives]
        return ToolError(
            message,
            code="strategy_repeat",
            tool=tool,
            details={"previous_batch_id": gate.batch_label(exc.batch_id), "alternatives": alternatives},
        )
    if isinstance(exc, gate.UseRefusedError):
        return ToolError(
            message,
            code="use_refused",
            tool=tool,
            field="evidence_refs",
            details={
                "batch_id": gate.batch_label(exc.batch_id),
                "batch_status": exc.batch_status,
                "issues": [
                    {"input_index": i.input_index, "ref": i.ref, "reason": i.reason, "detail": i.detail}
                    for i in exc.issues
                ],
                "duplicate_evidence_refs": list(exc.duplicate_refs),
                "available_refs": list(exc.available_refs),
                "adopted_refs": list(exc.adopted_refs),
            },
        )
    if isinstance(exc, gate.BatchClosedError):
        return ToolError(message, code="batch_closed", tool=tool, field="batch_id")
    if isinstance(exc, ReceiptConflictError):
        return ToolError(message, code="receipt_conflict", tool=tool, field="receipt_id")
    if isinstance(exc, NotFoundError):
        return ToolError(message, code="not_found", tool=tool)
    if isinstance(exc, BlockNotReadyError):
        return ToolError(message, code="not_ready", tool=tool)
    if isinstance(exc, InvalidInputError):
        return ToolError(message, code="invalid_arguments", tool=tool)
    if isinstance(exc, StoreUnavailableError):
        return ToolError(message, code="store_unavailable", tool=tool)
    return ToolError(message, code="error", tool=tool)


__all__ = ["MemoryTools", "SCORE_MEANING", "clip"]
