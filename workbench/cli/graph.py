"""Knowledge-graph commands: graph (list nodes) and node (one node's effective view)."""

from __future__ import annotations

import argparse

from core.db import LIST_MAX
from core.services.graph_endings import describe
from core.services.graph_vocab import render_value
from core.vocab import NODE_TYPES
from workbench.cli.argtypes import integer, namespace_name
from workbench.cli.output import console, open_from_args, print_json, table


def cmd_graph(args: argparse.Namespace) -> int:
    # start-up time, here and below: `strata --help` builds every command's parser, so a service
    # loads when its command runs
    from core.services.graph import list_nodes

    open_from_args(args)
    rows = list_nodes(getattr(args, "namespace", None), type=args.type, query=args.query, limit=args.limit)
    if args.json:
        print_json(rows)
        return 0
    table(
        "Graph nodes",
        ["id", "type", "name", "facts", "edges", "events"],
        [
            [
                n.id,
                n.type,
                n.name + (f" ({', '.join(n.aliases)})" if n.aliases else ""),
                n.facts,
                n.edges,
                n.events_text,
            ]
            for n in rows
        ],
    )
    return 0


def _value(value) -> str:

    return render_value(value)


def _ids(ids) -> str:
    return ", ".join(str(i) for i in ids)


def cmd_node(args: argparse.Namespace) -> int:
    from core.services.graph import find_node, node_view

    open_from_args(args)
    view = node_view(find_node(args.node, getattr(args, "namespace", None)))
    if args.json:
        print_json(view)
        return 0
    console.rule(f"node {view.id} · {view.type} · {view.name} ({view.status})")
    if view.aliases:
        console.print(f"aliases: {', '.join(view.aliases)}", markup=False, highlight=False)
    if view.tags:
        console.print(f"tags: {', '.join(view.tags)}", markup=False, highlight=False)
    table(
        "Current facts",
        ["key", "value", "status", "since", "events"],
        [[f.key, _value(f.value), f.status, f.valid_from, _ids(f.source_event_ids)] for f in view.current_facts],
    )
    if view.historical_facts:
        table(
            "Historical facts",
            ["key", "value", "from", "to", "ended by", "events"],
            [
                [f.key, _value(f.value), f.valid_from, f.valid_to, describe(f.ended_by), _ids(f.source_event_ids)]
                for f in view.historical_facts
            ],
        )
    edges = [("→", e) for e in view.edges_out] + [("←", e) for e in view.edges_in]
    table(
        "Edges",
        ["dir", "relation", "node", "state", "events"],
        [
            [
                arrow,
                e.relation,
                f"{e.other_name} ({e.other_type} {e.other_id})",
                "current"
                if e.current
                else " ".join(filter(None, [f"historical (until {e.valid_to or '?'})", describe(e.ended_by)])),
                _ids(e.source_event_ids),
            ]
            for arrow, e in edges
        ],
    )
    table(
        "Supporting events",
        ["id", "status", "happened", "title"],
        [[e.id, e.status, e.happened_start or "", e.title] for e in view.events],
    )
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:

    p = sub.add_parser(
        "graph",
        parents=[common],
        help="list knowledge-graph nodes with visible evidence",
        description="List graph nodes that still cite visible events, best supported first.",
    )
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.add_argument("--type", choices=NODE_TYPES, help="only nodes of this type")
    p.add_argument("--query", help="case-insensitive substring of the name or an alias")
    p.add_argument(
        "--limit", type=integer(1, LIST_MAX), default=200, help=f"at most this many nodes (1-{LIST_MAX}, default 200)"
    )
    p.set_defaults(handler=cmd_graph)

    p = sub.add_parser("node", parents=[common], help="show one graph node: facts, edges and supporting events")
    p.add_argument("node", metavar="NODE", help="the node's id, or its name or an alias (any case)")
    p.add_argument(
        "--namespace", type=namespace_name, default=argparse.SUPPRESS, help="where to look a name up (default: all)"
    )
    p.set_defaults(handler=cmd_node)
