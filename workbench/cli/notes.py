"""Task-outcome notes from the command line: `strata note write|read|search|replace|delete|approve|list|history`.

A note written here is a person's (``--source user``) and stands at once; one written with ``--source
agent`` waits for `strata note approve` unless the namespace policy trusts agents."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli.argtypes import integer, namespace_name
from workbench.cli.output import console, cut, open_from_args, print_json, table


def _content(args: argparse.Namespace, *, required: bool) -> str | None:
    """--content, or the text of --content-file (``-`` reads standard input)."""
    # start-up time, here and below: `strata --help` builds this parser, so the notes service loads when a
    # note command runs
    from core.errors import InvalidInputError

    if args.content_file is None:
        if required and args.content is None:
            raise InvalidInputError("give the note's content with --content TEXT or --content-file PATH ('-': stdin)")
        return args.content
    if args.content_file == "-":
        return sys.stdin.read()
    path = Path(args.content_file)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"--content-file {path}: cannot read it as UTF-8 text ({exc})") from exc


def _keywords(args: argparse.Namespace) -> list[str] | None:
    """Each --keyword as given; a comma inside one splits it (``-k pool,timeout``)."""
    if not args.keyword:
        return None
    return [part.strip() for given in args.keyword for part in given.split(",") if part.strip()]


def _print_note(view, *, links: bool = False) -> None:
    line = f"note {view.id} · {view.kind} · {view.status} · {view.source} by {view.actor} · {view.created_at[:19]}"
    console.print(line, markup=False, highlight=False)
    console.print(f"  {view.title}", markup=False, highlight=False)
    console.print(f"  keywords: {', '.join(view.keywords)}", markup=False, highlight=False)
    for label, value in (
        ("supersedes", view.supersedes),
        ("superseded by", view.superseded_by),
        ("reason", view.reason),
        ("branch", view.branch),
        ("commit", view.commit),
    ):
        if value:
            console.print(f"  {label}: {cut(value, 300)}", markup=False, highlight=False)
    if view.related_paths:
        console.print(f"  paths: {', '.join(view.related_paths)}", markup=False, highlight=False)
    console.print("", markup=False)
    console.print(view.summary, markup=False, highlight=False)
    console.print("", markup=False)
    console.print(view.content, markup=False, highlight=False)
    if links and view.links is not None:
        console.print("", markup=False)
        for link in view.links:
            target = f" → {link.resolved_id}" if link.resolved_id and link.resolved_id != link.link else ""
            about = f": {link.title}" if link.title else ""
            error = f" ({link.error})" if link.error else ""
            console.print(f"  [[{link.link}]] {link.state}{target}{about}{error}", markup=False, highlight=False)


def _said(view, json_out: bool, verb: str) -> int:
    if json_out:
        print_json(view)
    else:
        extra = " (waits for `strata note approve`)" if view.status == "quarantined" else ""
        console.print(f"note {view.id} {verb}: {view.status}{extra}", markup=False, highlight=False)
    return 0


def cmd_write(args: argparse.Namespace) -> int:
    from core.services.notes import write_note

    content = _content(args, required=True)
    open_from_args(args, create=True)
    view = write_note(
        args.namespace,
        title=args.title,
        summary=args.summary,
        keywords=_keywords(args) or [],
        content=content,
        kind=args.kind,
        branch=args.branch,
        commit=args.commit,
        related_branches=args.related_branch or None,
        related_paths=args.path or None,
        source=args.source,
        actor=args.actor or _actor(args.source),
    )
    return _said(view, args.json, "written")


def cmd_replace(args: argparse.Namespace) -> int:
    from core.services.notes import replace_note

    content = _content(args, required=False)
    open_from_args(args)
    view = replace_note(
        args.id,
        title=args.title,
        summary=args.summary,
        keywords=_keywords(args),
        content=content,
        kind=args.kind,
        branch=args.branch,
        commit=args.commit,
        related_branches=args.related_branch or None,
        related_paths=args.path or None,
        reason=args.reason,
        source=args.source,
        actor=args.actor or _actor(args.source),
        namespace=args.namespace,
    )
    return _said(view, args.json, f"replaces {view.supersedes}")


def _actor(source: str) -> str | None:
    from core.services.governance import default_actor

    return default_actor() if source == "user" else None


def cmd_read(args: argparse.Namespace) -> int:
    from core.services.notes import read_note

    open_from_args(args)
    view = read_note(args.id, args.expand, namespace=args.namespace)
    if args.json:
        print_json(view)
    else:
        _print_note(view, links=args.expand)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from core.services.notes import search_notes

    open_from_args(args)
    page = search_notes(args.namespace, args.keywords, args.mode, args.limit, skip=args.skip, snapshot=args.snapshot)
    if args.json:
        print_json(page)
        return 0
    if not page.hits:
        console.print(f"no active note matches {', '.join(page.keywords)}", markup=False, highlight=False)
        return 0
    rows = [
        (h.id[:12], f"{h.score:.2f}", h.kind, h.created_at[:10], cut(h.title, 60), ", ".join(h.matched_keywords))
        for h in page.hits
    ]
    shown = f"{page.skip + 1}-{page.skip + len(page.hits)} of {page.total}"
    table(
        f"Notes in {page.namespace} ({page.mode}; {shown})", ["id", "score", "kind", "date", "title", "matched"], rows
    )
    if page.next_skip is not None:
        console.print(f"next page: --skip {page.next_skip} --snapshot {page.snapshot}", markup=False, highlight=False)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from core.services.governance import default_actor
    from core.services.notes import delete_note

    open_from_args(args)
    view = delete_note(args.id, reason=args.reason, actor=args.actor or default_actor(), namespace=args.namespace)
    return _said(view, args.json, "withdrawn")


def cmd_approve(args: argparse.Namespace) -> int:
    from core.services.governance import default_actor
    from core.services.notes import approve_note

    open_from_args(args)
    view = approve_note(args.id, actor=args.actor or default_actor(), reason=args.reason, namespace=args.namespace)
    return _said(view, args.json, "approved")


def _brief_table(title: str, notes) -> None:
    table(
        title,
        ["id", "kind", "status", "date", "title", "keywords", "lineage"],
        [
            (
                n.id[:12],
                n.kind,
                n.status,
                n.created_at[:10],
                cut(n.title, 60),
                cut(", ".join(n.keywords), 40),
                (f"after {n.supersedes[:12]}" if n.supersedes else "")
                + (f" then {n.superseded_by[:12]}" if n.superseded_by else ""),
            )
            for n in notes
        ],
    )


def cmd_list(args: argparse.Namespace) -> int:
    from core.services.notes import list_notes

    open_from_args(args)
    notes = list_notes(args.namespace, status=args.status, kind=args.kind, limit=args.limit)
    if args.json:
        print_json(notes)
    elif not notes:
        console.print(f"no notes in {args.namespace}", markup=False, highlight=False)
    else:
        _brief_table(f"Notes in {args.namespace}, newest first", notes)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from core.services.notes import note_history

    open_from_args(args)
    versions = note_history(args.id, namespace=args.namespace)
    if args.json:
        print_json(versions)
    else:
        _brief_table("Every version, oldest first", versions)
    return 0


def _fields(p: argparse.ArgumentParser, *, required: bool) -> None:
    from core.vocab import NOTE_KINDS, RECORD_SOURCES

    p.add_argument("--title", required=required, help="one line, at most 200 characters")
    p.add_argument("--summary", required=required, help="what holds now, at most 4000 characters")
    p.add_argument(
        "-k",
        "--keyword",
        action="append",
        metavar="WORD",
        help="2-12 keywords (repeatable, or comma-separated); words not already in the title or summary help most",
    )
    p.add_argument("--content", help="the outcome in full (at most 1 MiB)")
    p.add_argument("--content-file", metavar="PATH", help="read the content from a file ('-': standard input)")
    p.add_argument("--kind", choices=NOTE_KINDS, default="task" if required else None)
    p.add_argument("--branch", help="the code branch the work was on")
    p.add_argument("--commit", help="the commit it concerns (7-64 hex characters)")
    p.add_argument("--related-branch", action="append", metavar="NAME", help="another branch (repeatable)")
    p.add_argument("--path", action="append", metavar="PATH", help="a project-relative path it concerns (repeatable)")
    p.add_argument(
        "--source",
        choices=RECORD_SOURCES,
        default="user",
        help="who writes it: user (a person, stands at once) or agent/tool/import (waits unless trusted)",
    )
    p.add_argument("--actor", help="who, by name (default for a person: $STRATA_ACTOR or the login name)")


def register(sub, common: argparse.ArgumentParser) -> None:
    from core.vocab import NOTE_KINDS, NOTE_SCORING, NOTE_STATUSES

    note = sub.add_parser("note", help="task-outcome notes and topic pages: write, read, search, replace, delete")
    steps = note.add_subparsers(dest="step", required=True)

    p = steps.add_parser("write", parents=[common], help="write a note (refused if a standing note says the same)")
    p.add_argument("--namespace", required=True, type=namespace_name)
    _fields(p, required=True)
    p.set_defaults(handler=cmd_write)

    p = steps.add_parser("read", parents=[common], help="one note by id or a unique prefix (any version)")
    p.add_argument("id", help="note id or a prefix of 7+ hex characters")
    p.add_argument("--namespace", type=namespace_name, help="look only in this namespace")
    p.add_argument("--expand", action="store_true", help="resolve its [[id]] links one hop")
    p.set_defaults(handler=cmd_read)

    p = steps.add_parser("search", parents=[common], help="active notes matching any keyword, best first")
    p.add_argument("keywords", nargs="+", metavar="KEYWORD", help="1-15 keywords (a quoted phrase is one)")
    p.add_argument("--namespace", required=True, type=namespace_name)
    p.add_argument("--mode", choices=NOTE_SCORING, default="weighted", help="rank by rarity weights or by count")
    p.add_argument("--limit", type=integer(1, 100), default=20, help="page size (20)")
    p.add_argument("--skip", type=integer(0), default=0, help="hits to skip (the next page's start)")
    p.add_argument("--snapshot", help="the token the first page printed; a stale one is refused")
    p.set_defaults(handler=cmd_search)

    p = steps.add_parser("replace", parents=[common], help="a new version of an active note; fields left out are kept")
    p.add_argument("id", help="the active note's id or prefix")
    p.add_argument("--namespace", type=namespace_name, help="look only in this namespace")
    p.add_argument("--reason", help="why it changed")
    _fields(p, required=False)
    p.set_defaults(handler=cmd_replace)

    p = steps.add_parser("delete", parents=[common], help="withdraw a note (it stays readable by id)")
    p.add_argument("id")
    p.add_argument("--reason", required=True)
    p.add_argument("--namespace", type=namespace_name, help="look only in this namespace")
    p.add_argument("--actor", help="who (default: $STRATA_ACTOR or the login name)")
    p.set_defaults(handler=cmd_delete)

    p = steps.add_parser("approve", parents=[common], help="let a quarantined note stand (a replacement supersedes)")
    p.add_argument("id")
    p.add_argument("--reason")
    p.add_argument("--namespace", type=namespace_name, help="look only in this namespace")
    p.add_argument("--actor", help="who (default: $STRATA_ACTOR or the login name)")
    p.set_defaults(handler=cmd_approve)

    p = steps.add_parser("list", parents=[common], help="a namespace's notes, newest first")
    p.add_argument("--namespace", required=True, type=namespace_name)
    p.add_argument("--status", choices=NOTE_STATUSES)
    p.add_argument("--kind", choices=NOTE_KINDS)
    p.add_argument("--limit", type=integer(1, 10_000), default=200)
    p.set_defaults(handler=cmd_list)

    p = steps.add_parser("history", parents=[common], help="every version of a note's line, oldest first")
    p.add_argument("id")
    p.add_argument("--namespace", type=namespace_name, help="look only in this namespace")
    p.set_defaults(handler=cmd_history)
