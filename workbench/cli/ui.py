"""`strata` and `strata ui`: open the workbench.

Kept light on purpose: a command line that opens the workbench is parsed by ``parse_ui`` with the
options of these two commands only, without building the whole `strata` parser, which imports
every command's module and with them the services, numpy and the ingest rules (a quarter of a
second before the first frame). Anything else (another command, help, a mistake) goes to the
whole parser, which gives its usual answer.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from typing import Callable, Sequence

from core.errors import InvalidInputError
from workbench.cli.argtypes import namespace_name


def add_ui_options(parser: argparse.ArgumentParser) -> None:
    """The options of `strata ui` besides --db and --create (the top level has its own)."""
    parser.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    parser.add_argument("--theme", default=argparse.SUPPRESS, help="theme name (strata-dark, strata-light, nord, …)")


class _NotTheWorkbench(Exception):
    """The command line is not one that opens the workbench, or is wrong: the whole parser answers."""


class _QuietParser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise _NotTheWorkbench(message)

    def exit(self, status: int = 0, message: str | None = None):  # type: ignore[override]
        raise _NotTheWorkbench(message)


def parse_ui(
    argv: Sequence[str],
    top_options: Callable[[argparse.ArgumentParser], None],
    common: Callable[[], argparse.ArgumentParser],
) -> argparse.Namespace | None:
    """``argv`` parsed as the whole parser would, when it opens the workbench (bare `strata`, or
    `strata ui`, with their options); None for anything else. ``top_options`` adds the top level's
    options and ``common`` makes the parent parser of `ui`'s --db and --create: the same functions
    the whole parser is built with, so both read a command line alike."""
    if any(arg in ("-h", "--help") for arg in argv):  # the help lists every command
        return None
    parser = _QuietParser(prog="strata", add_help=False)
    top_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    ui = sub.add_parser("ui", parents=[common()], add_help=False)
    add_ui_options(ui)
    try:
        args = parser.parse_args(list(argv))
    except (_NotTheWorkbench, argparse.ArgumentError):
        return None
    args.handler = None if args.command is None else run_ui
    return args


def in_terminal() -> bool:
    """Whether keys come from, and the screen goes to, a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def run_ui(args: argparse.Namespace) -> int:
    if not in_terminal():
        raise InvalidInputError(
            "the workbench needs a terminal (standard input and output are not both one); "
            "run `strata` in a terminal, or use a subcommand (`strata --help`)"
        )
    ends_process = getattr(args, "ends_process", False)
    if ends_process:
        # The collector's passes over what start-up makes (modules, classes, the first view's widgets:
        # all of it lives as long as the app) cost a sixth of the first paint; the app resumes it
        # once its first view shows its data. Only when the process is the workbench's.
        gc.disable()
    url = _require_named_store(args)
    # only `strata` and `strata ui` import Textual
    from workbench.app import run_app

    code = run_app(
        db_url=url,
        namespace=getattr(args, "namespace", None),
        theme=getattr(args, "theme", None),
        ends_process=ends_process,
    )
    if ends_process:
        end_process(code)
    return code


def end_process(code: int) -> None:
    """Leave now with ``code``, once the workbench has shut down (its workers finished, the terminal
    restored, the store closed) and what Python buffers (logs, standard streams) is flushed. What is
    skipped is the interpreter's teardown of a thousand modules (a tenth of a second, more on a
    busy machine) and its wait for Textual's input thread (up to 0.2 s)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    os._exit(code)


def _require_named_store(args: argparse.Namespace) -> str:
    """The database the workbench opens. It makes the built-in default (an empty store offers the
    demo), but a database named by --db or $STRATA_DB that does not exist is refused without
    --create (it is most likely mistyped), and a remembered one that is gone is refused always."""

    # start-up time: core.store, not core.api (which loads every service); the workbench opens the store itself
    from core.store import require_existing
    from workbench.database import FROM_ENV, FROM_OPTION, choose, require_remembered

    choice = choose(getattr(args, "db", None))
    require_remembered(choice)
    if choice.source in (FROM_OPTION, FROM_ENV) and not getattr(args, "create", False):
        require_existing(choice.url)
    return choice.url
