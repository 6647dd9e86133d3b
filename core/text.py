"""Small text helpers shared by the summarizer, the extractor and search."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from core import lexicon

WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
# A line without end punctuation is a sentence too ("Things to do:\n- buy milk\n- call Ana").
# A full stop, "!" or "?" ends a sentence only before a space, a line end or a closing quote:
# "moved to v1.1", "3.50 euros" and "example.com" stay whole. CJK marks end one wherever they stand.
_SENTENCE_RE = re.compile(
    r"(?:[^.!?。！？\n]++|[.!?]+(?=[^\s.!?。！？\"”’)\]]))+(?:[.!?。！？]+[\"”’)\]]*|(?=\n)|$)", re.UNICODE
)
# Titles and abbreviations whose full stop ends no sentence: "an appointment with Dr. Visser".
ABBREVIATIONS = ("Dr", "Mr", "Mrs", "Ms", "Prof", "St", "Jr", "Sr", "Mt", "vs")
ENDS_IN_TITLE = re.compile(rf"(?<![^\s(\"“])(?:{'|'.join(ABBREVIATIONS)})\.\s*$")
TITLE_REACH = max(map(len, ABBREVIATIONS)) + 1  # how far back an ENDS_IN_TITLE match starts (search_at_end)

# English function words: never distinctive, never a title word.
STOPWORDS = lexicon.words("stopwords")


def search_at_end(pattern: re.Pattern[str], text: str, end: int, reach: int) -> re.Match[str] | None:
    """``pattern.search(text[:end])`` for a pattern that ends in ``\\s*$`` and whose match, trailing
    whitespace aside, is at most ``reach`` characters long: only that tail is tried. Searching the
    whole prefix tried every position of it, once per capitalised word of a long message."""
    at = end
    while at > 0 and text[at - 1].isspace():
        at -= 1
    return pattern.search(text, max(0, at - reach), end)


class CaselessPattern:
    """A case-blind pattern asked only whether it occurs.

    ASCII text is lower-cased and matched case-sensitively, about twice as fast for long
    alternations of words (the engine compares literals instead of folding every character);
    other text goes to the case-blind pattern, since a few non-ASCII letters fold onto ASCII ones
    ("K" the Kelvin sign, "ſ"). The pattern's own letters must be lower case for that to agree."""

    def __init__(self, pattern: str, needles: tuple[str, ...] = ()) -> None:
        """``needles``: plain lower-case strings one of which every match contains; ASCII text
        holding none of them is answered without running the pattern (a substring test is some
        fifty times cheaper than an alternation that can start at every word)."""
        if re.search(r"(?<!\\)[A-Z]", pattern):
            raise ValueError(f"a caseless pattern is written in lower case: {pattern[:60]!r}")
        self.pattern = pattern
        self.needles = needles
        self._blind = re.compile(pattern, re.IGNORECASE)
        self._lower = re.compile(pattern)

    def found_in(self, text: str) -> bool:
        if text.isascii():
            lowered = text.lower()
            if self.needles and not any(needle in lowered for needle in self.needles):
                return False
            return self._lower.search(lowered) is not None
        return self._blind.search(text) is not None


class GatedPattern:
    """A compiled pattern behind a substring test: every match of it holds one of ``needles``
    (plain lower-case strings), so ASCII text whose lower-case form holds none is answered at once
    without running the pattern. For long patterns that may start at every word and rarely
    match; the answers are the pattern's own (a test compares them on a corpus)."""

    __slots__ = ("regex", "needles")

    def __init__(self, regex: re.Pattern[str], needles: tuple[str, ...]) -> None:
        if not needles or any(n != n.lower() or not n for n in needles):
            raise ValueError("needles are non-empty lower-case strings")
        self.regex = regex
        self.needles = needles

    def may_match(self, text: str) -> bool:
        if not text.isascii():  # a few non-ASCII letters fold onto ASCII ones: no shortcut
            return True
        lowered = text.lower()
        return any(needle in lowered for needle in self.needles)

    def finditer(self, text: str, *args: int):
        return self.regex.finditer(text, *args) if self.may_match(text) else iter(())

    def search(self, text: str, *args: int):
        return self.regex.search(text, *args) if self.may_match(text) else None

    def match(self, text: str, *args: int):
        return self.regex.match(text, *args) if self.may_match(text) else None

    def findall(self, text: str, *args: int):
        return self.regex.findall(text, *args) if self.may_match(text) else []


def normalize(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def words(text: str) -> list[str]:
    return WORD_RE.findall(text)


FENCED_CODE = re.compile(r"```.*?```", re.DOTALL)
_OPEN_FENCE = re.compile(r"```.*\Z", re.DOTALL)  # a fence never closed runs to the end
_MARKUP = re.compile(r"^[ \t]*(?:[-*+•>]|#{1,6}|\d{1,3}[.)])[ \t]+|\*\*", re.MULTILINE)


def prose(text: str) -> str:
    """What a message says in words: fenced code out, list bullets, headings and bold marks off
    ("**Date detected:** Jan 27" reads "Date detected: Jan 27"; a log pasted in a fence says nothing)."""
    return _MARKUP.sub("", _OPEN_FENCE.sub("", FENCED_CODE.sub("\n", text)))


def sentences(text: str) -> list[str]:
    """Sentences in order, trimmed, empty ones dropped; a title's full stop ("Dr.") ends none."""
    out: list[str] = []
    held = ""
    for match in _SENTENCE_RE.finditer(text):
        piece = held + match.group(0)
        at_line_end = text.startswith("\n", match.end())
        held = piece if not at_line_end and ENDS_IN_TITLE.search(piece) else ""
        if not held and piece.strip():
            out.append(piece.strip())
    if held.strip():
        out.append(held.strip())
    return out


# Numbers people write as words ("six-year-old", "turns seven"), by value.
NUMBER_WORDS = {
    w: n
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
NUMBER_WORDS.update({w: 10 * n for n, w in enumerate("thirty forty fifty sixty seventy eighty ninety".split(), 3)})

_TIME_ZONE = re.compile(
    r"\b(?:Africa|America|Antarctica|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc)"
    r"/[A-Z][A-Za-z_-]+(?:/[A-Z][A-Za-z_-]+)?"
)


def without_time_zones(text: str) -> str:
    """``text`` with time zone names in lower case, same length: "writes times in Europe/Amsterdam"
    mentions no place and no name. Positions stay valid for the caller."""
    return _TIME_ZONE.sub(lambda m: m.group(0).lower(), text) if "/" in text else text


def counted(n: int | str, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, singular for one: "1 node", "3 nodes", "12+ nodes"."""
    one = str(n) == "1"
    return f"{n} {noun if one else (plural or noun + 's')}"


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…"


_NON_WORD = re.compile(r"[^\w]+")


def fingerprint(title: str, summary: str) -> str:
    """Identity of a fact's wording: normalised title and summary (case, width, punctuation
    and spacing folded), hashed. Equal fingerprints are exact duplicates."""

    def norm(text: str) -> str:
        folded = unicodedata.normalize("NFKC", text or "").casefold()
        return " ".join(_NON_WORD.sub(" ", folded).split())

    return hashlib.sha256(f"{norm(title)}\0{norm(summary)}".encode("utf-8")).hexdigest()
