"""The provider protocol and the validated shapes it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from core.errors import StrataError


# The speaker of a user message that carries no name: the person the memory is about, by the
# name the offline event cards give them and the graph keeps as a person.
UNNAMED_USER = "User"


class ProviderOutputError(StrataError):
    """A provider returned something that fails validation; the job fails, the store is untouched."""


@dataclass(frozen=True)
class BlockSummary:
    """L0–L2 for one block plus the extraction pre-screen."""

    title: str
    tags: tuple[str, ...]
    summary: str
    keypoints: tuple[str, ...]
    should_extract: bool

    @classmethod
    def validated(cls, raw: Any) -> "BlockSummary":
        """Check and clamp a summary from any provider (title ≤120, tags ≤12, summary ≤2000, points ≤20)."""
        if isinstance(raw, BlockSummary):
            raw = raw.__dict__
        if not isinstance(raw, dict):
            raise ProviderOutputError("invalid L0-L2 layers: summary is not an object")
        title, summary = raw.get("title"), raw.get("summary")
        if not isinstance(title, str) or not title.strip():
            raise ProviderOutputError("invalid L0-L2 layers: empty title")
        if not isinstance(summary, str) or not summary.strip():
            raise ProviderOutputError("invalid L0-L2 layers: empty summary")
        tags, points = raw.get("tags", ()), raw.get("keypoints", ())
        if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
            raise ProviderOutputError("invalid L0-L2 layers: tags must be a list of strings")
        if not isinstance(points, (list, tuple)) or not all(isinstance(p, str) for p in points):
            raise ProviderOutputError("invalid L0-L2 layers: keypoints must be a list of strings")
        should = raw.get("should_extract")
        if not isinstance(should, bool):
            raise ProviderOutputError("invalid L0-L2 layers: should_extract must be a boolean")
        clean_tags = tuple(dict.fromkeys(t.strip() for t in tags if t.strip()))[:12]
        return cls(
            title=title.strip()[:120],
            tags=clean_tags,
            summary=summary.strip()[:2000],
            keypoints=tuple(p.strip() for p in points if p.strip())[:20],
            should_extract=should,
        )


@dataclass(frozen=True)
class Extraction:
    """Event cards extracted from one block (events are plain dicts until validated)."""

    should_extract: bool
    reason: str = ""
    events: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @classmethod
    def validated(cls, raw: Any) -> "Extraction":
        """Check the envelope; each event is validated against its block by the service."""
        if isinstance(raw, Extraction):
            return raw
        if not isinstance(raw, dict):
            raise ProviderOutputError("extraction result is not an object")
        should = raw.get("should_extract")
        if not isinstance(should, bool):
            raise ProviderOutputError("extraction: should_extract must be a boolean")
        events = raw.get("events", [])
        if not isinstance(events, list):
            raise ProviderOutputError("extraction: events must be a list")
        reason = raw.get("reason", "")
        return cls(
            should_extract=should,
            reason=reason if isinstance(reason, str) else "",
            events=tuple(e for e in events if isinstance(e, dict)),
        )


class Provider(Protocol):
    """Structured derivation tasks. Implementations must not touch the database."""

    name: str
    model: str | None
    # True when the provider runs in-process and never serialises its context: parts of it
    # (the extraction timeline) may then be read on first use, and the graph context carries
    # ``mentions`` (name -> what other live events say with it). Model providers leave it False.
    reads_context_lazily: bool
    # True when answers come from a language model: the import service then checks a decision
    # against the strict schema and caps a confidence the answer's evidence does not back. Such a
    # provider may also expose ``usage`` (core.providers.usage fields, totals since it was made).
    model_backed: bool

    def summarize_block(self, messages: Sequence[dict[str, Any]]) -> BlockSummary | dict[str, Any]: ...

    def extract_events(self, context: dict[str, Any]) -> Extraction | dict[str, Any]: ...

    def project_graph(self, context: dict[str, Any]) -> dict[str, Any]: ...

    def decide_external_memory(self, context: dict[str, Any]) -> dict[str, Any] | str:
        """One imported memory against its Top-K stored matches: ``{action, existing_event_ids,
        reason, confidence, merged_candidate?}``, and from a model also ``subject, slot, value``
        (the import service validates it; a model's answer may be text to recover)."""
        ...

    def recover_external_memory(self, context: dict[str, Any]) -> dict[str, Any]:
        """Candidates from an export that is not valid JSON: ``{reason, candidates}``; the
        candidates then go through the strict v2 parser."""
        ...
