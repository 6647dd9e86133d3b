"""Step 4 of an import: commit a previewed batch, and project its events into the graph.

The commit applies the batch in one transaction, only if the namespace is still at the
previewed revision (else nothing is written and the preview is refreshed). A synthetic source
block keeps the full imported text as L5 and every new event cites it. The graph projection of
the new events records the pre-image of every graph row it creates or changes, so that an undo
restores the graph exactly.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from peewee import fn

from core.db import chunks, is_row_id, write_transaction
from core.errors import InvalidInputError, StorageConflictError
from core.models import (
    Block,
    Event,
    GraphEdge,
    GraphFact,
    GraphNode,
    ImportBatch,
    ImportChange,
    ImportItem,
    Job,
    Message,
    Namespace,
    Thread,
)
from core.providers import Provider
from core.providers import usage as usage_acct
from core.providers.base import UNNAMED_USER, ProviderOutputError
from core.imports.gitmemo import FORMAT as GITMEMO
from core.search.index import index_events
from core.services import jobs as jobsvc
from core.services.capture import append_evidence_block
from core.services.events import LIVE, write_event
from core.services.graph_apply import apply_projection
from core.services.graph_job import propose_projection
from core.services.gitmemo import commit_gitmemo
from core.services.graph_names import entity_key
from core.services.import_batches import (
    ACTIONS,
    EVENT_IMAGE,
    GRAPH_TABLES,
    IMPORT_GRAPH_KIND,
    TARGETED,
    ImportPreview,
    batch_items,
    effective_action,
    get_batch,
    load_batch,
    namespace_revision,
    row_image,
)
from core.services.import_choices import decide
from core.services.import_preview import ProgressFn, preview_batch, spent_since, usage_of, user_names
from core.services.jobs import create_job
from core.services.spaces import bump_revision, get_or_create_namespace
from core.text import clip
from core.timeparse import has_dated_mention
from core.timeutil import now_iso, parse_timestamp

IMPORT_TAG = "external-memory-import"
IMPORT_GRAPH_PRIORITY = 2000
GRAPH_BATCH = 8


class StalePreviewError(StorageConflictError):
    """The namespace changed after the preview; nothing was written. ``preview`` holds the
    refreshed preview to review before committing again."""

    def __init__(self, message: str, preview: "ImportPreview | None" = None):
        super().__init__(message)
        self.preview = preview


def _record_change(batch_id: int, table: str, record_id: int, before: dict | None, after: dict | None) -> None:
    """Keep the first pre-image of a row for this batch and its latest post-image."""
    existing = ImportChange.get_or_none(
        (ImportChange.batch == batch_id) & (ImportChange.table == table) & (ImportChange.record_id == record_id)
    )
    if existing is None:
        ImportChange.create(
            batch=batch_id, table=table, record_id=record_id, before=before, after=after, created_at=now_iso()
        )
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
    summary = (
        f"External memory exported by {origin}"
        + (f" on {exported}" if exported else "")
        + f", imported as batch {batch.id}: {outcome}. The full original text is this block's L5."
    )
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
    # start-up time: the offline rule tables take ~25 ms to build; only naming an item's participants needs them
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
        who = (
            users[0]
            if len(users) == 1
            else UNNAMED_USER
            if not users and not targets
            else next((p for names in targets for p in names if p.strip().casefold() not in ASSISTANT_NAMES), None)
        )
        if who:
            names.insert(0, who)
    out: dict[str, str] = {}
    for name in names:
        out.setdefault(" ".join(name.split()).casefold(), " ".join(name.split()))
    return [name for name in out.values() if name][:24]


def _draft(
    candidate: dict[str, Any],
    message_id: int,
    action: str,
    targets: Sequence[int],
    fallback_time: str,
    participants: Sequence[str] = (),
) -> dict[str, Any]:
    temporal = dict(candidate.get("temporal") or {})
    temporal["mentioned_at"] = _mention_time(candidate, fallback_time)
    temporal["participants"] = list(participants)
    relations: dict[str, list[int]] = {}
    if action in ("merge", "supersede"):
        relations["supersedes"] = list(targets)
    elif action == "conflict":
        relations["conflicts"] = list(targets)
    return {
        "title": candidate["title"],
        "summary": candidate["summary"],
        "tags": list(candidate.get("tags") or []),
        "quotes": list(candidate.get("quotes") or []),
        "source_message_ids": [message_id],
        "temporal": temporal,
        "relations": relations,
        "scope": candidate.get("scope", "user"),
        "criticality": candidate.get("criticality", "routine"),
    }


def _create_source_block(
    ns: Namespace, batch: ImportBatch, views: dict[str, Any], now: str, has_time: bool
) -> tuple[Block, Message]:
    """The synthetic source block: one message holding the whole imported text (L5)."""
    thread = Thread.create(namespace=ns, name=f"external-import:{batch.id}", created_at=now, updated_at=now)
    return append_evidence_block(
        ns,
        thread,
        role="user",
        speaker=None,
        content=batch.text,
        external_id=f"import:{batch.id}",
        has_time=has_time,
        now=now,
        title=views["title"],
        tags=[IMPORT_TAG],
        summary=views["summary"],
        points=views["points"],
    )


class _Stale(Exception):
    def __init__(self, previewed: int | None, current: int):
        self.previewed, self.current = previewed, current


def _check_committable(batch: ImportBatch) -> None:
    if batch.status == "undone":
        raise InvalidInputError(
            f"import batch {batch.id} was undone at {batch.undone_at}; an undone batch cannot be committed again "
            "(preview the export again to import it anew)"
        )
    if batch.status == "committed":
        raise InvalidInputError(f"import batch {batch.id} was already committed at {batch.committed_at}")
    if batch.status == "processing":
        raise InvalidInputError(
            f"the preview of import batch {batch.id} is not finished ({batch.processed} of {batch.total} items "
            f"decided); run `strata import resume {batch.id}` first"
        )


def commit_batch(
    batch_id: int | str,
    *,
    choices: Mapping[int, Any] | None = None,
    provider: Provider | str | None = None,
    progress: ProgressFn | None = None,
) -> ImportPreview:
    """Apply a previewed batch in one transaction (all of it or nothing).

    ``choices`` maps an item position to an action or ``(action, [target ids])``: a person's
    decisions, recorded like ``decide`` before committing. Items that need confirmation and
    have no choice are ignored. If the namespace changed since the preview, nothing is
    written: the preview is refreshed (``provider``/``progress`` as for ``preview_batch``)
    and StalePreviewError carries it.
    """
    batch = load_batch(batch_id)
    if batch.format == GITMEMO:
        if choices:
            raise InvalidInputError(f"import batch {batch.id} is a gitmemo repository, imported whole without choices")
        return commit_gitmemo(batch.id)
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
            f"review it (`strata import show {batch.id}`) and commit again",
            preview=refreshed,
        ) from None
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
            raise _Stale(batch.preview_revision, namespace_revision(batch.namespace_name))


def _commit(batch_id: int, has_time: bool) -> ImportPreview:
    batch = load_batch(batch_id)  # re-read inside the transaction
    _check_committable(batch)
    current = namespace_revision(batch.namespace_name)
    if current != batch.preview_revision:
        raise _Stale(batch.preview_revision, current)
    items = batch_items(batch.id)
    plan = [(item, *effective_action(item)) for item in items]
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
    before = {e.id: row_image(e, EVENT_IMAGE) for e in Event.select().where(Event.id.in_(replaced))} if replaced else {}

    targeted = sorted({t for _, action, targets in plan if action in TARGETED for t in targets})
    cast = {
        i: names
        for part in chunks(targeted)
        for i, names in Event.select(Event.id, Event.participants).where(Event.id.in_(part)).tuples()
    }
    created: list[Event] = []
    for item, action, targets in plan:
        event_id = None
        if action and action != "ignore":
            source = item.merged if action == "merge" and item.merged else item.candidate
            who = _participants(source, [cast.get(t) or [] for t in targets], users)
            event = write_event(
                ns.id,
                _draft(source, message.id, action, targets, fallback_time, who),
                block=block,
                formed_turn=ns.current_turn,
                origin="import",
                mentioned_fallback=fallback_time,
                index=False,
            )
            created.append(event)
            event_id = event.id
        ImportItem.update(
            final_action=action or "ignore", final_target_ids=list(targets), created_event_id=event_id, updated_at=now
        ).where(ImportItem.id == item.id).execute()
    index_events(ns.id, created)
    for event in Event.select().where(Event.id.in_(list(before))) if before else ():
        _record_change(batch.id, "event", event.id, before[event.id], row_image(event, EVENT_IMAGE))
    ids = [e.id for e in created]
    for start in range(0, len(ids), GRAPH_BATCH):
        create_job(
            ns,
            IMPORT_GRAPH_KIND,
            None,
            priority=IMPORT_GRAPH_PRIORITY,
            payload={"event_ids": ids[start : start + GRAPH_BATCH], "import_batch": batch.id},
        )
    ns.revision += 1
    ns.updated_at = now
    ns.save()
    ImportBatch.update(
        status="committed",
        source_block_id=block.id,
        imported_count=len(created),
        committed_at=now,
        updated_at=now,
        last_error=None,
    ).where(ImportBatch.id == batch.id).execute()
    return get_batch(batch.id)


# ----------------------------------------------------------------------------- graph projection of imports


def _node_keys(proposal: dict[str, Any]) -> set[str]:

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

    keys = _node_keys(proposal)
    node_ids: set[int] = set()
    if keys:
        rows = (
            GraphNode.select(GraphNode.id, GraphNode.name_norm, GraphNode.aliases)
            .where(GraphNode.namespace == namespace_id)
            .tuples()
        )
        for node_id, name_norm, aliases in rows:
            names = {name_norm} | {entity_key(a)[:255] for a in aliases or [] if isinstance(a, str)}
            if names & keys:
                node_ids.add(node_id)
    snap: dict[str, dict[int, dict]] = {table: {} for table in GRAPH_TABLES}
    if node_ids:
        ids = list(node_ids)
        snap["graph_node"] = {r["id"]: r for r in GraphNode.select().where(GraphNode.id.in_(ids)).dicts()}
        snap["graph_fact"] = {r["id"]: r for r in GraphFact.select().where(GraphFact.node.in_(ids)).dicts()}
        snap["graph_edge"] = {
            r["id"]: r
            for r in GraphEdge.select().where(GraphEdge.from_node.in_(ids) | GraphEdge.to_node.in_(ids)).dicts()
        }
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
        raise ProviderOutputError(
            f"import graph projection changed graph record(s) {stray[:5]} outside its "
            "recorded pre-images; nothing was applied"
        )


def _charge_batch(batch_id: Any, spent: dict[str, int] | None) -> None:
    """Add to a batch the tokens of model calls made for it outside its items' decisions."""
    if not spent or not is_row_id(batch_id):
        return
    with write_transaction():
        batch = ImportBatch.get_or_none(ImportBatch.id == batch_id)
        if batch is not None:
            ImportBatch.update(usage=usage_acct.add(batch.usage, spent)).where(ImportBatch.id == batch.id).execute()


def run_import_graph_job(job: Job, provider: Any, report: Any) -> None:
    """Derive handler for ``import_graph`` jobs: project imported events into the graph and
    record the pre-image of every graph row the projection creates or changes, so that an
    undo of the batch can restore the graph exactly. The model call runs outside any
    transaction; the projection and its pre-images commit together."""

    payload = dict(job.payload or {})
    metered = usage_of(provider)
    try:
        ids, proposal = propose_projection(job, provider)
    finally:
        # The projection's model call is part of what the import cost, answered or not.
        _charge_batch(payload.get("import_batch"), spent_since(provider, metered))
    with write_transaction():
        if not jobsvc.still_claimed(job):
            return
        batch = ImportBatch.get_or_none(ImportBatch.id == payload.get("import_batch"))
        now = now_iso()
        if batch is None or batch.status != "committed":
            Job.update(status="skipped", last_error=None, next_retry_at=None, updated_at=now).where(
                Job.id == job.id
            ).execute()
            report.skipped += 1
            return
        snap, maxes = _graph_snapshot(job.namespace_id, proposal)
        result = apply_projection(job.namespace_id, ids, proposal)
        _record_graph_changes(batch.id, snap, maxes, result)
        payload.update(
            {"node_ids": result.node_ids, "edge_ids": result.edge_ids, "reason": "; ".join(result.warnings)[:500]}
        )
        Job.update(status="succeeded", last_error=None, next_retry_at=None, payload=payload, updated_at=now).where(
            Job.id == job.id
        ).execute()
        if result.node_ids or result.edge_ids:
            bump_revision(job.namespace_id, now)
    report.succeeded += 1


__all__ = ["StalePreviewError", "commit_batch", "run_import_graph_job"]
