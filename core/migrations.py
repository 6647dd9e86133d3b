"""Schema versions and the forward-only migration runner.

A fresh database gets the current models and the current version in one step.
An older database runs each pending migration in its own transaction. A database
written by a newer Strata is refused: silently running old code on it could lose data.
"""

from __future__ import annotations

from typing import Callable

from peewee import Database, PostgresqlDatabase

from core.db import db
from core.errors import SchemaTooNewError
from core.models import ALL_MODELS, SchemaVersion, create_late_indexes
from core.timeutil import now_iso

SCHEMA_VERSION = 26


def _v2_events_and_graph(database: Database) -> None:
    """Version 2: event cards, their sources and links, and the knowledge graph."""
    from core.models import V2_MODELS

    database.create_tables(V2_MODELS)


def _v3_search_index(database: Database) -> None:
    """Version 3: the incremental search index, backfilled from what is stored."""
    from core.models import V3_MODELS
    from core.search.index import rebuild_index

    database.create_tables(V3_MODELS)
    rebuild_index()


def _v4_gate(database: Database) -> None:
    """Version 4: retrieval batches, use receipts and retrieval traces."""
    from core.models import V4_MODELS

    database.create_tables(V4_MODELS)


def _v5_imports(database: Database) -> None:
    """Version 5: external-memory import batches, their items and undo pre-images."""
    from core.models import V5_MODELS

    database.create_tables(V5_MODELS)


def _v6_scale_indexes(database: Database) -> None:
    """Version 6: graph nodes by (namespace, updated_at) for the projector's name index, jobs
    in claim order (status, priority desc, id), events in timeline order (event_chronology)."""
    from core.models import Event, GraphNode, Job

    for model in (GraphNode, Job, Event):
        model._schema.create_indexes(safe=True)


def _v7_message_time_flag(database: Database) -> None:
    """Version 7: ``message.has_time`` (content names a resolvable time), filled for every
    stored message so default retrieval never parses candidates' text at query time."""
    from playhouse.migrate import SchemaMigrator, migrate as run

    from core.models import Message
    from core.timeparse import has_dated_mention
    from core.timeutil import parse_timestamp

    if "has_time" not in {c.name for c in database.get_columns(Message._meta.table_name)}:
        run(SchemaMigrator.from_database(database).add_column(Message._meta.table_name, "has_time", Message.has_time))
    last = 0
    while True:  # in pages by id: a million messages never sit in memory at once
        rows = list(
            Message.select(Message.id, Message.content, Message.created_at)
            .where(Message.id > last)
            .order_by(Message.id)
            .limit(900)
            .tuples()
        )
        if not rows:
            break
        flagged = {True: [], False: []}
        for mid, content, created_at in rows:
            try:
                flag = has_dated_mention(content or "", parse_timestamp(created_at))
            except Exception:  # noqa: BLE001 - an unreadable stored time: no flag, as retrieval did
                flag = False
            flagged[flag].append(mid)
        for flag, ids in flagged.items():
            if ids:
                Message.update(has_time=flag).where(Message.id.in_(ids)).execute()
        last = rows[-1][0]


def _v8_open_tail_and_ready_block_indexes(database: Database) -> None:
    """Version 8: a partial index of unsealed messages by (thread, position), so capture
    finds a thread's open tail without reading the thread's whole history; blocks by
    (namespace, status, sequence), so the newest ready blocks are found past a backlog."""
    from core.models import Block, Message

    for model in (Message, Block):
        model._schema.create_indexes(safe=True)


def _v9_search_removals(database: Database) -> None:
    """Version 9: the log of documents removed from the search index, so a cached segment
    drops them instead of being rebuilt from every posting."""
    from core.models import SearchRemoval

    database.create_tables([SearchRemoval])


def _v10_event_change_index(database: Database) -> None:
    """Version 10: events by (namespace, updated_at), so the newest change to a namespace's
    events is found without counting them (graph search asks before every query)."""
    from core.models import Event

    Event._schema.create_indexes(safe=True)


def _v11_event_day_lane_index(database: Database) -> None:
    """Version 11: events by (namespace, chronology, happened, mentioned), so the timeline
    histogram's counts by day and lane are read from the index alone."""
    from core.models import Event

    Event._schema.create_indexes(safe=True)


def _v12_job_claim_by_namespace_index(database: Database) -> None:
    """Version 12: jobs in claim order within a namespace, so claiming one namespace's next job
    does not walk past the pending jobs of every other namespace."""
    from core.models import Job

    Job._schema.create_indexes(safe=True)


def _v13_event_status_by_id_index(database: Database) -> None:
    """Version 13: events' statuses by id in an index, so reading the statuses of a record's
    citations touches a few index pages instead of one event row page per citation."""
    from core.models import Event

    Event._schema.create_indexes(safe=True)


def _v14_graph_endings(database: Database) -> None:
    """Version 14: why each fact or edge ended, so forgetting the event (or the newer value)
    that ended one makes it current again. Records ended earlier have no such rows and stay
    history: what ended them was not kept."""
    from core.models import GraphEnding

    database.create_tables([GraphEnding])


def _v15_special_event_index(database: Database) -> None:
    """Version 15: pinned and safety-critical events in a partial index, so automatic context finds
    them without scanning every event of the namespace."""
    from core.models import Event

    Event._schema.create_indexes(safe=True)


def _v16_event_fingerprints(database: Database) -> None:
    """Version 16: ``event.fingerprint`` (the wording's identity) with an index, filled for every
    stored event, so an import looks its candidates' exact duplicates up instead of hashing all."""
    from playhouse.migrate import SchemaMigrator, migrate as run

    from core.models import Event
    from core.text import fingerprint

    # A store migrated to 15 by bc66626 holds an index on the constant "fingerprint" (see
    # EVENT_FINGERPRINT_INDEX); with the column added it would be corrupt.
    database.execute_sql('DROP INDEX IF EXISTS "event_namespace_id_fingerprint"')
    if "fingerprint" not in {c.name for c in database.get_columns(Event._meta.table_name)}:
        run(SchemaMigrator.from_database(database).add_column(Event._meta.table_name, "fingerprint", Event.fingerprint))
    marker = database.param
    update = f'UPDATE "{Event._meta.table_name}" SET "fingerprint" = {marker} WHERE "id" = {marker}'
    last = 0
    while True:  # in pages by id, like the time flags of version 7
        rows = list(
            Event.select(Event.id, Event.title, Event.summary)
            .where((Event.id > last) & Event.fingerprint.is_null())
            .order_by(Event.id)
            .limit(2000)
            .tuples()
        )
        if not rows:
            break
        database.cursor().executemany(update, [(fingerprint(title, summary), eid) for eid, title, summary in rows])
        last = rows[-1][0]
    create_late_indexes(database)


def _v17_job_claims(database: Database) -> None:
    """Version 17: who claimed a running job and when (``job.claimed_by``, ``job.claimed_at``), so
    a store opened while another process derives leaves that process's jobs running."""
    from playhouse.migrate import SchemaMigrator, migrate as run

    from core.models import Job

    have = {c.name for c in database.get_columns(Job._meta.table_name)}
    migrator = SchemaMigrator.from_database(database)
    if "claimed_by" not in have:
        run(migrator.add_column(Job._meta.table_name, "claimed_by", Job.claimed_by))
    if "claimed_at" not in have:
        run(migrator.add_column(Job._meta.table_name, "claimed_at", Job.claimed_at))


def _v18_event_type_day_lane_index(database: Database) -> None:
    """Version 18: events by (namespace, type, chronology, happened, mentioned), so the timeline's
    day counts for one type are read from the index alone."""
    from core.models import Event

    Event._schema.create_indexes(safe=True)


def _v19_postings_by_namespace(database: Database) -> None:
    """Version 19: postings indexed by namespace instead of (namespace, term). Nothing reads a
    term's rows through SQL at run time; the term index cost a random page per posting written
    (ingest 3,670 -> 4,844 msg/s at 40k messages without it)."""
    from core.models import EventTerm, MessageTerm

    for model in (MessageTerm, EventTerm):
        database.execute_sql(f'DROP INDEX IF EXISTS "{model._meta.table_name}_namespace_term"')
        model._schema.create_indexes(safe=True)


def _v20_ordered_jobs(database: Database) -> None:
    """Version 20: ``job.transient`` (a failure that passes is tried again by the next run), jobs
    by kind in claim order, and blocks whose summary or extraction failed for good marked
    ``failed``: derivation now runs a namespace's extractions in block order, and a block that
    can never become ready must not hold back the ones after it."""
    from playhouse.migrate import SchemaMigrator, migrate as run

    from core.models import Block, Job

    if "transient" not in {c.name for c in database.get_columns(Job._meta.table_name)}:
        run(SchemaMigrator.from_database(database).add_column(Job._meta.table_name, "transient", Job.transient))
    Job._schema.create_indexes(safe=True)
    dead = Job.select(Job.block).where(
        (Job.status == "failed")
        & (Job.attempts >= 3)
        & Job.block.is_null(False)
        & Job.kind.in_(("summary", "extraction"))
    )
    Block.update(status="failed").where((Block.status == "pending") & Block.id.in_(dead)).execute()


def _v21_postgres_columns_as_on_sqlite(database: Database) -> None:
    """Version 21, PostgreSQL only: columns hold what SQLite's hold. Integer columns become BIGINT
    and float ones DOUBLE PRECISION (see ``core.db.POSTGRES_FIELD_TYPES``): stores made before held
    epoch timestamps in REAL, good to 128 seconds. VARCHAR(n) columns lose their length (see
    ``core.models.CharField``): a longer speaker name or external id, stored on SQLite, was refused.
    SQLite's columns are 64-bit and unchecked already."""
    from core.db import POSTGRES_FIELD_TYPES

    if not isinstance(getattr(database, "obj", database), PostgresqlDatabase):  # the proxy, or a database
        return
    narrow = {"integer": POSTGRES_FIELD_TYPES["INT"], "real": POSTGRES_FIELD_TYPES["FLOAT"]}
    for model in ALL_MODELS:
        table = model._meta.table_name
        rows = database.execute_sql(
            "SELECT column_name, data_type, character_maximum_length FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s",
            (table,),
        ).fetchall()
        changes = [f'ALTER COLUMN "{name}" TYPE {narrow[kind]}' for name, kind, _ in rows if kind in narrow]
        changes += [
            f'ALTER COLUMN "{name}" TYPE VARCHAR'
            for name, kind, length in rows
            if kind == "character varying" and length is not None
        ]  # no rewrite: only widened
        if changes:
            database.execute_sql(f'ALTER TABLE "{table}" {", ".join(changes)}')
        for name, kind, _ in rows:  # a SERIAL's sequence is INTEGER too, and stops at 2**31 - 1
            if kind == "integer":
                sequence = database.execute_sql(
                    "SELECT pg_get_serial_sequence(%s, %s)", (f'"{table}"', name)
                ).fetchone()[0]
                if sequence:
                    database.execute_sql(f"ALTER SEQUENCE {sequence} AS BIGINT")


def _v22_import_model_accounting(database: Database) -> None:
    """Version 22: what a model said an import decision matched (``import_item.matched``) and the
    tokens its calls used, per item and per batch (``usage``), so a batch shows what it cost."""
    from playhouse.migrate import SchemaMigrator, migrate as run

    from core.models import ImportBatch, ImportItem

    migrator = SchemaMigrator.from_database(database)
    items = {c.name for c in database.get_columns(ImportItem._meta.table_name)}
    batches = {c.name for c in database.get_columns(ImportBatch._meta.table_name)}
    if "matched" not in items:
        run(migrator.add_column(ImportItem._meta.table_name, "matched", ImportItem.matched))
    if "usage" not in items:
        run(migrator.add_column(ImportItem._meta.table_name, "usage", ImportItem.usage))
    if "usage" not in batches:
        run(migrator.add_column(ImportBatch._meta.table_name, "usage", ImportBatch.usage))


def _v23_governed_records(database: Database) -> None:
    """Version 23: governed records (``memory_record``), their append-only audit trail
    (``audit_entry``), the context ledger (``ledger_entry``) and a namespace's governance policy
    (``namespace.policy``)."""
    from playhouse.migrate import SchemaMigrator, migrate as run

    from core.models import V23_MODELS, Namespace

    database.create_tables(V23_MODELS, safe=True)
    columns = {c.name for c in database.get_columns(Namespace._meta.table_name)}
    if "policy" not in columns:
        run(SchemaMigrator.from_database(database).add_column(Namespace._meta.table_name, "policy", Namespace.policy))


def _v24_notes(database: Database) -> None:
    """Version 24: task-outcome notes and topic pages (``note``), immutable versions with a public id."""
    from core.models import V24_MODELS

    database.create_tables(V24_MODELS, safe=True)


def _v25_note_aliases(database: Database) -> None:
    """Version 25: the old ids of notes imported from a gitmemo repository (``notealias``)."""
    from core.models import V25_MODELS

    database.create_tables(V25_MODELS, safe=True)


def _v26_associations(database: Database) -> None:
    """Version 26: co-activation edges between event cards used together (``association``), and
    events by when they were said (``event_mentioned``)."""
    from core.models import V26_MODELS, Event

    database.create_tables(V26_MODELS, safe=True)
    Event._schema.create_indexes(safe=True)


# version -> function that upgrades from version - 1. Append only; never edit a shipped one.
# A migration creates tables from the current models, so a later change to those models
# needs its own migration that checks whether the column already exists.
MIGRATIONS: dict[int, Callable[[Database], None]] = {
    2: _v2_events_and_graph,
    3: _v3_search_index,
    4: _v4_gate,
    5: _v5_imports,
    6: _v6_scale_indexes,
    7: _v7_message_time_flag,
    8: _v8_open_tail_and_ready_block_indexes,
    9: _v9_search_removals,
    10: _v10_event_change_index,
    11: _v11_event_day_lane_index,
    12: _v12_job_claim_by_namespace_index,
    13: _v13_event_status_by_id_index,
    14: _v14_graph_endings,
    15: _v15_special_event_index,
    16: _v16_event_fingerprints,
    17: _v17_job_claims,
    18: _v18_event_type_day_lane_index,
    19: _v19_postings_by_namespace,
    20: _v20_ordered_jobs,
    21: _v21_postgres_columns_as_on_sqlite,
    22: _v22_import_model_accounting,
    23: _v23_governed_records,
    24: _v24_notes,
    25: _v25_note_aliases,
    26: _v26_associations,
}


def database_version(database: Database) -> int:
    if not database.table_exists(SchemaVersion._meta.table_name):
        return 0
    row = SchemaVersion.select(SchemaVersion.version).order_by(SchemaVersion.version.desc()).first()
    return row.version if row else 0


def migrate(database: Database | None = None, progress: Callable[[int, int, str], None] | None = None) -> int:
    """Bring the open database to SCHEMA_VERSION; returns the version it now has.

    Safe when several processes open one store at once: each step runs in a write transaction
    (the write lock taken first) and reads the version again inside it, so the first opener
    creates or upgrades and the others find the work done instead of repeating it (four
    processes opening a new file at once used to clash on the version row).
    ``progress(done, total, label)`` is told about each migration (only when there are some: a
    backfill can take a while on a large store, such as 16's fingerprints, ~19 s at 1M events)."""
    from core.db import write_transaction

    database = database or db
    current = database_version(database)
    _refuse_newer(current)
    if current == SCHEMA_VERSION:
        return SCHEMA_VERSION
    start = current
    while True:
        with write_transaction():
            current = database_version(database)
            _refuse_newer(current)
            if current == SCHEMA_VERSION:
                break
            if current == 0:
                database.create_tables(ALL_MODELS)
                create_late_indexes(database)
                SchemaVersion.create(version=SCHEMA_VERSION, applied_at=now_iso())
                return SCHEMA_VERSION
            version = current + 1
            if progress:
                progress(version - start - 1, SCHEMA_VERSION - start, f"schema {start} -> {version}")
            MIGRATIONS[version](database)
            SchemaVersion.create(version=version, applied_at=now_iso())
    if progress and start < SCHEMA_VERSION:
        progress(SCHEMA_VERSION - start, SCHEMA_VERSION - start, f"schema {SCHEMA_VERSION}")
    return SCHEMA_VERSION


def _refuse_newer(current: int) -> None:
    if current > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"database schema version {current} is newer than this Strata supports ({SCHEMA_VERSION}); "
            "upgrade Strata instead of opening it with an older version"
        )
