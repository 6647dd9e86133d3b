"""The offline extractor: which statements become cards, and what each card carries."""

from __future__ import annotations

import random
import re

import pytest

from core.models import Event, EventSource, Message
from core.providers import offline_events, offline_graph
from core.providers.offline_events import classify, criticality, extract_events_offline, informative, third_person
from core.services.capture import append_messages
from core.services.derive import run_pending
from core.services.events import get_event
from core.services.spaces import configure_namespace
from core.text import ENDS_IN_TITLE, CaselessPattern, TITLE_REACH, prose, search_at_end, sentences


def _context(messages, timeline=()):
    return {
        "target": {
            "messages": [
                {"id": i + 1, "role": role, "speaker": speaker, "created_at": "2023-05-08T13:56:00+02:00", "text": text}
                for i, (role, speaker, text) in enumerate(messages)
            ]
        },
        "speakers": ["Caroline", "Melanie"],
        "timeline": list(timeline),
    }


def test_greetings_fillers_and_bare_questions_are_not_events():
    for text in (
        "Hey Mel! Good to see you!",
        "ok",
        "Thanks!",
        "How have you been?",
        "Wow, that's great!",
        "好的",
        "Good luck with planning.",
        "Have fun in Lisbon!",
        "Best of luck tomorrow!",
        "Great news!",
        "Happy birthday to Ivy!",
        "I'll keep that in mind.",
    ):
        assert not informative(text), text
    for text in (
        "I went to a LGBTQ support group yesterday.",
        "My sister Ana lives in Porto.",
        "We adopted two cats in 2019.",
        "Great news, Ivy lost her first tooth today.",
        "Good news: Tomás got the grant.",
        "I'll keep that in mind when we plan the Lisbon trip in May.",
    ):
        assert informative(text), text


def test_one_card_per_informative_message_citing_it():
    result = extract_events_offline(
        _context(
            [
                ("user", "Caroline", "Hey Mel! Good to see you!"),
                ("assistant", "Melanie", "Hi! I'm swamped with the kids & work."),
                ("user", "Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
            ]
        )
    )
    events = result["events"]
    assert result["should_extract"] and [e["source_message_ids"] for e in events] == [[2], [3]]
    support = events[1]
    assert support["title"].startswith("Caroline went to a LGBTQ support group")
    assert support["temporal"]["happened_start"] == "2023-05-07" and support["temporal"]["precision"] == "day"
    assert support["temporal"]["basis"] == "relative" and support["temporal"]["original_text"] == "yesterday"
    assert support["temporal"]["status"] == "occurred" and support["temporal"]["participants"][0] == "Caroline"
    assert support["quotes"] == ["I went to a LGBTQ support group yesterday and it was so powerful."]


def test_a_short_answer_cites_its_question():
    events = extract_events_offline(
        _context(
            [
                ("user", "Caroline", "What did you paint last week?"),
                ("assistant", "Melanie", "A lake sunrise, I painted it twice."),
            ]
        )
    )["events"]
    assert events[0]["source_message_ids"] == [1, 2]
    assert "What did you paint" in events[0]["summary"]


def test_two_dated_statements_in_one_message_make_two_cards():
    events = extract_events_offline(
        _context(
            [
                ("user", "Caroline", "I moved to Utrecht two years ago. Next month I start a new job at Kestrel."),
            ]
        )
    )["events"]
    assert len(events) == 2
    assert events[0]["temporal"]["happened_start"] == "2021" and events[0]["temporal"]["precision"] == "year"
    assert events[1]["temporal"]["happened_start"] == "2023-06" and events[1]["temporal"]["status"] == "planned"


def test_correction_supersedes_the_same_persons_earlier_event():
    timeline = [
        {
            "id": 41,
            "title": "Caroline keeps notes in Notion",
            "summary": "Caroline keeps her notes in Notion.",
            "participants": ["Caroline"],
        },
        {
            "id": 42,
            "title": "Melanie keeps notes in Notion",
            "summary": "Melanie keeps notes in Notion too.",
            "participants": ["Melanie"],
        },
    ]
    events = extract_events_offline(
        _context(
            [
                ("user", "Caroline", "I no longer keep my notes in Notion, I switched to Obsidian."),
            ],
            timeline,
        )
    )["events"]
    assert events[0]["temporal"]["supersedes_event_ids"] == [41]
    assert events[0]["temporal"]["event_type"] == "change"


def test_ordinary_stories_do_not_supersede():
    timeline = [
        {
            "id": 7,
            "title": "Caroline painted a sunset",
            "summary": "Caroline painted a sunset.",
            "participants": ["Caroline"],
        }
    ]
    events = extract_events_offline(
        _context([("user", "Caroline", "I painted another sunset at the lake.")], timeline)
    )["events"]
    assert "supersedes_event_ids" not in events[0]["temporal"]


def _cards(*messages):
    """Cards of (role, speaker, created_at, text) messages by the ids of the messages they cite."""
    out = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {"id": i + 1, "role": role, "speaker": speaker, "created_at": at, "text": text}
                    for i, (role, speaker, at, text) in enumerate(messages)
                ],
            }
        }
    )
    return {tuple(e["source_message_ids"]): e for e in out["events"]}


def test_what_is_dated_ahead_of_when_it_was_said_is_planned():
    cards = _cards(
        (
            "user",
            "Maya",
            "2026-01-20T21:30:00+01:00",
            "Let's organise a family trip to Lisbon! Me, Tomás and Ivy, from Thursday March 19 to Tuesday March 24.",
        ),
        (
            "user",
            "Maya",
            "2026-01-20T21:35:00+01:00",
            "Tomás booked the Lisbon apartment on January 12, it has a kitchen.",
        ),
    )
    assert cards[(1,)]["temporal"]["status"] == "planned" and cards[(2,)]["temporal"]["status"] != "planned"


def test_the_assistants_our_stays_ours():
    cards = _cards(
        (
            "user",
            "Maya",
            "2026-03-03T10:00:00+01:00",
            "The freshness check on our shipments table failed this morning.",
        ),
        (
            "assistant",
            "Assistant",
            "2026-03-03T10:01:00+01:00",
            "It's upstream: the carrier's server timed out. Our pipeline is fine, nothing to fix.",
        ),
    )
    assert "Maya's shipments table" in cards[(1,)]["summary"]
    assert "Our pipeline is fine" in cards[(2,)]["summary"] and "Assistant's" not in cards[(2,)]["summary"]


def test_lines_written_for_someone_else_to_say_keep_their_i():
    """A quoted block, or an assistant's bracketed translation, is a line for the user to say: its "my" is
    not the speaker's. The assistant's own words around it are still rewritten."""
    text = (
        'Here is a short version for the waiter:\n"A minha filha tem uma alergia grave a amendoins."\n'
        "(My daughter has a severe peanut allergy. I need a dish without peanuts.)\n"
        "I checked my notes: the restaurant opens at 19:00 on Tuesdays."
    )
    summary = " ".join(
        e["summary"] for e in _cards(("assistant", "Assistant", "2026-02-24T20:48:00+01:00", text)).values()
    )
    assert "My daughter has a severe peanut allergy" in summary and "Assistant's daughter" not in summary
    assert "Assistant checked Assistant's notes" in summary


def test_classification_and_criticality():
    assert classify("We decided to go with Airflow") == "decision"
    assert classify("The offsite was cancelled") == "cancellation"
    assert classify("I'm planning to visit Lisbon") == "plan"
    assert classify("We launched the new site") == "release"
    assert classify("We picked the blue one") == "decision"
    assert classify("We picked up Ivy's new passport, so that's sorted") == "other"  # fetched, not chosen
    assert classify("Meeting with Jonas about the roadmap") == "meeting"
    assert classify("Maya keeps her meeting notes in Notion") == "other"
    # A decision not to migrate is a decision; an agreement is one too.
    assert classify("We decided to stay on Airflow instead of migrating to Dagster") == "decision"
    assert classify("Decision recorded: Atlas stays on Airflow") == "decision"
    assert classify("We agreed fct_orders should merge on order_id") == "decision"
    assert classify("We migrated the warehouse to Snowflake") == "migration"
    # "change" as a verb or an announcement is a change; as a thing shipped or shown it is not.
    assert classify("The swimming school changed its schedule") == "change"
    assert classify("Small itinerary change: we're swapping the days") == "change"
    assert classify("Show Maya the change") == "other"
    assert classify("Jonas merged the fct_orders change on Friday") == "task_completed"
    assert classify("The nightly run has been failing since the merge change") == "incident"
    assert criticality("Ivy is allergic to peanuts") == "safety"
    assert criticality("I'm a data engineer") == "identity"
    assert criticality("I love hiking") == "preference"
    assert criticality("I bought bread") == "routine"
    assert third_person("I think my cat likes me", "Ana") == "Ana thinks Ana's cat likes Ana"
    assert third_person("I live in Utrecht and I really enjoy it", "Ana") == (
        "Ana lives in Utrecht and Ana really enjoys it"
    )
    assert third_person("I don't study, I go and I try", "Ana") == "Ana doesn't study, Ana goes and Ana tries"
    assert third_person("I moved and I can swim", "Ana") == "Ana moved and Ana can swim"  # past, modal: as they are
    assert third_person("We live here with our daughter; ours is the blue door", "Ana") == (
        "We live here with Ana's daughter; ours is the blue door"
    )  # "we" and "ours" name no one alone
    assert third_person("Our pipeline is fine", "Assistant", ours=False) == "Our pipeline is fine"  # the user's
    # what a sentence quotes is someone's own words: Tomás's back, Ivy's room
    assert third_person('Tomás told me "my back hurts", so I stayed', "Ana") == (
        'Tomás told Ana "my back hurts", so Ana stayed'
    )
    assert third_person("Ivy keeps saying “I want my own room” since my birthday", "Ana") == (
        "Ivy keeps saying “I want my own room” since Ana's birthday"
    )


def test_a_name_opening_a_sentence_is_a_participant_when_the_block_names_it_elsewhere():
    """ "Tomás will take him" names Tomás when the block says "my partner Tomás" too; a capitalised
    word that only ever opens sentences ("Lovely", "Sure") is not a name."""
    out = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {
                        "id": 1,
                        "role": "user",
                        "speaker": "Maya",
                        "text": "I live here with my partner Tomás and our dog.",
                        "created_at": "2026-01-13T20:20:00+01:00",
                    },
                    {
                        "id": 2,
                        "role": "user",
                        "speaker": "Maya",
                        "text": "Tomás will take the dog to the vet on Thursday.",
                        "created_at": "2026-01-13T20:25:00+01:00",
                    },
                    {
                        "id": 3,
                        "role": "user",
                        "speaker": "Maya",
                        "text": "Lovely weather today, we walked to the harbour.",
                        "created_at": "2026-01-13T20:30:00+01:00",
                    },
                ],
            }
        }
    )
    by_source = {tuple(e["source_message_ids"]): e["temporal"]["participants"] for e in out["events"]}
    assert "Tomás" in by_source[(2,)]
    assert all("Lovely" not in p for p in by_source.values())


@pytest.mark.parametrize(
    "text, named",
    [
        ("Maya lives in Lisbon.", ["Maya", "Lisbon"]),
        ("Priya started playing the cello in 2020.", ["Priya"]),
        ("Maya Chen really loves Porto.", ["Maya Chen", "Porto"]),
        ("We met in June. Jonas moved to Oslo after that.", ["Jonas", "Oslo"]),
        # What opens a sentence without being anybody.
        ("Coffee is great.", []),
        ("Music has a way of bringing back memories.", []),
        ("Work got busy. Lunch looks good.", []),
        ("Safe travels and see you soon.", []),
        ("Studies show that sleep matters.", []),
        ("Nothing works here. Everything changed.", []),
        ("Recently started learning an instrument.", []),
        ("Happily married for ten years now.", []),
        ("Also started a new job.", []),
        ("Doctors said the knee is fine, the doctor was kind.", []),
        # A greeting or a verb before the name is not part of it.
        ("Bet Max loves that park by the river.", ["Max"]),
        ("Thanks Ana for the great tip about the early ferry.", ["Ana"]),
        ("I met Hope Smith at the climbing gym today.", ["Hope Smith"]),
        # A month or weekday after a name is no part of it; a list item opens a sentence.
        ("My mum Ruth flies in from Dublin February 20-27, landing at Schiphol.", ["Ruth", "Dublin", "Schiphol"]),
        ("Agenda for the sync: 1) Progress since last time, 2) Blockers, 3) Owners for next week.", []),
        ("Done so far: 1) Maya booked the flights, 2) Tomás moved the vet visit.", ["Maya", "Tomás"]),
        # Place names run on across particles and past a holiday before them.
        (
            "We booked a flat near Largo do Chafariz de Dentro and Parque das Nações.",
            ["Largo do Chafariz de Dentro", "Parque das Nações"],
        ),
        ("Then tram 28 to São Jorge Castle, and on Easter Sunday Belém.", ["São Jorge Castle", "Belém"]),
        # A time zone names no place.
        ("Since the deploy the API writes updated_at in Europe/Amsterdam local time, Jonas said.", ["Jonas"]),
    ],
)
def test_a_name_opening_a_sentence_is_a_participant_when_a_person_verb_follows(text, named):
    """A one-sentence statement ("Maya lives in Lisbon.") has no other place to name Maya in."""
    out = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {
                        "id": 1,
                        "role": "user",
                        "speaker": "User",
                        "text": text,
                        "created_at": "2026-01-13T20:20:00+01:00",
                    }
                ],
            }
        }
    )
    participants = [p for e in out["events"] for p in e["temporal"]["participants"] if p != "User"]
    assert participants == named


def test_a_card_opening_with_a_request_is_titled_by_what_it_states():
    text = "Can you help me keep track of family stuff too? I live in Utrecht with my partner Tomás."
    out = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {
                        "id": 1,
                        "role": "user",
                        "speaker": "Maya",
                        "text": text,
                        "created_at": "2026-01-13T20:20:00+01:00",
                    }
                ],
            }
        }
    )
    assert [e["title"] for e in out["events"]] == ["Maya lives in Utrecht with Maya's partner Tomás."]
    assert out["events"][0]["summary"].startswith("Can you help Maya keep track")
    only_asks = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {
                        "id": 1,
                        "role": "user",
                        "speaker": "Maya",
                        "text": "Could you remind me what Tomás said about the 3rd?",
                        "created_at": "2026-01-13T20:20:00+01:00",
                    }
                ],
            }
        }
    )
    assert [e["title"] for e in only_asks["events"]] == ["Could you remind Maya what Tomás said about the 3rd?"]


def test_days_and_holidays_are_not_participants():
    text = (
        "Ivy has swimming on Wednesdays and piano on Thursdays. "
        "Tomás and I are going out for Valentine's dinner, then Halloween with Ivy."
    )
    out = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {
                        "id": 1,
                        "role": "user",
                        "speaker": "Maya",
                        "text": text,
                        "created_at": "2026-02-10T21:10:00+01:00",
                    }
                ],
            }
        }
    )
    assert {p for e in out["events"] for p in e["temporal"]["participants"]} == {"Maya", "Ivy", "Tomás"}


def test_sentences_keep_unpunctuated_lines_and_titles():
    assert sentences("Plans:\nbook the ferry\nask Ana to water the plants") == [
        "Plans:",
        "book the ferry",
        "ask Ana to water the plants",
    ]  # the first lines were dropped
    assert sentences("Saw Dr. Visser and Mrs. Jones. Then home!") == ["Saw Dr. Visser and Mrs. Jones.", "Then home!"]
    assert sentences("It was fine, Dr.\nNext week again.") == ["It was fine, Dr.", "Next week again."]


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "Carrier comparison moved to v1.1. The v1 scope is smaller.",
            ["Carrier comparison moved to v1.1.", "The v1 scope is smaller."],
        ),
        ("It costs 3.50 euros! Really? Yes.", ["It costs 3.50 euros!", "Really?", "Yes."]),
        ("See example.com for the docs. ok", ["See example.com for the docs.", "ok"]),
        ('He said "see you." Then he left.', ['He said "see you."', "Then he left."]),
        ("Wait...what happened", ["Wait...what happened"]),
        ("我很好。你呢？好的", ["我很好。", "你呢？", "好的"]),
    ],
)
def test_a_full_stop_inside_a_word_or_number_ends_no_sentence(text, expected):
    assert sentences(text) == expected


def test_lists_are_statements_and_pasted_code_is_not():
    """Each item of a list is read (before, a line without end punctuation was dropped); a fenced
    log says nothing about anyone; bold labels and bullets are markup, not names."""
    text = (
        "Here is the plan:\n- Jan 23: staging models done\n- Feb 20: feature freeze\n"
        "**Date detected:** 2026-01-27\n```\n[2026-01-27 00:31] INFO - Executing <Task: run>\n"
        "retries=4,\n) = 1\n```\nThe nightly job failed again."
    )
    out = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {
                        "id": 1,
                        "role": "user",
                        "speaker": "Maya",
                        "text": text,
                        "created_at": "2026-01-28T09:00:00+01:00",
                    }
                ],
            }
        }
    )
    quotes = [q for e in out["events"] for q in e["quotes"]]
    assert "Jan 23: staging models done" in quotes and "Feb 20: feature freeze" in quotes
    assert "Date detected: 2026-01-27" in quotes and "The nightly job failed again." in quotes
    assert not any("INFO" in q or "retries" in q or ") = 1" in q for q in quotes)
    participants = {p for e in out["events"] for p in e["temporal"]["participants"]}
    assert participants == {"Maya"}
    assert prose("**Done** with manual__run\n1. Book it\n```\nnever closed") == "Done with manual__run\nBook it\n"


def test_a_title_does_not_cut_a_card_or_make_a_participant():
    out = extract_events_offline(
        {
            "target": {
                "id": 1,
                "messages": [
                    {
                        "id": 1,
                        "role": "user",
                        "speaker": "Maya",
                        "created_at": "2026-01-13T20:20:00+01:00",
                        "text": "I booked Biscuit in with Dr. Visser at the Oudwijk clinic for Thursday at 17:30.",
                    }
                ],
            }
        }
    )
    (event,) = out["events"]
    assert "Dr. Visser at the Oudwijk clinic" in event["title"]
    assert "Visser" in event["temporal"]["participants"] and "Dr" not in event["temporal"]["participants"]


def test_derivation_end_to_end_cites_messages_inside_the_block(store):
    configure_namespace("ns", block_turn_size=2)
    append_messages(
        "ns",
        "t",
        [
            {
                "role": "user",
                "speaker": "Maya",
                "content": "I adopted a beagle called Biscuit last week.",
                "created_at": "2026-02-03T09:00:00+01:00",
            },
            {
                "role": "assistant",
                "speaker": "Assistant",
                "content": "Congratulations!",
                "created_at": "2026-02-03T09:01:00+01:00",
            },
            {
                "role": "user",
                "speaker": "Maya",
                "content": "We decided to take Biscuit to Dr. Visser on Friday.",
                "created_at": "2026-02-03T09:02:00+01:00",
            },
            {
                "role": "assistant",
                "speaker": "Assistant",
                "content": "Good plan.",
                "created_at": "2026-02-03T09:03:00+01:00",
            },
        ],
        close_turn=True,
    )
    run_pending("ns")
    events = list(Event.select())
    assert len(events) >= 2
    for event in events:
        cited = [s.message for s in EventSource.select().where(EventSource.event == event)]
        assert cited and all(m.block_id == event.block_id for m in cited)
    beagle = get_event(Event.get(Event.title.contains("beagle")).id)
    assert beagle.event.happened_start == "2026-01-26" and beagle.event.happened_end == "2026-02-01"
    assert beagle.event.mentioned_at == "2026-02-03T09:00:00+01:00"
    assert Message.select().count() == 4


@pytest.mark.parametrize(
    "text, day, tense",
    [
        ("We went camping on Friday.", "2026-11-27", "past"),  # said on a Tuesday: the Friday before
        ("I met Ana on Monday.", "2026-11-30", "past"),
        ("I will start there on Monday.", "2026-12-07", "future"),  # the Monday to come, not yesterday
        ("I'm flying out to Lisbon on Monday.", "2026-12-07", "future"),
        ("We are going to the zoo on Monday.", "2026-12-07", "future"),
        ("She flies home on Monday.", "2026-12-07", "future"),  # a timetable's present
        ("I was flying out on Monday.", "2026-11-30", "past"),
        ("The party is on Sunday.", "2026-12-06", "future"),  # later this week either way
    ],
)
def test_a_weekday_follows_the_tense_of_its_sentence(text, day, tense):
    from datetime import datetime, timezone

    from core.providers.offline_events import time_for

    said = time_for(text, datetime(2026, 12, 1, 12, tzinfo=timezone.utc))  # a Tuesday
    assert (said["happened_start"], said["happened_end"], said["_tense"]) == (day, day, tense)


@pytest.mark.parametrize(
    "text, day",
    [
        (
            "I got the job at Northwind, I start there on Monday.",
            "2026-12-07",
        ),  # the clause's tense, not the sentence's
        ("I'll call the vet, we took Biscuit there on Friday.", "2026-11-27"),
        ("On Friday, we went camping.", "2026-11-27"),  # no tense in the clause: the sentence's
        ("Got it: Tomás takes Biscuit to the vet on Friday.", "2026-12-04"),  # "Got it:" only opens the sentence
        ("The clinic called, Dr. Visser is ill on Thursday so it is cancelled.", "2026-12-03"),  # a present of its own
        ("Dr. Visser called, Biscuit's check is on Friday.", "2026-12-04"),
        ("And on Monday you need to leave at 16:00.", "2026-12-07"),  # "need" is no past
        ("The freeze is in. I'll do the release notes on Monday.", "2026-12-07"),
    ],
)
def test_a_weekday_reads_the_tense_of_its_own_clause(text, day):
    from datetime import datetime, timezone

    from core.providers.offline_events import time_for

    assert time_for(text, datetime(2026, 12, 1, 12, tzinfo=timezone.utc))["happened_start"] == day


@pytest.mark.parametrize(
    "text, start",
    [
        ("I booked a table for Thursday at 19:00.", "2026-12-03T19:00:00+00:00"),  # a past booking, a day ahead
        ("I booked the hall for Monday.", "2026-12-07"),  # Monday passed: the one to come
        ("I promised Jonas a review by Wednesday.", "2026-12-02"),  # a deadline is ahead of the promise
        ("We had dinner on Friday at 19:00.", "2026-11-27T19:00:00+00:00"),  # a time moves with its day
        ("We had packed everything by Friday.", "2026-11-27"),  # done by a day: the one before
        ("Please send it by Friday.", "2026-12-04"),
    ],
)
def test_a_weekday_after_for_or_by_is_ahead_unless_done_by_then(text, start):
    from datetime import datetime, timezone

    from core.providers.offline_events import time_for

    said = time_for(text, datetime(2026, 12, 1, 12, tzinfo=timezone.utc))  # a Tuesday
    assert (said["happened_start"], said["happened_end"]) == (start, start)


@pytest.mark.parametrize(
    "pattern, reach",
    [
        (offline_events._SENTENCE_START, offline_events.SENTENCE_START_REACH),
        (ENDS_IN_TITLE, TITLE_REACH),
        (offline_graph._SENTENCE_START, offline_graph.SENTENCE_START_REACH),
        (offline_graph._PERSON_BEFORE_RE, offline_graph.PERSON_BEFORE_REACH),
        (offline_graph._ARTICLE_BEFORE, offline_graph.ARTICLE_BEFORE_REACH),
    ],
)
def test_searching_only_the_tail_finds_what_searching_the_prefix_finds(pattern, reach):
    # The readers test "does the text before this word open a sentence / end in 'with'" once per
    # capitalised word; they search only the tail, which must agree with searching the whole prefix.
    pieces = [
        "a",
        "b",
        " ",
        "  ",
        "\n",
        "\t",
        ".",
        "!",
        "?",
        ":",
        ";",
        "(",
        ")",
        "]",
        '"',
        "“",
        "”",
        "-",
        "1",
        "12",
        "123",
        "x9",
        "Dr",
        "Mrs",
        "Prof",
        "St",
        "vs",
        "with ",
        "The ",
        "an ",
        "neighbour ",
        "Colleague",
        "…",
    ]
    rng = random.Random(7)
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        end = rng.randint(0, len(text))
        assert bool(search_at_end(pattern, text, end, reach)) == bool(pattern.search(text[:end])), (text, end)


def test_a_caseless_pattern_agrees_with_the_case_blind_search():
    pattern = offline_events._SAFETY.pattern + r"|\bdecid(ed|e)\b|[a-z]{3,}(?:pril|olol)\b"
    caseless, blind = CaselessPattern(pattern), re.compile(pattern, re.IGNORECASE)
    pieces = [
        "Allergic",
        "ALLERG",
        "epiPen",
        "Lisinopril",
        "propranOLOL",
        "5 MG",
        "12mg",
        "Decided",
        "decide",
        "aſthma",
        " ",
        ".",
        "x",
        "ſ",
        "K",
        "İ",
        "ı",
        "é",
        "过敏",
        "µg",
        "μg",
        "Tomás",
        "-",
        "\n",
    ]
    rng = random.Random(11)
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        assert caseless.found_in(text) == bool(blind.search(text)), text


def test_the_change_cue_answers_as_its_pattern_does_with_or_without_its_needles():
    from core.providers.offline_events import _CHANGE_CUE

    blind = re.compile(_CHANGE_CUE.pattern, re.IGNORECASE)
    # Whole phrases of every alternative (and near misses) among plain words, so each one is met often.
    pieces = [
        "no longer",
        "No Longer",
        "not here any more",
        "don't eat it anymore",
        "never anymore",
        "any more tips",
        "I switched to",
        "we've just switched from",
        "it switched to",
        "instead of",
        "changed my mind",
        "now uses",
        "now lives",
        "rescheduled",
        "POSTPONED",
        "Cancelled",
        "correction",
        "moved the Atlas launch to",
        "moved it to",
        "MOVED OUR DOG TO",
        "was moved to",
        "got moved to",
        "it turns out that",
        "turns out I",
        "how it turns out",
        "moved house",
        "I",
        "the",
        "to",
        "from",
        "more",
        "now",
        "out",
        "longer",
        "取消",
        "é",
        ".",
        ",",
        "?",
    ]
    rng = random.Random(5)
    for _ in range(20_000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        assert _CHANGE_CUE.found_in(text) == bool(blind.search(text)), text


def test_a_caseless_pattern_must_be_written_in_lower_case():
    with pytest.raises(ValueError, match="lower case"):
        CaselessPattern(r"\bAspirin\b")
    assert CaselessPattern(r"\Waspirin\S").found_in("take ASPIRIN, now")  # upper-case escapes are no letters


@pytest.mark.parametrize(
    "sentence",
    [
        "I'm tired",
        "I've moved",
        "I'll go",
        "I'd like that",
        "I am here",
        "I was there",
        "I have a dog",
        "I don't know",
        "I do not know",
        "I really love it",
        "Ana and I went",
        "my dog",
        "My dog",
        "it is mine",
        "Mine is red",
        "done by myself",
        "Myself, a tea drinker",
        "call me later",
    ],
)
def test_third_person_rewrites_every_first_person_form(sentence):
    assert "Ana" in third_person(sentence, "Ana").replace("Ana and", "")


@pytest.mark.parametrize(
    "sentence, rewritten",
    [
        ("I no longer use Notion.", "Ana no longer uses Notion."),
        ("I now live in Oslo.", "Ana now lives in Oslo."),
        ("I’m leaving tomorrow.", "Ana is leaving tomorrow."),  # a typographic apostrophe is the same word
        ("I’ve got to share these.", "Ana has got to share these."),
        ("I’ll send you the recipes.", "Ana will send you the recipes."),
        ("But I don’t remember.", "But Ana doesn't remember."),
    ],
)
def test_third_person_agrees_after_adverbs_and_either_apostrophe(sentence, rewritten):
    assert third_person(sentence, "Ana") == rewritten


def test_third_person_leaves_a_sentence_without_first_person_words_alone():
    assert third_person("Mimi met Ben at the museum in Rome.", "Ana") == "Mimi met Ben at the museum in Rome."


def _superseded(text: str, timeline, speaker: str = "Caroline"):
    role = "user" if speaker == "Caroline" else "assistant"
    events = extract_events_offline(_context([(role, speaker, text)], timeline))["events"]
    return [event["temporal"].get("supersedes_event_ids") for event in events]


def _item(event_id: int, speaker: str, text: str, *others: str, happened: str | None = None) -> dict:
    return {
        "id": event_id,
        "title": text,
        "summary": text,
        "participants": [speaker, *others],
        "happened_start": happened,
    }


def test_sharing_only_dates_and_words_of_change_corrects_nothing():
    timeline = [_item(5, "Caroline", "We moved the launch to Tuesday, March 17.")]
    assert _superseded("The demo moved too: it is on Tuesday, March 10 instead of the 12th.", timeline) == [None]


def test_sharing_only_words_that_judge_corrects_nothing():
    timeline = [_item(5, "Caroline", "It's important to Caroline to put her words into action. It can be hard.")]
    said = "Max was such an important part of our family and it's so hard to think he's not here anymore."
    assert _superseded(said, timeline) == [None]


def test_naming_the_old_value_corrects_the_card_that_holds_it():
    timeline = [
        _item(5, "Caroline", "The weekly sync is on Thursdays at 10:00."),
        _item(6, "Caroline", "Lunch with Ana on Friday at 12:30."),
    ]
    assert _superseded("From tomorrow it's Wednesdays at 14:00 instead of Thursdays at 10:00.", timeline) == [[5]]


def test_only_the_statement_that_changes_says_what_is_corrected():
    timeline = [
        _item(5, "Caroline", "Caroline found duplicate orders in the orders table."),
        _item(6, "Caroline", "Caroline keeps her notes in Notion."),
    ]
    found = _superseded(
        "I need to write the postmortem for the duplicate orders table. "
        "By the way, I no longer keep my notes in Notion, I switched to Obsidian.",
        timeline,
    )
    assert [5] not in found and [6] in found


def test_a_dated_cancellation_ends_the_card_of_its_day():
    # The first visit shares more words ("vet", "clinic"); the follow-up is the one on that Thursday.
    timeline = [
        _item(4, "Caroline", "Dr. Visser said short walks only, and a follow-up on May 11.", happened="2023-05-11"),
        _item(
            5,
            "Caroline",
            "Caroline booked Dr. Visser at the Oudwijk vet clinic for Thursday at 17:30.",
            happened="2023-04-27T17:30:00+02:00",
        ),
    ]
    said = "The vet clinic called, Dr. Visser is ill on Thursday so the follow-up is cancelled."
    assert _superseded(said, timeline) == [[4]]
    assert _superseded(said, timeline[1:]) == [[5]]  # with no card of that day, the one sharing most


def test_a_statement_after_by_the_way_is_a_card_of_its_own():
    timeline = [
        _item(5, "Caroline", "Caroline found duplicate orders in the orders table."),
        _item(6, "Caroline", "Caroline keeps her notes in Notion."),
    ]
    text = (
        "I need to write the postmortem for the duplicate orders table. "
        "By the way, I no longer keep my notes in Notion, I switched to Obsidian."
    )
    cards = extract_events_offline(_context([("user", "Caroline", text)], timeline))["events"]
    assert [card["title"].split(",")[0] for card in cards] == [
        "Caroline needs to write the postmortem for the duplicate orders table.",
        "By the way",
    ]
    assert [card["temporal"].get("supersedes_event_ids") for card in cards] == [None, [6]]
    assert all(card["source_message_ids"] == [1] for card in cards)


def test_advice_to_someone_else_corrects_nothing_they_said():
    timeline = [_item(5, "Caroline", "Caroline baked a dairy-free cake with coconut frosting.", "Melanie")]
    assert _superseded(
        "You can use dairy-free margarine or coconut oil instead of butter in the cake.", timeline, speaker="Melanie"
    ) == [None]


def test_advice_to_the_listener_corrects_nothing_of_the_speakers_own():
    timeline = [_item(5, "Melanie", "Melanie loves dairy-free desserts and teaches people to make dairy-free cakes.")]
    said = "You can use dairy-free margarine or coconut oil instead of butter in dairy-free cakes."
    assert _superseded(said, timeline, speaker="Melanie") == [None]
    assert _superseded(
        "I use coconut oil instead of butter in my dairy-free cakes now.", timeline, speaker="Melanie"
    ) == [[5]]  # said of herself, it does


@pytest.mark.parametrize(
    "text, cue",
    [
        ("Any more tips for dairy-free baking?", False),
        ("I can't wait to see how it turns out!", False),
        ("He's not here wagging his tail anymore.", True),
        ("It turns out the bus leaves at nine.", True),
        ("I switched to Obsidian last weekend.", True),
        ("We've just switched from Slack to Teams.", True),
        ("After fct_orders switched to a merge strategy, the runs failed.", False),
    ],
)
def test_what_counts_as_saying_something_changed(text, cue):
    from core.providers.offline_events import _CHANGE_CUE

    assert _CHANGE_CUE.found_in(text) is cue


def test_a_correction_naming_what_it_replaces_ends_the_card_with_that_name():
    timeline = [
        _item(5, "Caroline", "Caroline keeps all her meeting notes in Notion, drafts should paste there."),
        _item(6, "Caroline", "Caroline's meeting with Ana is on Friday."),
    ]
    assert _superseded("By the way, I no longer use Notion, I switched to Obsidian last weekend.", timeline) == [[5]]
    # A plain word alone is too common to say which card it corrects.
    timeline = [_item(7, "Caroline", "Caroline's old train set is still her favourite toy.")]
    assert _superseded("I took the bus to work instead of the train today.", timeline) == [None]


def test_moving_a_thing_to_a_new_date_ends_the_card_that_dated_it():
    timeline = [
        _item(5, "Caroline", "We're targeting a customer launch on Tuesday, March 3rd.", happened="2023-03-03"),
        _item(6, "Caroline", "The demo for Northwind is on Thursday, March 12.", happened="2023-03-12"),
        _item(7, "Caroline", "The launch party was great fun."),
    ]
    assert _superseded("Update: we moved the Atlas launch to Tuesday, March 17.", timeline) == [[5]]
    assert _superseded(
        "The follow-up has been postponed to Thursday, March 19.",
        [
            _item(8, "Caroline", "Biscuit's follow-up is on Thursday, March 12.", happened="2023-03-12"),
            _item(9, "Caroline", "The launch is on Thursday, March 12.", happened="2023-03-12"),
        ],
    ) == [[8]]
    # Nothing dated that names the thing: nothing is ended.
    assert _superseded("We moved the offsite to Friday, March 20.", timeline) == [None]
