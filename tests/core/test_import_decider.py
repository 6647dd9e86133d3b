"""The offline import decider: behaviours, a held-out set in wording the benchmark generator
never uses, and the benchmark itself on a small generated set."""

from __future__ import annotations

import pytest

from core.db import write_transaction
from core.providers.offline_import import decide_offline, read_fact, subject_names
from core.imports.formats import parse_v2_object
from core.services.events import write_event
from core.services.import_preview import _match_items
from core.services.spaces import get_or_create_namespace


def m(event_id, summary, participants=(), title=None, **extra):
    return {
        "id": event_id,
        "title": title or summary.rstrip("."),
        "summary": summary,
        "participants": list(participants),
        "status": "active",
        **extra,
    }


def decide(summary, matches, title=None, user=None, **candidate):
    temporal = candidate.pop("temporal", {})
    return decide_offline(
        {
            "candidate": {"title": title or summary.rstrip("."), "summary": summary, "temporal": temporal, **candidate},
            "matches": matches,
            **({"user": user} if user else {}),
        }
    )


STORE = [
    m(1, "Maya lives in Lisbon.", ["Maya"]),
    m(2, "Maya works at Acme as a designer.", ["Maya"]),
    m(3, "Ben has a dog named Rex.", ["Ben"]),
]


@pytest.mark.parametrize(
    "summary, action, target, confident",
    [
        ("Maya is based in Lisbon.", "ignore", 1, True),
        ("Maya lives in Lisbon, in a flat near the river with her partner.", "merge", 1, True),
        ("Maya moved to Porto in 2025.", "supersede", 1, True),
        ("Maya no longer lives in Lisbon.", "supersede", 1, True),
        ("Maya does not live in Lisbon.", "conflict", 1, True),
        ("Maya used to live in Madrid.", "add", None, False),
        ("Ben's dog is called Rex.", "ignore", 3, True),
        ("Priya plays the cello.", "add", None, True),
        ("User said hello and asked how the assistant was doing.", "ignore", None, True),
        ("Maya is tired today.", "ignore", None, True),
    ],
)
def test_decisions_follow_the_evidence(summary, action, target, confident):
    result = decide(summary, STORE)
    assert result["action"] == action, result
    if target is not None:
        assert result["existing_event_ids"][0] == target
    assert (result["confidence"] >= 0.85) == confident, result


def test_no_matches_means_add_and_targets_come_only_from_matches():
    assert decide("Maya lives in Lisbon.", [])["action"] == "add"
    result = decide("Maya moved to Porto.", STORE[:1])
    assert result["existing_event_ids"] == [1]


def test_an_uncertain_export_item_goes_to_a_person():
    result = decide("Priya plays the cello.", STORE, confidence=0.3)
    assert result["action"] == "add" and result["confidence"] <= 0.6 and "uncertain" in result["reason"]


def test_a_negation_inside_new_detail_is_not_a_contradiction():
    stored = [m(1, "Yusuf was born on October 5.", ["Yusuf"])]
    result = decide("Yusuf was born on October 5, and Yusuf prefers no surprise parties.", stored)
    assert result["action"] == "merge"


def test_a_negation_counts_where_it_touches_the_shared_value():
    """A negation of the value both state contradicts it; one in another clause ("doesn't eat meat;
    he is a vegetarian") paraphrases it; a negated value beside an affirmed one ("pescatarian, not
    vegetarian") only touches the negated one."""
    stored = [m(1, "Marco has been vegetarian for years and avoids meat.", ["Marco"])]
    assert decide("Marco is not a vegetarian.", stored)["action"] == "conflict"
    result = decide("Marco eats fish now, he is not a vegetarian.", stored)
    assert (result["action"], result["existing_event_ids"]) == ("supersede", [1])  # "now": an update
    assert decide("Marco doesn't eat meat; he is a vegetarian.", stored)["action"] == "ignore"
    changed = [m(2, "Marco eats fish now, so Marco is pescatarian, not vegetarian anymore.", ["Marco"])]
    assert decide("Marco is pescatarian.", changed)["action"] == "ignore"
    outdated = decide("Marco is vegetarian.", changed)
    assert (outdated["action"], outdated["existing_event_ids"]) == ("conflict", [2]) and outdated["confidence"] < 0.85
    one_clause = [m(3, "Marco is pescatarian, not vegetarian anymore.", ["Marco"])]  # read as a single part
    assert decide("Marco is pescatarian.", one_clause)["action"] == "ignore"
    reason = decide("Marco is vegetarian.", one_clause)["reason"]
    assert reason.startswith("event 3 says this has ended") and "subject Marco" in reason and "vegetarian" in reason


def test_numbers_compare_as_numbers_whether_written_in_words_or_digits():
    """ "aged 6" restates "six-year-old"; "is seven" is an age, so another value than six."""
    stored = [m(1, "Maya lives with Tomás and their six-year-old daughter Ivy.", ["Maya", "Tomás", "Ivy"])]
    assert decide("Maya and Tomás have a daughter, Ivy, aged 6.", stored)["action"] == "ignore"
    assert decide("Ivy is 6 years old.", stored)["action"] == "ignore"
    assert read_fact("", "Ivy is seven now.").preds == {"age"}
    assert "age" not in read_fact("", "Ivy is seven minutes away.").preds
    assert decide("Ivy turned 7 in March.", stored)["action"] == "conflict"
    assert decide("One of Maya's friends is Ben.", stored)["action"] != "ignore"  # "one" is no number


def test_names_match_without_their_accents():
    stored = [m(1, "Tomás works at Acme as an engineer.", ["Tomás"])]
    result = decide("Tomas works at Acme as an engineer.", stored)
    assert (result["action"], result["existing_event_ids"]) == ("ignore", [1])


def test_superseding_a_card_that_says_more_waits_for_a_person():
    """Superseding hides the whole stored card: when it holds other facts, a person chooses."""
    single = [m(1, "Ivy is six years old.", ["Ivy"])]
    plain = decide("Ivy is seven now.", single)
    assert (plain["action"], plain["existing_event_ids"]) == ("supersede", [1]) and plain["confidence"] >= 0.85
    card = [
        m(
            2,
            "Maya lives in Utrecht with Tomás and their six-year-old daughter Ivy, and moved from Dublin.",
            ["Maya", "Tomás", "Ivy"],
        )
    ]
    held = decide("Ivy is seven now.", card)
    assert (held["action"], held["existing_event_ids"]) == ("supersede", [2])
    assert held["confidence"] < 0.85 and "also says other things" in held["reason"]


def test_subjects_of_subjectless_memories_are_the_user():
    assert read_fact("", "Moved to Hamburg").lead == "user"
    assert read_fact("", "Maya moved to Hamburg").lead == "maya"
    assert subject_names("x", "Trello is the tool Jonas relies on.", ["Jonas"]) == ["Jonas"]
    assert subject_names("x", "Maya's dog is called Rex.") == ["Maya", "Rex"]


def test_a_value_named_outside_the_stated_preference_is_another_value():
    stored = [
        m(
            1,
            "Maya would rather have meetings in the morning, ideally before 12. Afternoons are her deep-work time.",
            ["Maya"],
        )
    ]
    other = decide("Maya prefers meetings in the afternoon.", stored)
    assert (other["action"], other["existing_event_ids"]) == ("conflict", [1]) and other["confidence"] < 0.85
    assert "morning" in other["reason"]
    assert decide("Maya prefers meetings in the morning.", stored)["action"] == "ignore"


def test_a_subjectless_statement_opening_with_its_verb_is_about_the_user():
    assert read_fact("", "Works as a senior data engineer at Kestrel Logistics.").lead == "user"
    assert read_fact("", "Uses Notion for meeting notes.").lead == "user"
    # "He's …" is about someone the conversation named before, not the user.
    teacher = [m(1, "He's a physics teacher at a secondary school in Zeist.", ["Maya", "Zeist"])]
    assert decide("Works as a physics teacher.", teacher, user={"names": ["Maya"]})["action"] == "add"


def test_the_users_own_name_is_the_user():
    """An export says "Uses Notion" where the memory's cards say "Maya … uses Notion": with the one
    name the user goes by in the namespace they are about the same person."""
    notion = [
        m(1, "Maya keeps her meeting notes in Notion.", ["Maya"]),
        m(2, "By the way, Maya no longer uses Notion, she switched to Obsidian last weekend.", ["Maya"]),
    ]
    known = decide("Uses Notion for meeting notes.", notion, user={"names": ["Maya"]})
    assert (known["action"], known["existing_event_ids"]) == ("conflict", [2]) and known["confidence"] < 0.85
    assert decide("Uses Notion for meeting notes.", notion)["action"] == "add"  # who "the user" is, unknown
    for malformed in ("Maya", {"names": "Maya"}, {"names": [3, None]}):
        assert decide("Uses Notion for meeting notes.", notion, user=malformed)["action"] == "add"
    shared = decide("Uses Notion for meeting notes.", notion, user={"names": ["Maya", "Tomás"]})
    assert shared["action"] == "add"  # two people speak as users here: neither is "the user"
    diet = [m(3, "Maya started eating fish again, so Maya is pescatarian now, not vegetarian.", ["Maya"])]
    ended = decide("Is vegetarian.", diet, user={"names": ["Maya Brennan"]})
    assert ended["action"] == "conflict" and ended["reason"].startswith("event 3 says this has ended")
    # A part of a card naming no one ("He's four") is not the user's part: the card is read whole.
    dog = [
        m(
            4,
            "And there's Biscuit, Maya's beagle. He's four and has been limping since the weekend.",
            ["Maya", "Biscuit"],
        )
    ]
    assert decide("Has a beagle named Biscuit.", dog, user={"names": ["Maya"]})["action"] == "ignore"
    # The user's own part of a card about several people is theirs ("…, Tomás likes the window").
    seats = [m(5, "We fly from Schiphol. Maya prefers an aisle seat, Tomás likes the window.", ["Maya", "Tomás"])]
    window = decide("Prefers window seats on flights.", seats, user={"names": ["Maya"]})
    assert (window["action"], window["existing_event_ids"]) == ("conflict", [5])


def test_user_names_are_the_speakers_of_user_messages(store):
    from core.services.capture import append_turn
    from core.services.import_preview import user_names

    def said(speaker, text):
        return {"role": "user", "content": text, "speaker": speaker}

    append_turn("home", "t1", said("Maya", "I keep my notes in Obsidian."), "Noted.")
    append_turn("home", "t2", said("Maya", "Book the vet for Thursday."), "Done.")
    assert user_names("home") == ["Maya"]
    append_turn("home", "t3", said("Tomás", "Hi, it's Tomás on Maya's account."), "Hello!")
    assert sorted(user_names("home")) == ["Maya", "Tomás"]
    assert user_names("nowhere") == []
    # A user who never gives a name is the one the cards call "User"; beside a named user, theirs.
    append_turn("anon", "t1", "I keep my notes in Obsidian.", "Noted.")
    assert user_names("anon") == ["User"]
    append_turn("anon", "t2", said("Maya", "Book the vet for Thursday."), "Done.")
    assert user_names("anon") == ["Maya"]


def test_merge_decisions_carry_a_merged_candidate():
    result = decide("Maya lives in Lisbon, in a flat near the river with her partner.", STORE)
    assert (
        result["merged_candidate"]["summary"].startswith("Maya lives in Lisbon")
        and "Maya" in result["merged_candidate"]["temporal"]["participants"]
    )


# ----------------------------------------------------------------------------- held-out set

HELD_STORE = [
    ("car", ["Marco"], "Marco's car", "Marco drives a red Volvo estate.", "2024-02-03"),
    ("diet", ["Marco"], "Marco is vegetarian", "Marco has been vegetarian for years and avoids meat.", "2024-02-03"),
    ("standup", [], "Team standup", "The team standup happens every Tuesday at 9:30.", "2024-03-10"),
    ("deadline", [], "Atlas launch date", "The Atlas project launches on June 12.", "2024-04-01"),
    ("partner", ["Ines"], "Ines's partner", "Ines is married to Jorge.", "2024-01-15"),
    ("kid", ["Ines"], "Ines's daughter", "Ines has a daughter called Lucia who is six.", "2024-01-15"),
    ("book", ["Sam"], "Sam's favourite book", "Sam's favourite book is Dune.", "2024-05-20"),
    ("commute", ["Sam"], "Sam commutes by bike", "Sam cycles to the office every day.", "2024-05-20"),
    ("city", ["Ines"], "Where Ines lives", "Ines lives in Valencia.", "2024-01-15"),
    ("lang", [], "Reply language", "The user wants replies in British English.", "2024-06-01"),
    ("tz", [], "User's time zone", "The user is in the Central European time zone.", "2024-06-01"),
    ("editor", ["Sam"], "Sam's editor", "Sam writes code in Neovim.", "2024-05-21"),
    ("gym", ["Marco"], "Marco's gym", "Marco trains at the gym on Monday and Thursday evenings.", "2024-02-10"),
]

HELD_CASES = [
    ("ignore", "car", "Marco's car is a red Volvo estate.", {}),
    ("ignore", "diet", "Marco doesn't eat meat; he is a vegetarian.", {}),
    ("ignore", "standup", "Every Tuesday at 9:30 the team has its standup.", {}),
    ("ignore", "partner", "Jorge is Ines's husband.", {"participants": ["Ines"]}),
    ("ignore", "book", "Dune is Sam's all-time favourite book.", {}),
    ("ignore", "city", "Ines is based in Valencia.", {}),
    ("ignore", "editor", "Sam uses Neovim as his code editor.", {}),
    ("merge", "car", "Marco drives a red Volvo estate that he bought second-hand in 2019.", {}),
    ("merge", "kid", "Ines has a daughter called Lucia who is six and loves drawing horses.", {}),
    ("merge", "deadline", "The Atlas project launches on June 12 with a press event in Madrid.", {}),
    (
        "merge",
        "gym",
        "Marco trains at the gym on Monday and Thursday evenings, mostly lifting weights with a coach.",
        {},
    ),
    ("supersede", "car", "Marco sold the Volvo and now drives a Tesla.", {"mentionedAt": "2025-03-01"}),
    ("supersede", "standup", "The team standup moved to Wednesday at 10:00.", {"mentionedAt": "2025-01-10"}),
    ("supersede", "deadline", "The Atlas launch was pushed back to September 3.", {"mentionedAt": "2024-05-15"}),
    ("supersede", "city", "Ines relocated from Valencia to Seville last autumn.", {"mentionedAt": "2025-02-01"}),
    ("supersede", "editor", "Sam switched from Neovim to VS Code.", {"mentionedAt": "2025-04-01"}),
    ("supersede", "commute", "Sam no longer cycles to work; he takes the train now.", {"mentionedAt": "2025-01-20"}),
    ("supersede", "tz", "The user has moved and is now in the Pacific time zone.", {"mentionedAt": "2025-06-01"}),
    ("conflict", "diet", "Marco is not a vegetarian.", {}),
    ("conflict", "book", "Sam's favourite book is not Dune.", {}),
    ("conflict", "partner", "Ines is not married.", {}),
    ("conflict", "gym", "Marco never goes to the gym.", {}),
    ("add", None, "Marco has an older sister named Paola.", {}),
    ("add", None, "Sam is allergic to bee stings.", {}),
    ("add", None, "Ines was born on 2 August 1990.", {}),
    ("add", None, "The Hermes project is a rewrite of the billing service.", {}),
    ("add", None, "The user takes coffee black with no sugar.", {}),
    ("add", None, "Marco listens to a lot of jazz while working.", {}),
    ("add", None, "Lucia's best friend at school is called Mia.", {}),
    ("add", None, "The user prefers short answers with bullet points.", {}),
    ("ignore", None, "Said hi and asked how things were going.", {}),
    ("ignore", None, "The user asked whether it would rain tomorrow.", {}),
    ("ignore", None, "Sam was feeling sleepy this afternoon.", {}),
    ("ignore", None, "Thanked the assistant for fixing the spreadsheet formula.", {}),
    ("ignore", None, "Chatted about a movie for a few minutes.", {}),
]


def _seed(namespace: str, cards) -> dict[str, int]:
    """Store (key, participants, title, summary, mentioned) cards; their ids by key."""
    ids = {}
    with write_transaction():
        ns = get_or_create_namespace(namespace)
        for key, people, title, summary, when in cards:
            draft = {"title": title, "summary": summary, "temporal": {"participants": people, "mentioned_at": when}}
            ids[key] = write_event(ns.id, draft, block=None, formed_turn=0).id
    return ids


def _decide_stored(namespace: str, title: str, summary: str, temporal: dict) -> dict:
    """Decide one exported statement against the namespace's Top-5 matches, as a preview does."""
    envelope = {
        "schemaVersion": "stratagate.external-memory.v2",
        "sourceType": "external_ai_memory_export",
        "candidates": [{"title": title, "summary": summary, "temporal": temporal}],
    }
    candidate = parse_v2_object(envelope, namespace).candidates[0]
    return decide_offline({"candidate": candidate, "matches": _match_items(namespace, candidate, 5)})


def test_held_out_cases(store):
    ids = _seed("held", HELD_STORE)
    right = auto = auto_right = 0
    wrong = []
    for expected, key, summary, temporal in HELD_CASES:
        result = _decide_stored("held", summary[:40], summary, temporal)
        ok = result["action"] == expected and (
            key is None or expected in ("add", "ignore") or ids[key] in result["existing_event_ids"]
        )
        right += ok
        if result["confidence"] >= 0.85:
            auto += 1
            auto_right += ok
        if not ok:
            wrong.append((summary, expected, result))
    assert right / len(HELD_CASES) >= 0.9, wrong
    assert auto_right / auto >= 0.95, wrong


def test_benchmark_on_a_small_generated_set():
    from core.bench.imports import run_import_bench

    report = run_import_bench(seed=5, candidates=70, people=8)
    assert report["benchmark"] == "import" and report["candidates"] == 70
    assert set(report["accuracy"]) == {"overall", "add", "merge", "supersede", "conflict", "ignore"}
    assert report["accuracy"]["overall"] >= 0.85
    assert report["auto_applied_precision"] >= 0.95 and 0 < report["auto_applied_share"] <= 1
    assert report["undo_round_trip"] is True and report["round_trip"]["imported_events"] > 0
    assert len(report["per_item"]) == 70


def test_a_subjectless_memory_is_about_the_user():
    stored = [
        m(1, "User lives in Berlin with User's partner Alex.", ["User", "Berlin", "Alex"]),
        m(2, "User work as a backend engineer at Zalando.", ["User", "Zalando"]),
    ]
    moved = decide("Moved to Hamburg", stored)
    assert (moved["action"], moved["existing_event_ids"][:1]) == ("supersede", [1])
    assert decide("Works as a backend engineer at Zalando", stored)["action"] == "ignore"
    assert decide("Likes sushi", stored)["action"] == "add"


def test_events_about_people_equal_filtering_every_scored_event(store):
    """The ranking of a candidate's people's events is taken from the pruned top k; it must be
    what scoring every matching event and keeping the live ones naming a person gives."""
    import random

    from core.models import Event, EventTerm
    from core.search.analyze import analyze
    from core.search.index import bm25_reference
    from core.services.events import forget_event
    from core.services.import_preview import _about_people

    rng = random.Random(4)
    people = ["Maya", "Ben", "Priya Raman", "Ola"]
    topics = [
        "lives in Lisbon",
        "works at Acme",
        "adopted a dog",
        "moved to Porto",
        "plays the cello",
        "started a new job",
        "visited Berlin",
        "bought a flat near the river",
    ]
    with write_transaction():
        ns = get_or_create_namespace("about")
        for i in range(400):
            who = rng.sample(people, rng.choice([0, 1, 1, 2]))
            text = f"{' and '.join(who) or 'Someone'} {rng.choice(topics)} in week {i % 13}."
            write_event(
                ns.id,
                {"title": text[:60], "summary": text, "temporal": {"participants": who}},
                block=None,
                formed_turn=i,
            )
    for event_id in rng.sample([i for (i,) in Event.select(Event.id).tuples()], 60):
        forget_event(event_id)
    live = {i for (i,) in Event.select(Event.id).where(Event.status.in_(["active", "superseded"])).tuples()}
    for query, who in (
        ("Maya moved to Porto", ["Maya"]),
        ("works at Acme", ["Ben", "Ola"]),
        ("Priya plays the cello", ["Priya Raman"]),
        ("Lisbon flat", ["Nobody"]),
    ):
        names = list(dict.fromkeys(analyze(" ".join(who))))
        naming = {e for (e,) in EventTerm.select(EventTerm.event).where(EventTerm.term.in_(names)).tuples()}
        scores = bm25_reference("event", ns.id, analyze(query) + names)
        expected = sorted((i for i in scores if i in naming and i in live), key=lambda i: (-scores[i], i))
        for limit in (1, 5, 40):
            got = _about_people(ns.id, query, who, limit)
            assert [e.id for e, _ in got] == expected[:limit]
            assert all(abs(score - scores[e.id]) <= 1e-9 for e, score in got)


# ----------------------------------------------------------------------------- conversation cards

# Cards as a conversation makes them: several people and several facts in one event, the
# assistant's echoes, states that have ended. A fact is compared with what its subject's part
# of a card says, never with the words other people's parts happen to share.
CONVERSATION_STORE = [
    (
        "seats",
        ["Maya", "Schiphol", "Tomás", "Ivy"],
        "Flights: we'd fly from Schiphol.",
        "Flights: we'd fly from Schiphol. Maya prefers an aisle seat, Tomás likes the window, and Ivy wants the "
        "window too, which is a problem.",
        "2026-01-22",
    ),
    (
        "notes",
        ["Maya", "Notion", "Obsidian", "Markdown"],
        "Maya needs to write the postmortem.",
        "Maya needs to write the postmortem for the duplicate orders incident. By the way, Maya no longer use "
        "Notion, Maya switched to Obsidian last weekend, so give it to Maya as plain Markdown for Maya's vault.",
        "2026-02-23",
    ),
    (
        "home",
        ["Maya", "Utrecht", "Tomás", "Ivy", "Dublin"],
        "Maya lives in Utrecht with Maya's partner Tomás.",
        "Can you help Maya keep track of family stuff too? Maya lives in Utrecht with Maya's partner Tomás and "
        "our daughter Ivy, who's six. We moved here from Dublin two years ago.",
        "2026-01-13",
    ),
    (
        "diet",
        ["Maya"],
        "Small update about Maya.",
        "Small update about Maya: Maya started eating fish again last week, so Maya is pescatarian now, not "
        "vegetarian.",
        "2026-02-16",
    ),
    (
        "manager",
        ["Maya", "Priya Raman"],
        "Priya Raman signed off.",
        "Priya Raman, Maya's manager and our head of data, signed off on that date on Friday.",
        "2026-01-12",
    ),
    (
        "flights",
        ["Assistant", "KLM", "TAP", "Amsterdam", "Lisbon"],
        "Both KLM and TAP fly direct.",
        "Yes, both KLM and TAP fly direct from Amsterdam to Lisbon, about three hours.",
        "2026-01-22",
    ),
]

CONVERSATION_CASES = [
    # (expected action, expected target key or None, statement, may it be applied without a person)
    ("conflict", "seats", "Maya prefers window seats.", False),
    ("ignore", "seats", "Tomás likes the window seat.", None),
    ("conflict", "notes", "Maya uses Notion for her notes.", False),
    ("ignore", "notes", "Maya uses Obsidian for her notes.", None),
    ("supersede", "home", "Maya moved to Amsterdam in 2026.", None),
    ("add", None, "Ivy takes swimming lessons on Wednesdays.", None),
    ("add", None, "Maya adopted a grey cat named Miso in March 2026.", None),  # eating fish is no pet
    ("ignore", "diet", "Maya is pescatarian.", None),
    ("ignore", "manager", "Maya's manager is Priya Raman.", None),  # an apposition is one part
    ("conflict", "diet", "Maya is vegetarian.", False),
]


@pytest.mark.parametrize("expected, key, summary, auto", CONVERSATION_CASES)
def test_conversation_cards_are_compared_by_their_subjects_part(store, expected, key, summary, auto):
    ids = _seed("talk", CONVERSATION_STORE)
    result = _decide_stored("talk", summary.rstrip("."), summary, {})
    assert result["action"] == expected, result
    if key is not None:
        assert result["existing_event_ids"][:1] == [ids[key]], result
    if auto is not None:
        assert (result["confidence"] >= 0.85) == auto, result


def test_an_age_belongs_to_whom_it_describes():
    """'Maya lives with Tomás and their six-year-old daughter Ivy' gives Ivy's age, not Maya's; and
    'the old dates' is no age at all."""
    stored = [
        m(1, "Maya lives with Tomás and their six-year-old daughter Ivy.", ["Maya", "Tomás", "Ivy"]),
        m(2, "The old dates (freeze February 20, launch March 3) are superseded.", []),
    ]
    assert decide("Maya is 34 years old.", stored)["action"] == "add"
    assert decide("Ivy turned 7 in March.", stored)["action"] == "conflict"
    assert "age" not in read_fact("", "The old dates are superseded.").preds
    assert "age" not in read_fact("", "My 5-year-old laptop died.").preds
    assert read_fact("", "Ivy is a six-year-old.").preds == {"age"}


def test_what_a_relative_clause_says_is_said_of_its_name():
    """'a sister named Lena who lives in Amsterdam' says where Lena lives, not the user: no conflict
    with where the user lives."""
    stored = [m(1, "Maya lives in Utrecht with Tomás.", ["Maya", "Tomás"])]
    result = decide("Has a sister named Lena who lives in Amsterdam.", stored, user={"names": ["Maya"]})
    assert result["action"] == "add"
    assert read_fact("", "Has a sister named Lena who lives in Amsterdam.").preds_of == {"lena": {"live"}}
    assert decide("Lives in Amsterdam now.", stored, user={"names": ["Maya"]})["action"] in ("supersede", "conflict")


# ----------------------------------------------------------------------------- subject, slot, value


def test_a_conversational_card_stating_most_of_a_candidate_is_a_restatement():
    """A card from a conversation carries many words of its own; those are no other value. The card
    that states most of the candidate is the one it restates, named with what was matched."""
    cards = [
        m(
            1,
            "The dance studio is on tenuous grounds right now, but Jon is staying positive. Jon got a temp "
            "job to help cover expenses while Jon looks for investors.",
            ["Jon"],
        ),
        m(2, "Jon is wrapping up the business plan and looking for investors.", ["Jon"]),
    ]
    result = decide(
        "The studio is on shaky ground, so Jon took a temporary job to cover expenses while he looks for investors.",
        cards,
    )
    assert result["action"] in ("ignore", "merge") and result["existing_event_ids"] == [1], result
    assert "Jon" in result["reason"] and "investor" in result["reason"]


def test_a_change_needs_a_change_word_or_a_later_date():
    """ "Started", "joined" or "since" open restatements as often as updates: no supersede on them alone."""
    cards = [m(1, "Joanna wanted to tell ya Joanna just joined a writers group.", ["Joanna"])]
    assert decide("Joanna joined a writers group in April 2022.", cards)["action"] in ("ignore", "merge")
    job = [m(2, "Unfortunately, Gina also lost Gina's job at Door Dash this month.", ["Gina"])]
    other = decide("Before starting her store, Gina lost her job at Uber Eats.", job)
    assert (other["action"], other["existing_event_ids"]) == ("conflict", [2]) and other["confidence"] < 0.85


def test_a_supersede_needs_a_card_giving_that_slot():
    """ "Moved to Los Angeles" names where someone lives; a card about watching movies gives no home."""
    cards = [
        m(1, "It's one thing to watch a movie in a theater, but on a comfy couch Joanna feels at peace!", ["Joanna"])
    ]
    result = decide(
        "Joanna moved to Los Angeles in February 2023 to be closer to the film industry.",
        cards,
        temporal={"happened_start": "2023-02", "precision": "month"},
    )
    assert result["action"] == "add" and result["confidence"] < 0.85, result


def test_the_subject_is_the_person_a_statement_names_not_its_first_word():
    known = {"jon", "gina"}
    acting = read_fact("", "Acting was Joanna's first passion.", None, (), {"joanna"})
    assert acting.lead != "acting" and "acting" not in acting.names
    assert read_fact("", "Jorge is Ines's husband.", None, (), {"ines"}).lead == "jorge"
    assert read_fact("", "Maya's sister Clare lives in Lisbon.").lead == "clare"
    card = read_fact(
        "", "Contemporary dance is so expressive - it really speaks to Gina.", None, ["Gina"], known, card=True
    )
    assert card.lead == "gina"
    assert "live" not in read_fact("", "Nate makes a living from competitive gaming.").preds


def test_an_exclusive_statement_never_restates_without_a_person():
    cards = [m(1, "John's one-year-old is so cute, his name is Kyle!", ["John"])]
    result = decide("John has one child, his son Kyle.", cards, title="Kyle is John's only child")
    assert result["confidence"] < 0.85, result


def test_instructions_and_remarks_about_the_exchange():
    cards = [m(1, "Still working on Jon's biz. Took a short trip last week to Rome.", ["Jon"])]
    instruction = decide("Always answer Jon in short bullet points, no long paragraphs.", cards)
    assert instruction["action"] == "add" and instruction["confidence"] >= 0.85
    assert decide("Nate and Joanna wished each other luck and said bye.", cards)["action"] == "ignore"
    assert decide("Maya wished the assistant a good weekend.", cards)["action"] == "ignore"


# The cases a user ran into with the demo: cards as the demo's derivation words them.
DEMO_CARDS = [
    m(
        1,
        "Can you help Maya keep track of family stuff too? Maya lives in Utrecht with Maya's partner Tomás "
        "and Maya's daughter Ivy, who's six. We moved here from Dublin two years ago.",
        ["Maya", "Utrecht", "Tomás", "Ivy", "Dublin"],
        title="Maya lives in Utrecht with Maya's partner Tomás",
    ),
    m(2, "Yes, the freeze moves to March 6. QA with Lena is the week of March 9.", ["Maya", "Lena"]),
    m(
        3,
        "Maya would love to stay in Alfama, ideally an apartment with a kitchen rather than a hotel.",
        ["Maya", "Alfama"],
    ),
    m(
        4,
        "The dbt tests failed: not_null on fct_orders.order_id failed with 312 rows, the data check found "
        "nulls after the backfill.",
        ["Maya"],
    ),
]


def test_demo_cases_are_right_or_asked():
    user = {"names": ["Maya"]}
    moved = decide("Maya moved to Amsterdam.", DEMO_CARDS, user=user)
    assert 2 not in moved["existing_event_ids"], moved  # never the release-freeze date
    assert moved["action"] in ("supersede", "add") and (moved["action"] == "add" or moved["existing_event_ids"] == [1])
    jazz = decide("Likes jazz.", DEMO_CARDS, user=user, memoryKind="preference")
    assert jazz["action"] == "add", jazz  # not another value beside the Alfama apartment
    coffee = decide("Maya drinks an oat flat white every morning.", DEMO_CARDS, user=user)
    assert coffee["action"] == "add", coffee  # restates nothing of the failed data check


def test_from_old_to_new_supersedes_the_card_holding_the_old_value():
    """ "Moved her notes from Obsidian to Logseq" names the old value: the subject's card holding it is
    the one superseded, not the home card that "moved" would suggest."""
    cards = [
        m(
            1,
            "Noted: you live in Utrecht with your partner Tomás, and you moved from Dublin two years ago.",
            ["Maya", "Utrecht", "Tomás", "Dublin"],
        ),
        m(2, "By the way, Maya no longer uses Notion, Maya switched to Obsidian last weekend.", ["Maya"]),
    ]
    result = decide("Maya moved her notes from Obsidian to Logseq.", cards, user={"names": ["Maya"]})
    assert (result["action"], result["existing_event_ids"]) == ("supersede", [2]), result
    assert result["confidence"] < 0.85  # the card also says Notion ended: a person confirms


def test_the_same_fact_with_another_number_is_a_conflict():
    """ "Ivy is five" against a card saying she is six restates the card's words but not its value."""
    cards = [
        m(
            1,
            "Maya lives in Utrecht with Maya's partner Tomás and Maya's daughter Ivy, who's six.",
            ["Maya", "Tomás", "Ivy"],
        )
    ]
    result = decide("Ivy, Maya's daughter, is five years old.", cards, user={"names": ["Maya"]})
    assert (result["action"], result["existing_event_ids"]) == ("conflict", [1]), result
    assert result["confidence"] < 0.85 and "5" in result["reason"] and "6" in result["reason"]
