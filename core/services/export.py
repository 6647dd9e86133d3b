"""Canonical export of a namespace: everything it remembers, in a stable order.

The export covers memory content — threads, messages, blocks, events (with sources, links
and weights), the knowledge graph (nodes, facts, edges and what they cite), receipts and notes
(every version, with the old ids an imported note answers to) —
and leaves out bookkeeping that changes without the memory changing: the namespace
revision and block counter, jobs, retrieval batches and traces, the search index, when an
event was last retrieved, and the import audit (which keeps undone batches on purpose).

Two exports of the same memory are byte-identical: rows are ordered by id (blocks by
sequence), keys are sorted, JSON is rendered one way. That is what the import round trip
(import → commit → undo) is checked with.

The export is the user's backup, so it holds the stored text exactly, secrets included;
``redact=True`` (``strata export --redact``) masks them (``core.redact``) in every string
for an export that is to be shared.
"""

from __future__ import annotations

import io
import json
from typing import Any, Callable, Iterator, Sequence, TextIO

from core.db import chunks, read_snapshot
from core.errors import InvalidInputError
from core.models import (
    Block,
    Event,
    EventLink,
    EventSource,
    GraphEdge,
    GraphEnding,
    GraphFact,
    GraphNode,
    GraphSource,
    IngestionReceipt,
    Message,
    Note,
    NoteAlias,
    Thread,
    UsageReceipt,
)
from core.redact import redact_value
from core.services.events import event_weight
from core.services.spaces import get_namespace

EXPORT_FORMATS = ("json", "markdown")
EXPORT_VERSION = 1


ROWS_PER_READ = 2000  # records read (with what they cite) per query while streaming


class Rows:
    """A list that is read from the database while it is written out, never held whole: as
    Python objects 100k messages and their events took 2.1 GB, a million ten times that."""

    def __init__(self, source, produce: Callable[[Any], Iterator[dict[str, Any]]]) -> None:
        self.source = source  # the query of the records (one each), which ``produce`` reads
        self._produce = produce

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._produce(self.source)

    def count(self) -> int:
        return self.source.count()


def _pages(query, key) -> Iterator[list]:
    """The rows of ``query`` in ascending ``key`` order, ROWS_PER_READ at a time (keyset)."""
    last = None
    while True:
        page = query if last is None else query.where(key > last)
        rows = list(page.order_by(key).limit(ROWS_PER_READ))
        if not rows:
            return
        yield rows
        last = getattr(rows[-1], key.name)


def _grouped(model, column, ids: Sequence[int], order, where=None) -> dict[int, list]:
    """Rows of ``model`` whose ``column`` is one of ``ids``, grouped by it, in ``order``."""
    out: dict[int, list] = {}
    for part in chunks(list(ids)):
        query = model.select().where(column.in_(part) if where is None else (column.in_(part) & where))
        for row in query.order_by(*order):
            out.setdefault(getattr(row, column.column_name), []).append(row)
    return out


def export_data(namespace: str) -> dict[str, Any]:
    """The namespace as plain data (see the module docstring for what is in it), held in memory:
    for comparing stores. ``write_export`` streams the same content."""
    return _materialized(_sections(get_namespace(namespace)))


def _materialized(value: Any) -> Any:
    return _each_rows(value, lambda _, rows: list(rows))


def _each_rows(value: Any, change: Callable[[str, Rows], Any], key: str = "") -> Any:
    """``value`` with each ``Rows`` in it replaced by ``change(its key, it)``."""
    if isinstance(value, Rows):
        return change(key, value)
    if isinstance(value, dict):
        return {name: _each_rows(item, change, name) for name, item in value.items()}
    return value


def _sections(ns) -> dict[str, Any]:
    """The export's content; the long lists are ``Rows`` read while written."""
    threads = {t.id: t for t in Thread.select().where(Thread.namespace == ns).order_by(Thread.id)}

    def messages(query) -> Iterator[dict[str, Any]]:
        for page in _pages(query, Message.id):
            for m in page:
                yield {
                    "id": m.id,
                    "thread": threads[m.thread_id].name,
                    "block_id": m.block_id,
                    "position": m.position,
                    "turn": m.turn,
                    "ns_turn": m.ns_turn,
                    "role": m.role,
                    "speaker": m.speaker,
                    "content": m.content,
                    "created_at": m.created_at,
                    "external_id": m.external_id,
                    "tool_calls": m.tool_calls,
                }

    def blocks(query) -> Iterator[dict[str, Any]]:
        for b in query.order_by(Block.sequence, Block.id).iterator():
            yield {
                "id": b.id,
                "thread": threads[b.thread_id].name,
                "sequence": b.sequence,
                "start_turn": b.start_turn,
                "end_turn": b.end_turn,
                "message_count": b.message_count,
                "created_at": b.created_at,
                "status": b.status,
                "l0_title": b.l0_title,
                "l0_tags": b.l0_tags,
                "l1_summary": b.l1_summary,
                "l2_keypoints": b.l2_keypoints,
                "should_extract": b.should_extract,
                "l3_text": b.l3_text,
                "l4_text": b.l4_text,
                "ready_position": b.ready_position,
                "pointer": [b.pointer_current_level, b.pointer_anchor_level, b.pointer_anchor_position],
                "last_lifted_at": b.last_lifted_at,
                "last_lifted_by": b.last_lifted_by,
            }

    def events(query) -> Iterator[dict[str, Any]]:
        for page in _pages(query, Event.id):
            ids = [e.id for e in page]
            sources = _grouped(EventSource, EventSource.event, ids, (EventSource.event, EventSource.position))
            links = _grouped(EventLink, EventLink.event, ids, (EventLink.event, EventLink.kind, EventLink.target))
            for e in page:
                yield {
                    "id": e.id,
                    "block_id": e.block_id,
                    "thread": threads[e.thread_id].name if e.thread_id in threads else None,
                    "title": e.title,
                    "summary": e.summary,
                    "tags": e.tags,
                    "quotes": e.quotes,
                    "participants": e.participants,
                    "participant_node_ids": e.participant_node_ids,
                    "event_type": e.event_type,
                    "scope": e.scope,
                    "criticality": e.criticality,
                    "status": e.status,
                    "superseded_by": e.superseded_by,
                    "mentioned_at": e.mentioned_at,
                    "happened_start": e.happened_start,
                    "happened_end": e.happened_end,
                    "original_text": e.original_text,
                    "precision": e.precision,
                    "basis": e.basis,
                    "time_status": e.time_status,
                    "origin": e.origin,
                    "created_at": e.created_at,
                    "updated_at": e.updated_at,
                    "sources": [r.message_id for r in sources.get(e.id, [])],
                    "links": [[r.kind, r.target_id] for r in links.get(e.id, [])],
                    "weight": {
                        "mention_count": e.mention_count,
                        "formed_turn": e.formed_turn,
                        "last_adopted_turn": e.last_adopted_turn,
                        "pinned": e.pinned,
                        "floor": e.floor_weight,
                        "forced_cap": e.forced_cap,
                        "value": round(event_weight(e, ns.current_turn), 6),
                    },
                }

    def cited(kind: str, ids: list[int]) -> dict[int, list[int]]:
        # Plain ids, not rows: at a million messages 113 nodes cite 1.45M events (1.3 GB as rows).
        out: dict[int, list[int]] = {}
        for part in chunks(ids):
            query = (
                GraphSource.select(GraphSource.record_id, GraphSource.event)
                .where((GraphSource.kind == kind) & GraphSource.record_id.in_(part))
                .order_by(GraphSource.record_id, GraphSource.event)
            )
            for record, event in query.tuples().iterator():
                out.setdefault(record, []).append(event)
        return out

    def ended(kind: str, ids: list[int]) -> dict[int, list[dict]]:
        rows = _grouped(GraphEnding, GraphEnding.record_id, ids, (GraphEnding.id,), GraphEnding.kind == kind)
        return {
            record: sorted(
                (
                    {
                        "cause": r.cause_kind,
                        "id": r.cause_id,
                        "valid_to": r.valid_to,
                        "prior_status": r.prior_status,
                        "prior_valid_to": r.prior_valid_to,
                    }
                    for r in found
                ),
                key=lambda e: (e["cause"], e["id"]),
            )
            for record, found in rows.items()
        }

    def nodes(query) -> Iterator[dict[str, Any]]:
        for page in _pages(query, GraphNode.id):
            sources = cited("node", [n.id for n in page])
            for n in page:
                yield {
                    "id": n.id,
                    "name": n.name,
                    "type": n.type,
                    "aliases": n.aliases,
                    "tags": n.tags,
                    "provenance": n.provenance,
                    "status": n.status,
                    "confidence": n.confidence,
                    "created_at": n.created_at,
                    "updated_at": n.updated_at,
                    "sources": sources.get(n.id, []),
                }

    def facts(query) -> Iterator[dict[str, Any]]:
        for page in _pages(query, GraphFact.id):
            ids = [f.id for f in page]
            sources, endings = cited("fact", ids), ended("fact", ids)
            for f in page:
                yield {
                    "id": f.id,
                    "node_id": f.node_id,
                    "key": f.key,
                    "value": f.value,
                    "status": f.status,
                    "valid_from": f.valid_from,
                    "valid_to": f.valid_to,
                    "confidence": f.confidence,
                    "created_at": f.created_at,
                    "updated_at": f.updated_at,
                    "sources": sources.get(f.id, []),
                    "ended_by": endings.get(f.id, []),
                }

    def edges(query) -> Iterator[dict[str, Any]]:
        for page in _pages(query, GraphEdge.id):
            ids = [e.id for e in page]
            sources, endings = cited("edge", ids), ended("edge", ids)
            for e in page:
                yield {
                    "id": e.id,
                    "from": e.from_node_id,
                    "to": e.to_node_id,
                    "relation": e.relation,
                    "status": e.status,
                    "valid_from": e.valid_from,
                    "valid_to": e.valid_to,
                    "confidence": e.confidence,
                    "created_at": e.created_at,
                    "updated_at": e.updated_at,
                    "sources": sources.get(e.id, []),
                    "ended_by": endings.get(e.id, []),
                }

    def usage(query) -> Iterator[dict[str, Any]]:
        for r in query.order_by(UsageReceipt.id).iterator():
            yield {
                "receipt_id": r.receipt_id,
                "batch_id": r.batch_id,
                "event_ids": r.event_ids,
                "audit": r.audit,
                "created_at": r.created_at,
            }

    def ingestion(query) -> Iterator[dict[str, Any]]:
        for r in query.order_by(IngestionReceipt.id).iterator():
            yield {
                "receipt_id": r.receipt_id,
                "payload_hash": r.payload_hash,
                "result": r.result,
                "created_at": r.created_at,
            }

    def notes(query) -> Iterator[dict[str, Any]]:
        for page in _pages(query, Note.id):
            aliases = _grouped(NoteAlias, NoteAlias.note, [n.id for n in page], (NoteAlias.alias,))
            for n in page:
                yield {
                    "id": n.note_id,
                    "kind": n.kind,
                    "title": n.title,
                    "summary": n.summary,
                    "keywords": n.keywords,
                    "content": n.content,
                    "code_branch": n.code_branch,
                    "code_commit": n.code_commit,
                    "related_branches": n.related_branches,
                    "related_paths": n.related_paths,
                    "status": n.status,
                    "supersedes": n.supersedes,
                    "superseded_by": n.superseded_by,
                    "reason": n.reason,
                    "digest": n.digest,
                    "source": n.source,
                    "actor": n.actor,
                    "created_at": n.created_at,
                    "updated_at": n.updated_at,
                    "aliases": [a.alias for a in aliases.get(n.id, [])],
                }

    return {
        "export_version": EXPORT_VERSION,
        "namespace": {
            "name": ns.name,
            "current_turn": ns.current_turn,
            "block_turn_size": ns.block_turn_size,
            "block_decay_lambda": ns.block_decay_lambda,
            "created_at": ns.created_at,
        },
        "threads": [
            {
                "name": t.name,
                "message_count": t.message_count,
                "turn_count": t.turn_count,
                "sealed_turns": t.sealed_turns,
                "block_count": t.block_count,
                "ready_count": t.ready_count,
                "created_at": t.created_at,
            }
            for t in threads.values()
        ],
        "messages": Rows(Message.select().where(Message.namespace == ns), messages),
        "blocks": Rows(Block.select().where(Block.namespace == ns), blocks),
        "events": Rows(Event.select().where(Event.namespace == ns), events),
        "graph": {
            "nodes": Rows(GraphNode.select().where(GraphNode.namespace == ns), nodes),
            "facts": Rows(
                GraphFact.select().where(
                    GraphFact.node.in_(GraphNode.select(GraphNode.id).where(GraphNode.namespace == ns))
                ),
                facts,
            ),
            "edges": Rows(GraphEdge.select().where(GraphEdge.namespace == ns), edges),
        },
        "receipts": {
            "usage": Rows(UsageReceipt.select().where(UsageReceipt.namespace == ns), usage),
            "ingestion": Rows(IngestionReceipt.select().where(IngestionReceipt.namespace == ns), ingestion),
        },
        "notes": Rows(Note.select().where(Note.namespace == ns), notes),
    }


def _json(value: Any, level: int) -> str:
    """``value`` as ``json.dumps(..., indent=2)`` renders it at nesting depth ``level`` (JSON text
    holds no raw newline inside a string, so every newline starts an indented line)."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2)
    return text.replace("\n", "\n" + "  " * level) if level else text


def write_json(data: dict[str, Any], out: TextIO, level: int = 0) -> None:
    """Write ``data`` (where lists may be ``Rows``) exactly as ``json.dumps(data, ensure_ascii=False,
    sort_keys=True, indent=2)`` would render it, one record at a time."""
    inner = "\n" + "  " * (level + 1)
    if isinstance(data, Rows):
        first = True
        for item in data:
            out.write(("[" if first else ",") + inner + _json(item, level + 1))
            first = False
        out.write("[]" if first else "\n" + "  " * level + "]")
    elif isinstance(data, dict) and any(isinstance(v, (Rows, dict)) for v in data.values()) and data:
        for i, key in enumerate(sorted(data)):
            out.write(("{" if i == 0 else ",") + inner + json.dumps(key, ensure_ascii=False) + ": ")
            write_json(data[key], out, level + 1)
        out.write("\n" + "  " * level + "}")
    else:
        out.write(_json(data, level))


def _md_text(text: Any) -> str:
    return " ".join(str(text).split()) if text is not None else ""


def write_markdown(data: dict[str, Any], out: TextIO) -> None:
    """A readable rendering of the same content (same order, every record), written as it is read."""
    ns = data["namespace"]

    def lines(*texts: str) -> None:
        for text in texts:
            out.write(text + "\n")

    lines(
        f"# Strata export: {ns['name']}",
        "",
        f"current turn {ns['current_turn']}, block size {ns['block_turn_size']}, "
        f"decay λ {ns['block_decay_lambda']}, created {ns['created_at']}",
        "",
    )
    lines(
        "## Threads",
        "",
        *[
            f"- {t['name']}: {t['message_count']} messages, {t['turn_count']} turns, {t['block_count']} blocks"
            for t in data["threads"]
        ],
        "",
    )
    lines("## Blocks", "")
    for b in data["blocks"]:
        lines(
            f"### Block {b['id']} (sequence {b['sequence']}, {b['thread']}, turns {b['start_turn']}-"
            f"{b['end_turn']}, {b['status']})"
        )
        if b["l0_title"]:
            lines(f"**{_md_text(b['l0_title'])}** — tags: {', '.join(b['l0_tags'] or [])}")
        if b["l1_summary"]:
            lines(_md_text(b["l1_summary"]))
        lines("")
    lines("## Messages", "")
    for m in data["messages"]:
        who = m["speaker"] or m["role"]
        lines(
            f"- [{m['id']}] {m['created_at']} {m['thread']}#{m['position']} (block {m['block_id']}) "
            f"{who}: {_md_text(m['content'])}"
        )
    lines("", "## Events", "")
    for e in data["events"]:
        when = e["happened_start"] or f"mentioned {e['mentioned_at']}"
        links = "; ".join(f"{k} {t}" for k, t in e["links"])
        lines(
            f"- [{e['id']}] **{_md_text(e['title'])}** ({e['status']}, {e['event_type']}, {when}, "
            f"weight {e['weight']['value']}): {_md_text(e['summary'])} — sources {e['sources']}"
            + (f" — links: {links}" if links else "")
        )
    lines("", "## Graph", "")
    for n in data["graph"]["nodes"]:
        lines(
            f"- node [{n['id']}] {n['name']} ({n['type']}, {n['status']}) aliases {n['aliases']} "
            f"— sources {n['sources']}"
        )
    for f in data["graph"]["facts"]:
        lines(
            f"- fact [{f['id']}] node {f['node_id']} {f['key']} = {f['value']} ({f['status']}) — sources {f['sources']}"
        )
    for e in data["graph"]["edges"]:
        lines(f"- edge [{e['id']}] {e['from']} -{e['relation']}-> {e['to']} ({e['status']}) — sources {e['sources']}")
    lines("", "## Receipts", "")
    for r in data["receipts"]["usage"]:
        lines(f"- use {r['receipt_id']}: events {r['event_ids']} ({r['created_at']})")
    for r in data["receipts"]["ingestion"]:
        lines(f"- ingestion {r['receipt_id']} ({r['created_at']})")
    lines("", "## Notes", "")
    for n in data["notes"]:
        lines(
            f"- [{n['id']}] **{_md_text(n['title'])}** ({n['kind']}, {n['status']}, {n['created_at']}): "
            f"{_md_text(n['summary'])} — keywords {', '.join(n['keywords'] or [])}"
            + (f" — replaced by {n['superseded_by']}" if n["superseded_by"] else "")
            + (f" — withdrawn: {_md_text(n['reason'])}" if n["status"] == "withdrawn" else "")
        )


PROGRESS_EVERY = 5000  # records written between two progress calls


def _counted(data: Any, progress: Callable[[int, int, str], None], total: int) -> Any:
    """``data`` whose ``Rows`` report each PROGRESS_EVERY records written (and their section)."""
    done = 0

    def wrap(label: str, rows: Rows) -> Rows:
        def produce(_source) -> Iterator[dict[str, Any]]:
            nonlocal done
            for row in rows:
                yield row
                done += 1
                if done % PROGRESS_EVERY == 0:
                    progress(done, total, label)

        return Rows(rows.source, produce)

    return _each_rows(data, wrap)


def _redacted(value: Any) -> Any:
    """``value`` with every string masked by ``core.redact``, ``Rows`` as they are read."""
    if isinstance(value, Rows):
        return Rows(value.source, lambda _source, rows=value: (redact_value(row) for row in rows))
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    return redact_value(value)


def _records(data: Any) -> int:
    """How many records the export writes (for progress): one per row of each section's query."""
    counts: list[int] = []
    _each_rows(data, lambda _, rows: counts.append(rows.count()))
    return sum(counts)


def write_export(
    namespace: str,
    out: TextIO,
    format: str = "json",
    progress: Callable[[int, int, str], None] | None = None,
    *,
    redact: bool = False,
) -> None:
    """Write the canonical export of ``namespace`` to ``out`` as it is read (memory stays flat
    whatever the size), from one snapshot of the database: ``json`` (sorted keys) or ``markdown``.
    ``progress(done, total, section)`` is called as records are written. ``redact`` masks
    secrets in every string (the stored text is left as it is)."""
    if format not in EXPORT_FORMATS:
        raise InvalidInputError(f"export format must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}")
    with read_snapshot():  # one read snapshot: a writer committing meanwhile changes nothing written
        ns = get_namespace(namespace)
        data = _sections(ns)
        if redact:
            data = _redacted(data)
        if progress is not None:
            total = _records(data)
            data = _counted(data, progress, total)
            progress(0, total, "")
        if format == "json":
            write_json(data, out)
            out.write("\n")
        else:
            write_markdown(data, out)
        if progress is not None:
            progress(total, total, "done")


def export_namespace(namespace: str, format: str = "json", *, redact: bool = False) -> str:
    """The canonical export as text (see ``write_export``)."""
    buffer = io.StringIO()
    write_export(namespace, buffer, format, redact=redact)
    return buffer.getvalue()


def relabel_ids(data: dict[str, Any]) -> dict[str, Any]:
    """The export with database ids replaced by their rank in each table.

    Two stores that hold the same memory but gave it different ids (say, one had an import
    undone in between, so later rows got higher ids) relabel to the same data. Used to
    compare stores, never to store anything.
    """

    def ranks(values) -> dict[int, int]:
        return {v: i + 1 for i, v in enumerate(sorted(v for v in values if v is not None))}

    msg = ranks(m["id"] for m in data["messages"])
    blk = ranks(b["id"] for b in data["blocks"])
    seq = ranks(b["sequence"] for b in data["blocks"])
    evt = ranks(e["id"] for e in data["events"])
    node = ranks(n["id"] for n in data["graph"]["nodes"])
    fact = ranks(f["id"] for f in data["graph"]["facts"])
    edge = ranks(e["id"] for e in data["graph"]["edges"])

    def ev(i):
        return evt.get(i, f"missing:{i}") if i is not None else None

    def prov(value):
        if isinstance(value, list):
            return [prov(v) for v in value]
        if isinstance(value, dict):
            return {k: (prov(v) if k != "value" else v) for k, v in value.items()}
        return ev(value) if isinstance(value, int) and not isinstance(value, bool) else value

    out = json.loads(json.dumps(data))
    for m in out["messages"]:
        m["id"], m["block_id"] = msg[m["id"]], blk.get(m["block_id"])
    for b in out["blocks"]:
        b["id"], b["sequence"] = blk[b["id"]], seq[b["sequence"]]
    for e in out["events"]:
        e["id"], e["block_id"], e["superseded_by"] = evt[e["id"]], blk.get(e["block_id"]), ev(e["superseded_by"])
        e["sources"] = [msg.get(s) for s in e["sources"]]
        e["links"] = sorted([k, ev(t)] for k, t in e["links"])
        e["participant_node_ids"] = [node.get(n) for n in e["participant_node_ids"] or []]
    for n in out["graph"]["nodes"]:
        n["id"], n["sources"] = node[n["id"]], sorted(ev(s) for s in n["sources"])
        n["provenance"] = prov(n["provenance"])
    for f in out["graph"]["facts"]:
        f["id"], f["node_id"], f["sources"] = fact[f["id"]], node.get(f["node_id"]), sorted(ev(s) for s in f["sources"])
    for e in out["graph"]["edges"]:
        e["id"], e["from"], e["to"] = edge[e["id"]], node.get(e["from"]), node.get(e["to"])
        e["sources"] = sorted(ev(s) for s in e["sources"])
    for r in out["receipts"]["usage"]:
        r["event_ids"] = [ev(i) for i in r["event_ids"] or []]
    for r in out["receipts"]["ingestion"]:  # a receipt names the messages it stored
        if isinstance(r.get("result"), dict) and isinstance(r["result"].get("message_ids"), list):
            r["result"]["message_ids"] = [msg.get(i, f"missing:{i}") for i in r["result"]["message_ids"]]
    cause = {"event": ev, "fact": lambda i: fact.get(i, f"missing:{i}"), "edge": lambda i: edge.get(i, f"missing:{i}")}
    for record in (*out["graph"]["facts"], *out["graph"]["edges"]):
        for ending in record.get("ended_by") or []:
            ending["id"] = cause.get(ending["cause"], lambda i: i)(ending["id"])
        record["ended_by"] = sorted(record.get("ended_by") or [], key=lambda e: (e["cause"], str(e["id"])))
    return out


# Stamped with the clock when a row is derived or touched: two derivations of one store differ there only.
_WALL_TIMES = ("updated_at", "last_lifted_at")


def comparable_memory(namespace: str) -> dict[str, Any]:
    """A namespace's memory with ids relabelled (``relabel_ids``) and the clock's stamps left out:
    equal for two stores that hold the same conversation and derived the same memory, however the
    work was run (one process or several, killed and resumed, each store ingested on its own).
    Message and block times are the conversation's and stay."""
    data = relabel_ids(export_data(namespace))

    def strip(value, derived: bool):
        if isinstance(value, dict):
            return {
                k: strip(v, derived)
                for k, v in value.items()
                if k not in _WALL_TIMES and not (derived and k == "created_at")
            }
        if isinstance(value, list):
            return [strip(v, derived) for v in value]
        return value

    # Messages and blocks carry the conversation's own times; everything else's are the clock's.
    return {key: strip(value, key not in ("messages", "blocks")) for key, value in data.items()}
