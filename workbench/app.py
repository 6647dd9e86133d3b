"""The Strata workbench (Textual). For now: an overview of namespaces and blocks."""

from __future__ import annotations

from pathlib import Path

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static


class OverviewLoaded(Message):
    """Rows for the overview table, loaded off the event loop."""

    def __init__(self, rows: list[tuple], note: str) -> None:
        super().__init__()
        self.rows = rows
        self.note = note


class Workbench(App):
    """Review what an agent remembers."""

    CSS_PATH = Path(__file__).parent / "app.tcss"
    TITLE = "Strata workbench"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("r", "reload", "Reload", id="app.reload"),
    ]

    def __init__(self, db_url: str | None = None, namespace: str | None = None) -> None:
        super().__init__()
        self.db_url = db_url
        self.namespace = namespace

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Loading…", id="note")
        yield DataTable(id="overview", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#overview", DataTable)
        table.add_columns("namespace", "threads", "messages", "blocks ready", "blocks pending", "open turns")
        self.action_reload()

    def action_reload(self) -> None:
        self.query_one("#overview", DataTable).loading = True
        self.load_overview()

    @work(thread=True, exclusive=True, group="overview", exit_on_error=False)
    def load_overview(self) -> None:
        from core.services.spaces import list_namespaces
        from core.services.stats import stats
        from core.store import open_store

        store = open_store(self.db_url, recover=False)
        rows = []
        for info in list_namespaces():
            s = stats(info.name)
            rows.append((info.name, s.threads, s.messages, s.blocks_ready, s.blocks_pending, s.open_tail_turns))
        note = (
            f"Database: {store.url}"
            if rows
            else f"Database: {store.url} is empty. Run `strata demo` for a sample memory, "
            "or `strata ingest jsonl FILE` to add your own."
        )
        self.post_message(OverviewLoaded(rows, note))

    @on(OverviewLoaded)
    def show_overview(self, event: OverviewLoaded) -> None:
        table = self.query_one("#overview", DataTable)
        table.clear()
        for row in event.rows:
            table.add_row(*[str(v) for v in row])
        table.loading = False
        self.query_one("#note", Static).update(event.note)


def run_app(db_url: str | None = None, namespace: str | None = None) -> int:
    Workbench(db_url=db_url, namespace=namespace).run()
    return 0
