"""An in-process index of each namespace's graph node names.

Graph projection asks two questions of every node in a namespace: "is this one of the
names or aliases the proposal uses?" and "is this node mentioned in these events?".
Answering them by reading every node per projection made derivation cost grow with the
size of the graph. This index answers both by lookups: entity keys map to node ids, and a
node's whole-word needles (`` priya raman ``) are found by looking up the word n-grams of
the events' text, which is exactly a whole-word substring test on a padded text.

The index lives with the open database object (a new ``open_store`` starts a new one) and
catches up with writes from other connections by re-reading the nodes whose
``updated_at`` is newer than the newest it has seen (indexed per namespace), and
starts over when the number of nodes differs from what it holds (deletions, or an id
left by a rolled-back write).
"""

from __future__ import annotations

import re
import unicodedata
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable

from peewee import fn

from core.db import Prepared, db
from core.models import CURRENT, GraphNode
from core.search.tokenize import normalize as norm_text

_NON_WORD = re.compile(r"[^\w\u3400-\u9fff]+")
_HAN = re.compile(r"[\u3400-\u9fff]")


@lru_cache(maxsize=65536)
def entity_key(text: str) -> str:
    """The form names are compared in: NFKC, case-folded, whitespace, ``_`` and ``-`` removed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if not ch.isspace() and ch not in "_-")


def padded(text: str) -> str:
    """Normalised text with punctuation folded to single spaces and a space at both ends,
    so a whole-word test is a plain substring test."""
    return f" {_NON_WORD.sub(' ', norm_text(text)).strip()} "


def needle(name: str) -> str | None:
    """What a whole-word search for ``name`` looks for in a ``padded`` text (None: too short)."""
    words = _NON_WORD.sub(" ", norm_text(name)).strip()
    if len(words) < 2:
        return None
    return words if _HAN.search(words) else f" {words} "


@dataclass
class _Node:
    type: str
    status: str
    keys: frozenset[str]
    first_names: frozenset[str]
    needles: tuple[str, ...]


_COUNT = Prepared(lambda ns: GraphNode.select(fn.COUNT(GraphNode.id)).where(GraphNode.namespace == ns).tuples())
_CHANGED = Prepared(
    lambda ns, seen: (
        GraphNode.select(
            GraphNode.id,
            GraphNode.name,
            GraphNode.aliases,
            GraphNode.type,
            GraphNode.status,
            GraphNode.updated_at,
        )
        .where((GraphNode.namespace == ns) & (GraphNode.updated_at > seen))
        .tuples()
    )
)


@dataclass
class NodeNames:
    """Name keys and needles of one namespace's nodes (all statuses; callers filter)."""

    namespace_id: int
    nodes: dict[int, _Node] = field(default_factory=dict)
    by_key: dict[str, set[int]] = field(default_factory=dict)
    by_first_name: dict[str, set[int]] = field(default_factory=dict)
    by_needle: dict[str, set[int]] = field(default_factory=dict)
    han_needles: dict[str, set[int]] = field(default_factory=dict)
    starts: dict[str, set[int]] = field(default_factory=dict)  # first word -> word counts of needles
    seen_updated: str = ""

    def refresh(self) -> None:
        ((count,),) = _COUNT.rows(self.namespace_id)
        if count != len(self.nodes):
            # Deleted nodes (an undone import) or ids left by a rolled-back write: start over.
            self.__init__(self.namespace_id)
        for node_id, name, aliases, node_type, status, updated_at in _CHANGED.rows(
            self.namespace_id, self.seen_updated
        ):
            self.note(node_id, name, aliases or [], node_type, status, updated_at)

    def note(
        self, node_id: int, name: str, aliases: Iterable[str], node_type: str, status: str, updated_at: str
    ) -> None:
        """Record a node as written (the projector calls this for its own writes)."""
        self.drop(node_id)
        names = [name] + [a for a in aliases if isinstance(a, str)]
        keys = frozenset(entity_key(n) for n in names)
        first = (
            frozenset(entity_key(n.split()[0]) for n in names if len(n.split()) > 1)
            if node_type == "person"
            else frozenset()
        )
        needles = tuple(dict.fromkeys(x for x in (needle(n) for n in names) if x))
        self.nodes[node_id] = _Node(node_type, status, keys, first, needles)
        for key in keys:
            self.by_key.setdefault(key, set()).add(node_id)
        for key in first:
            self.by_first_name.setdefault(key, set()).add(node_id)
        for text in needles:
            if text.startswith(" "):
                self.by_needle.setdefault(text, set()).add(node_id)
                words = text.split()
                self.starts.setdefault(words[0], set()).add(len(words))
            else:
                self.han_needles.setdefault(text, set()).add(node_id)
        self.seen_updated = max(self.seen_updated, updated_at)

    def drop(self, node_id: int) -> None:
        old = self.nodes.pop(node_id, None)
        if old is None:
            return
        for index, values in ((self.by_key, old.keys), (self.by_first_name, old.first_names)):
            for value in values:
                index.get(value, set()).discard(node_id)
        for text in old.needles:
            (self.by_needle if text.startswith(" ") else self.han_needles).get(text, set()).discard(node_id)

    def current(self, node_id: int) -> bool:
        node = self.nodes.get(node_id)
        return node is not None and node.status in CURRENT

    def with_keys(self, keys: Iterable[str], node_type: str | None = None, *, first_names: bool = False) -> set[int]:
        """Current nodes (of ``node_type`` when given) with a name or alias key in ``keys``;
        with ``first_names`` also people whose first name is one of them."""
        found: set[int] = set()
        for key in keys:
            found |= self.by_key.get(key, set())
            if first_names:
                found |= self.by_first_name.get(key, set())
        return {i for i in found if self.current(i) and (node_type is None or self.nodes[i].type == node_type)}

    def mentioned_in(self, padded_text: str) -> set[int]:
        """Current nodes whose name or an alias occurs as whole words in ``padded_text``."""
        words = padded_text.split()
        found: set[int] = set()
        for start, word in enumerate(words):
            # Only where some needle starts, and only the lengths such needles have.
            for size in self.starts.get(word, ()):
                hit = self.by_needle.get(f" {' '.join(words[start : start + size])} ")
                if hit:
                    found |= hit
        for text, ids in self.han_needles.items():
            if ids and text in padded_text:
                found |= ids
        return {i for i in found if self.current(i)}


_REGISTRY: "weakref.WeakKeyDictionary[object, dict[int, NodeNames]]" = weakref.WeakKeyDictionary()


def node_names(namespace_id: int) -> NodeNames:
    """The caught-up name index of a namespace in the open database."""
    per_db = _REGISTRY.setdefault(db.obj, {})
    names = per_db.get(namespace_id)
    if names is None:
        names = per_db[namespace_id] = NodeNames(namespace_id)
    names.refresh()
    return names


def cached_node_names(namespace_id: int) -> NodeNames | None:
    """The index if one exists already (for recording writes without a refresh)."""
    return _REGISTRY.get(db.obj, {}).get(namespace_id)
