"""Current truth after explicit corrections (seed-features §2.8, §4 row 39), in English and Chinese.

Each case is said through the real path (append_turn, offline derivation, the store's events and
graph facts): a single correction, the history kept, several corrections, a similar entity left
alone, a conditional that changes nothing, an entity never stated that changes nothing.
"""

from __future__ import annotations

import pytest

from core.models import Event, GraphFact
from core.services.capture import append_turn
from core.services.derive import run_pending
from core.services.spaces import configure_namespace


def _say(*turns: tuple[str, str]) -> None:
    configure_namespace("ns", block_turn_size=1)
    for user, assistant in turns:
        append_turn("ns", "t", user, assistant)
        run_pending("ns", provider="offline")


def _current(text: str) -> list[str]:
    return [e.title for e in Event.select().where(Event.status == "active") if text in e.title]


def _superseded(text: str) -> list[str]:
    return [e.title for e in Event.select().where(Event.status == "superseded") if text in e.title]


def _why_unchanged(holding: str) -> str | None:
    """Why the correction stated by the newest card holding ``holding`` changed nothing, as its card tells it."""
    from core.services.events import get_event

    card = Event.select().where(Event.title.contains(holding)).order_by(Event.id.desc()).first()
    note = get_event(card.id).correction_unchanged
    return note and note["why"]


ACK = {"en": "Done.", "zh": "好的。"}
STATED = {
    "en": "The Cedar service port is 6389.",
    "zh": "Cedar 服务的端口是 6389。",
}
CORRECTED = {
    "en": "Change the Cedar service port from 6389 to 8247.",
    "zh": "将 Cedar 服务的端口从 6389 改为 8247。",
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_single_correction_supersedes_the_statement(store, lang):
    _say((STATED[lang], ACK[lang]), (CORRECTED[lang], ACK[lang]))
    assert _superseded("6389") == [STATED[lang]]
    assert _current("8247") == [CORRECTED[lang]]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_history_is_kept(store, lang):
    _say((STATED[lang], ACK[lang]), (CORRECTED[lang], ACK[lang]))
    old = Event.get(Event.title == STATED[lang])
    new = Event.get(Event.title == CORRECTED[lang])
    assert (old.status, old.superseded_by) == ("superseded", new.id)


@pytest.mark.parametrize(
    "lang, third",
    [
        ("en", "Change the Cedar service port from 8247 to 9361."),
        ("zh", "将 Cedar 服务的端口从 8247 改为 9361。"),
    ],
)
def test_multiple_corrections_end_at_the_last(store, lang, third):
    _say((STATED[lang], ACK[lang]), (CORRECTED[lang], ACK[lang]), (third, ACK[lang]))
    assert [e.title for e in Event.select().where(Event.status == "active")] == [third]
    assert sorted(_superseded("Cedar")) == sorted([STATED[lang], CORRECTED[lang]])


@pytest.mark.parametrize(
    "lang, sibling",
    [("en", "The Cedar-2 service port is 6389."), ("zh", "Cedar-2 服务的端口是 6389。")],
)
def test_a_similar_entity_is_left_alone(store, lang, sibling):
    _say((STATED[lang], ACK[lang]), (sibling, ACK[lang]), (CORRECTED[lang], ACK[lang]))
    assert _superseded("Cedar") == [STATED[lang]]
    assert sibling in _current("Cedar-2")


@pytest.mark.parametrize(
    "lang, maybe",
    [
        ("en", "I might change the Cedar service port from 6389 to 8247."),
        ("zh", "我可能会将 Cedar 服务的端口从 6389 改为 8247。"),
    ],
)
def test_a_conditional_changes_nothing(store, lang, maybe):
    _say((STATED[lang], ACK[lang]), (maybe, ACK[lang]))
    assert _superseded("") == []
    assert STATED[lang] in _current("6389")
    assert "possibility" in _why_unchanged("8247")


@pytest.mark.parametrize(
    "lang, unknown",
    [
        ("en", "Change the Birch service port from 6389 to 8247."),
        ("zh", "将 Birch 服务的端口从 6389 改为 8247。"),
    ],
)
def test_an_unknown_entity_changes_nothing(store, lang, unknown):
    _say((STATED[lang], ACK[lang]), (unknown, ACK[lang]))
    assert _superseded("") == []
    assert _why_unchanged("Birch") == "no earlier statement of the speaker holds it"


@pytest.mark.parametrize(
    "lang, first, second",
    [
        ("en", "The Cedar service port is 6389.", "The Cedar service port is 6390."),
        ("zh", "Cedar 服务的端口是 6389。", "Cedar 服务的端口也可以是 6390。"),
    ],
)
def test_an_ambiguous_target_changes_nothing(store, lang, first, second):
    _say(
        (first, ACK[lang]),
        (second, ACK[lang]),
        ("Change the Cedar service port to 8247." if lang == "en" else "将 Cedar 服务的端口改为 8247。", ACK[lang]),
    )
    assert _superseded("") == []
    assert _why_unchanged("8247").startswith("2 earlier statements hold it")


@pytest.mark.parametrize(
    "statement, correction",
    [
        ("Cedar 服务的数据库是 MySQL。", "将 Cedar 服务的数据库从 MySQL 改为 PostgreSQL。"),
        ("我用 Notion 记笔记。", "我不再用 Notion 了，改用 Obsidian。"),
        ("My editor is Emacs.", "My editor is now Vim."),
        ("Our standup is on Tuesday.", "Sorry, our standup is not on Tuesday but on Wednesday."),
        ("Cedar 服务的缓存是 Redis。", "Cedar 服务的缓存改成 Memcached。"),
    ],
)
def test_each_correction_pattern(store, statement, correction):
    _say((statement, "OK."), (correction, "OK."))
    assert len(_superseded("")) == 1 and _superseded("")[0] in (
        statement,
        statement.replace("My", "User's").replace("Our", "User's"),
    )
    assert len([e for e in Event.select().where(Event.status == "active")]) == 1


def test_a_correction_in_the_same_block_supersedes_like_one_in_the_next(store):
    configure_namespace("ns", block_turn_size=2)
    append_turn("ns", "t", "The Cedar service port is 6389.", "Noted: the Cedar service port is 6389.")
    append_turn("ns", "t", "Change the Cedar service port from 6389 to 8247.", "Done.")
    run_pending("ns", provider="offline")
    assert [e.title for e in Event.select().where(Event.status == "active")] == [
        "Change the Cedar service port from 6389 to 8247."
    ]
    new = Event.get(Event.status == "active")
    assert {e.superseded_by for e in Event.select().where(Event.status == "superseded")} == {new.id}


def test_stopping_a_tool_ends_its_use_in_the_graph(store):
    _say(("我用 Notion 记笔记。", "好的。"), ("我不再用 Notion 了，改用 Obsidian。", "好的。"))
    uses = {(f.value, f.status) for f in GraphFact.select().where(GraphFact.key == "uses")}
    assert ('"Obsidian"', "active") in uses or ("Obsidian", "active") in uses
    assert not {v for v, s in uses if "Notion" in str(v) and s == "active"}


@pytest.mark.parametrize(
    "said", ["I might switch my editor to Vim.", "我可能会改用 Vim。", "I'm considering Vim for my editor, maybe."]
)
def test_a_possibility_is_no_current_fact(store, said):
    _say(("I use Emacs as my editor.", "Noted."), (said, "OK."))
    current = {
        str(f.value) for f in GraphFact.select().where((GraphFact.key == "uses") & (GraphFact.status == "active"))
    }
    assert not any("Vim" in v for v in current) and any("Emacs" in v for v in current)


# ----------------------------------------------------------------------------- echoes


@pytest.mark.parametrize(
    "statement, echo, correction",
    [
        (
            "The Atlas launch is on Tuesday, March 3.",
            "Noted: the Atlas launch is Tuesday, March 3.",
            "Change the Atlas launch from March 3 to March 17.",
        ),
        (
            "Cedar 服务的数据库是 MySQL。",
            "好的，记下了：Cedar 服务的数据库是 MySQL。",
            "将 Cedar 服务的数据库从 MySQL 改为 PostgreSQL。",
        ),
    ],
)
def test_an_echo_ends_with_the_statement_it_restates(store, statement, echo, correction):
    _say((statement, echo), (correction, "OK."))
    assert [e.title for e in Event.select().where(Event.status == "active")] == [correction]


# ----------------------------------------------------------------------------- short statements


@pytest.mark.parametrize("said", ["I like hiking.", "我对青霉素过敏。", "I'm vegan.", "我喜欢爬山。"])
def test_a_short_statement_is_a_card(store, said):
    _say((said, "OK."))
    assert Event.select().count() == 1


@pytest.mark.parametrize("said", ["ok", "thanks", "好的", "谢谢！", "I see.", "I'm fine."])
def test_a_filler_is_no_card(store, said):
    _say((said, "ok"))
    assert Event.select().count() == 0


def _facts(name: str, key: str) -> list[tuple[str, str, str]]:
    from core.models import GraphNode

    node = GraphNode.get(GraphNode.name == name)
    return [
        (f.value, f.status, (f.valid_from or "")[:10])
        for f in GraphFact.select().where((GraphFact.node == node) & (GraphFact.key == key)).order_by(GraphFact.id)
    ]


def _say_at(*turns: tuple[str, str, str]) -> None:
    configure_namespace("ns", block_turn_size=1)
    for user, assistant, at in turns:
        append_turn("ns", "t", user, assistant, created_at=at)
        run_pending("ns", provider="offline")


def test_an_age_holds_as_of_when_it_was_said_not_another_clauses_time(store):
    _say_at(
        (
            "I live in Utrecht with my partner Tomás and our daughter Ivy, who's six. "
            "We moved here from Dublin two years ago.",
            "Noted.",
            "2026-01-13T20:20:00+01:00",
        )
    )
    assert _facts("Ivy", "age") == [("6", "active", "2026-01-13")]


def test_turning_an_age_on_a_day_updates_the_age_from_that_day(store):
    _say_at(
        ("Our daughter Ivy is six.", "Noted.", "2026-01-13T20:20:00+01:00"),
        ("Ivy turns seven on March 21, we're planning a party.", "Lovely.", "2026-02-02T09:00:00+01:00"),
    )
    ages = _facts("Ivy", "age")
    assert ("7", "active", "2026-03-21") in ages
    assert ("6", "superseded", "2026-01-13") in ages
    assert _facts("Ivy", "birthday") == [("March 21", "active", "2026-03-21")]


def test_a_later_dated_age_replaces_the_earlier_one(store):
    _say_at(
        ("My son Leo is 4.", "Noted.", "2025-03-01T09:00:00+00:00"),
        ("Leo is 5 now and loves dinosaurs.", "Fun!", "2026-03-05T09:00:00+00:00"),
    )
    assert [a for a in _facts("Leo", "age") if a[1] == "active"] == [("5", "active", "2026-03-05")]


@pytest.mark.parametrize(
    "said", ["Atlas deploy retros happen on Fridays.", "Rotate the staging database password before each deploy."]
)
def test_a_schedule_or_a_standing_rule_is_a_card(store, said):
    _say((said, "Noted."))
    assert _current(said.split()[0]) == [said]


VEGETARIAN = (
    "Important food stuff: I'm vegetarian, and Ivy has a peanut allergy, so we have to be careful eating out.",
    "Noted: you're vegetarian and Ivy has a peanut allergy. Peanuts are rare in Portuguese cooking.",
    "2026-01-20T21:41:00+01:00",
)
PESCATARIAN = (
    "Small update about me: I started eating fish again last week, so I'm pescatarian now, not vegetarian.",
    "Updated: you're pescatarian now.",
    "2026-02-16T20:15:00+01:00",
)


def _standing() -> dict[str, str]:
    return {e.title: e.status for e in Event.select()}


def test_two_facts_of_two_people_are_two_cards_and_a_correction_ends_only_its_own(store):
    _say_at(VEGETARIAN, PESCATARIAN)
    cards = _standing()
    assert cards["Important food stuff: User is vegetarian"] == "superseded"
    assert cards["Noted: you're vegetarian"] == "superseded"  # the receipt ends with what it restates
    assert cards["Ivy has a peanut allergy, so we have to be careful eating out."] == "active"
    assert cards["Ivy has a peanut allergy."] == "active"


def test_a_correction_stored_before_the_statement_it_corrects_still_ends_it(store):
    # Threads imported one after another are derived out of time order: the February correction is
    # stored first, the January statement after it.
    configure_namespace("ns", block_turn_size=1)
    for thread, (user, assistant, at) in (("home", PESCATARIAN), ("trip", VEGETARIAN)):
        append_turn("ns", thread, user, assistant, created_at=at)
        run_pending("ns", provider="offline")
    cards = _standing()
    assert cards["Important food stuff: User is vegetarian"] == "superseded"
    assert cards["Noted: you're vegetarian"] == "superseded"
    assert cards["Ivy has a peanut allergy."] == "active"


@pytest.mark.parametrize(
    "correction, ends_both",
    [
        ("Change the Cedar service port from 6389 to 8247.", True),  # names the old value: all holding it end
        ("Change the Cedar service port to 8247.", False),  # names no old value: one card at most
    ],
)
def test_a_later_correction_that_already_ended_a_card(store, correction, ends_both):
    configure_namespace("ns", block_turn_size=1)
    for thread, (user, at) in (
        ("a", ("The Cedar service port is 6389.", "2026-03-01T09:00:00+00:00")),
        ("a", (correction, "2026-03-08T09:00:00+00:00")),
        ("b", ("The Cedar service port is 6389 per the runbook.", "2026-03-02T09:00:00+00:00")),
    ):
        append_turn("ns", thread, user, "Done.", created_at=at)
        run_pending("ns", provider="offline")
    cards = _standing()
    assert cards["The Cedar service port is 6389."] == "superseded"
    assert cards["The Cedar service port is 6389 per the runbook."] == ("superseded" if ends_both else "active")


def test_one_fact_said_twice_ends_twice(store):
    _say(
        ("The Cedar service port is 6389.", "Done."),
        ("Reminder: the Cedar service port is 6389.", "Done."),
        ("Change the Cedar service port from 6389 to 8247.", "Done."),
    )
    assert sorted(_superseded("6389")) == [
        "Reminder: the Cedar service port is 6389.",
        "The Cedar service port is 6389.",
    ]


@pytest.mark.parametrize(
    "said, allergen",
    [
        ("我对青霉素过敏。", "青霉素"),
        ("我对花生严重过敏。", "花生"),
        ("我对花生不过敏。", None),
        ("我不对猫过敏。", None),
    ],
)
def test_a_chinese_allergy_is_a_graph_fact(store, said, allergen):
    _say((said, "好的，记下了。"))
    facts = [(f.key, f.value) for f in GraphFact.select().where(GraphFact.status == "active")]
    assert facts == ([("allergic_to", allergen)] if allergen else [])
