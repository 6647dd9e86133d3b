"""Shared fixtures: every test gets its own temporary file database."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.db import db
from core.store import open_store


@pytest.fixture
def db_url(tmp_path):
    return f"sqlite:///{tmp_path / 'strata.db'}"


@pytest.fixture
def store(db_url):
    opened = open_store(db_url)
    yield opened
    if db.obj is not None and not db.is_closed():
        db.close()


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory) -> Path:
    """The demo memory, built once per run (about 3 s); tests take copies of it."""
    from core.demo import build_demo

    path = tmp_path_factory.mktemp("demo-template") / "demo.db"
    build_demo(f"sqlite:///{path}")
    db.close()  # the last connection: SQLite folds the WAL back into the file
    return path


@pytest.fixture(scope="module")
def demo_url(demo_template, tmp_path_factory) -> str:
    """A copy of the demo shared by a module's tests (those that only read it)."""
    from tests.stores import copy_of

    return copy_of(demo_template, tmp_path_factory.mktemp("demo") / "demo.db")


@pytest.fixture
def demo(demo_url):
    """The shared demo copy, opened; the namespace name."""
    open_store(demo_url, recover=False)
    yield "demo"
    db.close()
