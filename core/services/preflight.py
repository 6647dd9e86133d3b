"""Cost preflight: before each request Strata itself makes to a model, the estimate is compared with
what is left of the session's and the day's token budgets (the namespace policy's ``budgets``).

    allow     the estimate fits both
    mitigate  it does not, but the caller can shrink the request (fewer items, shallower levels)
              to what fits: the decision carries that allowance
    block     it cannot fit: the request is not made

Every decision is written to the ledger (kind ``preflight``) with its reason. The figures are
estimates (``core.tokens``), never shown as provider usage or billing; what the day has spent is the
sum of the estimates this namespace's preflights let through today.
"""

from __future__ import annotations

from dataclasses import dataclass

from peewee import fn

from core.db import insert_one, write_transaction
from core.models import LedgerEntry, Namespace
from core.services.policy import get_policy
from core.services.spaces import get_namespace
from core.timeutil import now_iso

DECISIONS = ("allow", "mitigate", "block")


@dataclass(frozen=True)
class Preflight:
    decision: str
    estimate: int
    allowed: int  # tokens the request may use: the estimate, the shrunk size, or 0
    remaining_session: int | None
    remaining_daily: int | None
    reason: str
    ledger_id: int


def spent_today(namespace_id: int, day: str | None = None) -> int:
    day = day or now_iso()[:10]
    total = (
        LedgerEntry.select(fn.SUM(LedgerEntry.tokens))
        .where(
            (LedgerEntry.namespace == namespace_id)
            & (LedgerEntry.kind == "preflight")
            & LedgerEntry.decision.in_(("allow", "mitigate"))
            & (LedgerEntry.created_at >= day)
            & (LedgerEntry.created_at < f"{day}~")
        )
        .scalar()
    )
    return int(total or 0)


def preflight(
    namespace: str, estimate: int, *, purpose: str, session_spent: int = 0, can_shrink_to: int | None = None
) -> Preflight:
    """Decide one model request of ``estimate`` tokens for ``purpose`` (a job kind, "import decision"
    …). ``session_spent`` is what this session's earlier requests were allowed; ``can_shrink_to``
    the smallest size the caller could shrink the request to (None: it cannot shrink)."""
    ns = get_namespace(namespace)
    budgets = get_policy(namespace).budgets
    with write_transaction():
        remaining_session = None if budgets.session_tokens is None else max(0, budgets.session_tokens - session_spent)
        remaining_daily = None if budgets.daily_tokens is None else max(0, budgets.daily_tokens - spent_today(ns.id))
        limits = [r for r in (remaining_session, remaining_daily) if r is not None]
        room = min(limits) if limits else None
        if room is None or estimate <= room:
            decision, allowed = "allow", estimate
            reason = "no budget set" if room is None else f"estimate {estimate} fits the {room} tokens left"
        elif can_shrink_to is not None and can_shrink_to <= room:
            decision, allowed = "mitigate", room
            reason = f"estimate {estimate} exceeds the {room} tokens left; shrunk to fit"
        else:
            decision, allowed = "block", 0
            which = "session" if room == remaining_session else "daily"
            reason = f"estimate {estimate} exceeds the {room} tokens left of the {which} budget"
        row = insert_one(
            LedgerEntry,
            dict(
                namespace=ns.id,
                kind="preflight",
                query=purpose[:200],
                tokens=allowed,
                budget=room,
                decision=decision,
                reason=reason,
                created_at=now_iso(),
            ),
        )
    return Preflight(
        decision=decision,
        estimate=estimate,
        allowed=allowed,
        remaining_session=remaining_session,
        remaining_daily=remaining_daily,
        reason=reason,
        ledger_id=row.id,
    )


def spent_on(namespace_id: int, purpose_prefix: str) -> int:
    """Estimated tokens the preflights of one session (their purposes share ``purpose_prefix``, e.g.
    ``import batch 7``) let through."""
    total = (
        LedgerEntry.select(fn.SUM(LedgerEntry.tokens))
        .where(
            (LedgerEntry.namespace == namespace_id)
            & (LedgerEntry.kind == "preflight")
            & LedgerEntry.decision.in_(("allow", "mitigate"))
            & LedgerEntry.query.startswith(purpose_prefix)
        )
        .scalar()
    )
    return int(total or 0)


def preflight_session(
    namespace: str, estimate: int, *, session: str, item: str, can_shrink_to: int | None = None
) -> Preflight | None:
    """``preflight`` for one request of a session named by a purpose prefix (``import batch 7``), its
    spending read back from the ledger. None when the namespace does not exist yet: it has no policy,
    so there is no budget to keep (an import into a new namespace creates it at commit)."""
    ns = Namespace.get_or_none(Namespace.name == namespace)
    if ns is None:
        return None
    return preflight(
        namespace,
        estimate,
        purpose=f"{session}: {item}",
        session_spent=spent_on(ns.id, session),
        can_shrink_to=can_shrink_to,
    )


__all__ = ["DECISIONS", "Preflight", "preflight", "preflight_session", "spent_on", "spent_today"]
