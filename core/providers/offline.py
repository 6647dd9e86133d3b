"""The deterministic offline provider: no network, same input gives the same output."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Sequence

from core import lexicon
from core.providers.base import BlockSummary, Extraction
from core.text import STOPWORDS, clip, normalize, prose, sentences, words

_FILLER = lexicon.words("fillers_summary")
_CUE_RE = re.compile(
    r"\b(decid\w*|plan\w*|will|prefer\w*|switch\w*|moved?|cancel\w*|finish\w*|complet\w*|start\w*|"
    r"meet\w*|deadline|launch\w*|bought|booked|signed|hired|promot\w*|adopt\w*|married|born)\b",
    re.IGNORECASE,
)
_NUMBER_RE = re.compile(r"\d")


def _distinctive_terms(texts: Sequence[str], limit: int) -> list[str]:
    """Frequent content words, with capitalised (name-like) words weighted up."""
    counts: Counter[str] = Counter()
    display: dict[str, str] = {}
    for text in texts:
        for i, word in enumerate(words(text)):
            key = word.casefold()
            if len(key) < 3 or key in STOPWORDS or key.isdigit():
                continue
            bonus = 2 if word[0].isupper() and i > 0 else 1
            counts[key] += bonus
            display.setdefault(key, word)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [display[k] for k, _ in ranked[:limit]]


def _informative(sentence: str) -> int:
    """A rough information score: cue verbs, numbers, names and length."""
    score = 0
    if _CUE_RE.search(sentence):
        score += 2
    if _NUMBER_RE.search(sentence):
        score += 2
    score += sum(1 for w in words(sentence)[1:] if w[0].isupper())
    if len(words(sentence)) >= 6:
        score += 1
    return score


TITLE_CHARS = 80


def _short_sentence(sentence: str, limit: int = TITLE_CHARS) -> str:
    """``sentence`` as a title: whole when short, else cut at the last clause or word boundary before
    ``limit`` (an ellipsis marks the cut)."""
    text = " ".join(sentence.split()).strip()
    lead, colon, rest = text.partition(": ")
    if colon and len(lead) <= len(text) // 2 and len(rest.split()) >= 4:
        text = rest[:1].upper() + rest[1:]  # "Quick context so you can help me: I'm Maya …": what it says
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    for mark in (", ", "; ", " – ", " — ", ": "):
        cut = head.rfind(mark)
        if cut >= limit // 2:
            return head[:cut].rstrip(" ,;:–—") + "…"
    cut = head.rfind(" ")
    return (head[:cut] if cut > 0 else head).rstrip(" ,;:") + "…"


class OfflineProvider:
    """Rule-based derivation that only uses the block's own text."""

    name = "offline"
    reads_context_lazily = True  # the timeline is consulted only for a statement that says something changed
    model_backed = False  # its import decisions come from rules, not a model's answer
    model: str | None = None

    def summarize_block(self, messages: Sequence[dict[str, Any]]) -> BlockSummary:
        texts = [m["text"] for m in messages if m.get("role") != "system" and m.get("text")]
        labelled = [
            (m.get("speaker") or m.get("role", "")).strip() + ": " + m["text"]
            for m in messages
            if m.get("role") != "system" and m.get("text")
        ]
        terms = _distinctive_terms(texts, 5)
        all_sentences = [s for text in texts for s in sentences(prose(text))]
        substantive = [s for s in all_sentences if normalize(s).strip(".!?。！？ ") not in _FILLER]
        ranked = sorted(range(len(substantive)), key=lambda i: (-_informative(substantive[i]), i))[:6]
        keypoints = [clip(substantive[i], 240) for i in sorted(ranked) if _informative(substantive[i]) > 0]
        # The title is a short sentence a person can read at a glance: the block's most telling statement.
        statements = [substantive[i] for i in ranked if not substantive[i].rstrip().endswith(("?", "？"))]
        telling = [x for x in statements if len(words(x)) >= 5]
        lead = (telling or statements or substantive or [""])[0]
        title = _short_sentence(lead) if lead else (", ".join(terms[:3]) or clip(texts[0] if texts else "", 60))
        title = title or "conversation"
        summary = clip(" ".join(substantive[:2]) or (labelled[0] if labelled else title), 400)
        return BlockSummary.validated(
            {
                "title": clip(title, 120),
                "tags": [t.casefold() for t in terms[:5]],
                "summary": summary,
                "keypoints": keypoints,
                "should_extract": bool(substantive),
            }
        )

    def extract_events(self, context: dict[str, Any]) -> Extraction:
        # start-up time, here and in the methods below: each rule module builds its tables on import
        # (offline_events ~16 ms), so a method loads only its own
        from core.providers.offline_events import extract_events_offline

        return Extraction.validated(extract_events_offline(context))

    def project_graph(self, context: dict[str, Any]) -> dict[str, Any]:
        from core.providers.offline_graph import project_graph_offline

        return project_graph_offline(context)

    def decide_external_memory(self, context: dict[str, Any]) -> dict[str, Any]:
        from core.providers.offline_import import decide_offline

        return decide_offline(context)

    def recover_external_memory(self, context: dict[str, Any]) -> dict[str, Any]:
        """Without a model, recovery only finds a JSON export embedded in other text (prose
        around it, several drafts, a stray character after it)."""
        from core.providers.offline_recover import recover_offline

        return recover_offline(context)
