"""The offline rules' word lists: data files, read by one loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import lexicon

LEXICON_DIR = Path(lexicon.__file__).parent


@pytest.mark.parametrize("path", sorted(LEXICON_DIR.glob("*.txt")), ids=lambda p: p.stem)
def test_every_file_loads(path):
    entries = lexicon.ordered(path.stem)
    assert entries and lexicon.words(path.stem) == frozenset(entries)


def test_loaded_once():
    assert lexicon.words("places") is lexicon.words("places")
    assert lexicon.ordered("places") is lexicon.ordered("places")


def test_file_order_and_phrases_are_kept():
    places = lexicon.ordered("places")
    assert places[:2] == ("New York City", "New York") and "Bogotá" in places
    assert "好的" in lexicon.words("fillers_layers") and "got it" in lexicon.words("fillers_layers")


def test_comments_and_blank_lines_are_skipped():
    assert lexicon.parse("x.txt", "# a comment\n\n  one  \ntwo words\n   # indented comment\n".encode()) == (
        "one",
        "two words",
    )


@pytest.mark.parametrize(
    "data, line",
    [
        (b"one\ntwo  words\n", 2),  # a double space
        (b"one\n\ntwo\tthree\n", 3),  # a tab
        (b"C# # the language\n", 1),  # a comment after an entry
        (b"ok\n\xff\xfe\n", 2),  # not UTF-8
    ],
)
def test_a_malformed_file_names_its_line(data, line):
    with pytest.raises(lexicon.LexiconError, match=rf"^x\.txt line {line}: "):
        lexicon.parse("x.txt", data)


def test_a_missing_file_is_named():
    with pytest.raises(lexicon.LexiconError, match="no lexicon file nonexistent.txt"):
        lexicon.ordered("nonexistent")
