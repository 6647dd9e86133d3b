"""Opening databases: URLs, schema versions, WAL, two writers."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from core.db import db, is_sqlite, resolve_url, sqlite_path, write_transaction
from core.errors import InvalidInputError, SchemaTooNewError
from core.migrations import SCHEMA_VERSION, database_version
from core.models import Message, SchemaVersion
from core.services.stats import stats
from core.api import open_store
from tests.stores import fresh_url, on_postgres, query_plan

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.sqlite_only(reason="SQLite's PRAGMAs")
def test_fresh_database_gets_current_schema_and_wal(store):
    assert database_version(db) == SCHEMA_VERSION
    assert db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute_sql("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute_sql("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert db.execute_sql("PRAGMA wal_autocheckpoint").fetchone()[0] == 10000
    assert db.execute_sql("PRAGMA cache_size").fetchone()[0] == -128000


def test_newer_schema_is_refused(db_url, store):
    SchemaVersion.create(version=SCHEMA_VERSION + 1, applied_at="2030-01-01T00:00:00+00:00")
    db.close()
    with pytest.raises(SchemaTooNewError, match="newer"):
        open_store(db_url)


def test_reopening_keeps_data_and_version(db_url, store):
    from core.services.capture import append_turn

    append_turn("ns", "t", "u", "a")
    db.close()
    reopened = open_store(db_url)
    assert reopened.schema_version == SCHEMA_VERSION and stats("ns").messages == 2


def test_url_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("STRATA_DB", f"sqlite:///{tmp_path}/env.db")
    assert resolve_url(None).endswith("env.db")
    assert resolve_url("sqlite:///x.db") == "sqlite:///x.db"
    monkeypatch.delenv("STRATA_DB")
    assert resolve_url(None).startswith("sqlite:///") and resolve_url(None).endswith("strata.db")
    assert sqlite_path("sqlite:////abs/file.db") == Path("/abs/file.db")
    assert sqlite_path("postgresql://u@h/db") is None
    with pytest.raises(InvalidInputError):
        open_store("mysql://nope")
    with pytest.raises(InvalidInputError):
        open_store("sqlite:///:memory:")


WRITER = """
import sys
from core.api import open_store
from core.services.capture import append_turn
open_store(sys.argv[1])
for i in range(40):
    append_turn("ns", sys.argv[2], f"u{i}", f"a{i}", receipt_id=f"{sys.argv[2]}-{i}")
"""


def test_two_writer_processes_lose_nothing(db_url, store):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, db_url, name], cwd=ROOT) for name in ("alpha", "beta")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert Message.select().count() == 160
    from core.models import Thread

    for name in ("alpha", "beta"):
        thread = Thread.get(Thread.name == name)
        positions = [m.position for m in Message.select().where(Message.thread == thread).order_by(Message.position)]
        assert positions == list(range(1, 81))
        assert thread.turn_count == 40
    assert stats("ns").threads == 2 and stats("ns").blocks_pending == 6


def test_core_imports_without_textual_or_rich():
    code = (
        "import sys, core, core.store, core.services.capture, core.services.blocks, core.services.derive, "
        "core.services.stats, core.ingest, core.ingest.locomo, core.ingest.longmemeval, core.ingest.jsonl, core.demo;"
        "print(sorted(m for m in ('textual', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_no_core_module_imports_the_ui_even_lazily():
    import ast

    offenders = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} {n}"
                for n in names
                if n.split(".")[0] in ("workbench", "textual", "rich")
            ]
    assert offenders == []


def test_migration_to_6_adds_the_scale_indexes(db_url, store):
    def names() -> set[str]:
        return {ix.name for table in ("graphnode", "job", "event") for ix in db.get_indexes(table)}

    wanted = {ix.name for ix in db.get_indexes("graphnode") if ix.columns == ["namespace_id", "updated_at"]}
    wanted |= {ix.name for ix in db.get_indexes("job") if ix.columns == ["status", "priority", "id"]}
    wanted |= {"event_chronology"} & names()
    assert len(wanted) == 3
    for name in wanted:
        db.execute_sql(f'DROP INDEX "{name}"')
    SchemaVersion.delete().where(SchemaVersion.version >= 6).execute()
    db.close()
    assert open_store(db_url).schema_version == SCHEMA_VERSION and wanted <= names()


def test_migration_to_15_indexes_the_pinned_and_safety_events(db_url, store):
    """Automatic context reads them before every model call: from a small partial index, not a scan."""
    from core.models import LIVE, SPECIAL_EVENT, Event

    db.execute_sql('DROP INDEX "event_special"')
    _as_version(14)
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    assert "event_special" in {ix.name for ix in db.get_indexes("event")}
    query = (
        Event.select(Event.id)
        .where((Event.namespace == 1) & Event.status.in_(LIVE) & SPECIAL_EVENT)
        .order_by(Event.id.desc())
        .limit(100)
    )
    sql, params = query.sql()
    plan = query_plan(sql, params)
    assert "event_special" in plan


def _events_for_fingerprints() -> list[int]:
    from core.services.events import write_event
    from core.services.spaces import configure_namespace, get_namespace

    configure_namespace("ns")
    ns = get_namespace("ns")
    with write_transaction():
        return [
            write_event(
                ns.id,
                {"title": f"Fact {i}", "summary": f"Maya fact number {i}.", "source_message_ids": [], "temporal": {}},
                block=None,
                formed_turn=0,
            ).id
            for i in range(5)
        ]


def secondary_indexes(table: str) -> list:
    """The table's indexes but its primary key's (which PostgreSQL lists and SQLite does not)."""
    return [ix for ix in db.get_indexes(table) if not ix.name.endswith("_pkey")]


def _as_version(version: int) -> None:
    SchemaVersion.delete().execute()
    SchemaVersion.create(version=version, applied_at="2026-12-01T00:00:00+00:00")
    db.close()


@pytest.mark.parametrize(
    "bogus_index",
    [
        False,
        pytest.param(
            True, marks=pytest.mark.sqlite_only(reason="only SQLite takes an unknown quoted column for a string")
        ),
    ],
    ids=["from-14", "from-a-15-with-a-constant-index"],
)
def test_migration_to_16_fills_every_event_fingerprint(db_url, store, bogus_index):
    """From 14 the model's missing indexes are created (15) before the column exists (16): an index
    naming it then would index a string constant and be corrupt once the column is added."""
    from core.models import Event
    from core.text import fingerprint

    ids = _events_for_fingerprints()
    db.execute_sql('DROP INDEX "event_fingerprint"')
    db.execute_sql("ALTER TABLE event DROP COLUMN fingerprint")
    if bogus_index:  # what bc66626 left: v15 created it on the constant "fingerprint"
        db.execute_sql('CREATE INDEX "event_namespace_id_fingerprint" ON "event" ("namespace_id", "fingerprint")')
    else:
        db.execute_sql('DROP INDEX "event_special"')
    _as_version(15 if bogus_index else 14)
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    if is_sqlite():
        assert db.execute_sql("PRAGMA integrity_check").fetchall() == [("ok",)]
    rows = {e.id: e for e in Event.select()}
    assert [rows[i].fingerprint for i in ids] == [fingerprint(f"Fact {i}", f"Maya fact number {i}.") for i in range(5)]
    names = {ix.name for ix in db.get_indexes("event")}
    assert "event_fingerprint" in names and "event_namespace_id_fingerprint" not in names


def test_an_upgrade_reports_each_migration_and_a_current_store_reports_none(db_url, store, capsys):
    from workbench.cli import main

    calls = []
    db.close()
    open_store(db_url, progress=lambda *a: calls.append(a))
    assert calls == []  # already current
    _as_version(SCHEMA_VERSION - 2)
    open_store(db_url, progress=lambda *a: calls.append(a))
    v = SCHEMA_VERSION
    assert calls == [(0, 2, f"schema {v - 2} -> {v - 1}"), (1, 2, f"schema {v - 2} -> {v}"), (2, 2, f"schema {v}")]
    _as_version(SCHEMA_VERSION - 1)
    assert main(["stats", "--db", db_url]) == 0
    assert f"upgrading the store: schema {v - 1} -> {v} (1/1)" in capsys.readouterr().err


def test_migration_to_7_adds_and_fills_the_time_flag(db_url, store):
    from core.services.capture import append_messages

    append_messages(
        "ns",
        "t",
        [
            {
                "role": "user",
                "content": "We moved the launch to March 17, 2026.",
                "created_at": "2026-03-01T10:00:00+00:00",
            },
            {
                "role": "assistant",
                "content": "Noted, thanks for telling me.",
                "created_at": "2026-03-01T10:00:05+00:00",
            },
            {"role": "user", "content": "Let's talk some time about it.", "created_at": "2026-03-01T10:01:00+00:00"},
        ],
    )
    captured = [m.has_time for m in Message.select().order_by(Message.id)]
    assert captured == [True, False, False]  # a vague "some time" has no start
    db.execute_sql("ALTER TABLE message DROP COLUMN has_time")  # a version-6 store
    SchemaVersion.delete().execute()
    SchemaVersion.create(version=6, applied_at="2026-11-30T00:00:00+00:00")
    db.close()
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    assert [m.has_time for m in Message.select().order_by(Message.id)] == captured


def test_migration_to_8_adds_the_open_tail_and_ready_block_indexes(db_url, store):
    from core.services.capture import _OPEN_TAIL, append_messages
    from core.services.events import _READY_BLOCKS

    append_messages("ns", "t", [{"role": "user", "content": f"message {i}"} for i in range(3)])
    db.execute_sql("DROP INDEX message_open_tail")  # a version-7 store
    db.execute_sql("DROP INDEX block_namespace_id_status_sequence")
    SchemaVersion.delete().execute()
    SchemaVersion.create(version=7, applied_at="2026-11-30T00:00:00+00:00")
    db.close()
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    sql = _OPEN_TAIL.build(1).sql()[0]
    plan = query_plan(sql, [1])
    assert "message_open_tail" in plan  # not a walk over the thread's whole history
    sql = _READY_BLOCKS.build(1, 10, 8).sql()[0]
    plan = query_plan(sql, [1, "ready", 10, 8])
    assert "block_namespace_id_status_sequence" in plan  # not a walk over pending blocks


def test_migration_to_12_lets_a_claim_skip_other_namespaces_backlog(db_url, store):
    from core.services.jobs import _PENDING, claim_next, create_job
    from core.services.spaces import get_or_create_namespace

    with write_transaction():
        busy, quiet = get_or_create_namespace("busy"), get_or_create_namespace("quiet")
        for _ in range(5):
            create_job(busy, "summary")
        mine = create_job(quiet, "summary")
    db.execute_sql("DROP INDEX job_namespace_id_status_priority_id")  # a version-11 store
    SchemaVersion.delete().execute()
    SchemaVersion.create(version=11, applied_at="2026-11-30T00:00:00+00:00")
    db.close()
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    sql, params = _PENDING.build(quiet.id, ["summary"]).sql()
    plan = query_plan(sql, params)
    # Led by the namespace (version 20 adds one led by namespace and kind): not a walk past "busy"'s jobs.
    assert ("USING INDEX job_namespace_id_" if is_sqlite() else "using job_namespace_id_") in plan
    assert claim_next(quiet.id).id == mine.id


def test_migration_to_13_adds_the_index_citation_windows_read_statuses_from(db_url, store):
    from core.models import EVENT_STATUS_INDEX, GraphNode
    from core.services.events import write_event
    from core.services.graph import node_view
    from core.services.graph_apply import apply_projection
    from core.services.spaces import get_or_create_namespace

    with write_transaction():
        ns = get_or_create_namespace("ns")
        event = write_event(
            ns, {"title": "Ann", "summary": "Ann lives in Oslo.", "temporal": {}}, block=None, formed_turn=0
        )
    apply_projection(
        ns.id,
        [event.id],
        {
            "reason": "ok",
            "edges": [],
            "nodes": [
                {
                    "ref": "a",
                    "name": "Ann",
                    "type": "person",
                    "source_event_ids": [event.id],
                    "provenance": {"name": [event.id]},
                    "facts": [{"key": "lives_in", "value": "Oslo", "source_event_ids": [event.id]}],
                }
            ],
        },
    )
    db.execute_sql(f"DROP INDEX {EVENT_STATUS_INDEX}")  # a version-12 store
    SchemaVersion.delete().execute()
    SchemaVersion.create(version=12, applied_at="2026-11-30T00:00:00+00:00")
    db.close()
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    assert EVENT_STATUS_INDEX in {ix.name for ix in db.get_indexes("event")}
    view = node_view(GraphNode.get(GraphNode.name == "Ann").id)  # its citation windows name the index
    assert [(f.key, f.value) for f in view.current_facts] == [("lives_in", "Oslo")]


def test_migration_to_14_adds_the_graph_endings(db_url, store):
    from core.models import GraphEnding

    db.execute_sql("DROP TABLE graphending")  # a version-13 store
    SchemaVersion.delete().execute()
    SchemaVersion.create(version=13, applied_at="2026-11-30T00:00:00+00:00")
    db.close()
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    assert db.table_exists("graphending") and GraphEnding.select().count() == 0
    assert {tuple(ix.columns) for ix in secondary_indexes("graphending")} == {
        ("kind", "record_id", "cause_kind", "cause_id"),
        ("cause_kind", "cause_id"),
    }


def test_no_model_index_names_a_column_a_migration_adds():
    """Migrations 6, 10, 11, 13 and 15 create a model's missing indexes. One naming a column that a
    later migration adds would be built before the column exists, on the quoted name read as a
    string constant, and the column's arrival corrupts it; such an index must be created with its
    column (``create_late_indexes``), as event.fingerprint's is."""
    import inspect
    import re

    from core import migrations
    from core.models import ALL_MODELS, EVENT_FINGERPRINT_INDEX

    source = inspect.getsource(migrations)
    added = set(re.findall(r'add_column\(\s*(\w+)\._meta\.table_name,\s*"(\w+)"', source))
    assert len(added) == source.count("add_column(") and ("Event", "fingerprint") in added
    offenders = []
    for model in ALL_MODELS:
        for index in model._meta.fields_to_index():
            columns = {getattr(part, "column_name", None) for part in index._expressions}
            offenders += [
                f"{index._name} ({model.__name__}.{column})"
                for owner, column in added
                if owner == model.__name__ and column in columns
            ]
    assert offenders == []
    late = {getattr(part, "column_name", None) for part in EVENT_FINGERPRINT_INDEX._expressions}
    assert "fingerprint" in late  # the check above would have caught it as a model index


@pytest.mark.sqlite_only(reason="a SQLite file path that holds no database")
@pytest.mark.parametrize(
    "content, expected",
    [
        (b"hello, not a database\n" * 300, "is not a SQLite database"),
        (None, "is a directory"),
    ],
)
def test_a_path_that_is_no_database_is_a_clear_error(tmp_path, content, expected):
    from core.errors import StoreUnavailableError

    target = tmp_path / "x.db"
    if content is None:
        target.mkdir()
    else:
        target.write_bytes(content)
    with pytest.raises(StoreUnavailableError, match=expected) as caught:
        open_store(f"sqlite:///{target}")
    assert str(target) in str(caught.value)
    if content is not None:
        assert target.read_bytes() == content  # untouched


@pytest.mark.sqlite_only(reason="a SQLite file made by another program")
def test_another_programs_sqlite_file_is_not_turned_into_a_store(tmp_path):
    import sqlite3

    from core.errors import StoreUnavailableError

    path = tmp_path / "app.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE users (id INTEGER)")
    with pytest.raises(StoreUnavailableError, match=r"not a Strata store's \(users\)"):
        open_store(f"sqlite:///{path}")
    with sqlite3.connect(path) as con:
        assert [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["users"]


def test_a_postgresql_url_is_read_percent_decoded():
    from core.db import make_database

    database = make_database("postgresql://me%40corp:p%40ss%2Fw@db.internal:6543/strata")
    assert database.database == "strata" and database._field_types["INT"] == "BIGINT"
    assert database.connect_params == {"user": "me@corp", "password": "p@ss/w", "host": "db.internal", "port": 6543}


def test_postgresql_without_its_driver_names_the_extra_to_install(monkeypatch):
    import peewee

    from core.errors import StoreUnavailableError

    monkeypatch.setattr(peewee, "psycopg2", None)
    monkeypatch.setattr(peewee, "psycopg", None)
    with pytest.raises(StoreUnavailableError, match=r"pip install 'strata-memory\[postgres\]'"):
        open_store("postgresql://me@127.0.0.1:1/strata")


def _with_foreign_table(url: str, table: str) -> None:
    from core.db import make_database

    other = make_database(url)
    other.execute_sql(f"CREATE TABLE {table} (id INTEGER)")
    other.close()


def test_a_database_with_a_table_named_like_ours_is_refused(tmp_path):
    from core.errors import StoreUnavailableError

    url = fresh_url(tmp_path, "theirs.db", empty=True)
    _with_foreign_table(url, "message")
    with pytest.raises(StoreUnavailableError, match=r"not a Strata store's \(message\)"):
        open_store(url)


@pytest.mark.skipif(not on_postgres(), reason="SQLite refuses any table it did not make (see above)")
def test_a_shared_postgresql_database_keeps_its_other_tables(tmp_path):
    url = fresh_url(tmp_path, empty=True)
    _with_foreign_table(url, "users")
    assert open_store(url).schema_version == SCHEMA_VERSION
    assert "users" in db.get_tables() and Message.select().count() == 0


@pytest.mark.parametrize("url, expected", [("", "database URL is empty"), ("postgresql://", "names no database")])
def test_empty_urls_are_refused(url, expected):
    with pytest.raises(InvalidInputError, match=expected):
        open_store(url)


@pytest.mark.sqlite_only(reason="SQLite's file lock and busy timeout")
def test_a_writer_that_finds_the_lock_held_says_so(db_url, store):
    import sqlite3

    from core.errors import StoreUnavailableError

    holder = sqlite3.connect(sqlite_path(db_url), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        db.execute_sql("PRAGMA busy_timeout = 50")  # fail fast instead of the 5 s a person waits
        with pytest.raises(StoreUnavailableError, match="locked by another writer"):
            with write_transaction():
                Message.select().count()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_migration_to_18_lets_a_types_day_counts_read_one_index(db_url, store, monkeypatch):
    """The timeline's histogram for a common type: from the (namespace, type, …) index alone, not
    from every row of that type (11 s cold for 209k plans at a million messages)."""
    from core.models import Event
    from core.services import browse, events
    from core.services.spaces import configure_namespace
    from core.services.capture import append_messages
    from core.services.derive import run_pending

    configure_namespace("ns", block_turn_size=1)
    append_messages(
        "ns",
        "t",
        [{"role": "user", "content": "I will fly to Lisbon next week."}, {"role": "assistant", "content": "Noted."}],
        close_turn=True,
    )
    run_pending("ns")
    assert Event.select().where(Event.event_type == "plan").count()
    db.execute_sql('DROP INDEX "event_type_day_lane"')
    _as_version(17)
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    monkeypatch.setattr(events, "TYPE_LIST_MAX", 0)  # a common type: the clause is the type itself
    seen = []
    monkeypatch.setattr(browse, "_grouped_rows", lambda query: seen.append(query.sql()) or [])
    browse.event_day_counts("ns", browse.EventFilter(event_type="plan"))
    sql, params = seen[0]
    plan = query_plan(sql, params)
    if is_sqlite():  # PostgreSQL's planner picks the smallest index for a handful of rows
        assert "COVERING INDEX event_type_day_lane" in plan


def test_migration_to_19_indexes_postings_by_namespace_instead_of_term(db_url, store):
    def indexes(table: str) -> dict[str, list[str]]:
        return {ix.name: ix.columns for ix in secondary_indexes(table)}

    for table in ("messageterm", "eventterm"):
        db.execute_sql(f'DROP INDEX "{table}_namespace"')
        db.execute_sql(f'CREATE INDEX "{table}_namespace_term" ON "{table}" ("namespace", "term")')
    _as_version(18)
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    for table, doc in (("messageterm", "message_id"), ("eventterm", "event_id")):
        assert sorted(indexes(table).values()) == [[doc], ["namespace"]]


def test_migration_to_21_widens_postgresql_numbers(db_url, store):
    """PostgreSQL stores made before 21 held epoch timestamps in REAL (good to 128 s) and ids in
    32-bit INTEGER; SQLite's columns were 64-bit all along, and 21 leaves them alone."""
    from core.services.capture import append_turn

    append_turn("ns", "t", "u", "a")
    if on_postgres():
        db.execute_sql(
            "ALTER TABLE message ALTER COLUMN created_ts TYPE REAL, ALTER COLUMN id TYPE INTEGER, "
            "ALTER COLUMN thread_id TYPE INTEGER, ALTER COLUMN speaker TYPE VARCHAR(255)"
        )
        db.execute_sql("ALTER SEQUENCE message_id_seq AS INTEGER")
    _as_version(20)
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    if on_postgres():
        types = dict(
            db.execute_sql(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'message'"
            ).fetchall()
        )
        assert (types["created_ts"], types["id"], types["thread_id"]) == ("double precision", "bigint", "bigint")
        assert (
            db.execute_sql(
                "SELECT character_maximum_length FROM information_schema.columns "
                "WHERE table_name = 'message' AND column_name = 'speaker'"
            ).fetchone()[0]
            is None
        )
        assert (
            db.execute_sql(
                "SELECT data_type FROM information_schema.sequences WHERE sequence_name = 'message_id_seq'"
            ).fetchone()[0]
            == "bigint"
        )
    append_turn("ns", "t", "u2", "a2")
    later = Message.select().order_by(Message.id.desc()).first()  # to the microsecond, as on SQLite
    assert later.created_ts == pytest.approx(datetime.fromisoformat(later.created_at).timestamp(), abs=1e-5)
    assert stats("ns").messages == 4


def test_text_sqlite_keeps_is_kept_on_postgresql_too(store):
    """Declared lengths are checked by no engine: SQLite never did, and PostgreSQL's VARCHAR(255)
    refused a long speaker name or external id that SQLite stored."""
    from core.services.capture import append_messages

    speaker, external = "Dr. " + " ".join(["Maya"] * 60), "conversation-export:" + "x" * 300
    append_messages("ns", "t", [{"role": "user", "content": "hello", "speaker": speaker, "external_id": external}])
    stored = Message.get()
    assert (stored.speaker, stored.external_id) == (speaker, external)


def test_a_postgresql_database_that_does_not_store_utf8_is_refused_at_open():
    """In a SQL_ASCII database the first message with an en dash failed deep in the driver."""
    from core.errors import StoreUnavailableError
    from tests.stores import database_encoded_as, on_postgres

    if not on_postgres():
        pytest.skip("a PostgreSQL server's encodings; a SQLite file always stores UTF-8")
    url = database_encoded_as("SQL_ASCII")
    with pytest.raises(StoreUnavailableError, match="stores text as SQL_ASCII; Strata needs UTF8"):
        open_store(url)
    assert db.is_closed()
