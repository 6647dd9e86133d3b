"""Timeline: events in time order with filters, a histogram and a detail pane.

Events are ordered by when they happened, else when they were mentioned; events whose
happened time is unknown form their own lane (the ``lane`` filter, and ``~`` in the
list). The list pages by keyset; the histogram is one aggregate by day. The detail
shows the temporal record, relations, weight with its history and the source messages;
``b`` opens the source block at L5. ``enter`` on an event goes into its Go-to list, ``enter``
there follows the link, ``escape`` goes back to the events.

A reviewer corrects the selected event from here, each change audited and undoable: ``s`` supersedes
it with a new statement, ``m`` marks it a duplicate of another event, ``p`` replaces its
participants, ``F`` forgets or restores it, and ``u`` takes back the last of these (asks first).

Opened at an event (another view's link), the list is read from its start through that event.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, Label, OptionList, Select, Sparkline, Static
from textual.widgets.option_list import Option

from core.errors import StrataError
from core.services.events import LINKED_FROM, get_event
from core.vocab import EVENT_STATUSES, EVENT_TYPES
from workbench.screens.base import EmptyState, StrataScreen
from workbench.widgets.confirm import ConfirmScreen
from workbench.widgets.lists import NavOptionList, TextPane
from workbench.widgets.prompt import PromptScreen
from workbench.widgets.table import PagedTable, RowLine, read_through

PAGE = 50
FORGOT_HERE = "forgotten in the workbench timeline"  # the audit trail's reason for F (it asks no question)
BUCKETS = 96
HISTOGRAM_CACHE = 32  # filters whose day counts are kept
LANE_LABELS = (("all times", "all"), ("happened", "dated"), ("unknown time", "undated"))


def when(row) -> str:
    """The time an event sorts by, short: its happened start, else its mention date."""
    if row.happened_start:
        if row.happened_end and row.happened_end != row.happened_start:
            return clip(f"{row.happened_start}…{row.happened_end}", 16)
        return clip(row.happened_start, 16)
    return (row.mentioned_at or "")[:10]


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


EVENT_COLUMNS = ("when", "~", "status", "title", "type", "weight", "who")
"""In order of importance; the title takes the room left, the rest are a scroll away (and, on a narrow
terminal, on the line under the list)."""


def event_cells(row) -> tuple:
    lane = " " if row.happened_start else "~"
    return (
        when(row),
        lane,
        row.status,
        clip(row.title, 80),
        row.event_type,
        f"{row.weight:.2f}",
        clip(", ".join(row.participants[:3]), 30),
    )


def event_line(row) -> str:
    """The selected event's columns a narrow list leaves out."""
    who = ", ".join(row.participants[:3]) or "no participants"
    return f"#{row.id} · {row.event_type} · {row.status} · weight {row.weight:.2f} · {who}"


def _day(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d")


@dataclass
class EventDetail:
    card: object
    weight: object


class TimelineScreen(StrataScreen):
    """Events over time, filtered, with one event's full record beside the list."""

    MODE = "timeline"
    AUTO_FOCUS = "#events"
    TITLE = "Timeline"

    BINDINGS = [
        Binding("f", "focus_filter", "Filter", id="timeline.filter", tooltip="Type to filter events by text"),
        Binding(
            "b",
            "source_block",
            "Source block",
            id="timeline.source-block",
            tooltip="Open the block this event came from, at L5",
        ),
        Binding("x", "clear_filters", "Clear filters", id="timeline.clear", tooltip="Show every event again"),
        Binding(
            "F",
            "toggle_forget",
            "Forget/restore",
            id="timeline.forget",
            tooltip="Forget the selected event (asks first), or restore a forgotten one",
        ),
        Binding(
            "s",
            "supersede",
            "Supersede",
            id="timeline.supersede",
            tooltip="Replace the selected event with a new statement you type (u takes it back)",
        ),
        Binding(
            "u",
            "undo_correction",
            "Undo",
            id="timeline.undo",
            tooltip="Take back the last correction of an event (supersede, duplicate, participants, forget, pin); asks",
        ),
        Binding(
            "m",
            "mark_duplicate",
            "Duplicate",
            show=False,  # in the help (?) and the palette: the footer keeps room for ? Help
            id="timeline.duplicate",
            tooltip="Mark the selected event a duplicate of another event, by its id (u takes it back)",
        ),
        Binding(
            "p",
            "edit_participants",
            "Participants",
            show=False,  # in the help (?) and the palette: the footer keeps room for ? Help
            id="timeline.participants",
            tooltip="Replace the selected event's participants (u takes it back)",
        ),
        Binding(
            "o", "focus_links", "Links", show=False, id="timeline.links", tooltip="Go to the related events and sources"
        ),
        Binding("escape", "focus_list", "List", show=False, id="timeline.list", tooltip="Back to the event list"),
    ]

    @dataclass
    class PageLoaded(Message):
        rows: list
        cursor: object
        append: bool
        select_id: int | None = None

    @dataclass
    class HistogramLoaded(Message):
        histogram: object

    @dataclass
    class DetailLoaded(Message):
        detail: EventDetail

    @dataclass
    class StatusChanged(Message):
        row: object
        restored: bool

    @dataclass
    class Corrected(Message):
        """A correction (or its undo) was made: ``show`` is the event to show; else ``error`` says
        why nothing was changed."""

        text: str
        show: int | None = None
        error: bool = False

    @dataclass
    class UndoFound(Message):
        undoable: object  # core.services.corrections.Undoable, or None

    def __init__(self) -> None:
        super().__init__()
        self.cursor = None
        self.detail: EventDetail | None = None
        self.requested_id: int | None = None
        self._applied = None
        self._day_counts: dict = {}
        self._histogram_due = False

    def compose(self) -> ComposeResult:
        yield self.compose_header()
        with Vertical(classes="view-body"):
            with Horizontal(classes="filter-bar", id="timeline-filters"):
                yield Input(placeholder="text…", id="f-text", compact=True)
                yield Input(placeholder="participant", id="f-who", compact=True)
                yield Input(placeholder="from 2026-01", id="f-from", compact=True)
                yield Input(placeholder="to", id="f-to", compact=True)
                yield Select([(t, t) for t in EVENT_TYPES], prompt="any type", compact=True, id="f-type")
                yield Select([(s, s) for s in EVENT_STATUSES], prompt="any status", compact=True, id="f-status")
                yield Select(LANE_LABELS, value="all", allow_blank=False, compact=True, id="f-lane")
            with Horizontal(id="histogram-row"):
                yield Label("", id="hist-start", classes="muted")
                yield Sparkline([], id="histogram")
                yield Label("", id="hist-end", classes="muted")
            yield Label("", id="hist-summary", classes="summary")
            with Horizontal(id="timeline-panes"):
                table = PagedTable(id="events", classes="loadable gives-way", flex="title", flex_min=40)
                table.add_columns(*EVENT_COLUMNS)
                yield table
                with Vertical(id="event-side", classes="detail-pane collapsible"):
                    with TextPane(id="event-detail"):
                        yield Static("Select an event to see its full record.", id="event-text")
                    yield Label("Go to (o, enter)", classes="pane-title")
                    yield NavOptionList(id="event-links")
            yield RowLine("events", event_line, id="event-line", classes="row-line narrow-only")
        yield EmptyState(id="empty")
        yield self.compose_footer()

    # ------------------------------------------------------------------ filters

    def current_filter(self):
        # start-up time, here and below: the services `strata` has not loaded for its parser load when a view first
        # reads, on the database thread, not before the first paint
        from core.services.browse import EventFilter

        def text(selector: str) -> str:
            return self.query_one(selector, Input).value.strip()

        def choice(selector: str) -> str:
            value = self.query_one(selector, Select).value
            return "" if value is Select.NULL or value is None else str(value)

        return EventFilter(
            text=text("#f-text"),
            participant=text("#f-who"),
            date_from=text("#f-from"),
            date_to=text("#f-to"),
            event_type=choice("#f-type"),
            status=choice("#f-status"),
            lane=choice("#f-lane") or "all",
        )

    @on(Input.Changed, "#timeline-filters Input")
    def _typed(self) -> None:
        self.after_typing(self.apply_filters)

    @on(Input.Submitted, "#timeline-filters Input")
    def _submitted(self) -> None:
        self.typing_done()
        self.query_one("#events", PagedTable).request_focus()
        self.apply_filters()

    @on(Select.Changed, "#timeline-filters Select")
    def _picked(self) -> None:
        self.apply_filters()

    def apply_filters(self, *, force: bool = False) -> None:
        if self.namespace is None or not self._loaded_once:  # a view built ahead loads when shown
            return
        flt = self.current_filter()
        if flt == self._applied and not force:
            return
        self._applied = flt
        self._drop_histogram()  # it counts the old filter's days, and would hold up the new list
        self.load_page()
        # Known day counts show at once; else the histogram is read once the list is (two
        # queries side by side slow each other: SQLite's allocator is shared).
        self._histogram_due = not self._cached_histogram()

    def action_clear_filters(self) -> None:
        for selector in ("#f-text", "#f-who", "#f-from", "#f-to"):
            field = self.query_one(selector, Input)
            with field.prevent(Input.Changed):
                field.value = ""
        for selector in ("#f-type", "#f-status"):
            select = self.query_one(selector, Select)
            with select.prevent(Select.Changed):
                select.clear()
        lane = self.query_one("#f-lane", Select)
        with lane.prevent(Select.Changed):
            lane.value = "all"
        self.apply_filters()

    # ------------------------------------------------------------------ loading

    def reload(self) -> None:
        self._day_counts.clear()  # a reload reads everything again
        self.apply_filters(force=True)

    def load_page(self, *, append: bool = False, select_id: int | None = None) -> None:
        """Read the first page (or the next, with ``append``); with ``select_id``, every page
        through that event, which gets the cursor."""
        ns, flt = self.namespace, self._applied or self.current_filter()
        table = self.query_one("#events", PagedTable)
        after = self.cursor if append else None
        if not append:
            table.start_loading()

        def page():
            from core.services.browse import event_page, event_position

            def read(cursor):
                found = event_page(ns, flt, after=cursor, limit=PAGE)
                return found.rows, found.cursor

            if select_id is None:
                return read(after)
            position = event_position(ns, select_id, flt)
            if position is None:  # not in the filtered timeline
                return read(None)
            rows, cursor, found = read_through(read, lambda row: row.id == select_id)
            return (rows, cursor) if found or cursor is None else read(position)  # far down: open at it

        self.fetch("page", page, lambda p: self.PageLoaded(list(p[0]), p[1], append, select_id))

    def _cached_histogram(self) -> bool:

        flt = self._applied or self.current_filter()
        counts = self._day_counts.get((self.namespace, replace(flt, lane="all"), self.workbench.data_version))
        if counts is None:
            return False
        from core.services.browse import histogram_of

        self.post_message(self.HistogramLoaded(histogram_of(counts, flt.lane, BUCKETS)))
        return True

    def load_histogram(self) -> None:
        """The histogram of the applied filter, read once its list is (and the first event's
        detail: the database thread serves reads in turn). The day counts behind it are one
        grouped query per filter (lane aside: one count serves every lane), kept until the
        data changes."""

        if self._cached_histogram():
            return
        ns, flt = self.namespace, self._applied or self.current_filter()
        lane = flt.lane
        key = (ns, replace(flt, lane="all"), self.workbench.data_version)
        cache = self._day_counts

        def histogram():
            from core.services.browse import event_day_counts, histogram_of

            counts = event_day_counts(ns, key[1])
            for stale in list(cache)[: max(0, len(cache) - HISTOGRAM_CACHE + 1)]:
                cache.pop(stale, None)  # the oldest filters
            cache[key] = counts
            return histogram_of(counts, lane, BUCKETS)

        self.fetch("histogram", histogram, self.HistogramLoaded)

    def _drop_histogram(self) -> bool:
        """Cancel a histogram still being read (the database thread interrupts its query: a day
        count over a million events takes over a second, and reads run one at a time)."""
        if any(w.group == "timeline:histogram" and not w.is_finished for w in self.workers):
            self.workers.cancel_group(self, "timeline:histogram")
            return True
        return False

    def on_screen_suspend(self) -> None:
        # The next view's reads would wait for it; it is read again when the timeline is back.
        if self._drop_histogram():
            self._histogram_due = True

    def on_screen_resume(self) -> None:
        if not any(w.group == "timeline:page" and not w.is_finished for w in self.workers):
            self._histogram_if_due(after_refresh=True)  # (a page still loading asks for it itself)

    def _histogram_if_due(self, *, after_refresh: bool = False) -> None:
        """Read the histogram if one is waiting for its turn (see ``load_histogram``)."""
        if self._histogram_due:
            self._histogram_due = False
            if after_refresh:
                self.call_after_refresh(self.load_histogram)
            else:
                self.load_histogram()

    @on(PageLoaded)
    def _page_loaded(self, event: PageLoaded) -> None:
        table = self.query_one("#events", PagedTable)
        if not event.append:
            table.reset()
        self.cursor = event.cursor
        table.append_page(event.rows, [event_cells(r) for r in event.rows], event.cursor is not None)
        table.stop_loading()
        self.workbench.mark("timeline:list")
        if not event.append:
            if table.items:
                index = next((i for i, row in enumerate(table.items) if row.id == event.select_id), 0)
                table.move_cursor(row=index)
                if table.items[index].id != self.requested_id or event.select_id is None:
                    self.load_detail(table.items[index].id, after_paint=True)
            else:
                self.detail = None
                self.query_one("#event-text", Static).update(
                    "No events match these filters. Press x to clear them."
                    if self._applied and self._applied != type(self._applied)()
                    else "No events yet: events are extracted from sealed blocks (run `strata derive`)."
                )
                self.query_one("#event-links", OptionList).clear_options()
            if self.focused is None:
                table.focus()
            if not table.items:
                self._histogram_if_due()  # else once the first event's detail is shown

    @on(HistogramLoaded)
    def _histogram_loaded(self, event: HistogramLoaded) -> None:
        hist = event.histogram
        self.query_one("#histogram", Sparkline).data = list(hist.counts)
        self.workbench.mark("timeline:histogram")
        self.query_one("#hist-start", Label).update(_day(hist.start_ts))
        self.query_one("#hist-end", Label).update(_day(hist.end_ts))
        self.query_one("#hist-summary", Label).update(
            f"{hist.total} events · {hist.dated} with a happened time · {hist.undated} placed by mention time (~)"
        )

    @on(PagedTable.NeedMore, "#events")
    def _more(self) -> None:
        if self.cursor is not None:
            self.load_page(append=True)

    @on(PagedTable.RowSelected, "#events")
    def _into_event(self) -> None:
        """Enter on an event: into its Go-to list (its record when it links nowhere)."""
        links = self.query_one("#event-links", NavOptionList)
        (links if links.option_count else self.query_one("#event-detail", TextPane)).focus()

    @on(PagedTable.RowHighlighted, "#events")
    def _highlighted(self) -> None:
        row = self.query_one("#events", PagedTable).current
        if row is not None and row.id != self.requested_id:
            self.load_detail(row.id)

    def load_detail(self, event_id: int, *, after_paint: bool = False) -> None:
        self.requested_id = event_id

        def detail():
            from core.services.browse import event_weight_info

            return EventDetail(get_event(event_id), event_weight_info(event_id))

        self.fetch("detail", detail, self.DetailLoaded, after_paint=after_paint)

    def load_failed(self, event) -> None:
        super().load_failed(event)
        if event.group == "detail":
            self._histogram_if_due()

    @on(DetailLoaded)
    def _detail_loaded(self, event: DetailLoaded) -> None:
        # The database thread serves reads in turn: the list, the first event's detail, then
        # the aggregate.
        self._histogram_if_due()
        self.detail = event.detail
        self.query_one("#event-text", Static).update(render_event(event.detail))
        links = self.query_one("#event-links", OptionList)
        links.clear_options()
        card = event.detail.card
        options = []
        if card.event.block_id is not None:
            options.append(Option(f"source block {card.event.block_id} at L5", id=f"block:{card.event.block_id}"))
        linked_by = {other.id for other in card.linked_from.get("supersedes", ())}
        if card.superseded_by and card.superseded_by not in linked_by:
            options.append(Option(f"superseded by event {card.superseded_by}", id=f"event:{card.superseded_by}"))
        for direction, groups in (("", card.links), ("← ", card.linked_from)):
            for kind, linked in groups.items():
                label = LINKED_FROM.get(kind, kind.replace("_", " ")) if direction else kind.replace("_", " ")
                for other in linked:
                    options.append(
                        Option(
                            f"{direction}{label}: #{other.id} {other.title[:60]}",
                            id=f"event:{other.id}:{kind}:{direction}",
                        )
                    )
        for other in card.used_with:
            options.append(
                Option(f"used together: #{other.event_id} {other.title[:60]}", id=f"event:{other.event_id}:used:")
            )
        for node_id in card.participant_node_ids[:8]:
            options.append(Option(f"graph node {node_id}", id=f"node:{node_id}"))
        links.add_options(options)

    # ------------------------------------------------------------------ navigation

    @on(OptionList.OptionSelected, "#event-links")
    def _link_picked(self, event: OptionList.OptionSelected) -> None:
        kind, item, *_ = (event.option.id or "").split(":")
        if kind == "event":
            self.focus_item("event", int(item))
        elif kind == "block":
            self.workbench.open_item("block", int(item), 5)
        elif kind == "node":
            self.workbench.open_item("node", int(item))

    def action_source_block(self) -> None:
        if self.detail is None:
            return
        event = self.detail.card.event
        if event.block_id is not None:
            self.workbench.open_item("block", event.block_id, 5)
        elif self.detail.card.sources:
            self.workbench.open_item("message", self.detail.card.sources[0].id)
        else:
            self.notify("This event cites no source block", severity="warning")

    def focus_item(self, kind: str, item_id: int, level: int | None = None) -> None:
        """Open the timeline at an event (clearing filters that would hide it)."""
        if kind != "event":
            return
        table = self.query_one("#events", PagedTable)
        for index, row in enumerate(table.items):
            if row.id == item_id:
                table.move_cursor(row=index)
                table.focus()
                return
        if self._applied is not None and self._applied != type(self._applied)():
            self.action_clear_filters()
        self._read_at(item_id)
        table.focus()

    def _read_at(self, event_id: int) -> None:
        """Read the list again through ``event_id`` under the current filters, and its detail."""
        self._applied = self.current_filter()
        self.load_page(select_id=event_id)
        self.load_detail(event_id)

    def action_toggle_forget(self) -> None:
        """Forget the selected event (hidden from search, context and the graph; reversible), or
        restore it when it is forgotten."""
        if self.detail is None:
            return
        event = self.detail.card.event
        if event.status == "forgotten":
            self._change_status(event.id, restore=True)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._change_status(event.id, restore=False)

        self.app.push_screen(
            ConfirmScreen(
                "Forget event",
                f"Hide event {event.id} “{clip(event.title, 60)}” from search, context and the graph? "
                "Facts it ended become current again. F restores it.",
                "Forget",
                danger=True,
            ),
            answered,
        )

    def _change_status(self, event_id: int, *, restore: bool) -> None:
        def change():
            from core.services import governance as gov

            if restore:
                gov.restore(event_id, actor=gov.default_actor())
            else:
                gov.forget(event_id, actor=gov.default_actor(), reason=FORGOT_HERE)
            return get_event(event_id).event

        self.fetch("forget", change, lambda row: self.StatusChanged(row, restore))

    @on(StatusChanged)
    def _status_changed(self, event: StatusChanged) -> None:
        self.workbench.data_changed()
        row = event.row
        self.notify(f"event {row.id} {'restored' if event.restored else 'forgotten'} ({row.status})", timeout=4)
        self._day_counts.clear()
        self.requested_id = None
        self._read_at(row.id)

    # ------------------------------------------------------------------ corrections

    def _correctable(self, what: str):
        """The selected event when ``what`` applies to it (an active one), else None (and says why)."""
        if self.detail is None:
            return None
        event = self.detail.card.event
        if event.status != "active":
            self.notify(f"Event {event.id} is {event.status}: {what} applies to an active event", severity="warning")
            return None
        return event

    def _ask(self, title: str, body: str, then, *, value: str = "", placeholder: str = "", required: bool = True):
        def answered(text: str | None) -> None:
            if text is not None:
                then(text)

        self.app.push_screen(
            PromptScreen(title, body, value=value, placeholder=placeholder, required=required), answered
        )

    def _correct(self, call, show) -> None:
        """Run a correction on a thread worker; the list and the card are read again after it."""

        def run():
            try:
                done = call()
            except StrataError as exc:
                return self.Corrected(str(exc), error=True)
            return self.Corrected(done.text, show=show(done))

        self.fetch("decide", run, lambda message: message)

    def action_supersede(self) -> None:
        event = self._correctable("superseding")
        if event is None:
            return
        from core.services import corrections
        from core.services.governance import default_actor

        self._ask(
            f"Supersede event {event.id}",
            f"What holds instead of “{clip(event.title, 80)}”? A new event with your statement replaces it "
            "(u takes it back).",
            lambda text: self._correct(
                lambda: corrections.supersede(event.id, text, actor=default_actor()), lambda done: done.other_id
            ),
            value=event.summary,
        )

    def action_mark_duplicate(self) -> None:
        event = self._correctable("marking a duplicate")
        if event is None:
            return
        from core.services import corrections
        from core.services.governance import default_actor

        def mark(text: str) -> None:
            number = text.strip().removeprefix("event:").removeprefix("#").strip()
            if not number.isdigit():
                self.notify(f"{text!r} is not an event id (a number such as 12)", severity="error")
                return
            self._correct(
                lambda: corrections.mark_duplicate(event.id, int(number), actor=default_actor()),
                lambda done: done.event_id,
            )

        self._ask(
            f"Event {event.id} is a duplicate",
            f"Which event already says “{clip(event.title, 80)}”? Its id: that event is kept, this one steps "
            "aside (u takes it back).",
            mark,
            placeholder="event id, e.g. 12",
        )

    def action_edit_participants(self) -> None:
        event = self._correctable("editing participants")
        if event is None:
            return
        from core.services import corrections
        from core.services.governance import default_actor

        self._ask(
            f"Participants of event {event.id}",
            "Who takes part, separated by commas (empty: nobody)? (u takes it back)",
            lambda text: self._correct(
                lambda: corrections.set_participants(event.id, text.split(","), actor=default_actor()),
                lambda done: done.event_id,
            ),
            value=", ".join(event.participants),
            placeholder="Maya, Priya Raman",
            required=False,
        )

    def action_undo_correction(self) -> None:
        if self.namespace is None:
            return
        ns = self.namespace

        def find():
            from core.services.corrections import last_correction

            return last_correction(ns)

        self.fetch("last-correction", find, self.UndoFound)

    @on(UndoFound)
    def _undo_found(self, event: UndoFound) -> None:
        found = event.undoable
        if found is None:
            self.notify("No correction of an event to take back", timeout=4)
            return
        from core.services import corrections
        from core.services.governance import default_actor

        def answered(yes: bool | None) -> None:
            if yes:
                self._correct(
                    lambda: corrections.undo(found.audit_id, actor=default_actor()), lambda done: done.event_id
                )

        self.app.push_screen(
            ConfirmScreen(
                "Undo the last correction",
                f"Take back {found.text} (by {found.actor}, {found.at[:16].replace('T', ' ')})?",
                "Undo",
            ),
            answered,
        )

    @on(Corrected)
    def _corrected(self, event: Corrected) -> None:
        if event.error:
            self.notify(event.text, title="Nothing was changed", severity="error", timeout=8)
            return
        self.workbench.data_changed()
        self.notify(event.text, timeout=5)
        self._day_counts.clear()
        self.requested_id = None
        if event.show is not None:
            self._read_at(event.show)

    def action_focus_filter(self) -> None:
        self.query_one("#f-text", Input).focus()

    def action_focus_links(self) -> None:
        self.query_one("#event-links", OptionList).focus()

    def action_focus_list(self) -> None:
        self.query_one("#events", PagedTable).focus()

    def copy_text(self) -> str | None:
        if self.detail is None:
            return None
        return str(render_event(self.detail))

    def palette_commands(self):
        return [
            ("timeline: Clear filters", "Show every event again", self.action_clear_filters),
            ("timeline: Open source block", "The block the selected event came from, at L5", self.action_source_block),
            (
                "timeline: Forget or restore event",
                "Hide the selected event, or bring a forgotten one back",
                self.action_toggle_forget,
            ),
            (
                "timeline: Supersede event",
                "Replace the selected event with a new statement",
                self.action_supersede,
            ),
            (
                "timeline: Mark duplicate",
                "The selected event repeats another: keep that one",
                self.action_mark_duplicate,
            ),
            ("timeline: Edit participants", "Replace the selected event's participants", self.action_edit_participants),
            (
                "timeline: Undo last correction",
                "Take back the last correction of an event",
                self.action_undo_correction,
            ),
        ]


def render_event(detail: EventDetail) -> Content:
    """The full record of one event as styled text."""
    card, weight = detail.card, detail.weight
    e = card.event
    parts: list[Content] = []

    def add(markup: str, **values: str) -> None:
        parts.append(Content.from_markup(markup, **values))

    add("[b]$title[/b]  [dim]#$id[/dim]\n", title=e.title, id=str(e.id))
    if e.summary != e.title:
        add("$summary\n", summary=e.summary)
    add(
        "[dim]$type · $status · $crit · $scope · $where[/dim]\n",
        type=e.event_type,
        status=e.status,
        crit=e.criticality,
        scope=e.scope,
        where=f"thread {e.thread} · block {e.block_id}" if e.block_id is not None else "no source block",
    )
    add("\n[b $primary]Time[/]\n")
    if e.happened_start:
        span = (
            e.happened_start if e.happened_end in (None, e.happened_start) else f"{e.happened_start} – {e.happened_end}"
        )
        add(
            "happened  $span  ($precision, $basis, $status)\n",
            span=span,
            precision=e.precision,
            basis=e.basis,
            status=e.time_status,
        )
    else:
        add("happened  unknown ($status): placed by when it was mentioned\n", status=e.time_status)
    add("mentioned $at\n", at=e.mentioned_at or "-")
    if e.original_text:
        add("said as   “$text”\n", text=e.original_text)
    if e.participants:
        add("who       $who\n", who=", ".join(e.participants))
    relations = []
    # The card that superseded this one is also linked to it: name it once.
    linked_by = {other.id for other in card.linked_from.get("supersedes", ())}
    if card.superseded_by and card.superseded_by not in linked_by:
        relations.append(("superseded by", f"#{card.superseded_by}"))
    for kind, linked in card.links.items():
        for other in linked:
            relations.append((kind.replace("_", " "), f"#{other.id} {other.title} ({other.status})"))
    for kind, linked in card.linked_from.items():
        for other in linked:
            label = LINKED_FROM.get(kind, f"{kind.replace('_', ' ')} (from)")
            relations.append((label, f"#{other.id} {other.title} ({other.status})"))
    add("\n[b $primary]Relations[/]\n")
    if relations:
        for label, text in relations:
            add("$label: $text\n", label=label, text=text)
    else:
        add("[dim]none recorded[/dim]\n")
    note = card.correction_unchanged
    if note:
        change = " → ".join(note[k] for k in ("prev", "new") if note.get(k))
        add(
            "[b $warning]correction changed nothing[/] $what [dim]($why)[/dim]\n",
            what=" ".join(x for x in (note.get("subject", ""), change) if x),
            why=note.get("why", ""),
        )
    if card.used_with:
        add("\n[b $primary]Used together with[/]  [dim](cards an agent used with this one)[/dim]\n")
        for other in card.used_with:
            add(
                "#$id $title [dim]($status · ×$count · weight $weight)[/dim]\n",
                id=str(other.event_id),
                title=other.title,
                status=other.status,
                count=str(other.coactivation_count),
                weight=f"{other.weight:.2f}",
            )
    cap = "-" if weight.cap is None else f"{weight.cap:g}"
    add(
        "\n[b $primary]Weight $w[/]  [dim]floor $floor · cap $cap · uses $uses · formed turn $formed · "
        "last adopted $adopted · now turn $now$pinned[/dim]\n",
        w=f"{weight.weight:.2f}",
        floor=f"{weight.floor:g}",
        cap=cap,
        uses=str(weight.mention_count),
        formed=str(weight.formed_turn),
        adopted=str(weight.last_adopted_turn),
        now=str(weight.current_turn),
        pinned=" · pinned" if weight.pinned else "",
    )
    for step in weight.history:
        add("  $at  $what\n", at=(step.at or "")[:16], what=step.what)
    add("\n[b $primary]Sources[/]  [dim]($n; b opens the block at L5)[/dim]\n", n=str(len(card.sources)))
    for message in card.sources:
        add(
            "[b]$who[/b] [dim]$thread · turn $turn · $at · msg $id[/dim]\n$text\n",
            who=message.speaker or message.role,
            thread=message.thread,
            turn=str(message.turn),
            at=message.created_at[:16],
            id=str(message.id),
            text=message.content,
        )
    if card.quotes:
        add("\n[b $primary]Quotes[/]\n")
        for quote in card.quotes:
            add("“$q”\n", q=quote)
    return Content("").join(parts)
