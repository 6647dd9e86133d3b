"""Blocks: threads, the block rail of a thread, and one block at every level L0–L5.

The rail pages blocks by sequence (keyset); the selected block is rendered at all six
levels in one worker, next to its derivation jobs and its thread's open tail. ``e``
lifts the block one level deeper (recorded as a user lift), ``E`` straight to L5.
``enter`` on a thread shows its blocks, ``enter`` on a block goes into its text, ``escape``
goes back to the rail.

Opened at a block (another view's link), the rail is read from the thread's start through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Label, OptionList, Select, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option

from core.errors import BlockNotReadyError, NotFoundError
from core.text import counted
from workbench.screens.base import EmptyState, StrataScreen
from workbench.widgets.lists import NavOptionList, TextPane
from workbench.widgets.table import PagedTable, read_through, start_busy, stop_busy

PAGE = 50
LEVELS = range(6)
ALL_THREADS = "__all__"


def level_tokens(tokens: dict[int, int]) -> str:
    return "/".join(str(tokens.get(level, "-")) for level in LEVELS)


def share_of_raw(row) -> str:
    if row.current_level is None:
        return "-"
    return f"{100 * row.tokens.get(row.current_level, 0) // max(1, row.tokens.get(5, 1))}%"


RAIL_COLUMNS = ("#", "status", "level", "turns", "thread", "title", "% L5", "tokens L0/L1/L2/L3/L4/L5", "lift")
"""In order of importance; the title takes the room left, the rest are a scroll away (and on the meta line)."""


def rail_cells(row) -> tuple:
    level = "-" if row.current_level is None else f"L{row.current_level}"
    lifted = row.last_lifted_by or ""
    return (
        str(row.sequence),
        row.status,
        level,
        f"{row.start_turn}-{row.end_turn}",
        row.thread,
        row.title or "(not summarised yet)",
        share_of_raw(row),
        level_tokens(row.tokens),
        lifted,
    )


@dataclass
class BlockDetail:
    """Everything the detail pane shows for one block (built in a worker)."""

    row: object
    views: dict[int, str]
    missing: dict[int, str]
    jobs: list
    tail: list
    tail_thread: str
    same_as: dict[int, int] = field(default_factory=dict)  # a level that shows what a deeper one shows


class BlocksScreen(StrataScreen):
    """Threads → block rail → the selected block at any level."""

    MODE = "blocks"
    AUTO_FOCUS = "#block-rail"
    TITLE = "Blocks"

    BINDINGS = [
        Binding("e", "expand('next')", "Expand", id="blocks.expand", tooltip="Lift the block one level deeper"),
        Binding("E", "expand('raw')", "Expand to L5", id="blocks.expand-raw", tooltip="Lift the block to raw L5"),
        Binding(
            "left_square_bracket",
            "level(-1)",
            "Level -",
            show=False,
            id="blocks.level-up",
            tooltip="Show the next shallower level",
        ),
        Binding(
            "right_square_bracket",
            "level(1)",
            "Level +",
            show=False,
            id="blocks.level-down",
            tooltip="Show the next deeper level",
        ),
        Binding("v", "compare", "Side by side", id="blocks.compare", tooltip="Show L5 next to the selected level"),
        Binding("t", "focus_threads", "Threads", show=False, id="blocks.threads", tooltip="Go to the thread list"),
        Binding("f", "focus_filter", "Filter", show=False, id="blocks.filter", tooltip="Filter by status"),
        Binding("escape", "focus_rail", "Rail", show=False, id="blocks.rail", tooltip="Back to the block rail"),
    ]

    @dataclass
    class ThreadsLoaded(Message):
        threads: list

    @dataclass
    class RailLoaded(Message):
        rows: list
        has_more: bool
        append: bool
        select_id: int | None = None
        level: int | None = None

    @dataclass
    class DetailLoaded(Message):
        detail: BlockDetail

    @dataclass
    class JumpLoaded(Message):
        row: object
        level: int | None

    @dataclass
    class BlockExpanded(Message):
        block_id: int
        level: int
        row: object = field(default=None)

    def __init__(self) -> None:
        super().__init__()
        self.thread_filter: str | None = None
        self.status_filter: str | None = None
        self.detail: BlockDetail | None = None
        self.requested_id: int | None = None
        # (block id, level) a jump or expand asked for; only that block's detail consumes it, so a
        # detail load for another block finishing first cannot swallow it.
        self.active_level: tuple[int, int] | None = None

    def compose(self) -> ComposeResult:
        yield self.compose_header()
        with Horizontal(id="blocks-body", classes="view-body"):
            with Vertical(id="threads-pane", classes="side-pane collapsible"):
                yield Label("Threads", classes="pane-title")
                yield NavOptionList(id="threads", classes="loadable")
            with Vertical(id="blocks-main"):
                with Horizontal(classes="filter-bar"):
                    yield Label("status", classes="filter-label")
                    yield Select(
                        [("all", "all"), ("ready", "ready"), ("pending", "pending")],
                        value="all",
                        allow_blank=False,
                        compact=True,
                        id="status-filter",
                    )
                    yield Label("", id="rail-summary", classes="summary")
                rail = PagedTable(id="block-rail", classes="loadable", flex="title", flex_min=20)
                rail.add_columns(*RAIL_COLUMNS)
                yield rail
                yield Label("", id="block-meta", classes="meta-line")
                with Horizontal(id="block-panes"):
                    with TabbedContent(id="block-levels"):
                        for level in LEVELS:
                            with TabPane(f"L{level}", id=f"level-{level}"):
                                with TextPane(classes="text-scroll"):
                                    yield Static("", id=f"level-text-{level}", markup=False, classes="block-text")
                        with TabPane("Open tail", id="tail"):
                            with TextPane(classes="text-scroll"):
                                yield Static("", id="tail-text", classes="block-text")
                        with TabPane("Jobs", id="jobs"):
                            with TextPane(classes="text-scroll"):
                                yield Static("", id="jobs-text", classes="block-text")
                    with TextPane(id="compare-pane", classes="text-scroll"):
                        yield Label("L5 raw transcript", classes="pane-title")
                        yield Static("", id="compare-text", markup=False, classes="block-text")
        yield EmptyState(id="empty")
        yield self.compose_footer()

    # ------------------------------------------------------------------ loading

    def reload(self) -> None:
        ns = self.namespace
        start_busy(self.query_one("#threads", OptionList))

        def threads():
            # start-up time, here and below: the services (numpy under search) load when a view first reads,
            # on the database thread, not before the first paint
            from core.services.browse import list_threads

            return list_threads(ns)

        self.fetch("threads", threads, self.ThreadsLoaded)
        self.load_rail()

    def load_rail(
        self,
        *,
        append: bool = False,
        select_id: int | None = None,
        select_sequence: int = 0,
        level: int | None = None,
    ) -> None:
        """Read the first page of the rail (or the next, with ``append``); with ``select_id`` (the
        block at ``select_sequence``), every page through that block, which gets the cursor."""
        ns, thread, status = self.namespace, self.thread_filter, self.status_filter
        after_sequence = 0
        rail = self.query_one("#block-rail", PagedTable)
        if not append:
            rail.start_loading()
        if append and rail.items:
            after_sequence = rail.items[-1].sequence

        def page():
            from core.services.blocks import list_blocks

            def read(after):
                rows = list_blocks(ns, thread, status=status, limit=PAGE + 1, after_sequence=after or 0)
                return rows[:PAGE], (rows[PAGE - 1].sequence if len(rows) > PAGE else None)

            if select_id is None:
                rows, cursor = read(after_sequence)
            else:
                rows, cursor, found = read_through(read, lambda row: row.id == select_id)
                if not found and cursor is not None:  # far down the thread: open the rail at the block
                    rows, cursor = read(select_sequence - 1)
            return rows, cursor is not None

        self.fetch("rail", page, lambda result: self.RailLoaded(result[0], result[1], append, select_id, level))

    @on(ThreadsLoaded)
    def _threads_loaded(self, event: ThreadsLoaded) -> None:
        options = self.query_one("#threads", OptionList)
        options.clear_options()
        total_blocks = sum(t.blocks for t in event.threads)
        options.add_option(Option(f"All threads  ({counted(total_blocks, 'block')})", id=ALL_THREADS))
        for t in event.threads:
            tail = f", {t.open_turns} open" if t.open_turns else ""
            label = f"{t.name}\n  {counted(t.blocks, 'block')}, {counted(t.turns, 'turn')}{tail}"
            options.add_option(Option(label, id=f"t:{t.name}"))
        wanted = ALL_THREADS if self.thread_filter is None else f"t:{self.thread_filter}"
        try:
            options.highlighted = options.get_option_index(wanted)
        except Exception:  # noqa: BLE001 - the thread vanished; show all
            options.highlighted = 0
        stop_busy(options)

    @on(RailLoaded)
    def _rail_loaded(self, event: RailLoaded) -> None:
        rail = self.query_one("#block-rail", PagedTable)
        if not event.append:
            rail.reset()
        rail.append_page(event.rows, [rail_cells(r) for r in event.rows], event.has_more)
        rail.stop_loading()
        self.workbench.mark("blocks:list")
        shown = len(rail.items)
        more = "+" if rail.has_more else ""
        where = self.thread_filter or "all threads"
        self.query_one("#rail-summary", Label).update(f"{counted(f'{shown}{more}', 'block')} · {where}")
        if not event.append:
            if not rail.items:
                self.detail = None
                self._show_detail_text(
                    "No blocks here yet. Blocks are sealed every few turns; the open tail of a "
                    "thread shows what is not sealed yet."
                )
                self.query_one("#block-meta", Label).update("")
            else:
                index = 0
                if event.select_id is not None:
                    index = next((i for i, r in enumerate(rail.items) if r.id == event.select_id), 0)
                if event.level is not None:
                    self.active_level = (rail.items[index].id, event.level)
                rail.move_cursor(row=index)
                self.load_detail(rail.items[index])
                if self.focused is None:
                    rail.focus()

    @on(PagedTable.RowSelected, "#block-rail")
    def _into_block(self) -> None:
        """Enter on a block: into the text of the open tab (j/k scroll it, escape comes back)."""
        pane = self.query_one("#block-levels", TabbedContent).active_pane
        if pane is not None:
            pane.query_one(TextPane).focus()

    @on(PagedTable.NeedMore, "#block-rail")
    def _more(self) -> None:
        self.load_rail(append=True)

    @on(PagedTable.RowHighlighted, "#block-rail")
    def _row_highlighted(self, event: PagedTable.RowHighlighted) -> None:
        rail = self.query_one("#block-rail", PagedTable)
        row = rail.current
        if row is not None and row.id != self.requested_id:
            self.load_detail(row)

    def load_detail(self, row) -> None:
        ns = self.namespace
        self.requested_id = row.id

        def detail():
            from core.services.blocks import get_block, render_block
            from core.services.browse import block_jobs
            from core.services.capture import thread_messages

            fresh = get_block(row.id)
            views: dict[int, str] = {}
            missing: dict[int, str] = {}
            same_as: dict[int, int] = {}
            for level in LEVELS:
                try:
                    view = render_block(row.id, level)
                except BlockNotReadyError as exc:
                    missing[level] = str(exc)
                    continue
                views[level] = view.content
                if view.same_as is not None:
                    same_as[level] = view.same_as
            tail = thread_messages(ns, fresh.thread, open_tail_only=True)
            return BlockDetail(fresh, views, missing, block_jobs(row.id), tail, fresh.thread, same_as)

        self.fetch("detail", detail, self.DetailLoaded)

    @on(DetailLoaded)
    def _detail_loaded(self, event: DetailLoaded) -> None:
        self.detail = detail = event.detail
        row = detail.row
        age = "" if row.age is None else f" · age {row.age}"
        level = "pending (not decayed)" if row.current_level is None else f"current L{row.current_level}"
        lift = f" · lifted by {row.last_lifted_by}" if row.last_lifted_by else ""
        self.query_one("#block-meta", Label).update(
            Content.from_markup(  # the rail's columns, whole (a narrow rail leaves some out)
                "[b]block $id[/b] · $thread · turns $turns · $status$age · $level$share$lift · tokens $tokens",
                id=str(row.id),
                thread=row.thread,
                turns=f"{row.start_turn}-{row.end_turn}",
                status=row.status,
                age=age,
                level=level,
                share="" if row.current_level is None else f" ({share_of_raw(row)} of L5)",
                lift=lift,
                tokens=level_tokens(row.tokens),
            )
        )
        for lvl in LEVELS:
            text = detail.views.get(lvl)
            if text is None:
                text = f"Not derived yet: {detail.missing.get(lvl, '')}\nLevels 3–5 are available; see the Jobs tab."
            self.query_one(f"#level-text-{lvl}", Static).update(text)
        tabs = self.query_one("#block-levels", TabbedContent)
        # L3 folds away fillers and repeated pastes; a chat with neither has an L3 equal to its L4.
        same = detail.same_as.get(3) == 4
        tabs.get_tab("level-3").label = "L3 = L4" if same else "L3"
        if same:
            self.query_one("#level-text-3", Static).update(
                "Nothing to fold here: no filler and no repeated paste, so L3 is L4 word for word "
                "(expanding passes over it).\n\n" + detail.views[3]
            )
        self.query_one("#compare-text", Static).update(detail.views.get(5, ""))
        tail = detail.tail
        if tail:
            lines = [
                Content.from_markup(
                    "[b]Open tail of $thread[/b] ($n messages, not sealed into a block yet)\n",
                    thread=detail.tail_thread,
                    n=str(len(tail)),
                )
            ]
            lines += [
                Content.from_markup(
                    "[b]$who[/b] · turn $turn · $at\n$text\n",
                    who=m.speaker or m.role,
                    turn=str(m.turn),
                    at=m.created_at,
                    text=m.content,
                )
                for m in tail
            ]
            self.query_one("#tail-text", Static).update(Content("\n").join(lines))
        else:
            self.query_one("#tail-text", Static).update(
                f"The thread {detail.tail_thread} has no open tail: every turn is sealed into a block."
            )
        self.query_one("#jobs-text", Static).update(_jobs_text(detail.jobs))
        asked = self.active_level[1] if self.active_level and self.active_level[0] == row.id else None
        wanted = asked if asked is not None else (5 if row.current_level is None else row.current_level)
        if tabs.active not in ("tail", "jobs") or asked is not None:
            tabs.active = f"level-{wanted}"
        if asked is not None:
            self.active_level = None

    def _show_detail_text(self, text: str) -> None:
        for lvl in LEVELS:
            self.query_one(f"#level-text-{lvl}", Static).update(text)

    # ------------------------------------------------------------------ filters

    @on(OptionList.OptionSelected, "#threads")
    def _thread_picked(self, event: OptionList.OptionSelected) -> None:
        option_id = event.option.id or ALL_THREADS
        thread = None if option_id == ALL_THREADS else option_id[2:]
        if thread != self.thread_filter:
            self.thread_filter = thread
            self.detail = None
            self.load_rail()
        self.query_one("#block-rail", PagedTable).request_focus()

    @on(Select.Changed, "#status-filter")
    def _status_picked(self, event: Select.Changed) -> None:
        status = None if event.value in ("all", Select.NULL) else str(event.value)
        if status != self.status_filter:
            self.status_filter = status
            self.detail = None
            if self.namespace is not None and self._loaded_once:
                self.load_rail()

    # ------------------------------------------------------------------ actions

    def action_expand(self, target: str) -> None:
        row = self.detail.row if self.detail else None
        if row is None:
            return
        if row.status != "ready":
            self.notify(f"block {row.id} is {row.status}; only ready blocks can be expanded", severity="warning")
            return

        def expand():
            from core.services.blocks import expand_block, get_block

            view = expand_block(row.id, target, by="user")
            return view.level, get_block(row.id)

        self.fetch("expand", expand, lambda result: self.BlockExpanded(row.id, result[0], result[1]))

    @on(BlockExpanded)
    def _expanded(self, event: BlockExpanded) -> None:
        rail = self.query_one("#block-rail", PagedTable)
        for index, item in enumerate(rail.items):
            if item.id == event.block_id:
                rail.items[index] = event.row
                for column, value in enumerate(rail_cells(event.row)):
                    rail.update_cell_at((index, column), value)
        self.notify(f"block {event.block_id} lifted to L{event.level} (recorded as a user lift)", timeout=4)
        self.active_level = (event.block_id, event.level)
        if event.row is not None:
            self.load_detail(event.row)

    def action_level(self, step: int) -> None:
        tabs = self.query_one("#block-levels", TabbedContent)
        current = tabs.active
        level = int(current.split("-")[1]) if current.startswith("level-") else 5
        tabs.active = f"level-{max(0, min(5, level + step))}"

    def action_compare(self) -> None:
        self.toggle_class("-compare")

    def action_focus_threads(self) -> None:
        self.query_one("#threads", OptionList).focus()

    def action_focus_filter(self) -> None:
        self.query_one("#status-filter", Select).focus()

    def action_focus_rail(self) -> None:
        self.query_one("#block-rail", PagedTable).focus()

    def copy_text(self) -> str | None:
        if self.detail is None:
            return None
        active = self.query_one("#block-levels", TabbedContent).active
        if active.startswith("level-"):
            level = int(active.split("-")[1])
            return self.detail.views.get(level)
        return str(self.query_one(f"#{active}-text", Static).content)

    def palette_commands(self):
        return [
            (
                "block: Expand one level",
                "Lift the selected block one level deeper (a user lift)",
                lambda: self.action_expand("next"),
            ),
            ("block: Expand to L5", "Lift the selected block to its raw transcript", lambda: self.action_expand("raw")),
            ("block: Side by side with L5", "Show the raw transcript next to the selected level", self.action_compare),
        ]

    def focus_item(self, kind: str, item_id: int, level: int | None = None) -> None:
        """Open a block (or the block holding a raw message) at ``level`` (L5 for messages)."""
        ns = self.namespace

        def find():
            from core.services.blocks import get_block
            from core.services.search import messages_by_id

            if kind == "message":
                message = messages_by_id([item_id]).get(item_id)
                if message is None or message.block_id is None:
                    where = f"the open tail of {message.thread}" if message else "no block"
                    raise NotFoundError(f"message {item_id} is in {where}")
                return get_block(message.block_id)
            return get_block(item_id)

        target_level = 5 if kind == "message" and level is None else level
        del ns
        self.fetch("jump", find, lambda row: self.JumpLoaded(row, target_level))

    @on(JumpLoaded)
    def _jump(self, event: JumpLoaded) -> None:
        """Show the rail of the block's thread through that block, and the block at the level."""
        row = event.row
        self.thread_filter = row.thread
        self.status_filter = None
        status = self.query_one("#status-filter", Select)
        with status.prevent(Select.Changed):
            status.value = "all"
        options = self.query_one("#threads", OptionList)
        try:
            options.highlighted = options.get_option_index(f"t:{row.thread}")
        except Exception:  # noqa: BLE001 - the thread list is still loading
            pass
        self.detail = None
        self.load_rail(select_id=row.id, select_sequence=row.sequence, level=event.level)
        self.query_one("#block-rail", PagedTable).focus()


def _jobs_text(jobs) -> Content:
    if not jobs:
        return Content("No derivation jobs recorded for this block.")
    parts = []
    for job in jobs:
        retry = f" · next retry at {job.next_retry_at:.0f}" if job.next_retry_at else ""
        parts.append(
            Content.from_markup(
                "[b]$kind[/b] job $id: $status (attempt $attempts)$retry\n",
                kind=job.kind,
                id=str(job.id),
                status=job.status,
                attempts=str(job.attempts),
                retry=retry,
            )
        )
        if job.last_error:
            parts.append(Content.from_markup("  error: $error\n", error=job.last_error))
    parts.append(Content("\nRetry failed jobs in the Jobs view (key 6)."))
    return Content("").join(parts)
