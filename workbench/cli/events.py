"""Event and job commands: events, event, forget, restore, jobs, retry."""

from __future__ import annotations

import argparse

from core.db import LIST_MAX
from core.services.events import LINKED_FROM, get_event, list_events
from core.services.jobs import list_jobs, retry
from core.vocab import EVENT_STATUSES
from workbench.cli.argtypes import ROW_ID, integer, namespace_name
from workbench.cli.output import console, cut, err_console, open_from_args, print_json, progress_bar, table


def _when(row) -> str:
    if row.happened_start:
        end = f"..{row.happened_end}" if row.happened_end and row.happened_end != row.happened_start else ""
        return f"{row.happened_start}{end} ({row.precision})"
    return f"mentioned {(row.mentioned_at or '')[:10]}"


def cmd_events(args: argparse.Namespace) -> int:

    open_from_args(args)
    rows = list_events(
        args.namespace,
        event_type=args.type,
        participant=args.participant,
        date_from=args.date_from,
        date_to=args.date_to,
        status=args.status,
        text=args.text,
        limit=args.limit,
        offset=args.offset,
        after_event=args.after,
    )
    if args.json:
        print_json(rows)
        return 0
    table(
        "Events",
        ["id", "when", "type", "status", "participants", "title", "weight"],
        [[e.id, _when(e), e.event_type, e.status, ", ".join(e.participants), e.title, f"{e.weight:.2f}"] for e in rows],
    )
    if rows and len(rows) == args.limit:
        err_console.print(f"first {len(rows)} events shown; the next ones: --after {rows[-1].id}", markup=False)
    return 0


def _print_card(card) -> None:
    e = card.event
    console.rule(f"event {e.id} · {e.event_type} · {e.status}")
    console.print(f"[bold]{e.title}[/]", highlight=False)
    console.print(e.summary, markup=False, highlight=False)
    console.print(
        f"\nmentioned {e.mentioned_at} · happened {e.happened_start or '?'}"
        f"{'..' + e.happened_end if e.happened_end and e.happened_end != e.happened_start else ''}"
        f" · precision {e.precision} · basis {e.basis} · {e.time_status}"
        + (f" · “{e.original_text}”" if e.original_text else ""),
        markup=False,
        highlight=False,
    )
    console.print(
        f"participants: {', '.join(e.participants) or '-'} · criticality {e.criticality} · "
        f"weight {e.weight:.3f} (uses {card.mention_count}, formed at turn {card.formed_turn})",
        markup=False,
        highlight=False,
    )
    for kind, linked in card.links.items():
        console.print(f"{kind}: " + "; ".join(f"{x.id} {x.title} ({x.status})" for x in linked), markup=False)
    for kind, linked in card.linked_from.items():
        console.print(
            f"{LINKED_FROM.get(kind, kind + ' by')}: " + "; ".join(f"{x.id} {x.title} ({x.status})" for x in linked),
            markup=False,
        )
    if card.correction_unchanged:
        note = card.correction_unchanged
        what = " → ".join(note[k] for k in ("prev", "new") if note.get(k))
        subject = f" {note['subject']}" if note.get("subject") else ""
        console.print(
            f"correction changed nothing:{subject} {what} ({note['why']})".replace("  ", " "),
            markup=False,
            highlight=False,
        )
    if card.used_with:
        console.print(
            "used together with: "
            + "; ".join(
                f"{a.event_id} {a.title} (×{a.coactivation_count}, weight {a.weight:.2f})" for a in card.used_with
            ),
            markup=False,
            highlight=False,
        )
    console.print("\nsources:", markup=False)
    for m in card.sources:
        who = m.speaker or m.role
        console.print(
            f"  [{m.id} {m.external_id or ''} {m.created_at}] {who}: {m.content}", markup=False, highlight=False
        )


def cmd_event(args: argparse.Namespace) -> int:

    open_from_args(args)
    card = get_event(args.id)
    if args.json:
        print_json(card)
    else:
        _print_card(card)
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:

    open_from_args(args)
    rows = list_jobs(args.namespace, args.status, limit=args.limit)
    if args.json:
        print_json(rows)
        return 0
    table(
        "Jobs",
        ["id", "namespace", "kind", "block", "status", "attempts", "error"],
        [[j.id, j.namespace, j.kind, j.block_id, j.status, j.attempts, cut(j.last_error, 120)] for j in rows],
    )
    return 0


def cmd_retry(args: argparse.Namespace) -> int:

    open_from_args(args)
    row = retry(args.id)
    print_json(row) if args.json else console.print(f"job {row.id} is {row.status} again (attempts reset)")
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("events", parents=[common], help="list events in time order with filters")
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.add_argument("--type", help="event type (decision, plan, change, …)")
    p.add_argument("--participant", help="participant name (substring, case-insensitive)")
    p.add_argument("--from", dest="date_from", help="happened on or after (2023, 2023-05, 2023-05-07)")
    p.add_argument("--to", dest="date_to", help="happened on or before")
    p.add_argument("--status", choices=list(EVENT_STATUSES))
    p.add_argument("--text", help="words that must appear in the title or summary")
    p.add_argument(
        "--limit", type=integer(1, LIST_MAX), default=100, help=f"at most this many (1-{LIST_MAX}, default 100)"
    )
    p.add_argument(
        "--offset", type=integer(0), default=0, help="skip this many (slow on a large store: prefer --after)"
    )
    p.add_argument(
        "--after", type=ROW_ID, metavar="EVENT", help="only events after this one in the order (the next page)"
    )
    p.set_defaults(handler=cmd_events)

    p = sub.add_parser("event", parents=[common], help="one event card: time, relations, weight, sources")
    p.add_argument("id", type=ROW_ID)
    p.set_defaults(handler=cmd_event)

    p = sub.add_parser("jobs", parents=[common], help="derivation jobs and their errors")
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.add_argument("--status", choices=["pending", "running", "succeeded", "failed", "skipped"])
    p.add_argument(
        "--limit", type=integer(1, LIST_MAX), default=200, help=f"at most this many (1-{LIST_MAX}, default 200)"
    )
    p.set_defaults(handler=cmd_jobs)

    p = sub.add_parser("retry", parents=[common], help="retry a failed job now (attempts reset)")
    p.add_argument("id", type=ROW_ID)
    p.set_defaults(handler=cmd_retry)


def cmd_verify(args: argparse.Namespace) -> int:
    # start-up time: `strata --help` builds this parser, so the verifier loads when it runs
    from core.services.verify import verify

    open_from_args(args)
    with progress_bar("verify", enabled=not args.json) as update:
        report = verify(args.namespace, progress=update)
    if args.json:
        print_json({**report.__dict__, "ok": report.ok})
    else:
        console.print(
            f"{report.blocks} blocks: {report.blocks_ready} ready, {report.blocks_failed} failed, "
            f"{report.blocks_waiting} waiting for derivation; {report.events} events; "
            f"{report.graph_records} graph records",
            markup=False,
        )
        for problem in report.problems:
            console.print(f"  problem: {problem}", markup=False)
        console.print("ok" if report.ok else f"{len(report.problems)} problem(s)", markup=False)
    return 0 if report.ok else 1


def register_verify(sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("verify", parents=[common], help="check the store's invariants (citations, provenance)")
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_verify)
