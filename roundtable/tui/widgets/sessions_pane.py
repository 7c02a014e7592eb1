"""Sessions: agent sessions the supervisor launched (or harnesses registered), live ones first.

Each row shows the session's status (with its exit code or signal once its process ended
with one), its binding (role, task, proposal) and how long its capability has left; `L` launches a session and `K` revokes the selected one. The token never reaches the
console: only the capability's lifetime and revocation are read.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from roundtable.services.views.models import Overview, SessionRow, exit_brief
from roundtable.store.records import AgentSession
from roundtable.tui import commands
from roundtable.tui.timefmt import human_delta, seconds_until, since
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell

# A live capability with less than this left is flagged (the supervisor extends it on heartbeat).
WARN_SECONDS = 60.0


class SessionsPane(TablePane):
    BINDINGS: ClassVar = commands.pane_bindings("sessions")
    CLOCKED = True
    kind = "session"
    TITLE = "Sessions"
    COLUMNS = ("agent", "status", "role", "capability", "seen", "task", "proposal", "adapter", "started", "session")
    ID_COLUMNS = ("task", "proposal", "session")
    OPTIONAL = ("session", "started", "adapter", "proposal", "seen", "role", "capability")

    def build_rows(self, overview: Overview) -> list[Row]:
        now = self.clock_ns()
        out: list[Row] = []
        for row in overview.sessions:
            s = row.session
            out.append(
                (
                    s.id,
                    (
                        s.agent_id,
                        session_status_cell(s),
                        row.role or "—",
                        capability_cell(row, now),
                        since(s.last_seen_at, now),
                        row.task_id or "—",
                        row.proposal_id or "—",
                        s.adapter,
                        since(s.started_at, now),
                        s.id,
                    ),
                )
            )
        return out


def session_status_cell(session: AgentSession) -> Text:
    """The session's status with how its process ended when that was not exit 0
    (`failed · exit 1`, `failed · SIGKILL`)."""
    cell = status_cell(session.status)
    brief = exit_brief(session)
    return cell + Text(f" · {brief}", style="red") if brief else cell


def capability_cell(row: SessionRow, now_ns: int) -> Text:
    """`revoked`, `expired`, `—` (none) or the time left, flagged when it is nearly out."""
    if row.capability_revoked_at:
        return Text("revoked", style="magenta")
    if not row.capability_expires_at:
        return Text("—", style="dim")
    left = seconds_until(row.capability_expires_at, now_ns)
    if left is None:
        return Text("?", style="dim")
    if left <= 0:
        return Text("expired", style="red")
    style = "bold red" if left <= WARN_SECONDS else ""
    return Text(human_delta(left), style=style)
