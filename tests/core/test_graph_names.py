"""The projector's in-process name index: same answers as reading every node, kept current."""

from __future__ import annotations

import re

from core.db import write_transaction
from core.models import GraphNode
from core.services.graph_names import needle, node_names, padded
from core.services.spaces import get_or_create_namespace
from core.api import open_store


def _node(ns_id: int, name: str, type_: str = "person", aliases=(), status="active", stamp="2026-01-01") -> int:
    with write_transaction():
        return GraphNode.create(
            namespace=ns_id,
            name=name,
            name_norm=re.sub(r"[\s_-]", "", name.casefold()),
            type=type_,
            aliases=list(aliases),
            tags=[],
            provenance={},
            status=status,
            confidence=0.8,
            created_at=stamp,
            updated_at=stamp,
        ).id


def _scan(ns_id: int, text: str) -> set[int]:
    """The definition: a current node whose name or alias needle occurs in the padded text."""
    found = set()
    for node in GraphNode.select().where((GraphNode.namespace == ns_id) & GraphNode.status.in_(["active", "disputed"])):
        for name in [node.name, *node.aliases]:
            n = needle(name)
            if n and n in text:
                found.add(node.id)
    return found


def test_mentions_match_a_whole_word_scan_of_every_node(store):
    with write_transaction():
        ns = get_or_create_namespace("ns").id
    ids = {
        name: _node(ns, name, t, aliases)
        for name, t, aliases in [
            ("Priya Raman", "person", ()),
            ("Ray", "person", ()),
            ("New York City", "place", ["NYC"]),
            ("St. Louis", "place", ()),
            ("北京", "place", ()),
            ("Notion", "tool", ()),
            ("O'Brien", "person", ()),
            ("Old Co", "organization", ()),
        ]
    }
    _node(ns, "Gone Person", status="merged")
    texts = [
        "Priya Raman moved to New York City with Ray.",
        "ray-tracing at st louis; nyc later",
        "我们去北京了",
        "o brien uses NOTION",
        "Priyanka and Raymond met",
        "Gone Person said hi",
        "old  co.",
    ]
    for raw in texts:
        text = padded(raw)
        assert node_names(ns).mentioned_in(text) == _scan(ns, text), raw
    assert node_names(ns).mentioned_in(padded(texts[0])) == {ids["Priya Raman"], ids["New York City"], ids["Ray"]}


def test_keys_first_names_and_types(store):
    with write_transaction():
        ns = get_or_create_namespace("ns").id
    priya = _node(ns, "Priya Raman")
    place = _node(ns, "Priya", "place")
    names = node_names(ns)
    assert names.with_keys({"priya"}) == {place}
    assert names.with_keys({"priya"}, first_names=True) == {priya, place}
    assert names.with_keys({"priyaraman"}, "person") == {priya} and names.with_keys({"priyaraman"}, "place") == set()


def test_catches_up_with_other_writers_and_deletions(db_url, store):
    with write_transaction():
        ns = get_or_create_namespace("ns").id
    first = _node(ns, "Maya")
    assert node_names(ns).mentioned_in(padded("maya and ben")) == {first}
    ben = _node(ns, "Ben", stamp="2026-02-01")  # written after the index was built
    assert node_names(ns).mentioned_in(padded("maya and ben")) == {first, ben}
    with write_transaction():
        GraphNode.update(aliases=["Benjamin"], updated_at="2026-03-01").where(GraphNode.id == ben).execute()
        GraphNode.update(status="merged", updated_at="2026-03-01").where(GraphNode.id == first).execute()
    assert node_names(ns).mentioned_in(padded("maya and benjamin")) == {ben}
    with write_transaction():
        GraphNode.delete().where(GraphNode.id == ben).execute()
    assert node_names(ns).mentioned_in(padded("benjamin")) == set()
    # A reopened store starts a new index (no answers carried over from another database object).
    open_store(db_url)
    assert node_names(ns).nodes.keys() == {first}
