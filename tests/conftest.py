"""Shared fixtures: every test gets its own temporary database.

``STRATA_TEST_DB=postgresql://…`` runs the suite on PostgreSQL (see tests/stores.py);
otherwise each store is a SQLite file under the test's tmp_path.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from core.db import db
from core.api import open_store
from tests import stores, tiers


def pytest_report_header(config):
    return f"strata test database: {stores.engine_name()}" + (f" ({stores.TEST_DB})" if stores.on_postgres() else "")


@pytest.hookimpl(tryfirst=True)  # before -m selects by the marks it adds
def pytest_collection_modifyitems(config, items):
    tiers.mark(items)
    if not stores.on_postgres():
        return
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {marker.kwargs.get('reason', '')}"))


@pytest.fixture(autouse=True)
def _own_databases():
    """On PostgreSQL, drop the databases a test made once it ends (fixtures of a wider scope
    are set up before this one, so theirs are kept for them to drop)."""
    position = stores.mark()
    yield
    if stores.on_postgres():
        if db.obj is not None and not db.is_closed():
            db.close()
        stores.drop_since(position)


@pytest.fixture(scope="session")
def _private_dirs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("user-dirs")


@pytest.fixture(autouse=True)
def _no_user_dirs(_private_dirs, monkeypatch):
    """No test reads or writes the developer's own config and data directories: the remembered
    default database (`strata db`), config.yaml and the built-in default store lie under a
    directory of the test's own (not created until something is written there). Processes a test
    starts inherit it."""
    own = _private_dirs / str(next(_private_dir_numbers))
    monkeypatch.setenv("STRATA_CONFIG_DIR", str(own / "config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(own / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(own / "xdg-data"))


_private_dir_numbers = itertools.count()


@pytest.fixture(scope="session", autouse=True)
def _postgres_session():
    if stores.on_postgres():
        stores.start_session()
    yield
    if stores.on_postgres():
        stores.end_session()


@pytest.fixture
def cli_without_strata_db(monkeypatch):
    """A CLI test's surroundings: no $STRATA_DB from the caller's shell, and the store the command
    opened closed afterwards (the CLI leaves it open, as a process that exits may)."""
    monkeypatch.delenv("STRATA_DB", raising=False)
    yield
    if db.obj is not None and not db.is_closed():
        db.close()


@pytest.fixture
def db_url(tmp_path):
    return stores.fresh_url(tmp_path)


@pytest.fixture
def store(db_url):
    opened = open_store(db_url)
    yield opened
    if db.obj is not None and not db.is_closed():
        db.close()


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory) -> Path | str:
    """The demo memory, built once per run (about 3 s); tests take copies of it (``copy_of``):
    a SQLite file, or on PostgreSQL a template database."""
    from core.demo import build_demo

    if stores.on_postgres():
        url = stores.fresh_url(None)
        build_demo(url)
        stores.close_template()
        yield url
        stores.drop(url)
        return
    path = tmp_path_factory.mktemp("demo-template") / "demo.db"
    build_demo(f"sqlite:///{path}")
    db.close()  # the last connection: SQLite folds the WAL back into the file
    yield path


@pytest.fixture(scope="module")
def demo_url(demo_template, tmp_path_factory) -> str:
    """A copy of the demo shared by a module's tests (those that only read it)."""
    url = stores.copy_of(demo_template, tmp_path_factory.mktemp("demo") / "demo.db")
    yield url
    if stores.on_postgres():
        stores.drop(url)


@pytest.fixture
def demo(demo_url):
    """The shared demo copy, opened; the namespace name."""
    open_store(demo_url, recover=False)
    yield "demo"
    db.close()
