"""Which opens make a database, and the modes of the files Strata writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from core.db import db
from core.errors import StoreUnavailableError
from core.api import open_store


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(autouse=True)
def _closed():
    yield
    if db.obj is not None and not db.is_closed():
        db.close()


@pytest.fixture
def loose_umask():
    """A umask that lets everyone read new files: Strata's modes must not depend on it."""
    previous = os.umask(0o002)
    yield
    os.umask(previous)


def test_a_read_open_of_a_missing_store_makes_nothing(tmp_path):
    path = tmp_path / "missing" / "dir" / "strata.db"
    with pytest.raises(StoreUnavailableError, match=f"no Strata database at {path}.*--create"):
        open_store(f"sqlite:///{path}", create=False)
    assert not (tmp_path / "missing").exists()


def test_a_read_open_of_an_empty_file_is_refused_and_leaves_it_empty(tmp_path):
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(StoreUnavailableError, match="no Strata database"):
        open_store(str(path), create=False)
    assert path.stat().st_size == 0 and not Path(f"{path}-wal").exists()


def test_a_read_open_of_an_existing_store_works(tmp_path):
    url = f"sqlite:///{tmp_path / 'strata.db'}"
    open_store(url).close()
    assert open_store(url, create=False).schema_version > 0


def test_a_new_store_is_private_whatever_the_umask(tmp_path, loose_umask):
    from core.services.capture import append_turn

    path = tmp_path / "a" / "b" / "strata.db"
    open_store(f"sqlite:///{path}")
    append_turn("ns", "t", "We ship on Friday.", "Noted.")  # the WAL and its index exist while open
    assert mode(path) == 0o600
    for suffix in ("-wal", "-shm"):
        assert mode(Path(f"{path}{suffix}")) == 0o600, suffix
    assert mode(tmp_path / "a") == 0o700 and mode(tmp_path / "a" / "b") == 0o700
    assert mode(tmp_path) == stat.S_IMODE(os.stat(tmp_path).st_mode)  # a directory it did not make is left


def _save_search_copies(monkeypatch) -> Path:
    from core.search import segment
    from core.services.capture import append_messages
    from core.services.search import search_raw
    from core.services.spaces import get_namespace
    from core.search.index import prepare_search

    monkeypatch.setattr(segment, "MERGE_MIN", 10)  # a segment this small is saved too
    append_messages("ns", "t", [{"role": "user", "content": f"kubernetes rollback step {i}"} for i in range(40)])
    prepare_search([get_namespace("ns").id])
    assert search_raw("ns", "kubernetes")
    folder = segment.saved_folder()
    assert list(folder.glob("message-*.json")), "no copy was saved"
    return folder


def test_search_index_copies_are_as_private_as_the_store(tmp_path, monkeypatch, loose_umask):
    open_store(f"sqlite:///{tmp_path / 'strata.db'}")
    folder = _save_search_copies(monkeypatch)
    assert mode(folder) == 0o700
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files and {mode(p) for p in files} == {0o600}
    assert {mode(p) for p in folder.rglob("*") if p.is_dir()} == {0o700}


def test_search_index_copies_follow_a_store_shared_with_a_group(tmp_path, monkeypatch, loose_umask):
    path = tmp_path / "shared.db"
    open_store(f"sqlite:///{path}").close()
    os.chmod(path, 0o640)
    open_store(f"sqlite:///{path}")
    folder = _save_search_copies(monkeypatch)
    assert mode(folder) == 0o750
    assert {mode(p) for p in folder.rglob("*") if p.is_file()} == {0o640}
