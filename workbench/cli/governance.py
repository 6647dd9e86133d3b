"""Governed memory from the command line: `strata remember`, `strata review …`, `strata audit`,
`strata pin|unpin|forget|restore EVENT`, the corrections `strata supersede|duplicate|participants
EVENT` and `strata undo AUDIT_ID`, and `strata policy show|set`."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.errors import InvalidInputError
from core.services import governance as gov
from core.services.events import get_event
from core.services.governance import audit_trail, get_record, remember, review_queue
from core.services.policy import get_policy, read_policy_text, set_policy
from core.services.spaces import get_or_create_namespace
from core.vocab import EVIDENCE_GRADES, PRIVACY_LEVELS, RECORD_SOURCES, SCOPES
from workbench.cli.argtypes import ROW_ID, integer, namespace_name
from workbench.cli.output import console, cut, open_from_args, print_json, table

ACTOR_ENV = "STRATA_ACTOR"  # read by core.services.governance.default_actor


def _print_record(record, *, json_out: bool) -> None:
    if json_out:
        print_json(record)
        return
    console.print(
        f"record {record.id} · {record.status} · {record.source} by {record.actor} · "
        f"privacy {record.privacy}" + (f" · key {record.key}" if record.key else ""),
        markup=False,
        highlight=False,
    )
    console.print(f"  {cut(record.text, 500)}", markup=False, highlight=False)
    if record.evidence:
        console.print(f"  evidence: {', '.join(record.evidence)}", markup=False)
    if record.event_id:
        console.print(f"  event {record.event_id}", markup=False)


def cmd_remember(args: argparse.Namespace) -> int:
    # start-up time, here and below: `strata --help` builds this parser, so the services load when a
    # command runs

    open_from_args(args, create=True)
    done = remember(
        args.namespace,
        args.text,
        source=args.source,
        actor=args.actor,
        title=args.title,
        scope=args.scope,
        privacy=args.privacy,
        expires=args.expires,
        review_by=args.review_by,
        key=args.key,
        evidence=args.evidence or (),
    )
    if args.json:
        print_json(done)
        return 0
    _print_record(done.record, json_out=False)
    if done.near_duplicate_of:
        console.print(f"  close to record {done.near_duplicate_of}: linked, a reviewer sees both", markup=False)
    return 0


def cmd_review_list(args: argparse.Namespace) -> int:

    open_from_args(args)
    items = review_queue(args.namespace)
    if args.json:
        print_json(items)
        return 0
    if not items:
        console.print("nothing is waiting for a person", markup=False)
        return 0
    rows = [(i.id, i.kind, i.status, cut(i.title, 60), cut(i.detail, 70)) for i in items]
    table(f"Waiting for a person in {args.namespace}", ["id", "kind", "status", "title", "detail"], rows)
    return 0


def cmd_review_show(args: argparse.Namespace) -> int:

    open_from_args(args)
    record = get_record(args.id)
    trail = audit_trail(record.namespace, subject="record", subject_id=record.id)
    if args.json:
        print_json({"record": record, "audit": trail})
        return 0
    _print_record(record, json_out=False)
    for row in trail:
        console.print(
            f"  {row.at[:19]} {row.action}: {row.from_status or '-'} → {row.to_status or '-'} by "
            f"{row.actor}" + (f" ({cut(row.reason, 120)})" if row.reason else ""),
            markup=False,
        )
    return 0


def _transition(args: argparse.Namespace) -> int:

    open_from_args(args)
    actor = args.actor or gov.default_actor()
    step = args.step
    if str(args.id).startswith("note:"):
        return _note_step(args, actor)
    if step == "approve":
        record = gov.approve_record(args.id, actor=actor, evidence=args.evidence or (), reason=args.reason)
    elif step == "verify":
        record = gov.verify_record(
            args.id, actor=actor, evidence=args.evidence or (), grade=args.grade, reason=args.reason
        )
    elif step == "reject":
        record = gov.reject_record(args.id, actor=actor, reason=args.reason)
    elif step == "revoke":
        record = gov.revoke_record(args.id, actor=actor, reason=args.reason)
    else:
        record = gov.restore_record(args.id, actor=actor, reason=args.reason)
    if args.json:
        print_json(record)
    else:
        console.print(f"record {record.id} is now {record.status}", markup=False)
    return 0


def _note_step(args: argparse.Namespace, actor: str) -> int:
    """A note waiting in the review queue (``note:<id>``): approve lets it stand, reject withdraws it."""
    from core.errors import InvalidInputError
    from core.services.notes import approve_note, delete_note

    note_id = str(args.id)[len("note:") :]
    if args.step == "approve":
        note = approve_note(note_id, actor=actor, reason=args.reason)
    elif args.step == "reject":
        note = delete_note(note_id, reason=args.reason, actor=actor)
    else:
        raise InvalidInputError(f"review {args.step} applies to records; a note is approved or rejected")
    if args.json:
        print_json(note)
    else:
        console.print(f"note {note.id[:12]} is now {note.status}", markup=False)
    return 0


def cmd_audit(args: argparse.Namespace) -> int:

    open_from_args(args)
    subject, subject_id = (None, None)
    if args.record is not None:
        subject, subject_id = "record", args.record
    elif args.event is not None:
        subject, subject_id = "event", args.event
    rows = audit_trail(args.namespace, subject=subject, subject_id=subject_id)
    if args.json:
        print_json(rows)
        return 0
    table(
        f"Audit trail of {args.namespace}",
        ["id", "at", "subject", "action", "from", "to", "actor", "reason"],
        [
            (
                r.id,
                r.at[:19],
                f"{r.subject} {r.subject_id}",
                r.action,
                r.from_status or "-",
                r.to_status or "-",
                cut(r.actor, 30),
                cut(r.reason or "", 60),
            )
            for r in rows
        ],
    )
    return 0


def cmd_event_standing(args: argparse.Namespace) -> int:

    open_from_args(args)
    actor = args.actor or gov.default_actor()
    if args.step == "forget":
        gov.forget(args.id, actor=actor, reason=args.reason)
    elif args.step == "restore":
        gov.restore(args.id, actor=actor, reason=args.reason)
    else:
        gov.set_pinned(args.id, args.step == "pin", actor=actor, reason=args.reason)
    card = get_event(args.id)
    if args.json:
        print_json({"id": card.event.id, "status": card.event.status, "pinned": card.pinned})
    else:
        pinned = " (pinned)" if card.pinned else ""
        console.print(f"event {card.event.id} is now {card.event.status}{pinned}", markup=False)
    return 0


def _print_correction(done, *, json_out: bool) -> int:
    if json_out:
        print_json(done)
        return 0
    console.print(f"{done.text} (audit {done.audit_id})", markup=False, highlight=False)
    if done.action != "undo":
        console.print(f"  `strata undo {done.audit_id}` takes it back", markup=False, highlight=False)
    return 0


def cmd_correct(args: argparse.Namespace) -> int:
    # start-up time: `strata --help` builds this parser, so the corrections load when one runs
    from core.services import corrections

    open_from_args(args)
    actor = args.actor or gov.default_actor()
    if args.step == "supersede":
        done = corrections.supersede(args.id, args.statement, actor=actor, reason=args.reason)
    elif args.step == "duplicate":
        done = corrections.mark_duplicate(args.id, args.of, actor=actor, reason=args.reason)
    elif args.step == "participants":
        names = [] if args.none else [n for value in args.names for n in value.split(",")]
        done = corrections.set_participants(args.id, names, actor=actor, reason=args.reason)
    else:
        done = corrections.undo(args.id, actor=actor, reason=args.reason)
    return _print_correction(done, json_out=args.json)


def cmd_ledger(args: argparse.Namespace) -> int:
    # start-up time: `strata --help` builds this parser, so the ledger service loads when it runs
    from core.services.ledger import list_ledger

    open_from_args(args)
    rows = list_ledger(args.namespace, kind=args.kind, limit=args.limit)
    if args.json:
        print_json(rows)
        return 0
    table(
        f"Context ledger of {args.namespace} (estimated tokens, not billing)",
        ["id", "at", "kind", "tokens/budget", "decision", "selected", "excluded (reason)"],
        [
            (
                r.id,
                r.created_at[:19],
                r.kind,
                f"{r.tokens}/{r.budget if r.budget is not None else '-'}",
                r.decision or "-",
                len(r.selected),
                cut(
                    ", ".join(f"{e['ref']} ({e['reason']})" for e in r.excluded[:4])
                    + (f" … +{len(r.excluded) - 4}" if len(r.excluded) > 4 else ""),
                    80,
                ),
            )
            for r in rows
        ],
    )
    return 0


def cmd_policy(args: argparse.Namespace) -> int:

    open_from_args(args, create=args.step == "set")
    if args.step == "set":
        path = Path(args.file)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"{path}: cannot read the policy ({exc})") from exc

        get_or_create_namespace(args.namespace)
        policy = set_policy(args.namespace, read_policy_text(text, str(path)))
    else:
        policy = get_policy(args.namespace)
    if args.json:
        print_json(policy.to_json())
    else:
        trusted = ", ".join(policy.trust) or "nobody (every record waits in quarantine)"
        console.print(f"namespace {args.namespace}: trusts {trusted}", markup=False)
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:

    p = sub.add_parser(
        "remember",
        parents=[common],
        help="write a governed record (quarantined unless the namespace policy trusts its source)",
    )
    p.add_argument("text")
    p.add_argument("--namespace", required=True, type=namespace_name)
    p.add_argument("--source", choices=RECORD_SOURCES, default="agent")
    p.add_argument("--actor", help="who writes it (default: the source)")
    p.add_argument("--title", help="a short title (default: the first line)")
    p.add_argument("--scope", choices=SCOPES, default="project")
    p.add_argument("--privacy", choices=PRIVACY_LEVELS, default="normal", help="secret: never handed to an agent")
    p.add_argument("--expires", metavar="DATE", help="YYYY-MM-DD: withheld from that day on")
    p.add_argument("--review-by", metavar="DATE", help="YYYY-MM-DD: listed for review after that day")
    p.add_argument("--key", help="canonical key: two promoted records with one key are both withheld")
    p.add_argument("--evidence", action="append", metavar="REF", help="message:ID or event:ID (repeatable)")
    p.set_defaults(handler=cmd_remember)

    review = sub.add_parser("review", help="what waits for a person, and the decisions on governed records")
    steps = review.add_subparsers(dest="step", required=True)
    p = steps.add_parser("list", parents=[common], help="everything waiting for a person in a namespace")
    p.add_argument("--namespace", required=True, type=namespace_name)
    p.set_defaults(handler=cmd_review_list)
    p = steps.add_parser("show", parents=[common], help="one record with its audit trail")
    p.add_argument("id", help="record id (12 or record:12)")
    p.set_defaults(handler=cmd_review_show)
    for step, helptext, reason_required in (
        ("approve", "promote a record (needs evidence: --evidence or an earlier verify)", False),
        ("verify", "attach evidence to a quarantined record", False),
        ("reject", "reject a record waiting in quarantine", True),
        ("revoke", "withdraw a promoted record (reversible with restore)", True),
        ("restore", "undo a revoke (promoted again) or a reject (back to quarantine)", False),
    ):
        p = steps.add_parser(step, parents=[common], help=helptext)
        p.add_argument(
            "id", help="record id (12 or record:12), or note:ID for a note waiting in the queue (approve, reject)"
        )
        p.add_argument("--actor", help=f"who decides (default: ${ACTOR_ENV} or the login name)")
        p.add_argument("--reason", required=reason_required)
        if step in ("approve", "verify"):
            p.add_argument("--evidence", action="append", metavar="REF", help="message:ID or event:ID (repeatable)")
        if step == "verify":
            p.add_argument("--grade", choices=EVIDENCE_GRADES)
        p.set_defaults(handler=_transition)

    p = sub.add_parser("audit", parents=[common], help="the audit trail: who changed what, when and why")
    p.add_argument("--namespace", required=True, type=namespace_name)
    who = p.add_mutually_exclusive_group()
    who.add_argument("--record", type=ROW_ID)
    who.add_argument("--event", type=ROW_ID)
    p.set_defaults(handler=cmd_audit)

    for step, helptext in (
        ("forget", "hide an event (reversible; recorded in the audit trail)"),
        ("restore", "bring back a forgotten event"),
        ("pin", "pin an event: its weight no longer decays"),
        ("unpin", "unpin an event"),
    ):
        p = sub.add_parser(step, parents=[common], help=helptext)
        p.add_argument("id", type=ROW_ID)
        p.add_argument("--actor", help=f"who does it (default: ${ACTOR_ENV} or the login name)")
        p.add_argument("--reason")
        p.set_defaults(handler=cmd_event_standing, step=step)

    p = sub.add_parser(
        "supersede",
        parents=[common],
        help="replace an event with a new statement (a new card supersedes it; audited, undoable)",
    )
    p.add_argument("id", type=ROW_ID, help="the event that is wrong")
    p.add_argument("--with", dest="statement", required=True, metavar="TEXT", help="what holds instead")
    p = sub.add_parser(
        "duplicate", parents=[common], help="mark an event a duplicate of another (it steps aside; audited, undoable)"
    )
    p.add_argument("id", type=ROW_ID, help="the duplicate")
    p.add_argument("--of", type=ROW_ID, required=True, metavar="EVENT", help="the event kept")
    p = sub.add_parser("participants", parents=[common], help="replace an event's participants (audited, undoable)")
    p.add_argument("id", type=ROW_ID)
    names = p.add_mutually_exclusive_group(required=True)
    names.add_argument("names", nargs="*", default=[], metavar="NAME", help="the new participants (or A,B,C)")
    names.add_argument("--none", action="store_true", help="leave the event with no participants")
    p = sub.add_parser("undo", parents=[common], help="take back one audited change of an event, by its audit id")
    p.add_argument("id", type=ROW_ID, metavar="AUDIT_ID", help="the change's id in `strata audit`")
    for step in ("supersede", "duplicate", "participants", "undo"):
        p = sub.choices[step]
        p.add_argument("--actor", help=f"who does it (default: ${ACTOR_ENV} or the login name)")
        p.add_argument("--reason")
        p.set_defaults(handler=cmd_correct, step=step)

    p = sub.add_parser(
        "ledger", parents=[common], help="the context ledger: what each context build handed over, left out and why"
    )
    p.add_argument("--namespace", required=True, type=namespace_name)
    p.add_argument("--kind", choices=("context", "preflight"))
    p.add_argument("--limit", type=integer(1, 10_000), default=100)
    p.set_defaults(handler=cmd_ledger)

    policy = sub.add_parser("policy", help="a namespace's governance policy (which sources are trusted)")
    steps = policy.add_subparsers(dest="step", required=True)
    p = steps.add_parser("show", parents=[common], help="print the policy")
    p.add_argument("--namespace", required=True, type=namespace_name)
    p.set_defaults(handler=cmd_policy)
    p = steps.add_parser("set", parents=[common], help="replace the policy with a YAML file (trust: [user])")
    p.add_argument("file")
    p.add_argument("--namespace", required=True, type=namespace_name)
    p.set_defaults(handler=cmd_policy)
