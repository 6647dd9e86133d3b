"""The systems a retrieval benchmark ranks with.

* ``Retriever`` is the seam: anything with ``rank(namespace, question, *, question_time,
  limit)`` returning **external ids of messages**, best first (dia_ids for LoCoMo,
  ``"<session_id>:<turn index>"`` for LongMemEval). The benches take a factory for it.
* ``DefaultRetriever`` is Strata's default retrieval. It delegates to
  ``core.services.retrieval.default_retrieval`` when that function exists; until then it
  falls back to ``RawBM25Retriever`` (our own BM25 over the namespace's raw messages).
* ``Bm25Baseline`` is the reference the benches recompute in every run (benchmarks.md):
  ``rank_bm25.BM25Okapi`` with default parameters over documents built from the raw
  dataset JSON, never from our database.
"""

from __future__ import annotations

import importlib
import re
from collections import OrderedDict
from typing import Any, Callable, Iterable, Protocol, Sequence, runtime_checkable

from rank_bm25 import BM25Okapi

from core.bench.metrics import dedupe_keep_order
from core.models import Message, Namespace
from core.search.bm25 import bm25_scores, ranked
from core.search.tokenize import tokenize


@runtime_checkable
class Retriever(Protocol):
    """A system under test: message external ids for a question, best first."""

    def rank(
        self, namespace: str, question: str, *, question_time: str | None = None, limit: int = 50
    ) -> list[str]: ...


RetrieverFactory = Callable[[], Retriever]


def retriever_name(retriever: object) -> str:
    """What the report calls the system: its ``name`` attribute, else its class name."""
    return str(getattr(retriever, "name", None) or type(retriever).__name__)


# --------------------------------------------------------------------------- our own raw BM25


class RawBM25Retriever:
    """BM25 (core.search.bm25, k1 1.2, b 0.75) over every message of a namespace.

    A message's document is ``"<speaker or role>: <content>"`` tokenized by
    core.search.tokenize. The index of a namespace is built on its first query and kept
    (the few most recent namespaces only), so it must be asked after ingestion.
    """

    name = "raw-bm25"

    def __init__(self, max_cached: int = 8) -> None:
        self._max_cached = max(1, max_cached)
        self._cache: OrderedDict[str, tuple[dict[int, list[str]], dict[int, str]]] = OrderedDict()

    def _index(self, namespace: str) -> tuple[dict[int, list[str]], dict[int, str]]:
        if namespace in self._cache:
            self._cache.move_to_end(namespace)
            return self._cache[namespace]

        documents: dict[int, list[str]] = {}
        external: dict[int, str] = {}
        ns = Namespace.get_or_none(Namespace.name == namespace)
        if ns is not None:
            rows = (
                Message.select(Message.id, Message.speaker, Message.role, Message.content, Message.external_id)
                .where(Message.namespace == ns.id)
                .order_by(Message.id)
                .tuples()
            )
            for message_id, speaker, role, content, external_id in rows:
                documents[message_id] = tokenize(f"{speaker or role}: {content}")
                external[message_id] = external_id or f"message:{message_id}"
        self._cache[namespace] = (documents, external)
        while len(self._cache) > self._max_cached:
            self._cache.popitem(last=False)
        return documents, external

    def rank(self, namespace: str, question: str, *, question_time: str | None = None, limit: int = 50) -> list[str]:

        documents, external = self._index(namespace)
        scores = bm25_scores(tokenize(question), documents)
        return dedupe_keep_order(external[message_id] for message_id in ranked(scores))[:limit]


# --------------------------------------------------------------------------- Strata's default retrieval


def _load_default_retrieval() -> Callable[..., Any] | None:
    """``core.services.retrieval.default_retrieval`` if that module and function exist."""
    try:
        module = importlib.import_module("core.services.retrieval")
    except ModuleNotFoundError as exc:
        if exc.name != "core.services.retrieval":
            raise  # the module exists but is broken: say so rather than measure the fallback
        return None
    function = getattr(module, "default_retrieval", None)
    return function if callable(function) else None


def _message_keys(item: Any) -> list[str | int]:
    """The source messages one result item stands for: external ids (str) or message pks (int)."""
    if isinstance(item, (str, int)) and not isinstance(item, bool):
        return [item]
    getter = item.get if isinstance(item, dict) else (lambda key, default=None: getattr(item, key, default))
    external_id = getter("external_id", None)
    if isinstance(external_id, str):
        return [external_id]
    for key in ("source_message_ids", "message_ids"):
        ids = getter(key, None)
        if isinstance(ids, (list, tuple)):
            return list(ids)
    raise TypeError(
        f"default_retrieval returned an item of type {type(item).__name__} the benchmark cannot map to "
        "messages; return external ids, message ids, or items with external_id / source_message_ids"
    )


def message_external_ids(results: Iterable[Any]) -> list[str]:
    """Flatten default_retrieval's results into distinct message external ids, in order.

    Accepted items: an external id (str), a message primary key (int), or an object/dict
    with ``external_id`` (a raw hit) or ``source_message_ids`` / ``message_ids`` (an event or
    graph node, contributing the messages it cites, in order).
    """
    keys: list[str | int] = []
    for item in results:
        keys.extend(_message_keys(item))
    pks = [key for key in keys if isinstance(key, int)]
    names: dict[int, str] = {}
    if pks:
        for pk, external_id in Message.select(Message.id, Message.external_id).where(Message.id.in_(pks)).tuples():
            names[pk] = external_id or f"message:{pk}"
    out = (key if isinstance(key, str) else names.get(key, f"message:{key}") for key in keys)
    return dedupe_keep_order(out)


class DefaultRetriever:
    """Strata's default retrieval, as a benchmark sees it.

    SEAM: when ``core.services.retrieval.default_retrieval(namespace, question,
    question_time=..., limit=...)`` exists it is what gets measured; until then this is the
    raw BM25 fallback, and the report's ``retriever`` field says which one ran.
    """

    def __init__(self) -> None:
        self._default = _load_default_retrieval()
        self._fallback = RawBM25Retriever() if self._default is None else None
        self.name = "default_retrieval" if self._default is not None else "raw-bm25-fallback"

    def rank(self, namespace: str, question: str, *, question_time: str | None = None, limit: int = 50) -> list[str]:
        if self._fallback is not None:
            return self._fallback.rank(namespace, question, question_time=question_time, limit=limit)
        results = self._default(namespace, question, question_time=question_time, limit=limit)
        return message_external_ids(results)


# --------------------------------------------------------------------------- the rank-bm25 baseline

_BASELINE_TOKEN = re.compile(r"[a-z0-9]+")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


def baseline_tokens(text: str) -> list[str]:
    """The baseline's tokens: runs of [a-z0-9] in the lower-cased text."""
    return _BASELINE_TOKEN.findall(text.lower())


def locomo_turns(sample: dict) -> list[tuple[str, str]]:
    """``(dia_id, "<speaker>: <text> [image: <caption>]")`` for every turn, sessions in number order."""
    conv = sample.get("conversation", {})
    sessions = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.match(key)))
    out: list[tuple[str, str]] = []
    for _, key in sessions:
        turns = conv[key]
        if not isinstance(turns, list):
            continue
        for turn in turns:
            text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
            if turn.get("blip_caption") is not None:
                text += f" [image: {turn['blip_caption']}]"
            out.append((turn["dia_id"], text))
    return out


def longmemeval_sessions(item: dict) -> list[tuple[str, str]]:
    """``(session_id, user + assistant text)`` for every haystack session, in haystack order."""
    out: list[tuple[str, str]] = []
    for session_id, turns in zip(item.get("haystack_session_ids", []), item.get("haystack_sessions", [])):
        text = "\n".join(str(turn.get("content", "")) for turn in turns if isinstance(turn, dict))
        out.append((session_id, text))
    return out


class Bm25Baseline:
    """rank_bm25.BM25Okapi (defaults) over one corpus; ties keep corpus order."""

    name = "bm25"

    def __init__(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        if len(ids) != len(texts):
            raise ValueError("ids and texts differ in length")
        self.ids = list(ids)
        corpus = [baseline_tokens(text) for text in texts]
        self._bm25 = None
        if any(corpus):  # BM25Okapi divides by the corpus and its average length
            self._bm25 = BM25Okapi(corpus)

    @classmethod
    def for_locomo(cls, sample: dict) -> "Bm25Baseline":
        """One document per turn of a LoCoMo conversation (one index per conversation)."""
        turns = locomo_turns(sample)
        return cls([dia_id for dia_id, _ in turns], [text for _, text in turns])

    @classmethod
    def for_longmemeval(cls, item: dict) -> "Bm25Baseline":
        """One document per haystack session of a LongMemEval question."""
        sessions = longmemeval_sessions(item)
        return cls([sid for sid, _ in sessions], [text for _, text in sessions])

    def scores(self, question: str) -> list[float]:
        if self._bm25 is None:
            return [0.0] * len(self.ids)
        return [float(score) for score in self._bm25.get_scores(baseline_tokens(question))]

    def rank(self, question: str, limit: int | None = None) -> list[str]:
        """Distinct ids by score descending; equal scores keep corpus order."""
        scores = self.scores(question)
        order = sorted(range(len(self.ids)), key=lambda index: -scores[index])
        ranking = dedupe_keep_order(self.ids[index] for index in order)
        return ranking if limit is None else ranking[:limit]
