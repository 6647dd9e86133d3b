"""The `strata` command: the TUI when run bare, subcommands for everything else.

Only `strata` / `strata ui` / `strata demo` import Textual, and only when they open
the UI, so headless commands start fast and run where no terminal UI is possible.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from core import __version__
from core.errors import StrataError
from workbench.cli.argtypes import namespace_name


def _common(json_flag: bool = True) -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--db", default=argparse.SUPPRESS, metavar="URL",
                        help="database URL (sqlite:///path or postgresql://…); default $STRATA_DB or the data dir")
    if json_flag:
        parent.add_argument("--json", action="store_true", help="print JSON instead of tables")
    return parent


def build_parser() -> argparse.ArgumentParser:
    from workbench.cli import agent, bench, events, graph, imports, memory, search

    parser = argparse.ArgumentParser(
        prog="strata", description="Strata: local-first long-term memory for AI agents."
    )
    parser.add_argument("--version", action="store_true", help="print the Strata version and exit")
    parser.add_argument("--db", default=None, metavar="URL", help="database URL (default $STRATA_DB or the data dir)")
    parser.add_argument("--namespace", type=namespace_name, default=None, help="namespace to open in the workbench")
    parser.add_argument("--theme", default=None, help="workbench theme (strata-dark, strata-light, nord, …)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _common()
    memory.register(sub, common, _common(json_flag=False))
    events.register(sub, common)
    events.register_verify(sub, common)
    graph.register(sub, common)
    search.register(sub, common)
    search.register_traces(sub, common)
    agent.register(sub, common)
    bench.register(sub, common)
    imports.register(sub, common, _common(json_flag=False))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        print(f"strata {__version__}")
        return 0
    from rich.markup import escape

    from workbench.cli.output import err_console

    handler = getattr(args, "handler", None)
    try:
        if handler is None:
            from workbench.cli.memory import run_ui

            return run_ui(args)
        code = int(handler(args) or 0)
        sys.stdout.flush()  # here, not at interpreter exit, so a reader that left is seen below
        return code
    except StrataError as exc:
        err_console.print(f"[bold red]strata: error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err_console.print("strata: interrupted")
        return 130
    except BrokenPipeError:
        if not _stdout_closed():
            raise  # another pipe (a worker process) broke: that is a real failure
        # `strata export | head`: the reader has what it wanted. Python ignores SIGPIPE, so stop as a
        # program killed by it would (what a shell reports for one, so `set -o pipefail` sees the same
        # as with other tools), and point stdout at devnull so the exit-time flush does not complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return SIGPIPE_EXIT


SIGPIPE_EXIT = 128 + 13


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader went away."""
    try:
        import select

        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() here, or stdout is no file: assume it
        return True


if __name__ == "__main__":
    sys.exit(main())
