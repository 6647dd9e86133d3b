"""Namespaces (memory spaces) and threads."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable

from core.db import Prepared, chunks, write_transaction
from core.errors import InvalidInputError, NotFoundError
from core.models import Message, Namespace, Thread
from core.timeutil import now_iso

DEFAULT_NAMESPACE = "default"
DEFAULT_TURN_SIZE = 12
DEFAULT_DECAY_LAMBDA = 0.30


@dataclass(frozen=True)
class NamespaceInfo:
    name: str
    revision: int
    current_turn: int
    block_turn_size: int
    block_decay_lambda: float
    created_at: str
    threads: int
    messages: int


_BUMP = Prepared(
    lambda now, ns: Namespace.update(revision=Namespace.revision + 1, updated_at=now).where(Namespace.id == ns)
)


def bump_revision(namespace_id: int, now: str | None = None) -> None:
    """Count a change to the namespace's memory (previews and caches compare revisions).
    Call inside the write transaction that makes the change."""
    _BUMP.execute(now or now_iso(), namespace_id)


MAX_NAME_LENGTH = 255
# C0/C1 controls and the line and paragraph separators: a name holding one prints as a broken line
# or moves the terminal's cursor, and cannot be typed back. Format characters (a zero-width joiner
# in an emoji) stay allowed.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def validate_name(name: object, what: str = "namespace") -> str:
    """The one spelling of a namespace (or thread) name, used to create it and to look it up:
    surrounding whitespace stripped and Unicode NFC, so ' me' and 'me', or a composed and a
    decomposed 'é', name the same namespace. Refused with InvalidInputError: a non-string, an empty
    name, one longer than MAX_NAME_LENGTH characters, control characters, and lone surrogates (bytes
    that were not UTF-8, as Python decodes them from a command line)."""
    if not isinstance(name, str):
        raise InvalidInputError(f"{what} name must be a string, got {type(name).__name__}")
    bad = _SURROGATE.search(name)
    if bad:
        shown = name.encode("utf-8", "backslashreplace").decode("utf-8")
        raise InvalidInputError(
            f"{what} name '{shown}' is not valid UTF-8 text (\\u{ord(bad.group()):04x} at position {bad.start()})"
        )
    text = unicodedata.normalize("NFC", name.strip())
    if not text:
        raise InvalidInputError(f"{what} name cannot be empty (got {name!r}); give a non-empty string")
    bad = _CONTROL.search(text)
    if bad:
        raise InvalidInputError(
            f"{what} name {text!r} holds a control character ({bad.group()!r} at position {bad.start()})"
        )
    if len(text) > MAX_NAME_LENGTH:
        raise InvalidInputError(f"{what} name is longer than {MAX_NAME_LENGTH} characters")
    return text


def get_or_create_namespace(name: str, *, block_turn_size: int | None = None) -> Namespace:
    """The namespace row, created with defaults when missing. Call inside a write transaction."""
    name = validate_name(name)
    row = Namespace.get_or_none(Namespace.name == name)
    if row is None:
        now = now_iso()
        row = Namespace.create(
            name=name,
            block_turn_size=block_turn_size or DEFAULT_TURN_SIZE,
            block_decay_lambda=DEFAULT_DECAY_LAMBDA,
            created_at=now,
            updated_at=now,
        )
    return row


_BY_NAME = Prepared(lambda name: Namespace.select().where(Namespace.name == name))


def get_namespace(name: str) -> Namespace:
    given = name
    name = validate_name(name)
    row = _BY_NAME.first(name)  # every search starts here: rendered once, not per call
    if row is None and isinstance(given, str) and given.strip() != name:
        row = _BY_NAME.first(given.strip())  # a name stored before names were NFC
    if row is None:
        raise NotFoundError(f"namespace {name!r} does not exist (see `strata namespaces`)")
    return row


def get_or_create_thread(namespace: Namespace, name: str) -> Thread:
    name = validate_name(name, "thread")
    row = Thread.get_or_none((Thread.namespace == namespace) & (Thread.name == name))
    if row is None:
        now = now_iso()
        row = Thread.create(namespace=namespace, name=name, created_at=now, updated_at=now)
    return row


_THREAD_NAMES = Prepared(lambda ids: Thread.select(Thread.id, Thread.name).where(Thread.id.in_(ids)).tuples())


def thread_names(thread_ids: Iterable[int]) -> dict[int, str]:
    """Thread id -> name for the threads asked about (a result's few, not every thread of a
    namespace that gains one per session)."""
    ids = sorted(set(thread_ids))
    return {i: name for part in chunks(ids) for i, name in _THREAD_NAMES.rows(list(part))}


def configure_namespace(
    name: str, *, block_turn_size: int | None = None, block_decay_lambda: float | None = None
) -> NamespaceInfo:
    """Change settings. A new turn size applies to future blocks only; sealed blocks stay."""
    if block_turn_size is not None and (not isinstance(block_turn_size, int) or block_turn_size < 1):
        raise InvalidInputError(f"block_turn_size must be an integer >= 1, got {block_turn_size!r}")
    if block_decay_lambda is not None and (not isinstance(block_decay_lambda, (int, float)) or block_decay_lambda < 0):
        raise InvalidInputError(f"block_decay_lambda must be a number >= 0, got {block_decay_lambda!r}")
    with write_transaction():
        row = get_or_create_namespace(name)
        if block_turn_size is not None:
            row.block_turn_size = block_turn_size
        if block_decay_lambda is not None:
            row.block_decay_lambda = float(block_decay_lambda)
        row.revision += 1
        row.updated_at = now_iso()
        row.save()
    return namespace_info(name)


def namespace_info(name: str) -> NamespaceInfo:

    row = get_namespace(name)
    return NamespaceInfo(
        name=row.name,
        revision=row.revision,
        current_turn=row.current_turn,
        block_turn_size=row.block_turn_size,
        block_decay_lambda=row.block_decay_lambda,
        created_at=row.created_at,
        threads=Thread.select().where(Thread.namespace == row).count(),
        messages=Message.select().where(Message.namespace == row).count(),
    )


def list_namespaces() -> list[NamespaceInfo]:
    return [namespace_info(row.name) for row in Namespace.select().order_by(Namespace.name)]
