"""A one-line question for a change that needs words: a reason to reject, revoke or forget, the
evidence refs an approval rests on."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


class PromptScreen(ModalScreen[str | None]):
    """Dismisses with the text typed (Enter) or None (Esc). ``required`` refuses an empty answer."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel", tooltip="Leave everything as it is")]

    def __init__(self, title: str, body: str, *, placeholder: str = "", value: str = "", required: bool = True) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.placeholder = placeholder
        self.value = value
        self.required = required

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-dialog", classes="dialog"):
            yield Label(self.title_text, id="prompt-title", classes="dialog-title")
            yield Static(self.body, id="prompt-body")
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            yield Static("Enter to go on · Esc to cancel", id="prompt-hint", classes="summary")

    def on_mount(self) -> None:
        self.query_one("#prompt-input", Input).focus()

    @on(Input.Submitted, "#prompt-input")
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if self.required and not text:
            self.query_one("#prompt-hint", Static).update("An answer is needed here (Esc cancels).")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
