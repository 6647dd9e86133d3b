"""The closed sets of words memory records use: event types, time precision and basis, statuses,
node types and import actions.

A leaf of the domain layer: the schemas sent to a model, the validators in the services, the import
file formats and the CLI choices all read these, so one spelling lives in one place.
"""

from __future__ import annotations

EVENT_TYPES = (
    "decision", "release", "task_completed", "plan", "change", "cancellation",
    "incident", "meeting", "collaboration", "migration", "other",
)
PRECISIONS = ("instant", "day", "month", "year", "range", "unknown")
BASES = ("explicit", "relative", "inferred", "unknown")
TIME_STATUSES = ("occurred", "planned", "cancelled", "ongoing", "unknown")
SCOPES = ("user", "project", "session")
CRITICALITIES = ("routine", "preference", "identity", "safety")
NODE_TYPES = ("person", "project", "organization", "tool", "place")
RECORD_STATUSES = ("active", "superseded", "disputed", "archived")
IMPORT_ACTIONS = ("add", "merge", "supersede", "conflict", "ignore")
DECISION_FIELDS = ("action", "existing_event_ids", "confidence", "reason", "subject", "slot", "value")
