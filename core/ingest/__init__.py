"""Bulk ingest of conversation files (LoCoMo, LongMemEval, JSON Lines).

Every format is parsed and validated completely before anything is written, so a
malformed file changes nothing; each unit (a conversation, a question, a file) is
then written under receipts in transactions of bounded size (a thread, or a chunk of a JSON Lines
file), so a second run adds nothing and a writer beside a long ingest never waits long.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import tzinfo
from itertools import islice
from pathlib import Path
from typing import Callable

from core.db import bulk_insert, chunks, write_transaction
from core.errors import InvalidInputError, ReceiptConflictError
from core.models import IngestionReceipt, Namespace
from core.search.index import prepare_search
from core.services.capture import append_messages, coerce_message, payload_hash
from core.services.spaces import get_namespace, validate_name
from core.timeutil import now_iso

ProgressFn = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ThreadBatch:
    """Validated messages for one thread; ``close_turn`` seals a final full block and
    ``close_thread`` also seals a shorter final block (the conversation is finished)."""

    thread: str
    messages: tuple[dict, ...]
    close_turn: bool = True
    close_thread: bool = False

    @property
    def size(self) -> int:
        return len(self.messages)


@dataclass(frozen=True)
class Unit:
    """What one transaction writes: threads of one namespace under one receipt.

    ``receipt_id`` None means each message carries its own receipt (JSON Lines, whose threads
    read their lines from the file as they are written: ``core.ingest.jsonl.JsonlThread``).
    """

    namespace: str
    receipt_id: str | None
    threads: tuple[ThreadBatch, ...]
    label: str
    where: str = ""


@dataclass
class IngestReport:
    format: str
    path: str
    units: int = 0
    units_skipped: int = 0
    units_empty: int = 0
    messages: int = 0
    blocks_sealed: int = 0
    namespaces: list[str] = field(default_factory=list)


FORMATS = ("locomo", "longmemeval", "jsonl")


def parse(
    fmt: str, path: str | Path, *, namespace: str | None = None, limit: int | None = None, tz: tzinfo | None = None
) -> list[Unit]:
    """Parse and validate a whole file into units; raises InvalidInputError with a location."""
    path = Path(path)
    if fmt not in FORMATS:
        raise InvalidInputError(f"{path}: unknown ingest format {fmt!r}; use one of: {', '.join(FORMATS)}")
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory; give a file")
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise InvalidInputError(f"--limit must be a positive integer, got {limit!r}")
    if namespace is not None:
        # Checked as given: an empty name must not quietly become 'default' or a per-item namespace.
        validate_name(namespace)
    if fmt == "locomo":
        # would be a cycle: each parser imports Unit and ThreadBatch from this package
        from core.ingest.locomo import parse_locomo as parser
    elif fmt == "longmemeval":
        from core.ingest.longmemeval import parse_longmemeval as parser
    else:
        from core.ingest.jsonl import parse_jsonl as parser
    units = parser(path, namespace=namespace, limit=limit, tz=tz)
    _check_names(path, units)
    _check_repeats(path, units)
    return units


def _check_names(path: Path, units: list[Unit]) -> None:
    """Namespace and thread names are checked here so a bad one fails before any write, and each
    unit is given them as the store spells them (stripped, NFC): the report, the receipts and the
    search index that follow look the namespace up by the name the unit carries."""

    for index, unit in enumerate(units):
        try:
            namespace = validate_name(unit.namespace)
            threads = tuple(
                batch if batch.thread == (name := validate_name(batch.thread, "thread")) else _renamed(batch, name)
                for batch in unit.threads
            )
        except InvalidInputError as exc:
            # A JSON Lines unit is the whole file: its lines were checked, with their numbers, when parsed.
            raise InvalidInputError(f"{path}: {unit.where}: {exc}" if unit.where else f"{path}: {exc}") from exc
        if namespace != unit.namespace or any(a is not b for a, b in zip(threads, unit.threads)):
            units[index] = replace(unit, namespace=namespace, threads=threads)


def _renamed(batch: "ThreadBatch", name: str) -> "ThreadBatch":

    return replace(batch, thread=name)


def _check_repeats(path: Path, units: list[Unit]) -> None:
    """Two units of one file under the same receipt must hold the same messages (the second is then
    skipped as already stored). Different ones are refused here: found while writing, the units
    before the second would already be committed."""
    seen: dict[tuple[str, str], tuple[Unit, tuple]] = {}
    for unit in units:
        if unit.receipt_id is None:
            continue
        for batch in unit.threads:
            receipt = f"{unit.receipt_id}#{batch.thread}"
            first = seen.setdefault((unit.namespace, receipt), (unit, batch.messages))
            if first[1] != batch.messages:
                raise ReceiptConflictError(
                    f"{path}: {unit.where or unit.label}: repeats {first[0].where or first[0].label} with different "
                    f"messages (both would be stored under receipt {receipt!r} in namespace {unit.namespace!r})"
                )


def check_stored_receipts(units: list[Unit], report: IngestReport) -> None:
    """A unit whose receipt an earlier ingest used for other messages is refused before anything is
    written, so a file is stored whole or not at all (one transaction per unit keeps a large file's
    progress: a rerun after an interruption skips what was stored)."""

    wanted: dict[str, dict[str, tuple[Unit, ThreadBatch]]] = {}
    for unit in units:
        if unit.receipt_id is not None:
            for batch in unit.threads:
                wanted.setdefault(validate_name(unit.namespace), {})[f"{unit.receipt_id}#{batch.thread}"] = (
                    unit,
                    batch,
                )
    for unit in units:
        if unit.receipt_id is None and Namespace.get_or_none(Namespace.name == validate_name(unit.namespace)):
            for batch in unit.threads:
                # Read once more before writing: chunks commit one by one, and a line reused for other
                # content far down the file must stop the ingest before its first chunk.
                lines = iter(batch.messages)
                while chunk := list(islice(lines, APPEND_CHUNK)):
                    _new_lines(unit, batch.thread, chunk)
    for name, receipts in wanted.items():
        ns = Namespace.get_or_none(Namespace.name == name)
        if ns is None:
            continue
        stored: dict[str, str] = {}
        for part in chunks(list(receipts)):
            stored.update(
                IngestionReceipt.select(IngestionReceipt.receipt_id, IngestionReceipt.payload_hash)
                .where((IngestionReceipt.namespace == ns) & IngestionReceipt.receipt_id.in_(part))
                .tuples()
            )
        for receipt, digest in stored.items():
            unit, batch = receipts[receipt]
            if payload_hash(batch.thread, [coerce_message(m, unit.label) for m in batch.messages]) != digest:
                raise ReceiptConflictError(_conflict(report, unit, receipt, name) + "; nothing was written")


def _conflict(report: IngestReport, unit: Unit, receipt: str, namespace: str) -> str:
    return (
        f"{report.path}: {unit.where or unit.label}: receipt {receipt!r} in namespace {namespace!r} was already "
        "used for different messages (an earlier ingest of another version of this item)"
    )


BULK_INDEX_MIN = 20_000  # messages one ingest writes to a namespace before it prepares its search index


def write_units(
    units: list[Unit], report: IngestReport, progress: ProgressFn | None = None, *, checked: bool = False
) -> IngestReport:
    """Write each unit in one transaction; a unit whose receipt exists is skipped. ``checked``: the
    caller has run ``check_stored_receipts`` already."""

    # Progress counts units, or lines where each line is its own record (one JSONL file can be a
    # million lines written for minutes).
    if not checked:
        check_stored_receipts(units, report)
    work = [sum(batch.size for batch in unit.threads) if unit.receipt_id is None else 1 for unit in units]
    total = sum(work)
    done = 0
    written: dict[str, int] = {}
    for unit, amount in zip(units, work):
        if not unit.threads:
            report.units_empty += 1
            done += amount
            if progress:
                progress(done, total, unit.label)
            continue
        # Each thread under its receipt, and each chunk of a JSON Lines file under its lines' receipts,
        # commits on its own: a 60k-line file in one transaction held the write lock for 25 s, and an
        # agent capturing or searching meanwhile failed as "locked". A rerun resumes from the receipts.
        stored = 0
        duplicate = True
        for batch in unit.threads:
            if unit.receipt_id is not None:
                receipt = f"{unit.receipt_id}#{batch.thread}"
                try:
                    with write_transaction():
                        result = append_messages(
                            unit.namespace,
                            batch.thread,
                            batch.messages,
                            receipt_id=receipt,
                            close_turn=batch.close_turn,
                            close_thread=batch.close_thread,
                        )
                except ReceiptConflictError as exc:  # another writer stored it since the check above
                    raise ReceiptConflictError(_conflict(report, unit, receipt, unit.namespace)) from exc
                duplicate &= result.duplicate
                if not result.duplicate:
                    stored += len(result.message_ids)
                    report.blocks_sealed += len(result.sealed_block_ids)
                continue
            lines = iter(batch.messages)  # read as written (a JSONL thread is not held whole)
            while chunk := list(islice(lines, APPEND_CHUNK)):
                with write_transaction():
                    try:
                        fresh = _new_lines(unit, batch.thread, chunk)
                    except ReceiptConflictError as exc:  # a line id used twice in this file, for other text
                        if not done:
                            raise
                        raise ReceiptConflictError(
                            f"{exc}; the {done} line(s) before this chunk were stored "
                            "(a rerun of the corrected file skips them)"
                        ) from exc
                    if fresh:
                        result = append_messages(unit.namespace, batch.thread, [m for m, _ in fresh], close_turn=False)
                        _line_receipts(unit.namespace, result, fresh)
                if fresh:
                    duplicate = False
                    stored += len(fresh)
                    report.blocks_sealed += len(result.sealed_block_ids)
                done += len(chunk)
                if progress:
                    progress(done, total, f"{unit.label}: {batch.thread}")
        report.messages += stored
        written[unit.namespace] = written.get(unit.namespace, 0) + stored
        if duplicate:
            report.units_skipped += 1
        else:
            report.units += 1
        if unit.namespace not in report.namespaces:
            report.namespaces.append(unit.namespace)
        if unit.receipt_id is not None:
            done += 1
        if progress:
            progress(done, total, unit.label)
    for namespace, count in written.items():
        if count >= BULK_INDEX_MIN:
            if progress:
                progress(total, total, f"search index of {namespace}")
            prepare_search([get_namespace(namespace).id])
    return report


# Lines appended per transaction when each line has its own receipt: about a tenth of a second of
# holding the write lock, so a capture beside a bulk ingest waits that long at most.
APPEND_CHUNK = 200


def _new_lines(unit: Unit, thread: str, messages: list[dict]) -> list[tuple[dict, str]]:
    """The lines not stored before (by an earlier ingest, or earlier in this file: those chunks are
    written by now), with their payload hashes; a receipt reused for different content is refused,
    naming the line.

    The same check appending line by line under each line's receipt did, in one query per 500
    lines: at a million lines that was 30 minutes of per-message SQL."""

    hashed = [(m, payload_hash(thread, [coerce_message(m, m.get("where", unit.label))])) for m in messages]
    known: dict[str, str] = {}
    ns = Namespace.get_or_none(Namespace.name == unit.namespace)
    if ns is not None:
        for part in chunks([m["receipt"] for m, _ in hashed]):
            known.update(
                IngestionReceipt.select(IngestionReceipt.receipt_id, IngestionReceipt.payload_hash)
                .where((IngestionReceipt.namespace == ns) & IngestionReceipt.receipt_id.in_(part))
                .tuples()
            )
    fresh = []
    for message, digest in hashed:
        receipt = message["receipt"]
        if receipt in known:
            if known[receipt] != digest:
                raise ReceiptConflictError(
                    f"{message.get('where', unit.label)}: receipt {receipt!r} in namespace "
                    f"{unit.namespace!r} was already used for a different payload"
                )
            continue
        known[receipt] = digest  # a repeat later in this chunk
        fresh.append((message, digest))
    return fresh


def _line_receipts(namespace: str, result, part: list[tuple[dict, str]]) -> None:
    """One receipt per appended line, as appending it alone would have written."""

    ns_id, now = get_namespace(namespace).id, now_iso()
    as_text = IngestionReceipt.result.db_value
    bulk_insert(
        IngestionReceipt,
        ["namespace_id", "receipt_id", "payload_hash", "result", "created_at"],
        [
            (ns_id, message["receipt"], digest, as_text({"thread": result.thread, "message_ids": [message_id]}), now)
            for (message, digest), message_id in zip(part, result.message_ids)
        ],
    )


def ingest(
    fmt: str,
    path: str | Path,
    *,
    namespace: str | None = None,
    limit: int | None = None,
    tz: tzinfo | None = None,
    progress: ProgressFn | None = None,
) -> IngestReport:
    units = parse(fmt, path, namespace=namespace, limit=limit, tz=tz)
    return write_units(units, IngestReport(format=fmt, path=str(path)), progress)
