"""JSON schemas and instructions for the structured derivation tasks.

Every provider returns data of these shapes; model-backed providers send the schema as
a forced tool call. Validation of the returned data lives in the services, not here,
so an offline rule and a model answer go through the same checks.
"""

from __future__ import annotations

from core.vocab import (  # noqa: F401  (re-exported: the schemas are written in these words)
    BASES,
    CRITICALITIES,
    DECISION_FIELDS,
    EVENT_TYPES,
    IMPORT_ACTIONS,
    NODE_TYPES,
    PRECISIONS,
    RECORD_STATUSES,
    SCOPES,
    TIME_STATUSES,
)

_STR_LIST = {"type": "array", "items": {"type": "string"}}
_ID_LIST = {"type": "array", "items": {"type": "integer"}}

SUMMARY_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["title", "tags", "summary", "keypoints", "should_extract"],
    "properties": {
        "title": {"type": "string", "description": "short subject phrase, at most 60 characters"},
        "tags": {**_STR_LIST, "description": "2-5 distinctive topical labels"},
        "summary": {"type": "string", "description": "1-3 sentences: what happened, results, state changes, open work"},
        "keypoints": {**_STR_LIST, "description": "3-8 atomic, self-contained points"},
        "should_extract": {"type": "boolean", "description": "false only for greetings, confirmations or noise"},
    },
}

TEMPORAL_SCHEMA = {
    "type": "object",
    "properties": {
        "mentioned_at": {"type": "string"},
        "happened_start": {"type": "string", "description": "YYYY, YYYY-MM, YYYY-MM-DD or an ISO instant with offset"},
        "happened_end": {"type": "string"},
        "original_text": {"type": "string", "description": "the time expression exactly as written"},
        "precision": {"type": "string", "enum": list(PRECISIONS)},
        "basis": {"type": "string", "enum": list(BASES)},
        "status": {"type": "string", "enum": list(TIME_STATUSES)},
        "event_type": {"type": "string", "enum": list(EVENT_TYPES)},
        "participants": _STR_LIST,
        "supersedes_event_ids": _ID_LIST,
        "supersedes_earlier": {
            **_ID_LIST,
            "description": "positions (from 0) of earlier events in this same list that this one corrects or replaces",
        },
        "conflicts_with_event_ids": _ID_LIST,
        "same_event_id": {"type": "integer"},
        "before_event_ids": _ID_LIST,
        "after_event_ids": _ID_LIST,
        "related_event_ids": _ID_LIST,
    },
}

EVENT_SCHEMA = {
    "type": "object",
    "required": ["title", "summary", "source_message_ids", "temporal"],
    "properties": {
        "title": {"type": "string"},
        "summary": {"type": "string"},
        "tags": _STR_LIST,
        "quotes": _STR_LIST,
        "source_message_ids": {**_ID_LIST, "description": "the smallest set of target message ids that support it"},
        "temporal": TEMPORAL_SCHEMA,
        "scope": {"type": "string", "enum": list(SCOPES)},
        "criticality": {"type": "string", "enum": list(CRITICALITIES)},
    },
}

EXTRACTION_SCHEMA = {
    "type": "object",
    "required": ["should_extract", "reason", "events"],
    "properties": {
        "should_extract": {"type": "boolean"},
        "reason": {"type": "string"},
        "events": {"type": "array", "items": EVENT_SCHEMA},
    },
}

GRAPH_SCHEMA = {
    "type": "object",
    "required": ["reason", "nodes", "edges"],
    "properties": {
        "reason": {"type": "string"},
        "nodes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["ref", "name", "type", "source_event_ids", "provenance"],
                "properties": {
                    "ref": {"type": "string"},
                    "name": {"type": "string"},
                    "type": {"type": "string", "enum": list(NODE_TYPES)},
                    "aliases": _STR_LIST,
                    "renames": _STR_LIST,
                    "tags": _STR_LIST,
                    "provenance": {
                        "type": "object",
                        "properties": {
                            "name": _ID_LIST,
                            "aliases": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {"value": {"type": "string"}, "source_event_ids": _ID_LIST},
                                },
                            },
                            "tags": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {"value": {"type": "string"}, "source_event_ids": _ID_LIST},
                                },
                            },
                        },
                    },
                    "facts": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["key", "value", "source_event_ids"],
                            "properties": {
                                "key": {"type": "string"},
                                "value": {"anyOf": [{"type": "string"}, _STR_LIST]},
                                "status": {"type": "string", "enum": ["active", "superseded"]},
                                "valid_from": {"type": "string"},
                                "valid_to": {"type": "string"},
                                "source_event_ids": _ID_LIST,
                            },
                        },
                    },
                    "status": {"type": "string", "enum": list(RECORD_STATUSES)},
                    "valid_from": {"type": "string"},
                    "valid_to": {"type": "string"},
                    "confidence": {"type": "number"},
                    "source_event_ids": _ID_LIST,
                },
            },
        },
        "edges": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["from_ref", "to_ref", "relation", "source_event_ids"],
                "properties": {
                    "from_ref": {"type": "string"},
                    "to_ref": {"type": "string"},
                    "relation": {"type": "string"},
                    "status": {"type": "string", "enum": list(RECORD_STATUSES)},
                    "valid_from": {"type": "string"},
                    "valid_to": {"type": "string"},
                    "confidence": {"type": "number"},
                    "source_event_ids": _ID_LIST,
                },
            },
        },
    },
}

SUMMARY_INSTRUCTIONS = (
    "You summarise one block of a conversation for a long-term memory. Return a short title, 2-5 "
    "distinctive tags, a 1-3 sentence summary and 3-8 self-contained key points. Keep who said what "
    "straight: a user's decision, an assistant's suggestion and a tool's observation are different "
    "things. Do not invent facts or promote guesses to facts. Set should_extract to false only when "
    "the block holds nothing but greetings, confirmations or noise; when unsure, set it to true."
)

EXTRACTION_INSTRUCTIONS = (
    "You turn one block of a conversation into event cards for a long-term memory. One card per "
    "atomic fact, decision, plan, outcome or change of state. Names must be self-contained (no 'this "
    "project'). Only the target messages may supply facts, quotes and source_message_ids; neighbour "
    "summaries and the timeline are only for relations (supersedes, conflicts, same event, before, "
    "after, related), and relation ids must come from the timeline. event_type is one of: "
    + ", ".join(EVENT_TYPES)
    + ". Keep when it was mentioned (the message time) apart from when it "
    "happened; resolve a relative time only when it is unambiguous against the message time and keep "
    "the original words in original_text; never make a date more precise than the text; if the "
    "happened time is unknown, omit it and set precision and basis to unknown. A plan is not evidence "
    "that something happened."
)

GRAPH_INSTRUCTIONS = (
    "You project event cards into a knowledge graph of people, projects, organisations, tools and "
    "places. Events are the only source of truth: every node, fact and edge must cite the ids of the "
    "supplied events that support it, and a node must say which events give its name. Put "
    "relationships in edges, not in fact strings. A fact or edge the events say has ended ('stopped "
    "using X', 'no longer works at Y') is stated with status superseded: that ends the current one. "
    "When an event corrects how someone was named ('her name is Lena, not Lina'), give the node its "
    "right name and list the wrong one in renames: the stored node keeps its facts under the new name. "
    "Touch only the nodes and edges these events are about: at most 24 nodes and 32 edges."
)

_CANDIDATE_SCHEMA = {
    "type": "object",
    "required": ["title", "summary"],
    "properties": {
        "title": {"type": "string"},
        "summary": {"type": "string"},
        "narrative": {"type": "string"},
        "tags": _STR_LIST,
        "quotes": _STR_LIST,
        "temporal": {"type": "object"},
        "scope": {"type": "string", "enum": list(SCOPES)},
        "criticality": {"type": "string", "enum": list(CRITICALITIES)},
    },
}


# A model's answer for one imported memory. Every field is required, so that an answer a person
# reviews always says what was matched; the import service checks it again (core.providers.import_decision),
# since a model may ignore the schema.
DECIDE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": list(DECISION_FIELDS),
    "properties": {
        "action": {"type": "string", "enum": list(IMPORT_ACTIONS)},
        "existing_event_ids": {
            **_ID_LIST,
            "description": "ids of the stored matches the action applies to, each "
            "one of the ids shown; one or more for merge, supersede "
            "and conflict, the restated match for ignore of a "
            "restatement, empty for add and for small talk",
        },
        "confidence": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "how sure you are, 0 to 1; a person reviews anything below 0.85",
        },
        "reason": {"type": "string", "description": "one sentence, at most 500 characters"},
        "subject": {
            "type": "string",
            "description": "who or what the candidate is about, as the candidate and "
            "the cited match name it; empty only for small talk",
        },
        "slot": {
            "type": "string",
            "description": "the attribute it states (home city, employer, diet, pet's "
            "name ...); empty only for small talk",
        },
        "value": {
            "type": "string",
            "description": "the candidate's value for that slot, in its words; empty only for small talk",
        },
        "stored_value": {
            "type": "string",
            "description": "the value the cited match holds for the slot, when it holds one",
        },
        "merged_candidate": {**_CANDIDATE_SCHEMA, "description": "merge only: one card stating both"},
    },
}

RECOVER_SCHEMA = {
    "type": "object",
    "required": ["reason", "candidates"],
    "properties": {
        "reason": {"type": "string"},
        "candidates": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["title", "summary"],
                "properties": {
                    "memoryKind": {"type": "string"},
                    "category": {"type": "string"},
                    "title": {"type": "string", "description": "at most 160 characters"},
                    "summary": {"type": "string", "description": "at most 2000 characters"},
                    "tags": _STR_LIST,
                    "quotes": _STR_LIST,
                    "temporal": {"type": "object"},
                    "scope": {"type": "string", "enum": list(SCOPES)},
                    "criticality": {"type": "string", "enum": list(CRITICALITIES)},
                    "confidence": {"type": "number"},
                },
            },
        },
    },
}

DECIDE_INSTRUCTIONS = (
    "You decide what a long-term memory does with one memory imported from another assistant (the "
    "candidate), given the stored events most similar to it (the matches, each with its id and times) and the "
    "earlier items of the same import. Read each statement as subject (who or what it is about), slot (which "
    "attribute: where someone lives, their employer, diet, a pet's name ...) and value. Choose exactly one "
    "action:\n"
    "- supersede: a match has the same subject and the same slot, the values differ, and the candidate is "
    "newer (a later time, or words such as now, moved, switched, no longer, a correction). Cite the matches it "
    "replaces.\n"
    "- merge: a match says the same thing (same subject, slot and value) and the candidate adds detail; give "
    "merged_candidate, one card stating both, and cite the match.\n"
    "- conflict: a match has the same subject and slot and a different value, and nothing says which is "
    "newer; cite it. Both are kept.\n"
    "- add: no match has this subject and slot (a new fact, a new person, a further value of a slot that "
    "holds several, such as languages or allergies).\n"
    "- ignore: small talk, remarks about the chat, passing states, or an exact restatement of a match or of "
    "an earlier item of this import (cite the restated match, if it is one).\n"
    "Same words about another person are a different subject. Cite only ids shown under Stored matches; "
    "never invent one. Always fill subject, slot and value from the candidate (empty strings only for small "
    "talk), and stored_value when the cited match holds another value. Do not guess dates; keep time words "
    "as written and never take the export date as the time something happened. The candidate may call the "
    "user 'the user' or name no subject where stored events use the user's name. confidence is how sure you "
    "are from 0 to 1; below 0.85 a person decides, so use 0.85 or more only when the evidence is explicit."
)

RECOVER_INSTRUCTIONS = (
    "The text is a memory export from another assistant that could not be read as JSON. Recover the "
    "memories it holds as candidates: one lasting fact about the user per candidate, title at most 160 "
    "characters, summary at most 2000, dates only as YYYY, YYYY-MM, YYYY-MM-DD or ISO-8601 and only when "
    "the text states them (precision and basis 'unknown' otherwise). Leave out small talk and anything "
    "that looks like a secret (passwords, keys, tokens). Do not invent facts."
)
