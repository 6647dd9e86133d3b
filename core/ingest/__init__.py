"""Bulk ingest of conversation files (LoCoMo, LongMemEval, JSON Lines).

Every format is parsed and validated completely before anything is written, so a
malformed file changes nothing; each unit (a conversation, a question, a file) is
then written in its own transaction under a receipt, so a second run adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Callable

from core.errors import InvalidInputError, ReceiptConflictError

ProgressFn = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ThreadBatch:
    """Validated messages for one thread; ``close_turn`` seals a final full block and
    ``close_thread`` also seals a shorter final block (the conversation is finished)."""

    thread: str
    messages: tuple[dict, ...]
    close_turn: bool = True
    close_thread: bool = False


@dataclass(frozen=True)
class Unit:
    """What one transaction writes: threads of one namespace under one receipt.

    ``receipt_id`` None means each message carries its own receipt (JSON Lines).
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


def parse(fmt: str, path: str | Path, *, namespace: str | None = None, limit: int | None = None,
          tz: tzinfo | None = None) -> list[Unit]:
    """Parse and validate a whole file into units; raises InvalidInputError with a location."""
    path = Path(path)
    if fmt not in FORMATS:
        raise InvalidInputError(f"{path}: unknown ingest format {fmt!r}; use one of: {', '.join(FORMATS)}")
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise InvalidInputError(f"--limit must be a positive integer, got {limit!r}")
    if fmt == "locomo":
        from core.ingest.locomo import parse_locomo as parser
    elif fmt == "longmemeval":
        from core.ingest.longmemeval import parse_longmemeval as parser
    else:
        from core.ingest.jsonl import parse_jsonl as parser
    units = parser(path, namespace=namespace, limit=limit, tz=tz)
    _check_names(path, units)
    return units


def _check_names(path: Path, units: list[Unit]) -> None:
    """Namespace and thread names are checked here so a bad one fails before any write."""
    from core.services.spaces import validate_name

    for unit in units:
        try:
            validate_name(unit.namespace)
            for batch in unit.threads:
                validate_name(batch.thread, "thread")
        except InvalidInputError as exc:
            raise InvalidInputError(f"{path}: {unit.where or unit.label}: {exc}") from exc


BULK_INDEX_MIN = 20_000  # messages one ingest writes to a namespace before it prepares its search index


def write_units(units: list[Unit], report: IngestReport, progress: ProgressFn | None = None) -> IngestReport:
    """Write each unit in one transaction; a unit whose receipt exists is skipped."""
    from core.db import write_transaction
    from core.search.index import prepare_search
    from core.services.capture import append_messages
    from core.services.spaces import get_namespace

    total = len(units)
    written: dict[str, int] = {}
    for index, unit in enumerate(units, 1):
        if not unit.threads:
            report.units_empty += 1
            if progress:
                progress(index, total, unit.label)
            continue
        with write_transaction():
            stored = 0
            duplicate = True
            for batch in unit.threads:
                if unit.receipt_id is not None:
                    result = append_messages(
                        unit.namespace, batch.thread, batch.messages,
                        receipt_id=f"{unit.receipt_id}#{batch.thread}", close_turn=batch.close_turn,
                        close_thread=batch.close_thread,
                    )
                    duplicate &= result.duplicate
                    if not result.duplicate:
                        stored += len(result.message_ids)
                        report.blocks_sealed += len(result.sealed_block_ids)
                    continue
                for message in batch.messages:
                    try:
                        result = append_messages(
                            unit.namespace, batch.thread, [message],
                            receipt_id=message["receipt"], close_turn=False,
                        )
                    except ReceiptConflictError as exc:
                        raise ReceiptConflictError(f"{message.get('where', unit.label)}: {exc}") from exc
                    if not result.duplicate:
                        duplicate = False
                        stored += 1
                        report.blocks_sealed += len(result.sealed_block_ids)
        report.messages += stored
        written[unit.namespace] = written.get(unit.namespace, 0) + stored
        if duplicate:
            report.units_skipped += 1
        else:
            report.units += 1
        if unit.namespace not in report.namespaces:
            report.namespaces.append(unit.namespace)
        if progress:
            progress(index, total, unit.label)
    for namespace, count in written.items():
        if count >= BULK_INDEX_MIN:
            if progress:
                progress(total, total, f"search index of {namespace}")
            prepare_search([get_namespace(namespace).id])
    return report


def ingest(fmt: str, path: str | Path, *, namespace: str | None = None, limit: int | None = None,
           tz: tzinfo | None = None, progress: ProgressFn | None = None) -> IngestReport:
    units = parse(fmt, path, namespace=namespace, limit=limit, tz=tz)
    return write_units(units, IngestReport(format=fmt, path=str(path)), progress)
