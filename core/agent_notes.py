"""The note tools of an agent: write a task-outcome note when work is done, search and read notes before
starting, replace one that the work overruled, withdraw one that no longer holds (``core.services.notes``).

They are part of ``core.agent_tools.MemoryTools`` (this class is one of its bases) and work in its
namespace. Notes are not evidence of the conversation, so they open no retrieval batch. An agent writes
as source ``agent`` with its session as the actor: unless the namespace policy trusts agents, what it
writes waits in quarantine (readable by id, not searchable) until a person approves it.
"""

from __future__ import annotations

from typing import Any, Callable

from core.agent_schemas import ToolError
from core.services import notes

SUMMARY_LIMIT = 800  # a search hit's summary; note_read gives the whole note

_WAITING = "Waits for a person's approval (strata note approve) before note_search returns it; note_read reads it now."


def _note(view: notes.NoteView) -> dict[str, Any]:
    out = {
        "id": view.id,
        "kind": view.kind,
        "status": view.status,
        "title": view.title,
        "summary": view.summary,
        "keywords": list(view.keywords),
        "content": view.content,
        "created_at": view.created_at,
        "actor": view.actor,
        "supersedes": view.supersedes,
        "superseded_by": view.superseded_by,
    }
    if view.reason:
        out["reason"] = view.reason
    for key, value in (
        ("branch", view.branch),
        ("commit", view.commit),
        ("related_branches", list(view.related_branches)),
        ("related_paths", list(view.related_paths)),
    ):
        if value:
            out[key] = value
    return out


def _link(link: notes.NoteLink) -> dict[str, Any]:
    out: dict[str, Any] = {"link": link.link, "state": link.state, "resolved_id": link.resolved_id}
    if link.title is not None:
        out.update(title=link.title, kind=link.kind)
    if link.summary is not None:
        out.update(summary=link.summary, keywords=list(link.keywords))
    if link.error:
        out["error"] = link.error
    return out


class NoteTools:
    namespace: str
    session: str | None

    def _note_handlers(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return {
            "note_write": self._note_write,
            "note_read": self._note_read,
            "note_search": self._note_search,
            "note_replace": self._note_replace,
            "note_delete": self._note_delete,
        }

    def _note_actor(self) -> str:
        return self.session or "agent"

    def _duplicate(self, tool: str, exc: notes.DuplicateNoteError) -> ToolError:
        return ToolError(f"{tool}: {exc}", code="duplicate", tool=tool, details={"existing_id": exc.existing_id})

    def _note_write(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            view = notes.write_note(
                self.namespace,
                title=args["title"],
                summary=args["summary"],
                keywords=args["keywords"],
                content=args["content"],
                kind=args.get("kind", "task"),
                branch=args.get("branch"),
                commit=args.get("commit"),
                related_branches=args.get("related_branches"),
                related_paths=args.get("related_paths"),
                source="agent",
                actor=self._note_actor(),
            )
        except notes.DuplicateNoteError as exc:
            raise self._duplicate("note_write", exc) from exc
        out = {"tool": "note_write", "id": view.id, "status": view.status, "kind": view.kind, "title": view.title}
        if view.status == "quarantined":
            out["note"] = _WAITING
        return out

    def _note_read(self, args: dict[str, Any]) -> dict[str, Any]:
        view = notes.read_note(args["id"], bool(args.get("expand", False)), namespace=self.namespace)
        out: dict[str, Any] = {"tool": "note_read", "note": _note(view)}
        if view.links is not None:
            out["links"] = [_link(link) for link in view.links]
        return out

    def _note_search(self, args: dict[str, Any]) -> dict[str, Any]:
        page = notes.search_notes(
            self.namespace,
            args["keywords"],
            args.get("mode", "weighted"),
            args.get("limit", notes.PAGE_SIZE),
            skip=args.get("skip", 0),
            snapshot=args.get("snapshot"),
        )
        results = [
            {
                "id": hit.id,
                "kind": hit.kind,
                "title": hit.title,
                "summary": hit.summary if len(hit.summary) <= SUMMARY_LIMIT else hit.summary[: SUMMARY_LIMIT - 1] + "…",
                "keywords": list(hit.keywords),
                "created_at": hit.created_at,
                "score": hit.score,
                "matched_keywords": list(hit.matched_keywords),
            }
            for hit in page.hits
        ]
        out: dict[str, Any] = {
            "tool": "note_search",
            "snapshot": page.snapshot,
            "mode": page.mode,
            "total": page.total,
            "next_skip": page.next_skip,
            "results": results,
            "count": len(results),
        }
        if page.next_skip is not None:
            out["next_step"] = (
                f"More hits: call note_search with the same keywords, skip={page.next_skip} and "
                f"snapshot={page.snapshot!r}. Read the relevant ones (topic pages first) with note_read."
            )
        return out

    def _note_replace(self, args: dict[str, Any]) -> dict[str, Any]:
        fields = {
            key: args.get(key)
            for key in (
                "title",
                "summary",
                "keywords",
                "content",
                "kind",
                "branch",
                "commit",
                "related_branches",
                "related_paths",
                "reason",
            )
        }
        try:
            view = notes.replace_note(
                args["id"], **fields, source="agent", actor=self._note_actor(), namespace=self.namespace
            )
        except notes.DuplicateNoteError as exc:
            raise self._duplicate("note_replace", exc) from exc
        out = {"tool": "note_replace", "id": view.id, "replaces": view.supersedes, "status": view.status}
        if view.status == "quarantined":
            out["note"] = _WAITING + f" Until then {view.supersedes} stays active."
        return out

    def _note_delete(self, args: dict[str, Any]) -> dict[str, Any]:
        view = notes.delete_note(args["id"], reason=args["reason"], actor=self._note_actor(), namespace=self.namespace)
        return {"tool": "note_delete", "id": view.id, "status": view.status}
