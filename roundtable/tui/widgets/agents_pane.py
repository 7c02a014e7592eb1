"""Agents: who is doing what — each registered agent with its role, its current (else latest)
session's state (with its exit code or signal when it ended with one), the task it works on (its title, and the diffstat of the live work in its workspace), its place in the turn queue, how many of its sessions
failed (✗), what its sessions spent (tokens · USD) and the last thing it recorded, with how long ago. `l` opens the agent's latest session log, `L`
launches it (prefilled with its task)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from roundtable.domain import SessionStatus
from roundtable.services.views.models import AgentRow, Overview
from roundtable.tui import commands
from roundtable.tui.timefmt import human_delta, stamp_ns
from roundtable.tui.widgets.sessions_pane import session_status_cell
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell

IDLE_STYLES = {"idle": "dim", "disabled": "dim strike"}


class AgentsPane(TablePane):
    BINDINGS: ClassVar = commands.pane_bindings("agents")
    kind = "agent"
    TITLE = "Agents"
    COLUMNS = ("agent", "role", "session", "task", "turn", "✗", "spend", "doing now")
    # Ids and states stay whole; the role and the last action's event type give way.
    ELASTIC: ClassVar[dict[str, int]] = {"role": 11, "task": 14, "doing now": 22}
    OPTIONAL = ("turn", "spend", "role")  # what it is doing now stays
    CLOCKED = True  # "12s ago" ages every second

    def build_rows(self, overview: Overview) -> list[Row]:
        now = self.clock_ns()
        return [(a.agent_id, self.cells(a, now)) for a in overview.agents]

    @staticmethod
    def cells(agent: AgentRow, now_ns: int) -> tuple[Text | str, ...]:
        state = agent.session_state
        if agent.session is not None:
            session = session_status_cell(agent.session.session)
            if not agent.session.live and state != SessionStatus.FAILED:
                session.stylize("dim")
        else:
            session = Text(state, style=IDLE_STYLES[state]) if state in IDLE_STYLES else status_cell(state)
        return (
            agent.agent_id,
            agent.role or "—",
            session,
            task_cell(agent),
            status_cell(agent.turn) if agent.turn else Text("—", style="dim"),
            Text(str(agent.failures), style="bold red") if agent.failures else Text("0", style="dim"),
            agent.spend or Text("—", style="dim"),
            last_action_cell(agent, now_ns),
        )


def task_cell(agent: AgentRow) -> Text | str:
    """The task's title, with the live work in the agent's workspace after it (`· 2 files +10 -3`)."""
    task = agent.task_title or agent.task_id or "—"
    if not agent.work:
        return task
    return Text(task) + Text(f" · {agent.work}", style="dim")


def last_action_cell(agent: AgentRow, now_ns: int) -> Text:
    """`  42s claim.granted` (how long ago first, so a narrow pane cuts the event type, never
    the time), or a dim dash when the agent recorded nothing recently."""
    if agent.activity is None:
        return Text(f"{'—':>5}", style="dim")
    at = stamp_ns(agent.activity.at)
    when = human_delta(max(now_ns - at, 0) / 1e9) if at else "?"
    return Text(f"{when:>5} ", style="dim") + Text(agent.activity.doing())
