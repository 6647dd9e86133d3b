"""Shared fixtures: every test gets its own temporary file database."""

from __future__ import annotations

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
