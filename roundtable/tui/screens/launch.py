"""Launch: the form behind `L` — which agent, on which task (and proposal), through which adapter.

Nothing starts here: the form returns a `LaunchRequest` (or `None` when cancelled), and the app
then asks for confirmation with `launch_dialog`, which says what will run.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from roundtable.services.capabilities import role_for_agent
from roundtable.store.records import AgentSession
from roundtable.tui.screens.confirm import ConfirmScreen

DEFAULT_ADAPTER = "scripted"


@dataclass(frozen=True)
class LaunchRequest:
    agent_id: str
    task_id: str
    proposal_id: str = ""
    adapter: str = DEFAULT_ADAPTER


FIELDS: tuple[tuple[str, str, str], ...] = (
    ("agent_id", "Agent id", "implementer-1, reviewer-1, tester-1, security-1"),
    ("task_id", "Task id", "T-…"),
    ("proposal_id", "Proposal id (reviewers, testers, security)", "empty for an implementer"),
    ("adapter", "Adapter", DEFAULT_ADAPTER),
)
REQUIRED = ("agent_id", "task_id")


class LaunchScreen(ModalScreen[LaunchRequest | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, initial: LaunchRequest | None = None, *, run_note: str = "") -> None:
        super().__init__()
        self.initial = initial or LaunchRequest("", "")
        self.run_note = run_note

    def compose(self) -> ComposeResult:
        with Vertical(id="launch-box") as box:
            box.border_title = "Launch an agent session"
            box.border_subtitle = "enter next field · esc cancel"
            if self.run_note:
                yield Static(self.run_note, id="launch-note")
            for name, label, placeholder in FIELDS:
                yield Label(label)
                yield Input(value=getattr(self.initial, name), placeholder=placeholder, id=f"launch-{name}")
            yield Static("", id="launch-error")
            with Horizontal(id="launch-buttons"):
                yield Button("Continue", variant="warning", id="launch-yes")
                yield Button("Cancel", variant="primary", id="launch-no")

    def on_mount(self) -> None:
        first_empty = next((n for n, _l, _p in FIELDS if not getattr(self.initial, n)), FIELDS[0][0])
        self.query_one(f"#launch-{first_empty}", Input).focus()

    def values(self) -> dict[str, str]:
        return {name: self.query_one(f"#launch-{name}", Input).value.strip() for name, _l, _p in FIELDS}

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        names = [n for n, _l, _p in FIELDS]
        current = (event.input.id or "").removeprefix("launch-")
        if current in names and names.index(current) < len(names) - 1:
            self.query_one(f"#launch-{names[names.index(current) + 1]}", Input).focus()
            return
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "launch-yes":
            self._submit()
        else:
            self.dismiss(None)

    def _submit(self) -> None:
        values = self.values()
        missing = [label for name, label, _p in FIELDS if name in REQUIRED and not values[name]]
        if missing:
            self.query_one("#launch-error", Static).update(f"[red]required: {', '.join(missing)}[/]")
            return
        self.dismiss(
            LaunchRequest(
                agent_id=values["agent_id"],
                task_id=values["task_id"],
                proposal_id=values["proposal_id"],
                adapter=values["adapter"] or DEFAULT_ADAPTER,
            )
        )

    def action_cancel(self) -> None:
        self.dismiss(None)


def launch_dialog(request: LaunchRequest, run_id: str) -> ConfirmScreen:
    """The launch confirmation: who starts, bound to what, with which adapter, in which run."""
    role = role_for_agent(request.agent_id) or "(not a launchable agent)"
    body = Group(
        Text.assemble(("Agent ", "dim"), (request.agent_id, "bold"), ("  role ", "dim"), role),
        Text.assemble(("Task ", "dim"), request.task_id),
        Text.assemble(("Proposal ", "dim"), request.proposal_id or "—"),
        Text.assemble(("Adapter ", "dim"), (request.adapter, "bold")),
        Text.assemble(("Run ", "dim"), run_id or "the latest active run"),
        Text(""),
        Text(
            "The supervisor starts the adapter as a subprocess with a private home and a short-lived "
            "capability limited to this role and binding; K revokes it.",
            style="dim",
        ),
    )
    return ConfirmScreen(f"Launch {request.agent_id}?", body, confirm_label="Launch")


def revoke_dialog(session: AgentSession, role: str, task_id: str, proposal_id: str) -> ConfirmScreen:
    body = Group(
        Text.assemble(("Session ", "dim"), (session.id, "bold"), (f"  [{session.status}]", "yellow")),
        Text.assemble(("Agent ", "dim"), session.agent_id, ("  role ", "dim"), role or "—"),
        Text.assemble(("Task ", "dim"), task_id or "—", ("  proposal ", "dim"), proposal_id or "—"),
        Text.assemble(("Adapter ", "dim"), session.adapter, ("  started ", "dim"), session.started_at),
        Text(""),
        Text(
            "Revoking refuses the session's very next call; its process is stopped after a short grace.",
            style="dim",
        ),
    )
    return ConfirmScreen(f"Revoke {session.id}?", body, confirm_label="Revoke")
