"""A deterministic synthetic conversation corpus for the scale benchmark (benchmarks.md §3).

``conversation(n, seed)`` streams ``n`` messages as sessions ``(thread, [message dicts])`` and
never holds more than one session in memory. The corpus has several threads (each with its
own speaker and favourite topics), dates spread over years, decisions, plans, corrections,
repeated topics, assistant replies that call tools and tool results. Words outside the
entity lists come from a fixed Zipf-distributed vocabulary of invented words, so the
vocabulary and document frequencies grow as they do in real chat.

``queries(q, seed)`` gives ``q`` questions of 3–8 words about the same entities; they do
not depend on ``n``, so every corpus size answers the same questions.
"""

from __future__ import annotations

import bisect
import itertools
import random
from datetime import datetime, timedelta, timezone
from typing import Iterator

PEOPLE = (
    "Alice Brenner, Bashir Okafor, Chen Wei, Dana Kowalski, Elif Demir, Farah Haddad, Gustavo Lima, "
    "Hana Sato, Ivan Petrov, Jana Novak, Kofi Mensah, Leila Karimi, Marco Rossi, Nadia Ivanova, "
    "Oscar Lindqvist, Priya Raman, Quentin Moreau, Rosa Alvarez, Sven Larsen, Tariq Aziz, Uma Patel, "
    "Viktor Horvat, Wen Li, Ximena Torres, Yusuf Kaya, Zoe Fischer"
).split(", ")
PLACES = (
    "Lisbon Berlin Nairobi Osaka Toronto Valparaiso Krakow Hanoi Tbilisi Reykjavik Montreal Seville "
    "Dublin Porto Tallinn Kyoto Marrakesh Oslo Quito Adelaide"
).split()
TOOLS = (
    "postgres redis kafka kubernetes terraform grafana prometheus sentry airflow spark duckdb sqlite "
    "nginx envoy vault consul jenkins gitlab buildkite pulumi elasticsearch clickhouse rabbitmq celery "
    "fastapi django flask pandas polars numpy pytorch onnx triton ray dask minio ceph"
).split()
COMPONENTS = (
    "billing pipeline, search index, login flow, mobile app, onboarding email, data warehouse, "
    "payment gateway, recommendation model, admin dashboard, audit log, backup job, api gateway, "
    "notification service, feature flags, release train, error budget, cache layer, "
    "rate limiter, export tool, pricing page"
).split(", ")
ACTIVITIES = (
    "hiking climbing pottery sailing chess cycling baking painting running swimming gardening "
    "photography birdwatching kayaking skiing surfing"
).split()
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = "January February March April May June July August September October November December".split()
TOOL_NAMES = ("calendar.lookup", "web.search", "tickets.create", "docs.read", "weather.get", "email.send")
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
_START = datetime(2021, 1, 4, 9, 0, tzinfo=timezone.utc)
_SPAN_DAYS = 4 * 365


def _projects(rng: random.Random, count: int = 60) -> list[str]:
    names: list[str] = []
    while len(names) < count:
        name = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 3)))).capitalize()
        if name not in names:
            names.append(name)
    return names


def _vocabulary(rng: random.Random, size: int = 20000) -> list[str]:
    """Invented filler words (3–4 syllables) that the stemmer leaves apart."""
    words: set[str] = set()
    out: list[str] = []
    while len(out) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((3, 3, 4)))) + rng.choice("xkqmnrt")
        if word not in words:
            words.add(word)
            out.append(word)
    return out


class _Zipf:
    """Draw items with probability proportional to 1 / rank^s (deterministic given the rng)."""

    def __init__(self, items: list, s: float = 1.0) -> None:
        self.items = items
        weights = [1.0 / (rank**s) for rank in range(1, len(items) + 1)]
        self.cumulative = list(itertools.accumulate(weights))

    def draw(self, rng: random.Random):
        return self.items[bisect.bisect(self.cumulative, rng.random() * self.cumulative[-1])]


class _World:
    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.projects = _projects(rng)
        self.filler = _Zipf(_vocabulary(rng), 1.05)
        self.tools = _Zipf(list(TOOLS), 0.8)
        self.components = _Zipf(list(COMPONENTS), 0.7)
        self.people = list(PEOPLE)
        self.places = list(PLACES)


def _thread_count(n: int) -> int:
    return max(4, min(400, n // 4000))


def _sentence(world: _World, rng: random.Random, project: str, person: str, speaker: str) -> str:
    tool, other = world.tools.draw(rng), world.tools.draw(rng)
    component = world.components.draw(rng)
    day, later = rng.choice(WEEKDAYS), rng.choice(WEEKDAYS)
    kind = rng.random()
    if kind < 0.16:
        return f"We decided to use {tool} for the {project} {component} instead of {other}."
    if kind < 0.30:
        return f"Next {day} I plan to review the {component} of {project} with {person} in {rng.choice(world.places)}."
    if kind < 0.38:
        return (
            f"Correction: the {project} {component} review moved from {day} to {later}, "
            f"and {person} owns it now, not {rng.choice(world.people).split()[0]}."
        )
    if kind < 0.48:
        return (
            f"{person} said the {component} on {tool} failed twice in {rng.choice(MONTHS)} and we need a rollback plan."
        )
    if kind < 0.56:
        return f"On the weekend {speaker} went {rng.choice(ACTIVITIES)} with {person} near {rng.choice(world.places)}."
    if kind < 0.64:
        return f"The {project} deadline is {rng.randint(1, 28)} {rng.choice(MONTHS)}, budget {rng.randint(2, 90)}k."
    return f"How is the {component} for {project} going with {tool}?"


def _filler(world: _World, rng: random.Random, count: int) -> str:
    return " ".join(world.filler.draw(rng) for _ in range(count))


def conversation(n: int, seed: int = 7) -> Iterator[tuple[str, list[dict]]]:
    """``n`` messages as sessions ``(thread name, messages)``, in time order."""
    world = _World(seed)
    rng = random.Random(seed * 1_000_003 + n)
    threads = _thread_count(n)
    thread_pick = _Zipf(list(range(threads)), 0.6)
    favourites = [[rng.choice(world.projects) for _ in range(4)] for _ in range(threads)]
    speakers = [world.people[i % len(world.people)] for i in range(threads)]
    step = timedelta(days=_SPAN_DAYS) / max(1, n)
    produced = 0
    while produced < n:
        t = thread_pick.draw(rng)
        size = min(n - produced, rng.randint(16, 64))
        when = _START + step * produced
        speaker = speakers[t].split()[0]
        messages: list[dict] = []
        for i in range(size):
            when += timedelta(seconds=rng.randint(20, 240))
            project = rng.choice(favourites[t]) if rng.random() < 0.8 else rng.choice(world.projects)
            person = rng.choice(world.people)
            stamp = when.isoformat()
            turn = i % 3
            if turn == 0 or i == 0:
                text = f"{_sentence(world, rng, project, person, speaker)} {_filler(world, rng, rng.randint(6, 16))}"
                messages.append({"role": "user", "speaker": speaker, "content": text, "created_at": stamp})
            elif turn == 1 and rng.random() < 0.2:
                name = rng.choice(TOOL_NAMES)
                messages.append(
                    {
                        "role": "assistant",
                        "speaker": "assistant",
                        "created_at": stamp,
                        "content": f"Let me check {project} with {name}. {_filler(world, rng, rng.randint(4, 10))}",
                        "tool_calls": [
                            {"name": name, "arguments": {"query": f"{project} {world.components.draw(rng)}"}}
                        ],
                    }
                )
            elif turn == 2 and messages[-1].get("tool_calls"):
                messages.append(
                    {
                        "role": "tool",
                        "speaker": messages[-1]["tool_calls"][0]["name"],
                        "created_at": stamp,
                        "content": f"{project}: {_filler(world, rng, rng.randint(8, 20))}",
                    }
                )
            else:
                text = f"{_sentence(world, rng, project, person, 'you')} {_filler(world, rng, rng.randint(8, 18))}"
                messages.append({"role": "assistant", "speaker": "assistant", "content": text, "created_at": stamp})
        produced += size
        yield f"thread-{t:03d}", messages


def thread_names(n: int) -> list[str]:
    return [f"thread-{t:03d}" for t in range(_thread_count(n))]


def queries(q: int, seed: int = 7) -> list[str]:
    """``q`` questions of 3–8 words about the corpus's entities (independent of its size)."""
    world = _World(seed)
    rng = random.Random(seed + 99)
    templates = (
        lambda: f"when did we decide on {world.tools.draw(rng)} for {rng.choice(world.projects)}",
        lambda: f"{rng.choice(world.people).split()[0]} {world.components.draw(rng)} review",
        lambda: f"what is the {rng.choice(world.projects)} deadline and budget",
        lambda: f"who owns the {world.components.draw(rng)} of {rng.choice(world.projects)} now",
        lambda: f"{rng.choice(ACTIVITIES)} trip near {rng.choice(world.places)}",
        lambda: f"why did {world.tools.draw(rng)} fail in {rng.choice(MONTHS)}",
        lambda: f"plan with {rng.choice(world.people).split()[0]} in {rng.choice(world.places)} {rng.choice(WEEKDAYS)}",
        lambda: (
            f"{world.filler.draw(rng)} {world.filler.draw(rng)} {rng.choice(world.projects)} {world.tools.draw(rng)}"
        ),
    )
    out = []
    while len(out) < q:
        text = templates[len(out) % len(templates)]()
        if 3 <= len(text.split()) <= 8:
            out.append(text)
    return out
