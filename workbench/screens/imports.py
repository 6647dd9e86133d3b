"""Imports: bring another assistant's memory in, decide item by item, commit, undo.

Open a file (the path input completes with tab/→) or paste text; the preview decides
every item (add, merge, supersede, conflict or ignore, with confidence, matches and a
reason) while a progress bar moves. Items below the confidence threshold are marked
``CHOOSE`` until a person picks an action (keys a/m/s/x/i; t cycles the target among the
item's matches). Commit and undo ask first; the undo result is shown in the batch pane.

The view works on an empty store too: the namespace field names where the import goes
(the open namespace, else ``default``), and a namespace that does not exist yet is
created when its first batch is committed (the workbench then switches to it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import Button, DataTable, Input, Label, ProgressBar, Select, Static, TextArea

from workbench.screens.base import EmptyState, StrataScreen
from workbench.screens.confirm import ConfirmScreen
from workbench.widgets.table import PagedTable

FORMATS = (("v2 JSON", "v2"), ("Mem0 JSON", "mem0"), ("text list", "text"))
ACTION_KEYS = {"add": "a", "merge": "m", "supersede": "s", "conflict": "x", "ignore": "i"}


class PathSuggester(Suggester):
    """Completes the last path component from the file system (directories get a /)."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)

    async def get_suggestion(self, value: str) -> str | None:
        if not value:
            return None
        expanded = os.path.expanduser(value)
        folder, prefix = os.path.split(expanded)
        try:
            names = sorted(os.listdir(folder or "."))
        except OSError:
            return None
        for name in names:
            if name.startswith(prefix) and name != prefix and not name.startswith("."):
                full = os.path.join(folder, name)
                completed = value[: len(value) - len(prefix)] + name
                return completed + ("/" if os.path.isdir(full) else "")
        return None


class PasteScreen(ModalScreen[str | None]):
    """Paste an export (JSON or a list of facts) to preview it."""

    BINDINGS = [
        Binding("f2,ctrl+s", "submit", "Preview", id="paste.preview", tooltip="Preview the pasted text"),
        Binding("escape", "cancel", "Cancel", id="paste.cancel", tooltip="Close without importing"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="paste-dialog", classes="dialog"):
            yield Label("Paste an export (v2 JSON, a Mem0 list, or one fact per line)", classes="dialog-title")
            yield TextArea(id="paste-text")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Preview (F2)", id="paste-ok", variant="primary")
                yield Button("Cancel (esc)", id="paste-cancel")

    @on(Button.Pressed, "#paste-ok")
    def action_submit(self) -> None:
        text = self.query_one("#paste-text", TextArea).text
        self.dismiss(text if text.strip() else None)

    @on(Button.Pressed, "#paste-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


def item_cells(item) -> tuple:
    action = (item.effective_action or item.action or "…").upper()
    if item.choice_action:
        action += " (you)"
    needs = item.requires_confirmation and not item.choice_action
    confidence = "-" if item.confidence is None else f"{item.confidence:.2f}"
    targets = ", ".join(f"#{t}" for t in (item.effective_target_ids or item.target_ids)) or "-"
    title = item.candidate.title if len(item.candidate.title) <= 48 else item.candidate.title[:47] + "…"
    reason = (item.reason or "")[:60]
    return (str(item.position), "CHOOSE" if needs else "", action, confidence, str(len(item.matches)), targets,
            title, reason)


def batch_cells(batch) -> tuple:
    source = Path(batch.source_name).name if batch.source_name else "pasted"
    status = {"awaiting_confirmation": "to confirm", "processing": "deciding"}.get(batch.status, batch.status)
    return (str(batch.id), status, f"{batch.processed}/{batch.total}", source[:22])


class ImportsScreen(StrataScreen):
    """Batches on the left; the selected batch's items and decisions on the right."""

    MODE = "imports"
    AUTO_FOCUS = "#batches"
    TITLE = "Imports"

    BINDINGS = [
        Binding("o", "open_file", "Open file", id="imports.open", tooltip="Type the path of an export to preview"),
        Binding("p", "paste", "Paste", id="imports.paste", tooltip="Paste an export to preview"),
        *[Binding(key, f"decide('{action}')", action.capitalize(), show=False, id=f"imports.{action}",
                  tooltip=f"Set the selected item to {action}") for action, key in ACTION_KEYS.items()],
        Binding("t", "next_target", "Target", show=False, id="imports.target",
                tooltip="Use the next of the item's matches as its target"),
        Binding("C", "commit", "Commit", id="imports.commit", tooltip="Apply the batch (asks first)"),
        Binding("U", "undo", "Undo", id="imports.undo", tooltip="Undo the committed batch (asks first)"),
        Binding("escape", "focus_batches", "Batches", show=False, id="imports.batches", tooltip="Back to batches"),
    ]

    @dataclass
    class BatchesLoaded(Message):
        rows: list
        select_id: int | None = None

    @dataclass
    class PreviewLoaded(Message):
        preview: object

    @dataclass
    class PreviewProgress(Message):
        done: int
        total: int
        label: str

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ImportsScreen.PreviewProgress)

    @dataclass
    class ItemDecided(Message):
        item: object

    @dataclass
    class Committed(Message):
        preview: object

    @dataclass
    class Undone(Message):
        result: object

    def __init__(self) -> None:
        super().__init__()
        self.preview = None
        self.undo_result = None
        self.target: str | None = None
        """The namespace imports go into and whose batches are listed."""

    def compose(self) -> ComposeResult:
        yield self.compose_header()
        with Vertical(classes="view-body"):
            with Horizontal(classes="filter-bar", id="import-bar"):
                yield Input(placeholder="path of an export to preview (tab completes, enter previews)…",
                            suggester=PathSuggester(), id="i-path", compact=True)
                yield Label("into", classes="filter-label")
                yield Input(placeholder="namespace", id="i-namespace", compact=True,
                            tooltip="The namespace to import into (a new one is created on commit)")
                yield Select(FORMATS, value="v2", allow_blank=False, compact=True, id="i-format")
                yield ProgressBar(id="i-progress", show_eta=False)
            with Horizontal(id="import-panes"):
                with Vertical(id="batch-side", classes="side-pane"):
                    yield Label("Batches", classes="pane-title")
                    table = PagedTable(id="batches", classes="loadable")
                    table.add_columns("#", "status", "done", "source")
                    yield table
                with Vertical(id="batch-main"):
                    yield Static("Open a file (o) or paste an export (p) to preview an import.", id="batch-head")
                    yield DataTable(id="items", cursor_type="row", zebra_stripes=True)
                    with VerticalScroll(id="item-detail", classes="detail-pane"):
                        yield Static("", id="item-text")
        yield EmptyState(id="empty")
        yield self.compose_footer()

    def on_mount(self) -> None:
        self.query_one("#items", DataTable).add_columns("#", "you?", "action", "conf", "matches", "target",
                                                        "title", "reason")
        self.query_one("#i-progress", ProgressBar).display = False
        super().on_mount()

    # ------------------------------------------------------------------ target namespace

    def refresh_view(self) -> None:
        """Unlike the other views, Imports is usable on an empty store: it imports into a
        namespace that the commit creates."""
        self.loaded_namespace = self.namespace
        self.loaded_version = self.workbench.data_version
        self._loaded_once = True
        self.show_empty(False)
        if self.namespace is not None or self.target is None:
            from core.services.spaces import DEFAULT_NAMESPACE

            self.set_target(self.namespace or self.workbench.config.namespace or DEFAULT_NAMESPACE)
        self.reload()

    def set_target(self, name: str) -> None:
        self.target = name
        field = self.query_one("#i-namespace", Input)
        if field.value != name:
            with field.prevent(Input.Changed):
                field.value = name

    def _typed_target(self) -> str | None:
        """The namespace in the field (checked), or None after telling the user why not."""
        from core.errors import InvalidInputError
        from core.services.spaces import validate_name

        value = self.query_one("#i-namespace", Input).value.strip()
        try:
            return validate_name(value)
        except InvalidInputError as exc:
            self.notify(str(exc), title="namespace", severity="error")
            return None

    @on(Input.Submitted, "#i-namespace")
    def _target_submitted(self) -> None:
        name = self._typed_target()
        if name is not None and name != self.target:
            self.target = name
            self.preview = None
            self.load_batches()
        self.query_one("#batches", PagedTable).request_focus()

    # ------------------------------------------------------------------ batches

    def reload(self) -> None:
        self.load_batches()

    def load_batches(self, select_id: int | None = None) -> None:
        ns = self.target

        def batches():
            from core.services.imports import list_batches

            return list_batches(ns, limit=200)

        self.query_one("#batches", PagedTable).start_loading()
        self.fetch("batches", batches, lambda rows: self.BatchesLoaded(rows, select_id))

    @on(BatchesLoaded)
    def _batches_loaded(self, event: BatchesLoaded) -> None:
        table = self.query_one("#batches", PagedTable)
        table.reset()
        table.append_page(event.rows, [batch_cells(b) for b in event.rows], False)
        table.stop_loading()
        self.workbench.mark("imports:list")
        if not event.rows:
            self.preview = None
            where = (f"namespace {self.target}" if self.target in self.workbench.namespaces else
                     f"the new namespace {self.target} (created when you commit)")
            self.query_one("#batch-head", Static).update(Content.from_markup(
                "No imports yet in $where. Open an export file (o) or paste one (p): Strata previews every "
                "item against what it already remembers, and nothing is written until you commit. The "
                "namespace field picks where it goes.", where=where))
            self.query_one("#items", DataTable).clear()
            return
        index = 0
        if event.select_id is not None:
            index = next((i for i, b in enumerate(event.rows) if b.id == event.select_id), 0)
        table.move_cursor(row=index)
        self.load_preview(event.rows[index].id)

    @on(PagedTable.RowHighlighted, "#batches")
    def _batch_highlighted(self) -> None:
        batch = self.query_one("#batches", PagedTable).current
        if batch is not None and (self.preview is None or self.preview.batch.id != batch.id):
            self.load_preview(batch.id)

    def load_preview(self, batch_id: int) -> None:
        def preview():
            from core.services.imports import get_batch

            return get_batch(batch_id)

        self.fetch("preview", preview, self.PreviewLoaded)

    @on(PreviewLoaded)
    def _preview_loaded(self, event: PreviewLoaded) -> None:
        self.show_preview(event.preview)

    def show_preview(self, preview, keep_row: int | None = None) -> None:
        self.preview = preview
        batch = preview.batch
        counts = " · ".join(f"{n} {a}" for a, n in sorted(batch.counts.items()) if n) or "nothing decided yet"
        parts = [Content.from_markup("[b]import $id[/b] · $status · $format · $source\n", id=str(batch.id),
                                     status=batch.status, format=batch.format, source=batch.source_name or "pasted")]
        parts.append(Content.from_markup("$counts · threshold $th · $n to choose", counts=counts,
                                         th=f"{batch.threshold:.2f}", n=str(batch.needs_confirmation)))
        if batch.status == "committed":
            parts.append(Content.from_markup("\n[b $success]committed[/] $at: $n events imported · U undoes it",
                                             at=(batch.committed_at or "")[:19], n=str(batch.imported_count)))
        if batch.status == "undone":
            parts.append(Content.from_markup("\n[b $warning]undone[/] $at", at=(batch.undone_at or "")[:19]))
        if self.undo_result is not None and self.undo_result.batch.id == batch.id:
            r = self.undo_result
            parts.append(Content.from_markup(
                "\nundo removed events $removed, restored $restored; graph rows removed $gr, restored $gs",
                removed=", ".join(map(str, r.removed_event_ids)) or "none",
                restored=", ".join(map(str, r.restored_event_ids)) or "none",
                gr=str(r.graph_removed), gs=str(r.graph_restored)))
        if batch.status in ("ready", "awaiting_confirmation"):
            parts.append(Content("\nC commits (asks first); a/m/s/x/i set an item's action, t its target."))
        if batch.warnings:
            parts.append(Content.from_markup("\n[dim]$w[/dim]", w="; ".join(batch.warnings)[:200]))
        self.query_one("#batch-head", Static).update(Content("").join(parts))
        table = self.query_one("#items", DataTable)
        row = table.cursor_row if keep_row is None else keep_row
        table.clear()
        for item in preview.items:
            table.add_row(*item_cells(item), key=str(item.position))
        if preview.items:
            table.move_cursor(row=min(max(row, 0), len(preview.items) - 1))
            self._show_item(table.cursor_row)
        self.refresh_bindings()

    @on(DataTable.RowHighlighted, "#items")
    def _item_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_item(event.cursor_row)

    def _current_item(self):
        if self.preview is None:
            return None
        row = self.query_one("#items", DataTable).cursor_row
        items = self.preview.items
        return items[row] if 0 <= row < len(items) else None

    def _show_item(self, row: int) -> None:
        if self.preview is None or not 0 <= row < len(self.preview.items):
            return
        item = self.preview.items[row]
        c = item.candidate
        parts = [Content.from_markup("[b]$title[/b]\n$summary\n", title=c.title, summary=c.summary)]
        when = c.happened_start or c.mentioned_at or "no time"
        parts.append(Content.from_markup("[dim]$when · $who · confidence $conf$dup[/dim]\n", when=when,
                                         who=", ".join(c.participants) or "no participants",
                                         conf="-" if item.confidence is None else f"{item.confidence:.2f}",
                                         dup=f" · duplicate of event {item.duplicate_of_event}"
                                         if item.duplicate_of_event else ""))
        parts.append(Content.from_markup("[b $primary]decision[/] $action $targets: $reason\n",
                                         action=(item.effective_action or item.action or "undecided").upper(),
                                         targets=", ".join(f"#{t}" for t in item.effective_target_ids),
                                         reason=item.reason or ""))
        for match in item.matches:
            chosen = "▶ " if match.event_id in item.effective_target_ids else "  "
            parts.append(Content.from_markup("$mark#$id $title [dim]($status, score $score)[/dim]\n",
                                             mark=chosen, id=str(match.event_id), title=match.title,
                                             status=match.status, score=f"{match.score:.3f}"))
        if item.created_event_id:
            parts.append(Content.from_markup("imported as event $id\n", id=str(item.created_event_id)))
        self.query_one("#item-text", Static).update(Content("").join(parts))

    # ------------------------------------------------------------------ preview

    def action_open_file(self) -> None:
        self.query_one("#i-path", Input).focus()

    @on(Input.Submitted, "#i-path")
    def _path_submitted(self, event: Input.Submitted) -> None:
        path = os.path.expanduser(event.value.strip())
        if not path:
            return
        if not Path(path).is_file():
            self.notify(f"{path} is not a file", severity="error")
            return
        self.start_preview(path=path)

    def action_paste(self) -> None:
        def pasted(text: str | None) -> None:
            if text:
                self.start_preview(text=text)

        self.app.push_screen(PasteScreen(), pasted)

    def start_preview(self, *, path: str | None = None, text: str | None = None) -> None:
        ns = self._typed_target()
        if ns is None:
            return
        if ns != self.target:
            self.target = ns
        fmt = str(self.query_one("#i-format", Select).value)
        bar = self.query_one("#i-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        screen = self

        def progress(done: int, total: int, label: str) -> None:
            screen.post_message(screen.PreviewProgress(done, total, label))

        def preview():
            from core.services.imports import preview_file, preview_import

            if path is not None:
                return preview_file(ns, path, format=fmt, progress=progress)
            return preview_import(ns, text or "", format=fmt, source_name=None, progress=progress)

        self.fetch("preview-run", preview, self.PreviewLoaded)
        self.query_one("#batch-head", Static).update("Deciding every item against what Strata remembers…")

    @on(PreviewProgress)
    def _progress(self, event: PreviewProgress) -> None:
        bar = self.query_one("#i-progress", ProgressBar)
        bar.update(total=max(1, event.total), progress=event.done)

    @on(PreviewLoaded)
    def _preview_done(self, event: PreviewLoaded) -> None:
        self.query_one("#i-progress", ProgressBar).display = False
        table = self.query_one("#batches", PagedTable)
        if not any(b.id == event.preview.batch.id for b in table.items):
            self.load_batches(select_id=event.preview.batch.id)

    def load_failed(self, event) -> None:
        super().load_failed(event)
        self.query_one("#i-progress", ProgressBar).display = False

    # ------------------------------------------------------------------ decide / commit / undo

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        status = self.preview.batch.status if self.preview is not None else None
        if action in ("decide", "next_target", "commit"):
            return status in ("ready", "awaiting_confirmation")
        if action == "undo":
            return status == "committed"
        return True

    def action_decide(self, action: str, targets: list[int] | None = None) -> None:
        item = self._current_item()
        if item is None or self.preview is None:
            return
        batch_id = self.preview.batch.id
        if action in ("merge", "supersede", "conflict") and not (targets or item.effective_target_ids
                                                                   or item.target_ids):
            if not item.matches:
                self.notify(f"item {item.position} has no stored match to {action}", severity="warning")
                return
            targets = [item.matches[0].event_id]

        def decide():
            from core.services.imports import decide as decide_item, get_batch

            decide_item(batch_id, item.position, action, targets)
            return get_batch(batch_id)

        row = self.query_one("#items", DataTable).cursor_row
        self.fetch("decide", decide, lambda preview: self.ItemDecided((preview, row)))

    @on(ItemDecided)
    def _decided(self, event: ItemDecided) -> None:
        preview, row = event.item
        self.show_preview(preview, keep_row=row)

    def action_next_target(self) -> None:
        item = self._current_item()
        if item is None or not item.matches:
            return
        ids = [m.event_id for m in item.matches]
        current = item.effective_target_ids[0] if item.effective_target_ids else None
        following = ids[(ids.index(current) + 1) % len(ids)] if current in ids else ids[0]
        action = item.effective_action if item.effective_action in ("merge", "supersede", "conflict") else "merge"
        self.action_decide(action, [following])

    def action_commit(self) -> None:
        if self.preview is None:
            return
        batch = self.preview.batch
        counts = ", ".join(f"{n} {a}" for a, n in sorted(batch.counts.items()) if n) or "nothing"
        body = (f"Apply import {batch.id} to namespace {batch.namespace}: {counts}. "
                f"{batch.needs_confirmation} item(s) still marked CHOOSE will be ignored. "
                "Everything is written in one transaction and can be undone as a whole.")

        def answered(yes: bool | None) -> None:
            if yes:
                self._commit(batch.id)

        self.app.push_screen(ConfirmScreen("Commit import", body, "Commit"), answered)

    def _commit(self, batch_id: int) -> None:
        def commit():
            from core.services.imports import commit_batch

            return commit_batch(batch_id)

        self.fetch("commit", commit, self.Committed)

    @on(Committed)
    def _committed(self, event: Committed) -> None:
        batch = event.preview.batch
        self.workbench.data_changed()
        self.notify(f"import {batch.id} committed: {batch.imported_count} events into {batch.namespace}; "
                    "see them in the timeline (2)", timeout=6)
        self.load_batches(select_id=batch.id)
        if batch.namespace != self.namespace:
            self.workbench.show_namespace(batch.namespace)  # new namespaces appear in the switcher

    def action_undo(self) -> None:
        if self.preview is None:
            return
        batch = self.preview.batch

        def answered(yes: bool | None) -> None:
            if yes:
                self._undo(batch.id)

        self.app.push_screen(ConfirmScreen(
            "Undo import", f"Remove the {batch.imported_count} event(s) import {batch.id} added and restore what "
            "it changed? Later unrelated memory stays. An import can be undone once.", "Undo", danger=True),
            answered)

    def _undo(self, batch_id: int) -> None:
        def undo():
            from core.services.imports import undo_batch

            return undo_batch(batch_id)

        self.fetch("undo", undo, self.Undone)

    @on(Undone)
    def _undone(self, event: Undone) -> None:
        self.undo_result = event.result
        self.workbench.data_changed()
        r = event.result
        self.notify(f"import {r.batch.id} undone: {len(r.removed_event_ids)} events removed, "
                    f"{len(r.restored_event_ids)} restored", timeout=6)
        self.load_batches(select_id=r.batch.id)

    def action_focus_batches(self) -> None:
        self.query_one("#batches", PagedTable).focus()

    def copy_text(self) -> str | None:
        item = self._current_item()
        if item is None:
            return None
        return f"{item.candidate.title}\n{item.candidate.summary}\n{(item.effective_action or '').upper()}: " \
               f"{item.reason or ''}"

    def palette_commands(self):
        commands = [("import: Open file…", "Preview an export file", self.action_open_file),
                    ("import: Paste text…", "Preview a pasted export", self.action_paste)]
        if self.preview is not None and self.preview.batch.status in ("ready", "awaiting_confirmation"):
            commands.append(("import: Commit batch", "Apply the selected batch (asks first)", self.action_commit))
        if self.preview is not None and self.preview.batch.status == "committed":
            commands.append(("undo: Last import", "Undo the selected committed batch (asks first)",
                             self.action_undo))
        return commands
