"""Printing for the CLI: JSON for machines, rich tables and progress for people.

Everything printed passes through ``core.redact`` on its way out: every string the two consoles
render (printed text, table cells, rule titles, error lines) and every JSON value. A command that
cuts text to a width uses ``cut``, which masks before it cuts. Only ``strata export`` writes
stored text as it is (unless ``--redact``): it is the user's backup.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from core.dto import to_plain
from core.errors import InvalidInputError
from core.redact import redact_text, redact_value


class RedactingConsole(Console):
    """A console that masks secrets in every string it renders. ``render_str`` is the one
    method print, table cells and rules all turn a string into text through."""

    def render_str(self, text: str, **kwargs: Any):
        # A marker is upper case, so markup leaves it as text (see core.redact.MARKER_PREFIX).
        return super().render_str(redact_text(text), **kwargs)


console = RedactingConsole()
err_console = RedactingConsole(stderr=True)


def cut(text: str | None, limit: int) -> str:
    """``text`` masked, then cut to ``limit`` characters: cut first, a token loses the tail that
    made it recognisable and its prefix would be printed."""
    return redact_text(text or "")[:limit]


def open_from_args(args: Any, *, create: bool = False):
    """Open the store named by ``--db`` (else $STRATA_DB, the remembered default or the built-in
    one: ``workbench.database.choose``) for a command; an older store's upgrade is announced on
    stderr (a backfill takes a while on a large store).

    Only commands that store something pass ``create`` (ingest, an import preview); the others
    refuse a database that does not exist unless ``--create`` is given, so a mistyped --db is an
    error rather than a new empty store that answers "nothing found". A remembered database that
    is gone is refused even then; one that is there and written to is named on stderr, since
    nothing on the command line says where the memory goes."""
    # start-up time: core.api (migrations, every service) loads when a command opens the store
    from core.api import open_store
    from core.db import display_url
    from workbench.database import FROM_REMEMBERED, choose, require_remembered

    def upgrading(done: int, total: int, label: str) -> None:
        if done < total:
            err_console.print(f"upgrading the store: {label} ({done + 1}/{total})", markup=False)

    choice = choose(getattr(args, "db", None))
    require_remembered(choice)
    if create and choice.source == FROM_REMEMBERED:
        err_console.print(
            f"database: {display_url(choice.url)} "
            "(the remembered default; --db or `strata db use URL` chooses another)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return open_store(choice.url, progress=upgrading, create=create or bool(getattr(args, "create", False)))


def check_output(path: str | Path | None, option: str) -> None:
    """Refuse an output file that cannot be written before the work that fills it runs: an export
    or a benchmark can take minutes, and its result would be lost at the end."""

    if path is None:
        return
    real = Path(os.path.realpath(path))  # a link is followed: the file it names is what gets written
    if real.is_dir():
        raise InvalidInputError(f"{option} {path}: is a directory; give a file name")
    if not real.parent.is_dir():
        raise InvalidInputError(f"{option} {path}: directory {real.parent} does not exist")
    # A regular file is replaced by one written beside it; a FIFO or device is written in place.
    writable = os.access(real, os.W_OK) if real.exists() and not real.is_file() else os.access(real.parent, os.W_OK)
    if not writable:
        raise InvalidInputError(f"{option} {path}: permission denied")


def check_outputs(args: Any) -> None:
    """Every file a benchmark writes is checked before it runs: a run takes minutes to hours, and a
    report path that cannot be written would lose its results at the end."""
    check_output(getattr(args, "json_out", None), "--json-out")
    check_output(getattr(args, "svg", None), "--svg")


@contextmanager
def output_file(path: str | Path, option: str) -> Iterator[TextIO]:
    """A text stream that ends up in ``path``. A regular file (or the file a link names: the link
    stays) is replaced only once the writing is complete, so a failed run leaves the previous file
    as it was. A FIFO or a device is written directly: renaming over it would replace it instead of
    writing to it. An OS error (a full disk, a reader that went away) is one error line naming
    ``option``."""

    real = Path(os.path.realpath(path))
    try:
        if real.exists() and not real.is_file():
            with real.open("w", encoding="utf-8") as out:
                yield out
            return
        partial = real.with_name(f".{real.name}.partial")
        try:
            with partial.open("w", encoding="utf-8") as out:
                yield out
            if real.exists():
                shutil.copymode(real, partial)  # replacing a file keeps who may read it
            os.replace(partial, real)
        finally:
            partial.unlink(missing_ok=True)
    except OSError as exc:
        raise InvalidInputError(f"{option} {path}: cannot write: {exc.strerror or exc}") from exc


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(redact_value(to_plain(value)), ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def write_report(report: dict, args: Any) -> None:
    """A benchmark's report: to ``--json-out`` (written whole or not at all) and, with ``--json``,
    to stdout."""
    if getattr(args, "json_out", None):
        with output_file(args.json_out, "--json-out") as out:
            out.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
        err_console.print(f"report written to {args.json_out}", markup=False)
    if args.json:
        print_json(report)


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> None:
    out = Table(title=title, show_lines=False, header_style="bold")
    for column in columns:
        out.add_column(column, overflow="fold")
    for row in rows:
        out.add_row(*["" if v is None else str(v) for v in row])
    console.print(out)


@contextmanager
def progress_bar(description: str, enabled: bool = True) -> Iterator[Callable[[int, int, str], None]]:
    """A rich progress bar on stderr; yields a ``(done, total, label)`` callback."""
    if not enabled:
        yield lambda done, total, label: None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[label]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    ) as bar:
        task = bar.add_task(description, total=None, label="")

        def update(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, label=label)

        yield update
