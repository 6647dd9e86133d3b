"""`strata import gitmemo PATH` (a ``.mem`` repository as an import batch) and `strata export --format
gitmemo DIR` (a namespace's notes as a ``.mem`` repository). Commit and undo are `strata import commit`
and `strata import undo`, as for every import."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.errors import InvalidInputError
from workbench.cli.argtypes import namespace_name
from workbench.cli.output import console, cut, err_console, open_from_args, print_json, table

STATUS_STYLE = {"active": "green", "superseded": "yellow", "withdrawn": "red"}


def print_batch(preview) -> None:
    """A gitmemo batch: one line per note version with its old commit, status, kind and date."""
    batch = preview.batch
    rows = []
    counts: dict[str, int] = {}
    for item in preview.items:
        info = item.candidate.data.get("gitmemo", {})
        status = info.get("status", "?")
        counts[status] = counts.get(status, 0) + 1
        after = info.get("superseded_by") and f" → {info['superseded_by'][:12]}" or ""
        rows.append(
            [
                item.position,
                info.get("commit", "")[:12],
                f"{info.get('write', '')}",
                status + after,
                info.get("values", {}).get("kind", ""),
                (info.get("created_at") or "")[:19],
                cut(item.candidate.title, 60),
                ", ".join(item.candidate.tags),
            ]
        )
    table(
        f"Import batch {batch.id} into {batch.namespace!r} ({batch.status}): {batch.source_system}",
        ["#", "commit", "write", "status", "kind", "date", "title", "keywords"],
        rows,
    )
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    console.print(
        f"batch {batch.id}: {batch.total} note versions from {batch.source_name} ({summary})",
        markup=False,
        highlight=False,
    )
    for warning in batch.warnings[:10]:
        err_console.print(f"warning: {warning}", markup=False, highlight=False)
    if batch.status == "ready":
        console.print(
            f"next: `strata import commit {batch.id}` writes them (undo with `strata import undo {batch.id}`)",
            markup=False,
            highlight=False,
        )


def cmd_import(args: argparse.Namespace) -> int:
    # start-up time: `strata --help` builds this parser; the service loads when the command runs
    from core.services.gitmemo import preview_gitmemo, read_repository

    repository = read_repository(args.path)  # the whole repository is checked before the store is opened
    open_from_args(args, create=True)
    preview = preview_gitmemo(args.path, args.namespace, repository=repository)
    if args.json:
        print_json(preview)
    else:
        print_batch(preview)
    return 0


def cmd_export(args: argparse.Namespace, namespace_of) -> int:
    from core.services.gitmemo import export_gitmemo

    if args.directory is None:
        raise InvalidInputError(
            "--format gitmemo writes a repository: give its directory (strata export --format gitmemo DIR)"
        )
    if args.out or args.redact:
        raise InvalidInputError("--format gitmemo takes a directory, not --out or --redact")
    open_from_args(args)
    done = export_gitmemo(namespace_of(args), args.directory)
    err_console.print(
        f"gitmemo repository written to {done.directory}: {done.notes} note versions ({done.withdrawn} "
        f"withdrawn) in {done.commits} commits, head {done.head[:12]}"
        + (f"; {done.left_out} quarantined note(s) left out" if done.left_out else ""),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    return 0


def commit_line(preview) -> str:
    batch = preview.batch
    return (
        f"committed import batch {batch.id}: {batch.imported_count} notes written from {batch.source_name} "
        f"with their history (old commit hashes read them too); undo with `strata import undo {batch.id}`"
    )


def undo_line(result) -> str:
    return (
        f"undid import batch {result.batch.id}: removed {len(result.removed_note_ids)} notes with their old ids "
        "and audit rows"
    )


def register(steps, common: argparse.ArgumentParser) -> None:
    """`strata import gitmemo` (``steps``: the subcommands of `strata import`)."""
    p = steps.add_parser(
        "gitmemo",
        parents=[common],
        help="read a gitmemo .mem repository into an import batch (writes no note until commit)",
        description="Read a gitmemo .mem repository (format 2 or legacy) with git: every note version with "
        "its date, kind, keywords, replacements and withdrawals. The batch is committed and undone like any "
        "import.",
    )
    p.add_argument("path", type=Path, metavar="PATH", help="the .mem directory")
    p.add_argument("--namespace", type=namespace_name, required=True, help="namespace the notes go to")
    p.set_defaults(handler=cmd_import)


__all__ = ["cmd_export", "cmd_import", "commit_line", "print_batch", "register", "undo_line"]
