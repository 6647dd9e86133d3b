"""Gated patterns: a substring test in front of a long pattern must never change what it finds."""

from __future__ import annotations

import pytest


def _gated_corpus() -> list[str]:
    import json
    from pathlib import Path

    from core.bench.synthetic import conversation
    from core.demo import demo_source
    from core.text import sentences

    texts = [json.loads(line)["content"] for line in Path(demo_source()).read_text().splitlines() if line.strip()]
    texts += [m["content"] for _, batch in conversation(400, seed=5) for m in batch]
    texts += [
        "Woodhaven, a small town in the Midwest.",
        "the game was called Counter-Strike",
        "Ivy's nickname is Bean",
        "We got another cat named Bailey.",
        "She resigned from Acme Inc.",
        "'Connected LGBTQ Activists'",
        "Tomás goes by Tom",
        "KING OF GONDOR",
        "Café Central is a café called Landtmann",
        "Tomás TEACHES physics at a school",
        "I'm strictly vegetarian now",
        "Ana is a huge fan of jazz",
        "We really like the new flat",
        "she doesn't enjoy crowds",
        "Tomás taught English in Spain",
    ]
    return [s for text in texts for s in [text, *sentences(text)]]


def test_every_gated_pattern_finds_what_its_pattern_finds():
    """A gate only skips text no match could be in: on a corpus, the same matches with and without."""
    from core.providers import offline_graph
    from core.text import GatedPattern

    gated = {name: value for name, value in vars(offline_graph).items() if isinstance(value, GatedPattern)}
    assert len(gated) >= 10
    corpus = _gated_corpus()
    skipped = 0
    for name, pattern in gated.items():
        for text in corpus:
            ours = [(m.span(), m.groups()) for m in pattern.finditer(text)]
            assert ours == [(m.span(), m.groups()) for m in pattern.regex.finditer(text)], (name, text)
            assert (pattern.search(text) is None) == (pattern.regex.search(text) is None), (name, text)
            skipped += not pattern.may_match(text)
    assert skipped > len(corpus)  # the gates do skip text


def test_a_gate_takes_only_lower_case_needles():
    import re

    from core.text import GatedPattern

    with pytest.raises(ValueError):
        GatedPattern(re.compile("Acme"), ("Acme",))
    with pytest.raises(ValueError):
        GatedPattern(re.compile("acme"), ())
    gate = GatedPattern(re.compile(r"\bacme\b", re.IGNORECASE), ("acme",))
    assert gate.search("We love ACME") and gate.findall("no match here") == []
    assert gate.may_match("ＡＣＭＥ")  # not ASCII: the pattern decides


def test_the_safety_cue_finds_the_same_with_its_needles():
    from core.providers.offline_events import _SAFETY
    from core.text import CaselessPattern

    plain = CaselessPattern(_SAFETY.pattern)
    corpus = _gated_corpus() + [
        "She takes 20 mg of lisinopril.",
        "Ivy is on atorvastatin now",
        "EpiPen in the bag",
        "Do not give him ibuprofen.",
        "a seizure last week",
        "prescribed Zoloft",
    ]
    assert [_SAFETY.found_in(t) for t in corpus] == [plain.found_in(t) for t in corpus]
    assert sum(map(_SAFETY.found_in, corpus)) >= 6
