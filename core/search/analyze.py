"""Search analysis: the tokens that go into an index and a query.

On top of the base tokenizer (NFKC, case folding, words, Han n-grams) English stop words
are dropped and a light suffix stemmer folds inflections ("painted", "painting",
"paints" → "paint"). Both are switchable so the benchmark can measure them.
"""

from __future__ import annotations

from functools import lru_cache

from core.search.tokenize import tokenize

# Function words that carry no topic. Kept short on purpose: pronouns and question words
# stay out of it where they can matter ("who", "when" are handled by the retrieval planner).
STOP_WORDS = frozenset(
    """a an the and or but if then so of to in on at by for with from as into onto about over under up down out
    is am are was were be been being do does did doing have has had having will would shall should can could may
    might must it its this that these those there here what which who whom whose when where why how i me my
    mine myself we us our ours you your yours he him his she her hers they them their theirs not no nor very
    too just also than such only own same some any all each both few more most other s t don doesn didn isn
    wasn aren weren won wouldn couldn shouldn ve ll re d m o y ok okay oh hey hi yeah yes really""".split()
)

_SUFFIXES = ("ingly", "edly", "ness", "ment", "ings", "ing", "ies", "ied", "ed", "ly", "es", "s")
_KEEP = frozenset("news series species always perhaps various is was has does this thus yes bus gas plus".split())


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A light, deterministic English stemmer (no dictionary); non-Latin words pass through.

    It only has to map inflections of one word to one key ("hike", "hikes", "hiking",
    "hiked" → "hik"); the key need not be a real word.
    """
    if len(word) <= 3 or not word.isascii() or not word.isalpha() or word in _KEEP:
        return word
    base = word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        base = word[:-3] + "y"
    elif word.endswith("sses"):
        base = word[:-2]
    else:
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                if suffix in ("s", "es") and word.endswith(("ss", "us", "is")):
                    break
                base = word[: -len(suffix)]
                if suffix == "es" and not base.endswith(("sh", "ch", "x", "z", "s", "o")):
                    base = word[:-1]  # "likes" → "like"
                if (
                    suffix in ("ing", "ed", "ings", "edly", "ingly")
                    and len(base) >= 3
                    and base[-1] == base[-2]
                    and base[-1] not in "lsz"
                ):
                    base = base[:-1]  # "running" → "run"
                break
    if len(base) > 3 and base.endswith("e") and not base.endswith("ee"):
        base = base[:-1]
    if len(base) > 3 and base.endswith("y") and base[-2] not in "aeiou":
        base = base[:-1] + "i"
    return base


def analyze(text: str, *, stop: bool = True, stemming: bool = True) -> list[str]:
    """Index/query tokens for ``text`` (duplicates kept for term frequency)."""
    tokens = tokenize(text)
    if stop:
        tokens = [token for token in tokens if token not in STOP_WORDS]
    return [stem(token) for token in tokens] if stemming else tokens
