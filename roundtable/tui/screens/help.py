"""Help: every command of the registry with the key that really triggers it (after overrides),
and a legend for every glyph and column the panes use."""

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


# Glyphs and columns, as the panes draw them.
LEGEND: tuple[tuple[str, str], ...] = (
    ("⚑ N need you", "header: approvals, applies needing attention, blocked tasks, failed sessions (! lists them)"),
    ("STALE since …", "header: the database could not be read; panes keep their last data"),
    ("▶", "Runs: the run in view"),
    ("# / state", "Turn queue: FIFO position; requested → scheduled → started, then done or expired"),
    ("⚠ expires", "Turn queue: a scheduled turn not started in time (chair.turn_start_timeout) expires"),
    (
        "+N -M",
        "Proposals: votes on the current revision for (approve, approve_with_notes) / against (revise, reject, veto)",
    ),
    ("✓ ready", "Proposals gates: the last validation of this revision passed every gate"),
    ("✗ a,b", "Proposals gates: the gates that failed at the last validation (v for reasons)"),
    ("… press v", "Proposals gates: this revision was not validated yet"),
    ("r2 1a2b3c4d", "Proposals rev: revision number and the start of its sha256"),
    ("⚔", "Claims: the resource is contended (another agent wanted it)"),
    ("expires", "Claims / Sessions: time left before the claim or the capability lapses"),
    ("session / turn", "Agents: its current (else latest) session's state; its turn: requested, scheduled, started"),
    ("✗", "Agents: how many of its sessions failed (l shows a session's log)"),
    ("42s vote.cast", "Agents: the last thing it recorded, and how long ago"),
    (
        "AUTO / MANUAL",
        "header: the autopilot launches agents for the work (AUTO) or waits for you (MANUAL); P switches",
    ),
    ("STOPPED: why", "header: the autopilot stopped itself (too many failures in a row); P turns it back on"),
    ("1 Runs … i Insp", "pane bar (terminals below 120x32): the pane shown; 1-9, 0, i jump, tab cycles"),
)


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
        legend = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
        legend.add_column("glyph", style="bold", no_wrap=True)
        legend.add_column("meaning")
        for glyph, meaning in LEGEND:
            legend.add_row(glyph, meaning)
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Keys and commands"
            box.border_subtitle = "esc to close"
            yield Static(intro)
            yield Static(table)
            yield Static(Text("\nLegend", style="bold underline"))
            yield Static(legend)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
