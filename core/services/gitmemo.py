"""gitmemo repositories in and out: import a ``.mem`` repository's notes as an import batch, and write
a namespace's notes as a ``.mem`` repository.

**Import.** ``preview_gitmemo`` reads the repository with the ``git`` command (``git log``, ``git
cat-file``; never a network call), follows its history in commit order and checks every version under
the rules of ``write_note``; any problem raises naming the commit and file, and nothing is stored.
What passes becomes an import batch (``ImportBatch`` format ``gitmemo``, one ``ImportItem`` per note
version, every item an ``add`` that needs no person: the history is taken whole). ``commit_gitmemo``
writes the notes with their original dates, kinds and keywords, the replace chains (a replaced version
superseded by its successor) and withdrawals (with the delete commit's reason), the commit hashes as
``NoteAlias`` rows (so ``read_note`` finds a note by its old hash or a prefix of it, and ``[[old
hash]]`` links resolve), one audit row per note, and an ``ImportChange`` row for each row written.
``undo_gitmemo`` deletes exactly those rows. Imported notes keep the status they had in the source:
the repository is history a person chose to import, not an agent's new claim, so nothing is
quarantined.

**Export.** ``export_gitmemo`` writes the namespace's notes (quarantined ones left out) as a format-2
repository: an init commit, then one commit per note version in time order (add, or replace naming
the version it replaces) and a delete commit per withdrawal, with fixed author and committer and the
notes' own dates, so the same notes give the same commits. ``[[id]]`` links to notes written earlier
become ``[[commit hash]]`` of that version, as gitmemo links.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from core.db import insert_one, read_snapshot, write_transaction
from core.errors import InvalidInputError, NotFoundError
from core.imports import gitmemo as gm
from core.models import AuditEntry, ImportBatch, ImportChange, ImportItem, Namespace, Note, NoteAlias
from core.services.import_batches import (
    ImportPreview,
    UndoResult,
    batch_items,
    batch_row,
    get_batch,
    load_batch,
    namespace_revision,
)
from core.services.notes import STANDING, imported_note_values
from core.services.spaces import get_namespace, get_or_create_namespace, validate_name
from core.text import normalize
from core.timeutil import now_iso, parse_timestamp, to_iso

GIT_TIMEOUT = 60  # seconds per git process
AUTHOR = ("Strata", "strata@localhost")  # author and committer of an export
IMPORT_ACTOR = "gitmemo-import"
MAX_VERSIONS = 20_000
_LINK = re.compile(r"\[\[([0-9a-fA-F]{7,64})\]\]")
_NOTE_IMAGE = ("status", "superseded_by", "reason", "updated_at")


# ----------------------------------------------------------------------------- git


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a git process: none of the caller's GIT_* variables (a GIT_DIR would point
    it elsewhere), no system or global configuration (hooks, signing, templates of the person's
    own), no prompt, C locale."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
        LANG="C",
    )
    env.update(extra or {})
    return env


def _git(repo: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
    """Run ``git -C repo args``; its output, or InvalidInputError with git's message."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "-c", "core.quotePath=false", *args],
            input=input,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            env=_env(env),
            check=False,
        )
    except FileNotFoundError:
        raise InvalidInputError("git is not installed (gitmemo repositories are read and written with it)") from None
    except subprocess.TimeoutExpired:
        raise InvalidInputError(f"{repo}: git {args[0]} took more than {GIT_TIMEOUT} s") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InvalidInputError(f"{repo}: git {args[0]} failed: {message[-1] if message else done.returncode}")
    return done.stdout


def _text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{where}: not UTF-8 text (byte {exc.start})") from None


def _commit_exists(repo: Path, ref: str) -> bool:
    try:
        _git(repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}")
        return True
    except InvalidInputError:
        return False


def _blobs(repo: Path, wanted: list[str]) -> dict[str, tuple[str, bytes]]:
    """``rev:path`` → (blob id, bytes), read by one ``git cat-file --batch``."""
    if not wanted:
        return {}
    out = _git(repo, "cat-file", "--batch", input="".join(f"{w}\n" for w in wanted).encode("utf-8"))
    found: dict[str, tuple[str, bytes]] = {}
    at = 0
    for name in wanted:
        end = out.index(b"\n", at)
        header = out[at:end].decode("utf-8", "replace").split()
        if len(header) != 3:
            raise InvalidInputError(f"{repo}: {name} is missing from the repository")
        size = int(header[2])
        found[name] = (header[0], out[end + 1 : end + 1 + size])
        at = end + 1 + size + 1
    return found


@dataclass
class _Commit:
    hash: str
    author: str
    date: str
    message: str
    changes: list[tuple[str, str]]  # (status letter, path)


def _log(repo: Path, *revs: str) -> list[_Commit]:
    raw = _git(
        repo,
        "log",
        "--reverse",
        "--topo-order",
        "--no-renames",
        "--name-status",
        "--format=%x1e%H%x1f%an%x1f%aI%x1f%B%x1f",
        *revs,
        "--",
    )
    text = _text(raw, f"{repo}: git log")
    commits = []
    for chunk in text.split("\x1e")[1:]:
        parts = chunk.split("\x1f")
        if len(parts) != 5:
            raise InvalidInputError(f"{repo}: git log gave a record that cannot be read")
        changes = []
        for line in parts[4].splitlines():
            if "\t" in line:
                status, path = line.split("\t", 1)
                changes.append((status[:1], path))
        commits.append(_Commit(parts[0].strip(), parts[1], parts[2], parts[3], changes))
    return commits


def _is_entry(path: str) -> bool:
    return path.startswith(gm.ENTRIES) and path.endswith(".md") and "/" not in path[len(gm.ENTRIES) :]


# ----------------------------------------------------------------------------- reading a repository


@dataclass
class _Version:
    key: str  # the commit hash (a legacy commit writing several entries: hash:path)
    commit: str
    path: str
    blob: str
    values: dict[str, Any]  # imported_note_values
    created_at: str
    actor: str
    kind_of_write: str  # add | replace | legacy
    status: str = "active"
    supersedes: str | None = None  # key
    superseded_by: str | None = None  # key
    reason: str | None = None
    updated_at: str = ""
    withdrawn_by: str | None = None  # the delete commit
    aliases: list[str] = field(default_factory=list)


@dataclass
class GitmemoRepository:
    """A ``.mem`` repository as read: its format, the commit read and every note version in order."""

    path: str
    format: str  # "2" or "legacy"
    head: str
    versions: list[_Version]
    warnings: list[str]


def _where(repo: Path, commit: _Commit, path: str | None = None) -> str:
    subject = commit.message.split("\n", 1)[0].strip()
    return f"{repo}: commit {commit.hash[:12]} ({subject[:60]!r})" + (f", {path}" if path else "")


def _iso(value: Any, where: str) -> str:
    return to_iso(parse_timestamp(str(value), where=where))


def _open_repo(path: str | Path) -> Path:
    repo = Path(path).expanduser()
    if not repo.is_dir():
        raise InvalidInputError(f"{repo}: no such directory (give the .mem directory of a project)")
    if (repo / ".mem").is_dir() and not (repo / "entries").is_dir():
        raise InvalidInputError(f"{repo}: a project folder, not its memory: give {repo / '.mem'}")
    try:
        top = _text(_git(repo, "rev-parse", "--show-toplevel"), str(repo)).strip()
    except InvalidInputError as exc:
        raise InvalidInputError(f"{repo}: not a git repository ({exc})") from None
    if Path(top).resolve() != repo.resolve():
        hint = f"; its {repo / '.mem'} may be" if (repo / ".mem").is_dir() else ""
        raise InvalidInputError(
            f"{repo}: not a gitmemo repository itself but a folder of the git repository {top}{hint}"
        )
    return repo


def read_repository(path: str | Path) -> GitmemoRepository:
    """Every note version of a ``.mem`` repository, checked; InvalidInputError naming the commit and
    file of the first problem."""
    repo = _open_repo(path)
    if _commit_exists(repo, "refs/heads/main"):
        head_ref = "refs/heads/main"
    elif _commit_exists(repo, "HEAD"):
        head_ref = "HEAD"
    else:
        raise InvalidInputError(f"{repo}: the repository has no commits")
    head = _text(_git(repo, "rev-parse", f"{head_ref}^{{commit}}"), str(repo)).strip()
    marker = _blobs(repo, [f"{head}:{gm.FORMAT_FILE}"]) if _has_path(repo, head, gm.FORMAT_FILE) else {}
    fmt = "2" if marker and marker[f"{head}:{gm.FORMAT_FILE}"][1].strip() == b"2" else "legacy"
    if fmt == "2" and head_ref != "refs/heads/main":
        raise InvalidInputError(f"{repo}: a format-2 repository without refs/heads/main is damaged")
    reader = _Reader(repo)
    versions = reader.format2(head) if fmt == "2" else reader.legacy()
    if not versions:
        raise InvalidInputError(f"{repo}: no gitmemo entry was found (entries/*.md in commit history)")
    return GitmemoRepository(str(repo), fmt, head, versions, reader.warnings)


def _has_path(repo: Path, rev: str, path: str) -> bool:
    return bool(_git(repo, "ls-tree", "--name-only", rev, "--", path).strip())


class _Reader:
    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.versions: dict[str, _Version] = {}
        self.warnings: list[str] = []

    def _find(self, commit: _Commit, trailer: str, value: str | None) -> _Version:
        where = _where(self.repo, commit)
        wanted = (value or "").strip().lower()
        if not gm.is_hash(wanted):
            raise InvalidInputError(f"{where}: {trailer} must name a commit hash, got {value!r}")
        found = [v for k, v in self.versions.items() if k.startswith(wanted)]
        if len(found) != 1:
            what = "names no earlier add or replace commit" if not found else "is ambiguous"
            raise InvalidInputError(f"{where}: {trailer}: {wanted} {what} (no note to follow)")
        target = found[0]
        if target.status != "active":
            raise InvalidInputError(
                f"{where}: {trailer}: {wanted} is already {target.status}; gitmemo acts on the active version only"
            )
        return target

    def _version(
        self, commit: _Commit, path: str, blob: str, values: dict[str, Any], date: Any, write: str, key: str
    ) -> _Version:
        created = _iso(date or commit.date, f"{_where(self.repo, commit, path)}: date")
        version = _Version(
            key=key,
            commit=commit.hash,
            path=path,
            blob=blob,
            values=values,
            created_at=created,
            updated_at=created,
            actor=(commit.author.strip() or "gitmemo")[:200],
            kind_of_write=write,
        )
        if len(self.versions) >= MAX_VERSIONS:
            raise InvalidInputError(f"{self.repo}: more than {MAX_VERSIONS} note versions; import it in parts")
        self.versions[key] = version
        return version

    def _values(self, where: str, min_keywords: int, **given: Any) -> dict[str, Any]:
        try:
            return imported_note_values(min_keywords=min_keywords, **given)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: {exc}") from None

    # -- format 2

    def format2(self, head: str) -> list[_Version]:
        commits = _log(self.repo, head)
        texts = _blobs(
            self.repo,
            [f"{c.hash}:{p}" for c in commits for s, p in c.changes if s == "A" and _is_entry(p)],
        )
        for commit in commits:
            msg = gm.parse_commit_message(commit.message)
            added = [p for s, p in commit.changes if s == "A" and _is_entry(p)]
            deleted = [p for s, p in commit.changes if s == "D" and _is_entry(p)]
            changed = [p for s, p in commit.changes if s not in ("A", "D") and _is_entry(p)]
            where = _where(self.repo, commit)
            if changed:
                raise InvalidInputError(f"{where}: changes the entry {changed[0]} in place; entries are immutable")
            if msg.type == "delete":
                target = self._find(commit, "GitMemo-Deletes", msg.value("GitMemo-Deletes"))
                if added or deleted != [target.path]:
                    raise InvalidInputError(
                        f"{where}: a delete commit removes exactly the entry it withdraws ({target.path}); "
                        f"it removes {', '.join(deleted) or 'nothing'}"
                    )
                target.status = "withdrawn"
                target.reason = msg.summary or msg.subject
                target.withdrawn_by = commit.hash
                target.updated_at = _iso(commit.date, f"{where}: date")
                continue
            if msg.type is None and not added:
                if deleted:
                    raise InvalidInputError(f"{where}: removes {deleted[0]} without a GitMemo-Type: delete trailer")
                continue  # the init commit, or one that touches no entry
            if len(added) != 1:
                raise InvalidInputError(f"{where}: adds {len(added)} entry files; an add or replace adds exactly one")
            path = added[0]
            blob, data = texts[f"{commit.hash}:{path}"]
            place = _where(self.repo, commit, path)
            try:
                entry = gm.parse_entry(_text(data, place), required=msg.type is not None)
            except gm.EntryError as exc:
                raise InvalidInputError(f"{place}: {exc}") from None
            legacy = msg.type is None or (msg.value("GitMemo-Legacy") or "").lower() == "true"
            kind_trailer = (msg.value("GitMemo-Kind") or "").strip().lower()
            keywords = msg.values("GitMemo-Keyword") or gm.front_list(entry.front, "keywords")
            values = self._values(
                place,
                0 if legacy else 2,
                title=msg.subject or entry.title,
                summary=msg.summary or entry.summary,
                keywords=keywords,
                content=entry.content if entry.content is not None else entry.body,
                kind=kind_trailer or gm.front_text(entry.front, "kind") or "task",
                branch=gm.code_value(gm.front_text(entry.front, "code_branch")),
                commit=_hex_or_none(gm.code_value(gm.front_text(entry.front, "code_commit"))),
                related_branches=gm.front_list(entry.front, "related_branches"),
                related_paths=gm.front_list(entry.front, "related_paths"),
            )
            write = msg.type or "legacy"
            version = self._version(commit, path, blob, values, gm.front_text(entry.front, "date"), write, commit.hash)
            version.aliases.append(commit.hash)
            if msg.type == "replace":
                old = self._find(commit, "GitMemo-Replaces", msg.value("GitMemo-Replaces"))
                if deleted != [old.path]:
                    raise InvalidInputError(
                        f"{where}: a replace commit removes the entry it replaces ({old.path}); it removes "
                        f"{', '.join(deleted) or 'nothing'}"
                    )
                old.status, old.superseded_by, old.updated_at = "superseded", version.key, version.created_at
                version.supersedes = old.key
            elif deleted:
                raise InvalidInputError(f"{where}: an add commit removes {deleted[0]}")
        return list(self.versions.values())

    # -- legacy

    def legacy(self) -> list[_Version]:
        branches = [
            b for b in _text(_git(self.repo, "for-each-ref", "--format=%(refname)", "refs/heads"), "refs").split() if b
        ] or ["HEAD"]
        commits = _log(self.repo, *branches)
        texts = _blobs(
            self.repo,
            [f"{c.hash}:{p}" for c in commits for s, p in c.changes if s in ("A", "M") and _is_entry(p)],
        )
        by_path: dict[str, _Version] = {}
        by_digest: dict[str, _Version] = {}
        for commit in commits:
            msg = gm.parse_commit_message(commit.message)
            written = [(s, p) for s, p in commit.changes if s in ("A", "M") and _is_entry(p)]
            for status, path in commit.changes:
                if status == "D" and _is_entry(path) and path in by_path:
                    old = by_path.pop(path)
                    if old.status == "active":
                        old.status = "withdrawn"
                        old.reason = f"deleted in gitmemo by commit {commit.hash[:12]} ({msg.subject})"
                        old.withdrawn_by = commit.hash
                        old.updated_at = _iso(commit.date, f"{_where(self.repo, commit)}: date")
            for status, path in written:
                blob, data = texts[f"{commit.hash}:{path}"]
                place = _where(self.repo, commit, path)
                try:
                    entry = gm.parse_entry(_text(data, place), required=False)
                except gm.EntryError as exc:
                    raise InvalidInputError(f"{place}: {exc}") from None
                title = gm.legacy_title(msg.subject)
                summary = gm.legacy_summary(entry, msg.summary)
                if summary is None:
                    summary = title
                    self.warnings.append(f"{place}: no summary (no Final Outcome paragraph, no commit body); the title")
                values = self._values(
                    place,
                    0,
                    title=title,
                    summary=summary,
                    keywords=gm.legacy_keywords(entry),
                    content=_text(data, place).strip() or title,
                    kind="task",
                    branch=gm.code_value(gm.front_text(entry.front, "repo_branch")),
                    commit=_hex_or_none(gm.code_value(gm.front_text(entry.front, "repo_commit"))),
                    related_branches=[],
                    related_paths=_relative(gm.front_list(entry.front, "related_paths")),
                )
                same = by_digest.get(values["digest"])
                if same is not None and same.status == "active":
                    if len(written) == 1 and commit.hash not in same.aliases:
                        same.aliases.append(commit.hash)  # the same entry again (another branch): one note
                    by_path[path] = same
                    continue
                key = commit.hash if len(written) == 1 else f"{commit.hash}:{path}"
                version = self._version(commit, path, blob, values, gm.front_text(entry.front, "date"), "legacy", key)
                if len(written) == 1:
                    version.aliases.append(commit.hash)
                else:
                    self.warnings.append(
                        f"{place}: the commit writes {len(written)} entries; read this one by its note id"
                    )
                old = by_path.get(path)
                if old is not None and old.status == "active":  # an in-place update: the new version replaces it
                    old.status, old.superseded_by, old.updated_at = "superseded", version.key, version.created_at
                    version.supersedes = old.key
                by_path[path] = version
                by_digest[values["digest"]] = version
        self._check_tips(branches)
        return list(self.versions.values())

    def _check_tips(self, branches: list[str]) -> None:
        """Several branches: one path holding different entries at two tips is a conflict (refused, as
        gitmemo's migration refuses it); an entry deleted on one branch but standing at another stands."""
        if len(branches) < 2:
            return
        seen: dict[str, tuple[str, str]] = {}
        standing: set[tuple[str, str]] = set()
        for branch in branches:
            listing = _text(_git(self.repo, "ls-tree", "-r", branch, "--", gm.ENTRIES), branch)
            for line in listing.splitlines():
                meta, _, path = line.partition("\t")
                blob = meta.split()[-1]
                if not _is_entry(path):
                    continue
                if path in seen and seen[path][0] != blob:
                    raise InvalidInputError(
                        f"{self.repo}: {path} differs between {seen[path][1]} and {branch}; settle the conflict "
                        "in the repository first"
                    )
                seen[path] = (blob, branch)
                standing.add((path, blob))
        for version in self.versions.values():
            if version.status == "withdrawn" and (version.path, version.blob) in standing:
                version.status, version.reason, version.withdrawn_by = "active", None, None
                version.updated_at = version.created_at


def _hex_or_none(value: str | None) -> str | None:
    return value.lower() if value and gm.is_hash(value.lower()) else None


def _relative(paths: list[str]) -> list[str]:
    return [p for p in paths if not p.startswith("/") and not re.match(r"^[A-Za-z]:", p)][:128]


# ----------------------------------------------------------------------------- preview


def _note_id(namespace_id: int, key: str) -> str:
    return hashlib.sha256(f"{namespace_id}\ngitmemo\n{key}".encode("utf-8")).hexdigest()[:40]


def _candidate(version: _Version) -> dict[str, Any]:
    values = version.values
    return {
        "title": values["title"],
        "summary": values["summary"],
        "tags": list(values["keywords"]),
        "temporal": {"mentioned_at": version.created_at},
        "gitmemo": {
            "key": version.key,
            "commit": version.commit,
            "path": version.path,
            "write": version.kind_of_write,
            "status": version.status,
            "supersedes": version.supersedes,
            "superseded_by": version.superseded_by,
            "reason": version.reason,
            "withdrawn_by": version.withdrawn_by,
            "created_at": version.created_at,
            "updated_at": version.updated_at,
            "actor": version.actor,
            "aliases": version.aliases,
            "values": values,
        },
    }


def _check_against(namespace: str, versions: list[dict[str, Any]]) -> None:
    """What the versions would clash with: a digest or a topic title equal to a standing note's (of the
    namespace or of the import), an old hash another note of the namespace already answers to."""
    ns = Namespace.get_or_none(Namespace.name == namespace)
    standing_digest: dict[str, str] = {}
    standing_topic: dict[str, str] = {}
    aliases: dict[str, str] = {}
    if ns is not None:
        for note_id, digest, kind, title in (
            Note.select(Note.note_id, Note.digest, Note.kind, Note.title)
            .where((Note.namespace == ns.id) & Note.status.in_(STANDING))
            .tuples()
        ):
            standing_digest[digest] = f"note {note_id}"
            if kind == "topic":
                standing_topic[normalize(title)] = f"topic page {note_id}"
        wanted = [a for v in versions for a in v["aliases"]]
        for alias, note_id in (
            NoteAlias.select(NoteAlias.alias, Note.note_id)
            .join(Note, on=(NoteAlias.note == Note.id))
            .where((NoteAlias.namespace == ns.id) & NoteAlias.alias.in_(wanted))
            .tuples()
        ):
            aliases[alias] = note_id
    for v in versions:
        where = f"commit {v['commit'][:12]} ({v['path']})"
        for alias in v["aliases"]:
            if alias in aliases:
                raise InvalidInputError(
                    f"{where}: note {aliases[alias]} of {namespace!r} already answers to {alias[:12]}: this "
                    "repository (or part of it) was imported before; undo that batch first"
                )
        if v["status"] not in STANDING:
            continue
        digest = v["values"]["digest"]
        if digest in standing_digest:
            raise InvalidInputError(
                f"{where}: {standing_digest[digest]} already records this: {v['values']['title']!r}"
            )
        standing_digest[digest] = where
        if v["values"]["kind"] == "topic":
            title = normalize(v["values"]["title"])
            if title in standing_topic:
                raise InvalidInputError(
                    f"{where}: {standing_topic[title]} is already titled {v['values']['title']!r}; a namespace "
                    "has one standing topic per title"
                )
            standing_topic[title] = where


def preview_gitmemo(path: str | Path, namespace: str, *, repository: GitmemoRepository | None = None) -> ImportPreview:
    """Read and check a ``.mem`` repository (or take ``repository`` as ``read_repository`` read it)
    and store it as an import batch (writes no note). Any problem raises naming the commit and file;
    then nothing is stored."""
    namespace = validate_name(namespace)
    repository = repository or read_repository(path)
    versions = [_candidate(v) for v in repository.versions]
    with read_snapshot():
        _check_against(namespace, [c["gitmemo"] for c in versions])
    plan = json.dumps(
        {"path": repository.path, "format": repository.format, "head": repository.head, "versions": versions},
        ensure_ascii=False,
        sort_keys=True,
    )
    now = now_iso()
    with write_transaction():
        batch = insert_one(
            ImportBatch,
            dict(
                namespace_name=namespace,
                format=gm.FORMAT,
                source_name=repository.path,
                source_system=f"gitmemo {'format 2' if repository.format == '2' else 'legacy'}",
                text=plan,
                text_sha256=hashlib.sha256(plan.encode("utf-8")).hexdigest(),
                status="ready",
                meta={"format": repository.format, "head": repository.head},
                warnings=repository.warnings[:100],
                total=len(versions),
                processed=len(versions),
                preview_revision=namespace_revision(namespace),
                created_at=now,
                updated_at=now,
            ),
        )
        for position, candidate in enumerate(versions, start=1):
            info = candidate["gitmemo"]
            insert_one(
                ImportItem,
                dict(
                    batch=batch.id,
                    position=position,
                    candidate=candidate,
                    fingerprint=info["values"]["digest"],
                    state="decided",
                    action="add",
                    reason=_item_reason(info),
                    confidence=1.0,
                    requires_confirmation=False,
                    updated_at=now,
                ),
            )
    return get_batch(batch.id)


def _item_reason(info: dict[str, Any]) -> str:
    commit = info["commit"][:12]
    if info["status"] == "superseded":
        return f"gitmemo {info['write']} {commit}; superseded by {info['superseded_by'][:12]}"
    if info["status"] == "withdrawn":
        return f"gitmemo {info['write']} {commit}; withdrawn: {info['reason']}"
    return f"gitmemo {info['write']} {commit}; active"


def is_gitmemo(batch_id: int | str) -> bool:
    return load_batch(batch_id).format == gm.FORMAT


# ----------------------------------------------------------------------------- commit and undo


def _change(batch_id: int, table: str, record_id: int, after: dict[str, Any] | None, now: str) -> None:
    insert_one(
        ImportChange, dict(batch=batch_id, table=table, record_id=record_id, before=None, after=after, created_at=now)
    )


def commit_gitmemo(batch_id: int | str) -> ImportPreview:
    """Write a previewed gitmemo batch's notes, aliases and audit rows in one transaction, checked
    again against the namespace as it is now (all of it or nothing)."""
    with write_transaction():
        batch = load_batch(batch_id)
        if batch.format != gm.FORMAT:
            raise InvalidInputError(f"import batch {batch.id} is a {batch.format} import, not a gitmemo one")
        if batch.status != "ready":
            raise InvalidInputError(f"import batch {batch.id} is {batch.status}; only a ready batch is committed")
        items = batch_items(batch.id)
        versions = [item.candidate["gitmemo"] for item in items]
        _check_against(batch.namespace_name, versions)
        ns = get_or_create_namespace(batch.namespace_name)
        ids = {v["key"]: _note_id(ns.id, v["key"]) for v in versions}
        taken = Note.select(Note.note_id).where(Note.note_id.in_(list(ids.values()))).first()
        if taken is not None:
            raise InvalidInputError(f"note {taken.note_id} exists already; nothing was written")
        now = now_iso()
        for item, v in zip(items, versions):
            row = insert_one(
                Note,
                dict(
                    namespace=ns.id,
                    note_id=ids[v["key"]],
                    **v["values"],
                    status=v["status"],
                    supersedes=ids.get(v["supersedes"]) if v["supersedes"] else None,
                    superseded_by=ids.get(v["superseded_by"]) if v["superseded_by"] else None,
                    reason=v["reason"],
                    source="import",
                    actor=v["actor"],
                    created_at=v["created_at"],
                    updated_at=v["updated_at"],
                ),
            )
            _change(batch.id, "note", row.id, {f: getattr(row, f) for f in _NOTE_IMAGE}, now)
            for alias in v["aliases"]:
                a = insert_one(
                    NoteAlias, dict(namespace=ns.id, note=row.id, alias=alias, origin="gitmemo", created_at=now)
                )
                _change(batch.id, "notealias", a.id, None, now)
            audit = insert_one(
                AuditEntry,
                dict(
                    namespace=ns.id,
                    subject="note",
                    subject_id=row.id,
                    action="import",
                    from_status=None,
                    to_status=v["status"],
                    actor=IMPORT_ACTOR,
                    reason=v["reason"],
                    detail={"note": row.note_id, "commit": v["commit"], "import_batch": batch.id},
                    at=now,
                ),
            )
            _change(batch.id, "auditentry", audit.id, None, now)
            ImportItem.update(final_action="add", final_target_ids=[], updated_at=now).where(
                ImportItem.id == item.id
            ).execute()
        ImportBatch.update(status="committed", imported_count=len(items), committed_at=now, updated_at=now).where(
            ImportBatch.id == batch.id
        ).execute()
    return get_batch(batch.id)


def undo_gitmemo(batch_id: int | str) -> UndoResult:
    """Delete exactly the notes and aliases a committed gitmemo batch wrote (the audit trail keeps its
    rows and records each removal). Refused, with
    nothing changed, when one of its notes changed since (replaced, withdrawn, approved): undoing
    would lose that change."""
    with write_transaction():
        batch = load_batch(batch_id)
        if batch.format != gm.FORMAT:
            raise InvalidInputError(f"import batch {batch.id} is a {batch.format} import, not a gitmemo one")
        if batch.status == "undone":
            raise InvalidInputError(f"import batch {batch.id} was already undone at {batch.undone_at}; nothing changed")
        if batch.status != "committed":
            raise InvalidInputError(
                f"import batch {batch.id} is {batch.status}, not committed; there is nothing to undo"
            )
        changes = list(ImportChange.select().where(ImportChange.batch == batch.id))
        notes = {c.record_id: c for c in changes if c.table == "note"}
        rows = {r.id: r for r in Note.select().where(Note.id.in_(list(notes)))} if notes else {}
        ours = {r.note_id for r in rows.values()}
        for record_id, change in notes.items():
            row = rows.get(record_id)
            if row is None:
                continue
            now_image = {f: getattr(row, f) for f in _NOTE_IMAGE}
            if now_image != change.after:
                raise InvalidInputError(
                    f"note {row.note_id} of import batch {batch.id} changed since the import (now {row.status}); "
                    "undoing would lose that change: nothing was undone"
                )
        if ours:
            later = (
                Note.select(Note.note_id, Note.supersedes)
                .where(Note.supersedes.in_(sorted(ours)) & Note.id.not_in(list(rows)))
                .first()
            )
            if later is not None:
                raise InvalidInputError(
                    f"note {later.note_id} replaces {later.supersedes} of import batch {batch.id}; delete it first: "
                    "nothing was undone"
                )
        for table, model in (("notealias", NoteAlias), ("note", Note)):
            wanted = [c.record_id for c in changes if c.table == table]
            for start in range(0, len(wanted), 500):
                model.delete().where(model.id.in_(wanted[start : start + 500])).execute()
        now = now_iso()
        # The audit trail only grows: the rows the import added stay, and each note's removal is one more.
        for record_id, row in sorted(rows.items()):
            insert_one(
                AuditEntry,
                dict(
                    namespace=row.namespace_id,
                    subject="note",
                    subject_id=record_id,
                    action="import_undone",
                    from_status=row.status,
                    to_status=None,
                    actor=IMPORT_ACTOR,
                    reason=f"import batch {batch.id} undone",
                    at=now,
                ),
            )
        ImportBatch.update(status="undone", undone_at=now, updated_at=now).where(ImportBatch.id == batch.id).execute()
        row = batch_row(load_batch(batch.id))
    return UndoResult(
        batch=row,
        removed_event_ids=(),
        restored_event_ids=(),
        graph_removed=0,
        graph_restored=0,
        removed_note_ids=tuple(sorted(ours)),
    )


# ----------------------------------------------------------------------------- export


@dataclass(frozen=True)
class GitmemoExport:
    directory: str
    head: str
    commits: int  # the init commit included
    notes: int  # versions written
    withdrawn: int
    left_out: int  # quarantined notes, which gitmemo has no place for


def _git_date(at: datetime) -> str:
    offset = at.utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset is not None else 0
    sign = "+" if minutes >= 0 else "-"
    return f"{int(at.timestamp())} {sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"


def export_gitmemo(namespace: str, directory: str | Path) -> GitmemoExport:
    """Write the namespace's notes as a new gitmemo repository at ``directory`` (which must not exist
    or be empty). It is built beside it and moved into place when complete."""
    target = Path(directory).expanduser()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InvalidInputError(f"{target}: exists and is not an empty directory; nothing was written")
    if not target.parent.is_dir():
        raise InvalidInputError(f"{target.parent}: no such directory; nothing was written")
    with read_snapshot():
        ns = get_namespace(namespace)
        rows = list(Note.select().where(Note.namespace == ns.id).order_by(Note.id))
        alias_rows = list(
            NoteAlias.select(NoteAlias.alias, NoteAlias.note).where(NoteAlias.namespace == ns.id).tuples()
        )
    left_out = sum(1 for r in rows if r.status == "quarantined")
    rows = [r for r in rows if r.status != "quarantined"]
    if not rows:
        raise NotFoundError(f"namespace {ns.name!r} has no notes to export")
    by_id = {r.note_id: r for r in rows}
    by_pk = {r.id: r for r in rows}
    names = {alias: by_pk[pk].note_id for alias, pk in alias_rows if pk in by_pk}
    events: list[tuple[datetime, int, int, Note]] = []
    for r in rows:
        events.append((parse_timestamp(r.created_at), 0, r.id, r))
        if r.status == "withdrawn":
            events.append((parse_timestamp(r.updated_at), 1, r.id, r))
    events.sort(key=lambda e: (e[0].timestamp(), e[1], e[2]))
    tmp = target.parent / f".{target.name}.strata-tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        head, commits = _write_repository(tmp, events, by_id, names)
        if target.exists():
            target.rmdir()
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    withdrawn = sum(1 for r in rows if r.status == "withdrawn")
    return GitmemoExport(str(target), head, commits, len(rows), withdrawn, left_out)


def _write_repository(
    repo: Path, events: list[tuple[datetime, int, int, Note]], by_id: dict[str, Note], names: dict[str, str]
) -> tuple[str, int]:
    first = events[0][0]
    _git(repo, "init", "-q", "-b", "main")
    (repo / "entries").mkdir()
    (repo / "entries" / ".gitkeep").write_bytes(b"")
    (repo / gm.FORMAT_FILE).write_bytes(gm.FORMAT_VERSION.encode("ascii"))
    _git(repo, "add", "--", gm.FORMAT_FILE, "entries/.gitkeep")
    _commit(repo, gm.commit_message(gm.INIT_SUBJECT, "", []).rstrip("\n") + "\n", first)
    commits = 1
    written: dict[str, tuple[str, str]] = {}  # note id → (commit hash, entry path)
    taken: set[str] = set()

    def link(match: re.Match[str]) -> str:
        key = match.group(1).lower()
        note_id = names.get(key) or next((i for i in by_id if i.startswith(key)), None)
        if note_id is None:
            note_id = next((n for a, n in names.items() if a.startswith(key)), None)
        return f"[[{written[note_id][0]}]]" if note_id in written else match.group(0)

    waiting = list(events)
    forced: set[int] = set()
    while waiting:
        progressed = False
        for event in list(waiting):
            at, step, pk, row = event
            old = by_id.get(row.supersedes) if row.supersedes else None
            if (
                step == 0
                and pk not in forced
                and old is not None
                and old.superseded_by == row.note_id
                and old.note_id not in written
            ):
                continue  # its predecessor is written first
            if step == 1 and row.note_id not in written:
                continue
            waiting.remove(event)
            progressed = True
            commits += 1
            if step == 1:
                hash_, path = written[row.note_id]
                _git(repo, "rm", "-q", "--", path)
                stem = path[len(gm.ENTRIES) : -len(".md")]
                message = gm.commit_message(
                    f"delete: withdraw {stem}",
                    row.reason or "withdrawn",
                    [("GitMemo-Type", "delete"), ("GitMemo-Deletes", hash_)],
                )
                _commit(repo, message, at)
                continue
            summary = _LINK.sub(link, row.summary)
            content = _LINK.sub(link, row.content)
            keywords = list(row.keywords or ())
            digest = gm.gitmemo_digest(row.title, summary, keywords, content, row.kind)
            path = gm.entry_name(at, digest, row.title, taken)
            taken.add(path)
            (repo / path).write_text(
                gm.entry_text(
                    date=gm.utc_iso(at),
                    kind=row.kind,
                    title=row.title,
                    summary=summary,
                    keywords=keywords,
                    content=content,
                    branch=row.code_branch,
                    commit=row.code_commit,
                    related_branches=list(row.related_branches or ()),
                    related_paths=list(row.related_paths or ()),
                ),
                encoding="utf-8",
            )
            replaces = written[old.note_id] if old is not None and old.note_id in written else None
            if replaces is not None and old is not None and old.superseded_by == row.note_id:
                _git(repo, "rm", "-q", "--", replaces[1])
            else:
                replaces = None
            _git(repo, "add", "--", path)
            trailers = gm.write_trailers(
                type="replace" if replaces else "add",
                kind=row.kind,
                keywords=keywords,
                digest=digest,
                title=row.title,
                summary=summary,
                replaces=replaces[0] if replaces else None,
            )
            if len(keywords) < 2:
                trailers.insert(1, ("GitMemo-Legacy", "true"))  # gitmemo takes fewer than 2 keywords only so
            written[row.note_id] = (_commit(repo, gm.commit_message(row.title, summary, trailers), at), path)
        if not progressed:  # a lineage loop (never written by Strata): the oldest goes first, as an add
            forced.add(waiting[0][2])
    head = _text(_git(repo, "rev-parse", "HEAD"), str(repo)).strip()
    return head, commits


def _commit(repo: Path, message: str, at: datetime) -> str:
    when = _git_date(at)
    env = {
        "GIT_AUTHOR_NAME": AUTHOR[0],
        "GIT_AUTHOR_EMAIL": AUTHOR[1],
        "GIT_COMMITTER_NAME": AUTHOR[0],
        "GIT_COMMITTER_EMAIL": AUTHOR[1],
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
    }
    _git(
        repo,
        "commit",
        "-q",
        "--no-verify",
        "--allow-empty-message",
        "--cleanup=verbatim",
        "-F",
        "-",
        input=message.encode("utf-8"),
        env=env,
    )
    return _text(_git(repo, "rev-parse", "HEAD"), str(repo)).strip()


__all__ = [
    "GitmemoExport",
    "GitmemoRepository",
    "commit_gitmemo",
    "export_gitmemo",
    "is_gitmemo",
    "preview_gitmemo",
    "read_repository",
    "undo_gitmemo",
]
