"""Search: one query across events, the graph and raw messages.

The same channels an agent uses (BM25 over the incremental index, RRF for events), run
read-only: searching from the workbench does not mark events as retrieved. ``enter``
opens a result in its own view.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Input, Label, Select, Static

from core.redact import redact_text
from core.services.search import search_events, search_graph, search_raw
from workbench.screens.base import EmptyState, StrataScreen
from workbench.widgets.lists import NavTable, TextPane

CHANNELS = (("all channels", "all"), ("events", "events"), ("graph", "graph"), ("raw messages", "raw"))


@dataclass(frozen=True)
class Result:
    channel: str
    kind: str  # what OpenItem opens: event, node, message
    item_id: int
    score: float
    title: str
    when: str
    preview: str
    level: int | None = None


def run_search(namespace: str, query: str, channel: str) -> list[Result]:
    """Every channel's hits as one list (events, then graph, then raw), best first within each."""

    out: list[Result] = []
    if channel in ("all", "events"):
        for hit in search_events(namespace, query, 20, track=False):
            e = hit.event
            out.append(
                Result(
                    "events",
                    "event",
                    e.id,
                    hit.rank_score,
                    e.title,
                    e.happened_start or (e.mentioned_at or "")[:10],
                    f"{e.title}\n\n{e.summary}\n\n{e.event_type} · {e.status} · {', '.join(e.participants)}",
                )
            )
    if channel in ("all", "graph"):
        for hit in search_graph(namespace, query, 10):
            out.append(
                Result(
                    "graph",
                    "node",
                    hit.node_id,
                    hit.rank_score,
                    f"{hit.name} ({hit.type})",
                    "",
                    f"{hit.name} ({hit.type})\nmatched {', '.join(hit.matched_fields)} "
                    f"({hit.match_type})\n\n{hit.current_state}",
                )
            )
    if channel in ("all", "raw"):
        for hit in search_raw(namespace, query, 20):
            m = hit.message
            # Masked before the cut (fetch masks the rest): a cut token is no longer recognised.
            out.append(
                Result(
                    "raw",
                    "message",
                    m.id,
                    hit.score,
                    " ".join(redact_text(m.content).split())[:90],
                    m.created_at[:10],
                    "\n\n".join(f"{n.speaker or n.role}: {n.content}" for n in hit.nearby) or m.content,
                    5,
                )
            )
    return out


class SearchScreen(StrataScreen):
    """Global search; results on the left, the selected one's text on the right."""

    MODE = "search"
    AUTO_FOCUS = "#s-query"
    TITLE = "Search"

    BINDINGS = [
        Binding("f", "focus_query", "New search", show=False, id="search.query", tooltip="Type a new query"),
        Binding("escape", "focus_results", "Results", show=False, id="search.results", tooltip="Back to the results"),
    ]

    @dataclass
    class ResultsLoaded(Message):
        query: str
        results: list

    def __init__(self) -> None:
        super().__init__()
        self.results: list[Result] = []

    def compose(self) -> ComposeResult:
        yield self.compose_header()
        with Vertical(classes="view-body"):
            with Horizontal(classes="filter-bar", id="search-bar"):
                yield Input(placeholder="search events, graph and raw messages… (enter)", id="s-query", compact=True)
                yield Select(CHANNELS, value="all", allow_blank=False, compact=True, id="s-channel")
                yield Label("", id="search-summary", classes="summary")
            with Horizontal(id="search-panes"):
                yield NavTable(id="results", classes="loadable", flex="title")
                with TextPane(id="result-preview", classes="detail-pane"):
                    yield Static(
                        "Type a query and press enter. Results come from the same channels an agent "
                        "uses; enter on a result opens it in its own view.",
                        id="preview-text",
                    )
        yield EmptyState(id="empty")
        yield self.compose_footer()

    def on_mount(self) -> None:
        self.query_one("#results", DataTable).add_columns("channel", "score", "when", "title")
        super().on_mount()

    def reload(self) -> None:
        if self.query_one("#s-query", Input).value.strip():
            self.run_query()

    @on(Input.Submitted, "#s-query")
    def _submitted(self) -> None:
        self.run_query()

    @on(Select.Changed, "#s-channel")
    def _channel(self) -> None:
        if self.namespace is not None and self._loaded_once and self.query_one("#s-query", Input).value.strip():
            self.run_query()

    def run_query(self) -> None:
        ns = self.namespace
        query = self.query_one("#s-query", Input).value.strip()
        channel = str(self.query_one("#s-channel", Select).value)
        if ns is None or not query:
            return
        self.query_one("#results", DataTable).loading = True
        self.fetch("results", lambda: run_search(ns, query, channel), lambda rows: self.ResultsLoaded(query, rows))

    @on(ResultsLoaded)
    def _loaded(self, event: ResultsLoaded) -> None:
        self.results = event.results
        table = self.query_one("#results", DataTable)
        table.clear()
        for result in event.results:
            table.add_row(result.channel, f"{result.score:.3f}", result.when[:16], result.title[:120])
        table.loading = False
        self.workbench.mark("search:results")
        counts = {}
        for result in event.results:
            counts[result.channel] = counts.get(result.channel, 0) + 1
        self.query_one("#search-summary", Label).update(" · ".join(f"{n} {c}" for c, n in counts.items()) or "no hits")
        if event.results:
            table.move_cursor(row=0)
            self._preview(0)
            table.focus()
        else:
            self.query_one("#preview-text", Static).update(
                Content.from_markup(
                    "Nothing matches [b]$q[/b]. Try other words, or the Traces view to see what an agent searched for.",
                    q=event.query,
                )
            )

    @on(DataTable.RowHighlighted, "#results")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._preview(event.cursor_row)

    def _preview(self, index: int) -> None:
        if 0 <= index < len(self.results):
            result = self.results[index]
            self.query_one("#preview-text", Static).update(
                Content.from_markup(
                    "[b]$channel[/b] · $kind $id · score $score\n\n$text",
                    channel=result.channel,
                    kind=result.kind,
                    id=str(result.item_id),
                    score=f"{result.score:.4f}",
                    text=result.preview,
                )
            )

    @on(DataTable.RowSelected, "#results")
    def _open(self, event: DataTable.RowSelected) -> None:
        if 0 <= event.cursor_row < len(self.results):
            result = self.results[event.cursor_row]
            self.workbench.open_item(result.kind, result.item_id, result.level)

    def action_focus_query(self) -> None:
        self.query_one("#s-query", Input).focus()

    def action_focus_results(self) -> None:
        self.query_one("#results", DataTable).focus()

    def copy_text(self) -> str | None:
        table = self.query_one("#results", DataTable)
        if not self.results or table.cursor_row >= len(self.results):
            return None
        return self.results[table.cursor_row].preview
