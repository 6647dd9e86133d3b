"""Word lists the offline rules read, one concept to a file: ``<concept>.txt`` beside this module.

A file holds one entry to a line (a word or a phrase, in any script, UTF-8); a line starting with
``#`` is a comment and blank lines are skipped. Entries keep their file order (``ordered``): an
alternation built from a list can depend on it, as can a table where a later entry wins.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


class LexiconError(ValueError):
    """A lexicon file that is missing or malformed; the message names the file and the line."""


@lru_cache(maxsize=None)
def ordered(concept: str) -> tuple[str, ...]:
    """The entries of ``<concept>.txt`` in file order, repeats kept."""
    path = resources.files(__name__) / f"{concept}.txt"
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError) as exc:
        raise LexiconError(f"no lexicon file {concept}.txt in {resources.files(__name__)}") from exc
    return parse(f"{concept}.txt", data)


def parse(name: str, data: bytes) -> tuple[str, ...]:
    """The entries of the lexicon file ``name`` holding ``data``; LexiconError names the line at fault."""
    entries = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise LexiconError(f"{name} line {number}: not UTF-8 text ({exc.reason})") from None
        if not line or line.startswith("#"):
            continue
        # An entry is words joined by single spaces; anything else is a typo the rules would match as written.
        if "#" in line or " ".join(line.split()) != line or not line.isprintable():
            raise LexiconError(
                f"{name} line {number}: {line!r} is not one entry (words joined by single "
                "spaces; a comment takes a line of its own)"
            )
        entries.append(line)
    return tuple(entries)


@lru_cache(maxsize=None)
def words(concept: str) -> frozenset[str]:
    """The entries of ``<concept>.txt`` as a set."""
    return frozenset(ordered(concept))


__all__ = ["LexiconError", "ordered", "parse", "words"]
