"""Help: every command of the registry with the key that really triggers it (after overrides)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from roundtable.tui.commands import COMMANDS, display_key

if TYPE_CHECKING:
    from roundtable.tui.app import RoundtableApp


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def compose(self) -> ComposeResult:
        app: RoundtableApp = self.app  # type: ignore[assignment]
        table = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("command", no_wrap=True)
        table.add_column("what it does")
        for command in COMMANDS:
            note = " (disabled: read-only)" if command.mutating and app.read_only else ""
            table.add_row(display_key(app, command), command.title, command.help + note)
        intro = Text(
            "Every action goes through the same tool calls agents use, recorded with you as the operator.\n",
            style="dim",
        )
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Keys and commands"
            box.border_subtitle = "esc to close"
            yield Static(intro)
            yield Static(table)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
