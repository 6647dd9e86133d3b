"""`strata bench import`: decisions on a generated, labelled import against a seeded store.

The seeded store is built the way a user's store is: conversations in which people's facts
are stated, derived into blocks, events and graph. (Extraction uses an oracle that turns
each planted statement into exactly one event, so every label knows its right target; the
summaries and the graph use the offline provider.) The import is a v2 export whose
candidates are generated from the same facts, each with a known right answer:

- duplicate (exact or differing only in case and punctuation) → ignore
- paraphrased duplicate (other words, same value) → ignore
- elaboration (the same fact with new detail) → merge
- newer version (a new value with an update cue and/or a later date) → supersede
- contradiction (a negation, or another value for a fact that does not change) → conflict
- new fact (a new person, a new kind of fact for a known person, or a known value for
  another person) → add
- noise (small talk, passing states, remarks about the chat) → ignore

Every kind has several phrasings, chosen by a seeded generator, so the wording varies from
seed to seed. Reported: decision accuracy per expected action and overall (a targeted
decision is right only with the right target), the share of decisions applied without a
person (confidence at or above the threshold), their precision, and the undo round trip
(the export after import → commit → derive → undo equals the export before).
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from core.bench import git_commit
from core.errors import InvalidInputError
from core.imports.formats import MAX_CANDIDATES
from core.models import Event, EventSource, Message
from core.providers import get_provider, usage as usage_acct
from core.providers.usage import prices
from core.services.capture import append_messages
from core.services.export import export_namespace
from core.services.spaces import configure_namespace

ProgressFn = Callable[[int, int, str], None]
ACTIONS = ("add", "merge", "supersede", "conflict", "ignore")

PEOPLE = [
    "Maya",
    "Ben",
    "Priya",
    "Tomas",
    "Aiko",
    "Lena",
    "Omar",
    "Sofia",
    "Jonas",
    "Nadia",
    "Kofi",
    "Elena",
    "Ravi",
    "Chloe",
    "Mateo",
    "Ingrid",
    "Yusuf",
    "Hana",
    "Felix",
    "Amara",
]
NEW_PEOPLE = ["Dmitri", "Leila", "Oscar", "Zara", "Hugo", "Mira", "Theo", "Noor", "Sven", "Alma"]


@dataclass(frozen=True)
class Relation:
    """One kind of fact with its values and the ways of saying it."""

    key: str
    values: tuple[str, ...]
    state: tuple[str, ...]  # how a conversation states it ({p} person, {v} value)
    para: tuple[str, ...]  # other words, same value
    elab: tuple[str, ...]  # same value, more detail ({d} detail)
    details: tuple[str, ...]
    update: tuple[str, ...]  # a new value ({v} new, {o} old)
    negate: tuple[str, ...]
    labels: tuple[str, ...]  # short candidate titles
    functional: bool = True  # one value at a time (else values accumulate: allergies, instruments …)
    immutable: bool = False
    contra: tuple[str, ...] = ()  # another value stated plainly (immutable facts only)


RELATIONS: tuple[Relation, ...] = (
    Relation(
        "lives_in",
        (
            "Lisbon",
            "Porto",
            "Berlin",
            "Munich",
            "Toronto",
            "Osaka",
            "Dublin",
            "Madrid",
            "Vienna",
            "Seattle",
            "Oslo",
            "Lyon",
            "Krakow",
            "Nairobi",
        ),
        ("{p} lives in {v}.", "{p} is living in {v} these days.", "{p} has a flat in {v}."),
        (
            "{p} is based in {v}.",
            "{p}'s home is in {v}.",
            "{p} resides in {v}.",
            "Home for {p} is {v}.",
            "{p} lives in the city of {v}.",
        ),
        ("{p} lives in {v}, {d}.", "{p} is based in {v}, {d}."),
        (
            "in a small apartment near the river",
            "in the old town close to the central market",
            "sharing a house with two roommates",
            "in a quiet neighbourhood north of the harbour",
        ),
        (
            "{p} moved from {o} to {v} last year.",
            "{p} now lives in {v}.",
            "{p} relocated to {v} in 2025.",
            "{p} no longer lives in {o}; {p} moved to {v}.",
            "As of this spring, {p} lives in {v}.",
        ),
        ("{p} does not live in {v}.", "{p} has never lived in {v}."),
        ("Where {p} lives", "{p}'s home", "{p} — residence", "Home city of {p}"),
    ),
    Relation(
        "works_at",
        (
            "Acme",
            "Globex",
            "Initech",
            "Umbrella Labs",
            "Northwind",
            "Contoso",
            "Hooli",
            "Vandelay",
            "Soylent",
            "Tyrell Systems",
        ),
        ("{p} works at {v}.", "{p} has a job at {v}.", "{p} is employed by {v}."),
        (
            "{p} is employed at {v}.",
            "{p}'s employer is {v}.",
            "{p} has been working for {v}.",
            "{v} is where {p} works.",
        ),
        ("{p} works at {v} {d}.", "{p} is employed by {v}, {d}."),
        (
            "on the payments team",
            "in the Amsterdam office three days a week",
            "leading the data platform group",
            "as part of the customer research team",
        ),
        (
            "{p} left {o} and joined {v}.",
            "{p} switched jobs and now works at {v}.",
            "{p} started a new job at {v} in 2025.",
            "{p} is now employed by {v} after leaving {o}.",
        ),
        ("{p} does not work at {v}.", "{p} has never worked for {v}."),
        ("{p}'s employer", "Where {p} works", "{p} — job", "Workplace of {p}"),
    ),
    Relation(
        "role",
        (
            "designer",
            "engineer",
            "product manager",
            "data analyst",
            "teacher",
            "nurse",
            "architect",
            "accountant",
            "researcher",
            "consultant",
        ),
        ("{p} works as a {v}.", "{p} is a {v} by profession."),
        (
            "{p} has a career as a {v}.",
            "By profession, {p} is a {v}.",
            "{p}'s job title is {v}.",
            "{p} earns a living as a {v}.",
        ),
        ("{p} works as a {v}, {d}.", "{p} is a {v} by profession, {d}."),
        (
            "specialising in accessibility for public services",
            "with ten years of experience in healthcare",
            "mostly on mobile apps for banks",
            "mentoring two junior colleagues",
        ),
        (
            "{p} was promoted and is now a {v}.",
            "{p} changed careers and now works as a {v}.",
            "{p} recently became a {v}.",
            "{p} is no longer a {o}; {p} now works as a {v}.",
        ),
        ("{p} is not a {v}.", "{p} has never worked as a {v}."),
        ("{p}'s profession", "What {p} does for a living", "{p} — role"),
    ),
    Relation(
        "pet",
        ("Rex", "Luna", "Biscuit", "Mochi", "Pepper", "Olive", "Ziggy", "Nala", "Bruno", "Kiwi"),
        ("{p} has a dog named {v}.", "{p} owns a dog called {v}."),
        (
            "{p}'s dog is called {v}.",
            "{v} is the name of {p}'s dog.",
            "{p} keeps a dog named {v}.",
            "The dog that {p} owns is named {v}.",
        ),
        ("{p} has a dog named {v}, {d}.", "{p}'s dog {v} is {d}."),
        (
            "a three-year-old beagle who loves the beach",
            "a rescue greyhound adopted in 2021",
            "a shy terrier who is afraid of thunder",
            "a golden retriever puppy still in training",
        ),
        (
            "{p}'s old dog {o} died and {p} adopted a new dog named {v}.",
            "{p} now has a dog called {v}.",
            "{p} recently adopted a puppy named {v}.",
        ),
        ("{p} does not have a dog named {v}.", "{p} has never owned a dog called {v}."),
        ("{p}'s dog", "Pet of {p}", "{p} — pet"),
        functional=False,
    ),
    Relation(
        "drink",
        ("tea", "coffee", "matcha", "espresso", "hot chocolate", "green tea", "sparkling water"),
        ("{p} prefers {v} in the morning.", "{p} drinks {v} every morning."),
        (
            "{p}'s morning drink is {v}.",
            "Every morning {p} has a cup of {v}.",
            "{p} likes to start the day with {v}.",
            "In the mornings {p} goes for {v}.",
        ),
        ("{p} prefers {v} in the morning, {d}.", "{p} drinks {v} every morning, {d}."),
        (
            "without sugar and with oat milk",
            "brewed strong in a French press",
            "always from the same blue mug",
            "before checking any email",
        ),
        (
            "{p} switched from {o} to {v} in the mornings.",
            "{p} now drinks {v} every morning instead of {o}.",
            "These days {p} prefers {v} in the morning.",
        ),
        ("{p} does not drink {v} in the morning.", "{p} never drinks {v}."),
        ("{p}'s morning drink", "What {p} drinks in the morning", "{p} — drink"),
    ),
    Relation(
        "instrument",
        ("piano", "cello", "violin", "guitar", "drums", "flute", "saxophone", "ukulele"),
        ("{p} plays the {v}.", "{p} plays the {v} in a local band."),
        (
            "{p} is a {v} player.",
            "The {v} is the instrument {p} plays.",
            "{p} knows how to play the {v}.",
            "{p} practises the {v}.",
        ),
        ("{p} plays the {v}, {d}.", "{p} is a {v} player, {d}."),
        (
            "practising an hour every evening",
            "in a community orchestra on Thursdays",
            "and has played since childhood",
            "mostly jazz standards",
        ),
        (
            "{p} gave up the {o} and now plays the {v}.",
            "{p} recently started playing the {v}.",
            "{p} switched from the {o} to the {v}.",
        ),
        ("{p} does not play the {v}.", "{p} has never played the {v}."),
        ("{p}'s instrument", "Music: {p}", "{p} — instrument"),
        functional=False,
    ),
    Relation(
        "birthday",
        ("March 3", "May 14", "July 22", "September 9", "November 30", "January 17", "April 28", "October 5"),
        ("{p}'s birthday is on {v}.", "{p} was born on {v}."),
        (
            "{p} celebrates a birthday on {v}.",
            "{v} is {p}'s birthday.",
            "The birthday of {p} falls on {v}.",
            "{p}'s date of birth is {v}.",
        ),
        ("{p}'s birthday is on {v}, {d}.", "{p} was born on {v}, {d}."),
        (
            "usually celebrated with a dinner at home",
            "and {p} prefers no surprise parties",
            "the same day as {p}'s grandmother",
        ),
        ("Correction: {p}'s birthday is actually on {v}, not {o}.", "{p}'s birthday was recorded wrong; it is {v}."),
        ("{p}'s birthday is not on {v}.", "{p} was not born on {v}."),
        ("{p}'s birthday", "Birthday of {p}", "{p} — date of birth"),
        immutable=True,
        contra=("{p}'s birthday is on {v}.", "{p} was born on {v}.", "{p} celebrates a birthday on {v}."),
    ),
    Relation(
        "language",
        ("Spanish", "Japanese", "German", "Italian", "Portuguese", "Korean", "French", "Mandarin"),
        ("{p} is learning {v}.", "{p} takes {v} lessons twice a week."),
        (
            "{p} studies {v}.",
            "{p} has been taking {v} classes.",
            "Learning {v} is what {p} is working on.",
            "{p} is studying the {v} language.",
        ),
        ("{p} is learning {v}, {d}.", "{p} studies {v}, {d}."),
        (
            "with a tutor on Tuesday evenings",
            "to prepare for a trip next year",
            "using an app on the train to work",
            "and can already hold simple conversations",
        ),
        (
            "{p} stopped learning {o} and now studies {v}.",
            "{p} switched from {o} to {v} lessons.",
            "{p} recently started learning {v} instead of {o}.",
        ),
        ("{p} is not learning {v}.", "{p} has never studied {v}."),
        ("{p}'s language studies", "Language {p} is learning", "{p} — language"),
        functional=False,
    ),
    Relation(
        "tool",
        ("Notion", "Obsidian", "Trello", "Jira", "Asana", "Todoist", "Evernote", "Linear"),
        ("{p} uses {v} to organise work.", "{p} keeps all notes in {v}."),
        (
            "{p} organises work in {v}.",
            "{v} is the tool {p} relies on for notes.",
            "{p} relies on {v} for planning.",
            "{p}'s notes live in {v}.",
        ),
        ("{p} uses {v} to organise work, {d}.", "{p} keeps all notes in {v}, {d}."),
        (
            "with a separate board for each client",
            "synced across laptop and phone",
            "with a weekly review template",
            "including a reading list and meeting notes",
        ),
        ("{p} switched from {o} to {v}.", "{p} moved all notes from {o} to {v}.", "{p} now uses {v} instead of {o}."),
        ("{p} does not use {v}.", "{p} has never used {v}."),
        ("{p}'s note-taking tool", "Tool {p} uses", "{p} — tools"),
    ),
    Relation(
        "sport",
        ("tennis", "climbing", "swimming", "running", "yoga", "cycling", "rowing", "chess"),
        ("{p} enjoys {v} on weekends.", "{p} goes {v} every weekend."),
        (
            "On weekends {p} does {v}.",
            "{p} spends weekends {v}.",
            "{v} is {p}'s weekend hobby.",
            "{p}'s favourite weekend activity is {v}.",
        ),
        ("{p} enjoys {v} on weekends, {d}.", "{p} goes {v} every weekend, {d}."),
        (
            "usually with a club near the lake",
            "and is training for a competition in June",
            "with a group of old university friends",
        ),
        (
            "{p} gave up {o} and took up {v} instead.",
            "{p} now spends weekends {v} rather than {o}.",
            "{p} recently switched from {o} to {v}.",
        ),
        ("{p} does not enjoy {v}.", "{p} never goes {v}."),
        ("{p}'s weekend hobby", "Hobby of {p}", "{p} — sport"),
        functional=False,
    ),
    Relation(
        "allergy",
        ("peanuts", "shellfish", "penicillin", "cats", "pollen", "gluten", "latex"),
        ("{p} is allergic to {v}.", "{p} has an allergy to {v}."),
        (
            "{p} has a {v} allergy.",
            "An allergic reaction is triggered in {p} by {v}.",
            "{p} cannot be around {v} because of an allergy.",
            "{p} reacts badly to {v}.",
        ),
        ("{p} is allergic to {v}, {d}.", "{p} has an allergy to {v}, {d}."),
        ("and carries an epinephrine pen", "diagnosed as a child", "which is severe"),
        ("{p}'s doctor confirmed the allergy is to {v}, not {o}.", "Correction: {p} is actually allergic to {v}."),
        ("{p} is not allergic to {v}.", "{p} has no allergy to {v}."),
        ("{p}'s allergy", "Allergy: {p}", "{p} — health"),
        functional=False,
    ),
)

NEW_FACTS = (
    "{p} volunteers at the animal shelter on Saturdays.",
    "{p} is training for the Berlin marathon.",
    "{p} grew up on a farm near the coast.",
    "{p} collects vintage film cameras.",
    "{p} is writing a novel about a lighthouse keeper.",
    "{p} has two younger brothers.",
    "{p} keeps bees in the back garden.",
    "{p} is saving money to buy a sailboat.",
    "{p} reads science fiction before bed.",
    "{p} bakes sourdough bread every Sunday.",
    "{p} is afraid of flying.",
    "{p} once hiked the whole Camino de Santiago.",
)

NOISE = (
    "User said good morning.",
    "User thanked the assistant for the help.",
    "Asked the assistant for a joke.",
    "The assistant explained how to boil an egg.",
    "{p} is tired today.",
    "{p} felt a bit hungry this afternoon.",
    "User asked about the weather.",
    "Had a short chat about nothing in particular.",
    "User said hello and asked how the assistant was doing.",
    "The assistant suggested taking a break.",
    "{p} is running late right now.",
    "Talked about various things.",
    "User tested the assistant with a few questions.",
    "Chatted briefly about the weekend.",
    "{p} is in a hurry this morning.",
)


@dataclass
class Fact:
    fact_id: int
    person: str
    relation: Relation
    value: str
    statement: str
    mentioned_at: str
    event_id: int | None = None


@dataclass
class Case:
    kind: str
    expected: str
    candidate: dict[str, Any]
    fact: Fact | None = None  # the stored fact the right answer targets


@dataclass
class Generated:
    facts: list[Fact]
    cases: list[Case]
    conversations: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text[0].upper() + text[1:] if text else text


def generate(seed: int = 7, *, candidates: int = 200, people: int = 14) -> Generated:
    """Seeded store facts, the conversations that state them, and labelled candidates."""
    rng = random.Random(seed)
    persons = rng.sample(PEOPLE, min(people, len(PEOPLE)))
    facts: list[Fact] = []
    for person in persons:
        for relation in rng.sample(RELATIONS, rng.randint(4, 6)):
            value = rng.choice(relation.values)
            day = rng.randint(1, 170)
            month, dom = 1 + day // 29, 1 + day % 28
            mentioned = f"2024-{month:02d}-{dom:02d}T{rng.randint(8, 20):02d}:{rng.choice(['05', '20', '40'])}:00+00:00"
            statement = _sentence(rng.choice(relation.state).format(p=person, v=value))
            facts.append(Fact(len(facts) + 1, person, relation, value, statement, mentioned))
    conversations: dict[str, list[tuple[str, str, str]]] = {}
    for fact in sorted(facts, key=lambda f: f.mentioned_at):
        thread = f"chat-{fact.person.lower()}" if rng.random() < 0.6 else f"chat-{rng.randint(1, 4)}"
        reply = rng.choice(["Noted.", "Got it, I'll remember that.", "Thanks for telling me.", "Okay."])
        conversations.setdefault(thread, []).append((fact.statement, reply, fact.mentioned_at))

    kinds = [
        ("duplicate", 0.10),
        ("near_duplicate", 0.05),
        ("paraphrase", 0.17),
        ("elaboration", 0.12),
        ("newer", 0.17),
        ("contradiction", 0.14),
        ("new", 0.17),
        ("noise", 0.08),
    ]
    plan: list[str] = []
    for kind, share in kinds:
        plan += [kind] * round(share * candidates)
    while len(plan) < candidates:
        plan.append("new")
    plan = plan[:candidates]
    rng.shuffle(plan)
    by_person: dict[str, set[str]] = {}
    for fact in facts:
        by_person.setdefault(fact.person, set()).add(fact.relation.key)
    cases: list[Case] = []
    seen: set[str] = set()
    for kind in plan:
        for _ in range(50):  # no two candidates with the same wording (that would be a duplicate)
            case = _case(kind, rng, facts, persons, by_person)
            key = case.candidate["summary"] + ("" if kind != "duplicate" else "")
            if key not in seen:
                break
        seen.add(key)
        cases.append(case)
    return Generated(facts=facts, cases=cases, conversations=conversations)


def _other_value(rng: random.Random, relation: Relation, value: str) -> str:
    return rng.choice([v for v in relation.values if v != value])


def _label(rng: random.Random, relation: Relation, person: str, summary: str) -> str:
    if rng.random() < 0.35:
        return summary.rstrip(".")[:160]
    return rng.choice(relation.labels).format(p=person)


def _candidate(
    rng: random.Random,
    title: str,
    summary: str,
    *,
    person: str | None,
    mentioned: str | None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    temporal: dict[str, Any] = {}
    if person and rng.random() < 0.6:
        temporal["participants"] = [person]
    if mentioned:
        temporal["mentionedAt"] = mentioned
    temporal.update(extra or {})
    candidate: dict[str, Any] = {
        "memoryKind": rng.choice(["fact", "preference", "event"]),
        "title": title,
        "summary": summary,
        "confidence": round(rng.uniform(0.6, 1.0), 2),
    }
    if temporal:
        candidate["temporal"] = temporal
    if rng.random() < 0.5:
        candidate["category"] = rng.choice(["identity", "career", "preference", "project"])
    return candidate


def _case(kind: str, rng: random.Random, facts: list[Fact], persons: list[str], by_person: dict[str, set[str]]) -> Case:
    fact = rng.choice(facts)
    rel, p = fact.relation, fact.person
    old_date = fact.mentioned_at[:10]
    later = f"2025-{rng.randint(1, 10):02d}-{rng.randint(1, 28):02d}"
    if kind == "duplicate":
        return Case(
            kind, "ignore", {"title": f"@@stored-title:{fact.fact_id}", "summary": f"@@stored:{fact.fact_id}"}, fact
        )
    if kind == "near_duplicate":
        return Case(
            kind,
            "ignore",
            {"title": f"@@stored-title-loud:{fact.fact_id}", "summary": f"@@stored-loud:{fact.fact_id}"},
            fact,
        )
    if kind == "paraphrase":
        summary = _sentence(rng.choice(rel.para).format(p=p, v=fact.value))
        return Case(
            kind,
            "ignore",
            _candidate(rng, _label(rng, rel, p, summary), summary, person=p, mentioned=rng.choice([None, old_date])),
            fact,
        )
    if kind == "elaboration":
        detail = rng.choice(rel.details).format(p=p)
        summary = _sentence(rng.choice(rel.elab).format(p=p, v=fact.value, d=detail))
        return Case(
            kind,
            "merge",
            _candidate(
                rng, _label(rng, rel, p, summary), summary, person=p, mentioned=rng.choice([None, old_date, later])
            ),
            fact,
        )
    if kind == "newer":
        new = _other_value(rng, rel, fact.value)
        if rel.immutable or not rel.functional or rng.random() < 0.85:
            summary = _sentence(rng.choice(rel.update).format(p=p, v=new, o=fact.value))
            extra = {}
        else:
            # No cue word, only a later date.
            summary = _sentence(rng.choice(rel.state).format(p=p, v=new))
            extra = {"happenedStart": later[:7], "precision": "month", "basis": "explicit"}
        return Case(
            kind,
            "supersede",
            _candidate(rng, _label(rng, rel, p, summary), summary, person=p, mentioned=later, extra=extra),
            fact,
        )
    if kind == "contradiction":
        if rel.immutable and rng.random() < 0.6:
            summary = _sentence(rng.choice(rel.contra).format(p=p, v=_other_value(rng, rel, fact.value)))
        else:
            summary = _sentence(rng.choice(rel.negate).format(p=p, v=fact.value))
        return Case(
            kind,
            "conflict",
            _candidate(rng, _label(rng, rel, p, summary), summary, person=p, mentioned=rng.choice([None, old_date])),
            fact,
        )
    if kind == "new":
        roll = rng.random()
        if roll < 0.35:
            person = rng.choice(NEW_PEOPLE)
            relation = rng.choice(RELATIONS)
            summary = _sentence(rng.choice(relation.state).format(p=person, v=rng.choice(relation.values)))
            title = _label(rng, relation, person, summary)
        elif roll < 0.7:
            person = rng.choice(persons)
            missing = [r for r in RELATIONS if r.key not in by_person.get(person, set())]
            if missing and rng.random() < 0.6:
                relation = rng.choice(missing)
                summary = _sentence(rng.choice(relation.state).format(p=person, v=rng.choice(relation.values)))
                title = _label(rng, relation, person, summary)
            else:
                summary = _sentence(rng.choice(NEW_FACTS).format(p=person))
                title = summary.rstrip(".")
        else:
            # A stored value, said of someone else who has no such fact stored.
            others = [x for x in persons if x != p and rel.key not in by_person.get(x, set())]
            person = rng.choice(others or NEW_PEOPLE)
            summary = _sentence(rng.choice(rel.state).format(p=person, v=fact.value))
            title = _label(rng, rel, person, summary)
        return Case(kind, "add", _candidate(rng, title, summary, person=person, mentioned=rng.choice([None, later])))
    summary = _sentence(rng.choice(NOISE).format(p=rng.choice(persons)))
    return Case("noise", "ignore", _candidate(rng, summary.rstrip("."), summary, person=None, mentioned=None))


# ----------------------------------------------------------------------------- the seeded store


class OracleExtractor:
    """Derivation provider for the seeded store: summaries and graph from the offline
    provider, extraction that turns each planted statement into exactly one event."""

    name = "bench-oracle"
    model = None

    def __init__(self, facts: list[Fact], title_rng: random.Random):
        # start-up time, here and below: `strata --help` loads this module, so what only a run
        # needs loads when the run starts
        from core.providers.offline import OfflineProvider

        self._offline = OfflineProvider()
        self._by_text = {f.statement: f for f in facts}
        self._rng = title_rng

    def summarize_block(self, messages):
        return self._offline.summarize_block(messages)

    def project_graph(self, context):
        return self._offline.project_graph(context)

    def extract_events(self, context):
        events = []
        for message in context["target"]["messages"]:
            fact = self._by_text.get(message.get("text", ""))
            if fact is None:
                continue
            title = (
                fact.statement.rstrip(".")
                if self._rng.random() < 0.6
                else self._rng.choice(fact.relation.labels).format(p=fact.person)
            )
            events.append(
                {
                    "title": title,
                    "summary": fact.statement,
                    "source_message_ids": [message["id"]],
                    "tags": [fact.relation.key.replace("_", " ")],
                    "scope": "user",
                    "criticality": "routine",
                    "temporal": {
                        "mentioned_at": fact.mentioned_at,
                        "participants": [fact.person],
                        "precision": "unknown",
                        "basis": "unknown",
                        "status": "ongoing",
                    },
                }
            )
        return {"should_extract": bool(events), "reason": "planted facts", "events": events}


def _seed_store(namespace: str, generated: Generated, seed: int) -> None:
    from core.services.derive import run_pending

    configure_namespace(namespace, block_turn_size=6)
    for thread, turns in sorted(generated.conversations.items()):
        messages = []
        for user, reply, when in turns:
            messages += [
                {"role": "user", "content": user, "created_at": when},
                {"role": "assistant", "content": reply, "created_at": when},
            ]
        append_messages(namespace, thread, messages, close_turn=True, close_thread=True)
    run_pending(namespace, provider=OracleExtractor(generated.facts, random.Random(seed + 1)))
    by_text = {f.statement: f for f in generated.facts}
    rows = (
        Event.select(Event.id, Message.content)
        .join(EventSource)
        .join(Message, on=(EventSource.message == Message.id))
        .tuples()
    )
    for event_id, content in rows:
        fact = by_text.get(content)
        if fact is not None and fact.event_id is None:
            fact.event_id = event_id


def _materialise(cases: list[Case]) -> None:
    """Fill the duplicate cases with the stored event's own title and summary."""

    for case in cases:
        _title, summary = case.candidate.get("title", ""), case.candidate.get("summary", "")
        if not summary.startswith("@@stored"):
            continue
        event = Event.get_by_id(case.fact.event_id)
        loud = "loud" in summary
        case.candidate = {
            "title": event.title.upper() + "!" if loud else event.title,
            "summary": (event.summary.rstrip(".").lower() + " ...") if loud else event.summary,
        }


def export_document(cases: list[Case], seed: int) -> dict[str, Any]:
    return {
        "schemaVersion": "stratagate.external-memory.v2",
        "sourceType": "external_ai_memory_export",
        "sourceSystem": "bench-generator",
        "exportedAt": "2025-11-01",
        "coverage": "partial",
        "coverageNote": f"generated with seed {seed}",
        "candidates": [c.candidate for c in cases],
    }


def score(cases: list[Case], items: list[Any]) -> dict[str, Any]:
    """Accuracy per expected action, auto-applied share and precision, the confusion table."""
    per: dict[str, list[int]] = {a: [0, 0] for a in ACTIONS}
    confusion: dict[str, dict[str, int]] = {a: {b: 0 for b in ACTIONS} for a in ACTIONS}
    auto = auto_right = right_total = 0
    rows = []
    for case, item in zip(cases, items):
        action = item.action or "ignore"
        right = action == case.expected
        if right and case.expected in ("merge", "supersede", "conflict"):
            right = case.fact is not None and case.fact.event_id in item.target_ids
        per[case.expected][1] += 1
        per[case.expected][0] += right
        right_total += right
        confusion[case.expected][action] += 1
        if not item.requires_confirmation:
            auto += 1
            auto_right += right
        rows.append(
            {
                "position": item.position,
                "kind": case.kind,
                "expected": case.expected,
                "decided": action,
                "targets": list(item.target_ids),
                "expected_target": case.fact.event_id if case.fact and case.expected != "add" else None,
                "confidence": item.confidence,
                "auto": not item.requires_confirmation,
                "right": bool(right),
                "title": item.candidate.title,
                "summary": item.candidate.summary,
                "reason": item.reason,
            }
        )
    n = len(cases)
    accuracy = {"overall": round(right_total / n, 4) if n else None}
    for action, (ok, total) in per.items():
        accuracy[action] = round(ok / total, 4) if total else None
    return {
        "accuracy": accuracy,
        "counts": {a: per[a][1] for a in ACTIONS},
        "auto_applied_share": round(auto / n, 4) if n else None,
        "auto_applied_precision": round(auto_right / auto, 4) if auto else None,
        "confusion": confusion,
        "per_item": rows,
    }


def decision_provider(provider: Any) -> tuple[Any, dict[str, Any]]:
    """The provider the decisions go through (made now, so a missing key fails before any work),
    and how the report names it."""

    prov = provider if provider is not None and not isinstance(provider, str) else get_provider(provider)
    name = provider if isinstance(provider, str) and provider else getattr(prov, "name", "offline")
    if getattr(prov, "model_backed", False):
        prices()  # a price setting that is no number is refused now, not after the model was paid
    return prov, {
        "provider": name,
        "model": getattr(prov, "model", None),
        "model_backed": bool(getattr(prov, "model_backed", False)),
    }


def model_usage(described: dict[str, Any], batches: list[Any]) -> dict[str, Any] | None:
    """Tokens of the model calls the batches made, as reported and as Strata estimates them, with
    the estimated cost at the configured prices; None for a decider that is no model."""

    if not described["model_backed"]:
        return None
    total = usage_acct.add(*(getattr(b, "usage", None) for b in batches))
    return {**total, "cost": usage_acct.cost_estimate(total)}


def run_import_bench(
    *,
    seed: int = 7,
    candidates: int = 200,
    people: int = 14,
    threshold: float = 0.85,
    top_k: int = 5,
    provider: str | None = None,
    db_url: str | None = None,
    progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Seed a store, preview the generated import, score it, then commit, derive and undo."""
    from core.services.derive import run_pending
    from core.services.import_commit import commit_batch
    from core.services.import_preview import preview_import
    from core.services.import_undo import undo_batch
    from core.api import open_store

    if not 1 <= candidates <= MAX_CANDIDATES:
        raise InvalidInputError(f"candidates must be from 1 to {MAX_CANDIDATES} (one import batch), got {candidates}")
    if not 1 <= people <= len(PEOPLE):
        raise InvalidInputError(f"people must be from 1 to {len(PEOPLE)}, got {people}")
    # Before any store is built: a model provider without its key stops here, naming what to set.
    prov, described = decision_provider(provider)
    started = time.monotonic()
    holder = None
    if db_url is None:
        holder = tempfile.TemporaryDirectory(prefix="strata-bench-import-")
        db_url = f"sqlite:///{Path(holder.name) / 'bench.db'}"
    store = open_store(db_url)
    namespace = f"bench-import-{seed}"
    try:
        generated = generate(seed, candidates=candidates, people=people)
        _seed_store(namespace, generated, seed)
        seeded = time.monotonic()
        _materialise(generated.cases)
        before = export_namespace(namespace, "json")
        text = json.dumps(export_document(generated.cases, seed), ensure_ascii=False, indent=1)
        preview = preview_import(
            namespace,
            text,
            source_name=f"generated seed {seed}",
            provider=prov,
            top_k=top_k,
            threshold=threshold,
            progress=progress,
        )
        previewed = time.monotonic()
        report = score(generated.cases, list(preview.items))
        committed = commit_batch(preview.batch.id, provider=prov)
        # The round trip checks undo, not the model: its graph projection runs offline, at no cost.
        derived = run_pending(namespace, provider="offline" if described["model_backed"] else prov)
        undo = undo_batch(preview.batch.id)
        after = export_namespace(namespace, "json")
        finished = time.monotonic()
    finally:
        store.close()
        if holder is not None:
            holder.cleanup()
    return {
        "benchmark": "import",
        "provider": described["provider"],
        "model": described["model"],
        "usage": model_usage(described, [committed.batch]),
        "commit": git_commit(),
        "seed": seed,
        "candidates": candidates,
        "stored_facts": len(generated.facts),
        "threshold": threshold,
        "top_k": top_k,
        **report,
        "undo_round_trip": before == after,
        "round_trip": {
            "imported_events": committed.batch.imported_count,
            "graph_jobs_run": derived.processed,
            "removed_events": len(undo.removed_event_ids),
            "restored_events": len(undo.restored_event_ids),
            "graph_removed": undo.graph_removed,
            "graph_restored": undo.graph_restored,
            "export_bytes": len(before.encode("utf-8")),
        },
        "timing": {
            "seed_s": round(seeded - started, 2),
            "preview_s": round(previewed - seeded, 2),
            "total_s": round(finished - started, 2),
        },
    }
