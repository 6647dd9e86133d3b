"""Files Strata creates: private to the user unless the database says otherwise.

Memory holds whole conversations, so a new database is created mode 0600 and a directory Strata
makes for it 0700, whatever the umask (which could only take bits away). Files written beside an
existing database (the search-index copies) take that database's mode, so a store an
administrator shared with a group stays readable by that group. Each file gets its mode when it
is created, before a byte of memory is written to it; SQLite gives the -wal and -shm files it
creates the mode of their database.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def make_private_dirs(folder: Path) -> None:
    """Create ``folder`` and any missing parents, each one Strata creates 0700; existing ones are
    left as they are."""
    missing: list[Path] = []
    current = folder
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:  # another process made it meanwhile: theirs, left alone
            continue
        os.chmod(path, PRIVATE_DIR)


def create_private_file(path: Path) -> bool:
    """Create an empty ``path`` mode 0600 (its missing directories 0700); False when it exists."""
    make_private_dirs(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)
    return True


def modes_beside(database: Path) -> tuple[int, int]:
    """(file mode, directory mode) for what is written beside ``database``: its read and write bits,
    and for a directory an execute bit wherever it grants read. 0600/0700 when it cannot be read."""
    try:
        bits = stat.S_IMODE(os.stat(database).st_mode) & 0o666
    except OSError:
        return PRIVATE_FILE, PRIVATE_DIR
    bits |= PRIVATE_FILE  # the owner always reads and writes its own copies
    return bits, bits | ((bits & 0o444) >> 2)


def make_dir(path: Path, mode: int, *, exist_ok: bool = False) -> None:
    """``mkdir`` with exactly ``mode`` (not ``mode`` less the umask) when it creates ``path``."""
    try:
        path.mkdir(mode=mode)
    except FileExistsError:
        if exist_ok and path.is_dir():
            return
        raise
    os.chmod(path, mode)


def open_new(path: Path, mode: int, *, text: bool = False) -> IO:
    """A new file at ``path`` opened for writing with exactly ``mode`` from its creation on (an
    earlier file there is replaced)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)
        return os.fdopen(fd, "w", encoding="utf-8") if text else os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise
