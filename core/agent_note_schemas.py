"""The JSON schemas of the note tools (``core.agent_notes``), part of ``core.agent_schemas.TOOL_SPECS``.

A leaf: plain data, so the schema module can take it in without importing any service."""

from __future__ import annotations

from typing import Any

_ID = {"type": "string", "description": "A note id, or a unique prefix of 7 or more of its hex characters."}
_KEYWORDS = {
    "type": "array",
    "items": {"type": "string"},
    "description": (
        "2-12 keywords, each at most 64 characters: synonyms and terms not already in the title or summary "
        "(those are searched anyway); add the other language's word when the work spans two."
    ),
}
_FIELDS: dict[str, Any] = {
    "title": {"type": "string", "description": "One line, at most 200 characters."},
    "summary": {"type": "string", "description": "What holds now, at most 4000 characters."},
    "keywords": _KEYWORDS,
    "content": {
        "type": "string",
        "description": "The outcome in full (at most 1 MiB): what was done, why, what to watch. Cite notes as [[id]].",
    },
    "kind": {
        "type": "string",
        "enum": ["task", "topic"],
        "description": "task: one piece of work (default). topic: the page of what currently holds on a subject.",
    },
    "branch": {"type": "string", "description": "The code branch the work was on."},
    "commit": {"type": "string", "description": "The commit it concerns (7-64 hex characters)."},
    "related_branches": {"type": "array", "items": {"type": "string"}, "description": "Other branches (at most 32)."},
    "related_paths": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Project-relative paths it concerns (at most 128).",
    },
}


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


NOTE_TOOL_SPECS: dict[str, dict[str, Any]] = {
    "note_write": {
        "description": (
            "At the end of a completed piece of work, write its outcome as a note another session can find: a "
            "title, a summary of what holds now, 2-12 keywords and the full content. Write only finished, "
            "reusable outcomes (or what the user asked you to keep); search first and replace a note that "
            "already covers it. A note saying exactly what a standing note says is refused, naming it. Unless "
            "the namespace trusts agents, it waits for a person's approval before search returns it."
        ),
        "inputSchema": _obj(_FIELDS, ["title", "summary", "keywords", "content"]),
    },
    "note_read": {
        "description": (
            "Read one note in full by id (any version: replaced and withdrawn ones stay readable). With "
            "expand=true, each [[id]] it links is resolved one hop: active, superseded (with the active "
            "version it led to), withdrawn, quarantined or dangling."
        ),
        "inputSchema": _obj(
            {"id": _ID, "expand": {"type": "boolean", "description": "Resolve its [[id]] links (default false)."}},
            ["id"],
        ),
    },
    "note_search": {
        "description": (
            "Search the active notes by keywords before starting work on a repository task: a keyword matches "
            "as a substring of a note's title, summary or keywords, case and width folded. Results come best "
            "first with a score; topic pages are good first reads. For the next page pass the snapshot the "
            "first page returned with skip; if notes changed meanwhile, search again from the first page."
        ),
        "inputSchema": _obj(
            {
                "keywords": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "1-15 keywords or short phrases; add synonyms and the other language's word.",
                },
                "mode": {
                    "type": "string",
                    "enum": ["weighted", "count"],
                    "description": "weighted (default): rare keywords count more. count: each matched keyword is 1.",
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Page size (20)."},
                "skip": {"type": "integer", "minimum": 0, "description": "Hits to skip: the next_skip of a page."},
                "snapshot": {"type": "string", "description": "The snapshot a first page returned."},
            },
            ["keywords"],
        ),
    },
    "note_replace": {
        "description": (
            "Write a new version of an active note when the user corrects it or your work overrules it (never "
            "delete and write again). Give the fields that change; the others are kept. The old version is "
            "marked superseded and stays readable; topic pages change only this way."
        ),
        "inputSchema": _obj(
            {"id": _ID, **_FIELDS, "reason": {"type": "string", "description": "Why it changed."}},
            ["id"],
        ),
    },
    "note_delete": {
        "description": (
            "Withdraw an active note that is wrong and has no replacement, saying why. It leaves search and "
            "stays readable by id."
        ),
        "inputSchema": _obj(
            {"id": _ID, "reason": {"type": "string", "description": "Why it no longer holds (required)."}},
            ["id", "reason"],
        ),
    },
}

__all__ = ["NOTE_TOOL_SPECS"]
