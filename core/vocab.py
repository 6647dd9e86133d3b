"""The closed sets of words memory records use: event types, time precision and basis, statuses,
node types and import actions.

A leaf of the domain layer: the schemas sent to a model, the validators in the services, the import
file formats and the CLI choices all read these, so one spelling lives in one place.
"""

from __future__ import annotations

EVENT_TYPES = (
    "decision",
    "release",
    "task_completed",
    "plan",
    "change",
    "cancellation",
    "incident",
    "meeting",
    "collaboration",
    "migration",
    "other",
)
PRECISIONS = ("instant", "day", "month", "year", "range", "unknown")
BASES = ("explicit", "relative", "inferred", "unknown")
TIME_STATUSES = ("occurred", "planned", "cancelled", "ongoing", "unknown")
SCOPES = ("user", "project", "session")
CRITICALITIES = ("routine", "preference", "identity", "safety")
NODE_TYPES = ("person", "project", "organization", "tool", "place")
RECORD_STATUSES = ("active", "superseded", "disputed", "archived")
# Graph facts that go stale by themselves ("age: 34" said two years ago is no longer the age): each
# holds as of when it was said, or the day it begins, and is shown with that date.
COUNTED_FACT_KEYS = frozenset({"age"})
IMPORT_ACTIONS = ("add", "merge", "supersede", "conflict", "ignore")
DECISION_FIELDS = ("action", "existing_event_ids", "confidence", "reason", "subject", "slot", "value")

# Governed records: what an agent, a tool or a person asserts that the conversation itself did not.
RECORD_SOURCES = ("agent", "user", "tool", "import")
PRIVACY_LEVELS = ("normal", "private", "secret")
GOVERNED_STATUSES = ("quarantined", "verified", "promoted", "rejected", "revoked", "superseded", "decayed")
EVIDENCE_GRADES = ("weak", "moderate", "strong")
# Why a candidate was kept out of what a reader (search, default retrieval, the context builder, an
# agent tool) was handed. One closed set, so traces and the ledger can be counted by reason.
REASON_CODES = (
    "not_promoted",
    "out_of_scope",
    "privacy_denied",
    "expired",
    "stale",
    "superseded",
    "revoked",
    "key_conflict",
    "irrelevant",
    "over_budget",
    "limit",
    # The context window's gates (core.services.context), in the order they are checked.
    "current_query",
    "low_utility",
    "conditional",
    "focus_mismatch",
    "below_min_relevance",
    "below_min_score",
    "redundant",
)

# An event card's standing. ``revoked``: the governed record it came from was withdrawn.
EVENT_STATUSES = ("active", "superseded", "disputed", "forgotten", "archived", "revoked")
# Hidden from readers, weight 0, not evidence an agent may cite.
HIDDEN_EVENT_STATUSES = ("forgotten", "archived", "revoked")

# Task-outcome notes (core.services.notes): what a note is, where it stands, how a search ranks.
NOTE_KINDS = ("task", "topic")
NOTE_STATUSES = ("active", "quarantined", "superseded", "withdrawn")
NOTE_SCORING = ("weighted", "count")
