"""The explained context window: content kinds, focus terms, coverage, redundancy and the reason code
each left-out card gets, in the builder's fixed gate order."""

from __future__ import annotations

import json

import pytest

from core.db import write_transaction
from core.errors import InvalidInputError
from core.models import Event
from core.search.window import (
    Coverage,
    content_kind,
    focus_overlap,
    focus_terms,
    is_echo,
    jaccard,
    utility,
    view_terms,
)
from core.services.context import ABLATIONS, WindowConfig, auto_context
from core.services.spaces import configure_namespace, get_namespace
from core.services.trace_view import get_trace
from core.vocab import REASON_CODES
from tests.cards import card


@pytest.fixture
def ns(store):
    configure_namespace("ns", block_turn_size=1)
    return get_namespace("ns").id


@pytest.mark.parametrize(
    "text, kind",
    [
        ("Cedar uses port 8247.", "statement"),
        ("I like hiking.", "statement"),
        ("我对青霉素过敏。", "statement"),
        ("Noted: the Atlas launch moved to March 10.", "statement"),
        ("Got it, the sync is on Thursday at 10.", "statement"),
        ("What port does Cedar use?", "question"),
        ("remind me which editor I use", "question"),
        ("Cedar 服务的端口是多少？", "question"),
        ("你还记得我用什么编辑器吗", "question"),
        ("ok, thanks!", "acknowledgement"),
        ("Thanks, that helps.", "acknowledgement"),
        ("收到", "acknowledgement"),
        ("好的，谢谢", "acknowledgement"),
        ("I might switch my editor to Vim.", "conditional"),
        ("We are considering a move to Berlin.", "conditional"),
        ("我打算改用 Obsidian。", "conditional"),
    ],
)
def test_content_kinds_in_english_and_chinese(text, kind):
    assert content_kind(text) == kind


def test_a_conditional_is_worth_a_statement_only_to_a_conditional_question():
    assert utility("conditional") == 0.15
    assert utility("conditional", query_is_conditional=True) == 1.0
    assert utility("question") < utility("statement")
    assert utility("acknowledgement") < utility("question")


def test_focus_terms_pick_identifiers_not_sentence_openers():
    assert focus_terms("What is the current Cedar service port?") == ("cedar",)
    assert focus_terms("Which port does db-2.internal use in v1.4?") == ("db-2.internal", "v1.4")
    # Generic words never pick one thing out: "Port", "JSON", weekday and month names.
    assert focus_terms("Is the JSON Port set for Monday?") == ()
    assert focus_terms("where do I keep my notes") == ()


def test_focus_overlap_keeps_sibling_entities_apart():
    terms = focus_terms("What is the current Cedar service port?")
    assert focus_overlap(terms, "The Cedar service now listens on port 8247") == 1.0
    assert focus_overlap(terms, "The Maple service listens on port 6389") == 0.0
    assert focus_overlap((), "anything") == 1.0


def test_coverage_weighs_rare_terms_and_ignores_recall_boilerplate():
    query = view_terms("Please remind me what I said about the Cedar port before")
    assert query == frozenset({"cedar", "port"})
    docs = [view_terms(t) for t in ("Cedar port is 8247", "Maple port is 6389", "Lunch was pasta")]
    coverage = Coverage.over(query, docs)
    full, partial, none = (coverage.of(d) for d in docs)
    assert full == pytest.approx(1.0)
    assert 0 < partial < 0.5  # "port" is in two of three cards, so it weighs less than "cedar"
    assert none == 0.0


def test_redundancy_and_echo_measures():
    a = view_terms("Feature freeze on February 20.")
    assert jaccard(a, view_terms("Feature freeze: February 20")) >= 0.92
    assert jaccard(a, view_terms("Launch on March 10")) < 0.5
    assert is_echo("What is the Cedar port?", "what is the cedar port")
    assert not is_echo("What is the Cedar port?", "The Cedar port is 8247")


def _decisions(result) -> dict[str, str]:
    return {e["ref"]: e["reason"] for e in result.excluded}


def test_every_gate_gives_its_own_reason_code(ns):
    cedar = card(ns, "The Cedar service port is 8247.")
    maple = card(ns, "The Maple service port is 6389.")
    question = card(ns, "What is the Cedar service port again?")
    ack = card(ns, "Ok, thanks for the Cedar port!")
    maybe = card(ns, "I might change the Cedar service port later.")
    echo = card(ns, "What is the current Cedar service port?")
    twin = card(ns, "The Cedar service port is 8247!", title="Cedar service port 8247")
    result = auto_context("ns", "What is the current Cedar service port?", max_events=4)
    reasons = _decisions(result)
    # The two cards stating the port repeat each other: one is handed over, the other is redundant.
    assert len(result.event_ids) == 1 and result.event_ids[0] in (cedar, twin)
    other = twin if result.event_ids[0] == cedar else cedar
    assert reasons[f"event:{other}"] == "redundant"
    assert reasons[f"event:{maple}"] == "focus_mismatch"
    assert reasons[f"event:{question}"] == "low_utility"
    assert reasons[f"event:{ack}"] == "low_utility"
    assert reasons[f"event:{maybe}"] == "conditional"
    assert reasons[f"event:{echo}"] == "current_query"
    assert set(reasons.values()) <= set(REASON_CODES)


def test_a_conditional_question_admits_the_possibility(ns):
    maybe = card(ns, "I might move the Cedar database to PostgreSQL next year.")
    result = auto_context("ns", "Might the Cedar database move to PostgreSQL?")
    assert maybe in result.event_ids


def test_off_topic_cards_fall_below_minimum_coverage(ns):
    card(ns, "The Cedar service port is 8247.")
    lunch = card(ns, "Lunch with Dana was pasta at the Cedar cafe.", title="Lunch")
    many = [card(ns, f"The Cedar deploy number {n} went out on a Friday.") for n in range(3)]
    result = auto_context("ns", "Which port does the Cedar service listen on?", max_events=8)
    reasons = _decisions(result)
    assert reasons.get(f"event:{lunch}") == "below_min_relevance"
    assert all(reasons.get(f"event:{m}") == "below_min_relevance" for m in many)


def test_standing_cards_skip_the_relevance_gates(ns):
    allergy = card(ns, "Maya is allergic to penicillin.", criticality="safety", floor_weight=1.0)
    result = auto_context("ns", "What time is the Thursday sync?")
    assert allergy in result.event_ids


def test_the_trace_keeps_the_best_candidates_below_the_cut_with_why(ns):
    card(ns, "The Cedar service port is 8247.")
    maple = card(ns, "The Maple service port is 6389.")
    result = auto_context("ns", "What is the current Cedar service port?")
    trace = get_trace(result.trace_id)
    lost = trace.detail["not_recalled"]
    assert {"ref": f"event:{maple}", "reason": "focus_mismatch"}.items() <= lost[0].items()
    assert trace.detail["kinds"][f"event:{maple}"] == "statement"
    assert trace.detail["focus_terms"] == ["cedar"]
    components = {c["ref"]: c["components"] for c in trace.candidates}
    assert components[f"event:{maple}"]["focus"] == 0.0
    assert {"utility", "coverage", "association", "rrf"} <= set(components[f"event:{maple}"])


def test_without_hygiene_the_sibling_and_the_question_come_back(ns):
    cedar = card(ns, "The Cedar service port is 8247.")
    maple = card(ns, "The Maple service port is 6389.")
    result = auto_context("ns", "What is the current Cedar service port?", window=ABLATIONS["no_hygiene"])
    assert {cedar, maple} <= set(result.event_ids)
    assert get_trace(result.trace_id).detail["window"] == "no_hygiene"


def test_window_config_refuses_an_unknown_ranking():
    with pytest.raises(InvalidInputError, match="ranking"):
        WindowConfig(ranking="bm25")
    assert set(ABLATIONS) == {"full", "no_hygiene", "no_associations", "similarity_only", "no_recency"}


def test_a_card_is_rendered_without_what_says_nothing(ns):
    same = card(ns, "The Cedar service port is 8247.")
    result = auto_context("ns", "What is the Cedar service port?")
    line = next(x for x in result.text.splitlines() if x.startswith("{") and f'"id":{same}' in x)
    assert json.loads(line) == {"id": same, "summary": "The Cedar service port is 8247."}


def test_an_agent_search_trace_keeps_the_best_results_below_its_limit(ns):
    from core.agent_tools import MemoryTools

    ids = [card(ns, f"The Orion deploy number {n} finished on time.") for n in range(9)]
    tools = MemoryTools("ns", session="s", budget=None)
    out = tools.call_safe("search_events", {"query": "Orion deploy", "limit": 3})
    shown = set(out["evidence_refs"])
    trace = get_trace(_latest_trace_id())
    lost = trace.detail["not_recalled"]
    assert len(shown) == 3 and len(lost) == 5
    assert all(x["reason"] == "limit" and x["ref"] not in shown for x in lost)
    assert {x["ref"] for x in lost} <= {f"event:{i}" for i in ids}
    everything = tools.call_safe("search_events", {"query": "Orion deploy finished", "limit": 20})
    assert everything["count"] == 9  # nothing ranked below the cut: the trace has no such list
    assert "not_recalled" not in get_trace(_latest_trace_id()).detail


def _latest_trace_id() -> int:
    from core.models import RetrievalTrace

    return RetrievalTrace.select().order_by(RetrievalTrace.id.desc()).first().id
