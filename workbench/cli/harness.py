"""What a harness does, from the command line: `strata context QUESTION` (the memory a model would be
given before its next call) and `strata close THREAD` (seal a finished conversation)."""

from __future__ import annotations

import argparse

from workbench.cli.argtypes import integer, namespace_name, thread_name
from workbench.cli.output import console, cut, open_from_args, print_json, table


def cmd_context(args: argparse.Namespace) -> int:
    # start-up time, here and below: `strata --help` builds this parser, so the services load when it runs
    from core.services.context import auto_context

    open_from_args(args)
    ctx = auto_context(args.namespace, args.question, exclude_thread=args.thread, token_budget=args.budget)
    excluded = list(ctx.excluded)
    if args.json:
        print_json(
            {
                "context": ctx.text,
                "tokens": ctx.tokens,
                "budget": args.budget,
                "selected": ctx.selected,
                "excluded": excluded,
                "ledger_id": ctx.ledger_id,
            }
        )
        return 0
    console.rule(f"context for: {args.question} ({ctx.tokens} of {args.budget} estimated tokens)")
    console.print(ctx.text or "nothing relevant fits", markup=False, highlight=False)
    if excluded:
        table("Left out", ["ref", "reason"], [(e["ref"], e["reason"]) for e in excluded[:30]])
    return 0


def cmd_close(args: argparse.Namespace) -> int:
    from core.services.capture import close_thread

    open_from_args(args)
    sealed = close_thread(args.namespace, args.thread)
    if args.json:
        print_json({"thread": args.thread, "sealed_block_ids": list(sealed)})
    elif sealed:
        console.print(f"sealed block {', '.join(map(str, sealed))}: `strata derive` derives it", markup=False)
    else:
        console.print(f"nothing to seal in {cut(args.thread, 80)}: no turn is waiting", markup=False)
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "context", parents=[common], help="the memory a model would be given before its next call (token-bounded)"
    )
    p.add_argument("question")
    p.add_argument("--namespace", required=True, type=namespace_name)
    p.add_argument("--budget", type=integer(0, 20_000), default=900, help="estimated-token budget (default 900)")
    p.add_argument("--thread", type=thread_name, help="the conversation under way: its own turns are left out")
    p.set_defaults(handler=cmd_context)

    p = sub.add_parser("close", parents=[common], help="seal a finished conversation's last turns into a block")
    p.add_argument("thread", type=thread_name)
    p.add_argument("--namespace", required=True, type=namespace_name)
    p.set_defaults(handler=cmd_close)
