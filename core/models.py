"""peewee models: the persisted shape of a memory.

SQL stays portable (no SQLite-only column types); JSON is stored as text so the same
models serve PostgreSQL. Every row hangs off a Namespace and is deleted with it.
"""

from __future__ import annotations

import json
from typing import Any

from peewee import (
    BooleanField,
    CharField,
    FloatField,
    ForeignKeyField,
    IntegerField,
    Model,
    TextField,
)

from core.db import db


class JSONTextField(TextField):
    """JSON stored as text: portable across SQLite and PostgreSQL."""

    def db_value(self, value: Any) -> str | None:
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    def python_value(self, value: str | None) -> Any:
        if value is None:
            return None
        return json.loads(value)


class BaseModel(Model):
    class Meta:
        database = db


class SchemaVersion(BaseModel):
    """One row per applied schema version; the highest is the database's version."""

    version = IntegerField(primary_key=True)
    applied_at = CharField()

    class Meta:
        table_name = "strata_schema"


class Namespace(BaseModel):
    """A memory space: everything below is isolated per namespace."""

    name = CharField(max_length=255, unique=True)
    revision = IntegerField(default=0)
    current_turn = IntegerField(default=0)
    block_count = IntegerField(default=0)
    block_turn_size = IntegerField(default=12)
    block_decay_lambda = FloatField(default=0.30)
    created_at = CharField()
    updated_at = CharField()


class Thread(BaseModel):
    """A conversation inside a namespace; open tails, blocks and decay are per thread."""

    namespace = ForeignKeyField(Namespace, backref="threads", on_delete="CASCADE")
    name = CharField(max_length=500)
    message_count = IntegerField(default=0)
    turn_count = IntegerField(default=0)
    sealed_turns = IntegerField(default=0)
    block_count = IntegerField(default=0)
    ready_count = IntegerField(default=0)
    created_at = CharField()
    updated_at = CharField()

    class Meta:
        indexes = ((("namespace", "name"), True),)


class Block(BaseModel):
    """A sealed run of turns with its six views; L5 is its messages."""

    namespace = ForeignKeyField(Namespace, backref="blocks", on_delete="CASCADE")
    thread = ForeignKeyField(Thread, backref="blocks", on_delete="CASCADE")
    sequence = IntegerField()
    start_turn = IntegerField()
    end_turn = IntegerField()
    message_count = IntegerField()
    created_at = CharField()
    status = CharField(max_length=16, default="pending", index=True)
    l0_title = TextField(null=True)
    l0_tags = JSONTextField(null=True)
    l1_summary = TextField(null=True)
    l2_keypoints = JSONTextField(null=True)
    should_extract = BooleanField(null=True)
    l3_text = TextField()
    l4_text = TextField()
    tokens_l3 = IntegerField()
    tokens_l4 = IntegerField()
    tokens_l5 = IntegerField()
    ready_position = IntegerField(null=True)
    pointer_current_level = IntegerField(default=5)
    pointer_anchor_level = IntegerField(default=5)
    pointer_anchor_position = IntegerField(default=1)
    last_lifted_at = CharField(null=True)
    last_lifted_by = CharField(max_length=8, null=True)

    class Meta:
        indexes = (
            (("namespace", "sequence"), True),
            (("thread", "sequence"), False),
        )


class Message(BaseModel):
    """One raw message; ``block`` is null while it sits in its thread's open tail."""

    namespace = ForeignKeyField(Namespace, backref="messages", on_delete="CASCADE")
    thread = ForeignKeyField(Thread, backref="messages", on_delete="CASCADE")
    block = ForeignKeyField(Block, backref="messages", null=True, on_delete="CASCADE")
    position = IntegerField()
    turn = IntegerField()
    ns_turn = IntegerField()
    role = CharField(max_length=16)
    speaker = CharField(max_length=255, null=True)
    content = TextField()
    created_at = CharField()
    created_ts = FloatField(index=True)
    external_id = CharField(max_length=255, null=True)
    tool_calls = JSONTextField(null=True)

    class Meta:
        indexes = (
            (("thread", "position"), True),
            (("namespace", "external_id"), False),
            (("block", "position"), False),
        )


class IngestionReceipt(BaseModel):
    """Proof that a unit of input was stored; a replay with the same payload is a no-op."""

    namespace = ForeignKeyField(Namespace, backref="receipts", on_delete="CASCADE")
    receipt_id = CharField(max_length=500)
    payload_hash = CharField(max_length=64)
    result = JSONTextField(null=True)
    created_at = CharField()

    class Meta:
        indexes = ((("namespace", "receipt_id"), True),)


class Job(BaseModel):
    """A persisted, retryable unit of derivation work (summary, extraction, graph)."""

    namespace = ForeignKeyField(Namespace, backref="jobs", on_delete="CASCADE")
    kind = CharField(max_length=32)
    block = ForeignKeyField(Block, backref="jobs", null=True, on_delete="CASCADE")
    status = CharField(max_length=16, default="pending")
    attempts = IntegerField(default=0)
    priority = IntegerField(default=0)
    last_error = TextField(null=True)
    next_retry_at = FloatField(null=True)
    payload = JSONTextField(null=True)
    created_at = CharField()
    updated_at = CharField()

    class Meta:
        indexes = (
            (("status", "next_retry_at"), False),
            (("kind", "block"), False),
        )


ALL_MODELS: list[type[BaseModel]] = [
    SchemaVersion,
    Namespace,
    Thread,
    Block,
    Message,
    IngestionReceipt,
    Job,
]
