"""Imports: bring another assistant's memory in, decide item by item, commit, undo.

Open a file (the path input completes with tab or →; a ``.txt`` or ``.md`` file is read as a
list of facts) or paste text; the preview decides every item (add, merge, supersede,
conflict or ignore, with confidence, matches and a reason) while a progress bar moves.

The keyboard path: the batch list, enter (or →) into its items, enter into the focused item's
detail; esc goes back one step. Items below the confidence threshold wait for a person
(``choose``, their proposed action shown with a ``?`` and their proposed targets by title);
``]``/``[`` jump to the next/previous one and ``f`` shows only them. The decision keys
(a/m/s/x/i; t for the targets, several and any event id; r resets the choice) act only on
the focused item. Commit and undo ask first; the undo result is shown in the batch pane.

The view works on an empty store too: the namespace field names where the import goes
(the open namespace, else ``default``), and a namespace that does not exist yet is
created when its first batch is committed (the workbench then switches to it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import Button, Input, Label, ProgressBar, Select, SelectionList, Static, TextArea

from core.errors import InvalidInputError
from core.imports.formats import format_for_path
from core.providers.usage import cost_estimate
from core.services.import_batches import get_batch, list_batches
from core.services.spaces import DEFAULT_NAMESPACE, validate_name
from workbench.import_facts import facts_text
from workbench.screens.base import EmptyState, StrataScreen
from workbench.textual_internals import input_suggestion
from workbench.widgets.confirm import ConfirmScreen
from workbench.widgets.lists import TextPane, move_bindings
from workbench.widgets.table import PagedTable

FORMATS = (("v2 JSON", "v2"), ("Mem0 JSON", "mem0"), ("text list", "text"))
ACTION_KEYS = {"add": "a", "merge": "m", "supersede": "s", "conflict": "x", "ignore": "i"}
TARGETED = ("merge", "supersede", "conflict")
FAILURES = {
    "preview-run": "import: the preview failed",
    "preview": "import: could not read the batch",
    "batches": "import: could not list the batches",
    "decide": "import: the choice was not recorded",
    "commit": "import: nothing was committed",
    "undo": "import: nothing was undone",
}
EDITABLE = ("ready", "awaiting_confirmation")


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


class PathInput(Input):
    """The path of an export; tab takes the completion shown (as → at the end does), else moves on."""

    BINDINGS = [
        Binding(
            "tab",
            "complete",
            "Complete",
            show=False,
            id="imports.complete",
            tooltip="Complete the path (else the next field)",
        ),
    ]

    def action_complete(self) -> None:
        suggestion = input_suggestion(self)
        if suggestion and self.cursor_at_end and len(suggestion) > len(self.value):
            self.value = suggestion
            self.cursor_position = len(self.value)
        else:
            self.screen.focus_next()


class BatchTable(PagedTable):
    """The batches; enter or → goes into the highlighted batch's items."""

    BINDINGS = [
        Binding(
            "enter,right", "open_items", "Items", show=False, id="imports.items", tooltip="Go into the batch's items"
        ),
    ]

    def action_open_items(self) -> None:
        self.screen.action_focus_items()  # type: ignore[attr-defined]


class ItemTable(PagedTable):
    """The items of a batch; enter shows the focused item's detail, ← goes back to the batches."""

    BINDINGS = [
        Binding(
            "enter",
            "open_detail",
            "Detail",
            show=False,
            id="imports.detail",
            tooltip="Into the item's detail: its decision, matches and reason",
        ),
        Binding("left", "back", "Batches", show=False, id="imports.items-back", tooltip="Back to the batches"),
    ]

    def action_open_detail(self) -> None:
        self.screen.query_one("#item-detail").focus()

    def action_back(self) -> None:
        self.screen.query_one("#batches").focus()


class DetailPane(TextPane):
    """The focused item's detail (scrolls with j/k/g/G, under ids of its own)."""

    BINDINGS = [
        Binding("j", "scroll_down", "Down", show=False, id="imports.detail-down"),
        Binding("k", "scroll_up", "Up", show=False, id="imports.detail-up"),
        Binding("g", "scroll_home", "Top", show=False, id="imports.detail-top"),
        Binding("G", "scroll_end", "End", show=False, id="imports.detail-end"),
    ]


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


class TargetList(SelectionList):
    """The item's matches to tick; enter applies the ticked ones."""

    BINDINGS = [
        Binding("enter", "apply", "Apply", id="targets.apply", tooltip="Use the ticked events as the targets"),
        *move_bindings("cursor_down", "cursor_up", "first", "last"),
    ]

    def action_apply(self) -> None:
        self.screen.action_apply()  # type: ignore[attr-defined]


class TargetScreen(ModalScreen[list[int] | None]):
    """Choose one or several target events of an item: its matches, or any event by id."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="targets.cancel", tooltip="Keep the targets as they are"),
    ]

    def __init__(self, item, action: str, current: tuple[int, ...]) -> None:
        super().__init__()
        self.item = item
        self.action_name = action
        self.current = current

    def compose(self) -> ComposeResult:
        item = self.item
        known = {m.event_id for m in item.matches}
        options = [
            (f"#{m.event_id} {m.status} {m.score:.3f} · {_clip(m.title, 60)}", m.event_id, m.event_id in self.current)
            for m in item.matches
        ]
        outside = [i for i in self.current if i not in known]
        with Vertical(id="target-dialog", classes="dialog"):
            yield Label(f"Targets of item {item.position} for {self.action_name.upper()}", classes="dialog-title")
            yield Static(
                "space ticks a match, enter applies; an event the search missed: type its id below", classes="muted"
            )
            yield TargetList(*options, id="target-list")
            yield Input(
                ", ".join(map(str, outside)), placeholder="other event ids, e.g. 12, 40", id="target-ids", compact=True
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply (enter)", id="target-ok", variant="primary")
                yield Button("Cancel (esc)", id="target-cancel")

    def on_mount(self) -> None:
        if self.item.matches:
            self.query_one(TargetList).focus()
        else:
            self.query_one("#target-ids", Input).focus()

    @on(Input.Submitted, "#target-ids")
    @on(Button.Pressed, "#target-ok")
    def action_apply(self) -> None:
        ticked = list(self.query_one(TargetList).selected)
        typed = [part for part in re.split(r"[\s,]+", self.query_one("#target-ids", Input).value) if part]
        bad = [part for part in typed if not part.lstrip("#").isdigit()]
        if bad:
            self.notify(f"{bad[0]!r} is not an event id", title="targets", severity="error")
            return
        ids = list(dict.fromkeys([*ticked, *(int(part.lstrip("#")) for part in typed)]))
        if not ids:
            self.notify(
                "tick a match or type an event id (or press i on the item to ignore it)",
                title="targets",
                severity="warning",
            )
            return
        self.dismiss(ids)

    @on(Button.Pressed, "#target-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


def _clip(text: str, width: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _spent_line(batch) -> str:
    """What the batch's model calls used and an estimate of their cost (tokens alone when the
    price settings are invalid: the view must still show the batch)."""

    u = batch.usage
    text = (
        f"{batch.provider}: {u['calls']} model call(s) · {u['prompt_tokens']} + {u['completion_tokens']} tokens "
        f"reported"
    )
    try:
        cost = cost_estimate(u)
    except InvalidInputError as exc:
        return f"{text} · no cost estimate: {exc}"
    return f"{text} · estimated cost {cost['estimated_cost']:.4f} {cost['currency']} (an estimate, not a bill)"


def waiting(item, batch=None) -> bool:
    """The item waits for a person: below the threshold (or recovered) and not chosen yet."""
    if batch is not None and batch.status not in EDITABLE:
        return False
    return bool(
        item.state == "decided"
        and item.requires_confirmation
        and not item.choice_action
        and item.created_event_id is None
    )


def shown_targets(item, batch=None) -> tuple[int, ...]:
    """The targets a row names: the proposal's while the item waits, else what commit applies."""
    if waiting(item, batch):
        return tuple(item.target_ids)
    return tuple(item.effective_target_ids or (item.target_ids if item.effective_action is None else ()))


def target_titles(item) -> dict[int, str]:
    return {m.event_id: m.title for m in (*item.matches, *getattr(item, "chosen_events", ()))}


def item_cells(item, batch=None) -> tuple:
    if waiting(item, batch):
        flag, action = "choose", f"{(item.action or 'undecided').upper()}?"
    else:
        flag = "you" if item.choice_action else ""
        action = (item.effective_action or item.action or "…").upper()
    confidence = "-" if item.confidence is None else f"{item.confidence:.2f}"
    titles = target_titles(item)
    ids = shown_targets(item, batch)
    more = f" +{len(ids) - 1}" if len(ids) > 1 else ""
    target = _clip(f"#{ids[0]} {titles.get(ids[0], '')}".rstrip(), 24 - len(more)) + more if ids else "-"
    return (str(item.position), flag, action, confidence, _clip(item.candidate.title, 24), target)


def batch_cells(batch) -> tuple:
    source = Path(batch.source_name).name if batch.source_name else "pasted"
    status = {"awaiting_confirmation": "to confirm", "processing": "deciding"}.get(batch.status, batch.status)
    return (str(batch.id), status, f"{batch.processed}/{batch.total}", source[:22])


class ImportsScreen(StrataScreen):
    """Batches on the left; the selected batch's items and the focused item's detail on the right."""

    MODE = "imports"
    AUTO_FOCUS = "#batches"
    TITLE = "Imports"
    KEYMAP_WIDGETS = (PathInput, BatchTable, ItemTable, DetailPane, TargetList, TargetScreen, PasteScreen)
    """Widgets and dialogs of this view whose bindings a keymap may remap (and `?` lists)."""

    BINDINGS = [
        Binding("o", "open_file", "Open file", id="imports.open", tooltip="Type the path of an export to preview"),
        Binding("p", "paste", "Paste", id="imports.paste", tooltip="Paste an export to preview"),
        *[
            Binding(
                key,
                f"decide('{action}')",
                action.capitalize(),
                show=False,
                id=f"imports.{action}",
                tooltip=f"Set the focused item to {action}",
            )
            for action, key in ACTION_KEYS.items()
        ],
        Binding(
            "t",
            "choose_targets",
            "Targets",
            show=False,
            id="imports.target",
            tooltip="Choose the focused item's target events: several, any event id",
        ),
        Binding(
            "r",
            "reset",
            "Reset",
            show=False,
            id="imports.reset",
            tooltip="Forget your choice for the focused item: the preview's decision applies again",
        ),
        Binding(
            "R",
            "reset_all",
            "Reset all",
            show=False,
            id="imports.reset-all",
            tooltip="Forget every choice made in the batch (asks first)",
        ),
        Binding(
            "right_square_bracket",
            "next_waiting(1)",
            "Next to decide",
            id="imports.next-waiting",
            tooltip="The next item waiting for a decision",
        ),
        Binding(
            "left_square_bracket",
            "next_waiting(-1)",
            "Previous to decide",
            show=False,
            id="imports.previous-waiting",
            tooltip="The previous item waiting for a decision",
        ),
        Binding(
            "f",
            "filter_waiting",
            "To decide",
            id="imports.filter",
            tooltip="Show only the items waiting for a decision (again: every item)",
        ),
        Binding("C", "commit", "Commit", id="imports.commit", tooltip="Apply the batch (asks first)"),
        Binding("U", "undo", "Undo", id="imports.undo", tooltip="Undo the committed batch (asks first)"),
        Binding(
            "escape", "back", "Back", show=False, id="imports.batches", tooltip="One step back: detail, items, batches"
        ),
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
        self.only_waiting = False
        """Whether the item list shows only the items waiting for a decision."""
        self.notice: str | None = None
        """Why the last preview failed, shown in the batch pane until the next one."""
        self._focus_items = False

    def compose(self) -> ComposeResult:
        yield self.compose_header()
        with Vertical(classes="view-body"):
            with Horizontal(classes="filter-bar", id="import-bar"):
                yield PathInput(
                    placeholder="path of an export to preview (tab completes, enter previews)…",
                    suggester=PathSuggester(),
                    id="i-path",
                    compact=True,
                )
                yield Label("into", classes="filter-label")
                yield Input(
                    placeholder="namespace",
                    id="i-namespace",
                    compact=True,
                    tooltip="The namespace to import into (a new one is created on commit)",
                )
                yield Select(FORMATS, value="v2", allow_blank=False, compact=True, id="i-format")
                yield ProgressBar(id="i-progress", show_eta=False)
            with Horizontal(id="import-panes"):
                with Vertical(id="batch-side", classes="side-pane collapsible"):
                    yield Label("Batches", classes="pane-title")
                    table = BatchTable(id="batches", classes="loadable")
                    table.add_columns("#", "status", "done", "source")
                    yield table
                with Vertical(id="batch-main"):
                    yield Static("Open a file (o) or paste an export (p) to preview an import.", id="batch-head")
                    yield ItemTable(id="items", flex="candidate", flex_min=16)
                    with DetailPane(id="item-detail", classes="detail-pane"):
                        yield Static("", id="item-text")
        yield EmptyState(id="empty")
        yield self.compose_footer()

    def on_mount(self) -> None:
        self.query_one("#items", ItemTable).add_columns("#", "you?", "action", "conf", "candidate", "target")
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
            self.render_head()
            self.query_one("#items", ItemTable).reset()
            self.query_one("#item-text", Static).update("")
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

            return get_batch(batch_id)

        self.fetch("preview", preview, self.PreviewLoaded)

    @on(PreviewLoaded)
    def _preview_loaded(self, event: PreviewLoaded) -> None:
        self.notice = None
        self.show_preview(
            event.preview,
            keep_row=0 if self.preview is None or self.preview.batch.id != event.preview.batch.id else None,
        )

    def render_head(self) -> None:
        """The batch pane: what the batch is and holds, what to press, and a failed preview's error."""
        parts: list[Content] = []
        preview = self.preview
        if preview is None:
            where = (
                f"namespace {self.target}"
                if self.target in self.workbench.namespaces
                else f"the new namespace {self.target} (created when you commit)"
            )
            parts.append(
                Content.from_markup(
                    "No imports yet in $where. Open an export file (o) or paste one (p): Strata previews every "
                    "item against what it already remembers, and nothing is written until you commit. The "
                    "namespace field picks where it goes.",
                    where=where,
                )
            )
        else:
            batch = preview.batch
            counts = " · ".join(f"{n} {a}" for a, n in sorted(batch.counts.items()) if n) or "nothing decided yet"
            parts.append(
                Content.from_markup(
                    "[b]import $id[/b] · $status · $format · $source\n",
                    id=str(batch.id),
                    status=batch.status,
                    format=batch.format,
                    source=batch.source_name or "pasted",
                )
            )
            parts.append(
                Content.from_markup(
                    "$counts · threshold $th · $n to choose",
                    counts=counts,
                    th=f"{batch.threshold:.2f}",
                    n=str(batch.needs_confirmation),
                )
            )
            if getattr(batch, "usage", None):
                parts.append(Content.from_markup("\n$spent", spent=_spent_line(batch)))
            if self.only_waiting:
                parts.append(
                    Content.from_markup(
                        "\n[b]showing only the $n waiting for a decision[/b] (f shows all)",
                        n=str(sum(waiting(i, batch) for i in preview.items)),
                    )
                )
            if batch.status == "committed":
                parts.append(
                    Content.from_markup(
                        "\n[b $success]committed[/] $at: $n events imported · U undoes it",
                        at=(batch.committed_at or "")[:19],
                        n=str(batch.imported_count),
                    )
                )
            if batch.status == "undone":
                parts.append(Content.from_markup("\n[b $warning]undone[/] $at", at=(batch.undone_at or "")[:19]))
            if self.undo_result is not None and self.undo_result.batch.id == batch.id:
                r = self.undo_result
                parts.append(
                    Content.from_markup(
                        "\nundo removed events $removed, restored $restored; graph rows removed $gr, restored $gs",
                        removed=", ".join(map(str, r.removed_event_ids)) or "none",
                        restored=", ".join(map(str, r.restored_event_ids)) or "none",
                        gr=str(r.graph_removed),
                        gs=str(r.graph_restored),
                    )
                )
            if batch.status in EDITABLE:
                parts.append(
                    Content(
                        "\nenter: items · a/m/s/x/i decide · t targets · r reset · ]/[ next to "
                        "decide · f only those · C commit"
                    )
                )
            if batch.warnings:
                parts.append(Content.from_markup("\n[dim]$w[/dim]", w="; ".join(batch.warnings)[:200]))
        if self.notice:
            parts.append(Content.from_markup("\n[b $error]$notice[/]", notice=self.notice))
        self.query_one("#batch-head", Static).update(Content("").join(parts))

    def show_preview(self, preview, keep_row: int | None = None, keep_position: int | None = None) -> None:
        self.preview = preview
        self.render_head()
        table = self.query_one("#items", ItemTable)
        row = table.cursor_row if keep_row is None else keep_row
        shown = [i for i in preview.items if not self.only_waiting or waiting(i, preview.batch)]
        if keep_position is not None:
            row = next((n for n, i in enumerate(shown) if i.position == keep_position), row)
        table.reset()
        table.append_page(shown, [item_cells(i, preview.batch) for i in shown], False)
        if shown:
            table.move_cursor(row=min(max(row, 0), len(shown) - 1))
            self._show_item(table.current)
            if self._focus_items:
                self._focus_items = False
                table.focus()
        else:
            self.query_one("#item-text", Static).update(
                "Nothing waits for a decision: f shows every item." if self.only_waiting and preview.items else ""
            )
        self.refresh_bindings()

    @on(PagedTable.RowHighlighted, "#items")
    def _item_highlighted(self) -> None:
        self._show_item(self.query_one("#items", ItemTable).current)

    def _current_item(self):
        return self.query_one("#items", ItemTable).current if self.preview is not None else None

    def _show_item(self, item) -> None:
        if item is None or self.preview is None:
            return
        self.query_one("#item-text", Static).update(item_detail(item, self.preview.batch))

    # ------------------------------------------------------------------ moving around

    def focus_item(self, kind: str, item_id: int, level: int | None = None) -> None:
        """Open an import batch (the Review view links its waiting items here), in its items."""
        if kind != "import":
            return
        self._focus_items = True
        self.load_batches(select_id=item_id)

    def action_focus_items(self) -> None:
        items = self.query_one("#items", ItemTable)
        if items.row_count:
            items.focus()
        elif self.preview is not None and self.only_waiting:
            self.notify("nothing waits for a decision; f shows every item", severity="information")

    def action_back(self) -> None:
        focused = self.focused
        detail = self.query_one("#item-detail", DetailPane)
        if focused is detail or (focused is not None and detail in focused.ancestors):
            self.query_one("#items", ItemTable).focus()
        else:
            self.query_one("#batches", PagedTable).focus()

    def _item_focused(self) -> bool:
        focused = self.focused
        return focused is not None and (
            focused.id in ("items", "item-detail") or any(a.id == "item-detail" for a in focused.ancestors)
        )

    def action_next_waiting(self, step: int = 1) -> None:
        if self.preview is None:
            return
        table = self.query_one("#items", ItemTable)
        rows = [n for n, item in enumerate(table.items) if waiting(item, self.preview.batch)]
        if not rows:
            self.notify("no item waits for a decision", severity="information")
            return
        here = table.cursor_row if self._item_focused() else (-1 if step > 0 else len(table.items))
        if step > 0:
            row = next((n for n in rows if n > here), rows[0])
        else:
            row = next((n for n in reversed(rows) if n < here), rows[-1])
        table.focus()
        table.move_cursor(row=row)

    def action_filter_waiting(self) -> None:
        if self.preview is None:
            return
        current = self._current_item()
        self.only_waiting = not self.only_waiting
        self.show_preview(self.preview, keep_row=0, keep_position=current.position if current else None)

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

        # The picker follows what the file name says (a list of facts, or JSON: v2 unless Mem0 is
        # picked), and shows it, so the batch's format is no surprise.
        picker = self.query_one("#i-format", Select)
        if format_for_path(path) == "text":
            picker.value = "text"
        elif picker.value == "text":
            picker.value = "v2"
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
        self.notice = None
        screen = self

        def progress(done: int, total: int, label: str) -> None:
            screen.post_message(screen.PreviewProgress(done, total, label))

        def preview():
            # start-up time, here and below: the services `strata` has not loaded for its parser load when a view
            # first reads, on the database thread, not before the first paint
            from core.services.import_preview import preview_file, preview_import

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
        if isinstance(self.focused, (PathInput, TextArea)) or self.focused is None:
            # A new preview is there to be decided: its items take the keys, not the path field.
            self._focus_items = True
        table = self.query_one("#batches", PagedTable)
        if not any(b.id == event.preview.batch.id for b in table.items):
            self.load_batches(select_id=event.preview.batch.id)
        elif self._focus_items:
            self._focus_items = False
            self.action_focus_items()

    def failure_title(self, group: str) -> str:
        return FAILURES.get(group, "import: something went wrong")

    def load_failed(self, event) -> None:
        super().load_failed(event)
        self.query_one("#i-progress", ProgressBar).display = False
        if event.group == "preview-run":
            # The "Deciding every item…" line goes: the pane shows what it showed before, and why.
            self.notice = f"The preview failed: {event.error}"
            self.render_head()
        elif event.group in ("commit", "decide") and self.preview is not None:
            # A commit refused as stale has refreshed the preview, and a refused choice may follow a
            # change made elsewhere: show the batch as it is now.
            self.load_preview(self.preview.batch.id)

    # ------------------------------------------------------------------ decide / commit / undo

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        status = self.preview.batch.status if self.preview is not None else None
        if action in ("decide", "choose_targets", "reset"):
            # Only on the item the person is looking at: never on a row the cursor left behind.
            return status in EDITABLE and self._item_focused()
        if action in ("commit", "reset_all"):
            return status in EDITABLE
        if action in ("next_waiting", "filter_waiting"):
            return self.preview is not None and bool(self.preview.items)
        if action == "undo":
            return status == "committed"
        return True

    def action_decide(self, action: str, targets: list[int] | None = None) -> None:
        item = self._current_item()
        if item is None or self.preview is None:
            return
        batch_id = self.preview.batch.id
        if action in TARGETED and not targets:
            targets = list(item.choice_target_ids or item.effective_target_ids or item.target_ids) or (
                [item.matches[0].event_id] if item.matches else []
            )
            if not targets:
                self.notify(
                    f"item {item.position} has no stored match to {action}: t names a target by its id",
                    severity="warning",
                )
                return
        if action not in TARGETED:
            targets = None

        def decide():
            from core.services.import_choices import decide as decide_item

            decide_item(batch_id, item.position, action, targets)
            return get_batch(batch_id)

        self._change("decide", decide, item.position)

    def _change(self, group: str, call, position: int | None) -> None:
        row = self.query_one("#items", ItemTable).cursor_row
        self.fetch(group, call, lambda preview: self.ItemDecided((preview, row, position)))

    @on(ItemDecided)
    def _decided(self, event: ItemDecided) -> None:
        preview, row, position = event.item
        # Filtered to the waiting items, a decided item leaves the list: the cursor stays on its row,
        # which is then the next one waiting.
        self.show_preview(preview, keep_row=row, keep_position=None if self.only_waiting else position)

    def action_choose_targets(self) -> None:
        item = self._current_item()
        if item is None:
            return
        action = next((a for a in (item.choice_action, item.effective_action, item.action) if a in TARGETED), "merge")
        current = tuple(
            item.choice_target_ids if item.choice_action in TARGETED else item.effective_target_ids or item.target_ids
        )

        def chosen(ids: list[int] | None) -> None:
            if ids:
                self.action_decide(action, ids)

        self.app.push_screen(TargetScreen(item, action, current), chosen)

    def action_reset(self) -> None:
        item = self._current_item()
        if item is None or self.preview is None:
            return
        batch_id, position = self.preview.batch.id, item.position

        def reset():
            from core.services.import_choices import reset_choice

            return reset_choice(batch_id, position)

        self._change("decide", reset, position)

    def action_reset_all(self) -> None:
        if self.preview is None:
            return
        batch = self.preview.batch
        chosen = sum(1 for i in self.preview.items if i.choice_action)

        def answered(yes: bool | None) -> None:
            if not yes:
                return

            def reset():
                from core.services.import_choices import reset_choice

                return reset_choice(batch.id)

            self._change("decide", reset, None)

        self.app.push_screen(
            ConfirmScreen(
                "Reset choices",
                f"Forget the {chosen} choice(s) made in import {batch.id}? Every item goes back to the "
                "preview's decision; those below the threshold wait for a decision again.",
                "Reset",
            ),
            answered,
        )

    def action_commit(self) -> None:
        if self.preview is None:
            return
        batch = self.preview.batch
        counts = ", ".join(f"{n} {a}" for a, n in sorted(batch.counts.items()) if n) or "nothing"
        body = (
            f"Apply import {batch.id} to namespace {batch.namespace}: {counts}. "
            f"{batch.needs_confirmation} item(s) still marked choose will be ignored. "
            "Everything is written in one transaction and can be undone as a whole."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._commit(batch.id)

        self.app.push_screen(ConfirmScreen("Commit import", body, "Commit"), answered)

    def _commit(self, batch_id: int) -> None:
        def commit():
            from core.services.import_commit import commit_batch

            return commit_batch(batch_id)

        self.fetch("commit", commit, self.Committed)

    @on(Committed)
    def _committed(self, event: Committed) -> None:
        batch = event.preview.batch
        self.workbench.data_changed()
        self.notify(
            f"import {batch.id} committed: {batch.imported_count} events into {batch.namespace}; "
            "see them in the timeline (2)",
            timeout=6,
        )
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

        self.app.push_screen(
            ConfirmScreen(
                "Undo import",
                f"Remove the {batch.imported_count} event(s) import {batch.id} added and restore what "
                "it changed? Later unrelated memory stays. An import can be undone once.",
                "Undo",
                danger=True,
            ),
            answered,
        )

    def _undo(self, batch_id: int) -> None:
        def undo():
            from core.services.import_undo import undo_batch

            return undo_batch(batch_id)

        self.fetch("undo", undo, self.Undone)

    @on(Undone)
    def _undone(self, event: Undone) -> None:
        self.undo_result = event.result
        self.workbench.data_changed()
        r = event.result
        self.notify(
            f"import {r.batch.id} undone: {len(r.removed_event_ids)} events removed, "
            f"{len(r.restored_event_ids)} restored",
            timeout=6,
        )
        self.load_batches(select_id=r.batch.id)

    def copy_text(self) -> str | None:
        item = self._current_item()
        if item is None:
            return None
        titles = target_titles(item)
        targets = "; ".join(f"#{i} {titles.get(i, '')}".strip() for i in shown_targets(item, self.preview.batch))
        return (
            f"{item.candidate.title}\n{item.candidate.summary}\n{(item.effective_action or '').upper()}"
            f"{' ' + targets if targets else ''}: {item.reason or ''}"
        )

    def palette_commands(self):
        commands = [
            ("import: Open file…", "Preview an export file", self.action_open_file),
            ("import: Paste text…", "Preview a pasted export", self.action_paste),
        ]
        if self.preview is not None and self.preview.items:
            commands.append(
                ("import: Next item to decide", "The next item waiting for a decision", self.action_next_waiting)
            )
            commands.append(
                (
                    "import: Only items to decide" if not self.only_waiting else "import: Every item",
                    "Filter the items waiting for a decision",
                    self.action_filter_waiting,
                )
            )
        if self.preview is not None and self.preview.batch.status in EDITABLE:
            commands.append(("import: Commit batch", "Apply the selected batch (asks first)", self.action_commit))
            commands.append(
                (
                    "import: Reset every choice",
                    "The preview's decisions apply again (asks first)",
                    self.action_reset_all,
                )
            )
        if self.preview is not None and self.preview.batch.status == "committed":
            commands.append(("undo: Last import", "Undo the selected committed batch (asks first)", self.action_undo))
        return commands


ACTION_STYLE = {action: f"$decision-{action}" for action in ("add", "merge", "supersede", "conflict", "ignore")}


def _action(action: str | None) -> Content:
    name = action or "undecided"
    style = ACTION_STYLE.get(name, "")
    return Content.from_markup(f"[b {style}]$a[/]" if style else "[b]$a[/]", a=name.upper())


def item_detail(item, batch) -> Content:
    """What the focused item is, what the preview proposes and why (naming the subject, slot and
    value matched when the decision carries them), the person's choice, and the matches."""
    c = item.candidate
    titles = target_titles(item)

    def targets(ids) -> str:
        return " · ".join(f"#{i} {_clip(titles.get(i, ''), 60).rstrip('. ')}".rstrip() for i in ids)

    parts = [Content.from_markup("[b]$title[/b]\n$summary\n", title=c.title, summary=c.summary)]
    when = c.happened_start or c.mentioned_at or "no time"
    parts.append(
        Content.from_markup(
            "[dim]$when · $who · confidence $conf$dup[/dim]\n",
            when=when,
            who=", ".join(c.participants) or "no participants",
            conf="-" if item.confidence is None else f"{item.confidence:.2f}",
            dup=f" · duplicate of event {item.duplicate_of_event}" if item.duplicate_of_event else "",
        )
    )
    parts += [
        Content.from_markup("[b $primary]proposed[/] "),
        _action(item.action),
        Content.from_markup(" $t\n", t=targets(item.target_ids)),
    ]
    parts.append(Content.from_markup("[b $primary]reason[/] $r\n", r=item.reason or "none given"))
    said = facts_text(item)
    if said:
        parts.append(Content.from_markup("[b $primary]matched[/] $s\n", s=said))
    if waiting(item, batch):
        parts.append(
            Content.from_markup(
                "[b $warning]waits for you[/]: confidence below $th; ignored at commit unless you decide\n",
                th=f"{batch.threshold:.2f}",
            )
        )
    elif item.choice_action:
        parts += [
            Content.from_markup("[b $primary]your choice[/] "),
            _action(item.choice_action),
            Content.from_markup(" $t (r resets it)\n", t=targets(item.choice_target_ids)),
        ]
    if item.effective_action and item.effective_action != item.action or item.created_event_id:
        parts += [
            Content.from_markup("[b $primary]commit applies[/] "),
            _action(item.effective_action),
            Content.from_markup(" $t\n", t=targets(item.effective_target_ids)),
        ]
    chosen = set(shown_targets(item, batch)) | set(item.choice_target_ids)
    if item.matches or getattr(item, "chosen_events", ()):
        parts.append(Content.from_markup("[b $primary]matches[/] [dim](▶ target)[/dim]\n"))
    for match in (*item.matches, *getattr(item, "chosen_events", ())):
        mark = "▶ " if match.event_id in chosen else "  "
        how = f"score {match.score:.3f}" if match.score else "chosen by id"
        parts.append(
            Content.from_markup(
                "$mark#$id $title [dim]($status, $how)[/dim]\n",
                mark=mark,
                id=str(match.event_id),
                title=match.title,
                status=match.status,
                how=how,
            )
        )
        said = facts_text(match)
        if said:
            parts.append(Content.from_markup("    [dim]$s[/dim]\n", s=said))
    if item.created_event_id:
        parts.append(Content.from_markup("imported as event $id\n", id=str(item.created_event_id)))
    return Content("").join(parts)
