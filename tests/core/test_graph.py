"""Graph projection: validation (§6.2), functional vs multi-valued relations, the effective
view (§6.3), the graph job through the derive loop, and the offline projector."""

from __future__ import annotations

import pytest

from core.db import write_transaction
from core.errors import InvalidInputError, NotFoundError
from core.models import Event, GraphEdge, GraphFact, GraphNode, GraphSource, Job
from core.providers.base import BlockSummary, Extraction, ProviderOutputError
from core.providers.offline_graph import project_graph_offline
from core.services import derive
from core.services import jobs as jobsvc
from core.services.events import forget_event, queue_graph_projection, write_event
from core.services.graph import GRAPH_PROVENANCE_LIMIT, find_node, list_nodes, node_view
from core.services.graph_apply import apply_projection
from core.services.graph_job import projection_context, run_graph_job
from core.services.graph_vocab import FUNCTIONAL_RELATIONS, is_functional
from core.services.spaces import get_or_create_namespace

# ----------------------------------------------------------------------------- helpers


def _event(
    title: str = "an event",
    summary: str = "something happened",
    *,
    participants=(),
    ns: str = "ns",
    supersedes=(),
    **temporal,
) -> int:
    draft = {
        "title": title,
        "summary": summary,
        "temporal": {"participants": list(participants), **temporal},
        "relations": {"supersedes": list(supersedes)} if supersedes else {},
    }
    with write_transaction():
        space = get_or_create_namespace(ns)
        return write_event(space, draft, block=None, formed_turn=0).id


def _ns_id(name: str = "ns") -> int:
    with write_transaction():
        return get_or_create_namespace(name).id


def _node(
    ref: str,
    name: str,
    node_type: str,
    ids,
    *,
    facts=(),
    aliases=(),
    tags=(),
    alias_ids=None,
    tag_ids=None,
    name_ids=None,
    **extra,
) -> dict:
    ids = list(ids)
    return {
        "ref": ref,
        "name": name,
        "type": node_type,
        "aliases": list(aliases),
        "tags": list(tags),
        "provenance": {
            "name": ids if name_ids is None else list(name_ids),
            "aliases": [
                {"value": a, "source_event_ids": list(ids if alias_ids is None else alias_ids)} for a in aliases
            ]
            if alias_ids != "none"
            else [],
            "tags": [{"value": t, "source_event_ids": list(ids if tag_ids is None else tag_ids)} for t in tags]
            if tag_ids != "none"
            else [],
        },
        "facts": [{"key": k, "value": v, "source_event_ids": list(ids if s is None else s)} for k, v, s in facts],
        "source_event_ids": ids,
        **extra,
    }


def _edge(source: str, target: str, relation: str, ids, **extra) -> dict:
    return {"from_ref": source, "to_ref": target, "relation": relation, "source_event_ids": list(ids), **extra}


def _apply(batch, nodes, edges=(), reason: str = "ok", ns: str = "ns"):
    return apply_projection(_ns_id(ns), list(batch), {"reason": reason, "nodes": list(nodes), "edges": list(edges)})


def _counts() -> tuple[int, int, int, int]:
    return (
        GraphNode.select().count(),
        GraphFact.select().count(),
        GraphEdge.select().count(),
        GraphSource.select().count(),
    )


def _facts(node_id: int, key: str) -> list[tuple[str, object]]:
    return [
        (f.status, f.value)
        for f in GraphFact.select().where((GraphFact.node == node_id) & (GraphFact.key == key)).order_by(GraphFact.id)
    ]


# ----------------------------------------------------------------------------- application


def test_projection_writes_nodes_facts_edges_sources_and_participant_ids(store):
    e1 = _event("Caroline moved to Berlin", participants=["Caroline"])
    result = _apply(
        [e1],
        [
            _node("p", "Caroline", "person", [e1], facts=[("lives_in", "Berlin", None)]),
            _node("c", "Berlin", "place", [e1]),
        ],
        [_edge("p", "c", "lives_in", [e1])],
    )
    assert result.warnings == []
    caroline, berlin = (GraphNode.get_by_id(i) for i in result.node_ids)
    assert (caroline.name, caroline.type, caroline.status, caroline.confidence) == ("Caroline", "person", "active", 0.8)
    assert caroline.provenance["name"] == [e1]
    assert _facts(caroline.id, "lives_in") == [("active", "Berlin")]
    edge = GraphEdge.get_by_id(result.edge_ids[0])
    assert (edge.from_node_id, edge.to_node_id, edge.relation, edge.status) == (
        caroline.id,
        berlin.id,
        "lives_in",
        "active",
    )
    kinds = sorted(s.kind for s in GraphSource.select())
    assert kinds == ["edge", "fact", "node", "node"]
    assert all(s.event_id == e1 for s in GraphSource.select())
    assert Event.get_by_id(e1).participant_node_ids == sorted([caroline.id, berlin.id])
    view = node_view(caroline.id)
    assert view.current_state == "lives_in: Berlin"
    assert [(e.relation, e.other_name, e.current) for e in view.edges_out] == [("lives_in", "Berlin", True)]
    assert [(e.relation, e.other_name) for e in node_view(berlin.id).edges_in] == [("lives_in", "Caroline")]


def test_valid_from_defaults_to_the_latest_cited_event_time(store):
    early = _event("a", happened_start="2023-01", precision="month", basis="explicit")
    late = _event("b", happened_start="2023-06-02", precision="day", basis="explicit")
    _apply([early, late], [_node("p", "Ann", "person", [early, late], facts=[("role", "nurse", None)])])
    assert GraphFact.get().valid_from == "2023-06-02"
    _apply([early], [_node("p", "Ann", "person", [early], facts=[("hobby", "chess", None)], valid_from="2022")])
    assert GraphFact.get(GraphFact.key == "hobby").valid_from == "2022"


def test_sources_must_be_events_of_the_batch(store):
    inside, outside = _event("in"), _event("out")
    with pytest.raises(ProviderOutputError, match="provenance|source"):
        _apply([inside], [_node("p", "Ann", "person", [outside])])
    assert _counts() == (0, 0, 0, 0)
    result = _apply(
        [inside],
        [
            _node(
                "p",
                "Ann",
                "person",
                [inside],
                facts=[("role", "nurse", [inside, outside]), ("hobby", "chess", [inside])],
            ),
            _node("q", "Bo", "person", [inside]),
        ],
        [_edge("p", "q", "knows", [outside]), _edge("p", "q", "likes", [inside])],
    )
    assert any("fact 0" in w and "no valid source" in w for w in result.warnings)
    assert any("edge 0" in w and "no valid source" in w for w in result.warnings)
    assert [f.key for f in GraphFact.select()] == ["hobby"]
    assert [e.relation for e in GraphEdge.select()] == ["likes"]


def test_missing_name_provenance_fails_the_job_with_nothing_written(store):
    e1 = _event()
    ok = _node("a", "Ann", "person", [e1], facts=[("role", "nurse", None)])
    bad = _node("b", "Bo", "person", [e1], name_ids=[])
    with pytest.raises(ProviderOutputError, match="provenance"):
        _apply([e1], [ok, bad], [_edge("a", "b", "knows", [e1])])
    assert _counts() == (0, 0, 0, 0)
    assert Event.get_by_id(e1).participant_node_ids == []
    no_prov = dict(_node("c", "Cy", "person", [e1]))
    del no_prov["provenance"]
    with pytest.raises(ProviderOutputError, match="provenance.name"):
        _apply([e1], [no_prov])


def test_malformed_nodes_are_dropped_with_a_warning(store):
    e1 = _event()
    result = _apply(
        [e1],
        [
            _node("a", "Ann", "animal", [e1]),
            _node("", "Bo", "person", [e1]),
            "junk",
            _node("c", "Cy", "person", [e1]),
        ],
    )
    assert len(result.warnings) == 3 and len(result.node_ids) == 1
    with pytest.raises(ProviderOutputError):
        apply_projection(_ns_id(), [e1], {"nodes": "nope", "edges": []})
    with pytest.raises(ProviderOutputError):
        apply_projection(_ns_id(), [e1], ["not", "an", "object"])


def test_unproven_alias_and_tag_are_dropped_with_warnings(store):
    e1, e2 = _event(), _event()
    node = _node("p", "Robert", "person", [e1], aliases=["Bob", "Robert"], tags=["engineer"], alias_ids="none")
    node["aliases"].append("Rob")
    node["provenance"]["aliases"] = [
        {"value": "Rob", "source_event_ids": [e1]},
        {"value": "Bob", "source_event_ids": [e2]},
    ]
    node["provenance"]["tags"] = [{"value": "engineer", "source_event_ids": []}]
    result = _apply([e1], [node])
    dropped = [w for w in result.warnings if w.startswith("Dropped metadata value")]
    assert len(dropped) == 2
    assert any("'Bob'" in w for w in dropped) and any("'engineer'" in w for w in dropped)
    stored = GraphNode.get()
    assert stored.aliases == ["Rob"] and stored.tags == []
    assert node_view(stored.id).aliases == ("Rob",)


def test_entity_resolution_by_name_and_proven_alias(store):
    e1, e2, e3, e4 = (_event() for _ in range(4))
    first = _apply([e1], [_node("p", "Robert Smith", "person", [e1], aliases=["Bob"])]).node_ids[0]
    # Same type, name matches after normalisation (case, spaces, _ and -).
    assert _apply([e2], [_node("p", "robert-smith", "person", [e2])]).node_ids == [first]
    # A proven proposal alias equal to the stored name merges; the new name becomes an alias.
    merged = _apply([e3], [_node("p", "Bobby", "person", [e3], aliases=["Robert Smith"])]).node_ids
    assert merged == [first]
    node = GraphNode.get_by_id(first)
    assert node.name == "Robert Smith" and set(node.aliases) == {"Bob", "Bobby"}
    assert node.provenance["name"] == [e1, e2, e3]
    bobby = next(a for a in node.provenance["aliases"] if a["value"] == "Bobby")
    assert bobby["source_event_ids"] == [e3]
    # An unproven alias never merges: a new node is created.
    unproven = _node("p", "R. Smith", "person", [e4], aliases=["Robert Smith"], alias_ids="none")
    assert _apply([e4], [unproven]).node_ids != [first]
    assert GraphNode.select().count() == 2


def test_hidden_alias_does_not_merge(store):
    e1, e2, e3 = _event(), _event(), _event()
    node = _node("p", "Robert", "person", [e1], aliases=["Bob"], alias_ids=[e2])
    node["source_event_ids"] = [e1, e2]
    first = _apply([e1, e2], [node]).node_ids[0]
    forget_event(e2)
    assert node_view(first).aliases == ()
    assert _apply([e3], [_node("p", "Bob", "person", [e3])]).node_ids != [first]


def test_same_name_different_type_gives_two_nodes(store):
    e1 = _event()
    result = _apply([e1], [_node("a", "Jordan", "person", [e1]), _node("b", "Jordan", "place", [e1])])
    assert len(set(result.node_ids)) == 2
    assert sorted(n.type for n in GraphNode.select()) == ["person", "place"]


def test_node_citing_a_now_forgotten_event_fails_and_facts_citing_it_are_rejected(store):
    keep, gone = _event("kept"), _event("gone")
    forget_event(gone)
    with pytest.raises(ProviderOutputError):
        _apply([keep, gone], [_node("p", "Ann", "person", [gone])])
    assert _counts() == (0, 0, 0, 0)
    result = _apply([keep, gone], [_node("p", "Ann", "person", [keep], facts=[("role", "nurse", [keep, gone])])])
    assert GraphFact.select().count() == 0
    assert any("no valid source" in w for w in result.warnings)


def test_current_facts_and_edges_need_an_active_source(store):
    old = _event("old")
    new = _event("new", supersedes=[old])
    assert Event.get_by_id(old).status == "superseded"
    result = _apply(
        [old, new],
        [
            _node("p", "Ann", "person", [old, new], facts=[("role", "nurse", [old]), ("hobby", "chess", [old, new])]),
            _node("q", "Bo", "person", [old]),
        ],
        [_edge("p", "q", "knows", [old]), _edge("p", "q", "married_to", [old], status="superseded")],
    )
    assert [f.key for f in GraphFact.select()] == ["hobby"]
    assert [(e.relation, e.status) for e in GraphEdge.select()] == [("married_to", "superseded")]
    assert sum("needs an active source" in w for w in result.warnings) == 2


def test_caps_state_fact_and_confidence(store):
    e1 = _event()
    aliases = [f"Alias {i}" for i in range(25)]
    node = _node(
        "p",
        "Ann",
        "person",
        [e1],
        aliases=aliases,
        tags=[f"t{i}" for i in range(15)],
        facts=[("k" * 200, ["x"] * 1 + [f"v{i}" for i in range(50)], None)],
        confidence=0.55,
    )
    node["state"] = "on leave"
    pid = _apply([e1], [node]).node_ids[0]
    stored = GraphNode.get_by_id(pid)
    assert len(stored.aliases) == 20 and len(stored.tags) == 12 and stored.confidence == 0.55
    long_fact = GraphFact.get(GraphFact.key != "state")
    assert len(long_fact.key) == 160 and len(long_fact.value) == 40 and long_fact.confidence == 0.55
    assert _facts(pid, "state") == [("active", "on leave")]
    assert node_view(pid).current_state.startswith("state: on leave")


def test_legacy_node_without_provenance_shows_metadata_only_when_all_sources_are_visible(store):
    e1, e2 = _event(), _event()
    with write_transaction():
        node = GraphNode.create(
            namespace=_ns_id(),
            name="Old",
            name_norm="old",
            type="tool",
            aliases=["Legacy"],
            tags=["db"],
            provenance={},
            created_at="2024-01-01T00:00:00+00:00",
            updated_at="2024-01-01T00:00:00+00:00",
        )
        GraphSource.insert_many([{"kind": "node", "record_id": node.id, "event": e} for e in (e1, e2)]).execute()
    view = node_view(node.id)
    assert view.aliases == ("Legacy",) and view.tags == ("db",)
    forget_event(e2)
    view = node_view(node.id)
    assert view.aliases == () and view.tags == ()
    e3 = _event()
    assert _apply([e3], [_node("t", "Legacy", "tool", [e3])]).node_ids != [node.id]  # hidden alias: no merge
    restored = _event()
    assert _apply([restored], [_node("t", "Old", "tool", [restored])]).node_ids == [node.id]
    merged = GraphNode.get_by_id(node.id)
    assert merged.aliases == ["Legacy"] and merged.provenance["name"] == [e1, e2, restored]
    assert node_view(node.id).aliases == ("Legacy",)  # once seeded, one visible source is enough


# ----------------------------------------------------------------------------- functional vs multi-valued


def test_functional_relations_set():
    for key in (
        "lives_in",
        "works_at",
        "role",
        "job_title",
        "employer",
        "age",
        "status",
        "located_in",
        "current_project",
        "relationship_status",
        "state",
        "位于",
        "属于",
    ):
        assert key in FUNCTIONAL_RELATIONS
    assert is_functional("Lives In") and is_functional("works-at")
    for key in ("likes", "uses", "hobby", "has_pet", "knows", "visited", "使用"):
        assert not is_functional(key)


def test_multi_valued_key_keeps_every_value_current(store):
    e1, e2, e3 = _event(), _event(), _event()
    pid = _apply([e1], [_node("p", "Ann", "person", [e1], facts=[("uses", "Vim", None)])]).node_ids[0]
    _apply([e2], [_node("p", "Ann", "person", [e2], facts=[("uses", "Git", None)])])
    _apply([e3], [_node("p", "Ann", "person", [e3], facts=[("uses", "vim", None)])])
    assert _facts(pid, "uses") == [("active", "Vim"), ("active", "Git")]
    vim = GraphFact.get((GraphFact.key == "uses") & (GraphFact.value == "Vim"))
    assert sorted(
        s.event_id for s in GraphSource.select().where((GraphSource.kind == "fact") & (GraphSource.record_id == vim.id))
    ) == [e1, e3]
    assert node_view(pid).current_state == "uses: Vim\nuses: Git"


def test_functional_key_supersedes_the_previous_value(store):
    e1, e2 = _event(), _event()
    pid = _apply([e1], [_node("p", "Ann", "person", [e1], facts=[("lives_in", "Paris", None)])]).node_ids[0]
    _apply([e2], [_node("p", "Ann", "person", [e2], facts=[("Lives In", "Berlin", None)])])
    assert _facts(pid, "lives_in") == [("superseded", "Paris"), ("active", "Berlin")]
    paris, berlin = GraphFact.select().where(GraphFact.key == "lives_in").order_by(GraphFact.id)
    assert paris.valid_to == berlin.valid_from
    view = node_view(pid)
    assert [f.value for f in view.current_facts] == ["Berlin"]
    assert [(f.value, f.status) for f in view.historical_facts] == [("Paris", "superseded")]


def test_an_older_functional_value_arriving_late_becomes_history(store):
    new = _event(happened_start="2024-03", precision="month", basis="explicit")
    old = _event(happened_start="2019", precision="year", basis="explicit")
    pid = _apply([new], [_node("p", "Ann", "person", [new], facts=[("lives_in", "Berlin", None)])]).node_ids[0]
    _apply([old], [_node("p", "Ann", "person", [old], facts=[("lives_in", "Paris", None)])])
    assert _facts(pid, "lives_in") == [("active", "Berlin"), ("superseded", "Paris")]
    assert GraphFact.get(GraphFact.value == "Paris").valid_to == "2024-03"


def test_a_move_dated_to_a_week_ends_a_home_said_during_that_week(store):
    """ "I live in Paris" said on Tuesday, then "I moved to Berlin last week" (the week holding that
    Tuesday): Berlin is where Ann lives now, and Paris ends when it was last said, not before it began."""
    said = _event(happened_start="2026-02-10T21:10:00+01:00", precision="day", basis="explicit")
    moved = _event(happened_start="2026-02-09", happened_end="2026-02-15", precision="range", basis="explicit")
    pid = _apply([said], [_node("p", "Ann", "person", [said], facts=[("lives_in", "Paris", None)])]).node_ids[0]
    _apply([moved], [_node("p", "Ann", "person", [moved], facts=[("lives_in", "Berlin", None)])])
    assert _facts(pid, "lives_in") == [("superseded", "Paris"), ("active", "Berlin")]
    paris = GraphFact.get(GraphFact.value == "Paris")
    assert paris.valid_to == paris.valid_from == "2026-02-10T21:10:00+01:00"


def test_an_older_statement_of_an_ended_value_joins_its_history(store):
    """Read in the order threads were sealed: "I'm vegetarian" (Tuesday), "not vegetarian since last
    week", then January's "I'm vegetarian". The January statement belongs to the ended stretch, which
    now begins in January; no current vegetarian record comes back."""
    tuesday = _event(happened_start="2026-02-10T21:10:00+01:00", precision="day", basis="explicit")
    change = _event(happened_start="2026-02-09", happened_end="2026-02-15", precision="range", basis="explicit")
    january = _event(happened_start="2026-01-20", precision="day", basis="explicit")
    pid = _apply([tuesday], [_node("p", "Ann", "person", [tuesday], facts=[("diet", "vegetarian", None)])]).node_ids[0]
    ended = _node("p", "Ann", "person", [change], facts=[("diet", "pescatarian", None)])
    ended["facts"].append({"key": "diet", "value": "vegetarian", "status": "superseded", "source_event_ids": [change]})
    _apply([change], [ended])
    _apply([january], [_node("p", "Ann", "person", [january], facts=[("diet", "vegetarian", None)])])
    assert sorted(_facts(pid, "diet")) == [("active", "pescatarian"), ("superseded", "vegetarian")]
    vegetarian = GraphFact.get(GraphFact.value == "vegetarian")
    assert (vegetarian.valid_from, vegetarian.valid_to) == ("2026-01-20", "2026-02-10T21:10:00+01:00")
    cited = {
        s.event_id
        for s in GraphSource.select().where((GraphSource.kind == "fact") & (GraphSource.record_id == vegetarian.id))
    }
    assert cited == {tuesday, change, january}
    assert [f.value for f in node_view(pid).current_facts] == ["pescatarian"]


def test_a_current_value_said_earlier_held_since_then_unless_another_came_between(store):
    """An older statement of the current value moves its start back; not past a stretch of another
    value of a one-value key (Ann lived in Dublin until 2024, so "lives in Utrecht" in 2023 does not
    make Utrecht hers since 2023)."""
    e1, e2 = (_event(happened_start=t, precision="year", basis="explicit") for t in ("2024", "2019"))
    _apply([e1], [_node("p", "Ann", "person", [e1], facts=[("uses", "Vim", None)])])
    _apply([e2], [_node("p", "Ann", "person", [e2], facts=[("uses", "Vim", None)])])
    assert [(f.status, f.valid_from) for f in GraphFact.select().where(GraphFact.key == "uses")] == [("active", "2019")]

    dublin, utrecht, late = (
        _event(happened_start=t, precision="year", basis="explicit") for t in ("2020", "2024", "2023")
    )
    bo = _apply([dublin], [_node("b", "Bo", "person", [dublin], facts=[("lives_in", "Dublin", None)])]).node_ids[0]
    _apply([utrecht], [_node("b", "Bo", "person", [utrecht], facts=[("lives_in", "Utrecht", None)])])
    _apply([late], [_node("b", "Bo", "person", [late], facts=[("lives_in", "Utrecht", None)])])
    homes = {
        f.value: (f.status, f.valid_from, f.valid_to)
        for f in GraphFact.select().where((GraphFact.node == bo) & (GraphFact.key == "lives_in"))
    }
    assert homes == {"Dublin": ("superseded", "2020", "2024"), "Utrecht": ("active", "2024", None)}


def test_an_older_statement_of_an_ended_edge_joins_its_history(store):
    e2024, e2025, e2023 = (
        _event(happened_start=t, precision="year", basis="explicit") for t in ("2024", "2025", "2023")
    )
    nodes = lambda ids: [_node("p", "Ann", "person", ids), _node("t", "Vim", "tool", ids)]  # noqa: E731
    _apply([e2024], nodes([e2024]), [_edge("p", "t", "uses", [e2024])])
    _apply([e2025], nodes([e2025]), [_edge("p", "t", "uses", [e2025], status="superseded")])
    _apply([e2023], nodes([e2023]), [_edge("p", "t", "uses", [e2023])])
    assert [(e.status, e.valid_from, e.valid_to) for e in GraphEdge.select()] == [("superseded", "2023", "2025")]


def test_edges_functional_supersede_multi_accumulate_same_merges(store):
    e1, e2, e3 = _event(), _event(), _event()
    people = lambda ids: [  # noqa: E731
        _node("p", "Ann", "person", ids),
        _node("a", "Acme", "organization", ids),
        _node("b", "Beta", "organization", ids),
        _node("v", "Vim", "tool", ids),
        _node("g", "Git", "tool", ids),
    ]
    _apply([e1], people([e1]), [_edge("p", "a", "works_at", [e1]), _edge("p", "v", "uses", [e1])])
    _apply([e2], people([e2]), [_edge("p", "b", "works at", [e2]), _edge("p", "g", "uses", [e2])])
    _apply([e3], people([e3]), [_edge("p", "g", "uses", [e3])])
    rows = {(e.to_node.name, e.relation): e for e in GraphEdge.select()}
    assert {k: e.status for k, e in rows.items()} == {
        ("Acme", "works_at"): "superseded",
        ("Beta", "works_at"): "active",
        ("Vim", "uses"): "active",
        ("Git", "uses"): "active",
    }
    assert rows[("Acme", "works_at")].valid_to == rows[("Beta", "works_at")].valid_from
    git = rows[("Git", "uses")]
    assert sorted(
        s.event_id for s in GraphSource.select().where((GraphSource.kind == "edge") & (GraphSource.record_id == git.id))
    ) == [e2, e3]
    ann = GraphNode.get(GraphNode.name == "Ann")
    out = node_view(ann.id).edges_out
    assert [(e.other_name, e.current) for e in out] == [("Vim", True), ("Beta", True), ("Git", True), ("Acme", False)]


def test_edges_need_refs_of_this_projection_and_no_self_loop(store):
    e1 = _event()
    result = _apply(
        [e1],
        [
            _node("a", "Ann", "person", [e1]),
            _node("a2", "ann", "person", [e1]),
            _node("b", "Bo", "person", [e1]),
        ],
        [
            _edge("a", "missing", "knows", [e1]),
            _edge("a", "a", "knows", [e1]),
            _edge("a", "a2", "knows", [e1]),
            _edge("a", "b", "  ", [e1]),
            _edge("a", "b", "knows", [e1]),
        ],
    )
    assert GraphEdge.select().count() == 1
    assert sum("self-loop" in w for w in result.warnings) == 2
    assert any("from_ref and to_ref" in w for w in result.warnings)
    assert any("empty relation" in w for w in result.warnings)
    # A ref of an earlier projection is not a ref of this one.
    e2 = _event()
    later = _apply([e2], [_node("c", "Cy", "person", [e2])], [_edge("c", "b", "knows", [e2])])
    assert later.edge_ids == [] and GraphEdge.select().count() == 1


# ----------------------------------------------------------------------------- effective view


def test_forgotten_sources_hide_records_and_empty_nodes(store):
    e1, e2 = _event(), _event()
    ids = _apply(
        [e1, e2],
        [
            _node("p", "Ann", "person", [e1, e2], facts=[("role", "nurse", [e1]), ("hobby", "chess", [e2])]),
            _node("t", "Tromsø", "place", [e2]),
        ],
        [_edge("p", "t", "visited", [e2])],
    ).node_ids
    ann, place = ids
    forget_event(e2)
    view = node_view(ann)
    assert [f.key for f in view.current_facts] == ["role"]
    assert view.edges_out == () and [e.id for e in view.events] == [e1]
    with pytest.raises(NotFoundError, match=str(place)):
        node_view(place)
    assert [r.name for r in list_nodes("ns")] == ["Ann"]
    forget_event(e1)
    with pytest.raises(NotFoundError):
        node_view(ann)
    assert list_nodes("ns") == []


def test_archived_and_disputed_records(store):
    e1 = _event()
    pid = _apply(
        [e1],
        [
            _node(
                "p",
                "Ann",
                "person",
                [e1],
                facts=[
                    ("role", "nurse", None),
                    ("hobbies", ["chess", "go"], None),
                ],
            )
        ],
    ).node_ids[0]
    GraphFact.update(status="disputed").where(GraphFact.key == "role").execute()
    assert node_view(pid).current_state == "role: nurse [disputed]\nhobbies: chess、go"
    GraphFact.update(status="archived").where(GraphFact.key == "role").execute()
    assert [f.key for f in node_view(pid).current_facts] == ["hobbies"]
    GraphNode.update(status="archived").execute()
    with pytest.raises(NotFoundError):
        node_view(pid)


def test_superseded_source_keeps_history_but_not_current_records(store):
    old = _event("old")
    pid = _apply([old], [_node("p", "Ann", "person", [old], facts=[("hobby", "chess", None)])]).node_ids[0]
    GraphFact.update(status="superseded").execute()
    _event("new", supersedes=[old])
    view = node_view(pid)
    assert view.current_facts == () and [f.value for f in view.historical_facts] == ["chess"]
    GraphFact.update(status="active").execute()
    view = node_view(pid)  # an active fact whose only source is superseded is not current
    assert view.current_facts == () and view.historical_facts == ()
    assert [e.status for e in view.events] == ["superseded"]


def test_provenance_is_bounded_to_six_events(store):
    ids = [_event(f"e{i}") for i in range(9)]
    pid = _apply(ids, [_node("p", "Ann", "person", ids, facts=[("role", "nurse", None)])]).node_ids[0]
    view = node_view(pid)
    assert GRAPH_PROVENANCE_LIMIT == 6
    assert len(view.current_facts[0].source_event_ids) == 6 and len(view.events) == 6
    assert view.current_facts[0].source_event_ids == tuple(sorted(ids, reverse=True)[:6])
    assert list_nodes("ns")[0].events == 9


def test_list_nodes_filters(store):
    e1 = _event()
    _apply(
        [e1],
        [
            _node("p", "Robert", "person", [e1], aliases=["Bob"], facts=[("role", "nurse", None)]),
            _node("c", "Oslo", "place", [e1]),
            _node("t", "Vim", "tool", [e1]),
        ],
        [_edge("p", "t", "uses", [e1])],
    )
    _event(ns="other")
    assert [r.name for r in list_nodes("ns", type="place")] == ["Oslo"]
    assert [r.name for r in list_nodes(query="bo")] == ["Robert"]
    row = list_nodes("ns", query="ROB")[0]
    assert (row.facts, row.edges, row.events, row.aliases) == (1, 1, 1, ("Bob",))
    assert list_nodes("other") == [] and len(list_nodes(limit=1)) == 1
    with pytest.raises(InvalidInputError):
        list_nodes(type="animal")
    with pytest.raises(NotFoundError):
        list_nodes("missing")


# ----------------------------------------------------------------------------- context


def test_projection_context_holds_events_and_related_nodes(store):
    e1 = _event("Caroline started pottery", participants=["Caroline"])
    _apply(
        [e1],
        [
            _node("p", "Caroline", "person", [e1], facts=[("hobby", "pottery", None)]),
            _node("c", "Oslo", "place", [e1]),
            _node("x", "Unrelated", "tool", [e1]),
        ],
        [_edge("p", "c", "visited", [e1])],
    )
    e2 = _event(
        "Trip",
        "Caroline flew to Oslo again",
        participants=["Caroline"],
        happened_start="2024-05",
        precision="month",
        basis="explicit",
    )
    context = projection_context(7, _ns_id(), [Event.get_by_id(e2)])
    assert context["job_id"] == 7 and context["projector_version"] == 1
    event = context["events"][0]
    assert event["id"] == e2 and event["participants"] == ["Caroline"] and event["status"] == "active"
    assert event["temporal"]["happened_start"] == "2024-05"
    assert [n["name"] for n in context["nodes"]] == ["Caroline", "Oslo"]
    assert context["nodes"][0]["current_state"] == "hobby: pottery"
    assert context["nodes"][0]["source_event_ids"] == [e1]
    assert [e["relation"] for e in context["edges"]] == ["visited"]


# ----------------------------------------------------------------------------- the job


class GraphStub:
    """A provider that answers graph projections from a script (or the offline rules)."""

    name = "stub"
    model = None

    def __init__(self, answers=None):
        self.answers = list(answers or [])
        self.contexts = []

    def summarize_block(self, messages):
        return BlockSummary("t", (), "s", (), False)

    def extract_events(self, context):
        return Extraction(should_extract=False)

    def project_graph(self, context):
        self.contexts.append(context)
        answer = self.answers.pop(0) if self.answers else project_graph_offline
        if isinstance(answer, BaseException):
            raise answer
        return answer(context) if callable(answer) else answer


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def graph_jobs(monkeypatch):
    monkeypatch.setitem(derive.HANDLERS, "graph", run_graph_job)
    clock = Clock()
    monkeypatch.setattr(jobsvc, "wall", clock)
    monkeypatch.setattr(derive, "wall", clock)
    return clock


def _queue(ids) -> Job:
    with write_transaction():
        queue_graph_projection(_ns_id(), ids, 1000)
    return Job.select().where(Job.kind == "graph").order_by(Job.id.desc()).get()


def test_graph_job_end_to_end_through_run_pending(store, graph_jobs):
    e1 = _event(
        "Caroline moved",
        "Caroline moved to Berlin. She uses Notion and Obsidian.",
        participants=["Caroline", "Melanie"],
        event_type="版本发布",
    )
    job = _queue([e1])
    report = derive.run_pending("ns", provider=GraphStub(), wait_for_retries=False)
    assert (report.processed, report.succeeded, report.failed) == (1, 1, 0)
    job = Job.get_by_id(job.id)
    assert job.status == "succeeded" and job.last_error is None
    assert job.payload["event_ids"] == [e1] and job.payload["projector_version"] == 1
    assert job.payload["node_ids"] and job.payload["edge_ids"]
    assert job.payload["reason"].startswith("offline rules")
    assert Event.get_by_id(e1).event_type == "release"
    assert sorted(Event.get_by_id(e1).participant_node_ids) == sorted(job.payload["node_ids"])
    caroline = next(r for r in list_nodes("ns") if r.name == "Caroline")
    view = node_view(caroline.id)
    assert {(f.key, f.value) for f in view.current_facts} == {
        ("lives_in", "Berlin"),
        ("uses", "Notion"),
        ("uses", "Obsidian"),
    }
    assert {(e.relation, e.other_name) for e in view.edges_out} >= {
        ("lives_in", "Berlin"),
        ("uses", "Notion"),
        ("knows", "Melanie"),
    }


def test_graph_job_reason_carries_validation_warnings(store, graph_jobs):
    e1 = _event()
    proposal = {
        "reason": "model says hi",
        "nodes": [_node("p", "Ann", "person", [e1], tags=["x"], tag_ids=[])],
        "edges": [],
    }
    job = _queue([e1])
    derive.run_pending("ns", provider=GraphStub([proposal]), wait_for_retries=False)
    reason = Job.get_by_id(job.id).payload["reason"]
    assert reason.startswith("Validation: Dropped metadata value tag 'x'") and reason.endswith("model says hi")
    assert len(reason) <= 500


def test_failed_graph_job_keeps_the_store_and_retries_after_backoff(store, graph_jobs):
    e1 = _event("Ann", "Ann uses Vim", participants=["Ann"])
    job = _queue([e1])
    no_provenance = {"reason": "", "nodes": [_node("p", "Ann", "person", [e1], name_ids=[])], "edges": []}
    stub = GraphStub([TimeoutError("model did not answer"), no_provenance])
    before = _counts()
    report = derive.run_pending("ns", provider=stub, wait_for_retries=False)
    assert report.failed == 1 and "TimeoutError" in report.errors[0]
    failed = Job.get_by_id(job.id)
    assert (failed.status, failed.attempts, failed.next_retry_at) == ("failed", 1, graph_jobs.now + 1.0)
    assert _counts() == before
    assert derive.run_pending("ns", provider=stub, wait_for_retries=False).processed == 0  # not due yet
    graph_jobs.now += 1.0
    derive.run_pending("ns", provider=stub, wait_for_retries=False)
    failed = Job.get_by_id(job.id)
    assert failed.status == "failed" and "provenance" in failed.last_error and _counts() == before
    assert Event.get_by_id(e1).participant_node_ids == []
    graph_jobs.now += 2.0
    report = derive.run_pending("ns", provider=stub, wait_for_retries=False)
    assert report.succeeded == 1 and Job.get_by_id(job.id).status == "succeeded"
    assert [r.name for r in list_nodes("ns", type="person")] == ["Ann"]


def test_graph_job_with_only_forgotten_events_skips_the_provider(store, graph_jobs):
    e1 = _event()
    forget_event(e1)
    job = _queue([e1])
    stub = GraphStub()
    derive.run_pending("ns", provider=stub, wait_for_retries=False)
    assert stub.contexts == []
    done = Job.get_by_id(job.id)
    assert done.status == "succeeded" and done.payload["node_ids"] == [] and "no live events" in done.payload["reason"]


def test_event_forgotten_during_the_model_call_rejects_the_projection(store, graph_jobs):
    e1 = _event("Ann", "Ann lives in Oslo", participants=["Ann"])

    def forget_then_answer(context):
        forget_event(e1)
        return project_graph_offline(context)

    job = _queue([e1])
    derive.run_pending("ns", provider=GraphStub([forget_then_answer]), wait_for_retries=False)
    assert Job.get_by_id(job.id).status == "failed" and GraphNode.select().count() == 0


def test_job_no_longer_claimed_writes_nothing(store, graph_jobs):
    e1 = _event("Ann", participants=["Ann"])
    job = _queue([e1])

    def steal(context):
        Job.update(status="pending", attempts=0).where(Job.id == job.id).execute()
        return project_graph_offline(context)

    derive.run_pending("ns", provider=GraphStub([steal]), wait_for_retries=False, max_jobs=1)
    assert GraphNode.select().count() == 0 and Job.get_by_id(job.id).status == "pending"


# ----------------------------------------------------------------------------- offline projector


def _offline(*events):
    context = {
        "events": [
            {"id": i + 1, "title": "", "summary": s, "quotes": [], "participants": list(p), "temporal": {}}
            for i, (s, p) in enumerate(events)
        ]
    }
    proposal = project_graph_offline(context)
    facts = {(n["name"], f["key"], f["value"]) for n in proposal["nodes"] for f in n["facts"]}
    names = {n["ref"]: n["name"] for n in proposal["nodes"]}
    edges = {(names[e["from_ref"]], e["relation"], names[e["to_ref"]]) for e in proposal["edges"]}
    return proposal, facts, edges


def _extracted(*texts: str, said_at: str = "2026-01-20T21:30:00+01:00") -> dict:
    """The offline graph proposal for Maya's messages ``texts``, extracted and projected."""
    from core.providers.offline_events import extract_events_offline

    out = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {"id": i + 1, "role": "user", "speaker": "Maya", "created_at": said_at, "text": text}
                    for i, text in enumerate(texts)
                ],
            }
        }
    )
    return project_graph_offline({"events": [{"id": i + 1, **e} for i, e in enumerate(out["events"])]})


def _extracted_graph(
    *texts: str, said_at: str = "2026-01-20T21:30:00+01:00"
) -> tuple[set[str], set[tuple[str, str, str, str]]]:
    """People and (from, relation, to, status) edges of Maya's messages, extracted and projected offline."""
    proposal = _extracted(*texts, said_at=said_at)
    names = {n["ref"]: n["name"] for n in proposal["nodes"]}
    people = {n["name"] for n in proposal["nodes"] if n["type"] == "person"}
    return people, {
        (names[e["from_ref"]], e["relation"], names[e["to_ref"]], e.get("status", "active")) for e in proposal["edges"]
    }


def _proposed_facts(proposal: dict) -> set[tuple[str, str, str]]:
    return {(n["name"], f["key"], f["value"]) for n in proposal["nodes"] for f in n["facts"]}


def test_offline_people_places_orgs_tools_and_knows():
    proposal, facts, edges = _offline(
        (
            "Caroline moved to Berlin and works at Acme Inc. She uses Notion and switched to Linear.",
            ["Caroline", "Melanie", "user"],
        ),
        ("I'm a software engineer. My dog Luna loves walks. I really love hiking and pottery.", ["Caroline"]),
    )
    types = {(n["name"], n["type"]) for n in proposal["nodes"]}
    assert {
        ("Caroline", "person"),
        ("Melanie", "person"),
        ("Berlin", "place"),
        ("Acme", "organization"),
        ("Notion", "tool"),
        ("Linear", "tool"),
    } <= types
    assert not any(n["name"].casefold() == "user" for n in proposal["nodes"])
    assert {
        ("Caroline", "lives_in", "Berlin"),
        ("Caroline", "works_at", "Acme"),
        ("Caroline", "uses", "Notion"),
        ("Caroline", "uses", "Linear"),
        ("Caroline", "role", "software engineer"),
        ("Caroline", "has_pet", "dog Luna"),
        ("Caroline", "likes", "hiking"),
        ("Caroline", "likes", "pottery"),
    } <= facts
    assert {
        ("Caroline", "lives_in", "Berlin"),
        ("Caroline", "works_at", "Acme"),
        ("Caroline", "uses", "Notion"),
        ("Caroline", "knows", "Melanie"),
    } <= edges
    acme = next(n for n in proposal["nodes"] if n["name"] == "Acme")
    assert acme["aliases"] == ["Acme Inc"] and acme["provenance"]["aliases"][0]["source_event_ids"] == [1]
    for node in proposal["nodes"]:
        assert node["provenance"]["name"] and set(node["source_event_ids"]) <= {1, 2}
        assert all(f["source_event_ids"] for f in node["facts"])
    assert not any(f[1] == "mentioned" for f in facts)


def test_a_capitalised_word_after_a_possessive_is_no_person():
    """Cards rewrite "my"/"our" as "Maya's": "Maya's Utrecht office" names an office, as "our
    Utrecht office" did, while "Maya's partner Tomás" still names Tomás."""
    proposal, _, edges = _offline(
        ("Priya is replacing it with a half-day workshop in Maya's Utrecht office.", ["Maya", "Priya", "Utrecht"]),
        ("Maya lives with Maya's partner Tomás.", ["Maya", "Tomás"]),
    )
    people = {n["name"] for n in proposal["nodes"] if n["type"] == "person"}
    assert "Utrecht" not in people and {"Maya", "Priya", "Tomás"} <= people
    assert ("Maya", "knows", "Tomás") in edges


def test_a_place_named_with_particles_is_no_person():
    proposal, _, _ = _offline(
        ("Maya booked an apartment near Largo do Chafariz de Dentro.", ["Maya", "Largo do Chafariz de Dentro"]),
    )
    people = {n["name"] for n in proposal["nodes"] if n["type"] == "person"}
    assert "Largo do Chafariz de Dentro" not in people and "Maya" in people


def test_a_trip_dated_after_it_was_mentioned_is_a_plan_to_visit():
    """Extracted and projected: "Let's organise a trip to Lisbon … March 19", said in January, is no visit."""
    _, edges = _extracted_graph("Let's organise a family trip to Lisbon! Me, Tomás and Ivy, from Thursday March 19.")
    edges = {(who, relation, what) for who, relation, what, _ in edges}
    assert ("Maya", "plans_to_visit", "Lisbon") in edges and ("Maya", "visited", "Lisbon") not in edges


def test_birthdays_from_ordinals_weekdays_and_turning_an_age():
    _, facts, _ = _offline(
        ("Ivy's 7th birthday is Saturday, March 21.", ["Maya", "Ivy"]),
        ("Jonas turns forty on June 2nd, and Priya's birthday is on the 3rd of May.", ["Maya", "Jonas", "Priya"]),
        ("Sam turns 30 next year.", ["Sam"]),
    )
    birthdays = {(name, value) for name, key, value in facts if key == "birthday"}
    assert birthdays == {("Ivy", "March 21"), ("Jonas", "June 2nd"), ("Priya", "3rd of May")}


def test_a_role_named_by_what_someone_teaches():
    _, facts, _ = _offline(
        ("Noted: Tomás teaches physics at a secondary school in Zeist.", ["Assistant", "Tomás", "Zeist"]),
        ("Ana teaches English at the language school.", ["Ana"]),
        ("Maya taught maths to Ivy at home this weekend.", ["Maya", "Ivy"]),
    )
    roles = {(name, value) for name, key, value in facts if key == "role"}
    assert roles == {("Tomás", "physics teacher"), ("Ana", "English teacher")}


def test_a_time_zone_is_no_place():
    proposal, _, _ = _offline(
        ("Maya lives in Utrecht. The API writes updated_at in Europe/Amsterdam local time.", ["Maya"]),
    )
    places = {n["name"] for n in proposal["nodes"] if n["type"] == "place"}
    assert places == {"Utrecht"}


def test_a_child_named_after_its_relation():
    _, _, edges = _offline(
        ("Jonas's baby arrived on Monday, a little boy called Finn!", ["Maya", "Jonas", "Finn"]),
        ("Our baby, named Lou, sleeps well.", ["Maya", "Lou"]),
        ("My son's teacher named Ross called today.", ["Maya", "Ross"]),
        ("My daughter has a friend called Mia.", ["Maya", "Mia"]),
    )
    assert {e for e in edges if e[1] == "parent_of"} == {("Jonas", "parent_of", "Finn"), ("Maya", "parent_of", "Lou")}


def test_offline_projects_and_named_subjects():
    _, facts, edges = _offline(
        ("Melanie is leading Project Atlas with Caroline. Melanie is a counselor.", ["Caroline", "Melanie"]),
    )
    assert ("Melanie", "works_on", "Atlas") in edges and ("Melanie", "role", "counselor") in facts
    assert not any(f[0] == "Caroline" and f[1] == "role" for f in facts)


def test_offline_is_conservative():
    _, facts, edges = _offline(
        (
            "She went to Pride and visited Sarah. I would love to go. I'm a big fan of it. The gift came from Sarah. "
            "He moved to Sarah's place. I don't like spiders.",
            ["Ann"],
        ),
        ("Nothing named here at all.", []),
        ("我们 讨论了 计划", ["我", "用户"]),
    )
    assert facts == set() and edges == set()
    proposal, _, _ = _offline(("Nothing here.", ["I", "you", "assistant"]))
    assert proposal["nodes"] == [] and proposal["edges"] == []


def test_offline_proposal_applies_cleanly(store):
    e1 = _event("Ann", "Ann lives in Oslo. She uses Vim and Git.", participants=["Ann", "Bo"])
    e2 = _event("Ann moved", "Ann moved to Paris.", participants=["Ann"])
    context = projection_context(None, _ns_id(), [Event.get_by_id(e1), Event.get_by_id(e2)])
    result = apply_projection(_ns_id(), [e1, e2], project_graph_offline(context))
    assert result.warnings == []
    ann = GraphNode.get(GraphNode.name == "Ann")
    view = node_view(ann.id)
    assert {(f.key, f.value) for f in view.current_facts} == {("lives_in", "Paris"), ("uses", "Vim"), ("uses", "Git")}
    assert [(f.key, f.value) for f in view.historical_facts] == [("lives_in", "Oslo")]


ENDED = "superseded"


@pytest.mark.parametrize(
    ("text", "facts", "edges"),
    [
        (
            "Maya keeps using Airflow instead of switching to Dagster.",
            {("Maya", "uses", "Airflow")},
            {("Maya", "uses", "Airflow")},
        ),
        ("Maya uses Dagster now, not Airflow.", {("Maya", "uses", "Dagster")}, {("Maya", "uses", "Dagster")}),
        (
            "Maya stopped using Jenkins. She won't use Kafka.",
            {("Maya", "uses", "Jenkins", ENDED)},
            {("Maya", "uses", "Jenkins", ENDED)},
        ),
        (
            "Maya no longer uses Jenkins but uses GitLab now.",
            {("Maya", "uses", "GitLab"), ("Maya", "uses", "Jenkins", ENDED)},
            {("Maya", "uses", "GitLab"), ("Maya", "uses", "Jenkins", ENDED)},
        ),
        (
            "Maya no longer works at Acme Inc.",
            {("Maya", "works_at", "Acme", ENDED)},
            {("Maya", "worked_at", "Acme"), ("Maya", "works_at", "Acme", ENDED)},
        ),
        ("Maya doesn't live in Berlin anymore. She never went to Paris.", set(), set()),
        (
            "Maya no longer lives in Berlin but lives in Oslo now.",
            {("Maya", "lives_in", "Oslo"), ("Maya", "lives_in", "Berlin", ENDED)},
            {("Maya", "lived_in", "Berlin"), ("Maya", "lives_in", "Berlin", ENDED), ("Maya", "lives_in", "Oslo")},
        ),
        (
            "Maya no longer lives in Berlin but moved to Oslo.",
            {("Maya", "lives_in", "Oslo"), ("Maya", "lives_in", "Berlin", ENDED)},
            {("Maya", "lived_in", "Berlin"), ("Maya", "lives_in", "Berlin", ENDED), ("Maya", "lives_in", "Oslo")},
        ),
        ("Maya is not leading Project Atlas.", set(), set()),
        (
            "Maya switched from Jenkins to GitLab.",
            {("Maya", "uses", "GitLab"), ("Maya", "uses", "Jenkins", ENDED)},
            {("Maya", "uses", "GitLab"), ("Maya", "uses", "Jenkins", ENDED)},
        ),
        (
            "Maya moved away from Jenkins and never used Kafka.",
            {("Maya", "uses", "Jenkins", ENDED)},
            {("Maya", "uses", "Jenkins", ENDED)},
        ),
        (
            "Maya replaced Jenkins with GitLab.",
            {("Maya", "uses", "GitLab"), ("Maya", "uses", "Jenkins", ENDED)},
            {("Maya", "uses", "GitLab"), ("Maya", "uses", "Jenkins", ENDED)},
        ),
        (
            "Maya dropped Jira and uses Linear.",
            {("Maya", "uses", "Linear"), ("Maya", "uses", "Jira", ENDED)},
            {("Maya", "uses", "Linear"), ("Maya", "uses", "Jira", ENDED)},
        ),
        (
            "Maya gave up using Notion last year.",
            {("Maya", "uses", "Notion", ENDED)},
            {("Maya", "uses", "Notion", ENDED)},
        ),
        (
            "Maya ditched Slack for Discord.",
            {("Maya", "uses", "Discord"), ("Maya", "uses", "Slack", ENDED)},
            {("Maya", "uses", "Discord"), ("Maya", "uses", "Slack", ENDED)},
        ),
        ("Maya avoids using Jenkins.", set(), set()),
        ("Maya never replaced Jira with Linear.", set(), set()),
        (
            "Maya resigned from Acme.",
            {("Maya", "works_at", "Acme", ENDED)},
            {("Maya", "worked_at", "Acme"), ("Maya", "works_at", "Acme", ENDED)},
        ),
        (
            "Maya left Acme Inc and joined Beta Corp.",
            {("Maya", "works_at", "Beta"), ("Maya", "works_at", "Acme", ENDED)},
            {("Maya", "works_at", "Beta"), ("Maya", "worked_at", "Acme"), ("Maya", "works_at", "Acme", ENDED)},
        ),
        ("Maya left Paris on Monday.", set(), set()),  # a trip, not a residence or an employer
        (
            "Maya moved from Berlin to Oslo.",
            {("Maya", "lives_in", "Oslo"), ("Maya", "lives_in", "Berlin", ENDED)},
            {("Maya", "lived_in", "Berlin"), ("Maya", "lives_in", "Berlin", ENDED), ("Maya", "lives_in", "Oslo")},
        ),
        (
            "Maya moved out of Berlin.",
            {("Maya", "lives_in", "Berlin", ENDED)},
            {("Maya", "lived_in", "Berlin"), ("Maya", "lives_in", "Berlin", ENDED)},
        ),
        ("Maya never moved out of Berlin.", set(), set()),
        ("Ivy's swimming moved from Saturdays to Sundays.", set(), set()),  # a thing moved, not a home
        ("The meeting moved from Monday to Friday.", set(), set()),
    ],
)
def test_offline_does_not_state_what_a_clause_denies(text, facts, edges):
    """A denied clause states nothing; an ended one ("no longer", "stopped") states the record
    as superseded, which ends the current one when applied."""
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [{"id": 1, "title": "", "summary": text, "quotes": [], "participants": ["Maya"], "temporal": {}}],
        }
    )
    names = {n["ref"]: n["name"] for n in proposal["nodes"]}

    def stated(*parts, status=None):
        return parts + ((status,) if status not in (None, "active") else ())

    assert {
        stated(n["name"], f["key"], f["value"], status=f.get("status")) for n in proposal["nodes"] for f in n["facts"]
    } == facts
    assert {
        stated(names[e["from_ref"]], e["relation"], names[e["to_ref"]], status=e.get("status"))
        for e in proposal["edges"]
    } == edges


@pytest.mark.parametrize(
    ("text", "tools"),
    [
        ("Maya switched to Obsidian last weekend, so send the notes as plain Markdown.", {"Obsidian"}),
        ("Maya uses Vim, Git and Docker every day.", {"Vim", "Git", "Docker"}),
        ("Maya uses Vim; the team writes docs in Confluence.", {"Vim"}),
        ("Maya installed Docker but the build still runs in Jenkins.", {"Docker"}),
    ],
)
def test_offline_a_use_verb_reaches_its_own_statement_only(text, tools):
    _, facts, _ = _offline((text, ["Maya"]))
    assert {value for name, key, value in facts if key == "uses"} == tools


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        (
            "Moved from Utrecht to Amsterdam in March 2026.",
            {("Maya", "lives_in", "Amsterdam", "active"), ("Maya", "lives_in", "Utrecht", ENDED)},
        ),
        (
            "The user moved from Utrecht to Amsterdam.",
            {("Maya", "lives_in", "Amsterdam", "active"), ("Maya", "lives_in", "Utrecht", ENDED)},
        ),
        ("Lives in Amsterdam now.", {("Maya", "lives_in", "Amsterdam", "active")}),
        ("Uses Notion for meeting notes.", {("Maya", "uses", "Notion", "active")}),
        ("Will moved to Oslo.", {("Will", "lives_in", "Oslo", "active")}),  # a name, though also a verb
    ],
)
def test_offline_a_statement_naming_no_subject_is_its_first_persons(text, facts):
    """Another assistant's export writes "Moved to …", "The user …": the event's first person (the
    user an import names first) moved, not nobody, and an opening verb is no name."""
    people = ["Maya", "Will", "Oslo"] if text.startswith("Will") else ["Maya", "Amsterdam", "Utrecht"]
    proposal = project_graph_offline(
        {"events": [{"id": 1, "title": "", "summary": text, "quotes": [], "participants": people, "temporal": {}}]}
    )
    assert {
        (n["name"], f["key"], f["value"], f.get("status", "active")) for n in proposal["nodes"] for f in n["facts"]
    } == facts


def test_a_stated_end_ends_the_current_record_and_keeps_its_history(store):
    """ "Ann stopped using Vim" after "Ann uses Vim": the current use (fact and edge) becomes
    history ended when the later event happened, citing both events; a tool never stated as used
    before is kept as history only; and a use that began after the statement of its end stays."""
    e1 = _event("Ann tools", "Ann uses Vim and Git.", participants=["Ann"], happened_start="2026-01-10")
    e2 = _event("Ann drops Vim", "Ann stopped using Vim.", participants=["Ann"], happened_start="2026-03-02")
    e3 = _event("Ann and Emacs", "Ann no longer uses Emacs.", participants=["Ann"], happened_start="2026-03-05")
    for batch in ([e1], [e2, e3]):
        context = projection_context(None, _ns_id(), [Event.get_by_id(i) for i in batch])
        result = apply_projection(_ns_id(), batch, project_graph_offline(context))
        assert result.warnings == []
    view = node_view(GraphNode.get(GraphNode.name == "Ann").id)
    assert {(f.key, f.value) for f in view.current_facts} == {("uses", "Git")}
    history = {(f.key, f.value): f for f in view.historical_facts}
    assert set(history) == {("uses", "Vim"), ("uses", "Emacs")}
    assert history[("uses", "Vim")].valid_to.startswith("2026-03-02")
    assert set(history[("uses", "Vim")].source_event_ids) == {e1, e2}
    emacs = history[("uses", "Emacs")]  # never stated as used: it ended then, began who knows when
    assert emacs.valid_from is None and emacs.valid_to.startswith("2026-03-05")
    tools: dict[str, list[str]] = {}
    for edge in GraphEdge.select().where(GraphEdge.relation == "uses").order_by(GraphEdge.id):
        tools.setdefault(GraphNode.get_by_id(edge.to_node_id).name, []).append(edge.status)
    assert tools == {"Git": ["active"], "Vim": ["superseded"], "Emacs": ["superseded"]}  # ended, not duplicated
    emacs_edge = GraphEdge.get(GraphEdge.to_node == GraphNode.get(GraphNode.name == "Emacs").id)
    assert emacs_edge.valid_from is None and emacs_edge.valid_to.startswith("2026-03-05")

    # Stated as ended before it (re)started: the later use stays current.
    e4 = _event("Bo and Vim", "Bo uses Vim daily.", participants=["Bo"], happened_start="2026-05-01")
    e5 = _event("Bo old tools", "Bo stopped using Vim.", participants=["Bo"], happened_start="2025-01-01")
    for batch in ([e4], [e5]):
        context = projection_context(None, _ns_id(), [Event.get_by_id(i) for i in batch])
        apply_projection(_ns_id(), batch, project_graph_offline(context))
    bo = node_view(GraphNode.get(GraphNode.name == "Bo").id)
    assert ("uses", "Vim") in {(f.key, f.value) for f in bo.current_facts}
    assert ("uses", "Vim") in {(f.key, f.value) for f in bo.historical_facts}


def test_views_read_a_window_of_sources_yet_classify_like_reading_them_all(store, monkeypatch):
    """A record cited by many events is decided from its newest citations; with a window of
    two, every forget pattern must still give the view that reading every citation gives."""
    import random

    from core.services import graph as graphsvc

    texts = [
        "Ann lives in Oslo. She uses Vim and works at Acme Inc.",
        "Ann uses Vim and Git every day.",
        "Ann lives in Oslo and uses Git.",
        "Ann moved to Paris.",
        "Ann works at Acme Inc and uses Vim.",
    ]
    ids = [_event(f"Ann {i}", text, participants=["Ann", "Bo"]) for i, text in enumerate(texts * 2)]
    for start in range(0, len(ids), 4):
        batch = ids[start : start + 4]
        context = projection_context(None, _ns_id(), [Event.get_by_id(i) for i in batch])
        apply_projection(_ns_id(), batch, project_graph_offline(context))
    nodes = list(GraphNode.select())
    assert GraphSource.select().where(GraphSource.kind == "node").count() > 2 * len(nodes)

    def shape(views):
        return {
            nid: (
                v.visible,
                v.aliases,
                v.tags,
                sorted(f.id for f, _ in v.current_facts),
                sorted(f.id for f, _ in v.historical_facts),
                sorted(e.id for e, _ in v.current_edges),
                sorted(e.id for e, _ in v.historical_edges),
                v.all_sources()[:1],
            )
            for nid, v in views.items()
        }

    rng = random.Random(5)
    for _ in range(6):
        for event_id in rng.sample(ids, 4):
            Event.update(status=rng.choice(["forgotten", "active", "superseded"])).where(Event.id == event_id).execute()
        monkeypatch.setattr(graphsvc, "SOURCE_WINDOW", 10**6)
        every = graphsvc.compute_views(nodes)
        monkeypatch.setattr(graphsvc, "SOURCE_WINDOW", 2)
        windowed = graphsvc.compute_views(nodes)
        assert shape(windowed) == shape(every)
        # a count read through a full window is shown as a floor ("3+"), never as exact
        assert not any(v.sources_more for v in every.values()) and any(v.sources_more for v in windowed.values())


def test_views_read_together_equal_views_read_one_by_one(store):
    """Graph search reads its candidates' views in one batch (linked nodes share edges and
    citations); each must be the view node_view gives alone, whatever was forgotten."""
    import random

    from core.services.graph import node_views

    texts = [
        "Ann lives in Oslo and works at Acme Inc with Bo.",
        "Bo uses Vim and Git; Ann uses Git.",
        "Cy moved to Paris and works at Globex with Ann.",
        "Bo lives in Oslo, Cy visited Oslo.",
        "Ann and Cy use Postgres at Acme Inc.",
        "Dee has a dog named Rex and lives in Rome.",
    ]
    ids = [
        _event(f"e{i}", text, participants=["Ann", "Bo", "Cy", "Dee"][i % 4 : i % 4 + 2])
        for i, text in enumerate(texts * 3)
    ]
    for start in range(0, len(ids), 5):
        batch = ids[start : start + 5]
        context = projection_context(None, _ns_id(), [Event.get_by_id(i) for i in batch])
        apply_projection(_ns_id(), batch, project_graph_offline(context))
    node_ids = [n.id for n in GraphNode.select()] + [10**6]  # one that does not exist
    assert len(node_ids) > 6 and GraphEdge.select().count() > 4
    rng = random.Random(3)
    for round_ in range(4):
        alone = {}
        for node_id in node_ids:
            try:
                alone[node_id] = node_view(node_id)
            except NotFoundError:
                pass
        together = node_views(rng.sample(node_ids, len(node_ids)))
        assert together == alone
        if round_ == 0:
            assert len(alone) == len(node_ids) - 1
        for event_id in rng.sample(ids, 5):  # some nodes lose their evidence, some get it back
            Event.update(status=rng.choice(["forgotten", "active", "superseded"])).where(Event.id == event_id).execute()


def test_context_visibility_reads_equal_reading_every_citation(store):
    """The projector's context decides which facts and edges show (some active citation) and
    which aliases and tags show (some live source) from as few rows as it can: an EXISTS per
    record, and each entry's newest source first. Under any forget pattern the answers must be
    those that reading every citation and every status gives."""
    import random

    from core.services import graph as graphsvc
    from core.services import graph_job

    ids = [_event(f"e{i}", f"Ann and Bo, note {i}", participants=["Ann", "Bo"]) for i in range(12)]
    rng = random.Random(7)
    nodes = [
        _node(
            f"n{k}",
            name,
            "person",
            rng.sample(ids, 4),
            aliases=[f"{name}ie", f"{name}o"],
            tags=["friend"],
            alias_ids=sorted(rng.sample(ids, 3)),
            tag_ids=sorted(rng.sample(ids, 2)),
            facts=[("likes", f"tea {k}", rng.sample(ids, 3)), ("role", f"chef {k}", rng.sample(ids, 2))],
        )
        for k, name in enumerate(["Ann", "Bo", "Cy"])
    ]
    edges = [
        _edge("n0", "n1", "knows", rng.sample(ids, 3)),
        _edge("n1", "n2", "knows", rng.sample(ids, 2)),
        _edge("n2", "n0", "knows", rng.sample(ids, 4)),
    ]
    _apply(ids, nodes, edges)
    stored = list(GraphNode.select())
    assert stored and all(n.provenance.get("aliases") for n in stored)

    def every_citation(kind: str, model) -> set[int]:
        return {
            s.record_id
            for s in GraphSource.select().where(GraphSource.kind == kind)
            if Event.get_by_id(s.event_id).status == "active"
        } & {r.id for r in model.select()}

    for _ in range(8):
        for event_id in rng.sample(ids, 5):
            Event.update(status=rng.choice(["forgotten", "active", "superseded", "archived"])).where(
                Event.id == event_id
            ).execute()
        for kind, model in (("fact", GraphFact), ("edge", GraphEdge)):
            assert graph_job._cited_by_active(kind, [r.id for r in model.select()]) == every_citation(kind, model)
        statuses = {e.id: e.status for e in Event.select()}
        few = graph_job._metadata_statuses(stored)
        for node in stored:
            for kind in ("aliases", "tags"):
                assert graphsvc.visible_metadata(node, kind, [], few) == graphsvc.visible_metadata(
                    node, kind, [], statuses
                )


@pytest.mark.parametrize(
    ("text", "participants", "edges"),
    [
        (
            "I live with my partner Tomás and our six-year-old daughter Ivy.",
            ["Maya", "Ivy"],
            {("Maya", "partner_of", "Tomás"), ("Maya", "parent_of", "Ivy")},
        ),
        ("Noted: your mum Ruth lands on Friday.", ["Assistant", "Maya"], {("Maya", "child_of", "Ruth")}),
        # between people "your" is the other one, whom the rules cannot name
        ("Say hi to your sister Ana!", ["Maya", "Ivy"], set()),
        ("Maya's manager Lena approved it.", ["Maya", "Lena"], {("Maya", "reports_to", "Lena")}),
        (
            "Priya Raman, my manager and our head of data, signed off.",
            ["Maya", "Priya Raman"],
            {("Maya", "reports_to", "Priya Raman")},
        ),
        ("Yesterday Maya and her sister Ana went hiking.", ["Maya"], {("Maya", "sibling_of", "Ana")}),
        ("Maya met her ex-husband Rob for coffee.", ["Maya"], {("Maya", "partner_of", "Rob", ENDED)}),
        ("My former boss Dirk retired.", ["Maya"], {("Maya", "reports_to", "Dirk", ENDED)}),
        # "his" with no one named before it is not guessed to be the speaker
        ("Tomás and his brother Luis cooked.", ["Maya"], set()),
        ("Lena is not my manager.", ["Maya", "Lena"], set()),
        ("My friend Paris is visiting.", ["Maya"], set()),  # a place name is not taken for a person
        ("Thankfully, my son's ok.", ["Maya"], set()),  # an opening word before a comma is no name
        ("I met Sam, my old colleague, at the airport.", ["Maya"], {("Maya", "works_with", "Sam")}),
    ],
)
def test_offline_names_people_by_how_they_relate(text, participants, edges):
    """ "my partner Tomás", "Maya's manager Lena", "Priya, my manager": an edge from the owner (the
    speaker for my/our/your, the last person named for his/her), ended for an "ex-" or "former" one."""
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [
                {"id": 1, "title": "", "summary": text, "quotes": [], "participants": participants, "temporal": {}}
            ],
        }
    )
    names = {n["ref"]: n["name"] for n in proposal["nodes"]}
    got = {
        (names[e["from_ref"]], e["relation"], names[e["to_ref"]])
        + ((e["status"],) if e.get("status", "active") != "active" else ())
        for e in proposal["edges"]
        if e["relation"] != "knows"
    }
    assert got == edges
    kin = {to for _, _, to, *_ in edges}
    assert all(n["type"] == "person" for n in proposal["nodes"] if n["name"] in kin)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ivy loves swimming and Maya lives in Utrecht.", ("Maya", "lives_in", "Utrecht")),
        ("I told Priya that I moved to Lisbon.", ("Maya", "lives_in", "Lisbon")),
        ("Maya says Priya works at Acme Inc.", ("Priya", "works_at", "Acme")),
        ("Maya's partner Tomás moved to Porto.", ("Tomás", "lives_in", "Porto")),
    ],
)
def test_offline_reads_who_does_it_from_the_clause(text, expected):
    """The subject of a stated fact is the person (or "I"/"we"/"you": the speaker) named last
    before it in its clause, not the first person the sentence names."""
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [
                {
                    "id": 1,
                    "title": "",
                    "summary": text,
                    "quotes": [],
                    "participants": ["Maya", "Ivy", "Priya", "Tomás"],
                    "temporal": {},
                }
            ],
        }
    )
    facts = {(n["name"], f["key"], f["value"]) for n in proposal["nodes"] for f in n["facts"]}
    assert expected in facts
    assert not {f for f in facts if f[1:] == expected[1:] and f[0] != expected[0]}


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        (
            "I am allergic to peanuts and shellfish.",
            {("Maya", "allergic_to", "peanuts"), ("Maya", "allergic_to", "shellfish")},
        ),
        ("Ivy has a severe nut allergy.", {("Ivy", "allergic_to", "nut")}),
        ("I am not allergic to cats.", set()),
        ("Tomás is a vegan.", {("Tomás", "diet", "vegan")}),
        ("I'm no longer vegetarian.", {("Maya", "diet", "vegetarian", ENDED)}),
        (
            "I speak English, German and Irish.",
            {("Maya", "speaks", "English"), ("Maya", "speaks", "German"), ("Maya", "speaks", "Irish")},
        ),
        ("I'm learning Portuguese but I don't speak French.", {("Maya", "learning", "Portuguese")}),
        ("Impressive that you're learning German.", set()),  # said by Maya to someone else
        ("Ivy's birthday is 14 March.", {("Ivy", "birthday", "14 March")}),
        ("My birthday is on May 3.", {("Maya", "birthday", "May 3")}),
        ("Tomás is 41 years old and Ivy turned 7 last week.", {("Tomás", "age", "41"), ("Ivy", "age", "7")}),
        ("The build turned 3 times red.", set()),
        ("When Ivy was 10, she got her first console.", set()),
        ("I live with my partner Tomás and our daughter Ivy, who's six.", {("Ivy", "age", "6")}),
        ("I met Ivy, who's six feet tall.", set()),
        ("Ivy loves cats, and they also need a home, love and care.", {("Ivy", "likes", "cats")}),
        ("Ivy loves holding them and reading.", {("Ivy", "likes", "reading")}),  # an age in the past is not the age now
        ("I did this hike with my dad when I was 10 years old.", set()),
        (
            "I eat fish now, so I'm pescatarian, not vegetarian anymore.",
            {("Maya", "diet", "pescatarian"), ("Maya", "diet", "vegetarian", ENDED)},
        ),
        ("I'm pescatarian, not vegetarian.", {("Maya", "diet", "pescatarian")}),  # no sign it ever held
    ],
)
def test_offline_keeps_what_an_assistant_must_not_forget(text, facts):
    """Allergies, diet, languages, birthdays and ages are facts of the person they are about."""
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [
                {
                    "id": 1,
                    "title": "",
                    "summary": text,
                    "quotes": [],
                    "participants": ["Maya", "Ivy", "Tomás"],
                    "temporal": {},
                }
            ],
        }
    )
    keys = {"allergic_to", "diet", "speaks", "learning", "birthday", "age", "likes"}
    assert {
        (n["name"], f["key"], f["value"]) + ((f["status"],) if f.get("status", "active") != "active" else ())
        for n in proposal["nodes"]
        for f in n["facts"]
        if f["key"] in keys
    } == facts


def test_offline_names_a_pet_once():
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [
                {
                    "id": 1,
                    "title": "",
                    "summary": "And there's Biscuit, our beagle. We got the dog in 2022.",
                    "quotes": ["We have a dog called Biscuit."],
                    "participants": ["Maya"],
                    "temporal": {},
                }
            ],
        }
    )
    pets = [f["value"] for n in proposal["nodes"] for f in n["facts"] if f["key"] == "has_pet"]
    assert pets == ["dog Biscuit"]


def test_a_reply_word_before_my_dogs_names_no_dog():
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [
                {
                    "id": 1,
                    "title": "",
                    "summary": "Yeah, my dogs make Maya really happy. Rex, our dog, agrees.",
                    "quotes": [],
                    "participants": ["Maya"],
                    "temporal": {},
                }
            ],
        }
    )
    assert [f["value"] for n in proposal["nodes"] for f in n["facts"] if f["key"] == "has_pet"] == ["dog Rex"]


def test_another_pet_named_is_a_pet_of_the_speaker():
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [
                {
                    "id": 1,
                    "title": "",
                    "summary": "Maya got another cat named Bailey.",
                    "quotes": [],
                    "participants": ["Maya"],
                    "temporal": {},
                }
            ],
        }
    )
    assert [f["value"] for n in proposal["nodes"] for f in n["facts"] if f["key"] == "has_pet"] == ["cat Bailey"]


@pytest.mark.parametrize("name", ["Northwind Freight", "Universal Studios", "Acme Analytics", "Blue Harbor Group"])
def test_offline_takes_a_company_suffix_for_an_organisation(name):
    """A participant named like a company is an organisation, never a person."""
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [
                {
                    "id": 1,
                    "title": "",
                    "summary": f"Lena booked a demo with {name}, our biggest customer.",
                    "quotes": [],
                    "participants": ["Maya", "Lena", name],
                    "temporal": {},
                }
            ],
        }
    )
    assert {n["type"] for n in proposal["nodes"] if n["name"] == name} == {"organization"}


def test_offline_does_not_take_an_itinerary_stop_for_a_person():
    """A name right after a weekday in a plan ("Easter Sunday Belém") is a stop, not a person."""
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [
                {
                    "id": 1,
                    "title": "",
                    "summary": "Saturday the aquarium, Easter Sunday Belém and pastries, then home.",
                    "quotes": [],
                    "participants": ["Assistant", "Maya", "Belém"],
                    "temporal": {},
                }
            ],
        }
    )
    assert "Belém" not in {n["name"] for n in proposal["nodes"] if n["type"] == "person"}


@pytest.mark.parametrize(
    "summary, participants, not_people",
    [
        # An extractor cut a landmark in two: neither half is anybody.
        ("Fri Apr 3: tram 28 and São Jorge Castle", ["Assistant", "São Jorge", "Castle"], {"São Jorge", "Castle"}),
        # An article before a capitalised word makes it a thing ("a new Impact section").
        ("Added it under a new Impact section of the report.", ["Assistant", "Impact"], {"Impact"}),
        (
            "Plan for three hours; the Night Watch is the highlight for Ivy.",
            ["Assistant", "Night Watch", "Ivy"],
            {"Night Watch"},
        ),
        # Where a taxi, a flight or a train goes is a place.
        ("Book the taxi to Schiphol for Anouk.", ["Assistant", "Schiphol", "Anouk"], {"Schiphol"}),
        ("KLM, out of Schiphol on April 2, with Ivy.", ["Assistant", "Schiphol", "Ivy"], {"Schiphol"}),
        ("The train from Utrecht was late for Ivy.", ["Assistant", "Utrecht", "Ivy"], {"Utrecht"}),
        # "à Brás" names a dish's style, not a person.
        ("Try bacalhau à Brás with Ivy.", ["Assistant", "Brás", "Ivy"], {"Brás"}),
        # A name the sentence says is a place, a thing or an event; a people's adjective; a role.
        ("Ivy went to Woodhaven, a small town in the Midwest.", ["Assistant", "Woodhaven", "Ivy"], {"Woodhaven"}),
        ("Ivy wants to fix up her old area, West County, too.", ["Assistant", "Ivy", "West County"], {"West County"}),
        (
            "Ivy took this photo at a location called Whispering Falls.",
            ["Assistant", "Ivy", "Whispering Falls"],
            {"Whispering Falls"},
        ),
        (
            "The game was called Counter-Strike: Global Offensive, and Ivy had a blast.",
            ["Assistant", "Counter", "Strike", "Ivy"],
            {"Counter", "Strike"},
        ),
        (
            "Aragorn went from a ranger to king of Gondor, Ivy says.",
            ["Assistant", "Aragorn", "Gondor", "Ivy"],
            {"Gondor"},
        ),
        ("Ivy loved the Pride fest last year.", ["Assistant", "Pride", "Ivy"], {"Pride"}),
        (
            'Ivy just finished "A Dance with Dragons" and loved it.',
            ["Assistant", "Dance", "Dragons", "Ivy"],
            {"Dance", "Dragons"},
        ),
        (
            "Ivy is going to stay in Galway, it's great for Irish music.",
            ["Assistant", "Galway", "Irish", "Ivy"],
            {"Irish"},
        ),
        ("A fellow Chef in the kitchen, like Ivy, is a great help.", ["Assistant", "Chef", "Ivy"], {"Chef"}),
        ("It's a map of Middle-earth, Ivy says.", ["Assistant", "Middle", "Ivy"], {"Middle"}),  # a piece of a word
        (
            "Ivy is considering brands like Nike and Under Armour.",
            ["Assistant", "Ivy", "Nike", "Armour"],
            {"Nike", "Armour"},
        ),
        (
            "Congrats on those deals with Nike and Gatorade, Ivy!",
            ["Assistant", "Nike", "Gatorade", "Ivy"],
            {"Nike", "Gatorade"},
        ),
        ("We got another cat named Bailey, and Ivy loves her.", ["Assistant", "Bailey", "Ivy"], {"Bailey"}),
    ],
)
def test_offline_does_not_take_a_place_part_or_a_thing_for_a_person(summary, participants, not_people):
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [
                {"id": 1, "title": "", "summary": summary, "quotes": [], "participants": participants, "temporal": {}}
            ],
        }
    )
    people = {n["name"] for n in proposal["nodes"] if n["type"] == "person"}
    assert people & not_people == set()
    assert "Ivy" in people or "Ivy" not in participants  # the real person next to them still is one
    if "Castle" in not_people:
        assert ("São Jorge Castle", "place") in {(n["name"], n["type"]) for n in proposal["nodes"]}


def _people_in(summary: str, participants: list[str]) -> set[str]:
    """The people the offline projector makes of one card with this summary and these participants."""
    proposal = project_graph_offline(
        {
            "speakers": ["Maya"],
            "events": [
                {"id": 1, "title": "", "summary": summary, "quotes": [], "participants": participants, "temporal": {}}
            ],
        }
    )
    return {n["name"] for n in proposal["nodes"] if n["type"] == "person"}


@pytest.mark.parametrize(
    "summary",
    [
        "We visited Ana, a friend from my hometown, with Ivy.",  # beside words of places
        "I love this city, Ana said to Ivy.",
        "We saw Ana at the festival with Ivy.",
        "Ana met Ivy at the festival.",  # opening a sentence before an irregular past verb
        "Ana taught Ivy to swim.",
        "Ana heard Ivy sing.",
        "Ana, a friend from my hometown, visited Ivy.",  # opening a sentence, then said to be a relation or a role
        "Ana, a nurse at the clinic, saw Ivy.",
    ],
)
def test_a_person_is_still_a_person(summary):
    assert {"Ana", "Ivy"} <= _people_in(summary, ["Assistant", "Ana", "Ivy"])


def test_a_name_the_batch_cannot_place_is_read_in_what_other_events_say():
    batch = {
        "speakers": ["Maya"],
        "events": [
            {
                "id": 1,
                "title": "",
                "summary": "KLM from Schiphol at 07:40, with Ivy.",
                "quotes": [],
                "participants": ["Assistant", "Schiphol", "Ivy"],
                "temporal": {},
            }
        ],
    }
    people = {n["name"] for n in project_graph_offline(batch)["nodes"] if n["type"] == "person"}
    assert "Schiphol" in people  # alone, the batch cannot tell
    asked = []
    told = {"Schiphol": ["Book the taxi to Schiphol for 05:30."], "Ivy": ["Ivy went to the zoo with Maya."]}
    placed = project_graph_offline({**batch, "mentions": lambda name: asked.append(name) or told.get(name, [])})
    people = {n["name"] for n in placed["nodes"] if n["type"] == "person"}
    assert "Schiphol" not in people and "Ivy" in people
    assert sorted(asked) == ["Ivy", "Schiphol"]  # once a name, and never a speaker or a known person


def test_projection_context_offers_other_events_mentions_to_an_in_process_provider(store):
    taxi = _event("Taxi booked", "Book the taxi to Schiphol for 05:30.", participants=["Maya", "Schiphol"])
    trip = _event("Flights", "KLM from Schiphol at 07:40.", participants=["Maya", "Schiphol"])
    _event("Zoo", "Ivy went to the zoo.", participants=["Ivy"])
    events = list(Event.select().where(Event.id == trip))
    assert "mentions" not in projection_context(None, _ns_id(), events)  # a model provider gets plain data
    mentions = projection_context(None, _ns_id(), events, mentions=True)["mentions"]
    said = mentions("Schiphol")
    assert len(said) == 1 and "taxi to Schiphol" in said[0]  # the batch's own event is not repeated
    assert mentions("Lisbon") == [] and taxi != trip


def test_a_name_said_to_be_something_else_is_no_person():
    assert "Rex" not in _people_in("Rex, a good boy, sat with Ivy.", ["Assistant", "Rex", "Ivy"])


def test_a_name_cut_at_a_hyphen_between_capitals_is_still_a_person():
    assert {"Jean", "Ivy"} <= _people_in("Jean-Luc came over with Ivy.", ["Assistant", "Jean", "Ivy"])


def test_an_undated_statement_begins_when_it_was_said_not_when_its_event_happened(store):
    """ "I'm vegetarian" in a card about Saturday's dinner is vegetarian since it was said (Tuesday);
    "vegetarian since 2019" begins when the card says."""
    dinner = _event(
        "Dinner plans",
        "Ann is going out for dinner on Saturday. Ann is vegetarian.",
        participants=["Ann"],
        happened_start="2026-02-14",
        mentioned_at="2026-02-10T21:10:00+01:00",
    )
    since = _event(
        "Ann's diet",
        "Bo has been pescatarian since 2019.",
        participants=["Bo"],
        happened_start="2019",
        mentioned_at="2026-02-11T09:00:00+01:00",
    )
    for batch in ([dinner], [since]):
        context = projection_context(None, _ns_id(), [Event.get_by_id(i) for i in batch])
        assert apply_projection(_ns_id(), batch, project_graph_offline(context)).warnings == []
    diets = {
        (GraphNode.get_by_id(f.node_id).name, f.value): f.valid_from
        for f in GraphFact.select().where(GraphFact.key == "diet")
    }
    assert diets == {("Ann", "vegetarian"): "2026-02-10T21:10:00+01:00", ("Bo", "pescatarian"): "2019"}


def test_a_sentence_with_its_own_time_dates_its_facts(store):
    """One card, two times: "left Acme in 2024" dates the card; "joined Beta last month" begins Beta
    last month, not in 2024, and Acme ends in 2024."""
    moved = _event(
        "Maya's jobs",
        "Maya left Acme Inc in 2024. Maya joined Beta Corp last month.",
        participants=["Maya"],
        happened_start="2024",
        mentioned_at="2026-02-10T10:00:00+01:00",
    )
    joined = _event(
        "Maya at Acme",
        "Maya works at Acme Inc.",
        participants=["Maya"],
        happened_start="2022",
        mentioned_at="2022-05-01T10:00:00+01:00",
    )
    for batch in ([joined], [moved]):
        context = projection_context(None, _ns_id(), [Event.get_by_id(i) for i in batch])
        assert apply_projection(_ns_id(), batch, project_graph_offline(context)).warnings == []
    jobs = {
        f.value: (f.status, f.valid_from, f.valid_to) for f in GraphFact.select().where(GraphFact.key == "works_at")
    }
    assert jobs == {"Acme": ("superseded", "2022", "2024"), "Beta": ("active", "2026-01", None)}


def test_a_fact_may_say_when_it_began(store):
    e1 = _event(happened_start="2026-02-14")
    node = _node("p", "Ann", "person", [e1], facts=[("diet", "vegetarian", None)])
    node["facts"][0]["valid_from"] = "2020-05"
    pid = _apply([e1], [node]).node_ids[0]
    assert GraphFact.get(GraphFact.node == pid).valid_from == "2020-05"


def test_an_undated_end_said_in_a_plan_ends_when_it_was_said(store):
    used = _event("Ann tools", "Ann uses Vim.", participants=["Ann"], happened_start="2026-01-10")
    plan = _event(
        "Trip plans",
        "Ann is going to Lisbon on Saturday. Ann stopped using Vim.",
        participants=["Ann"],
        happened_start="2026-02-14",
        mentioned_at="2026-02-10T21:10:00+01:00",
    )
    for batch in ([used], [plan]):
        context = projection_context(None, _ns_id(), [Event.get_by_id(i) for i in batch])
        assert apply_projection(_ns_id(), batch, project_graph_offline(context)).warnings == []
    vim = GraphFact.get((GraphFact.key == "uses") & (GraphFact.value == "Vim"))
    assert (vim.status, vim.valid_to) == ("superseded", "2026-02-10T21:10:00+01:00")
    edge = GraphEdge.get(GraphEdge.relation == "uses")
    assert (edge.status, edge.valid_to) == ("superseded", "2026-02-10T21:10:00+01:00")


def test_a_person_named_with_particles_is_a_person():
    """Particles join place names ("Largo do Chafariz de Dentro") and family names alike; a
    sentence that shows someone ("lunch with", "my colleague", "said", "she") keeps the person."""
    proposal, _, _ = _offline(
        ("Maya had lunch with Ana de Souza yesterday, she is Maya's new manager.", ["Maya", "Ana de Souza"]),
        ("Maya's colleague Pieter van der Berg moved to Lisbon.", ["Maya", "Pieter van der Berg", "Lisbon"]),
        ("Maria de la Cruz said the venue is booked.", ["Maria de la Cruz"]),
        ("Maya booked an apartment near Largo do Chafariz de Dentro.", ["Maya", "Largo do Chafariz de Dentro"]),
    )
    people = {n["name"] for n in proposal["nodes"] if n["type"] == "person"}
    assert {"Ana de Souza", "Pieter van der Berg", "Maria de la Cruz", "Maya"} <= people
    assert "Largo do Chafariz de Dentro" not in people


def test_names_with_two_particles_are_one_name():
    names = {n["name"] for n in _extracted("My colleague Pieter van der Berg moved to Lisbon.")["nodes"]}
    assert "Pieter van der Berg" in names and "Pieter" not in names


def test_an_age_says_when_it_was_true(store):
    """ "age: 34" read two years on is wrong; the state carries the date it was stated (other
    facts do not go stale by themselves and stay bare)."""
    e1 = _event("Maya is 34 years old", participants=["Maya"])
    result = _apply(
        [e1], [_node("p", "Maya", "person", [e1], facts=[("age", "34", None), ("lives_in", "Utrecht", None)])]
    )
    view = node_view(result.node_ids[0])
    stated = next(f.valid_from for f in view.current_facts if f.key == "age")
    assert stated and view.current_state == f"age: 34 (as of {stated[:10]})\nlives_in: Utrecht"


def test_a_tool_taken_up_is_a_tool_not_a_person():
    """Unknown tool names after a use verb were people who 'know' the user."""
    people, edges = _extracted_graph("I started using Raycast last week.", "We switched to Linear for Atlas.")
    assert not {"Raycast", "Linear"} & people
    assert {("Maya", "uses", "Raycast", "active"), ("Maya", "uses", "Linear", "active")} <= edges
    people, edges = _extracted_graph("I switched from Jira to Linear last week.")
    assert "Linear" not in people and ("Maya", "uses", "Linear", "active") in edges
    assert ("Maya", "uses", "Jira", "active") not in edges
    people, _ = _extracted_graph("We tried Maria's lasagna recipe, she is a great cook.")
    assert "Maria" in people  # a possessive after "tried" names a person


def test_a_sentence_opening_with_someone_doing_or_someone_and_the_user_names_a_person():
    people, edges = _extracted_graph("Tomás is using Figma for the new logo.")
    assert "Tomás" in people and ("Tomás", "uses", "Figma", "active") in edges
    people, _ = _extracted_graph("Tomás and I are thinking about getting a dog next spring.")
    assert "Tomás" in people


def test_a_job_change_names_the_role_and_both_employers():
    """'started a new job as a product manager at Adyen, left Booking.com': a role said with the
    job, and a web address as an employer (it was a person called Booking)."""
    people, edges = _extracted_graph(
        "I just started a new job as a product manager at Adyen, left Booking.com after 4 years."
    )
    assert "Booking.com" not in people and "Booking" not in people
    assert ("Maya", "works_at", "Adyen", "active") in edges
    assert ("Maya", "worked_at", "Booking.com", "active") in edges
    for text, role in (
        ("I work at Booking.com as a data engineer.", "data engineer"),
        ("I just started a new job as a product manager at Adyen.", "product manager"),
        # a new role said with "now", and a promotion
        ("I'm now a data architect at Northwind Traders.", "data architect"),
        ("I got promoted to staff engineer last week.", "staff engineer"),
        # the phrase up to its last role noun, not its first
        ("I'm a lead data architect.", "lead data architect"),
    ):
        proposal = _extracted(text)
        maya = next(n for n in proposal["nodes"] if n["name"] == "Maya")
        assert {"key": "role", "value": role} in [{"key": f["key"], "value": f["value"]} for f in maya["facts"]]


def test_a_well_known_city_is_a_place_wherever_it_is_named():
    people, _ = _extracted_graph("Correction: the offsite is in Porto, not Lisbon, on June 12.")
    assert not {"Porto", "Lisbon"} & people
    proposal = _extracted("The offsite is in Porto on June 12.")
    assert ("Porto", "place") in {(n["name"], n["type"]) for n in proposal["nodes"]}


def test_a_bare_number_after_a_persons_name_is_an_age_and_an_owner_is_not_the_subject():
    proposal, facts, _ = _offline(
        ("Maya's daughter Ivy is 6 and loves drawing.", ["Maya", "Ivy"]),
        ("Tomás is forty now, and the team is 12.", ["Tomás"]),
    )
    assert ("Ivy", "age", "6") in facts and ("Tomás", "age", "40") in facts
    assert ("Ivy", "likes", "drawing") in facts and ("Maya", "likes", "drawing") not in facts
    assert not any(key == "age" and value == "12" for _, key, value in facts)


def test_flying_or_heading_somewhere_is_a_trip():
    from core.providers.offline_events import classify

    assert classify("We're flying to Tokyo on April 3") == "plan"
    _, edges = _extracted_graph(
        "We're flying to Tokyo on April 3.",
        "I'm heading to Ghent next week.",
        "Last year I flew to Reykjavik for a conference.",
        said_at="2026-03-01T10:00:00+00:00",
    )
    edges = {(who, relation, what) for who, relation, what, _ in edges}
    assert {
        ("Maya", "plans_to_visit", "Tokyo"),
        ("Maya", "plans_to_visit", "Ghent"),
        ("Maya", "visited", "Reykjavik"),
    } <= edges


def test_someones_allergy_is_theirs_not_the_speakers():
    """'Tomás is allergic to penicillin' said by Maya gave Maya the allergy: Tomás opening the
    sentence with a copula was no participant. A state only people are in names a person."""
    people, _ = _extracted_graph(
        "Tomás is allergic to penicillin, and Ivy can't have peanuts.", "Priya is vegetarian and Sam is vegan."
    )
    facts = _proposed_facts(
        _extracted("Tomás is allergic to penicillin, and Ivy can't have peanuts.", said_at="2026-03-01T10:00:00+00:00")
    )
    assert ("Tomás", "allergic_to", "penicillin") in facts and ("Maya", "allergic_to", "penicillin") not in facts
    assert {"Tomás", "Priya"} <= people


def test_an_allergy_of_someone_unnamed_is_given_to_no_one():
    """'Maya's son is allergic to eggs' and an unresolved 'She is allergic to cats' gave Maya the
    allergies; a personal fact whose holder is unnamed now goes to no one. A list is read whole,
    and the next clause is no allergen."""
    _, facts, _ = _offline(
        ("Maya's son is allergic to eggs.", ["Maya"]),
        ("She is allergic to cats, so we put the dog outside.", ["Maya"]),
        ("The doctor said Maya is allergic to ibuprofen.", ["Maya"]),
        ("Maya's daughter Ivy is allergic to peanuts and Maya is vegetarian.", ["Maya", "Ivy"]),
        ("Tomás is allergic to penicillin, shellfish and cats.", ["Tomás"]),
    )
    allergies = {(who, value) for who, key, value in facts if key == "allergic_to"}
    assert allergies == {
        ("Maya", "ibuprofen"),
        ("Ivy", "peanuts"),
        ("Tomás", "penicillin"),
        ("Tomás", "shellfish"),
        ("Tomás", "cats"),
    }
    assert ("Maya", "diet", "vegetarian") in facts


def test_each_statement_of_a_liking_keeps_its_own_subject_and_whole_list():
    _, facts, _ = _offline(
        ("Maya loves hiking, Tomás prefers chess.", ["Maya", "Tomás"]),
        ("Priya loves pottery, jazz and sushi.", ["Priya"]),
    )
    assert {
        ("Maya", "likes", "hiking"),
        ("Tomás", "prefers", "chess"),
        ("Priya", "likes", "pottery"),
        ("Priya", "likes", "jazz"),
        ("Priya", "likes", "sushi"),
    } <= facts
    assert ("Maya", "likes", "chess") not in facts and ("Maya", "prefers", "chess") not in facts


def test_someone_leading_a_project_and_a_team_named_the_x_team():
    """'Jonas is now leading the Atlas project, Priya moved to the Orion team': Jonas works on
    Atlas (it was the speaker), and Orion is a team, not a person."""
    people, edges = _extracted_graph("Jonas is now leading the Atlas project, Priya moved to the Orion team.")
    assert "Orion" not in people and {"Jonas", "Priya"} <= people
    assert ("Jonas", "works_on", "Atlas", "active") in edges and ("Maya", "works_on", "Atlas", "active") not in edges


def test_marriages_and_birth_dates():
    people, edges = _extracted_graph("Tomás and I got married in 2019 in Lisbon.", "Lena married Pieter last summer.")
    assert ("Tomás", "partner_of", "Maya", "active") in edges or ("Maya", "partner_of", "Tomás", "active") in edges
    assert ("Lena", "partner_of", "Pieter", "active") in edges
    facts = _proposed_facts(_extracted("Ivy was born on March 21, 2019.", said_at="2026-03-01T10:00:00+00:00"))
    assert ("Ivy", "birthday", "March 21") in facts


def test_being_at_a_company_as_a_role_and_starting_at_a_school():
    people, edges = _extracted_graph(
        "I used to work at Kestrel but now I'm at Northwind Freight as a data lead.",
        "Ivy started at the Montessori school in Rotterdam.",
    )
    assert ("Maya", "works_at", "Northwind Freight", "active") in edges
    assert ("Maya", "worked_at", "Kestrel", "active") in edges
    assert ("Ivy", "attends", "Montessori", "active") in edges
    assert not any(rel == "works_at" and who == "Ivy" for who, rel, _, _ in edges)


def test_another_name_someone_goes_by_is_an_alias_not_a_second_person():
    for text, who, alias in (
        ("Please call Maya Mia from now on.", "Maya", "Mia"),
        ("Tomás goes by Tom at work.", "Tomás", "Tom"),
        ("Ivy's nickname is Bean.", "Ivy", "Bean"),
    ):
        proposal, _, _ = _offline((text, [who, alias]))
        nodes = {n["name"]: n for n in proposal["nodes"]}
        assert alias not in nodes and alias in nodes[who]["aliases"], text


def test_words_joined_by_of_are_a_title_or_place_not_people():
    people, _ = _extracted_graph(
        "I finally watched Game of Thrones and then we drove to the Cliffs of Moher.",
        "Lena read Lord of the Rings twice.",
    )
    assert not {"Thrones", "Game", "Moher", "Lord", "Rings"} & people and "Lena" in people


def test_a_name_a_thing_noun_follows_or_introduces_is_no_person():
    people, _ = _extracted_graph(
        "My friend Nate was in the final of a big Valorant tournament last Saturday.",
        "We played this game Catan with Tomás.",
        "My sister's group, 'Connected LGBTQ Activists', meets on Fridays.",
    )
    assert not {"Valorant", "Catan", "Connected", "Activists"} & people
    assert {"Nate", "Tomás"} <= people


def test_a_dog_breed_is_nobody():
    people, _ = _extracted_graph(
        "Two of them are Jack Russell mixes and the other two are Chihuahua mixes, Tomás says.",
        "Pepper and Panda are Lab mixes.",
    )
    assert not {"Chihuahua", "Jack Russell", "Jack", "Lab"} & people


def _facts_of_messages(*texts: str) -> set[tuple[str, str, str]]:
    """(person, key, value) facts the offline rules read from Maya's messages, each extracted into
    cards and projected as the derive job hands them over (participants beside the card)."""
    from core.providers.offline_events import extract_events_offline

    out = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {
                        "id": i + 1,
                        "role": "user",
                        "speaker": "Maya",
                        "created_at": "2026-01-20T21:30:00+01:00",
                        "text": text,
                    }
                    for i, text in enumerate(texts)
                ],
            }
        }
    )
    events = [{"id": i + 1, **e, "participants": e["temporal"]["participants"]} for i, e in enumerate(out["events"])]
    return _proposed_facts(project_graph_offline({"events": events, "speakers": ["Maya"]}))


@pytest.mark.parametrize(
    "text, holder",
    [
        ("My sister Ana moved to Lisbon last month. She works at Google as a designer.", "Ana"),
        ("I met Tom at the gym. He works at Google as a designer.", "Tom"),
        ("Ana told me she works at Google as a designer.", "Ana"),
        # two people named: the kin word says which one "he" is
        ("Ana met my brother Tom last week. He works at Google as a designer.", "Tom"),
    ],
)
def test_she_or_he_is_the_person_named_before_not_the_speaker(text, holder):
    facts = _facts_of_messages(text)
    assert (holder, "works_at", "Google") in facts and (holder, "role", "designer") in facts
    assert not any(who == "Maya" for who, _, _ in facts)


@pytest.mark.parametrize(
    "texts",
    [
        ("I met Tom and Ana at the gym today.", "She works at Google as a designer now."),  # another card, no kin word
        ("Ana met Tom last week. She works at Google as a designer.",),  # either of two
        ("Ana and Tom visited. They work at Google as designers.",),
    ],
)
def test_a_pronoun_that_cannot_be_resolved_gives_its_fact_to_no_one(texts):
    facts = _facts_of_messages(*texts)
    assert not any(key in ("works_at", "role") for _, key, _ in facts)


def test_a_statement_about_he_or_she_is_remembered():
    """ "He is allergic to peanuts" says something about someone: a card, and a fact of the person."""
    assert ("Tom", "allergic_to", "peanuts") in _facts_of_messages("I met Tom at the gym. He is allergic to peanuts.")


def test_likes_keep_things_and_drop_clauses_compliments_and_cut_verbs():
    facts = _facts_of_messages(
        "I love hiking, pottery and sci-fi movies.",
        "I love your turtles! My loved ones are so supportive.",
        "I'd love to hear more. I love that they're a great escape.",
        "I really love going with my friends.",
        "I love the climbing hall and want my party there.",
        "I love jazz and visited the Bimhuis last week.",
    )
    likes = {value for who, key, value in facts if who == "Maya" and key == "likes"}
    assert likes == {"hiking", "pottery", "sci-fi movies", "climbing hall", "jazz"}


def test_a_corrected_name_renames_the_stored_node_and_keeps_the_wrong_one_as_alias(store):
    e1, e2 = _event("Lina joined"), _event("her name is Lena, not Lina")
    first = _apply([e1], [_node("p", "Lina", "person", [e1], facts=[("role", "data engineer", None)])]).node_ids[0]
    renamed = _apply([e2], [_node("p", "Lena", "person", [e2], aliases=["Lina"], renames=["Lina"])]).node_ids
    assert renamed == [first] and GraphNode.select().count() == 1
    node = GraphNode.get_by_id(first)
    assert node.name == "Lena" and node.aliases == ["Lina"] and node.provenance["name"] == [e2]
    assert next(a for a in node.provenance["aliases"] if a["value"] == "Lina")["source_event_ids"] == [e1, e2]
    assert find_node("Lina", "ns") == find_node("Lena", "ns") == first
    assert _facts(first, "role") == [("active", "data engineer")]


def test_a_rename_onto_a_name_another_node_bears_merges_nothing(store):
    e1, e2, e3 = _event(), _event(), _event()
    lina = _apply([e1], [_node("p", "Lina", "person", [e1])]).node_ids[0]
    lena = _apply([e2], [_node("p", "Lena", "person", [e2])]).node_ids[0]
    assert _apply([e3], [_node("p", "Lena", "person", [e3], renames=["Lina"])]).node_ids == [lena]
    assert GraphNode.get_by_id(lina).name == "Lina"


def test_offline_rules_read_a_name_correction_as_one_person():
    proposal = _extracted(
        "My new colleague Lina joined the data team last week.",
        "Sorry, her name is Lena, not Lina. She works at Acme as a data engineer.",
    )
    people = [n for n in proposal["nodes"] if n["type"] == "person" and n["name"] != "Maya"]
    assert [(n["name"], n["aliases"], n.get("renames")) for n in people] == [("Lena", ["Lina"], ["Lina"])]
    assert ("Lena", "works_at", "Acme") in _proposed_facts(proposal)
    # "It's Tuesday, not Monday" corrects no one.
    assert not any(n.get("renames") for n in _extracted("It's Tuesday, not Monday, that I fly.")["nodes"])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("I take 20mg of lisinopril every morning.", ("Maya", "lisinopril", "active")),
        ("I stopped taking sertraline last month.", ("Maya", "sertraline", "superseded")),
        ("My partner Tomás is on metformin.", ("Tomás", "metformin", "active")),
        ("Tomás takes ibuprofen for his back.", ("Tomás", "ibuprofen", "active")),
        ("I met Tom at the gym today. He is on warfarin.", ("Tom", "warfarin", "active")),
        ("I take 2 pills of melatonin before bed.", ("Maya", "melatonin", "active")),
        ("I am on vacation in April.", None),
        ("I take the bus at 8 every day.", None),
        ("My son takes 5 mg of melatonin at night.", None),  # the son is nobody we can name
    ],
)
def test_medicines_someone_takes_are_facts_of_theirs(text, expected):
    from core.providers.offline_events import extract_events_offline

    out = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {
                        "id": 1,
                        "role": "user",
                        "speaker": "Maya",
                        "created_at": "2026-01-20T21:30:00+01:00",
                        "text": text,
                    }
                ],
            }
        }
    )
    assert all(e["criticality"] == "safety" for e in out["events"]) or expected is None
    events = [{"id": i + 1, **e, "participants": e["temporal"]["participants"]} for i, e in enumerate(out["events"])]
    proposal = project_graph_offline({"events": events, "speakers": ["Maya"]})
    found = [
        (n["name"], f["value"], f.get("status", "active"))
        for n in proposal["nodes"]
        for f in n["facts"]
        if f["key"] == "takes_medication"
    ]
    assert found == ([expected] if expected else [])


@pytest.mark.parametrize("renames", ["Lina", [123, None], [], ["Lena"]])
def test_renames_that_are_malformed_or_name_nothing_stored_rename_nothing(store, renames):
    e1, e2 = _event(), _event()
    lina = _apply([e1], [_node("p", "Lina", "person", [e1])]).node_ids[0]
    result = _apply([e2], [_node("p", "Lena", "person", [e2], renames=renames)])
    assert result.node_ids != [lina] and GraphNode.get_by_id(lina).name == "Lina"


def test_a_later_she_of_the_same_speaker_means_the_sister_named_before():
    """ "My sister Ana moved to Lisbon." ... "She is allergic to cats, sadly.": the card of the later
    message lists Ana (the one person of fitting kin the speaker named a few messages back)."""
    facts = _facts_of_messages("My sister Ana moved to Lisbon last month.", "She is allergic to cats, sadly.")
    assert ("Ana", "allergic_to", "cats") in facts
    assert not any(key == "allergic_to" and who != "Ana" or value == "sadly" for who, key, value in facts)
    # A brother is no "she": the fact goes to no one.
    facts = _facts_of_messages("My brother Tom moved to Lisbon last month.", "She works at Google as a designer.")
    assert not any(key == "works_at" for _, key, _ in facts)
    # Every gendered kin word the graph's pronoun rules know serves here too.
    facts = _facts_of_messages("My stepdaughter Ana moved to Lisbon last month.", "She is allergic to cats, sadly.")
    assert ("Ana", "allergic_to", "cats") in facts
    facts = _facts_of_messages("My grandson Leo moved to Lisbon last month.", "He is allergic to cats, sadly.")
    assert ("Leo", "allergic_to", "cats") in facts


def test_a_later_she_after_someone_else_in_the_same_message_is_not_the_one_named_before():
    facts = _facts_of_messages(
        "Our neighbour Anouk offered to babysit on Saturday.", "Mum arrives on Friday. She is allergic to gluten."
    )
    assert not any(key == "allergic_to" for _, key, _ in facts)


def test_a_user_with_no_name_is_a_person_in_the_graph(store):
    """A harness that captures turns by role alone: the user is still who the memory is about."""
    from core.services.capture import append_turn
    from core.providers.base import UNNAMED_USER
    from core.services.spaces import configure_namespace

    configure_namespace("anon", block_turn_size=2)
    append_turn("anon", "t", "I'm a nurse at St Mary's Hospital in Leeds.", "Noted, thanks.")
    append_turn("anon", "t", "My sister Ana lives in Porto.", "Lovely city.")
    derive.run_pending("anon")
    people = {n.name: n for n in GraphNode.select().where(GraphNode.type == "person")}
    assert UNNAMED_USER in people and "Assistant" not in people
    facts = {(f.key, f.value) for f in GraphFact.select().where(GraphFact.node == people[UNNAMED_USER].id)}
    assert ("role", "nurse") in facts and any(key == "works_at" for key, _ in facts)
    # The user's relations reach the people they name.
    assert (
        GraphEdge.select()
        .where((GraphEdge.from_node == people[UNNAMED_USER].id) & (GraphEdge.to_node == people["Ana"].id))
        .exists()
    )


@pytest.mark.parametrize(
    "text, relation, other",
    [
        ("Our neighbour Anouk offered to babysit.", "neighbour_of", "Anouk"),
        ("My grandma Rose turns ninety next week.", "grandchild_of", "Rose"),
        ("My cousin Pedro is visiting from Recife.", "relative_of", "Pedro"),
        ("My flatmate Jo is moving out.", "lives_with", "Jo"),
    ],
)
def test_neighbours_flatmates_and_the_wider_family_are_relations(text, relation, other):
    _, edges = _extracted_graph(text)
    assert ("Maya", relation, other, "active") in edges
