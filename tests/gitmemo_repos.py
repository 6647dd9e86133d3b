"""gitmemo ``.mem`` repositories built with real ``git`` commits, written the way gitmemo writes them
(format 2: entry files with front matter and trailer-carrying commit messages; legacy: the bash-script
era), independently of Strata's own exporter, for the import tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(repo: Path, *args: str, date: str | None = None, input: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="dsh-gitmemo",
        GIT_AUTHOR_EMAIL="dsh-gitmemo@localhost",
        GIT_COMMITTER_NAME="dsh-gitmemo",
        GIT_COMMITTER_EMAIL="dsh-gitmemo@localhost",
    )
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, input=input, check=True
    )
    return done.stdout


def _stamp(date: str) -> str:
    return date.replace("-", "").replace(":", "")


class Format2Repo:
    """A format-2 ``.mem``: ``add``, ``replace`` and ``delete`` as gitmemo commits them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        git(path, "init", "-q", "-b", "main")
        (path / "entries").mkdir()
        (path / "entries" / ".gitkeep").write_text("")
        (path / ".gitmemo-format").write_text("2\n")
        git(path, "add", ".gitmemo-format", "entries/.gitkeep")
        git(path, "commit", "-q", "-m", "init: initialize memory repo (gitmemo format 2)", date="2026-01-01T09:00:00Z")
        self.files: dict[str, str] = {}

    def _write(self, title, summary, keywords, content, kind, date) -> str:
        slug = "-".join("".join(c if c.isalnum() else " " for c in title.lower()).split())
        name = f"entries/{_stamp(date[:19])}.000Z-{len(self.files):08x}-{slug}.md"
        (self.path / name).write_text(
            "---\n"
            'gitmemo_version: "2"\n'
            f"date: {date}\n"
            f"kind: {kind}\n"
            "code_branch: main\n"
            "code_commit: 9f3e1a2b\n"
            "related_branches:\n  - main\n"
            "related_paths: [src/pool.py]\n"
            f"keywords: [{', '.join(keywords)}]\n"
            "---\n\n"
            f"# {title}\n\n## Summary\n\n{summary}\n\n## Final Outcome\n\n{content}\n",
            encoding="utf-8",
        )
        return name

    def _commit(self, subject, body, trailers, date) -> str:
        message = f"{subject}\n\n{body}\n\n" + "\n".join(f"{k}: {v}" for k, v in trailers) + "\n"
        git(self.path, "commit", "-q", "--cleanup=verbatim", "-F", "-", input=message, date=date)
        return git(self.path, "rev-parse", "HEAD").strip()

    def _trailers(self, kind, keywords, title, summary):
        out = [("GitMemo-Kind", "topic")] if kind == "topic" else []
        out += [("GitMemo-Keyword", k) for k in keywords]
        out.append(("GitMemo-Digest", "sha256:" + "0" * 64))
        out += [("GitMemo-Search-Text", t.lower()) for t in (title, " ".join(summary.split()), *keywords)]
        return out

    def add(self, title, summary, keywords, content, *, date, kind="task") -> str:
        name = self._write(title, summary, keywords, content, kind, date)
        git(self.path, "add", "--", name)
        trailers = [("GitMemo-Type", "add"), *self._trailers(kind, keywords, title, summary)]
        commit = self._commit(title, summary, trailers, date)
        self.files[commit] = name
        return commit

    def replace(self, old, title, summary, keywords, content, *, date, kind="task") -> str:
        git(self.path, "rm", "-q", "--", self.files[old])
        name = self._write(title, summary, keywords, content, kind, date)
        git(self.path, "add", "--", name)
        trailers = [
            ("GitMemo-Type", "replace"),
            ("GitMemo-Replaces", old),
            *self._trailers(kind, keywords, title, summary),
        ]
        commit = self._commit(title, summary, trailers, date)
        self.files[commit] = name
        return commit

    def delete(self, old, reason, *, date) -> str:
        name = self.files[old]
        git(self.path, "rm", "-q", "--", name)
        stem = name[len("entries/") : -len(".md")]
        return self._commit(
            f"delete: withdraw {stem}", reason, [("GitMemo-Type", "delete"), ("GitMemo-Deletes", old)], date
        )


def sample_format2(path: Path) -> dict[str, str]:
    """Adds, a replace, a delete and a topic page linking the others: the commit hashes by name."""
    repo = Format2Repo(path)
    h: dict[str, str] = {}
    h["pool"] = repo.add(
        "Pool timeouts fixed",
        "Raised the pool size to 20.",
        ["pool", "timeout", "Postgres"],
        "Changed db/pool.py: size 20, timeout 30 s.",
        date="2026-01-05T10:00:00.000Z",
    )
    h["cache"] = repo.add(
        "Cache keys versioned",
        "Cache keys carry a schema version.",
        ["cache", "keys"],
        "Keys are v2:<id>.",
        date="2026-01-06T11:30:00.000Z",
    )
    h["pool2"] = repo.replace(
        h["pool"],
        "Pool timeouts fixed",
        "Raised the pool size to 40; 20 was not enough.",
        ["pool", "timeout", "Postgres"],
        "Changed db/pool.py: size 40, timeout 30 s.",
        date="2026-01-10T08:15:00.000Z",
    )
    h["flaky"] = repo.add(
        "Flaky test quarantined",
        "test_upload is skipped on CI.",
        ["flaky", "ci"],
        "Marked test_upload with skip on CI.",
        date="2026-01-11T12:00:00.000Z",
    )
    h["flaky_gone"] = repo.delete(
        h["flaky"], "The upload test is fixed; the skip is gone.", date="2026-01-12T12:00:00Z"
    )
    h["topic"] = repo.add(
        "Database operations",
        "What holds about the database.",
        ["database", "operations"],
        f"- [[{h['pool'][:10]}]] pool size (replaced since)\n- [[{h['cache']}]] cache keys\n"
        f"- [[{h['flaky'][:8]}]] withdrawn",
        date="2026-01-13T09:00:00.000Z",
        kind="topic",
    )
    return h


def sample_legacy(path: Path) -> dict[str, str]:
    """A bash-script-era ``.mem``: an entry, an in-place update of it, a second entry and its deletion."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "entries").mkdir()
    (path / "entries" / ".gitkeep").write_text("")
    git(path, "add", "entries/.gitkeep")
    git(path, "commit", "-q", "-m", "init: initialize memory repo", date="2025-06-01T09:00:00Z")
    h: dict[str, str] = {}

    def entry(name: str, tags: str, outcome: str, date: str) -> None:
        (path / "entries" / name).write_text(
            f"---\ndate: {date}\nstatus: done\nrepo_branch: main\nrepo_commit: 9f3e1a2\ntags: [{tags}]\n---\n"
            "### Original User Request\nmake login faster\n### Final Outcome\n"
            f"{outcome}\n",
            encoding="utf-8",
        )

    entry(
        "20250602T100000Z-login-speed.md",
        "auth, performance",
        "Login caches the session lookup.",
        "2025-06-02T10:00:00Z",
    )
    git(path, "add", "entries/20250602T100000Z-login-speed.md")
    git(path, "commit", "-q", "-m", "[auth] login speed", "-m", "cached session lookup", date="2025-06-02T10:00:00Z")
    h["login"] = git(path, "rev-parse", "HEAD").strip()
    entry(
        "20250602T100000Z-login-speed.md",
        "auth, performance",
        "Login caches the session lookup for 5 minutes.",
        "2025-06-03T10:00:00Z",
    )
    git(path, "add", "entries/20250602T100000Z-login-speed.md")
    git(path, "commit", "-q", "-m", "[auth] login speed, cache for 5 min", date="2025-06-03T10:00:00Z")
    h["login2"] = git(path, "rev-parse", "HEAD").strip()
    entry("20250604T100000Z-old-idea.md", "misc", "An idea that did not work.", "2025-06-04T10:00:00Z")
    git(path, "add", "entries/20250604T100000Z-old-idea.md")
    git(path, "commit", "-q", "-m", "[misc] old idea", date="2025-06-04T10:00:00Z")
    h["idea"] = git(path, "rev-parse", "HEAD").strip()
    git(path, "rm", "-q", "entries/20250604T100000Z-old-idea.md")
    git(path, "commit", "-q", "-m", "delete: remove 20250604T100000Z-old-idea", date="2025-06-05T10:00:00Z")
    return h
