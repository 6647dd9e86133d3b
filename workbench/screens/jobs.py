"""Jobs: derivation work that failed or is still waiting, with its errors and a retry."""

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
from core.services.jobs import job_counts, retry as retry_job
from workbench.screens.base import EmptyState, StrataScreen
from workbench.widgets.confirm import ConfirmScreen
from workbench.widgets.lists import TextPane
from workbench.widgets.table import PagedTable

PAGE = 50
SHOWS = (
    ("failed and pending", "open"),
    ("failed", "failed"),
    ("pending", "pending"),
    ("running", "running"),
    ("succeeded", "succeeded"),
    ("skipped", "skipped"),
    ("all", "all"),
)
STATUSES_OF = {"open": ("failed", "pending"), "all": ()}


JOB_COLUMNS = ("#", "status", "kind", "tries", "block", "error")
"""In order of importance; the error takes the room left (the detail below has it whole)."""


def job_cells(job) -> tuple:
    error = (job.last_error or "").replace("\n", " ")
    return (
        str(job.id),
        job.status,
        job.kind,
        str(job.attempts),
        "" if job.block_id is None else str(job.block_id),
        error[:200] + ("…" if len(error) > 200 else ""),
    )


class JobsScreen(StrataScreen):
    """Jobs newest first; ``r`` retries the selected one, ``R`` every failed one."""

    MODE = "jobs"
    AUTO_FOCUS = "#jobs"
    TITLE = "Jobs"

    BINDINGS = [
        Binding("r", "retry", "Retry", id="jobs.retry", tooltip="Retry the selected job (attempts reset)"),
        Binding("R", "retry_all", "Retry all failed", id="jobs.retry-all", tooltip="Retry every failed job shown"),
        Binding("f", "focus_filter", "Show", show=False, id="jobs.filter", tooltip="Choose which jobs to show"),
        Binding("b", "open_block", "Block", id="jobs.block", tooltip="Open the job's block"),
        Binding("escape", "focus_list", "Jobs", show=False, id="jobs.list", tooltip="Back to the job list"),
    ]

    @dataclass
    class PageLoaded(Message):
        rows: list
        append: bool
        counts: dict | None = None

    @dataclass
    class JobRetried(Message):
        """One or more jobs were set back to pending."""

        job_ids: list
        errors: list

    def __init__(self) -> None:
        super().__init__()
        self.show_filter = "open"

    def compose(self) -> ComposeResult:
        yield self.compose_header()
        with Vertical(classes="view-body"):
            with Horizontal(classes="filter-bar"):
                yield Label("show", classes="filter-label")
                yield Select(SHOWS, value="open", allow_blank=False, compact=True, id="j-show")
                yield Label("", id="job-counts", classes="summary")
            table = PagedTable(id="jobs", classes="loadable", flex="error")
            table.add_columns(*JOB_COLUMNS)
            yield table
            with TextPane(id="job-detail", classes="detail-pane"):
                yield Static("", id="job-text")
        yield EmptyState(id="empty")
        yield self.compose_footer()

    def reload(self) -> None:
        self.load_page(counts=True)

    def load_page(self, *, append: bool = False, counts: bool = False) -> None:
        ns = self.namespace
        statuses = STATUSES_OF.get(self.show_filter, (self.show_filter,))
        table = self.query_one("#jobs", PagedTable)
        before = table.items[-1].id if append and table.items else None
        if not append:
            table.start_loading()

        def page():
            # start-up time, here and below: the services `strata` has not loaded for its parser load when a view
            # first reads, on the database thread, not before the first paint
            from core.services.browse import job_page

            rows = job_page(ns, statuses, before_id=before, limit=PAGE + 1)
            return rows, (job_counts(ns) if counts else None)

        self.fetch("page", page, lambda result: self.PageLoaded(result[0], append, result[1]))

    @on(PageLoaded)
    def _page_loaded(self, event: PageLoaded) -> None:
        table = self.query_one("#jobs", PagedTable)
        if not event.append:
            table.reset()
        rows = event.rows[:PAGE]
        table.append_page(rows, [job_cells(j) for j in rows], len(event.rows) > PAGE)
        table.stop_loading()
        self.workbench.mark("jobs:list")
        if event.counts is not None:
            shown = " · ".join(f"{n} {status}" for status, n in event.counts.items() if n)
            self.query_one("#job-counts", Label).update(shown or "no jobs")
        if not event.append:
            if table.items:
                table.move_cursor(row=0)
                self.show_job(table.items[0])
            else:
                self.query_one("#job-text", Static).update(
                    "Nothing to do here: no job is failed or waiting. Derivation is up to date."
                    if self.show_filter == "open"
                    else "No jobs with this status."
                )

    @on(PagedTable.NeedMore, "#jobs")
    def _more(self) -> None:
        self.load_page(append=True)

    @on(PagedTable.RowSelected, "#jobs")
    def _into_job(self) -> None:
        """Enter on a job: into its detail (escape comes back)."""
        self.query_one("#job-detail", TextPane).focus()

    @on(PagedTable.RowHighlighted, "#jobs")
    def _highlighted(self) -> None:
        job = self.query_one("#jobs", PagedTable).current
        if job is not None:
            self.show_job(job)

    def show_job(self, job) -> None:
        retry = f" · next retry at epoch {job.next_retry_at:.0f}" if job.next_retry_at else ""
        text = Content.from_markup(
            "[b]$kind job $id[/b] · $status · attempt $attempts$retry\nblock $block · created $created · "
            "updated $updated\n\n$error",
            kind=job.kind,
            id=str(job.id),
            status=job.status,
            attempts=str(job.attempts),
            retry=retry,
            block="-" if job.block_id is None else str(job.block_id),
            created=job.created_at[:19],
            updated=job.updated_at[:19],
            error=job.last_error or "no error recorded",
        )
        self.query_one("#job-text", Static).update(text)

    @on(Select.Changed, "#j-show")
    def _show_picked(self, event: Select.Changed) -> None:
        self.show_filter = str(event.value)
        if self.namespace is not None and self._loaded_once:
            self.load_page()

    # ------------------------------------------------------------------ retry

    def action_retry(self) -> None:
        job = self.query_one("#jobs", PagedTable).current
        if job is None:
            return
        if job.status not in ("failed", "pending"):
            self.notify(f"job {job.id} is {job.status}; only failed or pending jobs can be retried", severity="warning")
            return
        self._retry([job.id])

    def action_retry_all(self) -> None:
        failed = [j.id for j in self.query_one("#jobs", PagedTable).items if j.status == "failed"]
        if not failed:
            self.notify("No failed jobs shown", severity="warning")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._retry(failed)

        self.app.push_screen(
            ConfirmScreen(
                "Retry failed jobs",
                f"Set {len(failed)} failed job(s) back to pending "
                "with their attempts reset? `strata derive` (or the agent) runs them.",
                "Retry",
            ),
            answered,
        )

    def _retry(self, job_ids: list[int]) -> None:
        def retry():

            done, errors = [], []
            for job_id in job_ids:
                try:
                    done.append(retry_job(job_id).id)
                except StrataError as exc:
                    errors.append(str(exc))
            return done, errors

        self.fetch("retry", retry, lambda result: self.JobRetried(*result))

    @on(JobRetried)
    def _retried(self, event: JobRetried) -> None:
        if event.job_ids:
            self.notify(f"{len(event.job_ids)} job(s) pending again: run `strata derive` to process them", timeout=5)
        for error in event.errors[:3]:
            self.notify(error, severity="error")
        self.load_page(counts=True)

    def action_open_block(self) -> None:
        job = self.query_one("#jobs", PagedTable).current
        if job is not None and job.block_id is not None:
            self.workbench.open_item("block", job.block_id)

    def action_focus_filter(self) -> None:
        self.query_one("#j-show", Select).focus()

    def action_focus_list(self) -> None:
        self.query_one("#jobs", PagedTable).focus()

    def copy_text(self) -> str | None:
        job = self.query_one("#jobs", PagedTable).current
        if job is None:
            return None
        return f"job {job.id} ({job.kind}, block {job.block_id}): {job.status}\n{job.last_error or ''}".strip()

    def palette_commands(self):
        return [("jobs: Retry all failed", "Set every failed job shown back to pending", self.action_retry_all)]
