"""Statements rendered once (core.db.Prepared, update_by_id, save_one) behave like peewee's own."""

from __future__ import annotations

import pytest
from peewee import Value

from core.db import Prepared, save_one, update_by_id, write_transaction
from core.models import Event, GraphNode, Job, Namespace
from core.services.capture import append_turn
from core.services.graph_apply import apply_projection
from core.services.spaces import get_namespace


def _graph(store):
    append_turn("ns", "t", "user", "Priya moved to Lisbon and uses Figma.")
    with write_transaction():
        ns = get_namespace("ns")
        events = [
            Event.create(
                namespace=ns,
                title=f"event {i}",
                summary=f"summary {i}",
                status=status,
                created_at="2026-01-01T00:00:00Z",
                updated_at="2026-01-01T00:00:00Z",
            )
            for i, status in enumerate(["active", "superseded", "forgotten", "active"])
        ]
    ids = [e.id for e in events]
    apply_projection(
        ns.id,
        ids[:2],
        {
            "nodes": [
                {
                    "ref": "p",
                    "name": "Priya",
                    "type": "person",
                    "source_event_ids": [ids[0]],
                    "provenance": {"name": [ids[0]]},
                },
                {
                    "ref": "l",
                    "name": "Lisbon",
                    "type": "place",
                    "source_event_ids": [ids[1]],
                    "provenance": {"name": [ids[1]]},
                },
            ],
            "edges": [],
        },
    )
    return ns, ids


def test_rows_equal_the_built_query_for_every_shape(store):
    ns, ids = _graph(store)
    statuses = Prepared(lambda wanted: Event.select(Event.id, Event.status).where(Event.id.in_(wanted)).tuples())
    for wanted in ([ids[0]], ids[:3], ids, ids[::-1], [ids[2], 10_000]):
        assert statuses.rows(wanted) == list(Event.select(Event.id, Event.status).where(Event.id.in_(wanted)).tuples())
    nodes = Prepared(
        lambda ns_id, kind: (
            GraphNode.select().where((GraphNode.namespace == ns_id) & (GraphNode.type == kind)).order_by(GraphNode.id)
        )
    )
    for kind in ("person", "place", "tool"):
        got = nodes.rows(ns.id, kind)
        want = list(
            GraphNode.select().where((GraphNode.namespace == ns.id) & (GraphNode.type == kind)).order_by(GraphNode.id)
        )
        assert [n.__data__ for n in got] == [n.__data__ for n in want]
        assert all(isinstance(n, GraphNode) and not n._dirty for n in got)
    assert nodes.first(ns.id, "person").name == "Priya"
    assert nodes.first(ns.id, "tool") is None
    assert nodes.get(ns.id, "place").name == "Lisbon"
    with pytest.raises(GraphNode.DoesNotExist):
        nodes.get(ns.id, "tool")


def _same_rows(got: list, want: list) -> None:
    assert [type(r) for r in got] == [type(r) for r in want]
    for a, b in zip(got, want):
        if isinstance(b, (tuple, dict)):
            assert a == b and list(a) == list(b)  # keys in the same order too
        else:
            assert (a.__data__, list(a.__data__), a._dirty, a.__rel__, a.__dict__.keys()) == (
                b.__data__,
                list(b.__data__),
                b._dirty,
                b.__rel__,
                b.__dict__.keys(),
            )


@pytest.mark.parametrize("shape", ["model", "model-some-fields", "model-alias", "dict", "tuple", "join"])
def test_later_runs_convert_rows_as_the_first_did(store, shape):
    """The first run goes through peewee's cursor wrapper; later runs through the reader learnt
    from it (or peewee again, for what it does not read): the same rows either way, JSON and
    foreign keys converted, nothing dirty, aliases as attributes."""
    _ns, ids = _graph(store)
    Event.update(tags=["a", "b"], quotes=[{"text": "q"}]).where(Event.id == ids[0]).execute()
    build = {
        "model": lambda wanted: Event.select().where(Event.id.in_(wanted)).order_by(Event.id),
        "model-some-fields": lambda wanted: (
            Event.select(Event.id, Event.block, Event.tags, Event.namespace_id)
            .where(Event.id.in_(wanted))
            .order_by(Event.id)
        ),
        "model-alias": lambda wanted: (
            Event.select(Event.id, Event.title.alias("label")).where(Event.id.in_(wanted)).order_by(Event.id)
        ),
        "dict": lambda wanted: (
            Event.select(Event.id, Event.tags, Event.namespace).where(Event.id.in_(wanted)).order_by(Event.id).dicts()
        ),
        "tuple": lambda wanted: (
            Event.select(Event.id, Event.quotes, Event.title).where(Event.id.in_(wanted)).order_by(Event.id).tuples()
        ),
        "join": lambda wanted: (
            Event.select(Event, Namespace).join(Namespace).where(Event.id.in_(wanted)).order_by(Event.id)
        ),
    }[shape]
    statement = Prepared(build)
    for wanted in ([10_000], ids[:2], ids, [ids[0]], ids[1:]):  # the first run finds nothing: nothing learnt
        _same_rows(statement.rows(wanted), list(build(wanted)))
    readers = [entry[3] for entry in statement._shapes.values() if entry[3] is not None]
    if shape in ("join", "model-alias"):  # related models, attributes outside __data__: peewee's own
        assert not readers
    else:
        assert readers and readers[0].kind == shape.split("-")[0]
    if shape == "model":
        first = statement.get(ids[:1])
        assert first.tags == ["a", "b"] and first.namespace_id == _ns.id and first.namespace.name == "ns"
        first.title = "changed"
        assert first._dirty == {"title"}


def test_none_and_booleans_change_the_statement(store):
    _ns, ids = _graph(store)
    pick = Prepared(
        lambda event_id, only_active: (
            Event.select(Event.id)
            .where((Event.id == event_id) & (Event.status == "active") if only_active else Event.id == event_id)
            .tuples()
        )
    )
    assert pick.rows(ids[1], False) == [(ids[1],)]
    assert pick.rows(ids[1], True) == []
    assert pick.rows(ids[0], True) == [(ids[0],)]
    blocks = Prepared(
        lambda block: (
            Event.select(Event.id)
            .where(Event.block.is_null() if block is None else Event.block == block)
            .order_by(Event.id)
            .tuples()
        )
    )
    assert blocks.rows(None) == [(i,) for i in ids]


def test_a_converted_argument_is_refused_not_silently_wrong(store):
    _graph(store)
    by_aliases = Prepared(lambda aliases: GraphNode.select().where(GraphNode.aliases == aliases))
    with pytest.raises(TypeError, match="does not reach the statement"):
        by_aliases.rows("x")
    with pytest.raises(TypeError, match="must be int, float, str"):
        Prepared(lambda value: Event.select().where(Event.id == value)).rows(b"1")


def test_updates_count_rows_and_convert_json(store):
    ns, ids = _graph(store)
    touch = Prepared(
        lambda stored, event_id: Event.update({Event.participant_node_ids: Value(stored)}).where(Event.id == event_id)
    )
    with write_transaction():
        assert touch.execute(Event.participant_node_ids.db_value([3, 1]), ids[0]) == 1
        assert touch.execute("[]", 10_000) == 0
    assert Event.get_by_id(ids[0]).participant_node_ids == [3, 1]
    job = Job.create(namespace=ns, kind="graph", status="running", created_at="x", updated_at="x")
    with write_transaction():
        assert update_by_id(Job, job.id, {"status": "succeeded", "payload": {"node_ids": [1, 2]}}) == 1
    stored = Job.get_by_id(job.id)
    assert (stored.status, stored.payload, stored.kind) == ("succeeded", {"node_ids": [1, 2]}, "graph")


def test_save_one_writes_every_loaded_field_like_save(store):
    ns, _ids = _graph(store)
    node = GraphNode.select().where(GraphNode.name == "Priya").get()
    twin = GraphNode.get_by_id(node.id)
    node.aliases = ["Pri", "P."]
    node.provenance = {"name": [1], "aliases": [], "tags": []}
    twin.aliases, twin.provenance = list(node.aliases), dict(node.provenance)
    with write_transaction():
        assert save_one(node) == 1
    after = GraphNode.get_by_id(node.id)
    assert after.__data__ == node.__data__ and not node._dirty
    with write_transaction():
        twin.save()
    assert GraphNode.get_by_id(node.id).__data__ == after.__data__
    partial = Namespace.select(Namespace.id, Namespace.revision).where(Namespace.id == ns.id).get()
    partial.revision += 5
    with write_transaction():
        save_one(partial)
    full = Namespace.get_by_id(ns.id)
    assert full.revision == partial.revision and full.name == "ns"  # fields not loaded stay as they were


def test_float_arguments_compare_as_floats(store):
    ns, _ids = _graph(store)
    early, late = (
        Job.create(namespace=ns, kind="graph", status="failed", next_retry_at=at, created_at="x", updated_at="x")
        for at in (10.5, 20.25)
    )
    due = Prepared(lambda now: Job.select(Job.id).where(Job.next_retry_at <= now).order_by(Job.id).tuples())
    assert due.rows(15.0) == [(early.id,)]
    assert due.rows(20.25) == [(early.id,), (late.id,)]
    assert due.rows(1.0) == []


def test_in_lists_render_once_per_size_class(store):
    _ns, ids = _graph(store)
    statuses = Prepared(lambda wanted: Event.select(Event.id).where(Event.id.in_(wanted)).order_by(Event.id).tuples())
    for length in range(1, 40):
        wanted = [ids[i % len(ids)] for i in range(length)] + [50_000 + length]
        assert statuses.rows(wanted) == [(i,) for i in sorted(set(wanted) & set(ids))]
    assert len(statuses._shapes) == 6  # 2, 4, 8, 16, 32, 64 items
    with pytest.raises(TypeError, match="all of one type"):
        statuses.rows([ids[0], "x"])
    assert statuses.rows([True, ids[1]]) == list(  # a stray boolean id binds as peewee binds it
        Event.select(Event.id).where(Event.id.in_([True, ids[1]])).order_by(Event.id).tuples()
    )
    assert statuses.rows([]) == []


@pytest.mark.parametrize("seeks", [5_000, 2], ids=["seek-per-value", "plain-scan"])
def test_distinct_values_equal_select_distinct(store, monkeypatch, seeks):
    """One index seek per value, or the plain scan past the limit: the same sorted values."""
    import core.db as core_db
    from core.db import bulk_insert, distinct_values
    from core.models import EventParticipant

    monkeypatch.setattr(core_db, "DISTINCT_SEEKS", seeks)
    _, ids = _graph(store)
    pairs = [(0, "maya"), (1, "priya"), (2, "maya"), (3, "jonas"), (0, "ana de souza"), (2, "priya")]
    names = [n for _, n in pairs]
    with write_transaction():
        bulk_insert(EventParticipant, ["event_id", "name", "name_norm"], [(ids[e], n.title(), n) for e, n in pairs])
    expected = [
        n
        for (n,) in EventParticipant.select(EventParticipant.name_norm)
        .distinct()
        .order_by(EventParticipant.name_norm)
        .tuples()
    ]
    assert distinct_values(EventParticipant.name_norm) == expected == sorted(set(names))
