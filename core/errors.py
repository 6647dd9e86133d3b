"""Exceptions the core raises. Each message says what went wrong and where."""

from __future__ import annotations


class StrataError(Exception):
    """Base class for every error the core raises on purpose."""


class SchemaTooNewError(StrataError):
    """The database was written by a newer Strata than this one."""


class ReceiptConflictError(StrataError):
    """A receipt id was replayed with a different payload."""


class NotFoundError(StrataError):
    """A namespace, thread, block or job that was asked for does not exist."""


class InvalidInputError(StrataError):
    """Input that cannot be stored; the message names the file, line or field."""


class DuplicateError(InvalidInputError):
    """A write that restates something still standing: ``existing_id`` names what it restates."""

    def __init__(self, message: str, existing_id: int | str) -> None:
        super().__init__(message)
        self.existing_id = existing_id


class BlockNotReadyError(StrataError):
    """A pending block cannot be expanded or rendered yet."""


class StorageConflictError(StrataError):
    """Another writer changed the data between read and write."""


class StoreUnavailableError(StrataError):
    """The database cannot be opened or used: not a Strata store, unreadable, locked, no driver."""
