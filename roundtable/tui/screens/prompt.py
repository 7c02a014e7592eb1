"""Prompt: one line of text (a note, a reason, a filter). `None` means cancelled."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PromptScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self, title: str, label: str, *, value: str = "", required: bool = False, placeholder: str = ""
    ) -> None:
        super().__init__()
        self.title_text = title
        self.label = label
        self.value = value
        self.required = required
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box") as box:
            box.border_title = self.title_text
            box.border_subtitle = "enter to submit · esc to cancel"
            yield Static(self.label)
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            yield Static("", id="prompt-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if self.required and not text:
            self.query_one("#prompt-error", Static).update("[red]required[/]")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
