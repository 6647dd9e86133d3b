"""Steps 1 and 2 of an import: parse the export (recovering malformed JSON through the provider)
into a stored batch, then preview it: match every item against stored events and decide it.

Exact duplicates (normalised title + summary, of a live event or of an earlier item) are
ignored without a model call; the rest get the Top-K stored matches and the provider's
decision, normalised so that targets come only from those matches. Each item is saved as soon
as it is decided, so an interrupted preview resumes where it stopped, and a decision whose
inputs did not change is reused instead of asking the model again. Model calls never run
inside a write transaction. The preview remembers the namespace revision it was made against.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from core.db import chunks, write_transaction
from core.errors import InvalidInputError, StrataError
from core.imports.formats import (
    FORMATS,
    ImportFormatError,
    ParsedImport,
    parse_import,
    parse_v2_object,
    read_import_file,
)
from core.imports.gitmemo import FORMAT as GITMEMO
from core.jsoninput import check_surrogates
from core.models import Event, ImportBatch, ImportItem, Message, Namespace, Thread
from core.providers import Provider, get_provider
from core.providers import usage as usage_acct
from core.providers.base import UNNAMED_USER, ProviderOutputError
from core.providers.import_decision import unusable_decision
from core.redact import redact_text
from core.services.events import LIVE, live_event_ids
from core.services.import_batches import (
    ACTIONS,
    DEFAULT_THRESHOLD,
    DEFAULT_TOP_K,
    TARGETED,
    ImportBatchRow,
    ImportPreview,
    batch_items,
    batch_row,
    get_batch,
    load_batch,
    namespace_revision,
)
from core.services.import_choices import choice_kept, status_after_preview
from core.services.preflight import preflight_session
from core.services.spaces import validate_name
from core.text import clip, fingerprint
from core.timeutil import now_iso
from core.tokens import estimate_tokens

MAX_REASON = 500
MAX_PASSES = 3

ProgressFn = Callable[[int, int, str], None]


# ----------------------------------------------------------------------------- starting

# Instructions, schema and framing around what a model is shown of an item or a text, estimated.
DECISION_OVERHEAD = 700


def _provider(provider: Provider | str | None, fallback: str | None = None) -> Provider:
    if provider is not None and not isinstance(provider, str):
        return provider
    return get_provider(provider or fallback)


def usage_of(provider: Provider) -> dict[str, int] | None:
    """The provider's token totals so far, when it keeps them (a model provider does)."""
    totals = getattr(provider, "usage", None)
    return usage_acct.normalized(totals) if isinstance(totals, Mapping) else None


def spent_since(provider: Provider, before: dict[str, int] | None) -> dict[str, int] | None:
    after = usage_of(provider)
    if before is None or after is None:
        return None
    spent = usage_acct.delta(after, before)
    return None if usage_acct.is_empty(spent) else spent


def _provider_name(provider: Provider) -> str:
    model = getattr(provider, "model", None)
    return f"{provider.name}:{model}" if model else str(provider.name)


def _recover(
    text: str, provider: Provider, error: ImportFormatError, where: str, namespace: str | None = None
) -> ParsedImport:
    """Candidates from malformed input through the provider, validated by the strict parser."""
    if getattr(provider, "model_backed", False) and namespace is not None:
        check = preflight_session(
            namespace, estimate_tokens(text) + DECISION_OVERHEAD, session="import recovery", item=where
        )
        if check is not None and check.decision == "block":
            raise ImportFormatError(f"{error}; recovery by a model not attempted: {check.reason}")
    before = usage_of(provider)
    try:
        answer = provider.recover_external_memory({"text": text, "error": str(error)})
    except StrataError as exc:
        raise ImportFormatError(f"{error}; recovery failed: {exc}") from None
    spent = spent_since(provider, before)
    items = answer.get("candidates") if isinstance(answer, dict) else None
    if not isinstance(items, list) or not items:
        reason = answer.get("reason") if isinstance(answer, dict) and isinstance(answer.get("reason"), str) else ""
        hint = "" if "{" in text else "; a plain list of facts (one per line or bullet) imports as format 'text'"
        raise ImportFormatError(
            f"{error}; recovery by the {provider.name} provider found no candidates"
            + (f" ({reason})" if reason else "")
            + hint
        )
    envelope = {
        "schemaVersion": "stratagate.external-memory.v2",
        "sourceType": "external_ai_memory_export",
        "candidates": items,
    }
    try:
        # A provider's JSON may escape a lone surrogate, which no database can store.
        check_surrogates(items, None, f"{where} (recovered) candidates", items=True, error=ImportFormatError)
        parsed = parse_v2_object(envelope, f"{where} (recovered)")
    except ImportFormatError as exc:
        raise ImportFormatError(f"{error}; the recovered candidates are invalid too: {exc}") from None
    return ParsedImport(
        format="v2", candidates=parsed.candidates, warnings=parsed.warnings, recovered=True, usage=spent
    )


def parse_or_recover(
    text: str,
    format: str,
    provider: Provider | None,
    *,
    recover: bool = True,
    where: str = "input",
    namespace: str | None = None,
) -> ParsedImport:
    """Strict parse; if the text is not JSON at all and ``recover``, try the provider's
    recovery (JSON formats only). Raises ImportFormatError naming the location otherwise."""
    try:
        return parse_import(text, format, where=where)
    except ImportFormatError as exc:
        if not (exc.syntax and recover and format == "v2" and provider is not None):
            raise
        return _recover(text, provider, exc, where, namespace)


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
        parsed = parse_or_recover(text, format, prov, recover=recover, where=where, namespace=namespace)
    now = now_iso()
    with write_transaction():
        batch = ImportBatch.create(
            namespace_name=namespace,
            format=parsed.format,
            source_name=source_name,
            source_system=parsed.source_system,
            text=text,
            text_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            status="processing" if parsed.candidates else "ready",
            recovered=parsed.recovered,
            meta=parsed.meta(),
            warnings=list(parsed.warnings)[:200],
            provider=_provider_name(prov),
            top_k=top_k,
            usage=parsed.usage,
            threshold=float(threshold),
            total=len(parsed.candidates),
            processed=0,
            created_at=now,
            updated_at=now,
        )
        if not parsed.candidates:
            batch.preview_revision = namespace_revision(namespace)
            batch.save()
        for position, candidate in enumerate(parsed.candidates, start=1):
            ImportItem.create(
                batch=batch,
                position=position,
                candidate=candidate,
                fingerprint=fingerprint(candidate["title"], candidate["summary"]),
                updated_at=now,
            )
    return batch_row(batch)


# ----------------------------------------------------------------------------- preview


def _live_fingerprints(namespace: str, wanted: Sequence[str]) -> dict[str, int]:
    """Fingerprint → oldest live event with that wording (forgotten and archived excluded), for
    the ``wanted`` fingerprints: looked up by index, never by hashing every stored event."""
    ns = Namespace.get_or_none(Namespace.name == namespace)
    if ns is None:
        return {}
    out: dict[str, int] = {}
    for part in chunks(sorted(set(wanted))):
        rows = (
            Event.select(Event.fingerprint, Event.id)
            .where((Event.namespace == ns) & Event.fingerprint.in_(part) & Event.status.in_(LIVE))
            .order_by(Event.id)
            .tuples()
        )
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
    first = (
        Message.select(Message.id)
        .where((Message.thread == Thread.id) & (Message.role == "user"))
        .order_by(Message.position)
        .limit(1)
    )  # per thread, by the (thread, position) index
    rows = (
        Thread.select(Message.speaker)
        .join(Message, on=(Message.id == first))
        .where(Thread.namespace == ns.id)
        .order_by(Thread.id.desc())
        .limit(USER_THREADS)
        .tuples()
    )
    speakers = [s.strip() if s and s.strip().casefold() not in ("user", "human", "me") else None for (s,) in rows]
    names = list(dict.fromkeys(s for s in speakers if s))
    # Users who never give a name are UNNAMED_USER, whom this memory's cards call "User"; beside
    # a named user, an unnamed thread is taken to be theirs.
    return names or ([UNNAMED_USER] if speakers else [])


def _match_items(
    namespace: str, candidate: dict[str, Any], top_k: int, users: Sequence[str] = ()
) -> list[dict[str, Any]]:
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
    people = subject_names(
        candidate["title"], candidate["summary"], (candidate.get("temporal") or {}).get("participants") or ()
    )
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
        return {
            doc
            for part in chunks(sorted(live))
            for (doc,) in EventTerm.select(EventTerm.event)
            .where(EventTerm.event.in_(part) & EventTerm.term.in_(names))
            .distinct()
            .tuples()
        }

    ranked = bm25_top_kept_scored("event", namespace_id, analyze(query) + names, limit, naming_and_live)
    by_id = {e.id: e for part in chunks([i for i, _ in ranked]) for e in Event.select().where(Event.id.in_(part))}
    return [(by_id[i], score) for i, score in ranked]


def _match_context(event, score: float) -> dict[str, Any]:
    return {
        "id": event.id,
        "title": event.title,
        "summary": event.summary,
        "tags": list(event.tags),
        "participants": list(event.participants),
        "status": event.status,
        "event_type": event.event_type,
        "mentioned_at": event.mentioned_at,
        "happened_start": event.happened_start,
        "happened_end": event.happened_end,
        "time_status": event.time_status,
        "score": score,
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
        merged["tags"] = list(
            dict.fromkeys(
                [t.strip()[:80] for t in tags if isinstance(t, str) and t.strip()] + list(candidate.get("tags") or [])
            )
        )[:12]
    temporal = raw.get("temporal")
    if isinstance(temporal, dict) and isinstance(temporal.get("participants"), list):
        people = [p.strip() for p in temporal["participants"] if isinstance(p, str) and p.strip()]
        merged["temporal"] = {**(candidate.get("temporal") or {}), "participants": list(dict.fromkeys(people))[:24]}
    return merged


def normalize_decision(
    raw: Any, candidate: dict[str, Any], allowed: Iterable[int], *, recovered: bool, threshold: float
) -> dict[str, Any]:
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
    targets = [
        i
        for i in (cited if isinstance(cited, list) else [])
        if isinstance(i, int) and not isinstance(i, bool) and i in permitted
    ]
    targets = list(dict.fromkeys(targets))
    merged = None
    if action in TARGETED and not targets:
        reason = _clip_reason(
            f"{action} without a target among the top-K matches, safely downgraded to ignore; {reason}", reason
        )
        action, confidence = "ignore", 0.5
    if action == "add":
        targets = []
    if action == "merge":
        merged = _merged_candidate(raw.get("merged_candidate"), candidate)
    return {
        "action": action,
        "target_ids": targets,
        "reason": reason,
        "confidence": round(confidence, 4),
        "merged": merged,
        "requires_confirmation": bool(recovered or confidence < threshold),
    }


def _decision_key(context: dict[str, Any], provider_name: str, threshold: float) -> str:
    body = json.dumps(
        {"context": context, "provider": provider_name, "threshold": threshold},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


EARLIER_ITEMS = 20  # items of the batch before this one that the decider is shown


def _decide_item(
    batch: ImportBatch,
    item: ImportItem,
    earlier: dict[str, int],
    live: dict[str, int],
    prov: Provider,
    prov_name: str,
    meta: dict[str, Any],
    users: Sequence[str],
    before: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The new state of one item (no write, maybe one model call outside any transaction)."""
    candidate = item.candidate
    base = {
        "duplicate_of_event": None,
        "duplicate_of_item": None,
        "merged": None,
        "decision_key": None,
        "matched": None,
    }
    if item.fingerprint in earlier and earlier[item.fingerprint] < item.position:
        other = earlier[item.fingerprint]
        return {
            **base,
            "matches": [],
            "action": "ignore",
            "target_ids": [],
            "duplicate_of_item": other,
            "reason": f"exact duplicate of item {other} in this batch",
            "confidence": 1.0,
            "requires_confirmation": bool(batch.recovered),
            "calls": 0,
        }
    if item.fingerprint in live:
        event_id = live[item.fingerprint]
        match = _stored_match(batch.namespace_name, event_id)
        return {
            **base,
            "matches": [match],
            "action": "ignore",
            "target_ids": [event_id],
            "duplicate_of_event": event_id,
            "reason": f"exact duplicate of stored event {event_id}",
            "confidence": 1.0,
            "requires_confirmation": bool(batch.recovered),
            "calls": 0,
        }
    matches = _match_items(batch.namespace_name, candidate, batch.top_k, users)
    context = {
        "candidate": candidate,
        "matches": matches,
        "source": {
            "system": batch.source_system,
            "exported_at": meta.get("exported_at"),
            "format": batch.format,
            "recovered": bool(batch.recovered),
        },
        "user": {"names": list(users)},
        # An export often says one thing twice in other words; the second adds nothing.
        "earlier": [b for b in before if b["position"] < item.position][-EARLIER_ITEMS:],
    }
    key = _decision_key(context, prov_name, batch.threshold)
    if item.decision_key == key and item.action is not None:
        return {
            **base,
            "matches": matches,
            "action": item.action,
            "target_ids": list(item.target_ids or []),
            "reason": item.reason,
            "confidence": item.confidence,
            "merged": item.merged,
            "requires_confirmation": bool(item.requires_confirmation),
            "decision_key": key,
            "calls": 0,
            "matched": item.matched,
        }
    if getattr(prov, "model_backed", False):
        check = _preflight_decision(batch, item.position, context)
        if check is not None and check.decision == "block":
            return {
                **base,
                **unusable_decision(f"not sent to the model: {check.reason}"),
                "matches": matches,
                "decision_key": None,
                "calls": 0,
            }
        decision = _model_decision(prov, context, batch, users)
        if decision.pop("unusable", False):
            key = None  # looked at again, the item asks the model again
    else:
        raw = prov.decide_external_memory(copy.deepcopy(context))
        decision = normalize_decision(
            raw, candidate, [m["id"] for m in matches], recovered=bool(batch.recovered), threshold=batch.threshold
        )
    return {**base, **decision, "matches": matches, "decision_key": key, "calls": 1}


def _preflight_decision(batch: ImportBatch, position: int, context: dict[str, Any]):
    """The cost preflight of one item's model request. When the budget is short but the request can
    shrink (fewer stored matches shown, down to one), ``context`` is shrunk in place to fit."""
    estimate = estimate_tokens(json.dumps(context, ensure_ascii=False)) + DECISION_OVERHEAD
    smallest = estimate_tokens(json.dumps({**context, "matches": context["matches"][:1]}, ensure_ascii=False))
    check = preflight_session(
        batch.namespace_name,
        estimate,
        session=f"import batch {batch.id}",
        item=f"decision for item {position}",
        can_shrink_to=smallest + DECISION_OVERHEAD,
    )
    if check is not None and check.decision == "mitigate":
        while len(context["matches"]) > 1 and (
            estimate_tokens(json.dumps(context, ensure_ascii=False)) + DECISION_OVERHEAD > check.allowed
        ):
            context["matches"] = context["matches"][:-1]
    return check


def _model_decision(
    prov: Provider, context: dict[str, Any], batch: ImportBatch, users: Sequence[str]
) -> dict[str, Any]:
    """A model's decision, checked strictly (core.providers.import_decision). An answer that is unusable
    even after JSON recovery, or a provider that got none, leaves the item to a person; an answer
    whose evidence is not explicit cannot reach the threshold. A failed HTTP exchange still fails
    the preview (resumable): that is no answer, and asking again may get one."""
    from core.providers.import_decision import (
        UnusableAnswer,
        capped,
        matched_fields,
        validate_answer,
        weakness,
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
    decision = normalize_decision(
        answer, candidate, allowed, recovered=bool(batch.recovered), threshold=batch.threshold
    )
    why = weakness(answer, candidate, matches, users)
    if why:
        note = f" (a person confirms: {why})"
        decision["confidence"] = capped(decision["confidence"], batch.threshold)
        decision["requires_confirmation"] = True
        decision["reason"] = _clip_reason(decision["reason"][: MAX_REASON - len(note)] + note, decision["reason"])
    decision["matched"] = matched_fields(answer)
    return decision


def preview_batch(
    batch_id: int | str,
    *,
    provider: Provider | str | None = None,
    progress: ProgressFn | None = None,
    refresh: bool = False,
) -> ImportPreview:
    """Decide every item not yet decided against the namespace as it is now; resumable.

    Items decided at an older namespace revision are looked at again (their model
    decision is reused when their matches did not change). ``progress(done, total, label)``
    is called after each item. A provider failure leaves the decided items saved and raises.
    ``refresh`` looks at every item again (decisions whose inputs did not change are reused).
    """
    batch = load_batch(batch_id)
    if batch.status in ("committed", "undone"):
        raise InvalidInputError(f"import batch {batch.id} is {batch.status}; its preview cannot change")
    if batch.format == GITMEMO:
        raise InvalidInputError(f"import batch {batch.id} is a gitmemo repository, read whole when it was previewed")
    prov = _provider(provider, (batch.provider or "").split(":")[0] or None)
    prov_name = _provider_name(prov)
    meta = batch.meta or {}
    for attempt in range(MAX_PASSES):
        revision = namespace_revision(batch.namespace_name)
        items = batch_items(batch.id)
        earlier: dict[str, int] = {}
        for item in items:
            earlier.setdefault(item.fingerprint, item.position)
        todo = [i for i in items if i.state != "decided" or i.revision != revision or (refresh and attempt == 0)]
        live = _live_fingerprints(batch.namespace_name, [i.fingerprint for i in todo]) if todo else {}
        users = user_names(batch.namespace_name) if todo else []
        before = [
            {
                "position": i.position,
                "title": i.candidate.get("title", ""),
                "summary": clip(i.candidate.get("summary", ""), 500),
            }
            for i in items
        ]
        done = len(items) - len(todo)
        if progress:
            progress(done, len(items), "")
        for item in todo:
            metered = usage_of(prov)
            try:
                state = _decide_item(batch, item, earlier, live, prov, prov_name, meta, users, before)
            except Exception as exc:
                with write_transaction():
                    # A failed call may be billed too: its tokens go on the batch.
                    spent = spent_since(prov, metered)
                    if spent:
                        fresh = ImportBatch.get_by_id(batch.id)
                        ImportBatch.update(usage=usage_acct.add(fresh.usage, spent)).where(
                            ImportBatch.id == batch.id
                        ).execute()
                    # Masked before the cut, as a job's error is (a provider's message may quote a key).
                    ImportBatch.update(
                        last_error=redact_text(f"item {item.position}: {exc}")[:2000], updated_at=now_iso()
                    ).where(ImportBatch.id == batch.id).execute()
                if isinstance(exc, StrataError):
                    raise
                raise ProviderOutputError(f"import batch {batch.id}, item {item.position}: {exc}") from exc
            spent = spent_since(prov, metered)
            allowed = {m["id"] for m in state["matches"]}
            choice_ok = choice_kept(item, allowed, batch.namespace_name)
            with write_transaction():
                ImportItem.update(
                    state="decided",
                    revision=revision,
                    matches=[
                        {
                            "event_id": m["id"],
                            "title": m["title"],
                            "summary": m["summary"],
                            "status": m["status"],
                            "score": round(float(m.get("score") or 0.0), 6),
                        }
                        for m in state["matches"]
                    ],
                    action=state["action"],
                    target_ids=state["target_ids"],
                    reason=state["reason"],
                    confidence=state["confidence"],
                    merged=state["merged"],
                    requires_confirmation=state["requires_confirmation"],
                    decision_key=state["decision_key"],
                    duplicate_of_event=state["duplicate_of_event"],
                    duplicate_of_item=state["duplicate_of_item"],
                    model_calls=ImportItem.model_calls + state["calls"],
                    matched=state["matched"],
                    usage=usage_acct.add(item.usage, spent) if spent else item.usage,
                    choice_action=item.choice_action if choice_ok else None,
                    choice_target_ids=item.choice_target_ids if choice_ok else None,
                    updated_at=now_iso(),
                ).where(ImportItem.id == item.id).execute()
                decided = (
                    ImportItem.select()
                    .where(
                        (ImportItem.batch == batch.id)
                        & (ImportItem.state == "decided")
                        & (ImportItem.revision == revision)
                    )
                    .count()
                )
                ImportBatch.update(processed=decided, last_error=None, updated_at=now_iso()).where(
                    ImportBatch.id == batch.id
                ).execute()
            done += 1
            if progress:
                progress(done, len(items), item.candidate.get("title", "")[:40])
        with write_transaction():
            if namespace_revision(batch.namespace_name) != revision and attempt < MAX_PASSES - 1:
                continue  # the namespace moved while we decided: look again (cheap, decisions are reused)
            items = batch_items(batch.id)
            ImportBatch.update(
                status=status_after_preview(items),
                preview_revision=revision,
                processed=len(items),
                updated_at=now_iso(),
            ).where(ImportBatch.id == batch.id).execute()
        break
    return get_batch(batch.id)


def preview_import(
    namespace: str,
    text: str,
    *,
    format: str = "v2",
    source_name: str | None = None,
    provider: Provider | str | None = None,
    top_k: int = DEFAULT_TOP_K,
    threshold: float = DEFAULT_THRESHOLD,
    recover: bool = True,
    progress: ProgressFn | None = None,
) -> ImportPreview:
    """``start_import`` then ``preview_batch``: the whole preview of a pasted export."""
    prov = _provider(provider)
    batch = start_import(
        namespace,
        text,
        format=format,
        source_name=source_name,
        provider=prov,
        top_k=top_k,
        threshold=threshold,
        recover=recover,
    )
    return preview_batch(batch.id, provider=prov, progress=progress)


def preview_file(
    namespace: str,
    path: str | Path,
    *,
    format: str = "v2",
    provider: Provider | str | None = None,
    top_k: int = DEFAULT_TOP_K,
    threshold: float = DEFAULT_THRESHOLD,
    recover: bool = True,
    progress: ProgressFn | None = None,
) -> ImportPreview:
    """Preview an export file (the 4 MB limit is checked before it is read)."""
    prov = _provider(provider)
    try:
        text, parsed = read_import_file(path, format)
    except ImportFormatError as exc:
        if not (exc.syntax and recover and format == "v2"):
            raise
        text = Path(path).read_text(encoding="utf-8")
        parsed = _recover(text, prov, exc, str(path))
    batch = start_import(
        namespace,
        text,
        format=format,
        source_name=str(path),
        provider=prov,
        top_k=top_k,
        threshold=threshold,
        recover=recover,
        parsed=parsed,
    )
    return preview_batch(batch.id, provider=prov, progress=progress)


__all__ = [
    "ProgressFn",
    "normalize_decision",
    "parse_or_recover",
    "preview_batch",
    "preview_file",
    "preview_import",
    "spent_since",
    "start_import",
    "usage_of",
    "user_names",
]
