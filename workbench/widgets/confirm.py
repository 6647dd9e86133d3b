"""A yes/no dialog for anything that writes: retry all, commit an import, undo a batch."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmScreen(ModalScreen[bool]):
    """Ask before a change; dismisses with True (confirm) or False."""

    BINDINGS = [
        Binding("y", "confirm", "Yes", id="confirm.yes", tooltip="Do it"),
        Binding("n,escape", "cancel", "No", id="confirm.no", tooltip="Leave everything as it is"),
        Binding("left,h", "app.focus_previous", "Previous", show=False, id="confirm.previous"),
        Binding("right,l", "app.focus_next", "Next", show=False, id="confirm.next"),
    ]

    def __init__(self, title: str, body: str, confirm_label: str = "Yes", *, danger: bool = False) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.confirm_label = confirm_label
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog", classes="dialog"):
            yield Label(self.title_text, id="confirm-title", classes="dialog-title")
            yield Static(self.body, id="confirm-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button(
                    f"{self.confirm_label} (y)", id="confirm-yes", variant="error" if self.danger else "primary"
                )
                yield Button("Cancel (n)", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    @on(Button.Pressed, "#confirm-yes")
    def action_confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#confirm-no")
    def action_cancel(self) -> None:
        self.dismiss(False)
