"""History on request: superseded items are shown only when the question asks what held before,
and then as the chain old → new with its dates (English and Chinese)."""

from __future__ import annotations

import pytest

from core.db import write_transaction
from core.services.context import auto_context
from core.services.events import write_event
from core.search.history import requests_history
from core.services.search import search_events
from core.services.spaces import configure_namespace, get_namespace


@pytest.fixture
def ns(store):
    configure_namespace("ns", block_turn_size=2)
    return get_namespace("ns")


def _event(ns_id, title, said_on, supersedes=()):
    with write_transaction():
        return write_event(
            ns_id,
            {
                "title": title,
                "summary": title,
                "source_message_ids": [],
                "temporal": {"mentioned_at": f"{said_on}T10:00:00+00:00"},
                "relations": {"supersedes": list(supersedes)},
            },
            block=None,
            formed_turn=0,
        )


CASES = {
    "en": (
        "The Cedar service listens on port 6389",
        "The Cedar service port is now 8247",
        "Which port does the Cedar service listen on?",
        "Which port did the Cedar service use before?",
    ),
    "zh": (
        "Cedar 服务的数据库是 MySQL",
        "Cedar 服务的数据库改为 PostgreSQL",
        "Cedar 服务用什么数据库？",
        "Cedar 服务原来用什么数据库？",
    ),
}


def test_history_words_in_english_and_chinese():
    for question in (
        "What did I use before?",
        "Where did Maya work originally?",
        "I used to live in Berlin, right?",
        "What was the port previously?",
        "Has the port changed?",
        "Which app do I no longer use?",
        "端口以前是多少？",
        "原来的数据库是什么？",
        "改之前用的是哪个？",
        "之前住在哪里？",
    ):
        assert requests_history(question), question
    for question in ("Which port does Cedar use?", "What happened beforehand?", "Cedar 用什么数据库？", ""):
        assert not requests_history(question), question


@pytest.mark.parametrize("language", sorted(CASES))
def test_search_events_shows_history_only_when_asked(ns, language):
    said, correction, plain, history = CASES[language]
    old = _event(ns.id, said, "2026-03-01")
    new = _event(ns.id, correction, "2026-04-02", supersedes=[old.id])
    hits = search_events("ns", plain, track=False)
    assert [h.event.id for h in hits] == [new.id]
    # Asked for explicitly, whatever the wording.
    assert [h.event.id for h in search_events("ns", plain, track=False, history=True)] == [old.id, new.id]
    hits = search_events("ns", history, track=False)
    assert [h.event.id for h in hits] == [old.id, new.id]  # the chain, oldest first
    assert hits[0].event.status == "superseded" and hits[0].superseded_by == new.id
    assert [h.event.mentioned_at[:10] for h in hits] == ["2026-03-01", "2026-04-02"]
    # A filtered search leaves the superseded card out as well.
    assert old.id not in [h.event.id for h in search_events("ns", plain, track=False, happened_from="2000-01-01")]


def test_history_chain_follows_corrections_of_corrections(ns):
    first = _event(ns.id, "The Cedar service listens on port 6389", "2026-03-01")
    second = _event(ns.id, "Cedar moved to port 8247", "2026-04-02", supersedes=[first.id])
    third = _event(ns.id, "Cedar moved to port 9100", "2026-05-03", supersedes=[second.id])
    hits = search_events("ns", "Which port did the Cedar service listen on before?", track=False)
    assert [h.event.id for h in hits] == [first.id, second.id, third.id]
    assert [h.superseded_by for h in hits] == [second.id, third.id, None]
    assert [h.event.id for h in search_events("ns", "Which port is Cedar on?", track=False)] == [third.id]


@pytest.mark.parametrize("language", sorted(CASES))
def test_context_shows_history_only_when_asked(ns, language):
    said, correction, plain, history = CASES[language]
    old = _event(ns.id, said, "2026-03-01")
    new = _event(ns.id, correction, "2026-04-02", supersedes=[old.id])
    current = auto_context("ns", plain)
    assert current.event_ids == (new.id,) and "superseded_by" not in current.text
    past = auto_context("ns", history)
    assert past.event_ids == (old.id, new.id)
    assert f'"superseded_by":{new.id}' in past.text
    assert '"said_on":"2026-03-01"' in past.text and '"said_on":"2026-04-02"' in past.text
