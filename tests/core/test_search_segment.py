"""The segment index (numpy postings + SQL delta) scores exactly like the reference.

Every fast path — vectorised scoring, MaxScore top-k, the delta read after writes, the merge,
the copy saved beside the database, the rebuild after a deletion — is compared with
``bm25_reference``, which reads the SQL postings directly, to 1e-9 (ids and scores).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from core.bench.synthetic import conversation, queries
from core.db import db, is_sqlite, write_transaction
from core.models import Event, Message, Namespace, Thread
from core.search import scoring, segment, spread
from core.search.analyze import analyze
from core.search.history import requests_history
from core.search.index import bm25, bm25_reference, prepared, bm25_top, unindex_events, unindex_messages
from core.services.capture import append_messages
from core.services.events import forget_event, write_event
from core.services.retrieval import (
    _FIRST_PERSON,
    _WHEN,
    DEFAULT_PARAMS,
    _has_time,
    _layout,
    event_support,
    raw_ranking,
)
from core.services.search import search_events, search_raw
from core.api import open_store
from tests.stores import close_template, copy_of, drop, fresh_url, on_postgres

SAVED = pytest.mark.sqlite_only(reason="search index copies are saved beside a SQLite file; a server database has none")
QUESTIONS = queries(10) + ["Alice kubernetes", "rollback plan", "budget deadline Lisbon", "zzzz unknownword"]


def _tune(patch) -> None:
    patch.setattr(scoring, "EXHAUSTIVE_BELOW", 0)  # always take the MaxScore path
    patch.setattr(scoring, "LONG_QUERY", 10**6)  # even for long queries
    patch.setattr(segment, "DENSE_MIN", 40)  # common terms looked up through dense tf arrays
    patch.setattr(segment, "DENSE_TERMS", 3)  # and evicted
    patch.setattr(segment, "BULK_EXTREMES", 2_000)  # the static part bounds every term at once
    patch.setattr(segment, "MERGE_MIN", 1_000)  # merge (and save) often on this small corpus


@pytest.fixture(scope="module")
def corpus_template(tmp_path_factory):
    """The corpus, stored once per module: each test takes a copy (building it took a second a
    test on PostgreSQL, whose round trips cost more than SQLite's calls)."""
    url = fresh_url(tmp_path_factory.mktemp("corpus"), "corpus.db")
    open_store(url)
    segment.forget_views()
    with pytest.MonkeyPatch.context() as patch:
        _tune(patch)
        for thread, messages in conversation(500, seed=3):
            append_messages("scale", thread, messages)
        ns = Namespace.get(Namespace.name == "scale")
        with write_transaction():
            for i, (thread, messages) in enumerate(conversation(120, seed=5)):
                for j, m in enumerate(messages[:6]):
                    write_event(
                        ns.id,
                        {
                            "title": m["content"][:80],
                            "summary": m["content"],
                            "participants": [m["speaker"]],
                            "source_message_ids": [],
                            "temporal": {},
                        },
                        block=None,
                        formed_turn=i * 10 + j,
                    )
    segment.forget_views()
    close_template()
    yield url
    if on_postgres():
        drop(url)


@pytest.fixture
def corpus(corpus_template, tmp_path, monkeypatch):
    segment.forget_views()
    _tune(monkeypatch)
    open_store(copy_of(corpus_template, tmp_path / "strata.db"))
    yield Namespace.get(Namespace.name == "scale")
    segment.forget_views()
    if not db.is_closed():
        db.close()


def _assert_same(kind: str, ns_id: int, terms: list[str], **kw) -> None:
    reference = bm25_reference(kind, ns_id, terms, **kw)
    fast = bm25(kind, ns_id, terms, **kw)
    assert set(fast) == set(reference)
    for doc, score in reference.items():
        assert fast[doc] == pytest.approx(score, abs=1e-9)
    for ties, key in (("asc", lambda i: (-reference[i], i)), ("desc", lambda i: (-reference[i], -i))):
        for k in (1, 7, 40):
            top = bm25_top(kind, ns_id, terms, k, ties=ties, **kw)
            expected = sorted(reference, key=key)[:k]
            assert [i for i, _ in top] == expected
            assert all(abs(s - reference[i]) <= 1e-9 for i, s in top)


def _check_all(ns_id: int) -> None:
    thread = Thread.select().where(Thread.namespace == ns_id).first()
    for question in QUESTIONS:
        terms = analyze(question)
        _assert_same("message", ns_id, terms)
        _assert_same("message", ns_id, terms, b=0.0)
        _assert_same("message", ns_id, terms, thread_id=thread.id)
        _assert_same("message", ns_id, terms, term_weights={t: 0.5 + i for i, t in enumerate(terms)})
        _assert_same("event", ns_id, terms)


def test_fast_scoring_equals_the_reference(corpus):
    _check_all(corpus.id)


def test_equal_after_appends_merge_reload_and_deletes(corpus):
    _check_all(corpus.id)
    for i, (thread, messages) in enumerate(conversation(300, seed=11)):  # a delta, then merges
        append_messages("scale", thread, messages)
        if i % 4 == 0:
            _assert_same("message", corpus.id, analyze(QUESTIONS[i % len(QUESTIONS)]))
    _check_all(corpus.id)
    if is_sqlite():
        assert any(segment.saved_folder().glob("message-*.json"))  # the merged segment was saved
    segment.forget_views()  # a new process: loads the saved segment, reads the delta from SQL
    append_messages("scale", "thread-000", [{"role": "user", "content": "Alice moved the kubernetes rollback"}])
    _check_all(corpus.id)
    victims = [
        i
        for (i,) in Message.select(Message.id)
        .where(Message.namespace == corpus.id)
        .order_by(Message.id)
        .limit(40)
        .tuples()
    ]
    _remove(corpus.id, victims, [e.id for e in Event.select(Event.id).limit(5)])
    _check_all(corpus.id)


def _remove(ns_id: int, message_ids: list[int], event_ids: list[int] = ()) -> None:
    """Delete messages and events the way an import undo does: out of the index, then out of SQL."""
    with write_transaction():
        if event_ids:
            unindex_events(ns_id, event_ids)
            Event.delete().where(Event.id.in_(event_ids)).execute()
        if message_ids:
            unindex_messages(ns_id, message_ids)
            Message.delete().where(Message.id.in_(message_ids)).execute()


def _postings(view) -> dict[str, dict[int, int]]:
    """term -> {document id: tf}, whatever part holds them."""
    out: dict[str, dict[int, int]] = {}
    for part in view.parts():
        for term in part.terms:
            docs, tf = part.slice(term)
            out.setdefault(term, {}).update(zip(view.doc_ids[docs].tolist(), tf.tolist()))
    return out


def _assert_views_equal(live, fresh) -> None:
    for name in segment._ARRAYS:
        assert np.array_equal(getattr(live, name), getattr(fresh, name)), name
    assert _postings(live) == _postings(fresh)
    assert (live.speakers, live.speaker_names) == (fresh.speakers, fresh.speaker_names)
    assert (live.total_length, live.stat_docs, live.stat_total) == (
        fresh.total_length,
        fresh.stat_docs,
        fresh.stat_total,
    )
    assert _lookups(live) == _lookups(fresh)


def _newest_messages(ns_id: int, n: int) -> list[int]:
    return [
        i
        for (i,) in Message.select(Message.id)
        .where(Message.namespace == ns_id)
        .order_by(Message.id.desc())
        .limit(n)
        .tuples()
    ]


def test_removals_drop_documents_without_a_rebuild(corpus, monkeypatch):
    """An import undo at a million messages must not read every posting again: the view drops
    the removed documents, and rows that reuse the freed ids (SQLite: highest id + 1) are read."""
    for kind in ("message", "event"):
        segment.view(kind, corpus.id)
    segment.forget_views()  # the saved copy now predates the removals, as in another process
    cached = {kind: segment.view(kind, corpus.id) for kind in ("message", "event")}
    newest_events = [i for (i,) in Event.select(Event.id).order_by(Event.id.desc()).limit(7).tuples()]
    middle = [
        i
        for (i,) in Message.select(Message.id)
        .where(Message.namespace == corpus.id)
        .order_by(Message.id)
        .offset(100)
        .limit(30)
        .tuples()
    ]
    _remove(corpus.id, middle + _newest_messages(corpus.id, 25), newest_events[:4])

    build = _forbid_rebuild(monkeypatch)
    for i, (thread, messages) in enumerate(conversation(60, seed=31)):  # ids freed by the removal again
        append_messages("scale", thread, messages)
    with write_transaction():
        write_event(
            corpus.id,
            {
                "title": "Alice rollback kubernetes",
                "summary": "budget Lisbon",
                "participants": ["Alice"],
                "source_message_ids": [],
                "temporal": {},
            },
            block=None,
            formed_turn=9_999,
        )
    _check_all(corpus.id)
    for kind in ("message", "event"):
        live = segment.view(kind, corpus.id)
        assert live is not cached[kind] and live.removal_watermark > 0
        _assert_views_equal(live, build(kind, corpus.id, live.identity))
    ns = Namespace.get_by_id(corpus.id)
    for question in QUESTIONS[:6]:
        expected = _reference_raw_ranking(ns, question)
        assert list(raw_ranking(ns, question, _layout(ns), DEFAULT_PARAMS)) == list(expected)
    if is_sqlite():  # The compacted view was saved: a new process loads it and has nothing to drop.
        segment.forget_views()
        live = segment.view("message", corpus.id)
        assert not live.compacted
        _assert_views_equal(live, build("message", corpus.id, live.identity))


def _forbid_rebuild(monkeypatch):
    build = segment.build_view

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the view was rebuilt from SQL")

    monkeypatch.setattr(segment, "build_view", no_rebuild)
    return build


def test_another_namespaces_removal_frees_ids_this_view_must_read(corpus, monkeypatch):
    """Postings and messages are shared tables: ids freed in one namespace go to the next rows
    of any namespace."""
    segment.view("message", corpus.id)
    segment.view("event", corpus.id)
    build = _forbid_rebuild(monkeypatch)
    append_messages("other", "t", [{"role": "user", "content": f"Alice kubernetes budget note {i}"} for i in range(12)])
    other = Namespace.get(Namespace.name == "other")
    segment.view("message", corpus.id)  # has seen past the other namespace's rows
    _remove(other.id, _newest_messages(other.id, 12))
    append_messages(
        "scale", "thread-000", [{"role": "user", "content": f"Alice rollback plan number {i}"} for i in range(12)]
    )
    live = segment.view("message", corpus.id)
    _assert_views_equal(live, build("message", corpus.id, live.identity))
    _check_all(corpus.id)


def test_an_unlogged_deletion_still_rebuilds(corpus):
    """A deletion that bypassed the log (a cascade) is seen in the statistics: rebuilt, never wrong."""
    segment.view("message", corpus.id)
    victims = _newest_messages(corpus.id, 10)
    with write_transaction():
        from core.models import MessageTerm
        from core.search.index import _bump_stats

        lengths = dict(
            MessageTerm.select(MessageTerm.message, MessageTerm.length)
            .where(MessageTerm.message.in_(victims))
            .distinct()
            .tuples()
        )
        MessageTerm.delete().where(MessageTerm.message.in_(victims)).execute()
        _bump_stats(corpus.id, "message", -len(lengths), -sum(lengths.values()))
        Message.delete().where(Message.id.in_(victims)).execute()
    live = segment.view("message", corpus.id)
    _assert_views_equal(live, segment.build_view("message", corpus.id, live.identity))


def test_a_view_a_reader_holds_never_changes(corpus, monkeypatch):
    """Searches read a view's columns, parts and lookups outside the cache lock. Captures, merges,
    saves and removals publish a new view; the one a reader holds stays what it was, so it never
    pairs a new delta with old columns (or a merged static part with the delta it absorbed)."""
    monkeypatch.setattr(segment, "MERGE_SHARE", 0.0)  # every refresh with a big delta merges
    held = segment.view("message", corpus.id)
    _lookups(held)  # its lazy lookups built, as a reader's search builds them
    frozen = segment.build_view("message", corpus.id, held.identity)
    parts = (held.static, held.delta)
    for i, (thread, messages) in enumerate(conversation(60, seed=43)):
        append_messages("scale", thread if i % 4 else "thread-new", messages)
        live = segment.view("message", corpus.id)
    _remove(corpus.id, _newest_messages(corpus.id, 5))
    live = segment.view("message", corpus.id)
    assert live is not held and live.size > held.size
    assert (held.static, held.delta) == parts
    _assert_views_equal(held, frozen)
    _assert_views_equal(live, segment.build_view("message", corpus.id, live.identity))


def test_search_channels_equal_exhaustive_rankings(corpus):
    forgotten = Event.select(Event.id).order_by(Event.id).limit(30)
    for event in forgotten:
        forget_event(event.id)
    live = {e.id for e in Event.select(Event.id).where(Event.status.in_(["active", "superseded"]))}
    # An event search shows superseded events only to a question that asks for history.
    current = {e.id for e in Event.select(Event.id).where(Event.status == "active")}
    for question in QUESTIONS:
        terms = analyze(question)
        reference = bm25_reference("message", corpus.id, terms)
        hits = search_raw("scale", question, limit=10)
        assert [h.message.id for h in hits] == sorted(reference, key=lambda i: (-reference[i], -i))[:10]
        shown = live if requests_history(question) else current
        events = {i: s for i, s in bm25_reference("event", corpus.id, terms).items() if i in shown}
        hits = search_events("scale", question, limit=6, track=False)
        assert [h.event.id for h in hits] == sorted(events, key=lambda i: (-events[i], i))[:6]


def test_best_live_events_equal_sorting_every_live_match(corpus):
    from core.services.search import best_live_events

    # Forget most of the best matches of a common word, so the top k has to grow.
    terms = analyze("Alice kubernetes rollback")
    reference = bm25_reference("event", corpus.id, terms)
    for event_id in sorted(reference, key=lambda i: (-reference[i], i))[:25]:
        forget_event(event_id)
    live = {e.id for e in Event.select(Event.id).where(Event.status.in_(["active", "superseded"]))}
    for question in QUESTIONS + ["Alice kubernetes rollback"]:
        terms = analyze(question)
        scores = {i: s for i, s in bm25_reference("event", corpus.id, terms).items() if i in live}
        for limit in (1, 5, 30):
            assert best_live_events(corpus.id, terms, limit) == sorted(scores, key=lambda i: (-scores[i], i))[:limit]


def test_top_kept_equals_filtering_every_match(corpus):
    from core.search.index import bm25_top_kept

    for question in QUESTIONS:
        terms = analyze(question)
        for kind in ("message", "event"):
            reference = bm25_reference(kind, corpus.id, terms)
            ranked = sorted(reference, key=lambda i: (-reference[i], i))
            for rule in (lambda i: i % 3 == 0, lambda i: i % 17 == 5, lambda i: False, lambda i: True):
                calls = []

                def keep(ids, rule=rule):
                    calls.append(len(ids))
                    return {i for i in ids if rule(i)}

                for limit in (1, 4, 25):
                    assert bm25_top_kept(kind, corpus.id, terms, limit, keep) == [i for i in ranked if rule(i)][:limit]
    # When every candidate is kept, one look at the best 4 x limit is enough.
    calls = []
    bm25_top_kept("message", corpus.id, analyze("Alice kubernetes"), 4, lambda ids: calls.append(ids) or set(ids))
    assert [len(c) for c in calls] == [16]


def _reference_raw_ranking(ns: Namespace, question: str, params=DEFAULT_PARAMS) -> dict[int, float]:
    """The default retrieval's raw ranking written out as plain loops over the reference scores."""
    own = bm25_reference("message", ns.id, analyze(question), k1=params.k1, b=params.b)
    rows = list(
        Message.select(
            Message.id,
            Message.thread,
            Message.position,
            Message.speaker,
            Message.created_at,
            Message.content,
            Message.role,
        )
        .where(Message.namespace == ns.id)
        .order_by(Message.id)
        .tuples()
    )
    at = {(t, p): i for i, t, p, *_ in rows}
    info = {i: rest for i, *rest in rows}
    speakers: dict[str, str] = {}
    for *_, speaker, _, _, _ in rows:
        for token in analyze(speaker or "", stemming=False):
            speakers.setdefault(token, speaker)
    scores: dict[int, float] = {}
    for mid, score in own.items():
        scores[mid] = scores.get(mid, 0.0) + score
        thread, position = info[mid][:2]
        for offset, weight in (
            (-1, params.neighbour_weight),
            (1, params.neighbour_weight),
            (-2, params.second_neighbour_weight),
            (2, params.second_neighbour_weight),
        ):
            neighbour = at.get((thread, position + offset))
            if neighbour is not None:
                scores[neighbour] = scores.get(neighbour, 0.0) + weight * score
    boost = event_support(ns, analyze(question), history=requests_history(question))
    if boost:
        top_event = max(boost.values())
        for mid, value in boost.items():
            if mid in scores:
                scores[mid] *= 1 + params.event_boost * value / top_event
    named = {speakers[t] for t in analyze(question, stemming=False) if t in speakers}
    wants_time, about_user = bool(_WHEN.search(question)), bool(_FIRST_PERSON.search(question))
    out = {}
    for mid in sorted(scores, key=lambda m: -scores[m])[: params.candidate_limit]:
        _, _, speaker, created_at, content, role = info[mid]
        factor = 1.0
        if named and speaker in named:
            factor += params.speaker_boost
        elif about_user and role == "user":
            factor += params.user_boost
        if wants_time and _has_time(content, created_at, None):  # parsed, not the stored flag
            factor += params.time_boost
        out[mid] = scores[mid] * factor
    return out


@pytest.mark.parametrize(
    "params",
    [
        DEFAULT_PARAMS,
        # a cut far below the corpus size: the floor from block maxima decides what is summed exactly
        replace(DEFAULT_PARAMS, candidate_limit=7),
        replace(DEFAULT_PARAMS, candidate_limit=3, second_neighbour_weight=0.0, event_boost=0.0),
    ],
    ids=["default", "small-cut", "one-neighbour"],
)
@pytest.mark.parametrize("split", [False, True], ids=["one-piece", "two-threads"])
def test_default_retrieval_raw_ranking_equals_the_reference(corpus, params, split, monkeypatch):
    if split:  # the halves of the spread summed on two threads, as from SPLIT_ROWS messages
        monkeypatch.setattr(spread, "SPLIT_ROWS", 2)
    ns = Namespace.get_by_id(corpus.id)
    for question in QUESTIONS + ["when did Alice plan the Lisbon trip", "what did I decide about redis"]:
        expected = _reference_raw_ranking(ns, question, params)
        got = raw_ranking(ns, question, _layout(ns), params)
        assert list(got) == list(expected)  # the same candidates in the same order (ties included)
        assert all(abs(got[i] - expected[i]) <= 1e-9 for i in expected)


def test_spread_convolution_equals_scattering_every_scored_message(corpus):
    """One convolution plus the rows patched from their real neighbours adds what scattering each
    scored message to its neighbours adds (up to the grouping of the additions)."""
    view = _layout(Namespace.get_by_id(corpus.id)).view
    rows = np.arange(view.size)
    for weights in (spread._weights(DEFAULT_PARAMS), [(-1, 0.5), (1, 0.25)]):
        offsets = tuple(-offset for offset, _ in weights)
        breaks, sources = view.neighbour_breaks(offsets)
        assert 0 < len(breaks) < view.size // 2  # the corpus interleaves threads, mostly in runs
        for row, offset in enumerate(offsets):  # every other row's neighbour is the row beside it
            near = view.neighbours_of(offset, rows)
            assert np.array_equal(np.delete(near, breaks), np.delete(rows + offset, breaks))
            assert np.array_equal(sources[row], near[breaks])  # -1: no neighbour
        for question in QUESTIONS:
            query = prepared("message", corpus.id, analyze(question), k1=1.2, b=0.0)
            if query is None:
                continue
            hit, own = scoring.score_all(query)
            scattered = np.zeros(view.size)
            scattered[hit] += own
            for offset, weight in weights:
                targets = view.neighbours_of(offset, hit)
                reach = targets >= 0
                scattered[targets[reach]] += weight * own[reach]
            pieces = spread.spread_scores(view, np.append(scoring.dense_scores(query), 0.0), weights)
            got = np.concatenate([piece.sums for piece in pieces])
            assert np.array_equal(got > 0, scattered > 0)
            assert np.allclose(got, scattered, rtol=1e-12, atol=0)


def test_cut_keeps_every_target_that_can_reach_the_best_limit():
    """Whatever pieces the sums come in and whatever factors raise, the cut returns every target
    at or above the limit-th best (ties and zeros included), and skips most of the rest when the
    rows are many."""
    rng = np.random.default_rng(5)
    for size, limit in ((40, 5), (1_000, 7), (5_000, 400), (20_000, 50), (60_000, 400)):
        sums = np.round(rng.random(size), 2) * (rng.random(size) < 0.3)
        factors = {int(at): 1 + float(rng.random()) for at in rng.choice(size, 20, replace=False)}
        for bounds in ([0, size], [0, size // 2, size], [0, 1, 4_000, size]):
            bounds = sorted(set(min(bound, size) for bound in bounds))
            pieces = [spread.Piece(lo, sums[lo:hi].copy()) for lo, hi in zip(bounds, bounds[1:])]
            starts = spread._block_starts(size, limit)
            assert (starts is not None) == (size >= limit * spread.BLOCKS_PER_PICK * 2)
            for piece in pieces:
                if starts is not None:
                    piece.find_maxima(starts)
            targets, scores = spread.cut(pieces, factors, limit)
            expected = sums.copy()
            for at, factor in factors.items():
                expected[at] *= factor
            kth = np.sort(expected)[-limit]
            assert np.array_equal(scores, expected[targets])
            assert set(np.flatnonzero(expected >= kth).tolist()) <= set(targets.tolist())
            assert (scores > 0).all()
            if starts is not None:
                assert len(targets) < size * 0.3 / 2  # the floor cut something


def test_graph_search_cache_follows_forget_and_restore(store):
    from core.services.capture import append_turn
    from core.services.derive import run_pending
    from core.services.events import restore_event
    from core.services.search import search_graph
    from core.services.spaces import configure_namespace

    configure_namespace("g", block_turn_size=2)
    for text in (
        "Maya moved to Lisbon in May.",
        "Maya started a job at Kestrel in Lisbon.",
        "The Lisbon flat has a balcony.",
        "Maya adopted a cat in Lisbon.",
    ):
        append_turn("g", "chat", {"role": "user", "content": text, "speaker": "Maya"}, "Noted.")
    assert run_pending("g").failed == 0
    before = search_graph("g", "Lisbon")
    assert before and search_graph("g", "Lisbon") == before  # the second answer comes from the cache
    events = [e.id for e in Event.select(Event.id)]
    for event_id in events:
        forget_event(event_id)
    assert search_graph("g", "Lisbon") == []  # no live evidence: the cached views were dropped
    restore_event(events[0])
    assert search_graph("g", "Lisbon") != []


def test_lookup_finds_each_candidates_tf_by_every_route(corpus):
    """Binary search either way round, or a dense tf table (built or not yet built), give the same."""
    view = _layout(Namespace.get_by_id(corpus.id)).view
    rng = np.random.default_rng(11)
    query = prepared("message", corpus.id, analyze("Alice kubernetes rollback plan budget deadline"), k1=1.2, b=0.0)
    for term in query.terms:
        for part, docs, tf in term.runs:
            expected = dict(zip(docs.tolist(), tf.tolist()))
            for size in (1, 5, len(docs) // 2, len(docs) * 3, view.size):
                cands = np.unique(rng.integers(0, view.size, min(size, view.size)))
                at, looked = scoring._lookup(term, part, docs, tf, cands)
                got = dict(zip(cands[at].tolist(), looked.tolist()))
                assert got == {c: expected[c] for c in cands.tolist() if c in expected}


def _lookups(view) -> dict:
    offsets = tuple(-offset for offset, _ in spread._weights(DEFAULT_PARAMS))
    everyone = np.arange(view.size)
    return {
        "neighbours": {o: view.neighbours_of(o, everyone).tolist() for o in (-2, -1, 1, 2)},
        "breaks": [a.tolist() for a in view.neighbour_breaks(offsets)],
        "index_of": view.index_of(view.doc_ids).tolist(),
    }


@pytest.mark.parametrize("tail", [0, 10**6], ids=["breaks-redone-anywhere", "breaks-redone-at-the-tail"])
@pytest.mark.parametrize("apart", [2, 10**6])
def test_lookups_follow_appends_like_a_fresh_view(corpus, monkeypatch, apart, tail):
    """Neighbours, their breaks and the id index are merged with each appended turn (no full sort
    per capture), and stay what a view built from scratch computes: with the appended keys kept
    apart from the base, and with them merged into it every few appends; with the breaks redone
    from the first touched row to the end, or by deleting and inserting only the touched ones."""
    monkeypatch.setattr(segment, "NEW_KEYS_MIN", apart)
    monkeypatch.setattr(segment, "TAIL_BREAKS", tail)
    for i, (thread, messages) in enumerate(conversation(120, seed=21)):
        _lookups(segment.view("message", corpus.id))  # cached before the append, so it must follow it
        append_messages("scale", thread if i % 3 else "thread-new", messages[:3])
        if i % 5 == 0:
            live = _lookups(segment.view("message", corpus.id))
            segment.forget_views()
            assert live == _lookups(segment.view("message", corpus.id))
    live = segment.view("message", corpus.id)
    assert live._key_index is not None  # the merged keys were kept, not dropped for a re-sort
    assert _lookups(live) == _lookups(segment.build_view("message", corpus.id, live.identity))
    if apart > 2:
        assert len(live._key_index.new_keys) and len(live._id_index.new_keys)  # still kept apart


def test_sorted_lookup_finds_keys_kept_apart_and_merged(monkeypatch):
    monkeypatch.setattr(segment, "NEW_KEYS_MIN", 8)
    rng = np.random.default_rng(4)
    keys = rng.choice(10**6, 3_000, replace=False).astype(np.int64)
    lookup = segment._SortedLookup.of(keys[:1_000])
    expected = {int(k): i for i, k in enumerate(keys[:1_000])}
    bases = {len(lookup.keys)}
    for start in range(1_000, 3_000, 37):
        batch = keys[start : start + 37]
        values = np.arange(start, start + len(batch), dtype=np.int64)
        lookup = lookup.with_added(batch, values)
        expected.update({int(k): int(v) for k, v in zip(batch, values)})
        bases.add(len(lookup.keys))
        wanted = np.concatenate([rng.choice(keys[: start + 37], 50), rng.integers(10**6, 2 * 10**6, 10)])
        assert lookup.find(wanted).tolist() == [expected.get(int(k), -1) for k in wanted]
    assert len(bases) > 2 and len(lookup.new_keys) <= max(8, len(lookup.keys) >> 6)  # merged now and then


def test_neighbours_are_the_messages_that_many_positions_away():
    """By (thread, position), as the reference reads them: gaps and ends have none."""
    threads = np.array([2, 1, 2, 1, 1, 2, 3, 1], np.int32)
    positions = np.array([0, 0, 1, 1, 3, 4, 0, 4], np.int32)  # thread 1: 0,1,3,4; thread 2: 0,1,4
    n = len(threads)
    view = segment.View(
        "message",
        1,
        "x",
        doc_ids=np.arange(10, 10 + n),
        doc_len=np.ones(n, np.int32),
        doc_thread=threads,
        doc_pos=positions,
        doc_speaker=np.full(n, -1, np.int32),
        doc_user=np.zeros(n, np.int8),
        doc_time=np.zeros(n, np.int8),
        doc_external=np.zeros(n, np.int8),
        static=segment.Part.empty(),
    )
    at = {(t, p): i for i, (t, p) in enumerate(zip(threads.tolist(), positions.tolist()))}
    for offset in (-2, -1, 1, 2, 3):
        expected = [at.get((t, p + offset), -1) for t, p in zip(threads.tolist(), positions.tolist())]
        assert view.neighbours_of(offset, np.arange(n)).tolist() == expected


def _random_part(rng, vocabulary: list[str], first_doc: int, docs: int) -> segment.Part:
    pairs = {(int(rng.integers(len(vocabulary))), first_doc + int(rng.integers(docs))) for _ in range(docs * 3)}
    term_ids, doc_ids = (np.array(column, np.int64) for column in zip(*sorted(pairs)))
    return segment.Part.from_rows(term_ids, doc_ids, rng.integers(1, 9, len(term_ids)), vocabulary)


def test_appending_a_later_part_equals_building_from_both():
    """``followed_by`` places the postings of appended documents instead of sorting everything
    again; it must give the very part ``from_rows`` gives over the rows of both."""
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(40)]
    for trial in range(30):
        early_vocab = list(rng.permutation(words)[:25])
        late_vocab = list(rng.permutation(words)[: int(rng.integers(1, 30))])
        early = _random_part(rng, early_vocab, 0, 50)
        late = _random_part(rng, late_vocab, 50, 20)
        joined = early.followed_by(late)
        terms, docs, tf = [], [], []
        for part in (early, late):
            for term, t in part.terms.items():
                lo, hi = part.offsets[t], part.offsets[t + 1]
                terms += [term] * int(hi - lo)
                docs += part.docs[lo:hi].tolist()
                tf += part.tf[lo:hi].tolist()
        vocabulary = list(dict.fromkeys(early.vocabulary() + late.vocabulary()))
        expected = segment.Part.from_rows(
            np.array([vocabulary.index(t) for t in terms]), np.array(docs), np.array(tf), vocabulary
        )
        assert joined.terms == expected.terms, trial
        for name in ("offsets", "docs", "tf"):
            assert np.array_equal(getattr(joined, name), getattr(expected, name)), (trial, name)
    empty = segment.Part.empty()
    assert empty.followed_by(late) is late and late.followed_by(empty) is late
    with pytest.raises(ValueError):
        late.followed_by(early)  # earlier documents after later ones: the runs would be unsorted


def test_long_queries_score_every_posting_with_the_same_result(corpus, monkeypatch):
    """From LONG_QUERY terms on, top_k scores exhaustively (MaxScore only pays off for a few
    terms); both paths must give the same ranking."""
    for kind in ("message", "event"):
        words = sorted(segment.view(kind, corpus.id).static.terms)[::7][:20]
        query = prepared(kind, corpus.id, words)
        assert len(query.terms) >= 16
        monkeypatch.setattr(scoring, "LONG_QUERY", 10**6)
        pruned = scoring.top_k(query, 9)
        monkeypatch.setattr(scoring, "LONG_QUERY", 16)
        calls = []
        real = scoring.score_all
        monkeypatch.setattr(scoring, "score_all", lambda q: calls.append(q) or real(q))
        exhaustive = scoring.top_k(query, 9)
        monkeypatch.setattr(scoring, "score_all", real)
        assert calls and all(np.array_equal(a, b) for a, b in zip(pruned, exhaustive))
        # Over many postings MaxScore again, up to twice LONG_QUERY terms.
        monkeypatch.setattr(scoring, "LONG_POSTINGS", query.postings)
        calls.clear()
        monkeypatch.setattr(scoring, "score_all", lambda q: calls.append(q) or real(q))
        again = scoring.top_k(query, 9)
        monkeypatch.setattr(scoring, "LONG_QUERY", len(query.terms) // 2)
        scoring.top_k(query, 9)
        monkeypatch.setattr(scoring, "score_all", real)
        assert len(calls) == 1 and all(np.array_equal(a, b) for a, b in zip(pruned, again))


@pytest.mark.parametrize("dense_held", [0, 10**9])
@pytest.mark.parametrize("seed_postings", [0, 10**9])
def test_maxscore_finds_the_exhaustive_top_k_however_it_seeds_and_sums(corpus, monkeypatch, dense_held, seed_postings):
    """The first threshold from one term's documents or from several, the held terms summed per
    candidate or in a document-sized array: the same top k as scoring every posting."""
    monkeypatch.setattr(scoring, "DENSE_HELD", dense_held)
    monkeypatch.setattr(scoring, "SEED_POSTINGS", seed_postings)
    for kind in ("message", "event"):
        vocabulary = sorted(segment.view(kind, corpus.id).static.terms)
        for question in QUESTIONS + [" ".join(vocabulary[i::37][:12]) for i in range(5)]:
            query = prepared(kind, corpus.id, analyze(question))
            if query is None:
                continue
            for k in (1, 5, 20):
                ids, scores = scoring.top_k(query, k)
                hit, every = scoring.score_all(query)
                expected = scoring._best(query.view.doc_ids[hit], every, k, "asc")
                assert ids.tolist() == expected[0].tolist() and scores.tolist() == expected[1].tolist()


def test_a_captured_turn_appends_a_column_in_place_and_earlier_readers_keep_theirs(corpus):
    """Appending to a doc column writes into room left at its end (no copy of every row per
    captured turn); a reader holding the column from before sees the rows it had, unchanged."""
    view = _layout(Namespace.get_by_id(corpus.id)).view
    before = view.doc_ids
    expected = before.copy()
    view.append_column("doc_ids", np.array([10**9], np.int64))
    first = view.doc_ids
    view.append_column("doc_ids", np.array([10**9 + 1, 10**9 + 2], np.int64))
    assert np.array_equal(view.doc_ids, np.concatenate([expected, [10**9, 10**9 + 1, 10**9 + 2]]))
    assert np.array_equal(before, expected) and len(first) == len(expected) + 1
    assert np.shares_memory(first, view.doc_ids)  # the second append reused the room the first one made
    segment.forget_views()


@pytest.mark.parametrize("b", [0.0, 0.75])
@pytest.mark.parametrize("max_tf", [1, 4, 300])
@pytest.mark.parametrize("postings", [30, 5_000])
@pytest.mark.parametrize("narrow", [False, True], ids=["int32", "narrowed"])
def test_posting_parts_equal_the_reference_expression_bit_for_bit(b, max_tf, postings, narrow):
    """However a posting's part is found (the expression per posting, a table over the (tf,
    length) pairs present, one shared value), it equals the reference's float expression exactly:
    equal scores must stay equal, or ties would order differently."""
    from types import SimpleNamespace

    rng = np.random.default_rng(postings + max_tf)
    doc_len = rng.integers(1, 60, size=20_000).astype(np.int32)
    docs = np.sort(rng.choice(len(doc_len), postings, replace=False))
    tf = rng.integers(1, max_tf + 1, size=postings).astype(np.int32)
    if narrow:  # as a segment stores them: a byte per posting, two from a tf of 256
        tf = segment.narrow_tf(tf)
        assert tf.dtype == (np.uint8 if max_tf < 256 else np.uint16)
    query = scoring.Query([], 1.2, b, 23.7, SimpleNamespace(doc_len=doc_len))
    term = scoring._Term("word", [], postings, 1.7 * 3.1)
    expected = [
        term.w_idf * float(t) * (1.2 + 1) / (float(t) + 1.2 * (1 - b + b * float(n) / 23.7))
        for t, n in zip(tf.tolist(), doc_len[docs].tolist())
    ]
    assert scoring._contrib(query, term, docs, tf).tolist() == expected
    parts = scoring._parts(query, term, docs, tf)
    assert np.broadcast_to(parts, (postings,)).tolist() == expected
    if b == 0.0 and max_tf == 1:
        assert np.ndim(parts) == 0  # one shared value, added as a scalar


def test_parts_keep_tf_narrow_and_join_parts_of_different_widths():
    assert segment.narrow_tf(np.array([1, 255])).dtype == np.uint8
    assert segment.narrow_tf(np.array([1, 256])).dtype == np.uint16
    assert segment.narrow_tf(np.array([70_000])).dtype == np.uint32
    assert segment.narrow_tf(np.zeros(0, np.int64)).dtype == np.uint8
    vocabulary = ["alpha", "beta"]
    first = segment.Part.from_rows(np.array([0, 1, 0]), np.array([0, 0, 1]), np.array([2, 1, 3]), vocabulary)
    later = segment.Part.from_rows(np.array([1, 0]), np.array([2, 3]), np.array([400, 1]), vocabulary)
    assert first.tf.dtype == np.uint8 and later.tf.dtype == np.uint16
    joined = first.followed_by(later)
    whole = segment.Part.from_rows(
        np.array([0, 1, 0, 1, 0]), np.array([0, 0, 1, 2, 3]), np.array([2, 1, 3, 400, 1]), vocabulary
    )
    for term in vocabulary:
        assert [a.tolist() for a in joined.slice(term)] == [a.tolist() for a in whole.slice(term)]
    assert joined.tf.dtype == np.uint16


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_parts_from_rows_in_document_order_equal_the_sorted_build(monkeypatch, chunk):
    """Postings read by row id come in document order; they are placed by term directly (in
    chunks), and give the part a sort of every (term, doc) key gives."""
    monkeypatch.setattr(segment, "PLACE_CHUNK", chunk)
    rng = np.random.default_rng(3)
    vocabulary = [f"t{i}" for i in range(40)]
    docs = np.repeat(np.arange(300), 5)  # five terms per document, in document order
    terms = np.concatenate([rng.choice(40, 5, replace=False) for _ in range(300)])
    tf = rng.integers(1, 300, len(docs))
    placed = segment.Part.from_rows(terms, docs, tf, vocabulary)
    shuffled = rng.permutation(len(docs))  # any order: the (term, doc) sort
    sorted_build = segment.Part.from_rows(terms[shuffled], docs[shuffled], tf[shuffled], vocabulary)
    assert placed.terms == sorted_build.terms
    for name in ("offsets", "docs", "tf"):
        assert np.array_equal(getattr(placed, name), getattr(sorted_build, name))
    assert placed.tf.dtype == np.uint16 and placed.docs.dtype == np.int32


def test_events_out_of_id_order_are_placed_by_a_sort(corpus, monkeypatch):
    """Events are indexed as they are written, so their postings come in id order and each is placed
    as it is read; a re-indexed event breaks that order, and the build sorts them instead: the same
    view either way."""
    from core.search.index import index_events

    identity = segment.view("event", corpus.id).identity
    outcomes = []
    placing = segment._InOrder.__call__

    def spy(self, doc_ids, lengths):
        try:
            return placing(self, doc_ids, lengths)
        except segment._Misplaced:
            outcomes.append("sorted instead")
            raise

    monkeypatch.setattr(segment._InOrder, "__call__", spy)

    def both_ways():
        placed = segment.build_view("event", corpus.id, identity)
        with monkeypatch.context() as forced:
            forced.setattr(segment._InOrder, "__call__", lambda *a: (_ for _ in ()).throw(segment._Misplaced()))
            sorted_build = segment.build_view("event", corpus.id, identity)
        for name in segment._ARRAYS:
            assert np.array_equal(getattr(placed, name), getattr(sorted_build, name)), name
        assert _postings(placed) == _postings(sorted_build) and placed.static.tf.dtype == np.uint8
        return placed

    in_order = both_ways()
    assert outcomes == []
    first = Event.select().where(Event.namespace == corpus.id).order_by(Event.id).first()
    with write_transaction():
        unindex_events(corpus.id, [first.id])
        index_events(corpus.id, [first])  # its postings now come after every later event's
    again = both_ways()
    assert outcomes == ["sorted instead"]
    assert _postings(again) == _postings(in_order)
    segment.forget_views()
    _assert_same("event", corpus.id, analyze("deadline budget rollback"))


def _saved_copy(ns_id: int) -> Path:
    pointer = json.loads((segment.saved_folder() / f"message-{ns_id}.json").read_text())
    return segment.saved_folder() / pointer["dir"]


@SAVED
def test_saving_again_never_rewrites_the_files_of_an_earlier_copy(corpus):
    current = segment.view("message", corpus.id)
    segment.save(current)
    first = _saved_copy(corpus.id)
    segment.save(current)  # the same watermark, the same process
    assert _saved_copy(corpus.id) != first and not first.exists()

    segment.forget_views()
    mapped = segment.load("message", corpus.id, corpus.created_at)  # its files mapped, not read
    before = np.array(mapped.static.docs)
    segment.save(mapped)  # rewriting them in place would cut a mapped file short: SIGBUS
    assert np.array_equal(mapped.static.docs, before)
    segment.forget_views()
    _check_all(corpus.id)


@SAVED
def test_a_save_leaves_another_processs_copy_alone_while_it_may_still_be_written(corpus):
    import os
    import time

    current = segment.view("message", corpus.id)
    segment.save(current)
    folder = segment.saved_folder()
    # Another process's copy, mid-write: its directory is there, its pointer not yet moved to it.
    theirs = folder / f"message-{corpus.id}-{current.watermark}-999999-abcd1234"
    theirs.mkdir()
    (theirs / "doc_ids.npy").write_bytes(b"half written")
    mine = _saved_copy(corpus.id)
    segment.save(current)
    assert theirs.exists() and (theirs / "doc_ids.npy").exists()
    assert not mine.exists()  # this process's own earlier copy is finished with: gone at once

    stale = time.time() - segment.FOREIGN_COPY_GRACE - 1  # untouched that long: abandoned
    os.utime(theirs, (stale, stale))
    segment.save(current)
    assert not theirs.exists()
    assert [p.name for p in folder.glob(f"message-{corpus.id}-*")] == [_saved_copy(corpus.id).name]
    segment.forget_views()
    _check_all(corpus.id)


@SAVED
def test_a_copy_that_cannot_be_saved_leaves_searches_working(corpus):
    from core.search.index import prepare_search

    segment.saved_folder().write_text("not a folder")  # every save fails, as on a full disk
    segment.forget_views()
    _check_all(corpus.id)  # built, not saved, and kept in memory: the same scores
    assert segment.view("message", corpus.id) is segment.view("message", corpus.id)  # no save tried again
    segment.forget_views()
    with pytest.raises(OSError):
        prepare_search([corpus.id])  # derivation's background pass says so (it reports the error)
    _check_all(corpus.id)


@SAVED
def test_a_saved_copy_cut_short_is_built_again_and_a_damaged_one_is_reported(corpus):
    from core.services.verify import verify

    _assert_same("message", corpus.id, analyze(QUESTIONS[0]))
    segment.save(segment.view("message", corpus.id))
    folder = _saved_copy(corpus.id)
    docs = np.load(folder / "post_docs.npy")
    np.save(folder / "post_docs.npy", docs[: len(docs) // 2])  # a valid file, half the postings
    segment.forget_views()
    assert segment.load("message", corpus.id, corpus.created_at) is None  # its shape gives it away
    _check_all(corpus.id)  # built again from SQL: the same scores
    assert verify("scale").ok

    segment.save(segment.view("message", corpus.id))
    folder = _saved_copy(corpus.id)
    docs = np.load(folder / "post_docs.npy")
    docs[len(docs) // 3] = 10**6  # damaged inside, shapes intact
    np.save(folder / "post_docs.npy", docs)
    problems = verify("scale").problems
    assert any("saved search copy" in p and "outside" in p and str(segment.saved_folder()) in p for p in problems)

    segment.forget_views()
    _check_all(corpus.id)  # a new process meets the damaged copy: built again, the same scores
    assert verify("scale").ok  # and saved over the damaged one

    segment.save(segment.view("message", corpus.id))
    folder = _saved_copy(corpus.id)
    docs = np.load(folder / "post_docs.npy")
    docs[len(docs) // 2] = -1  # in range for numpy, which would score the last document instead
    np.save(folder / "post_docs.npy", docs)
    segment.forget_views()
    _check_all(corpus.id)
    assert verify("scale").ok
