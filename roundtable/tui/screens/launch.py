"""Launch: the form behind `L` — which agent, on which task (and proposal), through which adapter.

Nothing starts here: the form returns a `LaunchRequest` (or `None` when cancelled), and the app
then asks for confirmation with `launch_dialog`, which says what will run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Select, Static
from textual.widgets.select import NoSelection

from roundtable.services.sessions.capabilities import role_for_agent
from roundtable.store.records import AgentSession
from roundtable.tui.screens.confirm import ConfirmScreen

DEFAULT_ADAPTER = "scripted"


@dataclass(frozen=True)
class LaunchRequest:
    agent_id: str
    task_id: str
    proposal_id: str = ""
    adapter: str = ""  # empty: the agent's configured adapter


@dataclass(frozen=True)
class LaunchChoices:
    """What the pickers offer: launchable agents (id, role, configured adapter), open tasks and
    proposals (id, title), and every adapter by name (configured ones plus `scripted`)."""

    agents: tuple[tuple[str, str, str], ...] = ()
    tasks: tuple[tuple[str, str], ...] = ()
    proposals: tuple[tuple[str, str], ...] = ()
    adapters: tuple[str, ...] = (DEFAULT_ADAPTER,)

    def adapter_of(self, agent_id: str) -> str:
        return next((adapter for aid, _role, adapter in self.agents if aid == agent_id), "")


FIELDS: tuple[tuple[str, str], ...] = (
    ("agent_id", "Agent"),
    ("task_id", "Task"),
    ("proposal_id", "Proposal (reviewers, testers, security)"),
    ("adapter", "Adapter (default: the agent's configured one)"),
)
REQUIRED = ("agent_id", "task_id")


def _options(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(label, value) pairs for a Select, ids first so they are never cut."""
    return [(f"{value}  {label}"[:70], value) for value, label in pairs]


class LaunchScreen(ModalScreen[LaunchRequest | None]):
    """Pickers, not typed ids: agents and adapters from the config, tasks and proposals that are
    open. Only the agent and the task are required."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self, initial: LaunchRequest | None = None, *, choices: LaunchChoices | None = None, run_note: str = ""
    ) -> None:
        super().__init__()
        self.initial = initial or LaunchRequest("", "")
        self.choices = choices or LaunchChoices()
        self.run_note = run_note
        # The adapter last filled in from the chosen agent's config; a different value is the
        # operator's own choice and is kept when the agent changes.
        self._auto_adapter = "" if self.initial.adapter else self.choices.adapter_of(self.initial.agent_id)

    def _select(self, name: str, options: list[tuple[str, str]], value: str) -> Select[str]:
        known = {v for _label, v in options}
        if value and value not in known:
            options = [*options, (value, value)]  # keep a prefilled value the pickers do not list
        initial: str | NoSelection = value if value else Select.NULL
        return Select(options, value=initial, allow_blank=True, id=f"launch-{name}", prompt="—")

    def compose(self) -> ComposeResult:
        c = self.choices
        initial = self.initial
        adapter = initial.adapter or c.adapter_of(initial.agent_id)
        pickers = {
            "agent_id": self._select(
                "agent_id", _options((aid, f"{role} · {ad}") for aid, role, ad in c.agents), initial.agent_id
            ),
            "task_id": self._select("task_id", _options(c.tasks), initial.task_id),
            "proposal_id": self._select("proposal_id", _options(c.proposals), initial.proposal_id),
            "adapter": self._select("adapter", [(a, a) for a in c.adapters], adapter),
        }
        with Vertical(id="launch-box") as box:
            box.border_title = "Launch an agent session"
            box.border_subtitle = "tab next field · esc cancel"
            if self.run_note:
                yield Static(self.run_note, id="launch-note")
            for name, label in FIELDS:
                yield Label(label)
                yield pickers[name]
            yield Static("", id="launch-error")
            with Horizontal(id="launch-buttons"):
                yield Button("Continue", variant="warning", id="launch-yes")
                yield Button("Cancel", variant="primary", id="launch-no")

    def on_mount(self) -> None:
        self._focus_first_missing() or self.query_one("#launch-yes", Button).focus()

    def _focus_first_missing(self) -> bool:
        values = self.values()
        for name in REQUIRED:
            if not values[name]:
                self.query_one(f"#launch-{name}", Select).focus()
                return True
        return False

    def values(self) -> dict[str, str]:
        out = {}
        for name, _label in FIELDS:
            value = self.query_one(f"#launch-{name}", Select).value
            out[name] = value if isinstance(value, str) else ""
        return out

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "launch-agent_id":
            return
        current = self.values()["adapter"]
        if current and current != self._auto_adapter:
            return  # the operator chose an adapter: keep it
        adapter = self.choices.adapter_of(self.values()["agent_id"])
        if adapter:  # follow the chosen agent's configured adapter
            self._auto_adapter = adapter
            self.query_one("#launch-adapter", Select).value = adapter

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "launch-yes":
            self._submit()
        else:
            self.dismiss(None)

    def _submit(self) -> None:
        values = self.values()
        missing = [label for name, label in FIELDS if name in REQUIRED and not values[name]]
        if missing:
            self.query_one("#launch-error", Static).update(f"[red]required: {', '.join(missing)}[/]")
            self._focus_first_missing()  # the cursor goes where the answer is missing
            return
        self.dismiss(
            LaunchRequest(
                agent_id=values["agent_id"],
                task_id=values["task_id"],
                proposal_id=values["proposal_id"],
                adapter=values["adapter"] or self.choices.adapter_of(values["agent_id"]) or DEFAULT_ADAPTER,
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
