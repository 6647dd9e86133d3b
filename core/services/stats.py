"""Counts for `strata stats`: what is stored and what derivation still owes."""

from __future__ import annotations

from dataclasses import dataclass

from peewee import fn

from core.models import Block, Message, Namespace, Thread
from core.services.blocks import open_tail_turns
from core.services.jobs import job_counts
from core.services.spaces import get_namespace


@dataclass(frozen=True)
class Stats:
    namespace: str | None
    namespaces: int
    threads: int
    messages: int
    blocks_pending: int
    blocks_ready: int
    open_tail_turns: int
    open_tail_messages: int
    jobs: dict[str, int]


def stats(namespace: str | None = None) -> Stats:
    ns = get_namespace(namespace) if namespace else None

    def scoped(query, model):
        return query.where(model.namespace == ns) if ns is not None else query

    blocks = dict(scoped(Block.select(Block.status, fn.COUNT(Block.id)), Block).group_by(Block.status).tuples())
    return Stats(
        namespace=namespace,
        namespaces=1 if ns is not None else Namespace.select().count(),
        threads=scoped(Thread.select(), Thread).count(),
        messages=scoped(Message.select(), Message).count(),
        blocks_pending=blocks.get("pending", 0),
        blocks_ready=blocks.get("ready", 0),
        open_tail_turns=open_tail_turns(namespace),
        open_tail_messages=scoped(Message.select().where(Message.block.is_null()), Message).count(),
        jobs=job_counts(namespace),
    )
