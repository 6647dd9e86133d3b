"""Search tokens: NFKC, case-folded word tokens plus Han bigrams.

Han text has no spaces, so every run of Han characters also yields its overlapping
bigrams (a single character yields itself); word tokens come from Unicode letter and
digit runs. Duplicates are kept: term frequency matters to BM25.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def normalize(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _is_han(ch: str) -> bool:
    return bool(_HAN.fullmatch(ch))


def tokenize(text: str) -> list[str]:
    """Word tokens (non-Han runs) and Han unigram/bigram tokens, in text order."""
    if not text:
        return []
    norm = normalize(text)
    if not _HAN.search(norm):
        return _WORD.findall(norm)  # most text: one pass instead of a Han check per word
    tokens: list[str] = []
    for match in _WORD.finditer(norm):
        word = match.group(0)
        if not _HAN.search(word):
            tokens.append(word)
            continue
        # Split mixed runs: Latin/digit parts stay words, Han parts become n-grams.
        for part in re.split(f"({_HAN.pattern})", word):
            if not part:
                continue
            if _HAN.fullmatch(part):
                if len(part) == 1:
                    tokens.append(part)
                else:
                    tokens.extend(part[i : i + 2] for i in range(len(part) - 1))
            else:
                tokens.append(part)
    return tokens
