"""Traces: every retrieval, newest first, and why each candidate was or was not used.

A trace shows its query and channel, the candidates with their score components, and
when it belongs to a batch, the assessment (verdict, refs, fit, missing, next strategy,
rejected refs with reasons) and the use receipt. Filter by query words, or by a ref
(``event:12``) to answer "why was X not recalled?": the traces that returned it, and
what happened to it there. ``enter`` on a candidate opens it in its own view.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Input, Label, Select, Static

from core.dto import to_plain
from workbench.screens.base import EmptyState, StrataScreen
from workbench.widgets.lists import NavTable, TextPane
from workbench.widgets.table import PagedTable

PAGE = 50
KINDS = ("search", "assess", "use", "context")


def parse_ref(ref: str) -> tuple[str, int, int | None] | None:
    """(kind, id, level) for a ref the workbench can open, or None."""
    parts = ref.split(":")
    try:
        if parts[0] == "event":
            return "event", int(parts[1]), None
        if parts[0] == "graph-node":
            return "node", int(parts[1]), None
        if parts[0] == "raw":
            return "message", int(parts[2]), 5
        if parts[0] == "block":
            return "block", int(parts[1]), int(parts[3]) if len(parts) > 3 else None
    except (IndexError, ValueError):
        return None
    return None


TRACE_COLUMNS = ("#", "kind", "channel", "verdict", "query", "cands", "sel", "ms", "when")
CANDIDATE_COLUMNS = ("#", "ref", "used", "score", "components", "title")
"""In order of importance (the verdict, and what became of a candidate, before the numbers and dates);
the query and the title take the room left."""


def trace_cells(row) -> tuple:
    query = row.query if len(row.query) <= 90 else row.query[:89] + "…"
    return (
        str(row.id),
        row.kind,
        row.channel or "",
        row.verdict or "",
        query,
        str(row.candidate_count),
        str(row.selected_count),
        f"{row.elapsed_ms:.0f}",
        row.created_at[:16].replace("T", " "),
    )


class TracesScreen(StrataScreen):
    """Retrieval traces (list) over one trace's candidates and assessment."""

    MODE = "traces"
    AUTO_FOCUS = "#traces"
    TITLE = "Traces"

    BINDINGS = [
        Binding(
            "f",
            "focus_filter",
            "Filter",
            id="traces.filter",
            tooltip="Filter by query words or by a ref such as event:12",
        ),
        Binding("w", "candidates", "Candidates", id="traces.candidates", tooltip="Go to the candidates"),
        Binding("escape", "focus_list", "Traces", show=False, id="traces.list", tooltip="Back to the trace list"),
    ]

    @dataclass
    class PageLoaded(Message):
        rows: list
        append: bool

    @dataclass
    class DetailLoaded(Message):
        detail: object

    def __init__(self) -> None:
        super().__init__()
        self.detail = None
        self.requested_id: int | None = None
        self.candidates: list[dict] = []

    def compose(self) -> ComposeResult:
        yield self.compose_header()
        with Vertical(classes="view-body"):
            with Horizontal(classes="filter-bar", id="trace-filters"):
                yield Input(
                    placeholder="query words, or a ref like event:12 (why was it not recalled?)",
                    id="t-filter",
                    compact=True,
                )
                yield Select([(k, k) for k in KINDS], prompt="any kind", compact=True, id="t-kind")
                yield Label("", id="trace-summary", classes="summary")
            table = PagedTable(id="traces", classes="loadable", flex="query", flex_min=24)
            table.add_columns(*TRACE_COLUMNS)
            yield table
            with Horizontal(id="trace-panes"):
                with TextPane(id="trace-info", classes="detail-pane gives-way"):
                    yield Static("Select a trace.", id="trace-text")
                with Vertical(id="candidate-side", classes="collapsible"):
                    yield Label("Candidates (enter opens one)", classes="pane-title")
                    yield NavTable(id="candidates", flex="title")
        yield EmptyState(id="empty")
        yield self.compose_footer()

    def on_mount(self) -> None:
        self.query_one("#candidates", DataTable).add_columns(*CANDIDATE_COLUMNS)
        super().on_mount()

    # ------------------------------------------------------------------ list

    def reload(self) -> None:
        self.load_page()

    def load_page(self, *, append: bool = False) -> None:
        ns = self.namespace
        text = self.query_one("#t-filter", Input).value
        kind = self.query_one("#t-kind", Select).value
        kind = None if kind is Select.NULL else str(kind)
        table = self.query_one("#traces", PagedTable)
        before = table.items[-1].id if append and table.items else None
        if not append:
            table.start_loading()

        def page():
            # start-up time, here and below: the services `strata` has not loaded for its parser load when a view
            # first reads, on the database thread, not before the first paint
            from core.services.browse import trace_page

            return trace_page(ns, text, kind, before_id=before, limit=PAGE + 1)

        self.fetch("page", page, lambda rows: self.PageLoaded(rows, append))

    @on(PageLoaded)
    def _page_loaded(self, event: PageLoaded) -> None:
        table = self.query_one("#traces", PagedTable)
        if not event.append:
            table.reset()
        rows = event.rows[:PAGE]
        table.append_page(rows, [trace_cells(r) for r in rows], len(event.rows) > PAGE)
        table.stop_loading()
        self.workbench.mark("traces:list")
        more = "+" if table.has_more else ""
        self.query_one("#trace-summary", Label).update(f"{len(table.items)}{more} traces")
        if not event.append:
            if table.items:
                table.move_cursor(row=0)
                self.load_detail(table.items[0].id, after_paint=True)
            else:
                self.detail = None
                filtered = self.query_one("#t-filter", Input).value.strip()
                self.query_one("#trace-text", Static).update(
                    f"No trace matches {filtered!r}: nothing retrieved it."
                    if filtered
                    else "No retrievals yet. Traces appear when an agent (or `strata search`) retrieves memory."
                )
                self.query_one("#candidates", DataTable).clear()

    @on(PagedTable.NeedMore, "#traces")
    def _more(self) -> None:
        self.load_page(append=True)

    @on(PagedTable.RowSelected, "#traces")
    def _into_trace(self) -> None:
        """Enter on a trace: into its candidates."""
        self.action_candidates()

    @on(PagedTable.RowHighlighted, "#traces")
    def _highlighted(self) -> None:
        row = self.query_one("#traces", PagedTable).current
        if row is not None and row.id != self.requested_id:
            self.load_detail(row.id)

    @on(Input.Changed, "#t-filter")
    def _typed(self) -> None:
        self.after_typing(self.load_page)

    @on(Input.Submitted, "#t-filter")
    def _submitted(self) -> None:
        self.typing_done()
        self.load_page()
        self.query_one("#traces", PagedTable).request_focus()

    @on(Select.Changed, "#t-kind")
    def _kind_picked(self) -> None:
        if self.namespace is not None and self._loaded_once:
            self.load_page()

    # ------------------------------------------------------------------ detail

    def load_detail(self, trace_id: int, *, after_paint: bool = False) -> None:
        self.requested_id = trace_id

        def detail():
            from core.services.trace_view import get_trace

            return get_trace(trace_id)

        self.fetch("detail", detail, self.DetailLoaded, after_paint=after_paint)

    @on(DetailLoaded)
    def _detail_loaded(self, event: DetailLoaded) -> None:
        self.detail = detail = event.detail
        self.query_one("#trace-text", Static).update(render_trace(detail))
        batch = detail.batch
        titles = {r.ref: (r.citation or {}).get("title") for r in batch.refs} if batch else {}
        assessment = (batch.assessment or {}) if batch else {}
        adopted = set(assessment.get("evidence_refs") or ())
        rejected = {
            r.get("ref"): r.get("reason") for r in assessment.get("rejected_evidence_refs") or () if isinstance(r, dict)
        }
        used = set(batch.receipt.event_ids) if batch and batch.receipt else set()
        below = {
            x.get("ref"): x.get("reason")
            for x in (detail.detail or {}).get("not_recalled") or ()
            if isinstance(x, dict)
        }
        selected = set(detail.selected)
        table = self.query_one("#candidates", DataTable)
        table.clear()
        self.candidates = list(detail.candidates)
        for index, item in enumerate(self.candidates, 1):
            ref = item.get("ref", "")
            score = item.get("score")
            components = " ".join(f"{k}={v:g}" for k, v in (item.get("components") or {}).items())
            state = []
            if ref in adopted:
                state.append("adopted")
            if ref in rejected:
                state.append(f"rejected: {rejected[ref]}")
            parsed = parse_ref(ref)
            if parsed and parsed[0] == "event" and parsed[1] in used:
                state.append("used")
            if not state and ref in selected:
                state.append("returned")
            if not state and ref in below:
                state.append(f"not recalled: {str(below[ref]).replace('_', ' ')}")
            title = titles.get(ref) or ""
            table.add_row(
                str(index),
                ref,
                ", ".join(state),
                "" if score is None else f"{score:.4f}",
                components,
                title[:60] if title else "",
            )

    @on(DataTable.RowSelected, "#candidates")
    def _open_candidate(self, event: DataTable.RowSelected) -> None:
        if event.cursor_row >= len(self.candidates):
            return
        parsed = parse_ref(self.candidates[event.cursor_row].get("ref", ""))
        if parsed is None:
            self.notify("This ref cannot be opened here", severity="warning")
            return
        kind, item_id, level = parsed
        self.workbench.open_item(kind, item_id, level)

    # ------------------------------------------------------------------ actions

    def action_focus_filter(self) -> None:
        self.query_one("#t-filter", Input).focus()

    def action_candidates(self) -> None:
        self.query_one("#candidates", DataTable).focus()

    def action_focus_list(self) -> None:
        self.query_one("#traces", PagedTable).focus()

    def focus_item(self, kind: str, item_id: int, level: int | None = None) -> None:
        if kind == "trace":
            self.load_detail(item_id)

    def copy_text(self) -> str | None:
        if self.detail is None:
            return None

        return json.dumps(to_plain(self.detail), ensure_ascii=False, indent=2, sort_keys=True)


def render_trace(detail) -> Content:
    trace = detail.trace
    parts: list[Content] = []

    def add(markup: str, **values: str) -> None:
        parts.append(Content.from_markup(markup, **values))

    add(
        "[b]$kind[/b] trace $id · $channel · $when · $ms ms\n",
        kind=trace.kind,
        id=str(trace.id),
        channel=trace.channel or "no channel",
        when=trace.created_at[:19].replace("T", " "),
        ms=f"{trace.elapsed_ms:.1f}",
    )
    add("[b $primary]query[/] $q\n", q=trace.query or "(none)")
    if trace.verdict:
        add("[b $primary]verdict[/] $v\n", v=trace.verdict)
    batch = detail.batch
    if batch is None:
        add("[dim]No batch: a command-line search, or a context build.[/dim]\n")
    else:
        add(
            "\n[b $primary]Batch $label[/]  $status · session $session · $n refs ($new new)\n",
            label=batch.label,
            status=batch.status,
            session=batch.session or "-",
            n=str(len(batch.refs)),
            new=str(batch.new_refs),
        )
        assessment = batch.assessment
        if assessment:
            add("[b]assessment[/b] $verdict", verdict=str(assessment.get("verdict")))
            if assessment.get("requested_verdict") not in (None, assessment.get("verdict")):
                add(" (asked $asked)", asked=str(assessment.get("requested_verdict")))
            add("\n")
            add("refs     $refs\n", refs=", ".join(assessment.get("evidence_refs") or ()) or "-")
            add("fit      $fit\n", fit=assessment.get("fit") or "-")
            add("missing  $missing\n", missing=assessment.get("missing") or "-")
            strategy = assessment.get("next_strategy") or "-"
            if assessment.get("strategy_rewritten_from"):
                strategy += f" (rewritten from {assessment['strategy_rewritten_from']})"
            add("next     $s\n", s=strategy)
            for rejected in assessment.get("rejected_evidence_refs") or ():
                add(
                    "[b $error]rejected[/] $ref: $reason ($detail)\n",
                    ref=str(rejected.get("ref")),
                    reason=str(rejected.get("reason")),
                    detail=str(rejected.get("detail")),
                )
            for note in assessment.get("notes") or ():
                add("[dim]note: $note[/dim]\n", note=str(note))
        else:
            add("[dim]not assessed yet[/dim]\n")
        receipt = batch.receipt
        if receipt is not None:
            add(
                "\n[b $primary]Use receipt[/] $id · $when\n",
                id=receipt.receipt_id,
                when=receipt.created_at[:19].replace("T", " "),
            )
            add("reinforced events $ids\n", ids=", ".join(map(str, receipt.event_ids)) or "none")
        else:
            add("[dim]no use recorded[/dim]\n")
    lost = [x for x in (detail.detail or {}).get("not_recalled") or () if isinstance(x, dict)]
    if lost:
        add("\n[b $primary]Why not recalled[/]  the best candidates below the cut\n")
        for item in lost:
            score = item.get("score")
            add(
                "$ref  $score  [b]$reason[/b]$kind\n",
                ref=str(item.get("ref")),
                score="-" if not isinstance(score, (int, float)) else f"{score:.4f}",
                reason=str(item.get("reason") or "-").replace("_", " "),
                kind=f" ({item['kind']})" if item.get("kind") else "",
            )
    if detail.detail:
        extra = {
            k: v
            for k, v in detail.detail.items()
            if k not in ("params", "not_recalled", "kinds") and v not in (None, "", [], {})
        }
        if extra:
            add("\n[dim]$extra[/dim]\n", extra=", ".join(f"{k}={v}" for k, v in sorted(extra.items())))
    return Content("").join(parts)
