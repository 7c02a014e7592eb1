"""The one command registry: key bindings, the command palette and the help screen all read it.

Each command has a stable id; `tui.bindings` in `config.yaml` maps ids to other keys
(`approve: ctrl+a`) and Textual's keymap applies them, so the palette, the footer and the help
screen always show the key that really works.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from roundtable.tui import layout

if TYPE_CHECKING:
    from roundtable.tui.app import RoundtableApp


@dataclass(frozen=True)
class Command:
    """One operator command. `action` is the app action it runs; `bind` False means the key is
    Textual's own (tab, enter, ctrl+p) and is listed for help only."""

    id: str
    key: str
    action: str
    title: str
    help: str
    mutating: bool = False  # a read-only console refuses it (`read_only_refusal`)
    bind: bool = True
    palette: bool = True
    footer: bool = False


COMMANDS: tuple[Command, ...] = (
    Command("help", "question_mark", "help", "Help", "Show every key and command.", footer=True),
    Command(
        "palette",
        "ctrl+p",
        "command_palette",
        "Command palette",
        "Search and run a command.",
        bind=False,
        palette=False,
    ),
    Command("quit", "q", "quit", "Quit", "Stop the console, the Chair and the listeners."),
    Command("next_pane", "tab", "focus_next", "Next pane", "Move focus to the next pane.", bind=False, palette=False),
    Command(
        "prev_pane",
        "shift+tab",
        "focus_previous",
        "Previous pane",
        "Move focus to the previous pane.",
        bind=False,
        palette=False,
    ),
    Command("move", "j,k", "", "Move", "Move the selection down / up (arrows work too).", bind=False, palette=False),
    Command(
        "review",
        "d",
        "review",
        "Review",
        "The selected proposal's diff full screen, file by file (] and [); c comments on the line under "
        "the cursor (its author gets it in its next briefing); v shows what changed since the previous revision.",
    ),
    Command("inspect", "enter", "inspect", "Inspect", "Show the selected record in full in the inspector.", bind=False),
    Command("filter", "slash", "filter", "Filter", "Filter the focused pane (empty text clears)."),
    Command("approve", "a", "approve", "Approve", "Approve the selected human approval.", mutating=True),
    Command("deny", "x", "deny", "Deny", "Deny the selected human approval (optional note).", mutating=True),
    Command(
        "validate",
        "v",
        "validate",
        "Validate",
        "Run every gate on the selected proposal (patch.validate; records a patch.validated event).",
        mutating=True,
    ),
    Command(
        "run_tests",
        "T",
        "run_tests",
        "Run tests",
        "Run the selected proposal's tests (its expected tests, else test.suggest) as evidence for its revision.",
        mutating=True,
    ),
    Command(
        "apply",
        "A",
        "apply",
        "Apply",
        "Apply the selected proposal after confirming its revision and gates.",
        mutating=True,
    ),
    Command("reject", "r", "reject", "Reject", "Reject the selected proposal (reason required).", mutating=True),
    Command("rollback", "R", "rollback", "Roll back", "Roll back the selected transaction (confirm).", mutating=True),
    Command(
        "launch_session",
        "L",
        "launch_session",
        "Launch session",
        "Launch an agent session via the supervisor (confirm).",
        mutating=True,
    ),
    Command(
        "revoke_session",
        "K",
        "revoke_session",
        "Revoke session",
        "Revoke the selected session and stop it (confirm).",
        mutating=True,
    ),
    Command(
        "new_task", "n", "new_task", "New task", "Create a task (title, body, readable paths, priority).", mutating=True
    ),
    Command(
        "block_task",
        "b",
        "block_task",
        "Block task",
        "Mark the selected task blocked (a reason is asked).",
        mutating=True,
    ),
    Command("cancel_task", "c", "cancel_task", "Cancel task", "Cancel the selected task (confirm).", mutating=True),
    Command("new_run", "g", "new_run", "New run", "Start a run with a goal; the console then shows it.", mutating=True),
    Command("view_run", "u", "view_run", "Show run", "Show the run selected in the Runs pane (header, turn queue)."),
    Command("end_run", "e", "end_run", "End run", "End the selected active run (completed; confirm).", mutating=True),
    Command(
        "archive_run",
        "E",
        "archive_run",
        "Archive run",
        "Archive the selected ended run: hidden from the Runs pane and from resume, nothing deleted (confirm).",
        mutating=True,
    ),
    Command(
        "session_log",
        "l",
        "session_log",
        "Session log",
        "Show the redacted log of the selected session, or of the selected agent's latest session; "
        "it follows new lines (esc closes).",
    ),
    Command(
        "session_transcript",
        "w",
        "session_transcript",
        "Watch session",
        "Show what the selected session's agent says and does, in words, as it streams (messages, tool "
        "calls with their arguments and a short result, errors), and whether it needs you; m sends it a message.",
    ),
    Command("tick", "t", "tick", "Tick now", "Wake the Chair for a tick now.", mutating=True),
    Command("pause", "p", "pause", "Pause/resume Chair", "Pause or resume the Chair loop.", mutating=True),
    Command(
        "autopilot",
        "P",
        "autopilot",
        "Autopilot on/off",
        "Switch the autopilot: on, the owner launches the agents the Chair's decisions call for; off, "
        "nothing is launched without you. The header badge shows AUTO, MANUAL or STOPPED: reason.",
        mutating=True,
    ),
    Command("refresh", "ctrl+r", "refresh", "Refresh", "Reload every pane now."),
    Command(
        "attention",
        "exclamation_mark",
        "attention",
        "Needs you",
        "List what only you can move forward (approvals, applies needing attention, blocked tasks, failed "
        "sessions); enter goes to it. The header's ⚑ badge counts them.",
        footer=True,
    ),
    Command(
        "zoom",
        "z",
        "zoom",
        "Zoom pane",
        "Show the focused pane alone, full size (z again: every pane). Below 120x32 the console shows one pane at a time.",
    ),
    Command(
        "pane",
        "1-9, 0, i",
        "",
        "Go to pane",
        "Show pane N: 1 Runs, 2 Turns, 3 Proposals, 4 Sessions, 5 Approvals, "
        "6 Transactions, 7 Claims, 8 Events, 9 Tasks, 0 Agents, i Inspector.",
        bind=False,
        palette=False,
    ),
)

BY_ID = {c.id: c for c in COMMANDS}
BY_ACTION = {c.action: c for c in COMMANDS if c.action}
# The commands whose keys work over a dialog too (the app's bindings); every other key is the
# main screen's.
GLOBAL = frozenset({"help", "quit"})

# The keys each pane shows in the footer, in the order an operator uses them. A key that acts on
# a selection acts only on the focused pane's (or the proposal the Inspector shows); pressed
# elsewhere it says which pane it needs (`ConsoleBase.selected`).
PANE_COMMANDS: dict[str, tuple[str, ...]] = {
    "runs": ("view_run", "new_run", "end_run", "archive_run"),
    "turns": ("tick", "pause"),
    "tasks": ("new_task", "launch_session", "block_task", "cancel_task"),
    "proposals": ("review", "validate", "run_tests", "approve", "deny", "apply", "reject", "rollback"),
    "sessions": ("session_transcript", "session_log", "launch_session", "revoke_session"),
    "approvals": ("approve", "deny"),
    "transactions": ("rollback",),
    "claims": ("filter",),
    "events": ("filter",),
    "agents": ("session_transcript", "session_log", "launch_session"),
    "inspector": ("review", "validate", "run_tests", "approve", "deny", "apply", "reject"),
}


def read_only_refusal(command: Command) -> str:
    """What a read-only console says when a mutating command's key is pressed (every one alike)."""
    return (
        f"{command.title}: refused — this console is read-only and changes nothing "
        "(the project's owner console, `roundtable run`, can)."
    )


def bindings() -> list[Binding]:
    """The main screen's BINDINGS, one per bindable command, each with the command's id."""
    out = [Binding(c.key, c.action, c.title, show=c.footer, id=c.id, priority=False) for c in COMMANDS if c.bind]
    out += [
        Binding(layout.pane_key(n), f"show_pane({n})", f"Pane {n}", show=False) for n in range(1, len(layout.PANES) + 1)
    ]
    return out


def pane_bindings(pane_id: str) -> list[Binding | tuple[str, str] | tuple[str, str, str]]:
    """A pane's own bindings for its commands (shown in the footer while it has focus); they
    run the app's actions and carry the command ids, so `tui.bindings` remaps them too."""
    return [
        Binding(BY_ID[cid].key, f"app.{BY_ID[cid].action}", _short(BY_ID[cid].title), id=cid)
        for cid in PANE_COMMANDS.get(pane_id, ())
        if cid in BY_ID and BY_ID[cid].bind
    ]


def _short(title: str) -> str:
    """A footer label: the title without a trailing qualifier ("Pause/resume Chair" → "Pause")."""
    return {"Pause/resume Chair": "Pause", "Launch session": "Launch", "Revoke session": "Revoke"}.get(title, title)


def keymap(overrides: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """Config overrides (id, key) for known ids; unknown ids are ignored with no effect."""
    pairs = overrides.items() if isinstance(overrides, Mapping) else overrides
    return {bid: key for bid, key in pairs if bid in BY_ID and BY_ID[bid].bind}


def display_key(app: RoundtableApp, command: Command) -> str:
    key = app.keymap_for(command.id) or command.key
    return ", ".join(app.get_key_display(Binding(k.strip(), "")) for k in key.split(","))


class ConsoleCommands(Provider):
    """Offers the registry's commands in the command palette (ctrl+p)."""

    def _commands(self) -> list[Command]:
        return [c for c in COMMANDS if c.palette]

    def _label(self, command: Command) -> str:
        app = self.app
        key = display_key(app, command) if hasattr(app, "keymap_for") else command.key  # type: ignore[arg-type]
        return f"{command.title}  ({key})"

    async def discover(self) -> Hits:
        for command in self._commands():
            # Content, not a markup string: keys such as `/` must not be read as markup.
            label = Content(self._label(command))
            yield DiscoveryHit(label, partial(self.app.run_action, command.action), help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            label = self._label(command)
            score = matcher.match(f"{label} {command.help}")
            if score > 0:
                yield Hit(
                    score, matcher.highlight(label), partial(self.app.run_action, command.action), help=command.help
                )
