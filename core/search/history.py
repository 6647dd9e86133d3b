"""Does a question ask for history? ("what did I use before?", "原来的端口是多少?")

Readers leave superseded items out of what they show unless the question asks for history, and
then show the chain old → new with its dates. The words are one closed list,
``core/lexicon/history_words.txt``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from core import lexicon


@lru_cache(maxsize=1)
def _pattern() -> re.Pattern[str]:
    parts = []
    for entry in sorted(lexicon.ordered("history_words"), key=len, reverse=True):
        body = r"\s+".join(re.escape(word) for word in entry.split())
        # Latin words match whole ("before", not "beforehand"); CJK has no word boundaries.
        parts.append(rf"\b{body}\b" if entry.isascii() else body)
    return re.compile("|".join(parts), re.IGNORECASE)


def requests_history(question: str | None) -> bool:
    """Whether ``question`` asks what held before (a word of the history lexicon occurs)."""
    return bool(question) and _pattern().search(question) is not None


__all__ = ["requests_history"]
