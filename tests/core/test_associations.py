"""Co-activation associations: learned only on use, bounded, decaying, and a small lift in the
context builder that never admits a card a gate refused."""

from __future__ import annotations

import pytest

from core.db import write_transaction
from core.models import Association, Event
from core.services import associations
from core.services.associations import associations_of, decayed, prune, reinforce, spread
from core.services.context import ABLATIONS, auto_context
from core.services.gate import assess, event_ref, open_batch, record_use, refs_for_events
from core.services.search import search_events
from core.services.spaces import configure_namespace, get_namespace
from core.services.trace_view import get_trace
from tests.cards import card


@pytest.fixture
def ns(store):
    configure_namespace("ns", block_turn_size=1)
    return get_namespace("ns").id


def _use_together(query: str, ids: list[int], receipt: str) -> None:
    hits = search_events("ns", query)
    batch = open_batch("ns", "search_events", query, refs_for_events(hits), session="s")
    refs = [event_ref(i) for i in ids]
    assess("ns", batch.id, "sufficient", refs, "answers it", "", "answer", session="s")
    record_use("ns", batch.id, refs, receipt_id=receipt, session="s")


def _edge(a: int, b: int) -> Association:
    lo, hi = sorted((a, b))
    return Association.get((Association.source == lo) & (Association.target == hi))


def test_using_cards_together_links_them_and_again_strengthens_the_link(ns):
    a = card(ns, "The Cedar service port is 8247.")
    b = card(ns, "Cedar deploys run from the ci-cedar pipeline.")
    _use_together("Cedar service port pipeline", [a, b], "r1")
    first = _edge(a, b)
    assert first.weight == pytest.approx(associations.LEARNING_RATE)
    assert first.coactivation_count == 1
    _use_together("Cedar service port pipeline", [a, b], "r2")
    second = _edge(a, b)
    assert second.coactivation_count == 2
    assert associations.LEARNING_RATE < second.weight <= 2 * associations.LEARNING_RATE
    shown = associations_of(a)
    assert [(r.event_id, r.coactivation_count) for r in shown] == [(b, 2)]


def test_searching_and_building_context_never_reinforce(ns):
    a = card(ns, "The Cedar service port is 8247.")
    b = card(ns, "Cedar deploys run from the ci-cedar pipeline.")
    hits = search_events("ns", "Cedar")
    open_batch("ns", "search_events", "Cedar", refs_for_events(hits), session="s")
    auto_context("ns", "Cedar port and pipeline")
    assert Association.select().count() == 0
    assert {a, b}  # both cards exist; only a recorded use links them


def test_superseded_cards_are_never_reinforced(ns):
    a = card(ns, "The Cedar service port is 8247.")
    old = card(ns, "The Cedar service port is 6389.", status="superseded")
    with write_transaction():
        assert reinforce(ns, {a: 1.0, old: 1.0}) == 0
    assert Association.select().count() == 0


def test_weight_decays_with_a_45_day_half_life_and_is_capped():
    assert decayed(0.5, "2026-01-01T00:00:00+00:00", "2026-02-15T00:00:00+00:00") == pytest.approx(0.25)
    assert decayed(3.0, "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00+00:00") == 1.0


def test_reinforcement_decays_the_old_weight_before_adding(ns):
    a = card(ns, "Alpha card.")
    b = card(ns, "Beta card.")
    with write_transaction():
        reinforce(ns, {a: 1.0, b: 1.0}, "2026-01-01T00:00:00+00:00")
        reinforce(ns, {a: 1.0, b: 1.0}, "2026-02-15T00:00:00+00:00")
    assert _edge(a, b).weight == pytest.approx(0.08 * 0.5 + 0.08)
    with write_transaction():
        reinforce(ns, {a: 0.25, b: 1.0}, "2026-02-15T00:00:00+00:00")
    assert _edge(a, b).weight == pytest.approx(0.08 * 0.5 + 0.08 + 0.08 * 0.5)


def test_pruning_drops_the_weakest_edges_beyond_the_cap(ns):
    ids = [card(ns, f"Card {n}.") for n in range(5)]
    with write_transaction():
        reinforce(ns, {ids[0]: 1.0, ids[1]: 1.0})
        reinforce(ns, {ids[0]: 1.0, ids[1]: 1.0})  # the strongest edge
        reinforce(ns, {ids[2]: 0.1, ids[3]: 0.1})  # the weakest
        reinforce(ns, {ids[3]: 1.0, ids[4]: 1.0})
        assert prune(ns, keep=2) == 1
    pairs = {(r.source_id, r.target_id) for r in Association.select()}
    assert pairs == {(ids[0], ids[1]), (ids[3], ids[4])}


def test_spread_lifts_a_candidate_linked_to_a_seed_and_ignores_the_rest(ns):
    a, b, c = (card(ns, f"Card {n}.") for n in "abc")
    with write_transaction():
        reinforce(ns, {a: 1.0, b: 1.0}, "2026-01-01T00:00:00+00:00")
    result = spread(ns, {a: 0.5}, [a, b], now="2026-01-01T00:00:00+00:00")
    assert result.scores == {b: pytest.approx(0.08 * 0.5)}
    assert (result.edges_read, result.edges_applied) == (1, 1)
    outside = spread(ns, {a: 0.5}, [a, c], now="2026-01-01T00:00:00+00:00")
    assert outside.scores == {}  # b is not a candidate this time


def test_an_association_reorders_but_never_admits(ns):
    port = card(ns, "The Cedar service port is 8247.")
    runbook = card(ns, "The Cedar runbook lives in the ops wiki.")
    restart = card(ns, "Cedar service alerts page the on-call engineer.")
    maple = card(ns, "The Maple service port is 6389.")
    with write_transaction():
        for _ in range(8):
            reinforce(ns, {port: 1.0, restart: 1.0})
            reinforce(ns, {port: 1.0, maple: 1.0})
    question = "Where does the Cedar runbook live, and what is the Cedar service port?"
    plain = auto_context("ns", question, window=ABLATIONS["no_associations"])
    lifted = auto_context("ns", question)
    trace = get_trace(lifted.trace_id)
    components = {c["ref"]: c["components"] for c in trace.candidates}
    assert components[f"event:{restart}"]["association"] > 0
    assert components[f"event:{runbook}"]["association"] == 0
    order = [c["ref"] for c in trace.candidates]
    before = [c["ref"] for c in get_trace(plain.trace_id).candidates]
    assert before.index(f"event:{restart}") > before.index(f"event:{runbook}")
    assert order.index(f"event:{restart}") < order.index(f"event:{runbook}")
    # Maple is linked to the top card, but the focus gate still keeps it out.
    assert maple not in lifted.event_ids and maple not in plain.event_ids
    assert {e["ref"]: e["reason"] for e in lifted.excluded}[f"event:{maple}"] == "focus_mismatch"
    assert trace.detail["associations"]["edges_applied"] >= 1
