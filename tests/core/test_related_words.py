"""Class words ("pets", "airline") also look for the words that answer them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.models import Message
from core.search.analyze import analyze
from core.search.related import ABSENT_WEIGHT, RELATED_WEIGHT, class_words, related_weights
from core.services.capture import append_messages
from core.services.retrieval import DEFAULT_PARAMS, default_retrieval
from core.services.spaces import configure_namespace


def test_a_class_word_adds_its_answers_at_a_lower_weight():
    terms = analyze("what pets does Ana have")
    extra = related_weights(terms)
    assert extra is not None
    assert extra[analyze("dog")[0]] == RELATED_WEIGHT and extra[analyze("turtles")[0]] == RELATED_WEIGHT
    assert not set(terms) & set(extra)  # the question's own words keep their full weight
    assert class_words(terms) == set(analyze("pets"))


def test_answers_stand_in_for_a_class_word_no_document_holds():
    terms = analyze("which airline did we pick")
    extra = related_weights(terms, absent=frozenset(analyze("airline")))
    assert extra is not None and extra[analyze("flights")[0]] == ABSENT_WEIGHT
    assert ABSENT_WEIGHT > RELATED_WEIGHT


def test_where_someone_stays_looks_for_the_place_booked():
    extra = related_weights(analyze("where are we staying in Lisbon"))
    assert extra is not None
    assert {analyze(word)[0] for word in ("apartment", "hotel", "booked")} <= set(extra)


def test_a_question_without_class_words_is_left_alone():
    assert related_weights(analyze("when did Ana paint the harbour")) is None
    assert class_words(analyze("when did Ana paint the harbour")) == set()


@pytest.fixture
def said(store):
    configure_namespace("ns", block_turn_size=2)
    lines = [
        "Ana: we finally adopted a dog last week, his name is Rex, a cheerful pup.",
        "Ben: the quarterly numbers look fine, nothing to report.",
        "Ana: I picked a new desk lamp, the brass one.",
        "Ben: we picked the venue for the offsite, the old mill.",
        "Cas: the printer on the second floor is jammed again.",
        "Ben: they picked the caterer, it is the one from last year.",
    ]
    for n, line in enumerate(lines):  # a thread each: no neighbour lends a message its score
        speaker, content = line.split(": ", 1)
        append_messages("ns", f"t{n}", [{"role": "user", "speaker": speaker, "content": content}], close_turn=True)
    return {m.content.split()[2]: m.id for m in Message.select()}


def test_retrieval_finds_the_answer_to_a_class_word(said):
    top = default_retrieval("ns", "Which pets came up?", limit=1)
    assert top[0].message_id == said["adopted"]
    without = default_retrieval("ns", "Which pets came up?", limit=4, params=replace(DEFAULT_PARAMS, related_weight=0))
    assert said["adopted"] not in [hit.message_id for hit in without]


def test_answers_stand_in_at_more_weight_when_no_message_says_the_class_word(said, monkeypatch):
    # "picked" is in three messages of six; at the low weight "dog" would lose to it.
    top = default_retrieval("ns", "Which pet did we pick?", limit=1)
    assert top[0].message_id == said["adopted"]
    monkeypatch.setattr("core.search.related.ABSENT_WEIGHT", RELATED_WEIGHT)
    assert default_retrieval("ns", "Which pet did we pick?", limit=1)[0].message_id != said["adopted"]


def test_a_message_saying_the_class_word_itself_still_ranks_first(store):
    configure_namespace("ns", block_turn_size=2)
    append_messages(
        "ns",
        "t",
        [
            {"role": "user", "speaker": "Ana", "content": "Our dog Rex chewed the sofa again."},
            {"role": "user", "speaker": "Ana", "content": "No pets are allowed in the new flat, sadly."},
        ],
        close_turn=True,
    )
    top = default_retrieval("ns", "Are pets allowed in the flat?", limit=2)
    assert "pets" in Message.get_by_id(top[0].message_id).content


def test_asking_what_was_chosen_finds_what_was_decided_or_booked(store):
    configure_namespace("ns", block_turn_size=2)
    lines = [
        "Ben: the pipeline dashboard is slow again today.",
        "Ana: we decided to stay on Airflow for the pipeline.",
        "Cas: the pipeline docs need a refresh before Friday.",
    ]
    for n, line in enumerate(lines):
        speaker, content = line.split(": ", 1)
        append_messages("ns", f"t{n}", [{"role": "user", "speaker": speaker, "content": content}], close_turn=True)
    decided = Message.get(Message.content.contains("decided")).id
    assert default_retrieval("ns", "Which scheduler did we choose for the pipeline?", limit=1)[0].message_id == decided
    plain = replace(DEFAULT_PARAMS, related_weight=0)
    assert (
        default_retrieval("ns", "Which scheduler did we choose for the pipeline?", limit=1, params=plain)[0].message_id
        != decided
    )
    extra = related_weights(analyze("which flight did we pick"))
    assert extra is not None and analyze("booked")[0] in extra and analyze("decided")[0] in extra
