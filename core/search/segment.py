"""Search segments: the SQL postings of one namespace as numpy arrays, kept current.

The SQL tables (MessageTerm, EventTerm, CorpusStat) stay the source of truth; a segment is a
cache that can always be rebuilt from them. A ``View`` is

* a large **static part**: every posting up to a watermark (the highest posting row id it
  holds) as CSR arrays — per term a run of (document, tf) sorted by document;
* a small **delta part**: the postings written since, read from SQL by row id (a primary key
  range, so it costs nothing when nothing was written) and kept in the same CSR form;
* a document table (id, length, thread, position) for both parts.

When the delta grows past a threshold it is merged into the static part in memory (numpy,
no SQL scan) and, for a SQLite store, saved beside the database file (``<db>.search/``) so
the next process opens it without reading the postings again. A removal from the index is
logged (``SearchRemoval``): the view drops exactly those documents in memory and reads again
from the lowest ids the removals freed. Statistics that still do not match what the view holds
(a deletion that bypassed the log) make the view rebuild from SQL.

Scoring is vectorised over the postings of the query terms (``score_all``) or pruned with
MaxScore (``top_k``): terms whose upper bounds together cannot reach the k-th best score are
only looked up for candidates, never scanned. Both give exactly the scores of the reference
(``core.search.index.bm25_reference``): same idf, same float expression, terms summed in the
same (sorted) order.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from core.db import db, is_sqlite, read_snapshot
from core.files import make_dir, modes_beside, open_new
from core.search.analyze import analyze

MERGE_MIN = 50_000  # delta postings before a merge is considered
MERGE_SHARE = 0.05  # … and at least this share of the static part
FETCH = 100_000  # rows per fetch while reading postings
DENSE_MIN = 50_000  # postings from which a term's lookups go through a dense tf array
DENSE_TERMS = 64  # dense arrays kept per part: at most ~64 MB at a million documents
BULK_EXTREMES = 1_000_000  # postings from which a part finds every term's bounds at once
FORMAT = 3  # 2: the message attributes default retrieval boosts on; 3: external-id flag


# ----------------------------------------------------------------------------- CSR postings


@dataclass
class Part:
    """Postings in CSR form: term ``t`` owns ``docs[offsets[t]:offsets[t+1]]`` (sorted)."""

    terms: dict[str, int]
    offsets: np.ndarray  # int64, len(terms) + 1
    docs: np.ndarray  # int32 index into the view's document table
    tf: np.ndarray  # the narrowest unsigned type that holds its largest tf (see ``narrow_tf``)

    @classmethod
    def empty(cls) -> "Part":
        return cls({}, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8))

    @classmethod
    def from_rows(cls, term_ids: np.ndarray, docs: np.ndarray, tf: np.ndarray, vocabulary: list[str]) -> "Part":
        """Build from parallel arrays (any order); ``term_ids`` index ``vocabulary``."""
        counts = np.bincount(term_ids, minlength=len(vocabulary))
        if len(docs) > 1 and bool((docs[1:] >= docs[:-1]).all()):
            return cls.packed(counts, *_placed_by_term(term_ids, docs, narrow_tf(tf), counts), vocabulary)
        # The (term, doc) key built in place and dropped before the gathers: at a million messages
        # (~20M postings) each transient copy of a posting column is 80-160 MB of the build's peak.
        key = term_ids.astype(np.int64)
        key <<= 32
        key |= docs  # (term, doc) pairs are distinct
        order = np.argsort(key)
        del key
        return cls.packed(
            counts, np.take(docs, order).astype(np.int32, copy=False), narrow_tf(np.take(tf, order)), vocabulary
        )

    @classmethod
    def packed(cls, counts: np.ndarray, docs: np.ndarray, tf: np.ndarray, vocabulary: list[str]) -> "Part":
        """From postings already in (term, doc) order, ``counts[t]`` of them for ``vocabulary[t]``;
        terms without postings are left out."""
        used = np.flatnonzero(counts)
        offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(counts[used], dtype=np.int64)])
        return cls({vocabulary[t]: i for i, t in enumerate(used.tolist())}, offsets, docs, tf)

    def vocabulary(self) -> list[str]:
        """The terms by their index in this part."""
        out = [""] * len(self.terms)
        for term, t in self.terms.items():
            out[t] = term
        return out

    @property
    def size(self) -> int:
        return int(len(self.docs))

    def slice(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        t = self.terms.get(term)
        if t is None:
            return _EMPTY_I, _EMPTY_I
        lo, hi = int(self.offsets[t]), int(self.offsets[t + 1])
        return self.docs[lo:hi], self.tf[lo:hi]

    def extremes(self, term: str, doc_len: np.ndarray) -> tuple[int, int]:
        """(largest tf, shortest document length) among the term's postings, remembered.

        A large part works them out for every term at once on first use (two ``reduceat``
        passes, ~0.2 s at a million messages): per term, a common word's first query paid
        a gather over all its postings, which made the slowest queries of a cold process."""
        every = self.__dict__.get("_all_extremes")
        if every is None and self.size >= BULK_EXTREMES:
            starts = self.offsets[:-1]
            every = self.__dict__["_all_extremes"] = (
                np.maximum.reduceat(self.tf, starts),
                np.minimum.reduceat(doc_len[self.docs], starts),
            )
        if every is not None:
            t = self.terms.get(term)
            return (int(every[0][t]), int(every[1][t])) if t is not None else (0, 0)
        cache = self.__dict__.setdefault("_extremes", {})
        found = cache.get(term)
        if found is None:
            docs, tf = self.slice(term)
            found = cache[term] = (int(tf.max()), int(doc_len[docs].min())) if len(docs) else (0, 0)
        return found

    def dense_tf(self, term: str, build: bool = True) -> np.ndarray | None:
        """The term's tf by document index (0 where it is absent), for a term with at least
        ``DENSE_MIN`` postings; None for the others, and (``build=False``) for one not remembered.
        The last ``DENSE_TERMS`` are remembered.

        Looking a common term up for many candidates is then one gather instead of a binary
        search per candidate (at a million messages the difference between 1 and 10 ms)."""
        cache, lock = self.__dict__.setdefault("_dense", ({}, threading.Lock()))
        with lock:
            found = cache.pop(term, None)
            if found is not None:
                cache[term] = found  # newest last
                return found
        if not build:
            return None
        docs, tf = self.slice(term)
        if len(docs) < DENSE_MIN:
            return None
        top = int(tf.max())
        dense = np.zeros(int(docs[-1]) + 1, np.uint8 if top < 256 else np.uint16 if top < 65536 else np.int32)
        dense[docs] = tf
        with lock:
            cache[term] = dense
            while len(cache) > DENSE_TERMS:
                cache.pop(next(iter(cache)))
        return dense

    def followed_by(self, later: "Part") -> "Part":
        """This part and ``later`` as one, when every document of ``later`` comes after every
        document of this part (appended documents): each term's run is its run here, then its run
        there, so the postings are placed, not sorted. The same part as ``from_rows`` over both
        (terms numbered here first, then ``later``'s new ones in its order); appending a few
        documents to a delta of 200k postings no longer sorts the delta again.
        """
        if not later.size:
            return self
        if not self.size:
            return later
        if int(later.docs.min()) <= int(self.docs.max()):
            raise ValueError("Part.followed_by: the later part's documents must all come after this part's")
        terms = dict(self.terms)
        theirs = later.vocabulary()
        for term in theirs:
            terms.setdefault(term, len(terms))
        own = len(self.terms)
        theirs_at = np.fromiter((terms[t] for t in theirs), np.int64, len(theirs))
        mine = np.zeros(len(terms), np.int64)
        mine[:own] = np.diff(self.offsets)
        counts = mine.copy()
        later_counts = np.diff(later.offsets)
        counts[theirs_at] += later_counts
        offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(counts, dtype=np.int64)])
        docs = np.empty(self.size + later.size, np.int32)
        tf = np.empty(self.size + later.size, np.result_type(self.tf, later.tf))
        # This part's runs keep their order and move right by what ``later`` adds to the terms before
        # them: runs that move alike are copied as one slice (as many slices as terms ``later``
        # shares with this part). A place per posting cost three int64 columns, 460 MB at 1M.
        shift = offsets[:own] - self.offsets[:-1]
        bounds = [0, *(np.flatnonzero(np.diff(shift)) + 1).tolist(), own]
        for first, last in zip(bounds, bounds[1:]):
            lo, hi, by = int(self.offsets[first]), int(self.offsets[last]), int(shift[first])
            docs[lo + by : hi + by] = self.docs[lo:hi]
            tf[lo + by : hi + by] = self.tf[lo:hi]
        # ``later``'s postings each go after this part's run of the same term.
        there = np.arange(later.size, dtype=np.int64) + np.repeat(
            offsets[theirs_at] + mine[theirs_at] - later.offsets[:-1], later_counts
        )
        docs[there], tf[there] = later.docs, later.tf
        return Part(terms, offsets, docs, tf)


_EMPTY_I = np.zeros(0, np.int32)


def narrow_tf(tf: np.ndarray) -> np.ndarray:
    """``tf`` in the narrowest unsigned type that holds it: a term rarely occurs 256 times in one
    message or event, so a byte per posting instead of four (at a million messages the two
    segments' tf columns were 140 MB, held twice while a merge builds the next)."""
    top = int(tf.max()) if len(tf) else 0
    kind = np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.uint32
    return tf.astype(kind, copy=False)


PLACE_CHUNK = 1 << 20  # postings per step of ``_placed_by_term``


def _placed_by_term(
    term_ids: np.ndarray, docs: np.ndarray, tf: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(docs, tf) grouped by term, keeping their order within a term: (term, doc) order when
    ``docs`` never decrease, as postings read by row id from SQL do. Each posting goes straight to
    its place, a chunk at a time, so the build holds no key or order over every posting (two
    int64 columns, 320 MB at a million messages)."""
    fill = np.concatenate([np.zeros(1, np.int64), np.cumsum(counts, dtype=np.int64)])[:-1]
    out_docs = np.empty(len(docs), np.int32)
    out_tf = np.empty(len(tf), tf.dtype)
    for lo in range(0, len(term_ids), PLACE_CHUNK):
        terms = term_ids[lo : lo + PLACE_CHUNK]
        order = np.argsort(terms, kind="stable")
        grouped = terms[order]
        starts = np.flatnonzero(np.concatenate([[True], grouped[1:] != grouped[:-1]]))
        runs = np.diff(np.append(starts, len(grouped)))
        # a posting's place: where its term's postings continue, plus its rank among them in this chunk
        place = fill[grouped] + (np.arange(len(grouped)) - np.repeat(starts, runs))
        out_docs[place] = docs[lo : lo + PLACE_CHUNK][order]
        out_tf[place] = tf[lo : lo + PLACE_CHUNK][order]
        fill[grouped[starts]] += runs
    return out_docs, out_tf


# ----------------------------------------------------------------------------- the view


@dataclass
class View:
    kind: str
    namespace_id: int
    identity: str  # the namespace's created_at: a recreated namespace never reuses a view
    doc_ids: np.ndarray  # int64, the message/event id of each document
    doc_len: np.ndarray  # int32 (0 for a message without postings)
    doc_thread: np.ndarray  # int32 (messages; 0 for events)
    doc_pos: np.ndarray  # int32 position in its thread (messages; 0 for events)
    # What default retrieval's boosts ask of a candidate, so it never reads 400 random rows:
    doc_speaker: np.ndarray  # int32 index into ``speaker_names`` (-1: no speaker; events)
    doc_user: np.ndarray  # int8 1 for a user message
    doc_time: np.ndarray  # int8 message.has_time: 1, 0, or -1 when a legacy row never got it
    doc_external: np.ndarray  # int8 1 when the message has an external id (results read only those rows)
    static: Part
    delta: Part = field(default_factory=Part.empty)
    watermark: int = 0  # highest posting row id in static + delta
    static_watermark: int = 0  # highest posting row id in static
    static_docs: int = 0  # documents of the doc table covered by ``static``
    message_watermark: int = 0  # highest message id in the doc table (messages)
    total_length: int = 0  # sum of the lengths read from the postings
    stat_docs: int = 0  # CorpusStat as of the last refresh (what scoring uses for N and avgdl)
    stat_total: int = 0
    speakers: dict[str, str] = field(default_factory=dict)  # speaker token -> speaker (messages)
    speaker_names: list[str] = field(default_factory=list)  # doc_speaker code -> speaker
    removal_watermark: int = 0  # highest SearchRemoval id applied
    compacted: bool = False  # documents were dropped since the view was last saved
    _breaks: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    # Each doc column is a prefix of a buffer with room, so a captured turn appends in place of
    # copying a million rows per column (readers keep their shorter prefix: rows are never rewritten).
    _buffers: dict[str, np.ndarray] = field(default_factory=dict)
    # Each lookup is one attribute, replaced whole, so a reader never sees halves of two states.
    _id_index: "_SortedLookup | None" = None  # sorted doc ids -> their documents
    _key_index: "_SortedLookup | None" = None  # sorted (thread, position) keys -> their documents

    @property
    def size(self) -> int:
        return int(len(self.doc_ids))

    def parts(self) -> tuple[Part, ...]:
        return (self.static, self.delta) if self.delta.size else (self.static,)

    def index_of(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Document indexes of ids (-1 where unknown)."""
        ids = np.asarray(ids, dtype=np.int64)
        if self._id_index is None:
            self._id_index = _SortedLookup.of(self.doc_ids)  # the sorted copy kept: ~2 ms a call at 1M
        return self._id_index.find(ids)

    def _thread_keys(self) -> "_SortedLookup":
        """Every document's (thread, position) as one int64 key, sorted, and the document of each."""
        if self._key_index is None:
            self._key_index = _SortedLookup.of(_position_keys(self.doc_thread, self.doc_pos))
        return self._key_index

    def _find_keys(self, wanted: np.ndarray) -> np.ndarray:
        """The document holding each wanted key (-1 for none)."""
        return self._thread_keys().find(wanted)

    def neighbours_of(self, offset: int, docs: np.ndarray) -> np.ndarray:
        """For each of ``docs``, the message ``offset`` positions away in its thread (-1: none)."""
        docs = np.asarray(docs, dtype=np.int64)
        # Mostly the row that far along (a thread's turns sit together): checked by two reads, where
        # a search of the million sorted keys costs a cache miss per level. The rest are searched.
        beside = docs + offset
        inside = (beside >= 0) & (beside < self.size)
        beside[~inside] = 0
        found = np.where(
            inside
            & (self.doc_thread[beside] == self.doc_thread[docs])
            & (self.doc_pos[beside] == self.doc_pos[docs] + offset),
            beside,
            -1,
        )
        rest = np.flatnonzero(found < 0)
        if len(rest):
            others = docs[rest]
            found[rest] = self._find_keys(
                _shifted(_position_keys(self.doc_thread[others], self.doc_pos[others]), offset)
            )
        return found

    def _adjacent(self, rows: np.ndarray, offsets: tuple[int, ...]) -> np.ndarray:
        """Whether, for every offset, each row's neighbour that far away is the row that far away."""
        ok = np.ones(len(rows), bool)
        for offset in offsets:
            beside = rows + offset
            inside = (beside >= 0) & (beside < self.size)
            here, there = rows[inside], beside[inside]
            same = np.zeros(len(rows), bool)
            # Keys are unique, so the same thread one position along is that neighbour.
            same[inside] = (self.doc_thread[there] == self.doc_thread[here]) & (
                self.doc_pos[there] == self.doc_pos[here] + offset
            )
            ok &= same
        return ok

    def _sources(self, rows: np.ndarray, offsets: tuple[int, ...]) -> np.ndarray:
        """Each row's neighbour per offset (one row per offset), -1 for none."""
        return (
            np.stack([self.neighbours_of(offset, rows) for offset in offsets])
            if offsets
            else np.zeros((0, len(rows)), np.int64)
        )

    def neighbour_breaks(self, offsets: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """(documents with a neighbour at one of ``offsets`` that is not that many rows away, their
        neighbours: one row per offset, -1 for none, which reads the trailing 0.0 of a padded score
        array). A thread's turns mostly sit in consecutive rows, so a pass over neighbours can treat
        every row as its thread's and patch these few."""
        cached = self._breaks.get(offsets)
        if cached is None:
            breaks = np.flatnonzero(~self._adjacent(np.arange(self.size, dtype=np.int64), offsets))
            cached = self._breaks[offsets] = (breaks, self._sources(breaks, offsets))
        return cached

    def append_column(self, name: str, extra: np.ndarray) -> None:
        """Set column ``name`` to itself followed by ``extra`` (amortised: see ``_buffers``)."""
        current = getattr(self, name)
        size, n = len(current), len(extra)
        buffer = self._buffers.get(name)
        if (
            buffer is None
            or current.base is not buffer
            or len(buffer) < size + n
            or current.ctypes.data != buffer.ctypes.data
            or buffer.dtype != current.dtype
        ):
            buffer = np.empty(size + n + (size + n) // 8 + 1024, current.dtype)
            buffer[:size] = current
            self._buffers[name] = buffer
        buffer[size : size + n] = extra
        setattr(self, name, buffer[: size + n])

    def grown(self, base: int) -> None:
        """Bring the lookups up to date after documents ``base``… were appended to the doc arrays.

        Rebuilding them costs sorts and passes over every document, paid by the first query after
        every captured turn; instead the new documents' keys are merged in and only the breaks of
        the rows whose neighbours changed are looked at again."""
        new = np.arange(base, self.size, dtype=np.int64)
        if self._id_index is not None:
            self._id_index = self._id_index.with_added(self.doc_ids[base:], new)
        if self._key_index is None:
            self._breaks.clear()
            return
        added = _position_keys(self.doc_thread[base:], self.doc_pos[base:])
        order = np.argsort(added, kind="stable")
        added, docs = added[order], new[order]
        if (self._find_keys(added) >= 0).any() or (np.diff(added) == 0).any():
            # a position taken twice: start over
            self._key_index = None
            self._breaks.clear()
            return
        self._key_index = self._key_index.with_added(added, docs)
        for offsets, (breaks, sources) in list(self._breaks.items()):
            # The new rows, the old last rows ("that many rows away" may now be a row, not past the
            # end) and the old rows whose neighbour at some offset is now a new document.
            reach = max((abs(offset) for offset in offsets), default=0)
            changed = [new, np.arange(max(0, base - reach), base)]
            for offset in offsets:
                pointing = self._find_keys(_shifted(added, -offset))
                changed.append(pointing[pointing >= 0])
            touched = np.unique(np.concatenate(changed))  # a few rows; the breaks are ~10% of a million
            cut = int(np.searchsorted(breaks, touched[0]))
            if len(breaks) - cut <= TAIL_BREAKS:
                # The usual capture: only the last breaks change. One copy of the untouched head and
                # a small sort of the tail, where a delete and an insert copied every break twice.
                tail, tail_sources = breaks[cut:], sources[:, cut:]
                stay = ~np.isin(tail, touched)
                extra = touched[~self._adjacent(touched, offsets)]
                rows = np.concatenate((tail[stay], extra))
                order = np.argsort(rows, kind="stable")
                found = np.concatenate((tail_sources[:, stay], self._sources(extra, offsets)), axis=1)[:, order]
                self._breaks[offsets] = (
                    np.concatenate((breaks[:cut], rows[order])),
                    np.concatenate((sources[:, :cut], found), axis=1),
                )
                continue
            # Found from the few touched rows, not by a pass over every break.
            at = np.minimum(np.searchsorted(breaks, touched), max(len(breaks) - 1, 0))
            gone = at[breaks[at] == touched] if len(breaks) else at[:0]
            kept, kept_sources = np.delete(breaks, gone), np.delete(sources, gone, axis=1)
            extra = touched[~self._adjacent(touched, offsets)]
            place = np.searchsorted(kept, extra)  # both sorted and disjoint
            self._breaks[offsets] = (
                np.insert(kept, place, extra),
                np.insert(kept_sources, place, self._sources(extra, offsets), axis=1),
            )


NEW_KEYS_MIN = 4_096  # keys a lookup holds apart from its base before they are merged into it
TAIL_BREAKS = 256  # breaks after the first row a capture touched, up to which only that tail is redone


@dataclass(frozen=True)
class _SortedLookup:
    """Sorted keys and the value beside each: a large base, and the few added since kept apart
    until they pass a share of it. Merging copies the base (16 MB at a million documents), which
    every captured message paid before the next search; now one in many thousands does."""

    keys: np.ndarray
    values: np.ndarray
    new_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    new_values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @classmethod
    def of(cls, keys: np.ndarray) -> "_SortedLookup":
        """Keys (distinct) by their positions in ``keys``."""
        order = np.argsort(keys, kind="stable")
        return cls(keys[order], order)

    def find(self, wanted: np.ndarray) -> np.ndarray:
        """The value beside each wanted key (-1 where the key is absent)."""
        wanted = np.asarray(wanted, np.int64)
        found = _find_sorted(self.keys, self.values, wanted)
        if len(self.new_keys):
            missing = np.flatnonzero(found < 0)
            if len(missing):
                found[missing] = _find_sorted(self.new_keys, self.new_values, wanted[missing])
        return found

    def with_added(self, keys: np.ndarray, values: np.ndarray) -> "_SortedLookup":
        """A lookup that also holds ``keys`` (none of them held yet) beside ``values``."""
        keys = np.concatenate([self.new_keys, np.asarray(keys, np.int64)])
        values = np.concatenate([self.new_values, np.asarray(values, np.int64)])
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
        if len(keys) <= max(NEW_KEYS_MIN, len(self.keys) >> 6):
            return _SortedLookup(self.keys, self.values, keys, values)
        at = np.searchsorted(self.keys, keys)
        return _SortedLookup(np.insert(self.keys, at, keys), np.insert(self.values, at, values))


def _find_sorted(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The value beside each wanted key in ``keys`` (sorted; -1 where the key is absent)."""
    wanted = np.asarray(wanted, dtype=np.int64)
    if not len(keys):
        return np.full(len(wanted), -1, np.int64)
    where = np.searchsorted(keys, wanted)
    where[where >= len(keys)] = 0
    return np.where(keys[where] == wanted, values[where], -1)


def _position_keys(thread: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """(thread, position) as one int64 that sorts like the pair (positions are under 2**32)."""
    return (thread.astype(np.int64) << 32) | pos.astype(np.int64)


def _shifted(keys: np.ndarray, offset: int) -> np.ndarray:
    """The key ``offset`` positions along in the same thread (-1, which no key is, off either end)."""
    pos = (keys & 0xFFFFFFFF) + offset
    return np.where((pos >= 0) & (pos <= 0xFFFFFFFF), keys + offset, -1)


# ----------------------------------------------------------------------------- reading SQL


def rows_by_ids(sql: str, ids: Sequence[int], params: Sequence = ()) -> list[tuple]:
    """Run ``sql`` whose ``{ids}`` is replaced by a parameter list of ``ids`` (plain SQL: building
    a long IN list through the query builder cost more than the query on the search hot paths)."""
    ids = list(ids)
    if not ids:
        return []
    markers = ", ".join([db.obj.param] * len(ids))
    return db.execute_sql(sql.replace("{ids}", markers), [*ids, *params]).fetchall()


def _table(kind: str) -> tuple[str, str]:
    return ("messageterm", "message_id") if kind == "message" else ("eventterm", "event_id")


def _stats(kind: str, namespace_id: int) -> tuple[int, int, int, int, int]:
    """(docs, total length, highest posting row id, highest message id, highest removal id) in one
    round trip."""
    table, _ = _table(kind)
    marker = db.obj.param
    message_max = "(SELECT MAX(id) FROM message)" if kind == "message" else "0"
    row = db.execute_sql(
        f"SELECT (SELECT docs FROM corpusstat WHERE namespace = {marker} AND kind = {marker}), "
        f"(SELECT total_length FROM corpusstat WHERE namespace = {marker} AND kind = {marker}), "
        f"(SELECT MAX(id) FROM {table}), {message_max}, (SELECT MAX(id) FROM searchremoval)",
        (namespace_id, kind, namespace_id, kind),
    ).fetchone()
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0), int(row[3] or 0), int(row[4] or 0)


class _Misplaced(Exception):
    """A posting whose document is not among the messages read in the same snapshot."""


def _minor_share(kind: str, namespace_id: int, stat: str, upto: int) -> bool:
    """True when the namespace is well under half of a table: its corpus statistic ``stat``
    (``total_length``, an upper bound of its posting rows, or ``docs``, its messages) against
    ``upto``, the table's highest row id."""
    row = db.execute_sql(
        f"SELECT {stat} FROM corpusstat WHERE namespace = {db.obj.param} AND kind = {db.obj.param}",
        (namespace_id, kind),
    ).fetchone()
    return row is not None and int(row[0] or 0) * 2 < upto


def _concat(parts: list, dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _read_postings(
    kind: str, namespace_id: int, after: int, upto: int, place=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str], int]:
    """(doc ids, tf, lengths, term ids, vocabulary, upto) of the posting rows with ids in (after, upto].

    A row id range (``namespace + 0`` keeps the namespace index out of the plan), read in chunks. With
    ``place(doc ids, lengths) -> document indexes`` each chunk's documents are placed as they
    arrive and only their indexes are kept (half the memory of ids and lengths at a million messages).
    """
    table, doc = _table(kind)
    marker = db.obj.param
    # A whole namespace that is a small part of the table (one of many, as in a benchmark with a
    # namespace per question) is read through its index; scanning the id range would read
    # every other namespace's rows too. The rows and their order are the same either way.
    by_namespace = after == 0 and _minor_share(kind, namespace_id, "total_length", upto)
    cursor = db.execute_sql(
        f"SELECT {doc}, term, tf, length FROM {table} WHERE id > {marker} AND id <= {marker} "
        f"AND namespace{'' if by_namespace else ' + 0'} = {marker} ORDER BY id",
        (after, upto, namespace_id),
    )
    vocabulary: dict[str, int] = {}
    docs, tfs, lengths, terms = [], [], [], []
    while True:
        rows = cursor.fetchmany(FETCH)
        if not rows:
            break
        d, t, f, n = zip(*rows)
        if place is None:
            docs.append(np.fromiter(d, np.int64, len(d)))
            lengths.append(np.fromiter(n, np.int32, len(n)))
        else:
            docs.append(place(np.fromiter(d, np.int64, len(d)), np.fromiter(n, np.int32, len(n))))
        tfs.append(narrow_tf(np.fromiter(f, np.int32, len(f))))  # a byte each while the rest is read
        for term in dict.fromkeys(t):
            if term not in vocabulary:
                vocabulary[term] = len(vocabulary)
        terms.append(np.array([vocabulary[x] for x in t], np.int32))
    names = [""] * len(vocabulary)
    for term, i in vocabulary.items():
        names[i] = term
    return (
        _concat(docs, np.int64),
        _concat(tfs, np.int32),
        _concat(lengths, np.int32),
        _concat(terms, np.int32),
        names,
        upto,
    )


@dataclass
class _Messages:
    """Messages read from SQL in id order: their document-table columns (by ``_ARRAYS`` name,
    all but ``doc_len``) and their speakers in the order of their first message."""

    columns: dict[str, np.ndarray]
    names: list[str]

    @property
    def ids(self) -> np.ndarray:
        return self.columns["doc_ids"]


def _read_messages(namespace_id: int, after: int, codes: dict[str, int]) -> _Messages:
    """The namespace's messages with id > after; a speaker is coded by its index in ``codes``
    (name -> code, extended with new names in order)."""
    marker = db.obj.param
    by_namespace = after == 0 and _minor_share(
        "message", namespace_id, "docs", db.execute_sql("SELECT MAX(id) FROM message").fetchone()[0] or 0
    )
    cursor = db.execute_sql(
        f"SELECT id, thread_id, position, speaker, role, has_time, external_id IS NOT NULL FROM message "
        f"WHERE id > {marker} "
        f"AND namespace_id{'' if by_namespace else ' + 0'} = {marker} ORDER BY id",
        (after, namespace_id),
    )
    ids, threads, positions, coded, users, times, externals, speakers = [], [], [], [], [], [], [], {}
    while True:
        rows = cursor.fetchmany(FETCH)
        if not rows:
            break
        i, t, p, s, r, h, e = zip(*rows)
        ids.append(np.fromiter(i, np.int64, len(i)))
        threads.append(np.fromiter(t, np.int32, len(t)))
        positions.append(np.fromiter(p, np.int32, len(p)))
        speakers.update(dict.fromkeys(s))
        coded.append(np.fromiter((codes.setdefault(x, len(codes)) if x else -1 for x in s), np.int32, len(s)))
        users.append(np.fromiter((x == "user" for x in r), np.int8, len(r)))
        times.append(np.fromiter((-1 if x is None else bool(x) for x in h), np.int8, len(h)))
        externals.append(np.fromiter((bool(x) for x in e), np.int8, len(e)))
    # Speakers in the order of their first message: a token shared by two speakers maps to the earlier.
    return _Messages(
        {
            "doc_ids": _concat(ids, np.int64),
            "doc_thread": _concat(threads, np.int32),
            "doc_pos": _concat(positions, np.int32),
            "doc_speaker": _concat(coded, np.int32),
            "doc_user": _concat(users, np.int8),
            "doc_time": _concat(times, np.int8),
            "doc_external": _concat(externals, np.int8),
        },
        [x for x in speakers if x],
    )


def _spread_to(merged: np.ndarray, ids: np.ndarray, values: np.ndarray, fill: int) -> np.ndarray:
    """``values`` of ``ids`` placed among ``merged`` documents, ``fill`` for the others."""
    out = np.full(len(merged), fill, values.dtype)
    out[np.searchsorted(merged, ids)] = values
    return out


def _speaker_tokens(speakers: Sequence[str], into: dict[str, str]) -> None:

    for speaker in speakers:
        for token in analyze(speaker, stemming=False):
            into.setdefault(token, speaker)


# The document table's columns, in the View's field names (also the saved array files).
_ARRAYS = ("doc_ids", "doc_len", "doc_thread", "doc_pos", "doc_speaker", "doc_user", "doc_time", "doc_external")


def _doc_table(
    kind: str,
    namespace_id: int,
    doc_ids: np.ndarray,
    lengths: np.ndarray,
    after_message: int,
    speakers: dict[str, str],
    codes: dict[str, int],
) -> tuple[dict[str, np.ndarray], int, np.ndarray]:
    """The new documents' columns (by ``_ARRAYS`` name, sorted by id), the highest message id
    read, and for every posting its document's index among the new documents."""
    if kind == "message":
        read = _read_messages(namespace_id, after_message, codes)
        _speaker_tokens(read.names, speakers)
        highest = int(read.ids[-1]) if len(read.ids) else after_message
        columns = dict(read.columns)
        # Postings belong to messages of the same snapshot: place them without sorting them.
        index = np.searchsorted(read.ids, doc_ids)
        if not len(doc_ids) or (
            len(read.ids) and (index < len(read.ids)).all() and np.array_equal(read.ids[index], doc_ids)
        ):
            columns["doc_len"] = np.zeros(len(read.ids), np.int32)
            columns["doc_len"][index] = lengths
            return columns, highest, index.astype(np.int32)
    unique, first, inverse = np.unique(doc_ids, return_index=True, return_inverse=True)
    lens = lengths[first] if len(first) else np.zeros(0, np.int32)
    if kind != "message":
        return _event_columns(unique, lens.astype(np.int32)), 0, inverse
    # Every message is a document (a message of stop words alone still has neighbours).
    merged = np.union1d(read.ids, unique)
    out = {"doc_ids": merged, "doc_len": _spread_to(merged, unique, lens.astype(np.int32), 0)}
    for name, fill in (
        ("doc_thread", 0),
        ("doc_pos", 0),
        ("doc_speaker", -1),
        ("doc_user", 0),
        ("doc_time", -1),
        ("doc_external", 1),
    ):
        out[name] = _spread_to(merged, read.ids, columns[name], fill)
    return out, highest, np.searchsorted(merged, unique)[inverse]


def _event_columns(ids: np.ndarray, lens: np.ndarray) -> dict[str, np.ndarray]:
    n = len(ids)
    return {
        "doc_ids": ids,
        "doc_len": lens,
        "doc_thread": np.zeros(n, np.int32),
        "doc_pos": np.zeros(n, np.int32),
        "doc_speaker": np.full(n, -1, np.int32),
        "doc_user": np.zeros(n, np.int8),
        "doc_time": np.full(n, -1, np.int8),
        "doc_external": np.zeros(n, np.int8),
    }


class _InOrder:
    """Places postings read by row id whose documents only ever grow (events are indexed as they
    are written): each new id is the next document, so no posting keeps its 8-byte id and no sort
    over every posting finds the documents (the event build's peak at 866k events: 1.2 GB)."""

    def __init__(self) -> None:
        self.ids: list[np.ndarray] = []
        self.lengths: list[np.ndarray] = []
        self.count = 0
        self.last = -1

    def __call__(self, doc_ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        if not len(doc_ids):
            return np.zeros(0, np.int32)
        if doc_ids[0] < self.last or bool((doc_ids[1:] < doc_ids[:-1]).any()):
            raise _Misplaced
        new = np.empty(len(doc_ids), bool)
        new[0] = doc_ids[0] != self.last
        np.not_equal(doc_ids[1:], doc_ids[:-1], out=new[1:])
        index = np.cumsum(new, dtype=np.int64)
        index += self.count - 1
        self.ids.append(doc_ids[new])
        self.lengths.append(lengths[new])  # a document's length is on each of its postings
        self.count += int(new.sum())
        self.last = int(doc_ids[-1])
        return index.astype(np.int32)

    def documents(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, lengths) of the documents in order."""
        if not self.ids:
            return np.zeros(0, np.int64), np.zeros(0, np.int32)
        return np.concatenate(self.ids), np.concatenate(self.lengths)  # int32, as read


def _message_postings(namespace_id: int, highest: int, speakers: dict[str, str], codes: dict[str, int]) -> tuple:
    """Every message of the namespace, then its postings placed among them chunk by chunk."""
    read = _read_messages(namespace_id, 0, codes)
    _speaker_tokens(read.names, speakers)
    ids = read.ids
    lens = np.zeros(len(ids), np.int32)
    columns = {**read.columns, "doc_len": lens}

    def place(doc_ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        where = np.searchsorted(ids, doc_ids)
        if len(doc_ids) and (not len(ids) or (where >= len(ids)).any() or not np.array_equal(ids[where], doc_ids)):
            raise _Misplaced
        lens[where] = lengths
        return where.astype(np.int32)

    index, tf, _, term_ids, vocabulary, _ = _read_postings("message", namespace_id, 0, highest, place)
    return columns, (int(ids[-1]) if len(ids) else 0), index, tf, term_ids, vocabulary


def build_view(kind: str, namespace_id: int, identity: str) -> View:
    """Read every posting of the namespace from SQL into a fresh view."""
    speakers: dict[str, str] = {}
    codes: dict[str, int] = {}
    with read_snapshot():
        docs, total, highest, _, removals = _stats(kind, namespace_id)
        try:
            if kind == "message":
                columns, message_max, index, tf, term_ids, vocabulary = _message_postings(
                    namespace_id, highest, speakers, codes
                )
            else:
                placed = _InOrder()
                index, tf, _, term_ids, vocabulary, highest = _read_postings(kind, namespace_id, 0, highest, placed)
                columns, message_max = _event_columns(*placed.documents()), 0
        except _Misplaced:  # a posting without its message, events out of order: place them all at once
            speakers.clear()
            codes.clear()
            doc_ids, tf, lengths, term_ids, vocabulary, highest = _read_postings(kind, namespace_id, 0, highest)
            columns, message_max, index = _doc_table(kind, namespace_id, doc_ids, lengths, 0, speakers, codes)
            del doc_ids, lengths
    static = Part.from_rows(term_ids, index, tf, vocabulary)
    del index, tf, term_ids
    return View(
        kind,
        namespace_id,
        identity,
        static=static,
        watermark=highest,
        static_watermark=highest,
        static_docs=len(columns["doc_ids"]),
        message_watermark=message_max,
        total_length=int(columns["doc_len"].sum()),
        stat_docs=docs,
        stat_total=total,
        speakers=speakers,
        speaker_names=list(codes),
        removal_watermark=removals,
        **columns,
    )


def refresh(view: View) -> View | None:
    """Bring the view up to date with SQL; None when it must be rebuilt (something was deleted).

    Reads inside one transaction, so the statistics and the new rows are one snapshot."""
    with read_snapshot():
        return _refresh(view)


def _successor(view: View) -> View:
    """A view to change in place of ``view``, which readers may still hold.

    A search reads a view's columns, parts and lookups at different moments, outside the cache
    lock; changing the published object would let it pair a new delta with old columns. The
    successor shares every array (appends go past the prefixes the old view sees) and gets its
    own breaks and speakers, the two mappings changed by item."""
    return replace(view, _breaks=dict(view._breaks), speakers=dict(view.speakers))


def _refresh(view: View) -> View | None:
    docs, total, highest, message_max, removals = _stats(view.kind, view.namespace_id)
    if removals > view.removal_watermark:
        view = _apply_removals(view, removals)
        if view is None:
            return None
    if highest < view.watermark or (view.kind == "message" and message_max < view.message_watermark):
        return None
    added = 0
    if highest > view.watermark or message_max > view.message_watermark:
        view = _successor(view)
        doc_ids, tf, lengths, term_ids, vocabulary, new_high = _read_postings(
            view.kind, view.namespace_id, view.watermark, highest
        )
        known = view.index_of(doc_ids) if len(doc_ids) else np.zeros(0, np.int64)
        if (known >= 0).any():
            return None  # a document got postings twice: re-indexed
        codes = {name: code for code, name in enumerate(view.speaker_names)}
        columns, message_high, index = _doc_table(
            view.kind, view.namespace_id, doc_ids, lengths, view.message_watermark, view.speakers, codes
        )
        view.speaker_names = list(codes)
        lens = columns["doc_len"]
        base = view.size
        if len(lens):
            for name in _ARRAYS:
                view.append_column(name, columns[name])
            view.grown(base)
        if len(doc_ids):
            view.delta = view.delta.followed_by(Part.from_rows(term_ids, index + base, tf, vocabulary))
        added = int(lens.sum())
        view.total_length += added
        # Everything up to the snapshot's highest rows has been seen (other namespaces' rows too).
        view.watermark = max(view.watermark, new_high, highest)
        view.message_watermark = max(view.message_watermark, message_high, message_max)
    # New postings explain any growth of the corpus statistics; anything else was a deletion.
    if total != view.stat_total + added:
        return None
    if (view.stat_docs, view.stat_total) != (docs, total):
        view = replace(view, stat_docs=docs, stat_total=total)
    return view


def _apply_removals(view: View, upto: int) -> View | None:
    """A new view without the documents removed since the view's snapshot (logged up to ``upto``),
    whose watermarks are lowered to the floors the removals left, so rows that reuse freed ids
    are read as new; None when the log and the view disagree (rebuild)."""
    marker = db.obj.param
    rows = db.execute_sql(
        f"SELECT namespace, doc_ids, posting_floor, message_floor FROM searchremoval WHERE kind = {marker} "
        f"AND id > {marker} AND id <= {marker} ORDER BY id",
        (view.kind, view.removal_watermark, upto),
    ).fetchall()
    dead: set[int] = set()
    posting_floor, message_floor = view.watermark, view.message_watermark
    for namespace, ids, posting, message in rows:
        # Any namespace's removal frees ids of the shared tables; only this one's documents go.
        posting_floor = min(posting_floor, int(posting))
        if view.kind == "message":
            message_floor = min(message_floor, int(message))
        if namespace == view.namespace_id:
            dead.update(json.loads(ids))
    index = view.index_of(sorted(dead))
    keep = np.ones(view.size, bool)
    keep[index[index >= 0]] = False
    if view.kind == "message" and not (~keep | (view.doc_ids <= message_floor)).all():
        return None  # a message above the floor was not logged as removed
    out = _compacted(view, keep) if not keep.all() else _successor(view)
    out.watermark, out.static_watermark = posting_floor, min(out.static_watermark, posting_floor)
    out.message_watermark = message_floor
    out.removal_watermark = upto
    return out


def _compacted(view: View, keep: np.ndarray) -> View:
    """The view with only the kept documents: their postings, columns and speakers, as a build
    from SQL would hold them (documents in the same order, speakers coded by first message)."""
    remap = np.cumsum(keep, dtype=np.int64) - 1
    columns = {name: getattr(view, name)[keep] for name in _ARRAYS}
    removed_length = view.total_length - int(columns["doc_len"].sum())
    speakers, names = view.speakers, view.speaker_names
    if view.kind == "message":
        coded = columns["doc_speaker"]
        present = coded[coded >= 0]
        used, first = np.unique(present, return_index=True)
        order = used[np.argsort(first, kind="stable")]
        recode = np.full(len(names) + 1, -1, np.int32)  # the last slot serves -1 (no speaker)
        recode[order] = np.arange(len(order), dtype=np.int32)
        columns["doc_speaker"] = recode[coded]
        names = [view.speaker_names[code] for code in order.tolist()]
        speakers = {}
        _speaker_tokens(names, speakers)
    return replace(
        view,
        static=_kept_postings(view.static, keep, remap),
        delta=_kept_postings(view.delta, keep, remap),
        static_docs=int(keep[: view.static_docs].sum()),
        total_length=view.total_length - removed_length,
        stat_total=view.stat_total - removed_length,
        speakers=speakers,
        speaker_names=names,
        compacted=True,
        _breaks={},
        _id_index=None,
        _key_index=None,
        **columns,
    )


def _kept_postings(part: Part, keep: np.ndarray, remap: np.ndarray) -> Part:
    """The part's postings of kept documents, renumbered; terms left without postings dropped."""
    if not part.size:
        return Part.empty()
    mask = keep[part.docs]
    passed = np.concatenate([np.zeros(1, np.int64), np.cumsum(mask, dtype=np.int64)])
    return Part.packed(
        np.diff(passed[part.offsets]), remap[part.docs[mask]].astype(np.int32), part.tf[mask], part.vocabulary()
    )


def merge(view: View) -> View:
    """The view with its delta folded into the static part (in memory; no SQL)."""
    if not view.delta.size:
        return view
    # the delta holds the documents appended since
    return replace(
        view,
        static=view.static.followed_by(view.delta),
        delta=Part.empty(),
        static_watermark=view.watermark,
        static_docs=view.size,
    )


# ----------------------------------------------------------------------------- persistence


def saved_folder() -> Path | None:
    """Where the saved copies live: ``<database file>.search`` (None off SQLite)."""
    if not is_sqlite():
        return None
    name = getattr(db.obj, "database", None)
    if not name or name == ":memory:":
        return None
    return Path(f"{name}.search")


def save(view: View) -> View:
    """Write the static part (merged first) beside the SQLite file, atomically replacing the
    pointer; the merged view that was saved."""
    folder = saved_folder()
    if folder is None:
        return view
    view = merge(view)
    # The copies hold the words of every message: they get the database file's own mode (0600 for
    # a store Strata made), from their creation on, whatever the umask.
    file_mode, dir_mode = modes_beside(Path(str(folder)[: -len(".search")]))
    make_dir(folder, dir_mode, exist_ok=True)
    stem = f"{view.kind}-{view.namespace_id}"
    # A new directory every time: files are never rewritten in place, since a process (this one
    # or another) may have the earlier copy mapped, and a mapped file cut short kills it (SIGBUS).
    # (mkdir, not mkdtemp: a copy is as readable as its database, for the other users of a shared store)
    target = folder / f"{stem}-{view.watermark}-{os.getpid()}-{secrets.token_hex(4)}"
    make_dir(target, dir_mode)
    arrays = [(f"{name}.npy", getattr(view, name)) for name in _ARRAYS]
    arrays += [(f"post_{name}.npy", getattr(view.static, name)) for name in ("offsets", "docs", "tf")]
    for filename, array in arrays:
        with open_new(target / filename, file_mode) as out:
            np.save(out, array)
    vocabulary = view.static.vocabulary()  # not rows(): its term id per posting is 160 MB at 1M
    with open_new(target / "terms.txt", file_mode, text=True) as out:
        out.write("\n".join(vocabulary))
    meta = {
        "format": FORMAT,
        "identity": view.identity,
        "watermark": view.watermark,
        "message_watermark": view.message_watermark,
        "total_length": view.total_length,
        "stat_docs": view.stat_docs,
        "stat_total": view.stat_total,
        "removal_watermark": view.removal_watermark,
        "speakers": view.speakers,
        "speaker_names": view.speaker_names,
        "dir": target.name,
    }
    pointer = folder / f"{stem}.json"
    temporary = folder / f"{stem}.json.{os.getpid()}"
    with open_new(temporary, file_mode, text=True) as out:
        out.write(json.dumps(meta))
    os.replace(temporary, pointer)
    _SAVED_HERE.add(target.name)
    _clear_earlier(folder, stem, target)
    return replace(view, compacted=False) if view.compacted else view


# Names of the copies this process wrote: its saves run one at a time (under ``_LOCK``), so an earlier
# one of them is finished and replaced. Another process's copy may still be being written (its pointer
# not yet moved to it), so it is cleared only once it has not changed for ``FOREIGN_COPY_GRACE`` seconds.
_SAVED_HERE: set[str] = set()
FOREIGN_COPY_GRACE = 600.0


def _clear_earlier(folder: Path, stem: str, keep: Path) -> None:
    """Remove the kind's other saved copies; readers that mapped one keep their pages."""
    try:
        named = json.loads((folder / f"{stem}.json").read_text(encoding="utf-8")).get("dir")
    except (OSError, ValueError, AttributeError):
        named = None
    now = time.time()
    for old in folder.glob(f"{stem}-*"):
        if old == keep or old.name == named or not old.is_dir():
            continue  # the pointer may already name a copy another process saved after this one
        if old.name not in _SAVED_HERE:
            try:
                if now - old.stat().st_mtime < FOREIGN_COPY_GRACE:
                    continue
            except OSError:
                continue
        shutil.rmtree(old, ignore_errors=True)
        _SAVED_HERE.discard(old.name)


def load(kind: str, namespace_id: int, identity: str) -> View | None:
    folder = saved_folder()
    if folder is None:
        return None
    pointer = folder / f"{kind}-{namespace_id}.json"
    try:
        meta = json.loads(pointer.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or meta.get("identity") != identity:
            return None
        target = folder / meta["dir"]
        # Mapped read-only, seen as plain arrays (the memmap subclass adds a Python call to every index).
        arrays = {name: np.asarray(np.load(target / f"{name}.npy", mmap_mode="r")) for name in _ARRAYS}
        offsets, docs, tf = (
            np.asarray(np.load(target / f"post_{n}.npy", mmap_mode="r")) for n in ("offsets", "docs", "tf")
        )
        text = (target / "terms.txt").read_text(encoding="utf-8")
    except (OSError, ValueError, KeyError):
        return None
    vocabulary = text.split("\n") if text else []
    if not _consistent(vocabulary, offsets, docs, tf, arrays):
        return None  # damaged or mixed files: built again from SQL, as when there is no copy
    static = Part({t: i for i, t in enumerate(vocabulary)}, offsets, docs, tf)
    return View(
        kind,
        namespace_id,
        identity,
        static=static,
        watermark=meta["watermark"],
        static_watermark=meta["watermark"],
        static_docs=len(arrays["doc_ids"]),
        message_watermark=meta["message_watermark"],
        total_length=meta["total_length"],
        stat_docs=meta["stat_docs"],
        stat_total=meta["stat_total"],
        # A copy saved before removals were logged predates every logged removal.
        removal_watermark=meta.get("removal_watermark", 0),
        speakers=dict(meta["speakers"]),
        speaker_names=list(meta["speaker_names"]),
        **arrays,
    )


def _consistent(
    vocabulary: list[str], offsets: np.ndarray, docs: np.ndarray, tf: np.ndarray, arrays: dict[str, np.ndarray]
) -> bool:
    """The shapes a saved copy must have (no posting is read). A value damaged inside a file
    passes; ``postings_in_range`` reads every posting: ``view`` runs it before using a loaded
    copy, and `strata verify` reports what it finds."""
    sizes = {len(a) for a in arrays.values()}
    return (
        len(sizes) == 1
        and offsets.ndim == docs.ndim == tf.ndim == 1
        and len(offsets) == len(vocabulary) + 1
        and int(offsets[0]) == 0
        and int(offsets[-1]) == len(docs) == len(tf)
    )


def postings_in_range(current: View) -> str | None:
    """What is wrong with a view's postings (None when nothing): offsets that go back, or a
    posting naming a document the view does not hold."""
    docs_total = current.size
    for label, part in (("saved", current.static), ("recent", current.delta)):
        if len(part.offsets) and np.any(np.diff(part.offsets) < 0):
            return f"{label} postings: offsets go back"
        if len(part.docs) and (int(part.docs.min()) < 0 or int(part.docs.max()) >= docs_total):
            return f"{label} postings: a document number outside 0..{docs_total - 1}"
    return None


# ----------------------------------------------------------------------------- the cache

_VIEWS: dict[tuple, View] = {}
_LOCK = threading.RLock()


def _cache_key(kind: str, namespace_id: int) -> tuple:
    return (id(db.obj), getattr(db.obj, "database", None), kind, namespace_id)


def _saved(fresh: View, strict: bool) -> View:
    """``save``; or, when the copy cannot be written (a full disk, a folder that is not ours, another
    process clearing the one it just replaced), the merged view kept in this process only: the copy
    is a cache, and a search must not fail for it. ``strict`` raises instead. Off SQLite (nothing is
    saved) the merged view."""
    merged = merge(fresh)  # here, not only in save: a save that fails keeps it
    try:
        return save(merged)
    except OSError:
        if strict:
            raise
        # Not compacted any more: else every later search would try (and fail) to save it again.
        return replace(merged, compacted=False) if merged.compacted else merged


def view(kind: str, namespace_id: int, identity: str | None = None, *, strict: bool = False) -> View:
    """The current view of a namespace's postings (built, loaded, refreshed or merged as needed).

    ``strict``: a saved copy that cannot be written raises OSError (else the view is kept in memory)."""
    if identity is None:  # plain SQL: a peewee get here cost ~1 ms of every search
        row = db.execute_sql(f"SELECT created_at FROM namespace WHERE id = {db.obj.param}", (namespace_id,)).fetchone()
        identity = row[0] if row is not None else ""
    key = _cache_key(kind, namespace_id)
    with _LOCK:
        current = _VIEWS.get(key)
        if current is not None and current.identity != identity:
            current = None
        fresh = refresh(current) if current is not None else None
        if fresh is None:
            loaded = load(kind, namespace_id, identity)
            if loaded is not None and postings_in_range(loaded) is not None:
                # Damaged inside a file: a posting past the end would raise in a search, one below
                # zero would silently score another document. Built again below and saved over it.
                loaded = None
            fresh = refresh(loaded) if loaded is not None else None
            # Not the running process's share rule: a delta read here is read again by every new
            # process until it is saved (events derived after the last save: 0.7 s per open at 1M).
            if fresh is not None and fresh.delta.size > MERGE_MIN:
                fresh = _saved(fresh, strict)
            if fresh is None:
                fresh = build_view(kind, namespace_id, identity)
                if fresh.static.size >= MERGE_MIN:
                    fresh = _saved(fresh, strict)
        elif fresh.delta.size > max(MERGE_MIN, MERGE_SHARE * fresh.static.size):
            fresh = _saved(fresh, strict)
        if fresh.compacted and fresh.static.size >= MERGE_MIN:
            fresh = _saved(fresh, strict)  # else every new process would drop the same documents again
        _VIEWS[key] = fresh
        if len(_VIEWS) > 64:
            _VIEWS.pop(next(iter(_VIEWS)))
        return fresh


def forget_views() -> None:
    """Drop every cached view (tests; a process that closes its store)."""
    with _LOCK:
        _VIEWS.clear()
