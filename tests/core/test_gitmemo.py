"""gitmemo repositories in and out: a format-2 and a legacy ``.mem`` (built with real git commits) imported
as a batch with their dates, kinds, keywords, replace chains and withdrawals, old commit hashes read
and linked, undo exact; a namespace exported as a ``.mem`` and read back; malformed repositories
refused naming what and where, with nothing written."""

from __future__ import annotations

import subprocess

import pytest

from core.errors import InvalidInputError
from core.models import AuditEntry, ImportBatch, Note, NoteAlias
from core.services import notes as N
from core.services.export import export_namespace
from core.services.gitmemo import export_gitmemo, preview_gitmemo, read_repository
from core.services.import_choices import decide
from core.services.import_commit import commit_batch
from core.services.import_preview import preview_batch
from core.services.import_undo import undo_batch
from core.timeutil import parse_timestamp
from tests.gitmemo_repos import Format2Repo, git, sample_format2, sample_legacy

NS = "proj"


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "project" / ".mem"
    return path, sample_format2(path)


def _imported(path, namespace=NS):
    preview = preview_gitmemo(path, namespace)
    commit_batch(preview.batch.id)
    return preview.batch.id


def _at(text):
    return parse_timestamp(text).timestamp()


def test_preview_lists_every_version_and_writes_no_note(store, repo):
    path, h = repo
    preview = preview_gitmemo(path, NS)
    assert preview.batch.format == "gitmemo" and preview.batch.status == "ready"
    assert preview.batch.source_system == "gitmemo format 2"
    assert [i.candidate.data["gitmemo"]["commit"] for i in preview.items] == [
        h["pool"],
        h["cache"],
        h["pool2"],
        h["flaky"],
        h["topic"],
    ]
    assert [i.candidate.data["gitmemo"]["status"] for i in preview.items] == [
        "superseded",
        "active",
        "active",
        "withdrawn",
        "active",
    ]
    assert all(i.effective_action == "add" and not i.requires_confirmation for i in preview.items)
    assert Note.select().count() == 0 and NoteAlias.select().count() == 0
    with pytest.raises(InvalidInputError, match="gitmemo"):
        decide(preview.batch.id, 1, "ignore")
    with pytest.raises(InvalidInputError, match="gitmemo"):
        preview_batch(preview.batch.id)


def test_import_keeps_dates_kinds_keywords_and_the_history(store, repo):
    path, h = repo
    _imported(path)
    pool, pool2 = N.read_note(h["pool"]), N.read_note(h["pool2"])
    assert pool.status == "superseded" and pool.superseded_by == pool2.id and pool2.supersedes == pool.id
    assert _at(pool.created_at) == _at("2026-01-05T10:00:00Z") and _at(pool.updated_at) == _at(pool2.created_at)
    assert pool.keywords == ("pool", "timeout", "Postgres") and pool.kind == "task"
    assert pool.summary == "Raised the pool size to 20."
    assert pool.content == "Changed db/pool.py: size 20, timeout 30 s."
    assert pool.branch == "main" and pool.commit == "9f3e1a2b" and pool.related_paths == ("src/pool.py",)
    assert pool.source == "import" and pool.actor == "dsh-gitmemo"
    flaky = N.read_note(h["flaky"])
    assert flaky.status == "withdrawn" and flaky.reason == "The upload test is fixed; the skip is gone."
    assert _at(flaky.updated_at) == _at("2026-01-12T12:00:00Z")
    topic = N.read_note(h["topic"])
    assert topic.kind == "topic" and topic.status == "active"
    # Trusted as history: nothing waits in quarantine, and search finds the standing versions.
    assert not N.list_notes(NS, status="quarantined")
    hits = N.search_notes(NS, ["pool"]).hits
    assert [x.id for x in hits] == [pool2.id]
    rows = list(AuditEntry.select().where(AuditEntry.subject == "note"))
    assert len(rows) == 5 and {r.action for r in rows} == {"import"}


def test_old_hashes_and_prefixes_read_the_note_and_links_expand(store, repo):
    path, h = repo
    _imported(path)
    cache = N.read_note(h["cache"])
    assert N.read_note(h["cache"][:7]).id == cache.id == N.read_note(h["cache"].upper()).id
    assert N.read_note(cache.id).id == cache.id  # its own id still reads it
    assert N.read_note(h["cache"][:9], namespace=NS).id == cache.id
    links = {link.link: link for link in N.read_note(h["topic"], expand=True).links}
    pool_link = links[h["pool"][:10]]
    assert pool_link.state == "superseded" and pool_link.resolved_id == N.read_note(h["pool2"]).id
    assert links[h["cache"]].state == "active" and links[h["cache"]].resolved_id == cache.id
    assert links[h["flaky"][:8]].state == "withdrawn"


def test_undo_leaves_the_export_byte_identical(store, repo):
    path, _ = repo
    N.write_note(NS, title="Kept", summary="Written before.", keywords=["kept", "before"], content="x", source="user")
    before = export_namespace(NS)
    audit_before = AuditEntry.select().count()
    batch = _imported(path)
    assert export_namespace(NS) != before and '"aliases"' in export_namespace(NS)
    result = undo_batch(batch)
    assert len(result.removed_note_ids) == 5 and result.batch.status == "undone"
    assert export_namespace(NS) == before
    assert NoteAlias.select().count() == 0
    # The audit trail only grows: the import's rows stay, and each note's removal is recorded.
    undone = AuditEntry.select().where(AuditEntry.action == "import_undone").count()
    assert undone == 5 and AuditEntry.select().count() == audit_before + 5 + undone
    with pytest.raises(InvalidInputError, match="already undone"):
        undo_batch(batch)
    with pytest.raises(InvalidInputError, match="undone"):
        commit_batch(batch)
    _imported(path)  # imported anew after the undo


def test_a_second_import_of_the_same_history_is_refused(store, repo):
    path, h = repo
    _imported(path)
    with pytest.raises(InvalidInputError, match="imported before"):
        preview_gitmemo(path, NS)
    assert ImportBatch.select().count() == 1
    # Into another namespace the same repository is a new set of notes.
    _imported(path, "other")
    assert N.read_note(h["cache"], namespace="other").namespace == "other"


def test_undo_is_refused_once_an_imported_note_changed(store, repo):
    path, h = repo
    batch = _imported(path)
    N.replace_note(h["cache"], summary="Keys are versioned and namespaced.", source="user")
    with pytest.raises(InvalidInputError, match="changed since the import"):
        undo_batch(batch)
    assert Note.select().count() == 6


def test_a_preview_clashing_with_a_standing_note_is_refused(store, repo):
    path, _ = repo
    N.write_note(
        NS,
        title="Cache keys versioned",
        summary="Cache keys carry a schema version.",
        keywords=["cache", "keys"],
        content="Keys are v2:<id>.",
        source="user",
    )
    with pytest.raises(InvalidInputError, match="already records this"):
        preview_gitmemo(path, NS)


def test_legacy_repository(store, tmp_path):
    path = tmp_path / "old" / ".mem"
    h = sample_legacy(path)
    preview = preview_gitmemo(path, NS)
    assert preview.batch.source_system == "gitmemo legacy"
    commit_batch(preview.batch.id)
    first, second, idea = N.read_note(h["login"]), N.read_note(h["login2"]), N.read_note(h["idea"])
    assert first.status == "superseded" and first.superseded_by == second.id
    assert first.title == "[auth] login speed" and first.keywords == ("auth", "performance")
    assert first.summary == "Login caches the session lookup." and "### Final Outcome" in first.content
    assert _at(first.created_at) == _at("2025-06-02T10:00:00Z") and first.commit == "9f3e1a2"
    assert second.status == "active" and second.summary == "Login caches the session lookup for 5 minutes."
    assert idea.status == "withdrawn" and "delete: remove" in idea.reason and idea.keywords == ("misc",)


def test_export_round_trips_through_the_importer(store, repo, tmp_path):
    path, h = repo
    _imported(path)
    N.write_note(
        NS,
        title="Retry budget",
        summary="Retries stop after 3.",
        keywords=["retry", "budget"],
        content=f"See [[{N.read_note(h['pool2']).id[:12]}]].",
        source="user",
        created_at="2026-02-01T10:00:00Z",
    )
    N.write_note(NS, title="Waits", summary="Not reviewed.", keywords=["wait", "review"], content="x", source="agent")
    out = tmp_path / "export" / ".mem"
    out.parent.mkdir()
    done = export_gitmemo(NS, out)
    assert done.notes == 6 and done.withdrawn == 1 and done.left_out == 1 and done.commits == 8
    log = git(out, "log", "--reverse", "--format=%s|%an|%aI").splitlines()
    assert log[0].startswith("init: initialize memory repo (gitmemo format 2)|Strata|")
    assert [line.split("|")[0] for line in log[1:]] == [
        "Pool timeouts fixed",
        "Cache keys versioned",
        "Pool timeouts fixed",
        "Flaky test quarantined",
        f"delete: withdraw {git(out, 'log', '--format=%s', '-1', '--diff-filter=D').split('withdraw ')[1].strip()}",
        "Database operations",
        "Retry budget",
    ]
    assert _at(log[1].split("|")[2]) == _at("2026-01-05T10:00:00Z")
    assert (out / ".gitmemo-format").read_text() == "2"
    assert git(out, "status", "--porcelain") == "" and git(out, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    replace = git(out, "log", "-1", "--format=%B", "--grep=GitMemo-Type: replace")
    assert "GitMemo-Replaces: " in replace and "GitMemo-Keyword: Postgres" in replace

    # Deterministic: the same notes give the same commits.
    again = tmp_path / "again"
    assert export_gitmemo(NS, again).head == done.head

    before = {n.title + str(n.created_at[:10]): n for n in N.list_notes(NS) if n.status != "quarantined"}
    _imported(out, "copy")
    after = {n.title + str(n.created_at[:10]): n for n in N.list_notes("copy")}
    assert sorted(after) == sorted(before)
    for key, note in after.items():
        old = before[key]
        assert (note.status, note.kind, note.keywords) == (old.status, old.kind, old.keywords)
        assert _at(note.created_at) == _at(old.created_at)
    retry = next(n for n in after.values() if n.title == "Retry budget")
    (link,) = N.read_note(retry.id, expand=True).links
    assert link.state == "active" and link.title == "Pool timeouts fixed"
    topic = next(n for n in after.values() if n.title == "Database operations")
    states = [link.state for link in N.read_note(topic.id, expand=True).links]
    assert states == ["superseded", "active", "withdrawn"]


def test_export_refuses_a_directory_that_is_not_empty(store, repo, tmp_path):
    path, _ = repo
    _imported(path)
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    with pytest.raises(InvalidInputError, match="not an empty directory"):
        export_gitmemo(NS, full)
    assert [p.name for p in full.iterdir()] == ["x"] and not list(tmp_path.glob(".full.strata-tmp-*"))


# ----------------------------------------------------------------------------- malformed repositories


def _nothing_written():
    assert ImportBatch.select().count() == 0 and Note.select().count() == 0


def test_a_folder_that_is_no_git_repository(store, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InvalidInputError, match=rf"{plain}: not a git repository"):
        preview_gitmemo(plain, NS)
    with pytest.raises(InvalidInputError, match="no such directory"):
        preview_gitmemo(tmp_path / "missing", NS)
    _nothing_written()


def test_the_project_root_instead_of_its_mem(store, repo):
    path, _ = repo
    git(path.parent, "init", "-q")
    with pytest.raises(InvalidInputError, match=r"a project folder, not its memory: give .*\.mem"):
        read_repository(path.parent)
    with pytest.raises(InvalidInputError, match="not a gitmemo repository itself"):
        read_repository(path / "entries")


def test_a_bad_entry_file_is_named_with_its_commit(store, tmp_path):
    path = tmp_path / ".mem"
    repo = Format2Repo(path)
    repo.add("Good one", "Fine.", ["good", "one"], "Body.", date="2026-01-05T10:00:00Z")
    (path / "entries" / "20260106T000000.000Z-00000000-broken.md").write_text("---\nkind: task\n---\n# Broken\n")
    git(path, "add", "entries")
    git(path, "commit", "-q", "-F", "-", input="Broken\n\nNo outcome.\n\nGitMemo-Type: add\nGitMemo-Keyword: a\n")
    bad = git(path, "rev-parse", "HEAD").strip()
    with pytest.raises(InvalidInputError) as caught:
        preview_gitmemo(path, NS)
    message = str(caught.value)
    assert bad[:12] in message and "broken.md" in message and "Final Outcome" in message
    _nothing_written()


def test_a_field_that_breaks_the_note_rules_is_named(store, tmp_path):
    path = tmp_path / ".mem"
    Format2Repo(path).add("One keyword", "Fine.", ["lonely"], "Body.", date="2026-01-05T10:00:00Z")
    with pytest.raises(InvalidInputError, match=r"One keyword.*keywords: 1 distinct"):
        preview_gitmemo(path, NS)
    _nothing_written()


def test_a_trailer_naming_a_missing_note(store, tmp_path):
    path = tmp_path / ".mem"
    repo = Format2Repo(path)
    first = repo.add("First", "Fine.", ["first", "one"], "Body.", date="2026-01-05T10:00:00Z")
    git(path, "rm", "-q", "--", repo.files[first])
    git(
        path,
        "commit",
        "-q",
        "-F",
        "-",
        input="delete: withdraw x\n\nGone.\n\nGitMemo-Type: delete\nGitMemo-Deletes: deadbeef00\n",
    )
    bad = git(path, "rev-parse", "HEAD").strip()
    with pytest.raises(InvalidInputError) as caught:
        preview_gitmemo(path, NS)
    assert bad[:12] in str(caught.value) and "GitMemo-Deletes: deadbeef00 names no earlier" in str(caught.value)
    _nothing_written()


def test_git_is_needed(store, repo, monkeypatch):
    path, _ = repo
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(InvalidInputError, match="git is not installed"):
        preview_gitmemo(path, NS)
    _nothing_written()


def test_git_log_in_the_export_shows_the_history(store, repo, tmp_path):
    path, _ = repo
    _imported(path)
    out = tmp_path / "out"
    export_gitmemo(NS, out)
    shown = subprocess.run(["git", "-C", str(out), "log", "--stat"], capture_output=True, text=True, check=True).stdout
    assert "GitMemo-Type: delete" in shown and "entries/" in shown
