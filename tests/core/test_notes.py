"""Task-outcome notes: the validation contract, digest duplicates, replace and delete, topic pages,
``[[id]]`` link expansion, keyword search with its two scoring modes and recency bonus, snapshot
pages, and quarantine for notes an untrusted source wrote."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from core.db import db
from core.errors import InvalidInputError, NotFoundError
from core.migrations import SCHEMA_VERSION
from core.models import AuditEntry, Note, SchemaVersion
from core.services import notes as N
from core.services.policy import Policy, set_policy

NS = "proj"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def note(title="Pool timeouts fixed", *, keywords=("pool", "timeout"), source="user", **extra):
    fields = dict(
        title=title,
        summary=extra.pop("summary", f"Summary of {title}."),
        keywords=list(keywords),
        content=extra.pop("content", f"What was done about {title}."),
    )
    fields.update(extra)
    return N.write_note(NS, source=source, **fields)


# ----------------------------------------------------------------------------- validation


GOOD = dict(title="A title", summary="A summary.", keywords=["alpha", "beta"], content="Body.")


@pytest.mark.parametrize(
    "change, field",
    [
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"title": "two\nlines"}, "title"),
        ({"title": "bell\x07"}, "title"),
        ({"title": "GitMemo-Type: add"}, "title"),
        ({"title": 12}, "title"),
        ({"summary": ""}, "summary"),
        ({"summary": "y" * 4001}, "summary"),
        ({"summary": "fine\x1bescape"}, "summary"),
        ({"summary": "fine\nstrata-replaces: abc"}, "summary"),
        ({"summary": "del\x7f"}, "summary"),
        ({"content": " \n\t "}, "content"),
        ({"content": "é" * (512 * 1024 + 1)}, "content"),  # fewer characters than 1 MiB, more bytes
        ({"content": "nul\x00"}, "content"),
        ({"content": "vt\x0b"}, "content"),
        ({"keywords": ["only"]}, "keywords"),
        ({"keywords": ["Pool", "POOL", "ｐｏｏｌ"]}, "distinct entries after normalization"),
        ({"keywords": [f"k{i}" for i in range(13)]}, "keywords"),
        ({"keywords": ["ok", "z" * 65]}, "keywords[1]"),
        ({"keywords": ["ok", "two\nlines"]}, "keywords[1]"),
        ({"keywords": ["ok", "GITMEMO-Keyword: x"]}, "keywords[1]"),
        ({"keywords": ["ok", "ctl\x01"]}, "keywords[1]"),
        ({"keywords": "alpha, beta"}, "keywords"),
        ({"kind": "diary"}, "kind"),
        ({"commit": "not-a-sha"}, "commit"),
        ({"commit": "abc12"}, "commit"),
        ({"branch": "a\nb"}, "branch"),
        ({"related_branches": [f"b{i}" for i in range(33)]}, "related_branches"),
        ({"related_branches": ["ok", "x" * 257]}, "related_branches[1]"),
        ({"related_paths": ["/etc/passwd"]}, "related_paths[0]"),
        ({"related_paths": ["C:\\work\\a.py"]}, "related_paths[0]"),
        ({"related_paths": ["src/../../x"]}, "related_paths[0]"),
        ({"related_paths": ["."]}, "related_paths[0]"),
        ({"related_paths": ["a/.."]}, "related_paths[0]"),
        ({"related_paths": [f"p{i}" for i in range(129)]}, "related_paths"),
        ({"related_paths": ["ok", "p" * 1025]}, "related_paths[1]"),
    ],
)
def test_each_rule_refuses_naming_the_field(store, change, field):
    with pytest.raises(InvalidInputError) as refused:
        N.write_note(NS, source="user", **{**GOOD, **change})
    assert field in str(refused.value)
    assert Note.select().count() == 0


def test_the_limits_themselves_are_accepted_and_values_are_normalised(store):
    written = N.write_note(
        NS,
        title="  " + "t" * 200 + "  ",
        summary="s" * 4000,
        keywords=["  Pool ", "POOL", "ｐｏｏｌ", *[f"k{i}" for i in range(9)]],  # 12 given, 10 distinct
        content="é" * (512 * 1024),  # exactly 1 MiB of UTF-8
        related_paths=["./src//a/../b.py", "src\\b.py", "docs/x.md"],
        related_branches=["main", "main", "ｆｅａｔ"],
        commit="ABCDEF1",
        source="user",
    )
    assert written.title == "t" * 200
    assert written.keywords[0] == "Pool" and len(written.keywords) == 10  # the first spelling is kept
    assert written.related_paths == ("src/b.py", "docs/x.md")
    assert written.related_branches == ("main", "feat")
    assert written.commit == "abcdef1"
    ok = N.write_note(NS, source="user", **{**GOOD, "content": "tab\there\r\nand lines\n"})
    assert "\t" in ok.content


def test_search_keywords_are_one_to_fifteen(store):
    note()
    with pytest.raises(InvalidInputError, match="query"):
        N.search_notes(NS, [])
    with pytest.raises(InvalidInputError, match="query"):
        N.search_notes(NS, [f"k{i}" for i in range(16)])
    assert N.search_notes(NS, [f"k{i}" for i in range(14)] + ["pool"]).total == 1
    with pytest.raises(InvalidInputError, match="mode"):
        N.search_notes(NS, "pool", mode="bm25")


# ----------------------------------------------------------------------------- digest and duplicates


def test_an_active_duplicate_is_refused_naming_it_and_code_context_does_not_count(store):
    first = note(keywords=("Pool", "timeout"))
    assert first.digest == N.note_digest(first.title, first.summary, ["TIMEOUT", "pool"], first.content, "task")
    with pytest.raises(N.DuplicateNoteError) as refused:
        note(keywords=("timeout", "POOL", "pool"), branch="other", related_paths=["x.py"])
    assert refused.value.existing_id == first.id and first.id in str(refused.value)
    assert note(keywords=("pool", "timeout", "extra")).digest != first.digest  # another keyword: another note
    assert note(kind="topic", keywords=("pool", "timeout")).kind == "topic"  # the kind is part of the digest


def test_a_withdrawn_note_may_be_written_again(store):
    first = note()
    N.delete_note(first.id, reason="wrong")
    again = note()
    assert again.id != first.id and again.status == "active"


# ----------------------------------------------------------------------------- replace and delete


def test_replace_supersedes_in_one_step_and_every_version_stays_readable(store):
    v1 = note(summary="Raised the pool to 20.")
    v2 = N.replace_note(v1.id, summary="Raised the pool to 50.", reason="20 was not enough", source="user")
    v3 = N.replace_note(v2.id[:9], related_paths=["db/pool.py"], source="user")  # same digest, new context
    assert v3.digest == v2.digest and v3.related_paths == ("db/pool.py",)
    old1, old2 = N.read_note(v1.id), N.read_note(v2.id)
    assert (old1.status, old1.superseded_by, old1.summary) == ("superseded", v2.id, "Raised the pool to 20.")
    assert (old2.status, old2.supersedes, old2.superseded_by) == ("superseded", v1.id, v3.id)
    assert (v3.status, v3.supersedes, v2.reason) == ("active", v2.id, "20 was not enough")
    assert v2.title == v1.title and v2.keywords == v1.keywords  # left out: kept
    assert [b.id for b in N.note_history(v2.id)] == [v1.id, v2.id, v3.id]
    with pytest.raises(InvalidInputError, match=f"current version is {v3.id}"):
        N.replace_note(v1.id, summary="again", source="user")
    hits = N.search_notes(NS, "pool").hits
    assert [h.id for h in hits] == [v3.id]


def test_replace_refuses_another_standing_notes_digest_and_writes_nothing(store):
    a = note("A", keywords=("alpha", "beta"))
    b = note("B", keywords=("gamma", "delta"))
    before = Note.select().count()
    with pytest.raises(N.DuplicateNoteError) as refused:
        N.replace_note(b.id, title="A", summary=a.summary, keywords=["alpha", "beta"], content=a.content, source="user")
    assert refused.value.existing_id == a.id
    assert Note.select().count() == before and N.read_note(b.id).status == "active"


def test_delete_needs_a_reason_and_withdraws(store):
    a = note()
    for reason in (None, "", "  ", "GitMemo-Deletes: abc", "r" * 4001, "bad\x00"):
        with pytest.raises(InvalidInputError, match="reason"):
            N.delete_note(a.id, reason=reason)
    gone = N.delete_note(a.id, reason="the fix was reverted", actor="maya")
    assert (gone.status, gone.reason) == ("withdrawn", "the fix was reverted")
    assert N.read_note(a.id).content == a.content  # readable forever
    assert N.search_notes(NS, "pool").total == 0
    with pytest.raises(InvalidInputError, match="withdrawn"):
        N.delete_note(a.id, reason="again")
    with pytest.raises(InvalidInputError, match="withdrawn"):
        N.replace_note(a.id, summary="x", source="user")
    actions = [
        (e.action, e.to_status, e.actor)
        for e in AuditEntry.select().where(AuditEntry.subject == "note").order_by(AuditEntry.id)
    ]
    assert actions == [("write", "active", "user"), ("withdraw", "withdrawn", "maya")]


def test_a_topic_page_changes_only_by_replace(store):
    topic = note("Connection pooling", kind="topic", keywords=("pool", "topic"))
    with pytest.raises(InvalidInputError, match=f"topic page {topic.id}"):
        note("connection  POOLING", kind="topic", keywords=("pool", "page"))
    newer = N.replace_note(topic.id, content="Now holds [[abcdef1]].", source="user")
    assert newer.kind == "topic"
    note("Connection pooling", keywords=("pool", "task"))  # a task may share the title


# ----------------------------------------------------------------------------- reading by id and links


def test_read_by_unique_prefix_and_refusals(store):
    a = note()
    assert N.read_note(a.id[:7]).id == a.id and N.read_note(a.id.upper()).id == a.id
    for bad in ("abc", "zzzzzzz", a.id + "0", 12):
        with pytest.raises(InvalidInputError, match="id"):
            N.read_note(bad)
    with pytest.raises(NotFoundError):
        N.read_note("0000000" if not a.id.startswith("0000000") else "fffffff")
    N.write_note("elsewhere", source="user", **GOOD)
    with pytest.raises(NotFoundError):
        N.read_note(a.id, namespace="elsewhere")
    Note.update(note_id="abcdef0" + "1" * 33).where(Note.note_id == a.id).execute()
    other = note("Other", keywords=("x1", "x2"))
    Note.update(note_id="abcdef0" + "2" * 33).where(Note.note_id == other.id).execute()
    with pytest.raises(InvalidInputError, match="ambiguous"):
        N.read_note("abcdef0")
    assert N.read_note("abcdef01").title == a.title


def test_links_resolve_one_hop_with_their_states(store):
    live = note("Live", keywords=("l1", "l2"))
    old = note("Old", keywords=("o1", "o2"))
    mid = N.replace_note(old.id, summary="middle", source="user")
    last = N.replace_note(mid.id, summary="last", source="user")
    dropped = note("Dropped", keywords=("d1", "d2"))
    N.delete_note(dropped.id, reason="no longer true")
    gone_line = note("Replaced then withdrawn", keywords=("w1", "w2"))
    gone_next = N.replace_note(gone_line.id, summary="then", source="user")
    N.delete_note(gone_next.id, reason="dropped")
    waiting = note("Waiting", keywords=("q1", "q2"), source="agent")
    a = note("Ambiguous A", keywords=("a1", "a2"))
    b = note("Ambiguous B", keywords=("b1", "b2"))
    Note.update(note_id="abcdef0" + "1" * 33).where(Note.note_id == a.id).execute()
    Note.update(note_id="abcdef0" + "2" * 33).where(Note.note_id == b.id).execute()
    body = (
        f"see [[{live.id[:10]}]], [[{old.id}]] and [[{dropped.id}]]; again [[{live.id[:10]}]]. "
        f"[[{gone_line.id[:8]}]] [[{waiting.id}]] [[1234567]] [[abcdef0]] [[{'f' * 64}]] [[not-hex]]"
    )
    topic = note("Pooling", kind="topic", keywords=("pool", "map"), content=body)
    links = {link.link: link for link in N.read_note(topic.id, expand=True).links}
    assert list(links) == [
        live.id[:10],
        old.id,
        dropped.id,
        gone_line.id[:8],
        waiting.id,
        "1234567",
        "abcdef0",
        "f" * 64,
    ]
    assert (links[live.id[:10]].state, links[live.id[:10]].resolved_id) == ("active", live.id)
    assert (links[old.id].state, links[old.id].resolved_id, links[old.id].summary) == ("superseded", last.id, "last")
    assert (links[dropped.id].state, links[dropped.id].resolved_id) == ("withdrawn", dropped.id)
    assert (links[gone_line.id[:8]].state, links[gone_line.id[:8]].resolved_id) == ("withdrawn", gone_next.id)
    assert links[waiting.id].state == "quarantined" and links[waiting.id].summary is None
    for dangling in ("1234567", "abcdef0", "f" * 64):
        assert links[dangling].state == "dangling" and links[dangling].resolved_id is None
    assert "ambiguous" in links["abcdef0"].error
    assert N.read_note(topic.id).links is None


def test_link_expansion_stops_at_sixteen_hops_and_thirty_two_links(store):
    first = note("Chain", keywords=("c1", "c2"))
    versions = [first]
    for i in range(N.MAX_HOPS + 1):
        versions.append(N.replace_note(versions[-1].id, summary=f"v{i + 1}", source="user"))
    near = note("Near", keywords=("n1", "n2"), content=f"[[{versions[1].id}]]")
    far = note("Far", keywords=("f1", "f2"), content=f"[[{first.id}]]")
    (ok,) = N.read_note(near.id, expand=True).links
    assert (ok.state, ok.resolved_id, ok.error) == ("superseded", versions[-1].id, None)  # 16 hops
    (cut,) = N.read_note(far.id, expand=True).links
    assert cut.state == "superseded" and cut.resolved_id == versions[N.MAX_HOPS].id and "16" in cut.error
    many = " ".join(f"[[{i:07x}]]" for i in range(40))
    wide = note("Wide", keywords=("w1", "w2"), content=many)
    links = N.read_note(wide.id, expand=True).links
    assert [link.link for link in links] == [f"{i:07x}" for i in range(N.MAX_LINKS)]


# ----------------------------------------------------------------------------- scoring


def test_rarity_weights_and_recency_bonus_match_the_formula():
    assert [round(N.keyword_weight(n, df), 3) for n, df in ((40, 40), (40, 10), (40, 1), (1, 1))] == [
        0.012,
        1.362,
        3.308,
        0.288,
    ]
    assert N.keyword_weight(0, 0) == 0.0 and N.keyword_weight(3, 9) == N.keyword_weight(3, 3)
    days = [0, 30, 60, 105, 150, 180, 400]
    assert [N.recency_bonus(d) for d in days] == [0.5, 0.5, 0.40, 0.25, 0.10, 0.0, 0.0]


@pytest.mark.parametrize("days, bonus", [(10, 0.5), (30, 0.5), (60, 0.40), (105, 0.25), (150, 0.10), (180, 0.0)])
def test_the_recency_bonus_is_added_to_a_hit(store, days, bonus):
    note(created_at=T0.isoformat())
    (hit,) = N.search_notes(NS, ["pool"], mode="count", now=T0 + timedelta(days=days)).hits
    assert hit.score == pytest.approx(1 + bonus)
    (weighted,) = N.search_notes(NS, ["pool"], now=T0 + timedelta(days=days)).hits
    assert weighted.score == round(N.keyword_weight(1, 1) + bonus, 2)


def test_one_rare_keyword_beats_two_common_ones_when_weighted(store):
    rare = note("Deadlock in the scheduler", keywords=("scheduler", "deadlock"), created_at=T0.isoformat())
    common = [note(f"Release {i}", keywords=("build", "deploy", f"r{i}"), created_at=T0.isoformat()) for i in range(3)]
    query = ["deadlock", "build", "deploy"]
    weighted = N.search_notes(NS, query, now=T0)
    counted = N.search_notes(NS, query, mode="count", now=T0)
    assert weighted.hits[0].id == rare.id and counted.hits[-1].id == rare.id
    assert {h.id for h in weighted.hits} == {h.id for h in counted.hits} == {rare.id, *(c.id for c in common)}
    n = 4
    assert weighted.hits[0].score == round(N.keyword_weight(n, 1) + 0.5, 2)
    assert weighted.hits[1].score == round(2 * N.keyword_weight(n, 3) + 0.5, 2)
    assert counted.hits[0].score == 2.5 and counted.hits[-1].score == 1.5


def test_in_count_mode_one_more_keyword_beats_recency(store):
    old = note("Old pool fix", keywords=("pool", "timeout"), created_at=(T0 - timedelta(days=400)).isoformat())
    new = note("New pool note", keywords=("pool", "misc"), created_at=T0.isoformat())
    hits = N.search_notes(NS, ["pool", "timeout"], mode="count", now=T0).hits
    assert [h.id for h in hits] == [old.id, new.id] and [h.score for h in hits] == [2.0, 1.5]
    assert hits[0].matched_keywords == ("pool", "timeout")


def test_ties_break_by_date_then_id_descending(store):
    same = T0.isoformat()
    a = note("Alpha pool", keywords=("pool", "a"), created_at=same)
    b = note("Beta pool", keywords=("pool", "b"), created_at=same)
    c = note("Gamma pool", keywords=("pool", "c"), created_at=(T0 - timedelta(days=1)).isoformat())
    hits = N.search_notes(NS, ["pool"], now=T0 + timedelta(days=2)).hits
    assert len({h.score for h in hits}) == 1
    assert [h.id for h in hits] == sorted([a.id, b.id], reverse=True) + [c.id]


def test_matching_is_substring_after_nfkc_and_casefold_over_title_summary_and_keywords(store):
    a = note("Straße renamed", keywords=("ＴＬＳ", "rename"), summary="The   Handshake\nfailed")
    b = note("Unrelated", keywords=("x1", "x2"), content="strasse tls handshake")  # content is not searched
    for query in (["STRASSE"], ["tls"], ["shake fail"], ["ame"], ["handshake failed"]):
        assert [h.id for h in N.search_notes(NS, query).hits] == [a.id], query
    assert N.search_notes(NS, ["100%"]).total == 0 and N.search_notes(NS, ["_"]).total == 0
    assert b.id not in {h.id for h in N.search_notes(NS, "strasse, tls").hits}


# ----------------------------------------------------------------------------- pages and snapshots


def test_pages_are_tied_to_a_snapshot_and_a_stale_one_is_refused(store):
    for i in range(5):
        note(f"Pool note {i}", keywords=("pool", f"n{i}"))
    first = N.search_notes(NS, "pool", limit=2)
    assert first.total == 5 and first.next_skip == 2 and len(first.hits) == 2
    second = N.search_notes(NS, "pool", limit=2, skip=2, snapshot=first.snapshot)
    last = N.search_notes(NS, "pool", limit=2, skip=4, snapshot=first.snapshot)
    assert last.next_skip is None and len(last.hits) == 1
    assert len({h.id for h in first.hits + second.hits + last.hits}) == 5
    note("Another pool note", keywords=("pool", "late"))
    with pytest.raises(InvalidInputError, match="stale"):
        N.search_notes(NS, "pool", limit=2, skip=2, snapshot=first.snapshot)
    for bad in ("yesterday", "1.2.3", 7):
        with pytest.raises(InvalidInputError, match="snapshot"):
            N.search_notes(NS, "pool", snapshot=bad)
    fresh = N.search_notes(NS, "pool", limit=2)
    assert fresh.snapshot != first.snapshot and fresh.total == 6
    for bad_skip in (-1, "2", True):
        with pytest.raises(InvalidInputError, match="skip"):
            N.search_notes(NS, "pool", skip=bad_skip)


# ----------------------------------------------------------------------------- quarantine


def test_an_agents_note_waits_for_a_person_unless_the_policy_trusts_agents(store):
    waiting = note(source="agent", actor="planner")
    assert waiting.status == "quarantined" and waiting.actor == "planner"
    assert N.search_notes(NS, "pool").total == 0
    assert N.read_note(waiting.id).content == waiting.content
    with pytest.raises(N.DuplicateNoteError):
        note(source="agent")
    with pytest.raises(InvalidInputError, match="quarantined"):
        N.replace_note(waiting.id, summary="x")
    approved = N.approve_note(waiting.id, actor="maya", reason="checked the diff")
    assert approved.status == "active" and [h.id for h in N.search_notes(NS, "pool").hits] == [waiting.id]
    with pytest.raises(InvalidInputError, match="quarantined"):
        N.approve_note(waiting.id, actor="maya")
    set_policy(NS, Policy(trust=("agent",)))
    assert note("Trusted", keywords=("t1", "t2"), source="agent").status == "active"


def test_a_quarantined_replacement_leaves_the_old_version_standing_until_approved(store):
    v1 = note()
    pending = N.replace_note(v1.id, summary="The agent's correction.", source="agent")
    assert pending.status == "quarantined" and N.read_note(v1.id).status == "active"
    assert [h.id for h in N.search_notes(NS, "pool").hits] == [v1.id]
    N.approve_note(pending.id, actor="maya")
    assert N.read_note(v1.id).superseded_by == pending.id
    assert [h.id for h in N.search_notes(NS, "pool").hits] == [pending.id]


def test_approving_a_replacement_of_a_version_that_no_longer_stands_is_refused(store):
    v1 = note()
    pending = N.replace_note(v1.id, summary="Correction.", source="agent")
    N.delete_note(v1.id, reason="obsolete")
    with pytest.raises(InvalidInputError, match="withdrawn"):
        N.approve_note(pending.id, actor="maya")
    assert N.read_note(pending.id).status == "quarantined"


# ----------------------------------------------------------------------------- schema


def test_a_version_23_store_gains_the_note_table(db_url, store):
    from core.api import open_store

    db.execute_sql('DROP TABLE "notealias"')  # schema 25 refers to the note table
    db.execute_sql('DROP TABLE "note"')
    SchemaVersion.delete().execute()
    SchemaVersion.create(version=23, applied_at="2026-12-01T00:00:00+00:00")
    db.close()
    assert open_store(db_url).schema_version == SCHEMA_VERSION >= 24
    assert note().status == "active"
