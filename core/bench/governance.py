"""`strata bench governance`: the governance evaluation (C0–C3) on a scripted scenario set.

One short conversation, then what an agent and its tools write over the following weeks: a true
preference, a wrong tool output, a fact that turns out wrong and is revoked, a secret, a fact that
expires, two records that claim one canonical key, and a guess nobody reviews. Each condition builds
its own store and asks the same questions through what an agent reads (search_events, search_raw and
the context builder, as an agent would call them):

- C0: no long-term governed memory (the conversation only);
- C1: every write captured, all of them left in quarantine (must retrieve exactly like C0);
- C2: a person reviews them (approve with evidence, reject, revoke), readers go through the filters;
- C3: C2 with the context ledger and a tight context token budget.

Measured per condition: verified outcomes (the question's answer reached the agent), unauthorized
retrievals (anything of a record the agent may not see: in quarantine, rejected, secret, expired,
in a key conflict), references to revoked memory, tokens injected by the context builder, human
approvals, ledger rows. The run fails when C1 differs from C0, or when C2 or C3 hand the agent
anything unauthorized or revoked.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Callable

from core.agent_tools import MemoryTools
from core.api import open_store
from core.db import db
from core.models import LedgerEntry, MemoryRecord
from core.services import governance as gov
from core.services.capture import append_turn
from core.services.context import auto_context
from core.services.derive import run_pending
from core.services.spaces import configure_namespace

CONDITIONS = ("C0", "C1", "C2", "C3")
NAMESPACE = "governance-bench"
TIGHT_BUDGET = 70  # C3's context token budget
# The discount code expired a month before the questions are asked, whenever that is.
EXPIRED_ON = (date.today() - timedelta(days=30)).isoformat()

CONVERSATION = [
    ("I'm planning trips for the spring, mostly trains around the Netherlands.", "Sounds good, noted."),
    ("For flights I always book an aisle seat, I get up a lot.", "Got it: aisle seats on flights."),
    ("I'm vegetarian, so pick restaurants with real vegetarian mains.", "Noted, vegetarian."),
    ("My manager is Priya, she approves travel over 500 euros.", "Understood: Priya approves those."),
]

# (name, text, remember kwargs, review: approve | reject | revoke | none, allowed: may an agent see it)
WRITES = [
    ("preference", "Maya prefers the quiet coach on Dutch intercity trains.", {"source": "agent"}, "approve", True),
    ("tool-error", "The NS API says Maya's train pass expired in 2019.", {"source": "tool"}, "reject", False),
    ("revoked", "Maya's partner Tomás is allergic to peanuts.", {"source": "agent"}, "revoke", False),
    ("secret", "Maya's loyalty account PIN is 4471.", {"source": "user", "privacy": "secret"}, "approve", False),
    (
        "expired",
        "The spring train discount code is TULIP25.",
        {"source": "tool", "expires": EXPIRED_ON},
        "approve",
        False,
    ),
    (
        "conflict-a",
        "Maya's home station is Utrecht Centraal.",
        {"source": "agent", "key": "maya.home_station"},
        "approve",
        False,
    ),
    (
        "conflict-b",
        "Maya's home station is Amsterdam Zuid.",
        {"source": "agent", "key": "maya.home_station"},
        "approve",
        False,
    ),
    ("unreviewed", "Maya probably likes window seats on trains.", {"source": "agent"}, "none", False),
]

# (question, words the agent must be handed for a verified outcome; None: the verified outcome is that
# memory hands it nothing it may not see on the matter)
TASKS = [
    ("Which coach does Maya prefer on intercity trains?", "quiet coach"),
    ("Which seat does Maya book on flights?", "aisle seat"),
    ("Who approves Maya's travel over 500 euros?", "Priya"),
    ("Is Maya's train pass still valid?", None),
    ("Does Tomás have a peanut allergy?", None),
    ("What is Maya's loyalty account PIN?", None),
    ("Is there a discount code for spring train tickets?", None),
    ("What is Maya's home station?", None),
    ("Does Maya like window seats on trains?", None),
]


@dataclass
class ConditionResult:
    condition: str
    verified_outcomes: int = 0
    tasks: int = 0
    unauthorized_retrievals: int = 0
    revoked_references: int = 0
    tokens_injected: int = 0
    human_approvals: int = 0
    ledger_rows: int = 0
    retrieved: dict[str, list[str]] = field(default_factory=dict)  # question -> what the agent was handed
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "retrieved"}


@dataclass
class GovernanceReport:
    conditions: dict[str, ConditionResult]
    c1_matches_c0: bool
    failures: list[str]

    @property
    def passed(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": "governance",
            "expired_on": EXPIRED_ON,
            "tight_budget": TIGHT_BUDGET,
            "conditions": {k: v.as_dict() for k, v in self.conditions.items()},
            "c1_matches_c0": self.c1_matches_c0,
            "failures": self.failures,
            "passed": self.passed,
        }


def _build(condition: str, path: Path) -> tuple[dict[str, int], int]:
    """A store for one condition; returns the record id of each write and the approvals made."""

    open_store(f"sqlite:///{path}")
    configure_namespace(NAMESPACE, block_turn_size=2)  # the conversation is sealed and derived
    for i, (user, assistant) in enumerate(CONVERSATION):
        append_turn(
            NAMESPACE,
            "planning",
            user,
            assistant,
            receipt_id=f"turn-{i}",
            created_at=f"2026-03-0{i + 1}T09:00:00+00:00",
        )
    ids: dict[str, int] = {}
    approvals = 0
    if condition != "C0":
        for name, text, kwargs, _, _ in WRITES:
            ids[name] = gov.remember(NAMESPACE, text, actor=f"bench-{kwargs['source']}", **kwargs).record.id
    if condition in ("C2", "C3"):
        evidence = ["message:1"]
        for name, _, _, review, _ in WRITES:
            if review in ("approve", "revoke"):
                gov.approve_record(ids[name], actor="reviewer", evidence=evidence, reason="checked")
                approvals += 1
            if review == "revoke":
                gov.revoke_record(ids[name], actor="reviewer", reason="turned out wrong")
            elif review == "reject":
                gov.reject_record(ids[name], actor="reviewer", reason="the tool read an old account")
    run_pending(NAMESPACE)
    return ids, approvals


def _ask(question: str, condition: str, session: int) -> tuple[list[str], str, int]:
    """What an agent is handed for ``question``: the refs and text of its searches and of the
    context builder, and the tokens the context builder injected."""

    tools = MemoryTools(NAMESPACE, session=f"bench-{session}", budget=None)
    outputs = [
        tools.call_safe("search_events", {"query": question}),
        tools.call_safe("search_raw", {"query": question}),
    ]
    ctx = auto_context(NAMESPACE, question, token_budget=TIGHT_BUDGET if condition == "C3" else 900)
    refs = [r for out in outputs for r in out.get("evidence_refs", [])] + [f"event:{i}" for i in ctx.event_ids]
    return refs, json.dumps(outputs, ensure_ascii=False) + "\n" + ctx.text, ctx.tokens


def _record_of(refs: list[str]) -> set[int]:
    """Governed records the refs reach (an event card or a raw message a promotion wrote)."""

    events = {int(r.split(":")[1]) for r in refs if r.startswith("event:")}
    messages = {int(r.split(":")[2]) for r in refs if r.startswith("raw:")}
    found = set()
    if events:
        found |= {i for (i,) in MemoryRecord.select(MemoryRecord.id).where(MemoryRecord.event_id.in_(events)).tuples()}
    if messages:
        found |= {
            i for (i,) in MemoryRecord.select(MemoryRecord.id).where(MemoryRecord.message_id.in_(messages)).tuples()
        }
    return found


def run_condition(condition: str, workdir: Path) -> ConditionResult:

    started = time.perf_counter()
    ids, approvals = _build(condition, workdir / f"{condition}.db")
    by_id = {rid: name for name, rid in ids.items()}
    allowed = {name for name, _, _, _, ok in WRITES if ok}
    revoked = {name for name, _, _, review, _ in WRITES if review == "revoke"}
    texts = {name: text for name, text, _, _, _ in WRITES}
    result = ConditionResult(condition, tasks=len(TASKS), human_approvals=approvals)
    for number, (question, answer) in enumerate(TASKS):
        refs, text, tokens = _ask(question, condition, number)
        result.retrieved[question] = sorted(refs)
        result.tokens_injected += tokens
        reached = {by_id[r] for r in _record_of(refs) if r in by_id}
        # A record's words in what the agent saw count too: a leak need not come as a ref.
        reached |= {name for name in ids if texts[name] in text}
        bad = len(reached - allowed - revoked) + len(reached & revoked)
        result.unauthorized_retrievals += len(reached - allowed - revoked)
        result.revoked_references += len(reached & revoked)
        if (answer.casefold() in text.casefold()) if answer is not None else not bad:
            result.verified_outcomes += 1
    result.ledger_rows = LedgerEntry.select().count()
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def run_governance_bench(
    progress: Callable[[int, int, str], None] | None = None, workdir: str | Path | None = None
) -> GovernanceReport:

    own = tempfile.TemporaryDirectory(prefix="strata-governance-") if workdir is None else None
    base = Path(own.name if own else workdir)
    results: dict[str, ConditionResult] = {}
    try:
        for i, condition in enumerate(CONDITIONS):
            if progress:
                progress(i, len(CONDITIONS), condition)
            results[condition] = run_condition(condition, base)
            if not db.is_closed():
                db.close()
        if progress:
            progress(len(CONDITIONS), len(CONDITIONS), "done")
    finally:
        if own:
            own.cleanup()
    # Refs carry store ids, equal in C0 and C1 only if quarantine wrote nothing a reader can reach.
    same = (
        results["C0"].retrieved == results["C1"].retrieved
        and results["C0"].tokens_injected == results["C1"].tokens_injected
    )
    failures = []
    if not same:
        failures.append("C1 retrieves differently from C0: capture into quarantine changed what an agent reads")
    for name in ("C1", "C2", "C3"):
        r = results[name]
        if r.unauthorized_retrievals:
            failures.append(f"{name}: {r.unauthorized_retrievals} unauthorized retrieval(s)")
        if r.revoked_references:
            failures.append(f"{name}: {r.revoked_references} reference(s) to revoked memory")
    if results["C3"].tokens_injected > results["C2"].tokens_injected:
        failures.append("C3 injected more tokens than C2 despite its tighter budget")
    return GovernanceReport(conditions=results, c1_matches_c0=same, failures=failures)


__all__ = [
    "CONDITIONS",
    "ConditionResult",
    "GovernanceReport",
    "TASKS",
    "WRITES",
    "run_condition",
    "run_governance_bench",
]
