"""The prompt a person gives another assistant so that it exports its memory as v2 JSON."""

from __future__ import annotations

EXPORT_PROMPT = """\
I am moving my long-term memory to another assistant. Please export everything you remember
about me as ONE JSON document, and reply with that JSON only (a ```json fence is fine, no
other text).

Shape:
{
  "schemaVersion": "stratagate.external-memory.v2",
  "sourceType": "external_ai_memory_export",
  "sourceSystem": "<your product name>",
  "exportedAt": "<today as YYYY-MM-DD>",
  "coverage": "full" | "partial" | "limited",
  "coverageNote": "<what you could not include, and why>",
  "uncertainItems": ["<things you are unsure about, in plain words>"],
  "candidates": [
    {
      "memoryKind": "instruction" | "preference" | "fact" | "event",
      "category": "instruction" | "identity" | "career" | "project" | "preference",
      "title": "<short label, at most 160 characters>",
      "summary": "<the fact as one self-contained sentence, at most 2000 characters>",
      "tags": ["<up to 12 short topic words>"],
      "quotes": ["<my own words, if you have them, at most 500 characters each>"],
      "temporal": {
        "mentionedAt": "<when I told you, YYYY-MM-DD if you know it>",
        "happenedStart": "<when it happened, YYYY, YYYY-MM or YYYY-MM-DD>",
        "happenedEnd": "<when it ended, if it did>",
        "originalText": "<the time words I used, e.g. 'last spring'>",
        "precision": "instant" | "day" | "month" | "year" | "range" | "unknown",
        "basis": "explicit" | "relative" | "inferred" | "unknown",
        "status": "occurred" | "planned" | "cancelled" | "ongoing" | "unknown",
        "participants": ["<people involved, by name>"]
      },
      "scope": "user" | "project" | "session",
      "criticality": "routine" | "preference" | "identity" | "safety",
      "confidence": <a number from 0 to 1>
    }
  ]
}

Rules:
- Only lasting facts about me, my work, my projects, the people around me and how I want you
  to work. Leave out small talk, one-off questions and anything you only guessed.
- One fact per candidate. Split compound memories; write names out in full (no "the project").
- Order the candidates: instructions first, then identity, career, projects, preferences.
- Dates: never use today's date or the export date as the time something happened. If you do
  not know when it happened, leave happenedStart out and set precision and basis to "unknown".
  Use real calendar dates only (no month 13, no day 40).
- Never include passwords, API keys, tokens, card numbers or other secrets.
- At most 200 candidates. If there is more, export the most important ones and say so in
  coverageNote.
- Omit a field rather than writing null.
"""


def export_prompt() -> str:
    return EXPORT_PROMPT
