"""Search commands: `strata search events|graph|raw QUERY` and `strata ask QUESTION`."""

from __future__ import annotations

import argparse

import time
from core.db import write_transaction
from core.errors import InvalidInputError
from core.models import LIVE, Event, EventSource
from core.services.search import SEARCH_MAX, messages_by_id, search_events, search_graph, search_raw
from core.services.spaces import get_namespace, list_namespaces
from core.services.traces import TRACES_MAX, list_traces, record_trace
from workbench.cli.argtypes import ROW_ID, integer, namespace_name, thread_name
from workbench.cli.output import console, cut, open_from_args, print_json, table


def _namespace(args: argparse.Namespace) -> str:

    if args.namespace:
        return args.namespace
    names = [n.name for n in list_namespaces()]
    if len(names) == 1:
        return names[0]
    raise InvalidInputError(f"--namespace is required ({len(names)} namespaces exist; see `strata namespaces`)")


def _trace(namespace: str, channel: str, query: str, candidates: list[dict], started: float) -> None:
    """Searches from the command line are traced like an agent's (kind "search", no batch)."""

    with write_transaction():
        record_trace(
            get_namespace(namespace).id,
            "search",
            channel=channel,
            query=query,
            candidates=candidates,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )


def cmd_search(args: argparse.Namespace) -> int:

    if args.limit > SEARCH_MAX[args.channel]:
        # One --limit serves every channel, so argparse allows the largest; this channel's is smaller.
        raise InvalidInputError(f"--limit for {args.channel} search is 1-{SEARCH_MAX[args.channel]}, got {args.limit}")
    open_from_args(args)
    ns = _namespace(args)
    started = time.perf_counter()
    if args.channel == "events":
        hits = search_events(
            ns,
            args.query,
            args.limit,
            participants=args.participant or None,
            event_type=args.type,
            happened_from=args.date_from,
            happened_to=args.date_to,
            temporal_intent=args.intent,
        )
        _trace(ns, "events", args.query, [{"ref": f"event:{h.event.id}", "score": h.rank_score} for h in hits], started)
        if args.json:
            print_json(hits)
        else:
            table(
                f"Events for “{args.query}”",
                ["id", "score", "when", "type", "status", "title"],
                [
                    [
                        h.event.id,
                        f"{h.rank_score:.4f}",
                        h.event.happened_start or (h.event.mentioned_at or "")[:10],
                        h.event.event_type,
                        h.event.status,
                        h.event.title,
                    ]
                    for h in hits
                ],
            )
    elif args.channel == "graph":
        hits = search_graph(ns, args.query, args.limit)
        _trace(
            ns, "graph", args.query, [{"ref": f"graph-node:{h.node_id}", "score": h.rank_score} for h in hits], started
        )
        if args.json:
            print_json(hits)
        else:
            table(
                f"Graph nodes for “{args.query}”",
                ["id", "score", "type", "name", "matched", "state"],
                [
                    [
                        h.node_id,
                        f"{h.rank_score:.3f}",
                        h.type,
                        h.name,
                        ", ".join(h.matched_fields),
                        cut(h.current_state, 120),
                    ]
                    for h in hits
                ],
            )
    else:
        hits = search_raw(ns, args.query, args.limit, thread=args.thread)
        _trace(
            ns,
            "raw",
            args.query,
            [{"ref": f"raw:{h.block_id or 0}:{h.message.id}:0", "score": h.score} for h in hits],
            started,
        )
        if args.json:
            print_json(hits)
        else:
            table(
                f"Messages for “{args.query}”",
                ["id", "score", "thread", "when", "who", "text"],
                [
                    [
                        h.message.id,
                        f"{h.score:.3f}",
                        h.message.thread,
                        h.message.created_at[:16],
                        h.message.speaker or h.message.role,
                        cut(h.message.content, 160),
                    ]
                    for h in hits
                ],
            )
    return 0


BELOW_CUT = 5  # of what ranked just below the cut, how many an ask's trace records (why not recalled)


def cmd_ask(args: argparse.Namespace) -> int:
    """Default retrieval for a question, printed as evidence with its sources; traced like a search
    (kind "search", channel "default"), with the best few just below the cut and why they lost."""
    # start-up time, here and below: `strata --help` builds every command's parser, so a service
    # loads when its command runs
    from core.search.history import requests_history
    from core.services.retrieval import default_retrieval
    from core.services.search import history_chains

    open_from_args(args)
    ns = _namespace(args)
    started = time.perf_counter()
    withheld: list[dict] = []
    ranked = default_retrieval(ns, args.question, limit=args.limit + BELOW_CUT, excluded=withheld)
    found, below = ranked[: args.limit], ranked[args.limit :]
    # Withheld before the cut would have been shown; those past it ranked below it anyway.
    shown_ids = {r.message_id for r in found}
    floor = found[-1].score if found else None
    lost = [{"ref": f"message:{r.message_id}", "score": r.score, "reason": "limit"} for r in below] + [
        w for w in withheld if floor is None or w["score"] >= floor or len(found) < args.limit
    ]
    lost.sort(key=lambda w: -w["score"])
    _trace_ask(ns, args.question, found, lost, started)
    messages = messages_by_id([r.message_id for r in found])
    cited: dict[int, list[tuple[int, str, int | None]]] = {}
    rows = (
        EventSource.select(EventSource.message, Event.id, Event.title, Event.superseded_by)
        .join(Event)
        .where(EventSource.message.in_(sorted(shown_ids)) & Event.status.in_(LIVE))
        .tuples()
    )
    for message_id, event_id, title, superseded_by in rows:
        cited.setdefault(message_id, []).append((event_id, title, superseded_by))
    # A question that asks what held before is shown each chain of corrections, old → new, dated.
    chains = (
        history_chains([e for r in found for e, _, _ in cited.get(r.message_id, [])])
        if requests_history(args.question)
        else []
    )
    in_chain = {e.id: [_chain_link(link) for link in chain] for chain in chains for e in chain}
    if args.json:
        print_json(
            [
                {
                    "rank": i + 1,
                    "retrieved": r,
                    "message": messages[r.message_id],
                    "events": [
                        {"id": e, "title": t, "superseded_by": by, **_history_of(in_chain, e)}
                        for e, t, by in cited.get(r.message_id, [])
                    ],
                }
                for i, r in enumerate(found)
            ]
        )
        return 0
    console.rule(f"evidence for: {args.question}")
    for i, r in enumerate(found, 1):
        m = messages[r.message_id]
        # Which rankings recalled it (text, event support, the graph's facts): why it is here.
        via = f" · via {', '.join(r.channels)}" if r.channels else ""
        console.print(
            f"{i:>2}. [{m.thread} · {m.created_at[:16]} · msg {m.id}{' · ' + m.external_id if m.external_id else ''}"
            f"{via}] {m.speaker or m.role}: {m.content}",
            markup=False,
            highlight=False,
        )
        for event_id, title, superseded_by in cited.get(r.message_id, [])[:2]:
            # An outdated statement says so: what holds now is the event that superseded it.
            status = f" (superseded by event {superseded_by})" if superseded_by else ""
            console.print(f"      event {event_id}{status}: {title}", markup=False, highlight=False)
    if not found:
        console.print("nothing found", markup=False)
    for chain in chains:
        console.print(
            "history: " + " → ".join(f"event {e.id} ({_said_on(e)}): {e.title}" for e in chain),
            markup=False,
            highlight=False,
        )
    return 0


def _history_of(in_chain: dict[int, list[dict]], event_id: int) -> dict:
    return {"history": in_chain[event_id]} if event_id in in_chain else {}


def _said_on(event: Event) -> str:
    return (event.mentioned_at or event.created_at or "")[:10] or "undated"


def _chain_link(event: Event) -> dict:
    return {"id": event.id, "said_on": _said_on(event), "status": event.status, "title": event.title}


def _trace_ask(namespace: str, question: str, found: list, lost: list[dict], started: float) -> None:
    """`strata ask` is traced as a search of the default channel: what was shown, and the best few
    below the cut with why each lost (``limit``: ranked below it; else the governance code)."""

    with write_transaction():
        record_trace(
            get_namespace(namespace).id,
            "search",
            channel="default",
            query=question,
            candidates=[
                {"ref": f"message:{r.message_id}", "score": r.score, "components": {"rank": i + 1}}
                for i, r in enumerate(found)
            ]
            + [{"ref": w["ref"], "score": w["score"]} for w in lost],
            selected=[f"message:{r.message_id}" for r in found],
            detail={
                "limit": len(found),
                "channels": {f"message:{r.message_id}": list(r.channels) for r in found},
                "not_recalled": lost,
            },
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )


def register(sub, common: argparse.ArgumentParser) -> None:

    p = sub.add_parser("search", parents=[common], help="search one channel: events, graph or raw messages")
    p.add_argument("channel", choices=["events", "graph", "raw"])
    p.add_argument("query")
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.add_argument(
        "--limit",
        type=integer(1, SEARCH_MAX["raw"]),
        default=10,
        help=f"at most this many (events and graph: 1-{SEARCH_MAX['events']}, raw: 1-{SEARCH_MAX['raw']})",
    )
    p.add_argument("--thread", type=thread_name, help="raw: only this thread")
    p.add_argument("--participant", action="append", help="events: participant (repeatable)")
    p.add_argument("--type", help="events: event type")
    p.add_argument("--from", dest="date_from", help="events: happened on or after")
    p.add_argument("--to", dest="date_to", help="events: happened on or before")
    p.add_argument("--intent", choices=["first", "latest"], help="events: temporal intent")
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("ask", parents=[common], help="default retrieval for a question, with sources")
    p.add_argument("question")
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.add_argument("--limit", type=integer(1), default=10, help="at most this many messages (default 10)")
    p.set_defaults(handler=cmd_ask)


def cmd_traces(args: argparse.Namespace) -> int:

    open_from_args(args)
    rows = list_traces(args.namespace, limit=args.limit, kind=args.kind)
    if args.json:
        print_json(rows)
        return 0
    table(
        "Retrieval traces (newest first)",
        ["id", "when", "kind", "channel", "batch", "verdict", "candidates", "selected", "ms", "query"],
        [
            [
                t.id,
                t.created_at[:19],
                t.kind,
                t.channel or "",
                t.batch_id or "",
                t.verdict or "",
                t.candidate_count,
                t.selected_count,
                f"{t.elapsed_ms:.1f}",
                cut(t.query, 60),
            ]
            for t in rows
        ],
    )
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    from core.services.trace_view import get_trace

    open_from_args(args)
    detail = get_trace(args.id)
    if args.json:
        print_json(detail)
        return 0
    t = detail.trace
    console.rule(f"trace {t.id} · {t.kind} · {t.channel or ''} · {t.created_at}")
    console.print(f"query: {t.query}", markup=False)
    table(
        "Candidates",
        ["ref", "score", "components"],
        [
            [c.get("ref"), c.get("score"), ", ".join(f"{k}={v}" for k, v in (c.get("components") or {}).items())]
            for c in detail.candidates
        ],
    )
    if detail.selected:
        console.print(f"selected: {', '.join(map(str, detail.selected))}", markup=False)
    if detail.batch is not None:
        b = detail.batch
        console.print(f"batch {b.label}: {b.status} on {b.channel}, {len(b.refs)} refs, {b.new_refs} new", markup=False)
        if b.assessment:
            a = b.assessment
            console.print(
                f"assessment: {a.get('verdict')} · refs {a.get('evidence_refs')} · fit “{a.get('fit')}” · "
                f"missing “{a.get('missing')}” · next {a.get('next_strategy')}",
                markup=False,
            )
            for r in a.get("rejected_evidence_refs") or []:
                console.print(f"  rejected {r.get('ref')!r}: {r.get('reason')} {r.get('detail') or ''}", markup=False)
        if b.receipt is not None:
            console.print(f"use receipt {b.receipt.receipt_id}: events {list(b.receipt.event_ids)}", markup=False)
    extra = dict(detail.detail or {})
    lost = extra.pop("not_recalled", None)
    if lost:
        table(
            "Why not recalled (best just below the cut)",
            ["ref", "score", "reason"],
            [[w.get("ref"), w.get("score"), w.get("reason")] for w in lost],
        )
    if extra:
        console.print(f"detail: {extra}", markup=False)
    return 0


def register_traces(sub, common: argparse.ArgumentParser) -> None:

    p = sub.add_parser("traces", parents=[common], help="retrieval traces, newest first")
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.add_argument("--kind", choices=["search", "assess", "use", "context"])
    p.add_argument(
        "--limit", type=integer(1, TRACES_MAX), default=50, help=f"at most this many (1-{TRACES_MAX}, default 50)"
    )
    p.set_defaults(handler=cmd_traces)

    p = sub.add_parser("trace", parents=[common], help="one trace: candidates with scores, assessment, receipt")
    p.add_argument("id", type=ROW_ID)
    p.set_defaults(handler=cmd_trace)
