"""The demo holds a scripted agent session: real traces, receipts and a context build."""

from __future__ import annotations

from core.demo import AGENT_ROUNDS, DEMO_SESSION
from core.models import LedgerEntry, RetrievalBatch, UsageReceipt
from core.services.traces import list_traces


def test_the_demo_holds_an_agent_session_searched_assessed_and_used(demo):
    traces = list_traces(demo, limit=100)
    assert [(t.kind, t.channel) for t in reversed(traces)] == [
        ("search", "events"),
        ("assess", "events"),
        ("use", "events"),
        ("search", "raw"),
        ("assess", "raw"),
        ("use", "raw"),
        ("context", None),
    ]
    assessed = [t for t in traces if t.kind == "assess"]
    assert {t.verdict for t in assessed} == {"sufficient"} and all(t.selected_count for t in assessed)
    receipts = {r.receipt_id: r for r in UsageReceipt.select()}
    assert set(receipts) == {receipt for *_, receipt in AGENT_ROUNDS}
    assert receipts["demo:atlas-launch"].event_ids  # the adopted cards were reinforced
    assert {b.session for b in RetrievalBatch.select()} == {DEMO_SESSION}
    assert LedgerEntry.select().where(LedgerEntry.kind == "context").count() == 1
