"""Capture, block and derivation commands: ingest, stats, blocks, block, expand-block,
derive, namespaces, demo and ui."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from core.db import sqlite_path
from core.ingest import FORMATS, IngestReport, check_stored_receipts, parse, write_units
from core.models import Namespace
from core.search.index import prepare_search
from core.services.jobs import MAX_ATTEMPTS, is_dead, list_jobs
from core.services.spaces import list_namespaces
from core.timeutil import parse_tz
from workbench.cli.argtypes import ROW_ID, expansion_target, integer, level, namespace_name, thread_name
from workbench.cli.output import console, err_console, open_from_args, print_json, progress_bar, table
from workbench.cli.ui import add_ui_options, in_terminal, run_ui

PROGRESS_LINES = 20_000  # JSON Lines from which an ingest shows progress (a few seconds of writing)


def cmd_ingest(args: argparse.Namespace) -> int:

    tz = parse_tz(args.tz) if args.tz else None
    # Validate the whole file before opening the store: a bad file changes nothing.
    units = parse(args.format, args.path, namespace=args.namespace, limit=args.limit, tz=tz)
    open_from_args(args, create=True)
    report = IngestReport(format=args.format, path=str(args.path))
    check_stored_receipts(units, report)  # before the progress bar: a refusal is the only line printed
    # A JSON Lines file is one unit, counted in lines: a long one is written for minutes.
    lines = sum(batch.size for batch in units[0].threads) if units[0].receipt_id is None else 0
    shown = not args.json and (len(units) > 1 or lines >= PROGRESS_LINES)
    with progress_bar(f"ingest {args.format}", enabled=shown) as update:
        write_units(units, report, update, checked=True)
    if report.messages:
        _prepare_search(report.namespaces, quiet=args.json)
    if args.json:
        print_json(report)
    else:
        console.print(
            f"ingested {report.messages} messages in {report.units} unit(s) "
            f"({report.units_skipped} already stored), sealed {report.blocks_sealed} blocks "
            f"into {len(report.namespaces)} namespace(s)"
        )
    return 0


def _prepare_search(namespaces: list[str], *, quiet: bool) -> None:

    ids = [n.id for n in Namespace.select(Namespace.id).where(Namespace.name.in_(namespaces))]
    if quiet:
        prepare_search(ids)
        return
    with console.status("preparing the search index"):
        prepare_search(ids)


def cmd_stats(args: argparse.Namespace) -> int:
    # start-up time, here and below: `strata --help` builds every command's parser, so a service
    # loads when its command runs
    from core.services.stats import stats

    from core.db import display_url

    store = open_from_args(args)
    result = stats(args.namespace)
    if args.json:
        print_json(result)
        return 0
    console.print(f"database: {display_url(store.url)}", markup=False, highlight=False, soft_wrap=True)
    rows = [
        ["namespaces", result.namespaces],
        ["threads", result.threads],
        ["messages", result.messages],
        ["blocks pending", result.blocks_pending],
        ["blocks ready", result.blocks_ready],
        ["open-tail turns", result.open_tail_turns],
    ] + [[f"jobs {status}", n] for status, n in result.jobs.items()]
    table(f"Strata stats ({args.namespace or 'all namespaces'})", ["what", "count"], rows)
    _tail_hint(args.namespace)
    return 0


def _tail_hint(namespace: str | None) -> None:
    """Why turns are not derived yet: a thread's tail waits for a full block until it is closed."""
    from core.services.blocks import open_tails

    for tail in open_tails(namespace, limit=5):
        console.print(
            f"{tail.thread}: {tail.turns} turn(s) waiting for a block of {tail.block_size}; "
            f"`strata close {tail.thread} --namespace {tail.namespace}` seals them",
            markup=False,
            highlight=False,
        )


def _level_tokens(tokens: dict[int, int]) -> str:
    """Tokens per level as "L0/L1/L2/L3/L4/L5"; '-' for a level not derived yet."""
    return "/".join(str(tokens.get(level, "-")) for level in range(6))


def cmd_blocks(args: argparse.Namespace) -> int:
    from core.services.blocks import list_blocks

    open_from_args(args)
    rows = list_blocks(
        args.namespace, args.thread, status=args.status, limit=args.limit or None, after_sequence=args.after
    )
    if args.json:
        print_json(rows)
        return 0
    table(
        "Blocks",
        ["id", "namespace", "thread", "turns", "status", "level", "% of L5", "tokens L0/L1/L2/L3/L4/L5", "title"],
        [
            [
                b.id,
                b.namespace,
                b.thread,
                f"{b.start_turn}-{b.end_turn}",
                b.status,
                "-" if b.current_level is None else f"L{b.current_level}",
                "-" if b.current_level is None else f"{100 * b.tokens.get(b.current_level, 0) // max(1, b.tokens[5])}%",
                _level_tokens(b.tokens),
                b.title or "",
            ]
            for b in rows
        ],
    )
    if args.limit and len(rows) == args.limit and len({b.namespace for b in rows}) == 1:
        # A million messages make ~30k blocks: a page at a time, by position in the namespace.
        err_console.print(f"first {len(rows)} blocks shown; the next ones: --after {rows[-1].sequence}", markup=False)
    return 0


def _print_view(view, as_json: bool) -> None:
    if as_json:
        print_json(view)
        return
    age = "" if view.age is None else f", age {view.age}"
    console.rule(
        f"block {view.id} · {view.thread} · turns {view.start_turn}-{view.end_turn} · {view.label} ({view.status}{age})"
    )
    console.print(view.content, markup=False, highlight=False)


def cmd_block(args: argparse.Namespace) -> int:
    from core.services.blocks import render_block

    open_from_args(args)
    _print_view(render_block(args.id, args.level), args.json)
    return 0


def cmd_expand_block(args: argparse.Namespace) -> int:
    from core.services.blocks import expand_block

    open_from_args(args)
    _print_view(expand_block(args.id, args.level, by="user"), args.json)
    return 0


def cmd_derive(args: argparse.Namespace) -> int:
    from core.services.derive import run_pending
    from core.services.derive_workers import run_workers

    store = open_from_args(args)
    with progress_bar("derive", enabled=not args.json) as update:
        if args.workers > 1:
            report = run_workers(
                store.url, args.namespace, workers=args.workers, provider=args.provider, progress=update
            )
        else:
            report = run_pending(args.namespace, provider=args.provider, progress=update)
    if args.json:
        print_json(report)
    else:
        retried = f"; {report.retried} failed job(s) tried again" if report.retried else ""
        console.print(
            f"ran {report.processed} jobs: {report.succeeded} succeeded, {report.skipped} skipped, "
            f"{report.failed} failed; {report.blocks_ready} blocks ready in {report.seconds:.1f}s{retried}"
        )
        for error in report.errors[:20]:
            err_console.print(f"  {error}", markup=False)
        if not report.processed:
            _tail_hint(args.namespace)
        if report.blocked:
            err_console.print(
                f"stopped by the cost preflight: {report.blocked} (see `strata ledger --kind "
                "preflight`; budgets are in the namespace policy)",
                markup=False,
            )
    still = _still_failed(args.namespace)
    if still and not args.json:
        for line in still[:20]:
            err_console.print(line, markup=False, highlight=False, soft_wrap=True)
        if len(still) > 20:
            err_console.print(f"… and {len(still) - 20} more: `strata jobs --status failed`", markup=False)
    # A script running derive must see a job it could not finish (a retry that later succeeded is no failure).
    return 1 if still or report.left_failed or report.blocked else 0


def _still_failed(namespace: str | None) -> list[str]:
    """One line per job left failed, saying how it is retried: a passing failure (network, timeout,
    a killed process) by running `strata derive` again, one that failed for good by `strata retry`."""

    lines = []
    for job in list_jobs(namespace, status="failed", limit=1000):
        where = f", block {job.block_id}" if job.block_id else ""
        if is_dead(job):
            how = f"failed for good: `strata retry {job.id}` after fixing the cause"
        elif job.attempts < MAX_ATTEMPTS:
            how = "tried again by the next `strata derive`"
        else:
            how = "failed for a passing reason: the next `strata derive` tries it again"
        lines.append(f"job {job.id} ({job.kind}{where}) still failed ({how}): {job.last_error or 'no message'}")
    return lines


def cmd_namespaces(args: argparse.Namespace) -> int:

    open_from_args(args)
    rows = list_namespaces()
    if args.json:
        print_json(rows)
        return 0
    table(
        "Namespaces",
        ["name", "threads", "messages", "turns", "block size", "λ", "revision"],
        [
            [n.name, n.threads, n.messages, n.current_turn, n.block_turn_size, n.block_decay_lambda, n.revision]
            for n in rows
        ],
    )
    return 0


def demo_db_path() -> Path:
    from workbench.database import demo_db_path

    return demo_db_path()


def cmd_demo(args: argparse.Namespace) -> int:
    from core.db import ENV_VAR, display_url
    from core.demo import build_demo, check_replaceable, check_server_replaceable
    from workbench.database import remember, shell_lines

    url = getattr(args, "db", None) or f"sqlite:///{demo_db_path()}"
    path = sqlite_path(url)
    if path is not None:
        check_replaceable(path)  # before the progress bar, so a refusal is the only line printed
    else:
        check_server_replaceable(url)
    with progress_bar("demo", enabled=True) as update:
        result = build_demo(url, progress=update)
    if result.beside is not None:
        # The earlier demo is open in a workbench: it was left alone and the new one made beside it.
        url = f"sqlite:///{result.path}"
        err_console.print(
            f"{result.beside} is open in another program (a workbench?), so it was left as it was; "
            f"the new demo is {result.path}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    url = remember(url)  # the demo is what `strata` opens from now on, until another is chosen
    say = {"markup": False, "highlight": False, "soft_wrap": True}
    console.print(
        f"demo database: {result.path}\n"
        f"  {result.messages} messages in {result.threads} threads, {result.blocks_ready} blocks ready, "
        f"{result.blocks_pending} pending, {result.open_tail_turns} open-tail turns\n"
        "`strata` now opens it by default (`strata db use URL` chooses another database, "
        "`strata db forget` goes back to the built-in one)",
        **say,
    )
    shadow = os.environ.get(ENV_VAR)
    if shadow and shadow != url:
        err_console.print(
            f"${ENV_VAR} is set here ({display_url(shadow)}) and comes before the remembered default: "
            f"`unset {ENV_VAR}` for `strata` to open the demo",
            **say,
        )
    if args.no_ui:
        return 0
    if not in_terminal():
        # Run from a script, CI or an agent's tool: the memory is built, and a workbench with no
        # terminal would draw into a pipe and wait forever for keys. What is printed runs as it is
        # from a fresh shell, where this environment is not active and `strata` may not be on PATH.
        lines = "\n".join(f"  {line}" for line in shell_lines(url))
        console.print(
            f"The workbench needs a terminal, so it was not opened here. To open the demo, run in a terminal:\n{lines}",
            **say,
        )
        return 0
    args.db = url
    args.namespace = result.namespace
    return run_ui(args)


def register(sub, common: argparse.ArgumentParser, common_no_json: argparse.ArgumentParser) -> None:

    p = sub.add_parser(
        "ingest",
        parents=[common],
        help="store a conversation file (locomo, longmemeval, jsonl)",
        description="Store a conversation file. The whole file is validated first; "
        "a second run of the same file adds nothing.",
    )
    p.add_argument("format", metavar="FORMAT", help=f"one of: {', '.join(FORMATS)}")
    p.add_argument("path", type=Path, metavar="PATH")
    p.add_argument(
        "--namespace",
        type=namespace_name,
        default=argparse.SUPPRESS,
        help="namespace to store into (default: per conversation/question, or 'default')",
    )
    p.add_argument("--limit", type=integer(1), help="only the first N conversations/questions/lines")
    p.add_argument("--tz", help="offset for timestamps that have none (UTC, +02:00, Europe/Paris); default UTC")
    p.set_defaults(handler=cmd_ingest)

    p = sub.add_parser("stats", parents=[common], help="counts of messages, blocks, turns and jobs")
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_stats)

    p = sub.add_parser("blocks", parents=[common], help="list blocks with their level and size per level")
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.add_argument("--thread", type=thread_name)
    p.add_argument("--status", choices=["pending", "ready"])
    p.add_argument("--limit", type=integer(0), default=200, help="at most this many blocks (default 200; 0: all)")
    p.add_argument(
        "--after",
        type=integer(0),
        default=0,
        metavar="SEQUENCE",
        help="only blocks after this position in their namespace (the next page)",
    )
    p.set_defaults(handler=cmd_blocks)

    p = sub.add_parser("block", parents=[common], help="show one block rendered at a level")
    p.add_argument("id", type=ROW_ID)
    p.add_argument("--level", type=level, help="0..5, L0..L5 or raw (default: its current decayed level)")
    p.set_defaults(handler=cmd_block)

    p = sub.add_parser("expand-block", parents=[common], help="lift a ready block to a deeper level (as a user)")
    p.add_argument("id", type=ROW_ID)
    p.add_argument(
        "--level",
        type=expansion_target,
        required=True,
        help="next, raw, L0..L5 or 0..5; never shallower than the block is shown now",
    )
    p.set_defaults(handler=cmd_expand_block)

    p = sub.add_parser("derive", parents=[common], help="run pending derivation jobs with progress")
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.add_argument("--provider", default="offline", help="model provider (default: offline)")
    p.add_argument(
        "--workers",
        type=integer(1, 64),
        default=1,
        metavar="N",
        help="worker processes (default 1); any number derives the same memory",
    )
    p.set_defaults(handler=cmd_derive)

    p = sub.add_parser("namespaces", parents=[common], help="list namespaces")
    p.set_defaults(handler=cmd_namespaces)

    p = sub.add_parser(
        "demo",
        help="build the demo database and open the workbench",
        description="Rebuild the demo database from the bundled sample conversation, derive it and "
        "open the workbench; outside a terminal, print the commands that open it from a new shell. "
        "The demo becomes the remembered default that `strata` opens (see `strata db`). "
        "The database is demo.db in the data dir, or --db; never "
        "$STRATA_DB, since the build replaces the file. A file that is not an earlier "
        "demo database (a Strata database holding only the 'demo' namespace) is refused "
        "and left as it was. An earlier demo that another program (a workbench) has open "
        "is not replaced: the new one is built beside it as demo-<time>.db.",
    )
    # Not the shared --db: its default is $STRATA_DB, which the demo must never rebuild.
    p.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        metavar="URL",
        help=f"database to (re)build (default {demo_db_path()}; $STRATA_DB is not used)",
    )
    p.add_argument("--no-ui", action="store_true", help="only build the demo database")
    p.set_defaults(handler=cmd_demo)

    p = sub.add_parser("ui", parents=[common_no_json], help="open the workbench (same as bare `strata`)")
    add_ui_options(p)
    p.set_defaults(handler=run_ui)
