"""peewee models: the persisted shape of a memory.

SQL stays portable (no SQLite-only column types); JSON is stored as text so the same
models serve PostgreSQL. Every row hangs off a Namespace and is deleted with it.
"""

from __future__ import annotations

import json
from typing import Any

import peewee
from peewee import (
    SQL,
    BooleanField,
    FloatField,
    ForeignKeyField,
    IntegerField,
    Model,
    TextField,
    fn,
)

from core.db import db


class CharField(peewee.CharField):
    """Text whose ``max_length`` no engine enforces. SQLite never checks a VARCHAR's length, while
    PostgreSQL's VARCHAR(n) refused what SQLite stored (a speaker name or an external id of 300
    characters): the same memory could not be kept on both. The column is a plain VARCHAR; the
    length stays as what callers that clip a value clip it to."""

    def get_modifiers(self):
        return None


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
    # What governs records written here (core.services.policy): which sources are trusted.
    policy = JSONTextField(null=True)
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
            # Newest blocks of one status (schema v8): the extraction timeline's recency walk
            # reads ready blocks newest first, past a backlog of pending ones.
            (("namespace", "status", "sequence"), False),
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
    # Whether the content names a resolvable time (the "when …?" boost of default retrieval),
    # found once at capture; null only on a row no Strata since schema 7 has written.
    has_time = BooleanField(null=True)

    class Meta:
        indexes = (
            (("thread", "position"), True),
            (("namespace", "external_id"), False),
            (("block", "position"), False),
        )


# A thread's open tail (schema v8): its unsealed messages in order, without walking the
# thread's whole history (a long thread has thousands of sealed messages before the tail).
Message.add_index(
    Message.index(Message.thread, Message.position, name="message_open_tail", where=Message.block.is_null())
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
    # Who holds a running job ("host:pid") and since when: recovery at open leaves a live
    # process's jobs alone (schema 17).
    claimed_by = CharField(max_length=255, null=True)
    claimed_at = FloatField(null=True)
    # Whether the last failure was the kind that passes (network, timeout, 5xx, a killed process):
    # such a job is tried again by the next `strata derive` instead of failing for good (schema 20).
    transient = BooleanField(null=True)

    class Meta:
        indexes = (
            (("status", "next_retry_at"), False),
            (("kind", "block"), False),
        )


# The claim order (schema v6): pending or failed jobs by priority, then age.
Job.add_index(Job.status, Job.priority.desc(), Job.id)
# The same order within one namespace (schema v12): a claim for one namespace walked past every
# other namespace's backlog (a bulk import's hundred thousand pending jobs) to find its own.
Job.add_index(Job.namespace, Job.status, Job.priority.desc(), Job.id)
# One kind's jobs in claim order, in all namespaces and in one (schema v20): summaries are claimed
# ahead of everything else, graph jobs one namespace at a time in this order.
Job.add_index(Job.kind, Job.status, Job.priority.desc(), Job.id)
Job.add_index(Job.namespace, Job.kind, Job.status, Job.priority.desc(), Job.id)


class Event(BaseModel):
    """An event card: one atomic fact, decision, plan, outcome or change, citing its sources.

    Time is split: ``mentioned_*`` is when the conversation said it, ``happened_*`` when it
    occurred (strings at their own precision, plus epoch bounds for range filters).
    ``formed_turn`` and ``last_adopted_turn`` use the namespace-wide turn clock.
    """

    namespace = ForeignKeyField(Namespace, backref="events", on_delete="CASCADE")
    block = ForeignKeyField(Block, backref="events", null=True, on_delete="CASCADE")
    thread = ForeignKeyField(Thread, null=True, on_delete="SET NULL")
    title = TextField()
    summary = TextField()
    tags = JSONTextField(default=list)
    quotes = JSONTextField(default=list)
    participants = JSONTextField(default=list)
    participant_node_ids = JSONTextField(default=list)
    event_type = CharField(max_length=32, default="other", index=True)
    scope = CharField(max_length=16, default="project")
    criticality = CharField(max_length=16, default="routine")
    status = CharField(max_length=16, default="active", index=True)
    superseded_by = IntegerField(null=True)
    mentioned_at = CharField(null=True)
    mentioned_ts = FloatField(null=True)
    happened_start = CharField(null=True)
    happened_end = CharField(null=True)
    happened_start_ts = FloatField(null=True, index=True)
    happened_end_ts = FloatField(null=True)
    original_text = TextField(null=True)
    precision = CharField(max_length=16, default="unknown")
    basis = CharField(max_length=16, default="unknown")
    time_status = CharField(max_length=16, default="unknown")
    formed_turn = IntegerField(default=0)
    mention_count = IntegerField(default=1)
    last_adopted_turn = IntegerField(default=0)
    last_retrieved_at = CharField(null=True)
    pinned = BooleanField(default=False)
    floor_weight = FloatField(default=0.0)
    forced_cap = FloatField(null=True)
    origin = CharField(max_length=16, default="extraction")
    # core.text.fingerprint(title, summary): the wording's identity, so an import finds an exact
    # duplicate by index instead of hashing every stored event (19 s at a million messages).
    fingerprint = CharField(max_length=64, null=True)
    created_at = CharField()
    updated_at = CharField()

    class Meta:
        # (namespace, updated_at): the newest change to a namespace's events is one index step
        # (graph search's node views stay valid until it moves).
        indexes = ((("namespace", "status"), False), (("namespace", "updated_at"), False))


# The timeline's order (happened time, else mention time, then id) as an index, so a page of
# events in time order is an index walk instead of a sort of the whole namespace (schema v6
# adds it to older stores); SQL(0) keeps the literal inline so queries match it.
EVENT_CHRONOLOGY = fn.COALESCE(Event.happened_start_ts, Event.mentioned_ts, SQL("0"))
Event.add_index(Event.index(Event.namespace, EVENT_CHRONOLOGY, Event.id, name="event_chronology"))
# The timeline histogram counts a namespace's events by day and lane: with both times beside the
# chronology in one index it never reads the (wide) event rows (1.4 s -> 0.24 s cold at 252k events).
Event.add_index(
    Event.index(Event.namespace, EVENT_CHRONOLOGY, Event.happened_start_ts, Event.mentioned_ts, name="event_day_lane")
)
# The same counts for one type (the timeline's type filter): a common type's rows were read one by
# one through the type index (1.2 s warm, 11 s cold for 209k plans at 866k events; 70 ms from this
# index alone, schema 18).
Event.add_index(
    Event.index(
        Event.namespace,
        Event.event_type,
        EVENT_CHRONOLOGY,
        Event.happened_start_ts,
        Event.mentioned_ts,
        name="event_type_day_lane",
    )
)
# An event's status by id from an index page of hundreds of events, not from the event's own row
# (a page holds a few): a cold view of a hub reads the status of thousands of citations. SQLite's
# planner prefers the rowid lookup, so the citation windows name this index (schema 13).
EVENT_STATUS_INDEX = "event_status_by_id"
Event.add_index(Event.index(Event.id, Event.status, name=EVENT_STATUS_INDEX))

# Pinned or safety-critical events are few and automatic context asks for them before every model
# call: a partial index holds just them (a scan of 855k events took 0.6 s). Literal values, so
# the planner can match a query's condition to the index's (schema 15).
SPECIAL_EVENT = (Event.pinned == SQL("TRUE")) | (Event.criticality == SQL("'safety'"))
Event.add_index(Event.index(Event.namespace, Event.id, name="event_special", where=SPECIAL_EVENT))

# Events by when they were said (schema 26): whether a block being derived is older than what is
# already stored is one index lookup (the newest mention), not a scan.
Event.add_index(Event.index(Event.namespace, Event.mentioned_ts, name="event_mentioned"))
# Events by wording (schema 16). Not among the model's indexes: migrations before 16 create the
# model's missing indexes, and SQLite reads "fingerprint" before that column exists as a string
# constant, which leaves an index the column's arrival corrupts. Created by ``create_late_indexes``.
EVENT_FINGERPRINT_INDEX = Event.index(Event.namespace, Event.fingerprint, name="event_fingerprint")


def create_late_indexes(database) -> None:
    """Indexes on columns later migrations add (see EVENT_FINGERPRINT_INDEX); safe to repeat."""
    database.execute(Event._schema._create_index(EVENT_FINGERPRINT_INDEX, safe=True))


# The event statuses a reader still sees as evidence (a superseded event is history, not gone),
# and the graph record statuses that make up current state.
LIVE = ("active", "superseded")
CURRENT = ("active", "disputed")


class EventSource(BaseModel):
    """A message an event cites (always inside its source block, unless the event has none)."""

    event = ForeignKeyField(Event, backref="sources", on_delete="CASCADE")
    message = ForeignKeyField(Message, backref="cited_by", on_delete="CASCADE")
    position = IntegerField(default=0)

    class Meta:
        indexes = ((("event", "message"), True), (("message",), False))


class EventParticipant(BaseModel):
    """Normalised participant names, so participant filters use an index."""

    event = ForeignKeyField(Event, backref="participant_rows", on_delete="CASCADE")
    name = CharField(max_length=255)
    name_norm = CharField(max_length=255, index=True)

    class Meta:
        indexes = ((("event", "name_norm"), True),)


class EventLink(BaseModel):
    """A typed relation from one event to another (supersedes, conflicts, same_event, …)."""

    event = ForeignKeyField(Event, backref="links", on_delete="CASCADE")
    kind = CharField(max_length=16)
    target = ForeignKeyField(Event, backref="linked_from", on_delete="CASCADE")

    class Meta:
        indexes = ((("event", "kind", "target"), True), (("target", "kind"), False))


class GraphNode(BaseModel):
    """A person, project, organisation, tool or place; every record cites events."""

    namespace = ForeignKeyField(Namespace, backref="graph_nodes", on_delete="CASCADE")
    name = CharField(max_length=255)
    name_norm = CharField(max_length=255, index=True)
    type = CharField(max_length=16, index=True)
    aliases = JSONTextField(default=list)
    tags = JSONTextField(default=list)
    provenance = JSONTextField(default=dict)
    status = CharField(max_length=16, default="active")
    confidence = FloatField(default=0.8)
    created_at = CharField()
    updated_at = CharField()

    class Meta:
        # (namespace, updated_at): the projector's name index catches up by it (schema v6).
        indexes = ((("namespace", "type", "name_norm"), False), (("namespace", "updated_at"), False))


class GraphFact(BaseModel):
    """A keyed fact on a node; functional keys keep one current value, others accumulate."""

    node = ForeignKeyField(GraphNode, backref="facts", on_delete="CASCADE")
    key = CharField(max_length=160)
    value = JSONTextField()
    status = CharField(max_length=16, default="active")
    valid_from = CharField(null=True)
    valid_to = CharField(null=True)
    confidence = FloatField(default=0.8)
    created_at = CharField()
    updated_at = CharField()

    class Meta:
        indexes = ((("node", "key"), False),)


class GraphEdge(BaseModel):
    """A relation between two nodes."""

    namespace = ForeignKeyField(Namespace, backref="graph_edges", on_delete="CASCADE")
    from_node = ForeignKeyField(GraphNode, backref="edges_out", on_delete="CASCADE")
    to_node = ForeignKeyField(GraphNode, backref="edges_in", on_delete="CASCADE")
    relation = CharField(max_length=100)
    status = CharField(max_length=16, default="active")
    valid_from = CharField(null=True)
    valid_to = CharField(null=True)
    confidence = FloatField(default=0.8)
    created_at = CharField()
    updated_at = CharField()

    class Meta:
        indexes = ((("from_node", "relation"), False), (("to_node",), False))


class GraphSource(BaseModel):
    """Which events a graph record (node, fact or edge) cites."""

    kind = CharField(max_length=8)
    record_id = IntegerField()
    event = ForeignKeyField(Event, backref="graph_sources", on_delete="CASCADE")

    class Meta:
        indexes = ((("kind", "record_id", "event"), True), (("event",), False))


class GraphEnding(BaseModel):
    """Why a fact or edge is history: a statement that ended it (``cause_kind`` "event") or a
    newer value of the same one-at-a-time slot (the rival record's kind and id).

    The ending stands while its cause is visible (an event not forgotten; a rival with a live
    citation). When every ending of a record has fallen, the record is current again with the
    status and ``valid_to`` it had before (``prior_status``, ``prior_valid_to``); when one
    stands again it ends again at this row's ``valid_to``. Records ended before schema 14 have
    no rows and stay history."""

    kind = CharField(max_length=8)
    record_id = IntegerField()
    cause_kind = CharField(max_length=8)
    cause_id = IntegerField()
    valid_to = CharField(null=True)
    prior_status = CharField(max_length=16, null=True)
    prior_valid_to = CharField(null=True)
    created_at = CharField()

    class Meta:
        indexes = ((("kind", "record_id", "cause_kind", "cause_id"), True), (("cause_kind", "cause_id"), False))


class MessageTerm(BaseModel):
    """Postings of the raw-message index: one row per (message, term) with its frequency.

    ``length`` is the message's token count, stored here so one query yields everything
    BM25 needs. Rows go away with their message (cascade). Searches read the segments built
    from these rows in id order (core.search.segment), never a term's rows through SQL, so the
    rows are indexed by namespace only: an index by term took every posting to a random page
    (schema 19)."""

    namespace = IntegerField()
    thread = IntegerField()
    message = ForeignKeyField(Message, backref="terms", on_delete="CASCADE")
    term = CharField(max_length=64)
    tf = IntegerField()
    length = IntegerField()

    class Meta:
        indexes = ((("namespace",), False), (("message",), False))


class EventTerm(BaseModel):
    """Postings of the event index (field-weighted term frequencies), indexed like MessageTerm."""

    namespace = IntegerField()
    event = ForeignKeyField(Event, backref="terms", on_delete="CASCADE")
    term = CharField(max_length=64)
    tf = IntegerField()
    length = IntegerField()

    class Meta:
        indexes = ((("namespace",), False), (("event",), False))


class CorpusStat(BaseModel):
    """Document count and total length of one index in one namespace (for idf and avgdl)."""

    namespace = IntegerField()
    kind = CharField(max_length=16)
    docs = IntegerField(default=0)
    total_length = IntegerField(default=0)

    class Meta:
        indexes = ((("namespace", "kind"), True),)


class SearchRemoval(BaseModel):
    """Documents taken out of a search index, in the order it happened (rows are never deleted).

    A cached search segment drops exactly these documents instead of rebuilding from every
    posting. The floors say from which ids on rows written later can be: SQLite gives a new row
    the highest id + 1, so deleting the newest rows frees their ids for the next ones."""

    kind = CharField(max_length=16)
    namespace = IntegerField()
    doc_ids = JSONTextField()
    posting_floor = IntegerField()  # highest id left in the postings table right after the removal
    message_floor = IntegerField(default=0)  # highest message id other than these (message removals)


class RetrievalBatch(BaseModel):
    """One retrieval an agent made: its channel, query and evidence refs, then its
    assessment and use receipt. Persisted, so an unresolved batch survives a restart."""

    namespace = ForeignKeyField(Namespace, backref="batches", on_delete="CASCADE")
    session = CharField(max_length=255, null=True, index=True)
    sequence = IntegerField()
    channel = CharField(max_length=32)
    query = TextField(default="")
    params = JSONTextField(null=True)
    status = CharField(max_length=16, default="unresolved")
    new_refs = IntegerField(default=0)
    assessment = JSONTextField(null=True)
    created_at = CharField()
    updated_at = CharField()

    class Meta:
        indexes = ((("namespace", "sequence"), True),)


class BatchRef(BaseModel):
    """An evidence ref a batch returned (event:12, graph-node:3, raw:4:88, block:4:level:2)."""

    batch = ForeignKeyField(RetrievalBatch, backref="refs", on_delete="CASCADE")
    ref = CharField(max_length=255)
    position = IntegerField()
    event_ids = JSONTextField(default=list)
    citation = JSONTextField(null=True)

    class Meta:
        indexes = ((("batch", "ref"), True),)


class UsageReceipt(BaseModel):
    """A recorded use of evidence: the only thing that reinforces memory weight."""

    namespace = ForeignKeyField(Namespace, backref="usage_receipts", on_delete="CASCADE")
    receipt_id = CharField(max_length=500)
    batch = ForeignKeyField(RetrievalBatch, null=True, backref="receipts", on_delete="SET NULL")
    event_ids = JSONTextField(default=list)
    audit = JSONTextField(null=True)
    created_at = CharField()

    class Meta:
        indexes = ((("namespace", "receipt_id"), True),)


class RetrievalTrace(BaseModel):
    """Why something was or was not recalled: every search, assessment, use and context build."""

    namespace = ForeignKeyField(Namespace, backref="traces", on_delete="CASCADE")
    batch = ForeignKeyField(RetrievalBatch, null=True, backref="traces", on_delete="SET NULL")
    kind = CharField(max_length=16)
    channel = CharField(max_length=32, null=True)
    query = TextField(default="")
    candidates = JSONTextField(default=list)
    selected = JSONTextField(default=list)
    verdict = CharField(max_length=16, null=True)
    detail = JSONTextField(null=True)
    elapsed_ms = FloatField(default=0.0)
    created_at = CharField()


class ImportBatch(BaseModel):
    """One external-memory import: the full pasted text, its candidates and what became of them.

    The namespace is kept by name, not by key: a preview may target a namespace that does
    not exist yet, and the audit must outlive everything the batch wrote (undo deletes that).
    """

    namespace_name = CharField(max_length=255, index=True)
    format = CharField(max_length=16)
    source_name = CharField(max_length=500, null=True)
    source_system = CharField(max_length=200, null=True)
    text = TextField()
    text_sha256 = CharField(max_length=64)
    status = CharField(max_length=24, default="processing", index=True)
    recovered = BooleanField(default=False)
    meta = JSONTextField(null=True)
    warnings = JSONTextField(default=list)
    provider = CharField(max_length=64, null=True)
    top_k = IntegerField(default=5)
    threshold = FloatField(default=0.85)
    total = IntegerField(default=0)
    processed = IntegerField(default=0)
    preview_revision = IntegerField(null=True)
    source_block_id = IntegerField(null=True)
    imported_count = IntegerField(default=0)
    # Model calls made for the batch itself (recovering malformed input): core.providers.usage fields.
    usage = JSONTextField(null=True)
    last_error = TextField(null=True)
    created_at = CharField()
    updated_at = CharField()
    committed_at = CharField(null=True)
    undone_at = CharField(null=True)


class ImportItem(BaseModel):
    """One candidate of a batch: its preview decision, a person's choice and the audit of commit."""

    batch = ForeignKeyField(ImportBatch, backref="items", on_delete="CASCADE")
    position = IntegerField()
    candidate = JSONTextField()
    fingerprint = CharField(max_length=64)
    state = CharField(max_length=16, default="pending")
    revision = IntegerField(null=True)
    duplicate_of_event = IntegerField(null=True)
    duplicate_of_item = IntegerField(null=True)
    matches = JSONTextField(default=list)
    decision_key = CharField(max_length=64, null=True)
    action = CharField(max_length=16, null=True)
    target_ids = JSONTextField(default=list)
    merged = JSONTextField(null=True)
    reason = TextField(null=True)
    confidence = FloatField(null=True)
    requires_confirmation = BooleanField(default=False)
    model_calls = IntegerField(default=0)
    # What a model said it matched ({subject, slot, value, stored_value}), for the person reviewing.
    matched = JSONTextField(null=True)
    # Tokens of every model call made for this item, summed (core.providers.usage fields).
    usage = JSONTextField(null=True)
    choice_action = CharField(max_length=16, null=True)
    choice_target_ids = JSONTextField(null=True)
    final_action = CharField(max_length=16, null=True)
    final_target_ids = JSONTextField(null=True)
    created_event_id = IntegerField(null=True)
    updated_at = CharField()

    class Meta:
        indexes = ((("batch", "position"), True),)


class ImportChange(BaseModel):
    """A stored row that a committed import (or the graph projection of its events) created
    or changed: ``before`` is its pre-image (None when the import created it), ``after`` the
    state the import left. Undo restores ``before`` exactly while the row still equals ``after``."""

    batch = ForeignKeyField(ImportBatch, backref="changes", on_delete="CASCADE")
    table = CharField(max_length=32)
    record_id = IntegerField()
    before = JSONTextField(null=True)
    after = JSONTextField(null=True)
    created_at = CharField()

    class Meta:
        indexes = ((("batch", "table", "record_id"), True),)


class MemoryRecord(BaseModel):
    """A governed record: something an agent, a tool, an import or a person asserts that the
    conversation did not say. It enters quarantined, is verified with evidence, promoted by a named
    actor (only then does it become an event card, ``event_id``, that readers can find) and may be
    revoked, restored, superseded or left to decay at ``review_by``. ``text`` is never edited."""

    namespace = ForeignKeyField(Namespace, backref="records", on_delete="CASCADE")
    title = TextField()
    text = TextField()
    source = CharField(max_length=16)
    actor = CharField(max_length=200, null=True)
    scope = CharField(max_length=16, default="project")
    privacy = CharField(max_length=16, default="normal")
    expires_at = CharField(max_length=32, null=True)
    review_by = CharField(max_length=32, null=True)
    canonical_key = CharField(max_length=160, null=True)
    status = CharField(max_length=16, default="quarantined", index=True)
    evidence = JSONTextField(default=list)  # refs ("message:12", "event:7") the verifier attached
    grade = CharField(max_length=16, null=True)
    content_hash = CharField(max_length=64)
    near_duplicate_of = IntegerField(null=True)
    # What promotion wrote for readers: the message holding the text and the event card citing it.
    message_id = IntegerField(null=True, index=True)
    event_id = IntegerField(null=True, index=True)
    superseded_by = IntegerField(null=True)
    created_at = CharField()
    updated_at = CharField()

    class Meta:
        indexes = (
            (("namespace", "content_hash"), False),
            (("namespace", "canonical_key"), False),
            (("namespace", "status"), False),
        )


class AuditEntry(BaseModel):
    """One change of a governed record or of an event's standing (forget, restore, pin, unpin):
    what, who, why, when. Append-only: nothing updates or deletes a row but the namespace's removal."""

    namespace = ForeignKeyField(Namespace, backref="audit", on_delete="CASCADE")
    subject = CharField(max_length=16)  # record | event
    subject_id = IntegerField()
    action = CharField(max_length=24)
    from_status = CharField(max_length=16, null=True)
    to_status = CharField(max_length=16, null=True)
    actor = CharField(max_length=200)
    reason = TextField(null=True)
    detail = JSONTextField(null=True)
    at = CharField()

    class Meta:
        indexes = ((("namespace", "subject", "subject_id"), False),)


class LedgerEntry(BaseModel):
    """What one context assembly handed a model, and what it left out and why; or what a cost
    preflight decided before a model request. Estimates, never billing."""

    namespace = ForeignKeyField(Namespace, backref="ledger", on_delete="CASCADE")
    kind = CharField(max_length=16)  # context | preflight
    trace_id = IntegerField(null=True)
    query = TextField(default="")
    selected = JSONTextField(default=list)  # refs handed over
    excluded = JSONTextField(default=list)  # [{ref, reason}] with a reason code each
    tokens = IntegerField(default=0)  # estimated tokens of what was handed over (or asked for)
    budget = IntegerField(null=True)
    decision = CharField(max_length=16, null=True)  # preflight: allow | mitigate | block
    reason = TextField(null=True)
    created_at = CharField()

    class Meta:
        indexes = ((("namespace", "kind", "id"), False),)


class Note(BaseModel):
    """A task-outcome note (core.services.notes): what an agent or a person concluded at the end of a
    piece of work, or a topic page (``kind`` topic) gathering such notes by ``[[id]]`` links. A version is
    never edited: a replace writes a new row and marks the old one ``superseded``, a delete marks it
    ``withdrawn`` with a reason; every version stays readable by its public id (``note_id``, hex).
    ``search_text`` holds the normalised title, summary and keywords, one per line, for recall."""

    namespace = ForeignKeyField(Namespace, backref="notes", on_delete="CASCADE")
    note_id = CharField(max_length=40, unique=True)
    kind = CharField(max_length=16, default="task")
    title = TextField()
    summary = TextField()
    keywords = JSONTextField(default=list)  # as written, first spelling of each normalised form
    search_text = TextField()
    content = TextField()
    code_branch = TextField(null=True)
    code_commit = CharField(max_length=64, null=True)
    related_branches = JSONTextField(default=list)
    related_paths = JSONTextField(default=list)
    status = CharField(max_length=16)  # active | quarantined | superseded | withdrawn
    supersedes = CharField(max_length=40, null=True)
    superseded_by = CharField(max_length=40, null=True)
    reason = TextField(null=True)  # why it was withdrawn, or why it replaced the one it supersedes
    digest = CharField(max_length=64)
    source = CharField(max_length=16)
    actor = CharField(max_length=200, null=True)
    created_at = CharField()
    updated_at = CharField()

    class Meta:
        indexes = (
            (("namespace", "status"), False),
            (("namespace", "digest"), False),
        )


class NoteAlias(BaseModel):
    """Another id a note answers to: the hash of the gitmemo commit that wrote the version, kept when a
    ``.mem`` repository is imported (core.services.gitmemo), so that reading by the old hash, or by a
    prefix of it, and ``[[old hash]]`` links still find the note."""

    namespace = ForeignKeyField(Namespace, backref="note_aliases", on_delete="CASCADE")
    note = ForeignKeyField(Note, backref="aliases", on_delete="CASCADE")
    alias = CharField(max_length=64)
    origin = CharField(max_length=16)  # gitmemo
    created_at = CharField()

    class Meta:
        indexes = ((("namespace", "alias"), True),)


class Association(BaseModel):
    """Two event cards that were used together: a bounded co-activation edge (core.services.associations).

    One row per unordered pair (``source`` < ``target``). ``weight`` grows when the pair is used
    together again and decays with time since ``updated_at``. An edge means "used together", never
    a fact, a cause or a preference."""

    namespace = ForeignKeyField(Namespace, backref="associations", on_delete="CASCADE")
    source = ForeignKeyField(Event, backref="associations_out", on_delete="CASCADE")
    target = ForeignKeyField(Event, backref="associations_in", on_delete="CASCADE")
    weight = FloatField()
    coactivation_count = IntegerField(default=1)
    created_at = CharField()
    updated_at = CharField()

    class Meta:
        indexes = (
            (("namespace", "source", "target"), True),
            (("namespace", "source", "weight"), False),
            (("namespace", "target", "weight"), False),
        )


# Tables added by schema version 2 (the derivation work).
V2_MODELS: list[type[BaseModel]] = [
    Event,
    EventSource,
    EventParticipant,
    EventLink,
    GraphNode,
    GraphFact,
    GraphEdge,
    GraphSource,
]


ALL_MODELS: list[type[BaseModel]] = [
    SchemaVersion,
    Namespace,
    Thread,
    Block,
    Message,
    IngestionReceipt,
    Job,
    Event,
    EventSource,
    EventParticipant,
    EventLink,
    GraphNode,
    GraphFact,
    GraphEdge,
    GraphSource,
    GraphEnding,
    MessageTerm,
    EventTerm,
    CorpusStat,
    SearchRemoval,
    RetrievalBatch,
    BatchRef,
    UsageReceipt,
    RetrievalTrace,
    ImportBatch,
    ImportItem,
    ImportChange,
    MemoryRecord,
    AuditEntry,
    LedgerEntry,
    Note,
    NoteAlias,
    Association,
]

# Tables added by schema version 3 (the search index).
V3_MODELS: list[type[BaseModel]] = [MessageTerm, EventTerm, CorpusStat]

# Tables added by schema version 4 (evidence gate, receipts, traces).
V4_MODELS: list[type[BaseModel]] = [RetrievalBatch, BatchRef, UsageReceipt, RetrievalTrace]

# Tables added by schema version 5 (external-memory import with exact undo).
V5_MODELS: list[type[BaseModel]] = [ImportBatch, ImportItem, ImportChange]

# Tables added by schema version 23 (governed records, their audit trail, the context ledger).
V23_MODELS: list[type[BaseModel]] = [MemoryRecord, AuditEntry, LedgerEntry]

# Tables added by schema version 24 (task-outcome notes and topic pages).
V24_MODELS: list[type[BaseModel]] = [Note]

# Tables added by schema version 25 (the old ids of notes imported from gitmemo).
V25_MODELS: list[type[BaseModel]] = [NoteAlias]

# Tables added by schema version 26 (co-activation associations between event cards).
V26_MODELS: list[type[BaseModel]] = [Association]
