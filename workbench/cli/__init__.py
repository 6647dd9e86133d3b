"""The `strata` command: the TUI when run bare, subcommands for everything else.

Only `strata` / `strata ui` / `strata demo` import Textual, and only when they open
the UI, so headless commands start fast and run where no terminal UI is possible.
"""

from __future__ import annotations

import argparse
import os
import select
import sys
from typing import Sequence

from core import __version__
from core.db import DRIVER_FAILURES, store_failure
from core.errors import StrataError
from workbench.cli.argtypes import namespace_name
from workbench.cli.ui import parse_ui, run_ui


def _common(json_flag: bool = True) -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="database URL (sqlite:///path or postgresql://…); default $STRATA_DB, the remembered "
        "default (`strata db`) or the data dir",
    )
    parent.add_argument(
        "--create",
        action="store_true",
        default=argparse.SUPPRESS,
        help="make the database when it does not exist (commands that only read refuse it)",
    )
    if json_flag:
        parent.add_argument("--json", action="store_true", help="print JSON instead of tables")
    return parent


def _top_options(parser: argparse.ArgumentParser) -> None:
    """The options before the command (bare `strata` opens the workbench with them)."""
    parser.add_argument("--version", action="store_true", help="print the Strata version and exit")
    parser.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="database URL (default $STRATA_DB, the remembered default (`strata db`) or the data dir)",
    )
    parser.add_argument(
        "--create",
        action="store_true",
        help="let the workbench make a database given by --db or $STRATA_DB that does not exist",
    )
    parser.add_argument("--namespace", type=namespace_name, default=None, help="namespace to open in the workbench")
    parser.add_argument("--theme", default=None, help="workbench theme (strata-dark, strata-light, nord, …)")


def build_parser() -> argparse.ArgumentParser:
    # start-up time, here and in main(): `import workbench.cli` stays light (no numpy, Rich or
    # models); the command modules load when the parser is built
    from workbench.cli import agent, bench, database, events, governance, graph, harness, imports, memory, notes, search

    parser = argparse.ArgumentParser(prog="strata", description="Strata: local-first long-term memory for AI agents.")
    _top_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _common()
    memory.register(sub, common, _common(json_flag=False))
    database.register(sub)
    events.register(sub, common)
    events.register_verify(sub, common)
    governance.register(sub, common)
    notes.register(sub, common)
    harness.register(sub, common)
    graph.register(sub, common)
    search.register(sub, common)
    search.register_traces(sub, common)
    agent.register(sub, common)
    bench.register(sub, common)
    imports.register(sub, common, _common(json_flag=False))
    return parser


def undecodable_argument(argv: Sequence[str]) -> str | None:
    """What is wrong with the first argument that is not UTF-8 text, naming it; None when all are.

    Python hands bytes that are not UTF-8 to the program as lone surrogates (surrogateescape). Such
    text cannot be stored, printed or compared with what the store holds, so it is refused here,
    once, before argparse or any command sees it (a namespace, a query, a path alike)."""
    for index, text in enumerate(argv):
        if not isinstance(text, str):
            continue
        bad = next((i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff"), None)
        if bad is None:
            continue
        value = text
        if text.startswith("--") and "=" in text[:bad]:
            option, value = text.split("=", 1)
            bad -= len(option) + 1
        elif index > 0 and argv[index - 1].startswith("-") and not text.startswith("-"):
            option = argv[index - 1]
        else:
            option = f"argument {index + 1}"
        shown = value.encode("utf-8", "surrogateescape" if _escaped_bytes(value) else "backslashreplace")
        return (
            f"{option}: not valid UTF-8 text ({shown!r}, bad byte at position {bad}); "
            "give names, queries and paths as UTF-8"
        )
    name = os.environ.get("STRATA_DB")
    if name and any("\ud800" <= ch <= "\udfff" for ch in name):
        return "$STRATA_DB: not valid UTF-8 text; give the database URL as UTF-8"
    return None


def _escaped_bytes(text: str) -> bool:
    """Whether every surrogate in ``text`` is one surrogateescape made from a byte (U+DC80..U+DCFF)."""
    return all(not ("\ud800" <= ch <= "\udfff") or "\udc80" <= ch <= "\udcff" for ch in text)


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    problem = undecodable_argument(given)
    # `strata` and `strata ui` open the workbench without building the whole parser (start-up time)
    args = None if problem is not None else parse_ui(given, _top_options, lambda: _common(json_flag=False))
    if args is None:
        parser = build_parser()
        if problem is not None:
            # argparse's own message would print the text, which stderr cannot encode: a traceback.
            parser.exit(2, f"{parser.prog}: error: {problem}\n")
        args = parser.parse_args(argv)
    # Run as the program (no argv given), the workbench ends the process when it is quit (a fast quit)
    args.ends_process = argv is None
    if args.version:
        print(f"strata {__version__}")
        return 0
    from rich.markup import escape

    from workbench.cli.output import err_console

    handler = getattr(args, "handler", None)
    try:
        if handler is None:
            return run_ui(args)
        code = int(handler(args) or 0)
        sys.stdout.flush()  # here, not at interpreter exit, so a reader that left is seen below
        return code
    except StrataError as exc:
        err_console.print(f"[bold red]strata: error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    except _driver_failures() as exc:  # the store failed under a read: said like any other store error
        err_console.print(
            f"[bold red]strata: error:[/] {escape(str(store_failure(exc)))}", highlight=False, soft_wrap=True
        )
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


def _driver_failures() -> tuple[type[BaseException], ...]:
    # Evaluated only when an exception is on its way out: `strata --version` does not load peewee.

    return DRIVER_FAILURES


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader went away."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() here, or stdout is no file: assume it
        return True


if __name__ == "__main__":
    sys.exit(main())
