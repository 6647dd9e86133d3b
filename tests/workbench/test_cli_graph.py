"""`strata graph` and `strata node`, run through a parser built from the module's register()."""

from __future__ import annotations

import argparse
import json

import pytest

from core.db import write_transaction
from core.services.events import write_event
from core.services.graph_apply import apply_projection
from core.services.spaces import get_or_create_namespace
from workbench.cli import _common
from workbench.cli import graph as graph_cli


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="strata")
    sub = parser.add_subparsers(dest="command")
    graph_cli.register(sub, _common())
    return parser


def run(capsys, *argv: str):
    args = _parser().parse_args(list(argv))
    code = args.handler(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


@pytest.fixture
def graph_db(store, db_url):
    with write_transaction():
        space = get_or_create_namespace("ns")

        def event(title, summary):
            return write_event(
                space, {"title": title, "summary": summary, "temporal": {}}, block=None, formed_turn=0
            ).id

        old, new = event("Ann in Oslo", "Ann lives in Oslo"), event("Ann moved", "Ann moved to Paris")
        ns_id = space.id

    def node(ref, name, node_type, ids, facts=()):
        return {
            "ref": ref,
            "name": name,
            "type": node_type,
            "source_event_ids": ids,
            "provenance": {"name": ids},
            "facts": [{"key": k, "value": v, "source_event_ids": ids} for k, v in facts],
        }

    apply_projection(
        ns_id,
        [old],
        {
            "nodes": [node("a", "Ann", "person", [old], [("lives_in", "Oslo")]), node("o", "Oslo", "place", [old])],
            "edges": [{"from_ref": "a", "to_ref": "o", "relation": "lives_in", "source_event_ids": [old]}],
        },
    )
    apply_projection(
        ns_id,
        [new],
        {
            "nodes": [node("a", "Ann", "person", [new], [("lives_in", "Paris")]), node("p", "Paris", "place", [new])],
            "edges": [{"from_ref": "a", "to_ref": "p", "relation": "lives_in", "source_event_ids": [new]}],
        },
    )
    return {"url": db_url, "old": old, "new": new}


def test_graph_lists_nodes_as_json(graph_db, capsys):
    rows = json.loads(run(capsys, "graph", "--db", graph_db["url"], "--namespace", "ns", "--json"))
    assert [r["name"] for r in rows] == ["Ann", "Oslo", "Paris"]
    ann = rows[0]
    assert (ann["type"], ann["facts"], ann["edges"], ann["events"], ann["namespace"]) == ("person", 1, 2, 2, "ns")
    places = json.loads(run(capsys, "graph", "--db", graph_db["url"], "--type", "place", "--query", "par", "--json"))
    assert [r["name"] for r in places] == ["Paris"]
    limited = json.loads(run(capsys, "graph", "--db", graph_db["url"], "--limit", "1", "--json"))
    assert len(limited) == 1


def test_node_shows_current_and_historical_as_json(graph_db, capsys):
    rows = json.loads(run(capsys, "graph", "--db", graph_db["url"], "--json"))
    ann_id = next(r["id"] for r in rows if r["name"] == "Ann")
    view = json.loads(run(capsys, "node", str(ann_id), "--db", graph_db["url"], "--json"))
    assert view["name"] == "Ann" and view["current_state"] == "lives_in: Paris"
    assert [(f["key"], f["value"]) for f in view["current_facts"]] == [("lives_in", "Paris")]
    assert [(f["value"], f["status"]) for f in view["historical_facts"]] == [("Oslo", "superseded")]
    assert [(r["cause"], r["text"]) for r in view["historical_facts"][0]["ended_by"]] == [("fact", "Paris")]
    assert [(e["other_name"], e["current"]) for e in view["edges_out"]] == [("Paris", True), ("Oslo", False)]
    assert [e["id"] for e in view["events"]] == [graph_db["new"], graph_db["old"]]
    oslo_id = next(r["id"] for r in rows if r["name"] == "Oslo")
    oslo = json.loads(run(capsys, "node", str(oslo_id), "--db", graph_db["url"], "--json"))
    assert [(e["relation"], e["other_name"], e["current"]) for e in oslo["edges_in"]] == [("lives_in", "Ann", False)]


def test_tables_render(graph_db, capsys):
    out = run(capsys, "graph", "--db", graph_db["url"])
    assert "Graph nodes" in out and "Paris" in out
    rows = json.loads(run(capsys, "graph", "--db", graph_db["url"], "--json"))
    out = run(capsys, "node", str(rows[0]["id"]), "--db", graph_db["url"])
    assert "Current facts" in out and "Historical facts" in out and "Supporting events" in out
    assert "replaced by Paris" in out  # why Oslo is history, in the facts table and the edge's state


def test_unknown_node_is_an_error(graph_db):
    from core.errors import NotFoundError

    args = _parser().parse_args(["node", "9999", "--db", graph_db["url"]])
    with pytest.raises(NotFoundError, match="9999"):
        args.handler(args)


def test_a_node_is_named_by_its_name_or_alias_in_any_case(graph_db, capsys):
    from core.errors import InvalidInputError, NotFoundError

    by_id = json.loads(run(capsys, "graph", "--db", graph_db["url"], "--json"))
    ann_id = next(r["id"] for r in by_id if r["name"] == "Ann")
    assert json.loads(run(capsys, "node", "ann", "--db", graph_db["url"], "--json"))["id"] == ann_id
    assert (
        json.loads(run(capsys, "node", "ann", "--namespace", "ns", "--db", graph_db["url"], "--json"))["id"] == ann_id
    )
    assert json.loads(run(capsys, "node", "  PARIS ", "--db", graph_db["url"], "--json"))["name"] == "Paris"
    assert json.loads(run(capsys, "node", "Osl", "--db", graph_db["url"], "--json"))["name"] == "Oslo"  # one match
    args = _parser().parse_args(["node", "a", "--db", graph_db["url"]])  # Ann, Paris (and not Oslo)
    with pytest.raises(InvalidInputError, match=r"2 nodes answer to 'a': .*Ann \(person \d+\).*give the id"):
        args.handler(args)
    args = _parser().parse_args(["node", "Berlin", "--db", graph_db["url"]])
    with pytest.raises(NotFoundError, match="no visible graph node is named 'Berlin'"):
        args.handler(args)
    with write_transaction():
        get_or_create_namespace("elsewhere")
    args = _parser().parse_args(["node", "Ann", "--namespace", "elsewhere", "--db", graph_db["url"]])
    with pytest.raises(NotFoundError, match="named 'Ann' in namespace 'elsewhere'"):
        args.handler(args)  # a name is looked up in the namespace asked for
