"""Why a fact or edge ended is kept, so forgetting that reason makes it current again and
restoring the reason ends it again; a one-at-a-time slot never gets two current values."""

from __future__ import annotations

from core.models import Event, GraphEdge, GraphEnding, GraphFact, GraphNode
from core.providers.offline_graph import project_graph_offline
from core.services.events import forget_event, restore_event
from core.services.graph import node_view
from core.services.graph_apply import apply_projection
from core.services.graph_job import projection_context
from core.services.graph_endings import describe
from core.services.search import search_graph
from core.services.spaces import get_namespace
from core.services.verify import verify
from tests.core.test_graph import _apply, _edge, _event, _facts, _node, _ns_id


def _project(*batches: list[int]) -> None:
    """Run the offline projector over each batch of events, as the graph job does."""
    for batch in batches:
        context = projection_context(None, _ns_id(), [Event.get_by_id(i) for i in batch])
        result = apply_projection(_ns_id(), batch, project_graph_offline(context))
        assert result.warnings == []


def _current(name: str) -> set[tuple[str, str]]:
    view = node_view(GraphNode.get(GraphNode.name == name).id)
    return {(f.key, f.value) for f in view.current_facts}


def _edges(name: str) -> dict[str, bool]:
    view = node_view(GraphNode.get(GraphNode.name == name).id)
    return {e.other_name: e.current for e in view.edges_out}


def test_forgetting_the_statement_of_an_end_makes_fact_and_edge_current_again(store):
    e1 = _event("Ann tools", "Ann uses Vim and Git.", participants=["Ann"], happened_start="2026-01-10")
    e2 = _event("Ann drops Vim", "Ann stopped using Vim.", participants=["Ann"], happened_start="2026-03-02")
    _project([e1], [e2])
    assert ("uses", "Vim") not in _current("Ann") and _edges("Ann")["Vim"] is False
    ended = GraphFact.get((GraphFact.key == "uses") & (GraphFact.value == "Vim"))
    ended_at = ended.valid_to
    revision = get_namespace("ns").revision

    forget_event(e2)
    assert ("uses", "Vim") in _current("Ann") and _edges("Ann")["Vim"] is True
    vim = GraphFact.get_by_id(ended.id)
    assert (vim.status, vim.valid_to) == ("active", None)
    assert get_namespace("ns").revision > revision  # caches keyed on the revision see the change

    restore_event(e2)
    assert ("uses", "Vim") not in _current("Ann") and _edges("Ann")["Vim"] is False
    vim = GraphFact.get_by_id(ended.id)
    assert (vim.status, vim.valid_to) == ("superseded", ended_at)
    assert ("uses", "Git") in _current("Ann")  # what no reason ended is untouched throughout
    assert verify("ns").ok


def test_a_second_statement_of_the_end_keeps_it_ended_until_both_are_forgotten(store):
    e1 = _event("Ann tools", "Ann uses Vim.", participants=["Ann"], happened_start="2026-01-10")
    e2 = _event("Ann drops Vim", "Ann stopped using Vim.", participants=["Ann"], happened_start="2026-03-02")
    e3 = _event("Ann and Vim", "Ann no longer uses Vim.", participants=["Ann"], happened_start="2026-04-02")
    _project([e1], [e2], [e3])
    forget_event(e2)
    assert ("uses", "Vim") not in _current("Ann")
    forget_event(e3)
    assert ("uses", "Vim") in _current("Ann")


def test_a_superseded_statement_of_the_end_still_ends(store):
    """A superseded event is history that happened (a later event updated it), not a retraction."""
    e1 = _event("Ann tools", "Ann uses Vim.", participants=["Ann"], happened_start="2026-01-10")
    e2 = _event("Ann drops Vim", "Ann stopped using Vim.", participants=["Ann"], happened_start="2026-03-02")
    _project([e1], [e2])
    e3 = _event("Ann drops Vim again", "Ann stopped using Vim for good.", participants=["Ann"], supersedes=[e2])
    assert Event.get_by_id(e2).status == "superseded"
    forget_event(e3)
    assert ("uses", "Vim") not in _current("Ann")


def test_forgetting_the_newer_value_of_a_functional_key_brings_back_the_older(store):
    e1, e2 = _event(happened_start="2024-01-01"), _event(happened_start="2025-06-01")
    pid = _apply([e1], [_node("p", "Ann", "person", [e1], facts=[("lives_in", "Paris", None)])]).node_ids[0]
    _apply([e2], [_node("p", "Ann", "person", [e2], facts=[("lives_in", "Berlin", None)])])
    paris = GraphFact.get(GraphFact.value == "Paris")
    berlin_from = GraphFact.get(GraphFact.value == "Berlin").valid_from

    forget_event(e2)
    assert _facts(pid, "lives_in") == [("active", "Paris"), ("active", "Berlin")]
    view = node_view(pid)
    assert [f.value for f in view.current_facts] == ["Paris"]  # Berlin cites no visible event
    assert GraphFact.get_by_id(paris.id).valid_to is None

    restore_event(e2)
    assert _facts(pid, "lives_in") == [("superseded", "Paris"), ("active", "Berlin")]
    assert GraphFact.get_by_id(paris.id).valid_to == berlin_from


def test_a_chain_of_values_goes_back_only_to_the_newest_that_still_stands(store):
    e1, e2, e3 = (_event(happened_start=f"202{i}-01-01") for i in (3, 4, 5))

    def ann(event, city):
        return [
            _node("p", "Ann", "person", [event], facts=[("lives_in", city, None)]),
            _node("c", city, "place", [event]),
        ]

    pid = None
    for event, city in ((e1, "Paris"), (e2, "Berlin"), (e3, "Oslo")):
        result = _apply([event], ann(event, city), [_edge("p", "c", "lives_in", [event])])
        pid = pid or result.node_ids[0]

    def shown() -> tuple[list[str], dict[str, bool]]:
        view = node_view(pid)
        return [f.value for f in view.current_facts], {e.other_name: e.current for e in view.edges_out}

    forget_event(e2)  # the middle value: Oslo still holds the slot
    assert shown() == (["Oslo"], {"Paris": False, "Oslo": True})
    forget_event(e3)  # both newer values gone: Paris is where Ann lives
    assert shown() == (["Paris"], {"Paris": True})
    restore_event(e2)  # Berlin is back and ends Paris again
    assert shown() == (["Berlin"], {"Paris": False, "Berlin": True})
    restore_event(e3)
    assert shown() == (["Oslo"], {"Paris": False, "Berlin": False, "Oslo": True})
    statuses = {GraphNode.get_by_id(e.to_node_id).name: e.status for e in GraphEdge.select()}
    assert statuses == {"Paris": "superseded", "Berlin": "superseded", "Oslo": "active"}
    assert verify("ns").ok


def test_an_older_value_written_as_history_becomes_current_when_the_newer_is_forgotten(store):
    new = _event(happened_start="2024-03", precision="month", basis="explicit")
    old = _event(happened_start="2019", precision="year", basis="explicit")
    pid = _apply([new], [_node("p", "Ann", "person", [new], facts=[("lives_in", "Berlin", None)])]).node_ids[0]
    _apply([old], [_node("p", "Ann", "person", [old], facts=[("lives_in", "Paris", None)])])
    assert _facts(pid, "lives_in") == [("active", "Berlin"), ("superseded", "Paris")]
    forget_event(new)
    assert [f.value for f in node_view(pid).current_facts] == ["Paris"]
    restore_event(new)
    assert _facts(pid, "lives_in") == [("active", "Berlin"), ("superseded", "Paris")]
    assert GraphFact.get(GraphFact.value == "Paris").valid_to == "2024-03"


def test_history_without_a_recorded_reason_stays_history(store):
    """Records ended before reasons were kept (schema < 14) have no rows: nothing to revive them by."""
    e1, e2 = _event(happened_start="2024-01-01"), _event(happened_start="2025-06-01")
    pid = _apply([e1], [_node("p", "Ann", "person", [e1], facts=[("lives_in", "Paris", None)])]).node_ids[0]
    _apply([e2], [_node("p", "Ann", "person", [e2], facts=[("lives_in", "Berlin", None)])])
    GraphEnding.delete().execute()
    forget_event(e2)
    assert _facts(pid, "lives_in") == [("superseded", "Paris"), ("active", "Berlin")]
    assert node_view(pid).current_facts == ()


def test_a_stated_history_is_not_revived_by_forgetting_something_else(store):
    e1 = _event("Ann's past", "Ann no longer uses Emacs.", participants=["Ann"], happened_start="2026-03-05")
    e2 = _event("Ann tools", "Ann uses Git.", participants=["Ann"], happened_start="2026-03-06")
    _project([e1], [e2])
    forget_event(e2)
    assert ("uses", "Emacs") not in _current("Ann")
    assert GraphFact.get(GraphFact.value == "Emacs").status == "superseded"


def test_graph_search_sees_a_revived_fact(store):
    e1, e2 = _event(happened_start="2024-01-01"), _event(happened_start="2025-06-01")
    _apply([e1], [_node("p", "Ann", "person", [e1], facts=[("lives_in", "Paris", None)])])
    _apply([e2], [_node("p", "Ann", "person", [e2], facts=[("lives_in", "Berlin", None)])])
    assert [h.current_state for h in search_graph("ns", "Ann")] == ["lives_in: Berlin"]
    forget_event(e2)
    hits = search_graph("ns", "Paris")
    assert [h.current_state for h in hits] == ["lives_in: Paris"] and "currentFacts" in hits[0].matched_fields


def test_views_say_why_a_record_is_history_while_the_reason_is_visible(store):
    e1 = _event("Ann tools", "Ann uses Vim.", participants=["Ann"], happened_start="2026-01-10")
    e2 = _event("Ann drops Vim", "Ann stopped using Vim.", participants=["Ann"], happened_start="2026-03-02")
    _project([e1], [e2])
    view = node_view(GraphNode.get(GraphNode.name == "Ann").id)
    (vim,) = [f for f in view.historical_facts if f.value == "Vim"]
    assert [(r.cause, r.id, r.text) for r in vim.ended_by] == [("event", e2, "Ann drops Vim")]
    (edge,) = [e for e in view.edges_out if e.other_name == "Vim"]
    assert [(r.cause, r.id) for r in edge.ended_by] == [("event", e2)]
    assert describe(vim.ended_by) == f"said ended in event {e2} “Ann drops Vim”"

    f1, f2, f3 = (_event(happened_start=f"202{i}-01-01") for i in (3, 4, 5))
    pid = None
    for event, city in ((f1, "Paris"), (f2, "Berlin"), (f3, "Oslo")):
        result = _apply(
            [event],
            [_node("p", "Bo", "person", [event], facts=[("lives_in", city, None)]), _node("c", city, "place", [event])],
            [_edge("p", "c", "lives_in", [event])],
        )
        pid = pid or result.node_ids[0]
    history = {f.value: [(r.cause, r.text) for r in f.ended_by] for f in node_view(pid).historical_facts}
    assert history == {"Paris": [("fact", "Berlin")], "Berlin": [("fact", "Oslo")]}
    edges = {e.other_name: [(r.cause, r.text) for r in e.ended_by] for e in node_view(pid).edges_out}
    assert edges == {"Oslo": [], "Paris": [("edge", "Berlin")], "Berlin": [("edge", "Oslo")]}
    forget_event(f2)  # Berlin is no longer shown, and neither is the reason it gave Paris
    history = {f.value: [(r.cause, r.text) for r in f.ended_by] for f in node_view(pid).historical_facts}
    assert history == {"Paris": []}


def test_verify_reports_reasons_that_disagree_with_the_graph(store):
    e1 = _event("Ann tools", "Ann uses Vim.", participants=["Ann"], happened_start="2026-01-10")
    e2 = _event("Ann drops Vim", "Ann stopped using Vim.", participants=["Ann"], happened_start="2026-03-02")
    _project([e1], [e2])
    assert verify("ns").ok
    vim = GraphFact.get(GraphFact.value == "Vim")
    GraphFact.update(status="active", valid_to=None).where(GraphFact.id == vim.id).execute()  # a bad write
    GraphEnding.create(
        kind="edge",
        record_id=9999,
        cause_kind="event",
        cause_id=e2,
        prior_status="active",
        created_at="2026-03-02T00:00:00+00:00",
    )
    problems = verify("ns").problems
    assert f"graph fact {vim.id} is current though event {e2} says it ended" in problems
    assert "graph ending of edge 9999, which does not exist" in problems


def test_a_value_stated_again_while_its_rival_is_forgotten_stays_when_the_rival_returns(store):
    """Forget Oslo (Berlin is current again), say Berlin again, restore Oslo: the later statement wins,
    so Berlin stays current and Oslo is history, rather than each ending the other."""
    e1, e2, e3 = (_event(happened_start=d) for d in ("2023-01-01", "2024-01-01", "2025-01-01"))
    pid = _apply([e1], [_node("p", "Ann", "person", [e1], facts=[("lives_in", "Berlin", None)])]).node_ids[0]
    _apply([e2], [_node("p", "Ann", "person", [e2], facts=[("lives_in", "Oslo", None)])])
    forget_event(e2)
    _apply([e3], [_node("p", "Ann", "person", [e3], facts=[("lives_in", "Berlin", None)])])
    restore_event(e2)
    assert [f.value for f in node_view(pid).current_facts] == ["Berlin"]
    assert _facts(pid, "lives_in") == [("active", "Berlin"), ("superseded", "Oslo")]
    assert verify("ns").ok


def test_a_use_said_again_after_its_end_was_forgotten_survives_the_end_coming_back(store):
    e1 = _event("Ann tools", "Ann uses Vim.", participants=["Ann"], happened_start="2026-01-10")
    e2 = _event("Ann drops Vim", "Ann stopped using Vim.", participants=["Ann"], happened_start="2026-03-02")
    _project([e1], [e2])
    forget_event(e2)
    e3 = _event("Ann and Vim", "Ann uses Vim every day.", participants=["Ann"], happened_start="2026-05-01")
    _project([e3])
    restore_event(e2)  # the end was said in March; using Vim was said again in May
    assert ("uses", "Vim") in _current("Ann") and _edges("Ann")["Vim"] is True
    assert verify("ns").ok
