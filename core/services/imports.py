"""External-memory import: preview, decide, commit and undo a batch (design §2.11, §10).

The flow:

1. ``start_import`` parses the whole export (strict; malformed JSON may be recovered by the
   provider, and recovered items always need a person) and stores the batch with one item
   per candidate. Nothing is written to memory.
2. ``preview_batch`` decides every item: exact duplicates (normalised title + summary, of a
   live event or of an earlier item) are ignored without a model call; the rest get the
   Top-K stored matches from ``search_events`` and the provider's decision, normalised so
   that targets come only from those matches. Each item is saved as soon as it is decided,
   so an interrupted preview resumes where it stopped, and a decision whose inputs did not
   change is reused instead of asking the model again. Model calls never run inside a write
   transaction. The preview remembers the namespace revision it was made against.
3. ``decide`` records a person's choice for an item (needed for items below the confidence
   threshold or recovered from malformed input; their default is ignore).
4. ``commit_batch`` applies the batch in one transaction, only if the namespace is still at
   the previewed revision (else nothing is written and the preview is refreshed). A
   synthetic source block keeps the full imported text as L5 and every new event cites it.
5. ``undo_batch`` removes exactly what the batch added and restores what it changed, from
   the pre-images recorded at commit and by the graph projection of its events, so the
   store equals the store before the import while unrelated later writes survive.

Every function returns plain frozen dataclasses; the per-item audit stays after an undo.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from core.db import LIST_MAX, chunks, clamp, is_row_id, write_transaction
from core.dto import MessageIn
from core.errors import InvalidInputError, NotFoundError, StorageConflictError, StrataError
from core.imports.formats import (
    FORMATS, ImportFormatError, ParsedImport, parse_import, parse_v2_object,
    read_import_file,
)
from core.jsoninput import check_surrogates
from core.layers import deterministic_layers
from core.models import (
    Block, Event, EventLink, GraphEdge, GraphFact, GraphNode, GraphSource, ImportBatch, ImportChange, ImportItem,
    Job, Message, Namespace, Thread, UsageReceipt,
)
from core.providers import Provider, get_provider
from core.providers import usage as usage_acct
from core.providers.base import UNNAMED_USER, ProviderOutputError
from core.vocab import IMPORT_ACTIONS
from core.redact import redact_text
from core.search.index import index_events, index_messages, message_text, unindex_events, unindex_messages
from core.services.events import LIVE, live_event_ids, write_event
from core.services.graph_endings import affected_by, forget_endings_by_events, forget_endings_of, settle
from core.services.jobs import create_job
from core.services.spaces import bump_revision, get_or_create_namespace, validate_name
from core.text import clip, fingerprint
from core.timeparse import has_dated_mention
from core.timeutil import now_iso, parse_timestamp, to_epoch
from core.tokens import estimate_tokens

ACTIONS = IMPORT_ACTIONS
TARGETED = ("merge", "supersede", "conflict")
DEFAULT_TOP_K = 5
DEFAULT_THRESHOLD = 0.85
IMPORT_TAG = "external-memory-import"
IMPORT_GRAPH_KIND = "import_graph"
IMPORT_GRAPH_PRIORITY = 2000
GRAPH_BATCH = 8
MAX_REASON = 500
MAX_PASSES = 3
NO_NAMESPACE = -1  # the revision a preview records when its namespace does not exist yet
STATUSES = ("processing", "awaiting_confirmation", "ready", "committed", "undone")
GRAPH_TABLES = {"graph_node": GraphNode, "graph_fact": GraphFact, "graph_edge": GraphEdge}
_EVENT_IMAGE = ("status", "superseded_by", "forced_cap", "updated_at")

ProgressFn = Callable[[int, int, str], None]


class StalePreviewError(StorageConflictError):
    """The namespace changed after the preview; nothing was written. ``preview`` holds the
    refreshed preview to review before committing again."""

    def __init__(self, message: str, preview: "ImportPreview | None" = None):
        super().__init__(message)
        self.preview = preview


# ----------------------------------------------------------------------------- DTOs


@dataclass(frozen=True)
class CandidateRow:
    """An imported memory as parsed (the full dict is in ``data``)."""

    title: str
    summary: str
    tags: tuple[str, ...]
    participants: tuple[str, ...]
    mentioned_at: str | None
    happened_start: str | None
    happened_end: str | None
    precision: str
    memory_kind: str | None
    category: str | None
    confidence: float | None
    data: dict[str, Any]


@dataclass(frozen=True)
class MatchRow:
    """A stored event among an item's Top-K matches."""

    event_id: int
    title: str
    summary: str
    status: str
    score: float


@dataclass(frozen=True)
class ImportItemRow:
    position: int
    candidate: CandidateRow
    state: str  # pending (not decided yet) or decided
    action: str | None  # the preview's decision
    target_ids: tuple[int, ...]
    reason: str | None
    confidence: float | None
    requires_confirmation: bool
    duplicate_of_event: int | None
    duplicate_of_item: int | None
    matches: tuple[MatchRow, ...]
    choice_action: str | None  # a person's choice, if any
    choice_target_ids: tuple[int, ...]
    effective_action: str | None  # what commit applies (or applied)
    effective_target_ids: tuple[int, ...]
    created_event_id: int | None
    model_calls: int
    # Events a person chose as targets from outside the matches (any live event of the namespace).
    chosen_events: tuple[MatchRow, ...] = ()
    # What a model said it matched ({subject, slot, value, stored_value}); None from the offline decider.
    matched: dict[str, str] | None = None
    # Tokens of the model calls made for this item (core.providers.usage fields); None without any.
    usage: dict[str, int] | None = None


@dataclass(frozen=True)
class ImportBatchRow:
    id: int
    namespace: str
    format: str
    source_name: str | None
    source_system: str | None
    status: str
    recovered: bool
    total: int
    processed: int
    top_k: int
    threshold: float
    provider: str | None
    preview_revision: int | None
    source_block_id: int | None
    imported_count: int
    counts: dict[str, int]  # effective actions of the decided items
    needs_confirmation: int  # items below the threshold (or recovered) without a person's choice
    warnings: tuple[str, ...]
    last_error: str | None
    created_at: str
    updated_at: str
    committed_at: str | None
    undone_at: str | None
    # Tokens of every model call made for the batch and its items, as reported and as Strata
    # estimates them (core.providers.usage fields); None when no model was asked.
    usage: dict[str, int] | None = None


@dataclass(frozen=True)
class ImportPreview:
    batch: ImportBatchRow
    items: tuple[ImportItemRow, ...]


@dataclass(frozen=True)
class UndoResult:
    batch: ImportBatchRow
    removed_event_ids: tuple[int, ...]
    restored_event_ids: tuple[int, ...]
    graph_removed: int
    graph_restored: int


# ----------------------------------------------------------------------------- reading


def _candidate_row(data: dict[str, Any]) -> CandidateRow:
    temporal = data.get("temporal") or {}
    return CandidateRow(
        title=data.get("title", ""), summary=data.get("summary", ""), tags=tuple(data.get("tags") or ()),
        participants=tuple(temporal.get("participants") or ()), mentioned_at=temporal.get("mentioned_at"),
        happened_start=temporal.get("happened_start"), happened_end=temporal.get("happened_end"),
        precision=temporal.get("precision", "unknown"), memory_kind=data.get("memory_kind"),
        category=data.get("category"), confidence=data.get("confidence"), data=data,
    )


def _effective(item: ImportItem) -> tuple[str | None, tuple[int, ...]]:
    """The action commit applies: a person's choice, else the decision when it may be
    auto-applied, else ignore. A targeted action without a target is ignore."""
    if item.final_action is not None:
        return item.final_action, tuple(item.final_target_ids or ())
    if item.state != "decided":
        return None, ()
    if item.choice_action is not None:
        action, targets = item.choice_action, tuple(item.choice_target_ids or ())
    elif item.requires_confirmation:
        action, targets = "ignore", ()
    else:
        action, targets = item.action or "ignore", tuple(item.target_ids or ())
    if action in TARGETED and not targets:
        return "ignore", ()
    return action, targets if action != "add" else ()


def _item_row(item: ImportItem, outside: Mapping[int, MatchRow] | None = None) -> ImportItemRow:
    action, targets = _effective(item)
    known = {m["event_id"] for m in item.matches or ()}
    chosen = tuple(outside[i] for i in dict.fromkeys([*(item.choice_target_ids or ()), *(item.final_target_ids or ())])
                   if i not in known and outside and i in outside)
    return ImportItemRow(
        position=item.position, candidate=_candidate_row(item.candidate), state=item.state, action=item.action,
        target_ids=tuple(item.target_ids or ()), reason=item.reason, confidence=item.confidence,
        requires_confirmation=bool(item.requires_confirmation), duplicate_of_event=item.duplicate_of_event,
        duplicate_of_item=item.duplicate_of_item,
        matches=tuple(MatchRow(m["event_id"], m["title"], m["summary"], m["status"], m["score"])
                      for m in item.matches or ()),
        choice_action=item.choice_action, choice_target_ids=tuple(item.choice_target_ids or ()),
        effective_action=action, effective_target_ids=targets, created_event_id=item.created_event_id,
        model_calls=item.model_calls, chosen_events=chosen, matched=item.matched or None,
        usage=usage_acct.normalized(item.usage) if item.usage else None,
    )


def _items(batch_id: int) -> list[ImportItem]:
    return list(ImportItem.select().where(ImportItem.batch == batch_id).order_by(ImportItem.position))


def _batch_row(batch: ImportBatch, items: Sequence[ImportItem] | None = None) -> ImportBatchRow:
    items = _items(batch.id) if items is None else items
    counts = {action: 0 for action in ACTIONS}
    waiting = 0
    spent = usage_acct.add(batch.usage, *(item.usage for item in items))
    for item in items:
        action, _ = _effective(item)
        if action:
            counts[action] += 1
        if item.state == "decided" and item.requires_confirmation and item.choice_action is None \
                and item.final_action is None:
            waiting += 1
    return ImportBatchRow(
        id=batch.id, namespace=batch.namespace_name, format=batch.format, source_name=batch.source_name,
        source_system=batch.source_system, status=batch.status, recovered=bool(batch.recovered), total=batch.total,
        processed=batch.processed, top_k=batch.top_k, threshold=batch.threshold, provider=batch.provider,
        preview_revision=batch.preview_revision, source_block_id=batch.source_block_id,
        imported_count=batch.imported_count, counts=counts, needs_confirmation=waiting,
        warnings=tuple(batch.warnings or ()), last_error=batch.last_error, created_at=batch.created_at,
        updated_at=batch.updated_at, committed_at=batch.committed_at, undone_at=batch.undone_at,
        usage=None if usage_acct.is_empty(spent) else spent,
    )


def _get_batch(batch_id: int | str) -> ImportBatch:
    try:
        key = int(batch_id)
    except (TypeError, ValueError):
        raise InvalidInputError(f"import batch id must be a number, got {batch_id!r}") from None
    batch = ImportBatch.get_or_none(ImportBatch.id == key) if is_row_id(key) else None
    if batch is None:
        raise NotFoundError(f"import batch {key} does not exist (see `strata import list`)")
    return batch


def get_batch(batch_id: int | str) -> ImportPreview:
    """A batch with every item: decisions, matches, choices and (after commit) the audit."""
    batch = _get_batch(batch_id)
    items = _items(batch.id)
    outside = _outside_targets(items)
    return ImportPreview(batch=_batch_row(batch, items), items=tuple(_item_row(i, outside) for i in items))


def _outside_targets(items: Sequence[ImportItem]) -> dict[int, MatchRow]:
    """The events chosen as targets that are not among their item's matches, read in one go so that
    a view can name them as it names matches (whatever their status is now)."""
    wanted = sorted({t for i in items for t in [*(i.choice_target_ids or ()), *(i.final_target_ids or ())]
                     if t not in {m["event_id"] for m in i.matches or ()}})
    found: dict[int, MatchRow] = {}
    for part in chunks(wanted):
        for event_id, title, summary, status in Event.select(Event.id, Event.title, Event.summary,
                                                             Event.status).where(Event.id.in_(part)).tuples():
            found[event_id] = MatchRow(event_id, title, summary, status, 0.0)
    return found


def list_batches(namespace: str | None = None, status: str | None = None, limit: int = 100) -> list[ImportBatchRow]:
    """Batches newest first, with their status and counts."""
    if status is not None and status not in STATUSES:
        raise InvalidInputError(f"import status must be one of {', '.join(STATUSES)}, got {status!r}")
    query = ImportBatch.select()
    if namespace is not None:
        query = query.where(ImportBatch.namespace_name == namespace)
    if status is not None:
        query = query.where(ImportBatch.status == status)
    return [_batch_row(b) for b in query.order_by(ImportBatch.id.desc()).limit(clamp(limit, 1, LIST_MAX, 100))]


# ----------------------------------------------------------------------------- starting


def _provider(provider: Provider | str | None, fallback: str | None = None) -> Provider:
    if provider is not None and not isinstance(provider, str):
        return provider
    return get_provider(provider or fallback)


def _usage_of(provider: Provider) -> dict[str, int] | None:
    """The provider's token totals so far, when it keeps them (a model provider does)."""
    totals = getattr(provider, "usage", None)
    return usage_acct.normalized(totals) if isinstance(totals, Mapping) else None


def _spent(provider: Provider, before: dict[str, int] | None) -> dict[str, int] | None:
    after = _usage_of(provider)
    if before is None or after is None:
        return None
    spent = usage_acct.delta(after, before)
    return None if usage_acct.is_empty(spent) else spent


def _charge_batch(batch_id: Any, spent: dict[str, int] | None) -> None:
    """Add to a batch the tokens of model calls made for it outside its items' decisions."""
    if not spent or not is_row_id(batch_id):
        return
    with write_transaction():
        batch = ImportBatch.get_or_none(ImportBatch.id == batch_id)
        if batch is not None:
            ImportBatch.update(usage=usage_acct.add(batch.usage, spent)).where(ImportBatch.id == batch.id).execute()


def _provider_name(provider: Provider) -> str:
    model = getattr(provider, "model", None)
    return f"{provider.name}:{model}" if model else str(provider.name)


def _recover(text: str, provider: Provider, error: ImportFormatError, where: str) -> ParsedImport:
    """Candidates from malformed input through the provider, validated by the strict parser."""
    before = _usage_of(provider)
    try:
        answer = provider.recover_external_memory({"text": text, "error": str(error)})
    except StrataError as exc:
        raise ImportFormatError(f"{error}; recovery failed: {exc}") from None
    spent = _spent(provider, before)
    items = answer.get("candidates") if isinstance(answer, dict) else None
    if not isinstance(items, list) or not items:
        reason = answer.get("reason") if isinstance(answer, dict) and isinstance(answer.get("reason"), str) else ""
        hint = "" if "{" in text else "; a plain list of facts (one per line or bullet) imports as format 'text'"
        raise ImportFormatError(f"{error}; recovery by the {provider.name} provider found no candidates"
                                + (f" ({reason})" if reason else "") + hint)
    envelope = {"schemaVersion": "stratagate.external-memory.v2", "sourceType": "external_ai_memory_export",
                "candidates": items}
    try:
        # A provider's JSON may escape a lone surrogate, which no database can store.
        check_surrogates(items, None, f"{where} (recovered) candidates", items=True, error=ImportFormatError)
        parsed = parse_v2_object(envelope, f"{where} (recovered)")
    except ImportFormatError as exc:
        raise ImportFormatError(f"{error}; the recovered candidates are invalid too: {exc}") from None
    return ParsedImport(format="v2", candidates=parsed.candidates, warnings=parsed.warnings, recovered=True,
                        usage=spent)


def parse_or_recover(text: str, format: str, provider: Provider | None, *, recover: bool = True,
                     where: str = "input") -> ParsedImport:
    """Strict parse; if the text is not JSON at all and ``recover``, try the provider's
    recovery (JSON formats only). Raises ImportFormatError naming the location otherwise."""
    try:
        return parse_import(text, format, where=where)
    except ImportFormatError as exc:
        if not (exc.syntax and recover and format == "v2" and provider is not None):
            raise
        return _recover(text, provider, exc, where)


def start_import(
    namespace: str,
    text: str,
    *,
    format: str = "v2",
    source_name: str | None = None,
    provider: Provider | str | None = None,
    top_k: int = DEFAULT_TOP_K,
    threshold: float = DEFAULT_THRESHOLD,
    recover: bool = True,
    parsed: ParsedImport | None = None,
) -> ImportBatchRow:
    """Validate an export and store it as a batch awaiting its preview (memory untouched).

    Invalid input raises ImportFormatError with its location and stores nothing.
    """
    namespace = validate_name(namespace)
    if format not in FORMATS:
        raise InvalidInputError(f"unknown import format {format!r}; use one of {', '.join(FORMATS)}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 20:
        raise InvalidInputError(f"top_k must be an integer from 1 to 20, got {top_k!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise InvalidInputError(f"threshold must be a number from 0 to 1, got {threshold!r}")
    prov = _provider(provider)
    where = source_name or "input"
    if parsed is None:
        parsed = parse_or_recover(text, format, prov, recover=recover, where=where)
    now = now_iso()
    with write_transaction():
        batch = ImportBatch.create(
            namespace_name=namespace, format=parsed.format, source_name=source_name,
            source_system=parsed.source_system, text=text,
            text_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            status="processing" if parsed.candidates else "ready", recovered=parsed.recovered, meta=parsed.meta(),
            warnings=list(parsed.warnings)[:200], provider=_provider_name(prov), top_k=top_k, usage=parsed.usage,
            threshold=float(threshold), total=len(parsed.candidates), processed=0, created_at=now, updated_at=now,
        )
        if not parsed.candidates:
            batch.preview_revision = _revision(namespace)
            batch.save()
        for position, candidate in enumerate(parsed.candidates, start=1):
            ImportItem.create(batch=batch, position=position, candidate=candidate,
                              fingerprint=fingerprint(candidate["title"], candidate["summary"]), updated_at=now)
    return _batch_row(batch)


# ----------------------------------------------------------------------------- preview


def _revision(namespace: str) -> int:
    row = Namespace.select(Namespace.revision).where(Namespace.name == namespace).first()
    return row.revision if row is not None else NO_NAMESPACE


def _live_fingerprints(namespace: str, wanted: Sequence[str]) -> dict[str, int]:
    """Fingerprint → oldest live event with that wording (forgotten and archived excluded), for
    the ``wanted`` fingerprints: looked up by index, never by hashing every stored event."""
    ns = Namespace.get_or_none(Namespace.name == namespace)
    if ns is None:
        return {}
    out: dict[str, int] = {}
    for part in chunks(sorted(set(wanted))):
        rows = (Event.select(Event.fingerprint, Event.id)
                .where((Event.namespace == ns) & Event.fingerprint.in_(part) & Event.status.in_(LIVE))
                .order_by(Event.id).tuples())
        for found, event_id in rows:
            out.setdefault(found, event_id)
    return out


USER_THREADS = 200  # newest threads read for the user's name


def user_names(namespace: str) -> list[str]:
    """Who "the user" is in a namespace: the speaker of the first user message of each of its newest
    threads. Another assistant's export says "User works at …" or just "Works at …" where this
    memory's cards say "Maya works at …" (or "User works at …", when its user has no name)."""
    ns = Namespace.get_or_none(Namespace.name == namespace)
    if ns is None:
        return []
    first = (Message.select(Message.id).where((Message.thread == Thread.id) & (Message.role == "user"))
             .order_by(Message.position).limit(1))  # per thread, by the (thread, position) index
    rows = (Thread.select(Message.speaker).join(Message, on=(Message.id == first))
            .where(Thread.namespace == ns.id).order_by(Thread.id.desc()).limit(USER_THREADS).tuples())
    speakers = [s.strip() if s and s.strip().casefold() not in ("user", "human", "me") else None for (s,) in rows]
    names = list(dict.fromkeys(s for s in speakers if s))
    # Users who never give a name are UNNAMED_USER, whom this memory's cards call "User"; beside
    # a named user, an unnamed thread is taken to be theirs.
    return names or ([UNNAMED_USER] if speakers else [])


def _match_items(namespace: str, candidate: dict[str, Any], top_k: int,
                 users: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Top-K stored matches: ``search_events`` over the title, summary and tags, fused (RRF)
    with a ranking of the events about the people the candidate names (the user, when it names no
    one and ``users`` is the one name the user goes by), so that a person's own event is not
    crowded out by other people's facts worded the same way."""
    from core.providers.offline_import import about_user, expanded_query, subject_names
    from core.search.bm25 import rrf
    from core.services.search import search_events

    ns = Namespace.get_or_none(Namespace.name == namespace)
    if ns is None:
        return []
    query = " ".join([candidate["title"], candidate["summary"], " ".join(candidate.get("tags") or [])])
    hits = {h.event.id: (h.event, h.rank_score) for h in search_events(namespace, query, limit=top_k, track=False)}
    rankings = [list(hits)]
    wide = expanded_query(candidate["title"], candidate["summary"])
    if wide != candidate["summary"]:
        # The same search with the synonyms of the candidate's kind of fact ("moved" also
        # looks for "lives", "home"), so a reworded update still meets what it updates.
        widened = search_events(namespace, wide, limit=top_k, track=False)
        for hit in widened:
            hits.setdefault(hit.event.id, (hit.event, hit.rank_score))
        rankings.append([h.event.id for h in widened])
    people = subject_names(candidate["title"], candidate["summary"],
                           (candidate.get("temporal") or {}).get("participants") or ())
    if not people and len(users) == 1 and about_user(candidate["title"], candidate["summary"]):
        people = list(users)
    if people:
        about = _about_people(ns.id, wide, people, top_k)
        for event, score in about:
            hits.setdefault(event.id, (event, score))
        rankings.append([event.id for event, _ in about])
    fused = rrf(rankings)[:top_k]
    return [_match_context(hits[i][0], round(score, 6)) for i, score in fused]


def _about_people(namespace_id: int, query: str, people: Sequence[str], limit: int) -> list[tuple[Event, float]]:
    """Live events whose index entries name one of ``people`` (as participant or in the text),
    ranked by BM25 of ``query`` and the names; the best few checked at a time, so a name that
    half the namespace's events carry costs what a rare one does."""
    from core.models import EventTerm
    from core.search.analyze import analyze
    from core.search.index import MAX_TERM, bm25_top_kept_scored

    names = list(dict.fromkeys(t[:MAX_TERM] for t in analyze(" ".join(people))))
    if not names:
        return []

    def naming_and_live(ids: list[int]) -> set[int]:
        live = live_event_ids(ids, namespace_id)
        return {doc for part in chunks(sorted(live)) for (doc,) in EventTerm.select(EventTerm.event).where(
            EventTerm.event.in_(part) & EventTerm.term.in_(names)).distinct().tuples()}

    ranked = bm25_top_kept_scored("event", namespace_id, analyze(query) + names, limit, naming_and_live)
    by_id = {e.id: e for part in chunks([i for i, _ in ranked]) for e in Event.select().where(Event.id.in_(part))}
    return [(by_id[i], score) for i, score in ranked]


def _match_context(event, score: float) -> dict[str, Any]:
    return {
        "id": event.id, "title": event.title, "summary": event.summary, "tags": list(event.tags),
        "participants": list(event.participants), "status": event.status, "event_type": event.event_type,
        "mentioned_at": event.mentioned_at, "happened_start": event.happened_start,
        "happened_end": event.happened_end, "time_status": event.time_status, "score": score,
    }


def _stored_match(namespace: str, event_id: int) -> dict[str, Any]:
    from core.services.events import event_row

    event = Event.get_by_id(event_id)
    ns = Namespace.get_by_id(event.namespace_id)
    return _match_context(event_row(event, ns, None), 1.0)


def _clip_reason(value: Any, default: str) -> str:
    text = " ".join(value.split()) if isinstance(value, str) and value.strip() else default
    return text[:MAX_REASON]


def _merged_candidate(raw: Any, candidate: dict[str, Any]) -> dict[str, Any] | None:
    """A model's fuller merged version, kept only with a usable title and summary."""
    if not isinstance(raw, dict):
        return None
    title, summary = raw.get("title"), raw.get("summary")
    if not isinstance(title, str) or not title.strip() or not isinstance(summary, str) or not summary.strip():
        return None
    merged = dict(candidate)
    merged["title"] = clip(title.strip(), 160)
    merged["summary"] = summary.strip()[:2000]
    tags = raw.get("tags")
    if isinstance(tags, list):
        merged["tags"] = list(dict.fromkeys([t.strip()[:80] for t in tags if isinstance(t, str) and t.strip()]
                                            + list(candidate.get("tags") or [])))[:12]
    temporal = raw.get("temporal")
    if isinstance(temporal, dict) and isinstance(temporal.get("participants"), list):
        people = [p.strip() for p in temporal["participants"] if isinstance(p, str) and p.strip()]
        merged["temporal"] = {**(candidate.get("temporal") or {}),
                              "participants": list(dict.fromkeys(people))[:24]}
    return merged


def normalize_decision(raw: Any, candidate: dict[str, Any], allowed: Iterable[int], *, recovered: bool,
                       threshold: float) -> dict[str, Any]:
    """§10.2 normalisation of a provider's decision.

    Unknown action → ignore; targets only among ``allowed`` (the Top-K matches); a merge,
    supersede or conflict left without a valid target → ignore with confidence 0.5
    ("safely downgraded"); confidence clamped to 0–1 (default 0.5); reason at most 500
    characters; ``requires_confirmation`` when recovered or below ``threshold``.
    """
    raw = raw if isinstance(raw, dict) else {}
    action = raw.get("action").strip().lower() if isinstance(raw.get("action"), str) else ""
    reason = _clip_reason(raw.get("reason"), "no reason given")
    confidence = raw.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or confidence != confidence:
        confidence = 0.5
    confidence = max(0.0, min(1.0, float(confidence)))
    if action not in ACTIONS:
        reason = _clip_reason(f"unknown action {raw.get('action')!r}, safely downgraded to ignore; {reason}", reason)
        action = "ignore"
    permitted = list(dict.fromkeys(allowed))
    cited = raw.get("existing_event_ids")
    targets = [i for i in (cited if isinstance(cited, list) else [])
               if isinstance(i, int) and not isinstance(i, bool) and i in permitted]
    targets = list(dict.fromkeys(targets))
    merged = None
    if action in TARGETED and not targets:
        reason = _clip_reason(f"{action} without a target among the top-K matches, safely downgraded to ignore; "
                              f"{reason}", reason)
        action, confidence = "ignore", 0.5
    if action == "add":
        targets = []
    if action == "merge":
        merged = _merged_candidate(raw.get("merged_candidate"), candidate)
    return {
        "action": action, "target_ids": targets, "reason": reason, "confidence": round(confidence, 4),
        "merged": merged, "requires_confirmation": bool(recovered or confidence < threshold),
    }


def _decision_key(context: dict[str, Any], provider_name: str, threshold: float) -> str:
    body = json.dumps({"context": context, "provider": provider_name, "threshold": threshold},
                      sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


EARLIER_ITEMS = 20  # items of the batch before this one that the decider is shown


def _decide_item(batch: ImportBatch, item: ImportItem, earlier: dict[str, int], live: dict[str, int],
                 prov: Provider, prov_name: str, meta: dict[str, Any], users: Sequence[str],
                 before: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The new state of one item (no write, maybe one model call outside any transaction)."""
    candidate = item.candidate
    base = {"duplicate_of_event": None, "duplicate_of_item": None, "merged": None, "decision_key": None,
            "matched": None}
    if item.fingerprint in earlier and earlier[item.fingerprint] < item.position:
        other = earlier[item.fingerprint]
        return {**base, "matches": [], "action": "ignore", "target_ids": [], "duplicate_of_item": other,
                "reason": f"exact duplicate of item {other} in this batch", "confidence": 1.0,
                "requires_confirmation": bool(batch.recovered), "calls": 0}
    if item.fingerprint in live:
        event_id = live[item.fingerprint]
        match = _stored_match(batch.namespace_name, event_id)
        return {**base, "matches": [match], "action": "ignore", "target_ids": [event_id],
                "duplicate_of_event": event_id, "reason": f"exact duplicate of stored event {event_id}",
                "confidence": 1.0, "requires_confirmation": bool(batch.recovered), "calls": 0}
    matches = _match_items(batch.namespace_name, candidate, batch.top_k, users)
    context = {"candidate": candidate, "matches": matches,
               "source": {"system": batch.source_system, "exported_at": meta.get("exported_at"),
                          "format": batch.format, "recovered": bool(batch.recovered)},
               "user": {"names": list(users)},
               # An export often says one thing twice in other words; the second adds nothing.
               "earlier": [b for b in before if b["position"] < item.position][-EARLIER_ITEMS:]}
    key = _decision_key(context, prov_name, batch.threshold)
    if item.decision_key == key and item.action is not None:
        return {**base, "matches": matches, "action": item.action, "target_ids": list(item.target_ids or []),
                "reason": item.reason, "confidence": item.confidence, "merged": item.merged,
                "requires_confirmation": bool(item.requires_confirmation), "decision_key": key, "calls": 0,
                "matched": item.matched}
    if getattr(prov, "model_backed", False):
        decision = _model_decision(prov, context, batch, users)
        if decision.pop("unusable", False):
            key = None  # looked at again, the item asks the model again
    else:
        raw = prov.decide_external_memory(copy.deepcopy(context))
        decision = normalize_decision(raw, candidate, [m["id"] for m in matches], recovered=bool(batch.recovered),
                                      threshold=batch.threshold)
    return {**base, **decision, "matches": matches, "decision_key": key, "calls": 1}


def _model_decision(prov: Provider, context: dict[str, Any], batch: ImportBatch,
                    users: Sequence[str]) -> dict[str, Any]:
    """A model's decision, checked strictly (core.providers.import_decision). An answer that is unusable
    even after JSON recovery, or a provider that got none, leaves the item to a person; an answer
    whose evidence is not explicit cannot reach the threshold. A failed HTTP exchange still fails
    the preview (resumable): that is no answer, and asking again may get one."""
    from core.providers.import_decision import (
        UnusableAnswer, capped, matched_fields, unusable_decision, validate_answer, weakness,
    )
    from core.providers.openai_compat import ProviderCallError

    candidate, matches = context["candidate"], context["matches"]
    allowed = [m["id"] for m in matches]
    try:
        raw = prov.decide_external_memory(copy.deepcopy(context))
        answer = validate_answer(raw, allowed)
    except ProviderCallError:
        raise
    except (UnusableAnswer, ProviderOutputError) as exc:
        return {**unusable_decision(redact_text(str(exc))), "unusable": True}
    decision = normalize_decision(answer, candidate, allowed, recovered=bool(batch.recovered),
                                  threshold=batch.threshold)
    why = weakness(answer, candidate, matches, users)
    if why:
        note = f" (a person confirms: {why})"
        decision["confidence"] = capped(decision["confidence"], batch.threshold)
        decision["requires_confirmation"] = True
        decision["reason"] = _clip_reason(decision["reason"][:MAX_REASON - len(note)] + note, decision["reason"])
    decision["matched"] = matched_fields(answer)
    return decision


def _status_after_preview(items: Sequence[ImportItem]) -> str:
    if any(i.state != "decided" for i in items):
        return "processing"
    waiting = any(i.requires_confirmation and i.choice_action is None for i in items)
    return "awaiting_confirmation" if waiting else "ready"


def preview_batch(batch_id: int | str, *, provider: Provider | str | None = None,
                  progress: ProgressFn | None = None, refresh: bool = False) -> ImportPreview:
    """Decide every item not yet decided against the namespace as it is now; resumable.

    Items decided at an older namespace revision are looked at again (their model
    decision is reused when their matches did not change). ``progress(done, total, label)``
    is called after each item. A provider failure leaves the decided items saved and raises.
    ``refresh`` looks at every item again (decisions whose inputs did not change are reused).
    """
    batch = _get_batch(batch_id)
    if batch.status in ("committed", "undone"):
        raise InvalidInputError(f"import batch {batch.id} is {batch.status}; its preview cannot change")
    prov = _provider(provider, (batch.provider or "").split(":")[0] or None)
    prov_name = _provider_name(prov)
    meta = batch.meta or {}
    for attempt in range(MAX_PASSES):
        revision = _revision(batch.namespace_name)
        items = _items(batch.id)
        earlier: dict[str, int] = {}
        for item in items:
            earlier.setdefault(item.fingerprint, item.position)
        todo = [i for i in items if i.state != "decided" or i.revision != revision or (refresh and attempt == 0)]
        live = _live_fingerprints(batch.namespace_name, [i.fingerprint for i in todo]) if todo else {}
        users = user_names(batch.namespace_name) if todo else []
        before = [{"position": i.position, "title": i.candidate.get("title", ""),
                   "summary": clip(i.candidate.get("summary", ""), 500)} for i in items]
        done = len(items) - len(todo)
        if progress:
            progress(done, len(items), "")
        for item in todo:
            metered = _usage_of(prov)
            try:
                state = _decide_item(batch, item, earlier, live, prov, prov_name, meta, users, before)
            except Exception as exc:
                with write_transaction():
                    # A failed call may be billed too: its tokens go on the batch.
                    spent = _spent(prov, metered)
                    if spent:
                        fresh = ImportBatch.get_by_id(batch.id)
                        ImportBatch.update(usage=usage_acct.add(fresh.usage, spent)).where(
                            ImportBatch.id == batch.id).execute()
                    # Masked before the cut, as a job's error is (a provider's message may quote a key).
                    ImportBatch.update(last_error=redact_text(f"item {item.position}: {exc}")[:2000],
                                       updated_at=now_iso()).where(ImportBatch.id == batch.id).execute()
                if isinstance(exc, StrataError):
                    raise
                raise ProviderOutputError(f"import batch {batch.id}, item {item.position}: {exc}") from exc
            spent = _spent(prov, metered)
            allowed = {m["id"] for m in state["matches"]}
            choice_ok = _choice_kept(item, allowed, batch.namespace_name)
            with write_transaction():
                ImportItem.update(
                    state="decided", revision=revision, matches=[
                        {"event_id": m["id"], "title": m["title"], "summary": m["summary"], "status": m["status"],
                         "score": round(float(m.get("score") or 0.0), 6)} for m in state["matches"]],
                    action=state["action"], target_ids=state["target_ids"], reason=state["reason"],
                    confidence=state["confidence"], merged=state["merged"],
                    requires_confirmation=state["requires_confirmation"], decision_key=state["decision_key"],
                    duplicate_of_event=state["duplicate_of_event"], duplicate_of_item=state["duplicate_of_item"],
                    model_calls=ImportItem.model_calls + state["calls"], matched=state["matched"],
                    usage=usage_acct.add(item.usage, spent) if spent else item.usage,
                    choice_action=item.choice_action if choice_ok else None,
                    choice_target_ids=item.choice_target_ids if choice_ok else None, updated_at=now_iso(),
                ).where(ImportItem.id == item.id).execute()
                decided = ImportItem.select().where((ImportItem.batch == batch.id) & (ImportItem.state == "decided")
                                                    & (ImportItem.revision == revision)).count()
                ImportBatch.update(processed=decided, last_error=None, updated_at=now_iso()).where(
                    ImportBatch.id == batch.id).execute()
            done += 1
            if progress:
                progress(done, len(items), item.candidate.get("title", "")[:40])
        with write_transaction():
            if _revision(batch.namespace_name) != revision and attempt < MAX_PASSES - 1:
                continue  # the namespace moved while we decided: look again (cheap, decisions are reused)
            items = _items(batch.id)
            ImportBatch.update(status=_status_after_preview(items), preview_revision=revision,
                               processed=len(items), updated_at=now_iso()).where(ImportBatch.id == batch.id).execute()
        break
    return get_batch(batch.id)


def preview_import(namespace: str, text: str, *, format: str = "v2", source_name: str | None = None,
                   provider: Provider | str | None = None, top_k: int = DEFAULT_TOP_K,
                   threshold: float = DEFAULT_THRESHOLD, recover: bool = True,
                   progress: ProgressFn | None = None) -> ImportPreview:
    """``start_import`` then ``preview_batch``: the whole preview of a pasted export."""
    prov = _provider(provider)
    batch = start_import(namespace, text, format=format, source_name=source_name, provider=prov, top_k=top_k,
                         threshold=threshold, recover=recover)
    return preview_batch(batch.id, provider=prov, progress=progress)


def preview_file(namespace: str, path: str | Path, *, format: str = "v2", provider: Provider | str | None = None,
                 top_k: int = DEFAULT_TOP_K, threshold: float = DEFAULT_THRESHOLD, recover: bool = True,
                 progress: ProgressFn | None = None) -> ImportPreview:
    """Preview an export file (the 4 MB limit is checked before it is read)."""
    prov = _provider(provider)
    try:
        text, parsed = read_import_file(path, format)
    except ImportFormatError as exc:
        if not (exc.syntax and recover and format == "v2"):
            raise
        text = Path(path).read_text(encoding="utf-8")
        parsed = _recover(text, prov, exc, str(path))
    batch = start_import(namespace, text, format=format, source_name=str(path), provider=prov, top_k=top_k,
                         threshold=threshold, recover=recover, parsed=parsed)
    return preview_batch(batch.id, provider=prov, progress=progress)


# ----------------------------------------------------------------------------- choices


def _live_in(namespace: str, ids: Sequence[int]) -> set[int]:
    if not ids:
        return set()
    ns = Namespace.get_or_none(Namespace.name == namespace)
    return live_event_ids(list(ids), ns.id) if ns is not None else set()


def _choice_kept(item: ImportItem, allowed: set[int], namespace: str) -> bool:
    """Whether a person's choice survives a new preview of its item: its targets are still among the
    matches, or are events the person named outside them that are still live."""
    if item.choice_action is None:
        return True
    outside = set(item.choice_target_ids or []) - allowed
    return outside <= _live_in(namespace, sorted(outside))


def decide(batch_id: int | str, position: int, action: str, target_ids: Sequence[int] | None = None) -> ImportItemRow:
    """Record a person's choice for one item (any item may be overridden).

    A merge, supersede or conflict needs targets, one or several: the item's matches, or any
    live event of the batch's namespace (a person may know the event the search missed).
    Without ``target_ids`` the preview's own targets are used.
    """
    if not isinstance(action, str) or action.strip().lower() not in ACTIONS:
        raise InvalidInputError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    action = action.strip().lower()
    for target in target_ids or ():
        if isinstance(target, bool) or not isinstance(target, int) or not is_row_id(target):
            raise InvalidInputError(f"a target must be an event id, got {target!r}")
    with write_transaction():
        batch, item = _choice_item(batch_id, position)
        allowed = [m["event_id"] for m in item.matches or []]
        targets: list[int] = []
        if action in TARGETED:
            targets = list(dict.fromkeys(target_ids or item.target_ids or []))
            if not targets:
                raise InvalidInputError(
                    f"{action} needs a target event: pass one of item {position}'s matches "
                    f"({', '.join(map(str, allowed)) or 'none'}) or any live event of namespace "
                    f"{batch.namespace_name!r}; or choose add or ignore")
            outside = [t for t in targets if t not in allowed]
            live = _live_in(batch.namespace_name, outside)
            bad = [t for t in outside if t not in live]
            if bad:
                raise InvalidInputError(
                    f"event {bad[0]} is neither among item {position}'s matches "
                    f"({', '.join(map(str, allowed)) or 'none'}) nor a live event of namespace "
                    f"{batch.namespace_name!r}")
        item.choice_action, item.choice_target_ids, item.updated_at = action, targets, now_iso()
        item.save()
        _settle_status(batch)
        item = ImportItem.get_by_id(item.id)
        outside_rows = _outside_targets([item])
    return _item_row(item, outside_rows)


def reset_choice(batch_id: int | str, position: int | None = None) -> ImportPreview:
    """Forget a person's choice for one item (``position``), or for every item of the batch: the
    preview's decision applies again (an item below the threshold waits for a person again)."""
    with write_transaction():
        if position is None:
            batch = _get_batch(batch_id)
            _check_choosable(batch)
            ImportItem.update(choice_action=None, choice_target_ids=None, updated_at=now_iso()).where(
                ImportItem.batch == batch.id).execute()
        else:
            batch, item = _choice_item(batch_id, position)
            item.choice_action, item.choice_target_ids, item.updated_at = None, None, now_iso()
            item.save()
        _settle_status(batch)
    return get_batch(batch.id)


def _check_choosable(batch: ImportBatch) -> None:
    if batch.status in ("committed", "undone"):
        raise InvalidInputError(f"import batch {batch.id} is {batch.status}; its choices cannot change")


def _choice_item(batch_id: int | str, position: int) -> tuple[ImportBatch, ImportItem]:
    batch = _get_batch(batch_id)
    _check_choosable(batch)
    item = (ImportItem.get_or_none((ImportItem.batch == batch.id) & (ImportItem.position == position))
            if is_row_id(position) else None)
    if item is None:
        raise NotFoundError(f"import batch {batch.id} has no item {position} (items 1-{batch.total})")
    if item.state != "decided":
        raise InvalidInputError(f"item {position} of import batch {batch.id} has no preview decision yet; "
                                f"run `strata import resume {batch.id}` first")
    return batch, item


def _settle_status(batch: ImportBatch) -> None:
    if batch.status in ("awaiting_confirmation", "ready"):
        batch.status = _status_after_preview(_items(batch.id))
    batch.updated_at = now_iso()
    batch.save()


# ----------------------------------------------------------------------------- commit


def _image(row: dict[str, Any] | Any, fields: Sequence[str]) -> dict[str, Any]:
    get = row.get if isinstance(row, dict) else (lambda k: getattr(row, k))
    return {f: get(f) for f in fields}


def _record_change(batch_id: int, table: str, record_id: int, before: dict | None, after: dict | None) -> None:
    """Keep the first pre-image of a row for this batch and its latest post-image."""
    existing = ImportChange.get_or_none((ImportChange.batch == batch_id) & (ImportChange.table == table)
                                        & (ImportChange.record_id == record_id))
    if existing is None:
        ImportChange.create(batch=batch_id, table=table, record_id=record_id, before=before, after=after,
                            created_at=now_iso())
    else:
        ImportChange.update(after=after).where(ImportChange.id == existing.id).execute()


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _block_views(batch: ImportBatch, items: Sequence[ImportItem], applied: dict[str, int]) -> dict[str, Any]:
    """L0–L2 of the source block: what was imported, from where, and what became of it."""
    origin = batch.source_system or batch.format
    title = clip(f"Imported memory from {origin} ({batch.total} item{'s' if batch.total != 1 else ''})", 80)
    outcome = ", ".join(f"{n} {a}" for a, n in applied.items() if n) or "nothing applied"
    exported = (batch.meta or {}).get("exported_at")
    summary = (f"External memory exported by {origin}" + (f" on {exported}" if exported else "")
               + f", imported as batch {batch.id}: {outcome}. The full original text is this block's L5.")
    points = [clip(f"{i.candidate['title']}: {i.candidate['summary']}", 240) for i in items[:8]]
    if not points and batch.text.strip():
        points = [clip(_first_line(batch.text), 240)]
    return {"title": title, "summary": clip(summary, 500), "points": points}


def _mention_time(candidate: dict[str, Any], fallback: str) -> str:
    """A partial mention date (2024, 2024-05) is pinned to its first day so it parses."""
    value = (candidate.get("temporal") or {}).get("mentioned_at")
    if not value:
        return fallback
    if len(value) == 4:
        return f"{value}-01-01"
    if len(value) == 7:
        return f"{value}-01"
    return value


ASSISTANT_NAMES = frozenset({"assistant", "ai", "bot", "system"})


def _participants(candidate: dict[str, Any], targets: Sequence[Sequence[str]], users: Sequence[str]) -> list[str]:
    """Who and what an imported item names, as an extracted card lists them: the export's own
    participants, then the names its text gives (read as extraction reads a message). A statement
    naming no one ("Moved to Hamburg", "The user moved …") is about the user, who goes first: the
    one name the namespace's user goes by, else the person the cards it replaces are about
    (extraction lists a card's speaker first and, for the assistant's words, the one spoken to
    next). Without them the graph projection finds no one to give the new value to."""
    from core.providers.offline_import import about_user
    from core.providers.offline_events import named_in

    title, summary = candidate.get("title", ""), candidate.get("summary", "")
    listed = [p for p in (candidate.get("temporal") or {}).get("participants") or [] if isinstance(p, str)]
    # A nickname is read as the user's name, as extraction reads one as its speaker's; other
    # stored names are not prefixes to complete ("Oslo" is no "Oslo Airport").
    names = listed + named_in([title, summary], users)
    if about_user(title, summary):
        # Where nobody has spoken yet the user is unnamed, as extraction calls them; where several
        # people speak as users, only the replaced cards can tell which one is meant.
        who = users[0] if len(users) == 1 else UNNAMED_USER if not users and not targets else next(
            (p for names in targets for p in names if p.strip().casefold() not in ASSISTANT_NAMES), None)
        if who:
            names.insert(0, who)
    out: dict[str, str] = {}
    for name in names:
        out.setdefault(" ".join(name.split()).casefold(), " ".join(name.split()))
    return [name for name in out.values() if name][:24]


def _draft(candidate: dict[str, Any], message_id: int, action: str, targets: Sequence[int],
           fallback_time: str, participants: Sequence[str] = ()) -> dict[str, Any]:
    temporal = dict(candidate.get("temporal") or {})
    temporal["mentioned_at"] = _mention_time(candidate, fallback_time)
    temporal["participants"] = list(participants)
    relations: dict[str, list[int]] = {}
    if action in ("merge", "supersede"):
        relations["supersedes"] = list(targets)
    elif action == "conflict":
        relations["conflicts"] = list(targets)
    return {
        "title": candidate["title"], "summary": candidate["summary"], "tags": list(candidate.get("tags") or []),
        "quotes": list(candidate.get("quotes") or []), "source_message_ids": [message_id], "temporal": temporal,
        "relations": relations, "scope": candidate.get("scope", "user"),
        "criticality": candidate.get("criticality", "routine"),
    }


def _create_source_block(ns: Namespace, batch: ImportBatch, views: dict[str, Any], now: str,
                         has_time: bool) -> tuple[Block, Message]:
    """The synthetic source block: one message holding the whole imported text (L5)."""
    stamp = parse_timestamp(now)
    thread = Thread.create(namespace=ns, name=f"external-import:{batch.id}", message_count=1, turn_count=1,
                           sealed_turns=1, block_count=1, ready_count=1, created_at=now, updated_at=now)
    message = Message.create(namespace=ns, thread=thread, position=1, turn=1, ns_turn=ns.current_turn, role="user",
                             speaker=None, content=batch.text, created_at=now, created_ts=to_epoch(stamp),
                             external_id=f"import:{batch.id}", has_time=has_time)
    layers = deterministic_layers([MessageIn(role="user", content=batch.text)])
    ns.block_count += 1
    block = Block.create(
        namespace=ns, thread=thread, sequence=ns.block_count, start_turn=1, end_turn=1, message_count=1,
        created_at=now, status="ready", l0_title=views["title"], l0_tags=[IMPORT_TAG], l1_summary=views["summary"],
        l2_keypoints=views["points"], should_extract=False, l3_text=layers[3], l4_text=layers[4],
        tokens_l3=estimate_tokens(layers[3]), tokens_l4=estimate_tokens(layers[4]),
        tokens_l5=estimate_tokens(layers[5]), ready_position=1, pointer_current_level=5, pointer_anchor_level=5,
        pointer_anchor_position=1,
    )
    Message.update(block=block).where(Message.id == message.id).execute()
    index_messages(ns.id, [(message.id, thread.id, message_text(None, batch.text, None))])
    return block, message


class _Stale(Exception):
    def __init__(self, previewed: int | None, current: int):
        self.previewed, self.current = previewed, current


def _check_committable(batch: ImportBatch) -> None:
    if batch.status == "undone":
        raise InvalidInputError(
            f"import batch {batch.id} was undone at {batch.undone_at}; an undone batch cannot be committed again "
            "(preview the export again to import it anew)")
    if batch.status == "committed":
        raise InvalidInputError(f"import batch {batch.id} was already committed at {batch.committed_at}")
    if batch.status == "processing":
        raise InvalidInputError(
            f"the preview of import batch {batch.id} is not finished ({batch.processed} of {batch.total} items "
            f"decided); run `strata import resume {batch.id}` first")


def commit_batch(batch_id: int | str, *, choices: Mapping[int, Any] | None = None,
                 provider: Provider | str | None = None, progress: ProgressFn | None = None) -> ImportPreview:
    """Apply a previewed batch in one transaction (all of it or nothing).

    ``choices`` maps an item position to an action or ``(action, [target ids])``: a person's
    decisions, recorded like ``decide`` before committing. Items that need confirmation and
    have no choice are ignored. If the namespace changed since the preview, nothing is
    written: the preview is refreshed (``provider``/``progress`` as for ``preview_batch``)
    and StalePreviewError carries it.
    """
    batch = _get_batch(batch_id)
    _check_committable(batch)
    for position, choice in (choices or {}).items():
        action, targets = (choice, None) if isinstance(choice, str) else (choice[0], list(choice[1] or []))
        decide(batch.id, int(position), action, targets)
    # The text's time flag is found before the write lock is taken (a long export takes a while).
    has_time = has_dated_mention(batch.text, parse_timestamp(now_iso()))
    try:
        with write_transaction():
            result = _commit(batch.id, has_time)
    except _Stale as stale:
        refreshed = preview_batch(batch.id, provider=provider, progress=progress, refresh=True)
        raise StalePreviewError(
            f"import batch {batch.id}: namespace {batch.namespace_name!r} changed since the preview (revision "
            f"{stale.previewed} then, {stale.current} now); nothing was written. The preview was refreshed: "
            f"review it (`strata import show {batch.id}`) and commit again", preview=refreshed) from None
    return result


def _check_targets(batch: ImportBatch, plan: Sequence[tuple[ImportItem, str | None, tuple[int, ...]]]) -> None:
    """Every event a decision points at must still be as the preview saw it (the revision
    check covers this for every write that bumps it; this also covers any that does not)."""
    seen = {m["event_id"]: m["status"] for item, _, _ in plan for m in item.matches or []}
    wanted = sorted({t for _, action, targets in plan if action in TARGETED for t in targets})
    if not wanted:
        return
    now = dict(Event.select(Event.id, Event.status).where(Event.id.in_(wanted)).tuples())
    for event_id in wanted:
        if now.get(event_id) not in LIVE or now.get(event_id) != seen.get(event_id, now.get(event_id)):
            raise _Stale(batch.preview_revision, _revision(batch.namespace_name))


def _commit(batch_id: int, has_time: bool) -> ImportPreview:
    batch = _get_batch(batch_id)  # re-read inside the transaction
    _check_committable(batch)
    current = _revision(batch.namespace_name)
    if current != batch.preview_revision:
        raise _Stale(batch.preview_revision, current)
    items = _items(batch.id)
    plan = [(item, *_effective(item)) for item in items]
    _check_targets(batch, plan)
    now = now_iso()
    ns = get_or_create_namespace(batch.namespace_name)
    applied = {a: sum(1 for _, action, _ in plan if action == a) for a in ACTIONS}
    users = user_names(batch.namespace_name)  # read before the batch's own unnamed source message exists
    block, message = _create_source_block(ns, batch, _block_views(batch, items, applied), now, has_time)
    meta = batch.meta or {}
    fallback_time = meta.get("exported_at") or now
    if len(fallback_time) <= 7:
        fallback_time = _mention_time({"temporal": {"mentioned_at": fallback_time}}, now)

    # Pre-images of every event a merge or supersede will change, taken before any write.
    replaced = sorted({t for _, action, targets in plan if action in ("merge", "supersede") for t in targets})
    before = {e.id: _image(e, _EVENT_IMAGE) for e in Event.select().where(Event.id.in_(replaced))} if replaced else {}

    targeted = sorted({t for _, action, targets in plan if action in TARGETED for t in targets})
    cast = {i: names for part in chunks(targeted) for i, names in
            Event.select(Event.id, Event.participants).where(Event.id.in_(part)).tuples()}
    created: list[Event] = []
    for item, action, targets in plan:
        event_id = None
        if action and action != "ignore":
            source = item.merged if action == "merge" and item.merged else item.candidate
            who = _participants(source, [cast.get(t) or [] for t in targets], users)
            event = write_event(ns.id, _draft(source, message.id, action, targets, fallback_time, who), block=block,
                                formed_turn=ns.current_turn, origin="import", mentioned_fallback=fallback_time,
                                index=False)
            created.append(event)
            event_id = event.id
        ImportItem.update(final_action=action or "ignore", final_target_ids=list(targets), created_event_id=event_id,
                          updated_at=now).where(ImportItem.id == item.id).execute()
    index_events(ns.id, created)
    for event in Event.select().where(Event.id.in_(list(before))) if before else ():
        _record_change(batch.id, "event", event.id, before[event.id], _image(event, _EVENT_IMAGE))
    ids = [e.id for e in created]
    for start in range(0, len(ids), GRAPH_BATCH):
        create_job(ns, IMPORT_GRAPH_KIND, None, priority=IMPORT_GRAPH_PRIORITY,
                   payload={"event_ids": ids[start:start + GRAPH_BATCH], "import_batch": batch.id})
    ns.revision += 1
    ns.updated_at = now
    ns.save()
    ImportBatch.update(status="committed", source_block_id=block.id, imported_count=len(created), committed_at=now,
                       updated_at=now, last_error=None).where(ImportBatch.id == batch.id).execute()
    return get_batch(batch.id)


# ----------------------------------------------------------------------------- graph projection of imports


def _node_keys(proposal: dict[str, Any]) -> set[str]:
    from core.services.graph_names import entity_key

    keys: set[str] = set()
    for node in proposal.get("nodes") or []:
        if not isinstance(node, dict):
            continue
        for value in [node.get("name"), *(node.get("aliases") if isinstance(node.get("aliases"), list) else [])]:
            if isinstance(value, str) and value.strip():
                keys.add(entity_key(" ".join(value.split()))[:255])
    return keys


def _graph_snapshot(namespace_id: int, proposal: dict[str, Any]) -> tuple[dict[str, dict[int, dict]], dict[str, int]]:
    """Every graph row a projection of ``proposal`` may change, and the highest id of each
    table (rows above it afterwards were created by the projection)."""
    from peewee import fn

    from core.services.graph_names import entity_key

    keys = _node_keys(proposal)
    node_ids: set[int] = set()
    if keys:
        rows = GraphNode.select(GraphNode.id, GraphNode.name_norm, GraphNode.aliases).where(
            GraphNode.namespace == namespace_id).tuples()
        for node_id, name_norm, aliases in rows:
            names = {name_norm} | {entity_key(a)[:255] for a in aliases or [] if isinstance(a, str)}
            if names & keys:
                node_ids.add(node_id)
    snap: dict[str, dict[int, dict]] = {table: {} for table in GRAPH_TABLES}
    if node_ids:
        ids = list(node_ids)
        snap["graph_node"] = {r["id"]: r for r in GraphNode.select().where(GraphNode.id.in_(ids)).dicts()}
        snap["graph_fact"] = {r["id"]: r for r in GraphFact.select().where(GraphFact.node.in_(ids)).dicts()}
        snap["graph_edge"] = {r["id"]: r for r in GraphEdge.select().where(
            GraphEdge.from_node.in_(ids) | GraphEdge.to_node.in_(ids)).dicts()}
    maxes = {table: model.select(fn.MAX(model.id)).scalar() or 0 for table, model in GRAPH_TABLES.items()}
    return snap, maxes


def _record_graph_changes(batch_id: int, snap: dict[str, dict[int, dict]], maxes: dict[str, int], result) -> None:
    created: dict[str, set[int]] = {}
    for table, model in GRAPH_TABLES.items():
        before = snap[table]
        if before:
            now_rows = {r["id"]: r for r in model.select().where(model.id.in_(list(before))).dicts()}
            for record_id, old in before.items():
                new = now_rows.get(record_id)
                if new != old:
                    _record_change(batch_id, table, record_id, old, new)
        rows = list(model.select().where(model.id > maxes[table]).dicts())
        created[table] = {r["id"] for r in rows}
        for row in rows:
            _record_change(batch_id, table, row["id"], None, row)
    known_nodes = set(snap["graph_node"]) | created["graph_node"]
    known_edges = set(snap["graph_edge"]) | created["graph_edge"]
    stray = [i for i in result.node_ids if i not in known_nodes] + [i for i in result.edge_ids if i not in known_edges]
    if stray:
        # Undo could not restore what it never saw: refuse the projection rather than lose exactness.
        raise ProviderOutputError(f"import graph projection changed graph record(s) {stray[:5]} outside its "
                                  "recorded pre-images; nothing was applied")


def run_import_graph_job(job: Job, provider: Any, report: Any) -> None:
    """Derive handler for ``import_graph`` jobs: project imported events into the graph and
    record the pre-image of every graph row the projection creates or changes, so that an
    undo of the batch can restore the graph exactly. The model call runs outside any
    transaction; the projection and its pre-images commit together."""
    from core.services import jobs as jobsvc
    from core.services.graph_apply import apply_projection
    from core.services.graph_job import propose_projection

    payload = dict(job.payload or {})
    metered = _usage_of(provider)
    try:
        ids, proposal = propose_projection(job, provider)
    finally:
        # The projection's model call is part of what the import cost, answered or not.
        _charge_batch(payload.get("import_batch"), _spent(provider, metered))
    with write_transaction():
        if not jobsvc.still_claimed(job):
            return
        batch = ImportBatch.get_or_none(ImportBatch.id == payload.get("import_batch"))
        now = now_iso()
        if batch is None or batch.status != "committed":
            Job.update(status="skipped", last_error=None, next_retry_at=None, updated_at=now).where(
                Job.id == job.id).execute()
            report.skipped += 1
            return
        snap, maxes = _graph_snapshot(job.namespace_id, proposal)
        result = apply_projection(job.namespace_id, ids, proposal)
        _record_graph_changes(batch.id, snap, maxes, result)
        payload.update({"node_ids": result.node_ids, "edge_ids": result.edge_ids,
                        "reason": "; ".join(result.warnings)[:500]})
        Job.update(status="succeeded", last_error=None, next_retry_at=None, payload=payload, updated_at=now).where(
            Job.id == job.id).execute()
        if result.node_ids or result.edge_ids:
            bump_revision(job.namespace_id, now)
    report.succeeded += 1


# ----------------------------------------------------------------------------- undo


def _restore_row(model, record_id: int, values: dict[str, Any]) -> None:
    fields = {k: v for k, v in values.items() if k != "id"}
    model.update(**fields).where(model.id == record_id).execute()


def _scrub_provenance(value: Any, removed: set[int]) -> Any:
    if isinstance(value, list):
        return [_scrub_provenance(v, removed) for v in value if not (isinstance(v, int) and v in removed)]
    if isinstance(value, dict):
        return {k: _scrub_provenance(v, removed) for k, v in value.items()}
    return value


def _undo_graph(batch_id: int, removed: set[int]) -> tuple[int, int]:
    """Delete graph rows the batch's projection created (while nothing else cites them) and
    restore the rows it changed. A row changed again later keeps the later values of the
    fields that later write touched."""
    changes = list(ImportChange.select().where((ImportChange.batch == batch_id)
                                               & ImportChange.table.in_(list(GRAPH_TABLES))))
    removed_count = restored = 0
    for table, kind in (("graph_fact", "fact"), ("graph_edge", "edge"), ("graph_node", "node")):
        model = GRAPH_TABLES[table]
        for change in (c for c in changes if c.table == table and c.before is None):
            row = model.get_or_none(model.id == change.record_id)
            if row is None:
                continue
            cited = GraphSource.select().where((GraphSource.kind == kind) & (GraphSource.record_id == row.id)).exists()
            if cited:
                continue  # later events cite it: it is theirs now
            if kind == "node" and (GraphFact.select().where(GraphFact.node == row.id).exists()
                                   or GraphEdge.select().where((GraphEdge.from_node == row.id)
                                                               | (GraphEdge.to_node == row.id)).exists()):
                continue
            if kind != "node":
                forget_endings_of(kind, [row.id])
            model.delete().where(model.id == row.id).execute()
            removed_count += 1
    for change in (c for c in changes if c.before is not None):
        model = GRAPH_TABLES[change.table]
        current = model.select().where(model.id == change.record_id).dicts().first()
        if current is None:
            continue
        if current == change.after:
            _restore_row(model, change.record_id, change.before)
        else:
            merged = {k: (change.before.get(k) if current.get(k) == (change.after or {}).get(k) else current.get(k))
                      for k in current}
            if "provenance" in merged:
                merged["provenance"] = _scrub_provenance(merged["provenance"], removed)
            _restore_row(model, change.record_id, merged)
        restored += 1
    return removed_count, restored


def _undo_events(batch_id: int, removed: set[int], now: str) -> list[int]:
    """Give back the events a merge or supersede replaced their earlier state."""
    restored: list[int] = []
    images = {c.record_id: c for c in ImportChange.select().where((ImportChange.batch == batch_id)
                                                                  & (ImportChange.table == "event"))}
    affected = {e.id: e for e in Event.select().where(Event.superseded_by.in_(list(removed)))} if removed else {}
    for event_id in sorted(set(images) | set(affected)):
        event = affected.get(event_id) or Event.get_or_none(Event.id == event_id)
        if event is None or event.id in removed or event.superseded_by not in removed:
            continue
        change = images.get(event_id)
        current = _image(event, _EVENT_IMAGE)
        if change is not None and current == change.after:
            Event.update(**change.before).where(Event.id == event_id).execute()
        else:
            # Changed again since (or replaced by another batch): follow §10.2 step 4.
            others = [link.event_id for link in EventLink.select().join(Event, on=(EventLink.event == Event.id))
                      .where((EventLink.target == event_id) & (EventLink.kind == "supersedes")
                             & EventLink.event.not_in(list(removed)) & Event.status.in_(LIVE))
                      .order_by(EventLink.event.desc())]
            if others and event.status == "superseded":
                Event.update(superseded_by=others[0], updated_at=now).where(Event.id == event_id).execute()
            else:
                prior = (change.before if change is not None else {}) or {}
                status = event.status
                if status == "superseded":
                    status = prior.get("status") if prior.get("status") in ("active", "superseded") else "active"
                Event.update(status=status, superseded_by=prior.get("superseded_by"),
                             forced_cap=prior.get("forced_cap"), updated_at=now).where(Event.id == event_id).execute()
        restored.append(event_id)
    return restored


def undo_batch(batch_id: int | str) -> UndoResult:
    """Remove exactly what a committed batch added and restore what it changed (one transaction).

    Its events go (with their sources, links both ways, index postings, graph citations and
    projection jobs); replaced events get their earlier state back; graph rows its
    projection created go unless later events cite them, rows it changed are restored; its
    ids leave every use receipt (a receipt left empty is deleted); its source block, thread
    and message go. Later unrelated writes are untouched. Undoing twice is an error.
    """
    with write_transaction():
        batch = _get_batch(batch_id)
        if batch.status == "undone":
            raise InvalidInputError(f"import batch {batch.id} was already undone at {batch.undone_at}; nothing changed")
        if batch.status != "committed":
            raise InvalidInputError(f"import batch {batch.id} is {batch.status}, not committed; there is nothing to undo")
        ns = Namespace.get_or_none(Namespace.name == batch.namespace_name)
        if ns is None:
            raise NotFoundError(f"namespace {batch.namespace_name!r} of import batch {batch.id} no longer exists")
        now = now_iso()
        block = Block.get_or_none(Block.id == batch.source_block_id) if batch.source_block_id else None
        removed = {i for (i,) in Event.select(Event.id).where(Event.block == block.id).tuples()} if block else set()
        removed |= {i.created_event_id for i in _items(batch.id) if i.created_event_id}
        removed = {i for (i,) in Event.select(Event.id).where(Event.id.in_(list(removed))).tuples()} if removed else set()

        restored = _undo_events(batch.id, removed, now)
        for job in Job.select().where((Job.namespace == ns) & (Job.kind == IMPORT_GRAPH_KIND)):
            if (job.payload or {}).get("import_batch") == batch.id:
                job.delete_instance()
        for receipt in UsageReceipt.select().where(UsageReceipt.namespace == ns):
            kept = [i for i in receipt.event_ids or [] if i not in removed]
            if len(kept) != len(receipt.event_ids or []):
                if kept:
                    UsageReceipt.update(event_ids=kept).where(UsageReceipt.id == receipt.id).execute()
                else:
                    receipt.delete_instance()
        # Records the batch's events ended, stated, or made history behind: settled once the
        # graph rows are back (read now, while the events and their citations still exist).
        unsettled = affected_by(removed)
        if removed:
            unindex_events(ns.id, sorted(removed))
            forget_endings_by_events(sorted(removed))
            Event.delete().where(Event.id.in_(sorted(removed))).execute()
        graph_removed, graph_restored = _undo_graph(batch.id, removed)
        settle(unsettled, now)
        if block is not None:
            message_ids = [i for (i,) in Message.select(Message.id).where(Message.block == block.id).tuples()]
            unindex_messages(ns.id, message_ids)
            thread_id = block.thread_id
            sequence = block.sequence
            Message.delete().where(Message.block == block.id).execute()
            Block.delete().where(Block.id == block.id).execute()
            if not Message.select().where(Message.thread == thread_id).exists():
                Thread.delete().where(Thread.id == thread_id).execute()
            if ns.block_count == sequence:
                ns.block_count -= 1  # no block came after it: the sequence is as before
        ns.revision += 1
        ns.updated_at = now
        ns.save()
        ImportBatch.update(status="undone", undone_at=now, updated_at=now).where(ImportBatch.id == batch.id).execute()
        row = _batch_row(_get_batch(batch.id))
    return UndoResult(batch=row, removed_event_ids=tuple(sorted(removed)), restored_event_ids=tuple(restored),
                      graph_removed=graph_removed, graph_restored=graph_restored)


__all__ = [
    "ACTIONS", "CandidateRow", "DEFAULT_THRESHOLD", "DEFAULT_TOP_K", "ImportBatchRow", "ImportItemRow",
    "ImportPreview", "MatchRow", "StalePreviewError", "UndoResult", "commit_batch", "decide", "get_batch",
    "list_batches", "normalize_decision", "parse_or_recover", "preview_batch", "preview_file", "preview_import",
    "reset_choice", "run_import_graph_job", "start_import", "undo_batch",
]
