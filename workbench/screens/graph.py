"""Graph: nodes by type with search, and one node's facts, edges and supporting events.

The node list pages by name (keyset) and decides visibility per page. A node shows its
current and historical facts, edges out and in with the node at the other end, and the
events behind it. ``enter`` on an edge follows it; ``[`` and ``]`` go back and forward
through the nodes visited; ``enter`` on an event (or a fact: its first source event) opens
it in the timeline. ``enter`` on a node goes into its tabs, ``escape`` back to the list.

Opened at a node (another view's link), the list is read from its start through that node,
so every node stays listed.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Input, Label, Select, Static, TabbedContent, TabPane

from core.services.graph_endings import describe
from core.text import counted
from workbench.screens.base import EmptyState, StrataScreen
from workbench.widgets.lists import NavTable
from workbench.widgets.table import PagedTable, read_through

PAGE = 40
NODE_TYPES = ("person", "project", "organization", "tool", "place")


def _value(value) -> str:
    return value if isinstance(value, str) else ", ".join(str(v) for v in value)


def _past(status: str, ended_by, *, whole: bool = False) -> str:
    """A historical record's state: why it ended when that is known ("past · replaced by Oslo"), with
    the ending events' texts short in the table (which cuts the cell to its room) and ``whole`` on
    the row line under it."""
    why = describe(ended_by, limit=200 if whole else 40)
    return f"past · {why}" if why else f"{status} (past)"


# What the node list's counts are (the column headers are single words).
NODE_COUNTS_HELP = (
    "facts, edges: what the graph holds of the node, current and past; events: the live event cards citing "
    "the node, its facts or its edges (12+ means at least 12: only each record's newest citations are read). "
    "The Events tab lists those that back what is shown."
)
FACT_COLUMNS = ("key", "value", "status", "when", "events")
EDGE_COLUMNS = ("dir", "relation", "other node", "status", "when", "type")
EVENT_COLUMNS = ("id", "status", "happened", "title")
"""The node's tables, in order of importance: the state (and why a past record ended) before its dates."""


def _span(start: str | None, end: str | None) -> str:
    if not start and not end:
        return ""
    return f"{start or '…'} → {end or 'now'}"


def row_line(tab: str, row, *, current: bool = True, outgoing: bool = True) -> str:
    """One fact, edge or supporting event in full (``current``: a current fact; ``outgoing``: an edge out)."""
    if tab == "facts":
        state = row.status if current else _past(row.status, row.ended_by, whole=True)
        events = ", ".join(map(str, row.source_event_ids)) or "none"
        span = _span(row.valid_from, row.valid_to) or "no dates"
        return f"{row.key} = {_value(row.value)} · {state} · {span} · events {events}"
    if tab == "edges":
        state = row.status if row.current else _past(row.status, row.ended_by, whole=True)
        span = _span(row.valid_from, row.valid_to) or "no dates"
        arrow = "→" if outgoing else "←"
        return f"{arrow} {row.relation} {row.other_name} ({row.other_type}) · {state} · {span}"
    return f"event {row.id} · {row.status} · {row.happened_start or 'no happened time'} · {row.title}"


class GraphScreen(StrataScreen):
    """Nodes on the left; the selected node's facts, edges and events on the right."""

    MODE = "graph"
    AUTO_FOCUS = "#nodes"
    TITLE = "Graph"

    BINDINGS = [
        Binding("f", "focus_search", "Search", id="graph.search", tooltip="Find nodes by name or alias"),
        Binding("left_square_bracket,backspace", "back", "Back", id="graph.back", tooltip="The previous node"),
        Binding("right_square_bracket", "forward", "Forward", id="graph.forward", tooltip="The next node again"),
        Binding("e", "tab('edges')", "Edges", show=False, id="graph.edges", tooltip="Show the node's edges"),
        Binding("a", "tab('facts')", "Facts", show=False, id="graph.facts", tooltip="Show the node's facts"),
        Binding("v", "tab('events')", "Events", show=False, id="graph.events", tooltip="Show supporting events"),
        Binding("escape", "focus_list", "Nodes", show=False, id="graph.list", tooltip="Back to the node list"),
    ]

    @dataclass
    class NodesLoaded(Message):
        rows: list
        cursor: object
        append: bool
        counts: dict | None = None
        select_id: int | None = None
        opened_at: bool = False
        """The list starts at ``select_id`` (it was too far down to read through)."""

    @dataclass
    class NodeLoaded(Message):
        view: object

    def __init__(self) -> None:
        super().__init__()
        self.cursor = None
        self.view = None
        self.requested_id: int | None = None
        self.history: list[int] = []
        self.position = -1
        self._facts: list = []
        self._edges: list = []
        self._events: list = []

    def compose(self) -> ComposeResult:
        yield self.compose_header()
        with Vertical(classes="view-body"):
            with Horizontal(classes="filter-bar", id="graph-filters"):
                yield Select([(t, t) for t in NODE_TYPES], prompt="any type", compact=True, id="g-type")
                yield Input(placeholder="find a node by name or alias…", id="g-search", compact=True)
                yield Label("", id="node-summary", classes="summary")
            with Horizontal(id="graph-panes"):
                table = PagedTable(id="nodes", classes="loadable gives-way", flex="name")
                table.add_columns("name", "type", "facts", "edges", "events")
                table.tooltip = NODE_COUNTS_HELP
                yield table
                with Vertical(id="node-side", classes="detail-pane collapsible"):
                    yield Static("Select a node.", id="node-head")
                    with TabbedContent(id="node-tabs"):
                        with TabPane("Facts", id="facts"):
                            yield NavTable(id="facts-table", flex="status", flex_min=30)
                        with TabPane("Edges", id="edges"):
                            yield NavTable(id="edges-table", flex="status", flex_min=30)
                        with TabPane("Events", id="events"):
                            yield NavTable(id="events-table", flex="title")
                    yield Static("", id="row-line", classes="row-line", markup=False)
                    yield Label("", id="history-line", classes="meta-line")
        yield EmptyState(id="empty")
        yield self.compose_footer()

    def on_mount(self) -> None:
        self.query_one("#facts-table", DataTable).add_columns(*FACT_COLUMNS)
        self.query_one("#edges-table", DataTable).add_columns(*EDGE_COLUMNS)
        self.query_one("#events-table", DataTable).add_columns(*EVENT_COLUMNS)
        super().on_mount()

    # ------------------------------------------------------------------ node list

    def reload(self) -> None:
        self.load_nodes(counts=True)

    def load_nodes(self, *, append: bool = False, counts: bool = False, select_id: int | None = None) -> None:
        """Read the first page of nodes (or the next, with ``append``); with ``select_id``, every
        page through that node, which gets the cursor."""
        ns = self.namespace
        node_type = self.query_one("#g-type", Select).value
        node_type = None if node_type is Select.NULL else str(node_type)
        query = self.query_one("#g-search", Input).value.strip() or None
        after = self.cursor if append else None
        table = self.query_one("#nodes", PagedTable)
        if not append:
            table.start_loading()

        def nodes():
            # start-up time, here and below: the services `strata` has not loaded for its parser load when a view
            # first reads, on the database thread, not before the first paint
            from core.services.browse import node_page, node_position, node_type_counts

            def read(cursor):
                page = node_page(ns, node_type, query, after=cursor, limit=PAGE)
                return page.rows, page.cursor

            opened_at = False
            if select_id is None:
                rows, cursor = read(after)
            else:
                rows, cursor, found = read_through(read, lambda row: row.id == select_id)
                position = None if found or cursor is None else node_position(select_id)
                if position is not None:  # far down the list: open it at the node
                    (rows, cursor), opened_at = read(position), True
            return rows, cursor, (node_type_counts(ns) if counts else None), opened_at

        self.fetch(
            "nodes",
            nodes,
            lambda result: self.NodesLoaded(list(result[0]), result[1], append, result[2], select_id, result[3]),
        )

    @on(NodesLoaded)
    def _nodes_loaded(self, event: NodesLoaded) -> None:
        table = self.query_one("#nodes", PagedTable)
        if not event.append:
            table.reset()
        self.cursor = event.cursor
        table.append_page(
            event.rows,
            [(r.name, r.type, str(r.facts), str(r.edges), r.events_text) for r in event.rows],
            event.cursor is not None,
        )
        table.stop_loading()
        self.workbench.mark("graph:list")
        if event.counts is not None:
            select = self.query_one("#g-type", Select)
            value = select.value
            with select.prevent(Select.Changed):
                select.set_options([(f"{t} ({event.counts.get(t, 0)})", t) for t in NODE_TYPES])
                if value is not Select.NULL:
                    select.value = value
        more = "+" if event.cursor is not None else ""
        start = f" from {table.items[0].name}" if event.opened_at and table.items else ""
        self.query_one("#node-summary", Label).update(counted(f"{len(table.items)}{more}", "node") + start)
        if not event.append:
            if table.items:
                index = next((i for i, row in enumerate(table.items) if row.id == event.select_id), 0)
                table.move_cursor(row=index)
                if self.requested_id is None:
                    self.show_node(table.items[index].id, "replace", after_paint=True)
            else:
                self.query_one("#node-head", Static).update(
                    "No nodes match."
                    if self.query_one("#g-search", Input).value
                    else "No graph yet: nodes are projected from events (run `strata derive`)."
                )
            if self.focused is None:
                table.focus()

    @on(PagedTable.NeedMore, "#nodes")
    def _more(self) -> None:
        if self.cursor is not None:
            self.load_nodes(append=True)

    @on(PagedTable.RowSelected, "#nodes")
    def _into_node(self) -> None:
        """Enter on a node: into its open tab."""
        self.action_tab(self.query_one("#node-tabs", TabbedContent).active or "facts")

    @on(PagedTable.RowHighlighted, "#nodes")
    def _highlighted(self) -> None:
        row = self.query_one("#nodes", PagedTable).current
        if row is not None and row.id != self.requested_id:
            self.show_node(row.id, "replace")

    @on(Select.Changed, "#g-type")
    def _type_picked(self) -> None:
        if self.namespace is not None and self._loaded_once:
            self.load_nodes()

    @on(Input.Changed, "#g-search")
    def _typed(self) -> None:
        self.after_typing(self.load_nodes)

    @on(Input.Submitted, "#g-search")
    def _submitted(self) -> None:
        self.typing_done()
        self.load_nodes()
        self.query_one("#nodes", PagedTable).request_focus()

    # ------------------------------------------------------------------ one node

    def show_node(self, node_id: int, how: str = "push", *, after_paint: bool = False) -> None:
        """Load a node; ``how`` is push (a new step), replace (browsing the list) or none."""
        if how == "push":
            del self.history[self.position + 1 :]
            self.history.append(node_id)
            self.position = len(self.history) - 1
        elif how == "replace":
            if self.position < 0:
                self.history, self.position = [node_id], 0
            else:
                del self.history[self.position + 1 :]
                self.history[self.position] = node_id

        self.requested_id = node_id

        def view():
            from core.services.graph import node_view

            return node_view(node_id)

        self.fetch("node", view, self.NodeLoaded, after_paint=after_paint)

    @on(NodeLoaded)
    def _node_loaded(self, event: NodeLoaded) -> None:
        self.view = view = event.view
        head = [
            Content.from_markup(
                "[b]$name[/b]  [dim]$type · node $id · confidence $conf[/dim]\n",
                name=view.name,
                type=view.type,
                id=str(view.id),
                conf=f"{view.confidence:.2f}",
            )
        ]
        if view.aliases:
            head.append(Content.from_markup("aka $aliases\n", aliases=", ".join(view.aliases)))
        if view.tags:
            head.append(Content.from_markup("[dim]tags $tags[/dim]\n", tags=", ".join(view.tags)))
        if view.current_state:
            head.append(Content.from_markup("$state", state=view.current_state))
        self.query_one("#node-head", Static).update(Content("").join(head))
        facts = self.query_one("#facts-table", DataTable)
        facts.clear()
        self._facts = [*view.current_facts, *view.historical_facts]
        for fact in view.current_facts:
            facts.add_row(
                fact.key,
                _value(fact.value),
                fact.status,
                _span(fact.valid_from, fact.valid_to),
                ", ".join(map(str, fact.source_event_ids)),
                key=f"c{fact.id}",
            )
        for fact in view.historical_facts:
            facts.add_row(
                fact.key,
                _value(fact.value),
                _past(fact.status, fact.ended_by),
                _span(fact.valid_from, fact.valid_to),
                ", ".join(map(str, fact.source_event_ids)),
                key=f"h{fact.id}",
            )
        edges = self.query_one("#edges-table", DataTable)
        edges.clear()
        self._edges = [*view.edges_out, *view.edges_in]
        for direction, items in (("→", view.edges_out), ("←", view.edges_in)):
            for edge in items:
                edges.add_row(
                    direction,
                    edge.relation,
                    edge.other_name,
                    edge.status if edge.current else _past(edge.status, edge.ended_by),
                    _span(edge.valid_from, edge.valid_to),
                    edge.other_type,
                    key=f"{direction}{edge.id}",
                )
        events = self.query_one("#events-table", DataTable)
        events.clear()
        self._events = list(view.events)
        for ref in view.events:
            events.add_row(str(ref.id), ref.status, ref.happened_start or "", ref.title, key=str(ref.id))
        tabs = self.query_one("#node-tabs", TabbedContent)
        tabs.get_tab("facts").label = f"Facts {len(view.current_facts)}+{len(view.historical_facts)}"
        tabs.get_tab("edges").label = f"Edges {len(view.edges_out)}→ {len(view.edges_in)}←"
        row = next((r for r in self.query_one("#nodes", PagedTable).items if r.id == view.id), None)
        cited = f" of {row.events_text}" if row is not None and row.events_text != str(len(view.events)) else ""
        tabs.get_tab("events").label = f"Events {len(view.events)}{cited}"
        back = self.position
        forward = len(self.history) - self.position - 1
        self.query_one("#history-line", Label).update(
            f"[ back ({back}) · ] forward ({forward}) · enter on an edge follows it, on an event opens it"
        )
        self._show_row_line()

    # ------------------------------------------------------------------ the selected row, whole

    @on(DataTable.RowHighlighted, "#node-tabs DataTable")
    @on(TabbedContent.TabActivated, "#node-tabs")
    def _show_row_line(self) -> None:
        """The highlighted fact, edge or event of the open tab on one line, every column whole
        (why a past record ended too), however narrow the table."""
        active = self.query_one("#node-tabs", TabbedContent).active or "facts"
        rows = {"facts": self._facts, "edges": self._edges, "events": self._events}.get(active, [])
        index = self.query_one(f"#{active}-table", DataTable).cursor_row
        view, text = self.view, ""
        if view is not None and 0 <= index < len(rows):
            text = row_line(
                active,
                rows[index],
                current=index < len(view.current_facts),
                outgoing=index < len(view.edges_out),
            )
        self.query_one("#row-line", Static).update(text)

    @on(DataTable.RowSelected, "#edges-table")
    def _follow(self, event: DataTable.RowSelected) -> None:
        edge = self._edges[event.cursor_row] if event.cursor_row < len(self._edges) else None
        if edge is not None:
            self.show_node(edge.other_id, "push")

    @on(DataTable.RowSelected, "#facts-table")
    def _fact_source(self, event: DataTable.RowSelected) -> None:
        fact = self._facts[event.cursor_row] if event.cursor_row < len(self._facts) else None
        if fact is None:
            return
        if fact.source_event_ids:
            self.workbench.open_item("event", fact.source_event_ids[0])
        else:
            self.notify("This fact cites no event", severity="warning", timeout=3)

    @on(DataTable.RowSelected, "#events-table")
    def _open_event(self, event: DataTable.RowSelected) -> None:
        if event.cursor_row < len(self._events):
            self.workbench.open_item("event", self._events[event.cursor_row].id)

    def action_back(self) -> None:
        if self.position > 0:
            self.position -= 1
            self.show_node(self.history[self.position], "none")

    def action_forward(self) -> None:
        if self.position < len(self.history) - 1:
            self.position += 1
            self.show_node(self.history[self.position], "none")

    def action_tab(self, tab: str) -> None:
        self.query_one("#node-tabs", TabbedContent).active = tab
        self.query_one(f"#{tab}-table", DataTable).focus()

    def action_focus_search(self) -> None:
        self.query_one("#g-search", Input).focus()

    def action_focus_list(self) -> None:
        self.query_one("#nodes", PagedTable).focus()

    def focus_item(self, kind: str, item_id: int, level: int | None = None) -> None:
        """Show a node, with the list read through it (type filter and search cleared)."""
        if kind != "node":
            return
        self.show_node(item_id, "push")
        select, search = self.query_one("#g-type", Select), self.query_one("#g-search", Input)
        with select.prevent(Select.Changed):
            select.clear()
        with search.prevent(Input.Changed):
            search.value = ""
        self.load_nodes(select_id=item_id, counts=True)

    def copy_text(self) -> str | None:
        view = self.view
        if view is None:
            return None
        lines = [f"{view.name} ({view.type}, node {view.id})"]
        lines += [f"- {f.key}: {_value(f.value)}" for f in view.current_facts]
        lines += [f"- {e.relation} → {e.other_name}" for e in view.edges_out]
        lines += [f"- {e.other_name} {e.relation} → this" for e in view.edges_in]
        return "\n".join(lines)

    def palette_commands(self):
        return [
            ("graph: Back", "The previous node", self.action_back),
            ("graph: Forward", "The next node again", self.action_forward),
        ]
