"""Window hygiene: what kind of thing a memory says, and how well it fits a question.

The context builder (core.services.context) hands a model a few memories under a token budget. A
memory can rank well and still be the wrong thing to hand over: a question someone asked ("what
port does Cedar use?") or an acknowledgement ("ok, thanks") states nothing; a possibility ("I
might move to Vim") is not a current fact; a memory about the sibling entity ("the Maple port is
6389") shares every word but the one that matters. These are the measures the builder's gates read.
All of them are pure functions of text, so the builder, the bench and the tests share them.

- ``content_kind``: statement, question, acknowledgement or conditional; ``UTILITY`` is how much of
  a statement's value each kind carries.
- ``focus_terms``: the identifiers in a question that name one thing among siblings ("Cedar",
  "8247", "db-2.internal"); ``focus_overlap`` is the share of them a memory contains.
- ``Coverage``: the IDF-weighted share of the question's terms a memory contains, over the
  candidate set at hand.
- ``jaccard``: plain token overlap, for spotting a memory that repeats one already chosen.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

from core import lexicon
from core.search.analyze import analyze
from core.search.tokenize import normalize, tokenize

KINDS = ("statement", "question", "acknowledgement", "conditional")
# How much of a statement's worth each kind carries when it is ranked.
UTILITY = {"statement": 1.0, "question": 0.2, "acknowledgement": 0.08, "conditional": 0.15}
MIN_COVERAGE = 0.15  # below this share of the question's weighted terms a memory is off topic
MIN_SCORE = 0.12  # below this (normalised rank score × utility) a memory is not worth its tokens
REDUNDANT = 0.92  # token Jaccard at or above which a memory repeats one already chosen

# A possibility or a plan ("I might switch to Vim", "我打算改用 Obsidian") is never a current fact. The
# offline event rules veto corrections with the same pattern.
CONDITIONAL = re.compile(
    r"\b(?:might|maybe|perhaps|possibly|consider(?:s|ed|ing)?|thinking\s+(?:about|of)|plan(?:s|ning)?\s+to|"
    r"(?:i|we)\s+(?:may|could)|wonder(?:ing)?\s+(?:if|whether)|if\s+i)\b|可能|也许|或许|考虑|打算|想要?改|以后再",
    re.IGNORECASE,
)
_THANKS_FOR = re.compile(r"\W*(?:thanks?\s+(?:you\s+)?)?for\b", re.IGNORECASE)  # "ok, thanks for the port"
_QUESTION_END = re.compile(r"[?？]\s*[\"'”’)\]]*\s*$")
_ZH_QUESTION_END = re.compile(r"(?:吗|呢|么)\s*[。.]?\s*$")
# Identifier-like characters that make a lower-case word a focus term ("db-2", "v1.4", "a_b").
_FOCUS_MARK = re.compile(r"[0-9_.:/@\\-]")
_ASCII_TERM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@\\-]*[A-Za-z0-9]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_SENTENCE_START = re.compile(r"(?:^|[.!?。！？]\s+|\n)\s*$")


@lru_cache(maxsize=None)
def _lead_pattern(concept: str) -> re.Pattern[str]:
    parts = []
    for entry in sorted(lexicon.ordered(concept), key=len, reverse=True):
        body = r"\s+".join(re.escape(word) for word in entry.split())
        parts.append(rf"{body}\b" if entry.isascii() else body)
    return re.compile(r"^\W*(?:" + "|".join(parts) + ")", re.IGNORECASE)


def _ack_pattern() -> re.Pattern[str]:
    return _lead_pattern("acknowledgements")


def _question_pattern() -> re.Pattern[str]:
    return _lead_pattern("question_leads")


def content_kind(text: str) -> str:
    """What ``text`` does: ``acknowledgement`` (it only receipts something), ``question``,
    ``conditional`` (a possibility or a plan) or ``statement``."""
    text = (text or "").strip()
    if not text:
        return "acknowledgement"
    ack = _ack_pattern().match(text)
    # "Thanks, that helps!" is a receipt; "Noted: the launch moved to March 10" restates a fact.
    rest = text[ack.end() :] if ack is not None else ""
    if ack is not None and (len(set(analyze(rest))) <= 1 or _THANKS_FOR.match(rest)):
        return "acknowledgement"
    if _QUESTION_END.search(text) or _ZH_QUESTION_END.search(text) or _question_pattern().match(text):
        return "question"
    if CONDITIONAL.search(text):
        return "conditional"
    return "statement"


def utility(kind: str, query_is_conditional: bool = False) -> float:
    """The kind's utility factor; a conditional asked about conditionally ("might I…") is worth a statement."""
    if kind == "conditional" and query_is_conditional:
        return 1.0
    return UTILITY[kind]


def is_conditional(text: str) -> bool:
    return bool(text) and CONDITIONAL.search(text) is not None


def focus_terms(query: str) -> tuple[str, ...]:
    """The identifiers in ``query`` that pick one thing out of its siblings, lower-cased: ASCII words of
    three or more characters with a digit or one of ``_ . : / @ \\ -``, or with a capital that is not
    only there because the word opens a sentence ("What", "Please"). Generic words are never focus."""
    stop = lexicon.words("focus_stopwords")
    han = bool(_HAN.search(query or ""))
    found: list[str] = []
    for match in _ASCII_TERM.finditer(query or ""):
        term = match.group(0).rstrip(".:/@\\-")
        if len(term) < 3:
            continue
        lower = term.casefold()
        if lower in stop:
            continue
        marked = bool(_FOCUS_MARK.search(term))
        # Chinese has no capitals, so a capitalised Latin word in Chinese text is a name wherever it stands.
        capital = any(c.isupper() for c in term[1:]) or (
            term[0].isupper() and (han or not _SENTENCE_START.search(query[: match.start()]))
        )
        if (marked or capital) and lower not in found:
            found.append(lower)
    return tuple(found)


def focus_overlap(terms: Sequence[str], view: str) -> float:
    """The share of ``terms`` that ``view`` contains (1.0 when there are none)."""
    if not terms:
        return 1.0
    text = normalize(view)
    tokens = set(tokenize(view))
    hits = sum(1 for t in terms if t in tokens or (_FOCUS_MARK.search(t) and t in text))
    return hits / len(terms)


@lru_cache(maxsize=1)
def _boilerplate() -> frozenset[str]:
    return frozenset(analyze(" ".join(lexicon.ordered("recall_boilerplate"))))


def view_terms(text: str) -> frozenset[str]:
    """The terms a memory or a question is compared by: analysed tokens without recall boilerplate."""
    boiler = _boilerplate()
    return frozenset(t for t in analyze(text or "") if t not in boiler)


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    left, right = set(a), set(b)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def _han_char(term: str) -> bool:
    return len(term) == 1 and "\u3400" <= term <= "\u9fff"


@dataclass(frozen=True)
class Coverage:
    """IDF weights over one candidate set; ``of(doc)`` is the weighted share of the question's terms in it."""

    query: frozenset[str]
    weights: Mapping[str, float]

    @classmethod
    def over(cls, query: frozenset[str], documents: Sequence[frozenset[str]]) -> "Coverage":
        n = len(documents)
        weights = {}
        for term in query:
            df = sum(1 for d in documents if term in d)
            weights[term] = (1 + math.log((n + 1) / (df + 1))) * (0.25 if _han_char(term) else 1.0)
        return cls(query, weights)

    def of(self, document: frozenset[str]) -> float:
        total = sum(self.weights.values())
        if total <= 0:
            return 0.0
        return sum(w for t, w in self.weights.items() if t in document) / total


def is_echo(query: str, text: str) -> bool:
    """A memory that says exactly what the question says (the question itself, stored)."""
    return bool(query) and normalize(query).strip(" ?？.!。") == normalize(text).strip(" ?？.!。")


__all__ = [
    "CONDITIONAL",
    "Coverage",
    "KINDS",
    "MIN_COVERAGE",
    "MIN_SCORE",
    "REDUNDANT",
    "UTILITY",
    "content_kind",
    "focus_overlap",
    "focus_terms",
    "is_conditional",
    "is_echo",
    "jaccard",
    "utility",
    "view_terms",
]
