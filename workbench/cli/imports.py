"""`strata import …` (preview, resume, decide, reset, commit, list, show, undo, prompt), `strata export`
and `strata bench import`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.markup import escape

from rich.table import Table

from core.bench.imports import PEOPLE, run_import_bench
from core.db import LIST_MAX
from core.errors import InvalidInputError
from core.imports.formats import FORMATS, MAX_CANDIDATES, ImportFormatError, format_for_path, read_import_file
from core.models import Namespace
from core.providers import get_provider
from core.providers.usage import describe
from core.services import export as exportsvc
from core.services.export import EXPORT_FORMATS
from core.services.import_batches import DEFAULT_THRESHOLD, DEFAULT_TOP_K, STATUSES, get_batch, list_batches
from core.services.spaces import DEFAULT_NAMESPACE, get_namespace, list_namespaces
from core.vocab import IMPORT_ACTIONS
from workbench.cli import gitmemo
from workbench.cli.argtypes import ROW_ID, float_in, integer, namespace_name
from workbench.cli.output import (
    check_output,
    check_outputs,
    console,
    err_console,
    open_from_args,
    output_file,
    print_json,
    progress_bar,
    table,
    write_report,
)

ACTION_STYLE = {"add": "green", "merge": "cyan", "supersede": "yellow", "conflict": "red", "ignore": "dim"}


def _namespace(args: argparse.Namespace) -> str:
    """The namespace named by --namespace; without it the only namespace there is (or 'default')."""

    chosen = getattr(args, "namespace", None)
    if chosen is not None:  # an empty one is refused where it is used, not replaced by the only one
        return chosen
    names = [n.name for n in list_namespaces()]
    if len(names) > 1:
        raise InvalidInputError(f"several namespaces exist ({', '.join(names)}); pass --namespace")
    return names[0] if names else DEFAULT_NAMESPACE


def _provider(args: argparse.Namespace):
    name = getattr(args, "provider", None)
    if not name:
        return None

    return get_provider(name)


def _matches(item) -> str:
    chosen = set(item.effective_target_ids or item.target_ids)
    outside = [e.event_id for e in getattr(item, "chosen_events", ())]
    return (
        ", ".join(
            [f"{m.event_id}{'*' if m.event_id in chosen else ''}" for m in item.matches] + [f"{i}*" for i in outside]
        )
        or "-"
    )


def _print_matches(preview) -> None:
    """Each item's decision and matches with their titles, and the subject / slot / value a
    decision or match carries (the decider names them in its reason; some also give them as fields)."""
    # start-up time, here and below: `strata --help` builds every command's parser, so a service
    # loads when its command runs
    from workbench.import_facts import facts_text

    for item in preview.items:
        targets = set(item.effective_target_ids or item.target_ids)
        proposed = (item.action or "undecided").upper()
        head = f"item {item.position}: {item.candidate.title}\n  proposed {proposed}"
        if item.choice_action:
            head += f", chosen {item.choice_action.upper()}"
        if item.reason:
            head += f": {item.reason}"
        said = facts_text(item)
        if said:
            head += f"\n  matched {said}"
        console.print(head, markup=False, highlight=False)
        for match in [*item.matches, *getattr(item, "chosen_events", ())]:
            mark = "*" if match.event_id in targets else " "
            score = f"score {match.score:.3f}" if match.score else "chosen by id"
            line = f"  {mark} #{match.event_id} {match.title} ({match.status}, {score})"
            said = facts_text(match)
            if said:
                line += f"\n      {said}"
            console.print(line, markup=False, highlight=False)


def _action_cell(item) -> str:
    action = item.effective_action or item.action or "…"
    label = action.upper()
    if item.action and item.effective_action and item.action != item.effective_action:
        label += f" (proposed {item.action})"
    return f"[{ACTION_STYLE.get(action, '')}]{label}[/]" if action in ACTION_STYLE else label


def _print_preview(preview, *, title: str | None = None) -> None:

    batch = preview.batch
    out = Table(
        title=title or f"Import batch {batch.id} into {batch.namespace!r} ({batch.status})",
        header_style="bold",
        show_lines=False,
    )
    for column in ("#", "action", "confidence", "person", "matched events (* = target)", "reason", "candidate"):
        out.add_column(column, overflow="fold")
    for item in preview.items:
        needs = (
            item.requires_confirmation
            and item.choice_action is None
            and item.created_event_id is None
            and batch.status not in ("committed", "undone")
        )
        person = "choose" if needs else ("chosen" if item.choice_action else "")
        confidence = "-" if item.confidence is None else f"{item.confidence:.2f}"
        created = f" → event {item.created_event_id}" if item.created_event_id else ""
        out.add_row(
            str(item.position),
            _action_cell(item) + created,
            confidence,
            person,
            _matches(item),
            escape(item.reason or ""),
            escape(item.candidate.title),
        )
    console.print(out)
    counts = ", ".join(f"{n} {a}" for a, n in batch.counts.items() if n) or "nothing decided yet"
    console.print(
        f"batch {batch.id}: {batch.total} items ({counts}); {batch.needs_confirmation} need a person "
        f"(confidence below {batch.threshold:g}{', recovered from malformed input' if batch.recovered else ''})",
        markup=False,
        highlight=False,
    )
    spent = getattr(batch, "usage", None)
    if spent:
        console.print(f"{batch.provider}: {describe(spent)}", markup=False, highlight=False)
    for warning in batch.warnings[:10]:
        err_console.print(f"warning: {warning}", markup=False, highlight=False)
    if batch.status in ("ready", "awaiting_confirmation"):
        console.print(
            f"next: `strata import decide {batch.id} ITEM ACTION [--target EVENT ...]` for items marked "
            f"'choose' (they are ignored otherwise), then `strata import commit {batch.id}`",
            markup=False,
            highlight=False,
        )
    elif batch.status == "processing":
        console.print(f"the preview is not finished: `strata import resume {batch.id}`", markup=False)


def _show(preview, args: argparse.Namespace, title: str | None = None) -> None:
    if args.json:
        print_json(preview)
    else:
        _print_preview(preview, title=title)


def cmd_preview(args: argparse.Namespace) -> int:
    from core.services.import_preview import parse_or_recover, preview_batch, start_import

    provider = _provider(args)
    args.format = format_for_path(args.file, args.format)
    # The whole file is validated before the store is opened: bad input changes nothing.
    try:
        text, parsed = read_import_file(args.file, args.format)
    except Exception as exc:
        if not (isinstance(exc, ImportFormatError) and exc.syntax and not args.no_recover and args.format == "v2"):
            raise

        text = Path(args.file).read_text(encoding="utf-8")
        parsed = parse_or_recover(text, args.format, provider or get_provider(None), where=str(args.file))
    open_from_args(args, create=True)  # the batch is stored: a preview into a new store makes it
    namespace = _namespace(args)
    _note_new_namespace(namespace, quiet=args.json)
    batch = start_import(
        namespace,
        text,
        format=args.format,
        source_name=str(args.file),
        provider=provider,
        top_k=args.top_k,
        threshold=args.threshold,
        recover=not args.no_recover,
        parsed=parsed,
    )
    if not args.json:
        err_console.print(f"import batch {batch.id}: {batch.total} candidates from {args.file}", markup=False)
    with progress_bar("preview", enabled=not args.json and batch.total > 1) as update:
        preview = preview_batch(batch.id, provider=provider, progress=update)
    _show(preview, args)
    return 0


def _note_new_namespace(namespace: str, *, quiet: bool) -> None:
    """A preview into a namespace that does not exist is allowed (its commit creates it), but it has
    nothing to match against: say so, so that a mistyped --namespace is seen before the commit."""

    if not quiet and Namespace.get_or_none(Namespace.name == namespace) is None:
        err_console.print(
            f"note: namespace {namespace!r} does not exist yet: nothing stored to match against; "
            "`strata import commit` creates it",
            markup=False,
            highlight=False,
        )


def cmd_resume(args: argparse.Namespace) -> int:
    from core.services.import_preview import preview_batch

    open_from_args(args)
    total = get_batch(args.batch).batch.total
    with progress_bar("preview", enabled=not args.json and total > 1) as update:
        preview = preview_batch(args.batch, provider=_provider(args), progress=update)
    _show(preview, args)
    return 0


def cmd_decide(args: argparse.Namespace) -> int:
    from core.services.import_choices import decide

    open_from_args(args)
    row = decide(args.batch, args.item, args.action, args.target or None)
    if args.json:
        print_json(row)
    else:
        targets = ", ".join(map(str, row.effective_target_ids)) or "-"
        console.print(
            f"item {row.position} of batch {args.batch}: {row.effective_action} (targets {targets})",
            markup=False,
            highlight=False,
        )
    return 0


def cmd_commit(args: argparse.Namespace) -> int:
    from core.services.import_commit import StalePreviewError, commit_batch

    open_from_args(args)
    try:
        preview = commit_batch(args.batch, provider=_provider(args))
    except StalePreviewError as exc:
        if exc.preview is not None:
            _show(exc.preview, args, title=f"Refreshed preview of import batch {args.batch}")
        raise
    if args.json:
        print_json(preview)
    elif preview.batch.format == "gitmemo":
        console.print(gitmemo.commit_line(preview), markup=False, highlight=False)
    else:
        batch = preview.batch
        console.print(
            f"committed import batch {batch.id}: {batch.imported_count} events written, source block "
            f"{batch.source_block_id}; graph projection queued (run `strata derive`); "
            f"undo with `strata import undo {batch.id}`",
            markup=False,
            highlight=False,
        )
    return 0


def cmd_list(args: argparse.Namespace) -> int:

    open_from_args(args)
    namespace = getattr(args, "namespace", None)
    rows = list_batches(namespace, args.status, limit=args.limit)
    if namespace is not None and not rows and not list_batches(namespace):
        # A namespace a preview names exists for its batches before its commit creates it (the
        # workbench lists them so); one with neither memory nor batches is a mistyped name.
        get_namespace(namespace)
    if args.json:
        print_json(rows)
        return 0
    table(
        "Import batches",
        ["id", "namespace", "status", "format", "source", "items", "need a person", "imported", "created"],
        [
            [
                b.id,
                b.namespace,
                b.status,
                b.format,
                b.source_name or b.source_system or "-",
                f"{b.processed}/{b.total}",
                b.needs_confirmation,
                b.imported_count,
                b.created_at[:19],
            ]
            for b in rows
        ],
    )
    return 0


def cmd_show(args: argparse.Namespace) -> int:

    open_from_args(args)
    preview = get_batch(args.batch)
    if preview.batch.format == "gitmemo" and not args.json:
        gitmemo.print_batch(preview)
        return 0
    _show(preview, args)
    if not args.json:
        _print_matches(preview)
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    from core.services.import_choices import reset_choice

    open_from_args(args)
    preview = reset_choice(args.batch, args.item)
    if args.json:
        print_json(preview)
    else:
        which = f"item {args.item}" if args.item is not None else "every item"
        console.print(
            f"batch {preview.batch.id}: the choice for {which} is reset to the preview's decision; "
            f"{preview.batch.needs_confirmation} item(s) need a person",
            markup=False,
            highlight=False,
        )
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    from core.services.import_undo import undo_batch

    open_from_args(args)
    result = undo_batch(args.batch)
    if args.json:
        print_json(result)
    elif result.batch.format == "gitmemo":
        console.print(gitmemo.undo_line(result), markup=False, highlight=False)
    else:
        console.print(
            f"undid import batch {result.batch.id}: removed {len(result.removed_event_ids)} events, restored "
            f"{len(result.restored_event_ids)}; graph: {result.graph_removed} records removed, "
            f"{result.graph_restored} restored",
            markup=False,
            highlight=False,
        )
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from core.imports.prompt import export_prompt

    if args.json:
        print_json({"prompt": export_prompt()})
    else:
        print(export_prompt(), end="")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    if args.format == "gitmemo":
        return gitmemo.cmd_export(args, _namespace)
    if args.directory is not None:
        raise InvalidInputError(f"DIR is for --format gitmemo; write a {args.format} export with --out FILE")
    check_output(args.out, "--out")
    open_from_args(args)
    namespace = _namespace(args)
    if not args.out:
        exportsvc.write_export(namespace, sys.stdout, args.format, redact=args.redact)
        return 0
    # At a million messages an export takes minutes and gigabytes: a failed one must leave the previous file.
    with output_file(args.out, "--out") as out, progress_bar("export") as update:
        exportsvc.write_export(namespace, out, args.format, progress=update, redact=args.redact)
    err_console.print(f"export written to {args.out}", markup=False)
    return 0


def register(sub, common: argparse.ArgumentParser, common_no_json: argparse.ArgumentParser) -> None:

    imp = sub.add_parser(
        "import",
        help="import memory exported by another assistant (preview, decide, commit, undo)",
        description="Import memory exported by another assistant: preview every item against what "
        "Strata remembers, let a person decide the uncertain ones, commit in one "
        "transaction, undo a whole batch exactly.",
    )
    steps = imp.add_subparsers(dest="import_command", metavar="STEP", required=True)

    p = steps.add_parser("preview", parents=[common], help="parse a file and decide every item (writes no memory)")
    p.add_argument("file", type=Path, metavar="FILE")
    p.add_argument(
        "--format",
        default=None,
        choices=FORMATS,
        help="v2 (stratagate.external-memory.v2 JSON, the default), mem0 (a Mem0 export) or text (one fact "
        "per bullet or line; always for a .txt or .md file)",
    )
    p.add_argument(
        "--namespace",
        type=namespace_name,
        default=argparse.SUPPRESS,
        help="namespace to import into (default: the only one)",
    )
    p.add_argument(
        "--top-k",
        type=integer(1, 20),
        default=DEFAULT_TOP_K,
        help=f"stored matches per item, 1-20 (default {DEFAULT_TOP_K})",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        help=f"decisions below this confidence need a person (default {DEFAULT_THRESHOLD})",
    )
    p.add_argument("--provider", default=None, help="decider (default: offline)")
    p.add_argument("--no-recover", action="store_true", help="reject malformed JSON instead of trying to recover it")
    p.set_defaults(handler=cmd_preview)

    p = steps.add_parser("resume", parents=[common], help="finish an interrupted preview (finished items are kept)")
    p.add_argument("batch", type=ROW_ID, metavar="BATCH")
    p.add_argument("--provider", default=None)
    p.set_defaults(handler=cmd_resume)

    p = steps.add_parser("decide", parents=[common], help="choose the action for one item of a batch")
    p.add_argument("batch", type=ROW_ID, metavar="BATCH")
    p.add_argument("item", type=ROW_ID, metavar="ITEM")
    p.add_argument("action", choices=IMPORT_ACTIONS, metavar="ACTION", help=" | ".join(IMPORT_ACTIONS))
    p.add_argument(
        "--target",
        type=ROW_ID,
        action="append",
        metavar="EVENT",
        help="stored event the action applies to (merge, supersede, conflict): one of the item's "
        "matches or any live event of the namespace; repeat it for several",
    )
    p.set_defaults(handler=cmd_decide)

    p = steps.add_parser(
        "reset", parents=[common], help="forget a person's choice: the preview's decision applies again"
    )
    p.add_argument("batch", type=ROW_ID, metavar="BATCH")
    p.add_argument("item", type=ROW_ID, nargs="?", default=None, metavar="ITEM", help="one item (default: every item)")
    p.set_defaults(handler=cmd_reset)

    p = steps.add_parser("commit", parents=[common], help="apply a previewed batch in one transaction")
    p.add_argument("batch", type=ROW_ID, metavar="BATCH")
    p.add_argument("--provider", default=None, help="decider used to refresh a stale preview")
    p.set_defaults(handler=cmd_commit)

    p = steps.add_parser("list", parents=[common], help="import batches with their status")
    p.add_argument("--namespace", type=namespace_name, default=argparse.SUPPRESS)
    p.add_argument("--status", choices=STATUSES)
    p.add_argument(
        "--limit", type=integer(1, LIST_MAX), default=100, help=f"at most this many (1-{LIST_MAX}, default 100)"
    )
    p.set_defaults(handler=cmd_list)

    p = steps.add_parser("show", parents=[common], help="a batch with every item, decision, match and audit")
    p.add_argument("batch", type=ROW_ID, metavar="BATCH")
    p.set_defaults(handler=cmd_show)

    p = steps.add_parser("undo", parents=[common], help="undo a committed batch exactly (once)")
    p.add_argument("batch", type=ROW_ID, metavar="BATCH")
    p.set_defaults(handler=cmd_undo)

    p = steps.add_parser("prompt", parents=[common], help="print a prompt that asks another assistant for a v2 export")
    p.set_defaults(handler=cmd_prompt)

    gitmemo.register(steps, common)

    p = sub.add_parser(
        "export",
        parents=[common_no_json],
        help="canonical, deterministic export of a namespace (messages, blocks, events, graph, weights, receipts)",
    )
    p.add_argument(
        "--namespace",
        type=namespace_name,
        default=argparse.SUPPRESS,
        help="namespace to export (default: the only one)",
    )
    p.add_argument(
        "--format",
        default="json",
        choices=(*EXPORT_FORMATS, "gitmemo"),
        help="json, markdown, or gitmemo (the notes as a gitmemo .mem repository written to DIR)",
    )
    p.add_argument("directory", nargs="?", default=None, metavar="DIR", help="with --format gitmemo: a new directory")
    p.add_argument("--out", default=None, metavar="FILE", help="write to FILE instead of standard output")
    p.add_argument(
        "--redact",
        action="store_true",
        help="mask secrets (tokens, API keys, passwords, card numbers) for an export to share; by "
        "default the export is an exact backup",
    )
    p.set_defaults(handler=cmd_export)


# ----------------------------------------------------------------------------- bench


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _print_model_usage(report: dict) -> None:
    if report.get("usage"):
        cost = report["usage"]["cost"]
        console.print(
            f"model {report['provider']}:{report['model']}: {describe(report['usage'], cost)}",
            markup=False,
            highlight=False,
        )


def cmd_bench_labelled(args: argparse.Namespace) -> int:
    """`strata bench import --labels DIR`: the hand-labelled set against a store of the conversations it names."""
    from core.bench.import_labelled import run_labelled_import_bench

    check_outputs(args)
    with progress_bar("labelled import", enabled=not args.json) as update:
        report = run_labelled_import_bench(
            args.labels,
            args.split or "dev",
            data=args.data,
            threshold=args.threshold,
            top_k=args.top_k,
            provider=args.provider,
            db_url=getattr(args, "db", None),
            progress=update,
        )
    if not args.json:
        rows = [
            [
                name,
                part["items"],
                _rate(part["accuracy"]),
                _rate(part["auto_applied_share"]),
                _rate(part["auto_applied_precision"]),
            ]
            for name, part in report["per_conversation"].items()
        ]
        rows.append(
            [
                "overall",
                report["items"],
                _rate(report["accuracy"]),
                _rate(report["auto_applied_share"]),
                _rate(report["auto_applied_precision"]),
            ]
        )
        table(
            f"Labelled import decisions, {report['split']} split ({report['provider']})",
            ["conversation", "items", "accuracy", "auto-applied share", "auto-applied precision"],
            rows,
        )
        table(
            "Accuracy per kind",
            ["kind", "items", "accuracy"],
            [[kind, part["items"], _rate(part["accuracy"])] for kind, part in report["per_kind"].items()],
        )
        table(
            "Reliability",
            ["confidence", "items", "share correct"],
            [[bucket, part["items"], _rate(part["share_correct"])] for bucket, part in report["reliability"].items()],
        )
        console.print(
            f"auto-applied: confidence ≥ {report['threshold']:g}; {len(report['unreachable'])} item(s) "
            f"whose labelled turns no stored event cites; {report['timing']['total_s']} s",
            markup=False,
            highlight=False,
        )
        _print_model_usage(report)
    write_report(report, args)
    return 0


GENERATED_DEFAULTS = {"seed": 7, "candidates": 200, "people": 14}


def cmd_bench_import(args: argparse.Namespace) -> int:

    generated = [f"--{k}" for k in GENERATED_DEFAULTS if getattr(args, k) is not None]
    if args.labels is not None:
        if generated:
            raise InvalidInputError(f"{', '.join(generated)}: only for the generated set, not with --labels")
        return cmd_bench_labelled(args)
    labelled = [flag for flag, value in (("--split", args.split), ("--data", args.data)) if value is not None]
    if labelled:
        raise InvalidInputError(f"{', '.join(labelled)}: only with --labels")
    for key, value in GENERATED_DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    check_outputs(args)
    with progress_bar("import preview", enabled=not args.json) as update:
        report = run_import_bench(
            seed=args.seed,
            candidates=args.candidates,
            people=args.people,
            threshold=args.threshold,
            top_k=args.top_k,
            provider=args.provider,
            db_url=getattr(args, "db", None),
            progress=update,
        )
    if not args.json:
        accuracy, counts = report["accuracy"], report["counts"]
        rows = [
            [action, counts[action], "–" if accuracy[action] is None else f"{accuracy[action]:.3f}"]
            for action in ("add", "merge", "supersede", "conflict", "ignore")
        ]
        rows.append(["overall", report["candidates"], f"{accuracy['overall']:.3f}"])
        table(
            f"Import decisions, seed {report['seed']} ({report['provider']}, {report['stored_facts']} stored facts)",
            ["expected action", "items", "accuracy"],
            rows,
        )
        console.print(
            f"auto-applied share {report['auto_applied_share']:.3f} (confidence ≥ {report['threshold']:g}), "
            f"auto-applied precision {report['auto_applied_precision']:.3f}; undo round trip "
            f"{'identical' if report['undo_round_trip'] else 'DIFFERENT'}; {report['timing']['total_s']} s",
            markup=False,
            highlight=False,
        )
        _print_model_usage(report)
    write_report(report, args)
    return 0


def register_bench(kinds, common: argparse.ArgumentParser) -> None:

    p = kinds.add_parser(
        "import",
        parents=[common],
        help="import decisions on a generated, labelled set against a seeded store, and the undo round trip",
    )
    p.add_argument("--seed", type=int, default=None, help="generated set: seed (default 7)")
    p.add_argument(
        "--candidates",
        type=integer(1, MAX_CANDIDATES),
        default=None,
        help=f"generated set: labelled candidates, 1-{MAX_CANDIDATES} (default 200)",
    )
    p.add_argument(
        "--people",
        type=integer(1, len(PEOPLE)),
        default=None,
        help=f"generated set: people in the seeded store, 1-{len(PEOPLE)} (default 14)",
    )
    p.add_argument(
        "--labels",
        type=Path,
        default=None,
        metavar="DIR",
        help="score the hand-labelled set in DIR (core/bench/import_labels) instead of a generated one",
    )
    p.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        default=None,
        help="with --labels: which items to score (default dev; tune on dev, report test)",
    )
    p.add_argument("--data", type=Path, default=None, help="with --labels: path to locomo10.json")
    p.add_argument(
        "--threshold",
        type=float_in(0, 1),
        default=0.85,
        help="decisions below this confidence need a person, 0-1 (default 0.85)",
    )
    p.add_argument("--top-k", type=integer(1, 20), default=5, help="stored matches per item, 1-20 (default 5)")
    p.add_argument(
        "--provider",
        default=None,
        help="decider (default: offline); openai (alias deepseek) asks the model configured by "
        "STRATA_LLM_API_KEY or DEEPSEEK_API_KEY, STRATA_LLM_BASE_URL and STRATA_LLM_MODEL, and "
        "reports its tokens and estimated cost",
    )
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_bench_import)
