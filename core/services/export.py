"""Canonical export of a namespace: everything it remembers, in a stable order.

The export covers memory content — threads, messages, blocks, events (with sources, links
and weights), the knowledge graph (nodes, facts, edges and what they cite) and receipts —
and leaves out bookkeeping that changes without the memory changing: the namespace
revision and block counter, jobs, retrieval batches and traces, the search index, when an
event was last retrieved, and the import audit (which keeps undone batches on purpose).

Two exports of the same memory are byte-identical: rows are ordered by id (blocks by
sequence), keys are sorted, JSON is rendered one way. That is what the import round trip
(import → commit → undo) is checked with.
"""

from __future__ import annotations

import json
from typing import Any

from core.db import chunks
from core.errors import InvalidInputError
from core.models import (
    Block, Event, EventLink, EventSource, GraphEdge, GraphEnding, GraphFact, GraphNode, GraphSource, IngestionReceipt,
    Message, Thread, UsageReceipt,
)
from core.services.events import event_weight
from core.services.spaces import get_namespace

EXPORT_FORMATS = ("json", "markdown")
EXPORT_VERSION = 1


def export_data(namespace: str) -> dict[str, Any]:
    """The namespace as plain data (see the module docstring for what is in it)."""
    ns = get_namespace(namespace)
    threads = {t.id: t for t in Thread.select().where(Thread.namespace == ns).order_by(Thread.id)}
    messages = []
    for m in Message.select().where(Message.namespace == ns).order_by(Message.id):
        messages.append({
            "id": m.id, "thread": threads[m.thread_id].name, "block_id": m.block_id, "position": m.position,
            "turn": m.turn, "ns_turn": m.ns_turn, "role": m.role, "speaker": m.speaker, "content": m.content,
            "created_at": m.created_at, "external_id": m.external_id, "tool_calls": m.tool_calls,
        })
    blocks = []
    for b in Block.select().where(Block.namespace == ns).order_by(Block.sequence, Block.id):
        blocks.append({
            "id": b.id, "thread": threads[b.thread_id].name, "sequence": b.sequence, "start_turn": b.start_turn,
            "end_turn": b.end_turn, "message_count": b.message_count, "created_at": b.created_at,
            "status": b.status, "l0_title": b.l0_title, "l0_tags": b.l0_tags, "l1_summary": b.l1_summary,
            "l2_keypoints": b.l2_keypoints, "should_extract": b.should_extract, "l3_text": b.l3_text,
            "l4_text": b.l4_text, "ready_position": b.ready_position,
            "pointer": [b.pointer_current_level, b.pointer_anchor_level, b.pointer_anchor_position],
            "last_lifted_at": b.last_lifted_at, "last_lifted_by": b.last_lifted_by,
        })
    events = list(Event.select().where(Event.namespace == ns).order_by(Event.id))
    ids = [e.id for e in events]
    sources: dict[int, list[int]] = {}
    links: dict[int, list[list[Any]]] = {}
    for part in chunks(ids):
        for row in EventSource.select().where(EventSource.event.in_(part)).order_by(EventSource.event,
                                                                                     EventSource.position):
            sources.setdefault(row.event_id, []).append(row.message_id)
        for row in EventLink.select().where(EventLink.event.in_(part)).order_by(EventLink.event, EventLink.kind,
                                                                                 EventLink.target):
            links.setdefault(row.event_id, []).append([row.kind, row.target_id])
    event_rows = []
    for e in events:
        event_rows.append({
            "id": e.id, "block_id": e.block_id, "thread": threads[e.thread_id].name if e.thread_id in threads else None,
            "title": e.title, "summary": e.summary, "tags": e.tags, "quotes": e.quotes,
            "participants": e.participants, "participant_node_ids": e.participant_node_ids,
            "event_type": e.event_type, "scope": e.scope, "criticality": e.criticality, "status": e.status,
            "superseded_by": e.superseded_by, "mentioned_at": e.mentioned_at, "happened_start": e.happened_start,
            "happened_end": e.happened_end, "original_text": e.original_text, "precision": e.precision,
            "basis": e.basis, "time_status": e.time_status, "origin": e.origin, "created_at": e.created_at,
            "updated_at": e.updated_at, "sources": sources.get(e.id, []), "links": links.get(e.id, []),
            "weight": {"mention_count": e.mention_count, "formed_turn": e.formed_turn,
                       "last_adopted_turn": e.last_adopted_turn, "pinned": e.pinned, "floor": e.floor_weight,
                       "forced_cap": e.forced_cap, "value": round(event_weight(e, ns.current_turn), 6)},
        })
    nodes = list(GraphNode.select().where(GraphNode.namespace == ns).order_by(GraphNode.id))
    node_ids = [n.id for n in nodes]
    facts = [f for part in chunks(node_ids) for f in GraphFact.select().where(GraphFact.node.in_(part))]
    facts.sort(key=lambda f: f.id)
    edges = list(GraphEdge.select().where(GraphEdge.namespace == ns).order_by(GraphEdge.id))
    cites: dict[tuple[str, int], list[int]] = {}
    for kind, records in (("node", node_ids), ("fact", [f.id for f in facts]), ("edge", [e.id for e in edges])):
        for part in chunks(records):
            for row in GraphSource.select().where((GraphSource.kind == kind) & GraphSource.record_id.in_(part)):
                cites.setdefault((kind, row.record_id), []).append(row.event_id)
    endings: dict[tuple[str, int], list[dict]] = {}
    for kind, records in (("fact", [f.id for f in facts]), ("edge", [e.id for e in edges])):
        for part in chunks(records):
            for row in GraphEnding.select().where((GraphEnding.kind == kind) & GraphEnding.record_id.in_(part)):
                endings.setdefault((kind, row.record_id), []).append(
                    {"cause": row.cause_kind, "id": row.cause_id, "valid_to": row.valid_to,
                     "prior_status": row.prior_status, "prior_valid_to": row.prior_valid_to})
    for found in endings.values():
        found.sort(key=lambda e: (e["cause"], e["id"]))
    graph = {
        "nodes": [{"id": n.id, "name": n.name, "type": n.type, "aliases": n.aliases, "tags": n.tags,
                   "provenance": n.provenance, "status": n.status, "confidence": n.confidence,
                   "created_at": n.created_at, "updated_at": n.updated_at,
                   "sources": sorted(cites.get(("node", n.id), []))} for n in nodes],
        "facts": [{"id": f.id, "node_id": f.node_id, "key": f.key, "value": f.value, "status": f.status,
                   "valid_from": f.valid_from, "valid_to": f.valid_to, "confidence": f.confidence,
                   "created_at": f.created_at, "updated_at": f.updated_at,
                   "sources": sorted(cites.get(("fact", f.id), [])),
                   "ended_by": endings.get(("fact", f.id), [])} for f in facts],
        "edges": [{"id": e.id, "from": e.from_node_id, "to": e.to_node_id, "relation": e.relation,
                   "status": e.status, "valid_from": e.valid_from, "valid_to": e.valid_to,
                   "confidence": e.confidence, "created_at": e.created_at, "updated_at": e.updated_at,
                   "sources": sorted(cites.get(("edge", e.id), [])),
                   "ended_by": endings.get(("edge", e.id), [])} for e in edges],
    }
    receipts = {
        "usage": [{"receipt_id": r.receipt_id, "batch_id": r.batch_id, "event_ids": r.event_ids, "audit": r.audit,
                   "created_at": r.created_at}
                  for r in UsageReceipt.select().where(UsageReceipt.namespace == ns).order_by(UsageReceipt.id)],
        "ingestion": [{"receipt_id": r.receipt_id, "payload_hash": r.payload_hash, "result": r.result,
                       "created_at": r.created_at}
                      for r in IngestionReceipt.select().where(IngestionReceipt.namespace == ns)
                      .order_by(IngestionReceipt.id)],
    }
    return {
        "export_version": EXPORT_VERSION,
        "namespace": {"name": ns.name, "current_turn": ns.current_turn, "block_turn_size": ns.block_turn_size,
                      "block_decay_lambda": ns.block_decay_lambda, "created_at": ns.created_at},
        "threads": [{"name": t.name, "message_count": t.message_count, "turn_count": t.turn_count,
                     "sealed_turns": t.sealed_turns, "block_count": t.block_count, "ready_count": t.ready_count,
                     "created_at": t.created_at} for t in threads.values()],
        "messages": messages,
        "blocks": blocks,
        "events": event_rows,
        "graph": graph,
        "receipts": receipts,
    }


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def _md_text(text: Any) -> str:
    return " ".join(str(text).split()) if text is not None else ""


def to_markdown(data: dict[str, Any]) -> str:
    """A readable rendering of the same content (same order, every record)."""
    ns = data["namespace"]
    out = [f"# Strata export: {ns['name']}", "",
           f"current turn {ns['current_turn']}, block size {ns['block_turn_size']}, "
           f"decay λ {ns['block_decay_lambda']}, created {ns['created_at']}", ""]
    out += ["## Threads", ""] + [f"- {t['name']}: {t['message_count']} messages, {t['turn_count']} turns, "
                                 f"{t['block_count']} blocks" for t in data["threads"]] + [""]
    out += ["## Blocks", ""]
    for b in data["blocks"]:
        out.append(f"### Block {b['id']} (sequence {b['sequence']}, {b['thread']}, turns {b['start_turn']}-"
                   f"{b['end_turn']}, {b['status']})")
        if b["l0_title"]:
            out.append(f"**{_md_text(b['l0_title'])}** — tags: {', '.join(b['l0_tags'] or [])}")
        if b["l1_summary"]:
            out.append(_md_text(b["l1_summary"]))
        out.append("")
    out += ["## Messages", ""]
    for m in data["messages"]:
        who = m["speaker"] or m["role"]
        out.append(f"- [{m['id']}] {m['created_at']} {m['thread']}#{m['position']} (block {m['block_id']}) "
                   f"{who}: {_md_text(m['content'])}")
    out += ["", "## Events", ""]
    for e in data["events"]:
        when = e["happened_start"] or f"mentioned {e['mentioned_at']}"
        links = "; ".join(f"{k} {t}" for k, t in e["links"])
        out.append(f"- [{e['id']}] **{_md_text(e['title'])}** ({e['status']}, {e['event_type']}, {when}, "
                   f"weight {e['weight']['value']}): {_md_text(e['summary'])} — sources {e['sources']}"
                   + (f" — links: {links}" if links else ""))
    out += ["", "## Graph", ""]
    for n in data["graph"]["nodes"]:
        out.append(f"- node [{n['id']}] {n['name']} ({n['type']}, {n['status']}) aliases {n['aliases']} "
                   f"— sources {n['sources']}")
    for f in data["graph"]["facts"]:
        out.append(f"- fact [{f['id']}] node {f['node_id']} {f['key']} = {f['value']} ({f['status']}) "
                   f"— sources {f['sources']}")
    for e in data["graph"]["edges"]:
        out.append(f"- edge [{e['id']}] {e['from']} -{e['relation']}-> {e['to']} ({e['status']}) "
                   f"— sources {e['sources']}")
    out += ["", "## Receipts", ""]
    for r in data["receipts"]["usage"]:
        out.append(f"- use {r['receipt_id']}: events {r['event_ids']} ({r['created_at']})")
    for r in data["receipts"]["ingestion"]:
        out.append(f"- ingestion {r['receipt_id']} ({r['created_at']})")
    return "\n".join(out) + "\n"


def export_namespace(namespace: str, format: str = "json") -> str:
    """The canonical export as text: ``json`` (sorted keys) or ``markdown``."""
    if format not in EXPORT_FORMATS:
        raise InvalidInputError(f"export format must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}")
    data = export_data(namespace)
    return to_json(data) if format == "json" else to_markdown(data)


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
    return out
