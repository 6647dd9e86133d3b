"""Review: everything waiting for a person (governed records, canonical-key conflicts, records past
their review date, import items whose decision needs confirming), with one key per decision and the
audit trail of the selected record."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Label, Select, Static

from core.errors import StrataError
from core.models import Event
from core.services import governance as gov
from core.services.governance import audit_trail, get_record, review_items
from core.services.notes import approve_note, delete_note
from workbench.screens.base import EmptyState, StrataScreen
from workbench.widgets.lists import TextPane
from workbench.widgets.prompt import PromptScreen
from workbench.widgets.table import PagedTable

SHOWS = (
    ("waiting for a person", "waiting"),
    ("promoted", "promoted"),
    ("rejected or revoked", "closed"),
    ("every record", "all"),
)
KINDS = (
    ("every kind", "all"),
    ("records", "record"),
    ("notes", "note"),
    ("key conflicts", "key_conflict"),
    ("past review date", "stale"),
    ("import items", "import_item"),
)
HINTS = {
    "import_item": "Enter opens it in the Imports view.",
    "note": "a approves it (it then stands, and search and context find it); x rejects it (withdrawn, asks why).",
}
SOURCES = (("every source", "all"), ("agent", "agent"), ("user", "user"), ("tool", "tool"), ("import", "import"))
KIND_LABEL = {
    "record": "record",
    "note": "note",
    "key_conflict": "key conflict",
    "stale": "review due",
    "import_item": "import",
}


REVIEW_COLUMNS = ("id", "status", "kind", "source", "title", "since")
"""In order of importance (the status before the date); the title takes the room left."""


def item_cells(item) -> tuple:
    return (
        item.id,
        item.status,
        KIND_LABEL.get(item.kind, item.kind),
        item.source or "-",
        item.title[:120] + ("…" if len(item.title) > 120 else ""),
        item.created_at[:10],
    )


def record_id(item) -> int | None:
    """The record an item is about (None for a key conflict or an import item)."""
    return int(item.id.split(":")[1]) if item.id.startswith("record:") else None


class ReviewScreen(StrataScreen):
    """The review queue; a approves, x rejects, v revokes, u restores, p pins, f forgets, e opens the evidence."""

    MODE = "review"
    AUTO_FOCUS = "#review"
    TITLE = "Review"

    BINDINGS = [
        Binding("a", "approve", "Approve", id="review.approve", tooltip="Promote the record (asks for evidence)"),
        Binding("x", "reject", "Reject", id="review.reject", tooltip="Reject the record (asks why)"),
        Binding("v", "revoke", "Revoke", id="review.revoke", tooltip="Withdraw a promoted record (asks why)"),
        Binding("u", "restore", "Restore", id="review.restore", tooltip="Undo a revoke or a reject"),
        Binding("p", "pin", "Pin", id="review.pin", tooltip="Pin or unpin the record's event"),
        Binding("f", "forget", "Forget", id="review.forget", tooltip="Forget the record's event (asks why)"),
        Binding("e", "evidence", "Evidence", id="review.evidence", tooltip="Open what the record cites"),
        Binding("n", "next_item", "Next", show=False, id="review.next", tooltip="Next item"),
        Binding("N", "previous_item", "Previous", show=False, id="review.previous", tooltip="Previous item"),
        Binding("s", "focus_show", "Show", show=False, id="review.show", tooltip="Choose what to list"),
        Binding("escape", "focus_list", "List", show=False, id="review.list", tooltip="Back to the list"),
    ]

    @dataclass
    class Loaded(Message):
        items: list

    @dataclass
    class CardLoaded(Message):
        item_id: str
        record: object | None
        audit: list

    @dataclass
    class Decided(Message):
        message: str
        error: bool = False

    def __init__(self) -> None:
        super().__init__()
        self.show = "waiting"
        self.kind = "all"
        self.source = "all"
        self.items: list = []
        self.card: tuple[str, object | None, list] | None = None

    def compose(self) -> ComposeResult:
        yield self.compose_header()
        with Vertical(classes="view-body"):
            with Horizontal(classes="filter-bar"):
                yield Select(SHOWS, value="waiting", allow_blank=False, compact=True, id="r-show")
                yield Select(KINDS, value="all", allow_blank=False, compact=True, id="r-kind")
                yield Select(SOURCES, value="all", allow_blank=False, compact=True, id="r-source")
                yield Label("", id="review-counts", classes="summary")
            table = PagedTable(id="review", classes="loadable", flex="title", flex_min=30)
            table.add_columns(*REVIEW_COLUMNS)
            yield table
            with TextPane(id="review-detail", classes="detail-pane"):
                yield Static("", id="review-text")
        yield EmptyState(id="empty")
        yield self.compose_footer()

    # ------------------------------------------------------------------ loading

    def reload(self) -> None:
        ns, show = self.namespace, self.show
        self.query_one("#review", PagedTable).start_loading()

        def items():

            return review_items(ns, show=show)

        self.fetch("page", items, self.Loaded)

    @on(Loaded)
    def _loaded(self, event: Loaded) -> None:
        self.items = event.items
        self._fill()
        self.workbench.mark("review:list")

    def _shown(self) -> list:
        return [
            i
            for i in self.items
            if (self.kind == "all" or i.kind == self.kind) and (self.source == "all" or i.source == self.source)
        ]

    def _fill(self, keep: str | None = None) -> None:
        table = self.query_one("#review", PagedTable)
        table.reset()
        shown = self._shown()
        table.append_page(shown, [item_cells(i) for i in shown], False)
        table.stop_loading()
        counts: dict[str, int] = {}
        for item in shown:
            counts[KIND_LABEL.get(item.kind, item.kind)] = counts.get(KIND_LABEL.get(item.kind, item.kind), 0) + 1
        self.query_one("#review-counts", Label).update(
            " · ".join(f"{n} {k}" for k, n in counts.items()) or "nothing here"
        )
        if shown:
            row = next((n for n, i in enumerate(shown) if i.id == keep), 0)
            table.move_cursor(row=row)
            self._show_card(shown[row])
        else:
            self.card = None
            self.query_one("#review-text", Static).update(
                "Nothing is waiting for a person: every governed record has been decided."
                if self.show == "waiting"
                else "No records here."
            )

    @on(PagedTable.RowHighlighted, "#review")
    def _highlighted(self) -> None:
        item = self.current
        if item is not None:
            self._show_card(item)

    @property
    def current(self):
        return self.query_one("#review", PagedTable).current

    def _show_card(self, item) -> None:
        rid = record_id(item)
        if rid is None:
            self.card = (item.id, None, [])
            self.query_one("#review-text", Static).update(
                Content.from_markup(
                    "[b]$title[/b]\n$detail\n\n$hint",
                    title=item.title,
                    detail=item.detail,
                    hint=HINTS.get(item.kind, "Revoke one of the records to settle it (show: promoted)."),
                )
            )
            return

        def card():

            record = get_record(rid)
            return record, audit_trail(record.namespace, subject="record", subject_id=rid)

        self.fetch("detail", card, lambda result: self.CardLoaded(item.id, result[0], result[1]))

    @on(CardLoaded)
    def _card_loaded(self, event: CardLoaded) -> None:
        current = self.current
        if current is None or current.id != event.item_id:
            return
        self.card = (event.item_id, event.record, event.audit)
        r = event.record
        trail = (
            "\n".join(
                f"{a.at[:19]}  {a.action}: {a.from_status or '-'} → {a.to_status or '-'} by {a.actor}"
                + (f" ({a.reason})" if a.reason else "")
                for a in event.audit
            )
            or "no entries"
        )
        self.query_one("#review-text", Static).update(
            Content.from_markup(
                "[b]record $id[/b] · $status · $source by $actor · privacy $privacy$key\n$text\n\n"
                "[b]evidence[/b] $evidence$event\n\n[b]audit trail[/b]\n$trail",
                id=str(r.id),
                status=r.status,
                source=r.source,
                actor=r.actor or "-",
                privacy=r.privacy,
                key=f" · key {r.key}" if r.key else "",
                text=r.text,
                evidence=", ".join(r.evidence) or "none yet",
                event=f" · event {r.event_id}" if r.event_id else "",
                trail=trail,
            )
        )

    # ------------------------------------------------------------------ filters and moving

    @on(Select.Changed, "#r-show")
    def _show_picked(self, event: Select.Changed) -> None:
        self.show = str(event.value)
        if self.namespace is not None and self._loaded_once:
            self.reload()

    @on(Select.Changed, "#r-kind")
    def _kind_picked(self, event: Select.Changed) -> None:
        self.kind = str(event.value)
        self._fill()

    @on(Select.Changed, "#r-source")
    def _source_picked(self, event: Select.Changed) -> None:
        self.source = str(event.value)
        self._fill()

    def action_focus_show(self) -> None:
        self.query_one("#r-show", Select).focus()

    def action_focus_list(self) -> None:
        self.query_one("#review", PagedTable).focus()

    def action_next_item(self) -> None:
        self.query_one("#review", PagedTable).action_cursor_down()

    def action_previous_item(self) -> None:
        self.query_one("#review", PagedTable).action_cursor_up()

    @on(PagedTable.RowSelected, "#review")
    def _selected(self) -> None:
        """Enter goes deeper: an import item opens in Imports, a record's evidence in its view; a
        record without evidence (or not loaded yet) shows its card (escape comes back)."""
        item = self.current
        record = self._loaded_record()
        if item is not None and item.kind == "import_item":
            self.workbench.open_item("import", int(item.id.split(":")[1]))
        elif record is not None and (record.event_id is not None or record.evidence):
            self.action_evidence()
        elif item is not None:
            self.query_one("#review-detail", TextPane).focus()

    # ------------------------------------------------------------------ decisions

    def _record(self) -> int | None:
        item = self.current
        rid = record_id(item) if item is not None else None
        if rid is None:
            self.notify("Select a record: this item is decided elsewhere", severity="warning")
        return rid

    def _loaded_record(self):
        if self.card is None or self.current is None or self.card[0] != self.current.id:
            return None
        return self.card[1]

    def _decide(self, what: str, call) -> None:
        def run():

            try:
                call()
            except StrataError as exc:
                return self.Decided(str(exc), error=True)
            return self.Decided(what)

        self.fetch("decide", run, lambda message: message)

    @on(Decided)
    def _decided(self, event: Decided) -> None:
        self.notify(event.message, severity="error" if event.error else "information", timeout=5)
        if not event.error:
            self.workbench.data_changed()
            self.reload()

    def _ask(
        self, title: str, body: str, then, *, value: str = "", placeholder: str = "", required: bool = True
    ) -> None:
        def answered(text: str | None) -> None:
            if text is not None:
                then(text)

        self.app.push_screen(
            PromptScreen(title, body, value=value, placeholder=placeholder, required=required), answered
        )

    def _note(self) -> str | None:
        item = self.current
        return item.id[len("note:") :] if item is not None and item.kind == "note" else None

    def action_approve(self) -> None:
        if (note_id := self._note()) is not None:
            self._decide(
                f"note {note_id[:12]} approved",
                lambda: approve_note(note_id, actor=gov.default_actor(), namespace=self.namespace),
            )
            return
        rid = self._record()
        if rid is None:
            return
        record = self._loaded_record()
        known = " ".join(record.evidence) if record is not None else ""

        def approve(refs: str) -> None:

            self._decide(
                f"record {rid} promoted",
                lambda: gov.approve_record(
                    rid, actor=gov.default_actor(), evidence=[r for r in refs.split() if r not in known.split()]
                ),
            )

        self._ask(
            f"Approve record {rid}",
            "What in memory supports it? Evidence refs, space-separated "
            "(message:ID, event:ID); the ones already attached are filled in.",
            approve,
            value=known,
            placeholder="message:12 event:7",
        )

    def action_reject(self) -> None:
        if (note_id := self._note()) is not None:
            self._ask(
                f"Reject note {note_id[:12]}",
                "Why is it withdrawn? (it stays readable by id, with your reason)",
                lambda reason: self._decide(
                    f"note {note_id[:12]} withdrawn",
                    lambda: delete_note(note_id, reason=reason, actor=gov.default_actor(), namespace=self.namespace),
                ),
            )
            return
        rid = self._record()
        if rid is not None:
            self._ask(
                f"Reject record {rid}",
                "Why is it rejected? (kept in the audit trail)",
                lambda reason: self._decide(
                    f"record {rid} rejected", lambda: gov.reject_record(rid, actor=gov.default_actor(), reason=reason)
                ),
            )

    def action_revoke(self) -> None:
        rid = self._record()
        if rid is not None:
            self._ask(
                f"Revoke record {rid}",
                "Why is it withdrawn? Readers stop seeing it; restore (u) brings it back.",
                lambda reason: self._decide(
                    f"record {rid} revoked", lambda: gov.revoke_record(rid, actor=gov.default_actor(), reason=reason)
                ),
            )

    def action_restore(self) -> None:
        rid = self._record()
        if rid is not None:
            self._decide(f"record {rid} restored", lambda: gov.restore_record(rid, actor=gov.default_actor()))

    def _event_of_record(self) -> int | None:
        record = self._loaded_record()
        if record is None or record.event_id is None:
            self.notify("This record has no event card yet: only a promoted record has one", severity="warning")
            return None
        return record.event_id

    def action_pin(self) -> None:
        if self._record() is None or (event_id := self._event_of_record()) is None:
            return

        def toggle() -> None:

            pinned = bool(Event.get_by_id(event_id).pinned)
            gov.set_pinned(event_id, not pinned, actor=gov.default_actor())

        self._decide(f"event {event_id} pin changed", toggle)

    def action_forget(self) -> None:
        if self._record() is None or (event_id := self._event_of_record()) is None:
            return

        self._ask(
            f"Forget event {event_id}",
            "Why is it forgotten? (reversible: strata restore)",
            lambda reason: self._decide(
                f"event {event_id} forgotten", lambda: gov.forget(event_id, actor=gov.default_actor(), reason=reason)
            ),
        )

    def action_evidence(self) -> None:
        record = self._loaded_record()
        if record is None:
            return
        refs = [r for r in record.evidence if r.startswith("event:")]
        if record.event_id is not None:
            self.workbench.open_item("event", record.event_id)
        elif refs:
            self.workbench.open_item("event", int(refs[0].split(":")[1]))
        elif record.evidence:
            self.workbench.open_item("message", int(record.evidence[0].split(":")[1]))
        else:
            self.notify("No evidence attached yet: approve (a) asks for it", severity="warning")

    def copy_text(self) -> str | None:
        record = self._loaded_record()
        return None if record is None else f"record {record.id} ({record.status}): {record.text}"
