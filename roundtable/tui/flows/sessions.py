"""Agent sessions: `L` launches one through the supervisor (a form, then a confirmation), `K`
revokes the selected one, `l` opens the redacted log of the selected session (Sessions pane) or
of the selected agent's latest session (Agents pane), `w` its live transcript in words, where
`m` sends the session a message (resuming it once it has ended).

Sessions are started and revoked by the supervisor (not a tool): it writes its own audit events
(`session.launched`, `capability.revoked`), and the change bus refreshes the panes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual import work

from roundtable import domain
from roundtable.domain import TERMINAL_TASK_STATUSES
from roundtable.services.coordination.agents import configured_agents
from roundtable.services.sessions.adapters import registry
from roundtable.services.sessions.capabilities import role_for_agent
from roundtable.services.sessions.records import LaunchArgs
from roundtable.services.views import entity as views
from roundtable.services.views.models import AgentRow, SessionRow
from roundtable.store.records import AgentSession
from roundtable.supervisor import NOT_RUNNING, Supervisor, supervisor_for
from roundtable.tui.flows.flow import Flow
from roundtable.tui.messages import RefreshRequested
from roundtable.tui.screens.launch import LaunchChoices, LaunchRequest, LaunchScreen, launch_dialog, revoke_dialog
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.screens.session_log import SessionLogScreen
from roundtable.tui.screens.transcript import TranscriptScreen
from roundtable.tui.widgets.agents_pane import AgentsPane
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from roundtable.tui.widgets.sessions_pane import SessionsPane


def _revocable(row: SessionRow) -> str:
    if not row.live and (row.capability_revoked_at or not row.capability_expires_at):
        return f"{row.session.id} has ended and holds no live capability."
    return ""


class SessionFlow(Flow):
    def _selected_session(self) -> SessionRow | None:
        rows = self.console.overview.sessions if self.console.overview else []
        return self.console.selected(SessionsPane, rows, lambda r: r.session.id)

    def _selected_agent(self) -> AgentRow | None:
        rows = self.console.overview.agents if self.console.overview else []
        return self.console.selected(AgentsPane, rows, lambda r: r.agent_id)

    def _supervisor(self) -> Supervisor | None:
        supervisor = supervisor_for(self.console.runtime)
        if supervisor is None:
            self.notify(
                f"{NOT_RUNNING}: start the console with `roundtable run` (or use `roundtable start`).",
                severity="warning",
                title="sessions",
                timeout=8,
            )
        return supervisor

    # --- launch -----------------------------------------------------------------------------

    def _launch_initial(self) -> LaunchRequest:
        """Prefill from what the operator is looking at: a session (launch it again), an agent
        (its task) or a proposal."""
        focused = self.console.focused
        if isinstance(focused, SessionsPane):
            row = self._selected_session()
            if row is not None:
                return LaunchRequest(row.session.agent_id, row.task_id, row.proposal_id, row.session.adapter)
        if isinstance(focused, AgentsPane):
            agent = self._selected_agent()
            if agent is not None:
                return LaunchRequest(agent.agent_id, agent.task_id)
        if isinstance(focused, ProposalsPane):
            key = focused.selected_key()
            rows = self.console.overview.proposals if self.console.overview else []
            proposal = next((r.proposal for r in rows if r.proposal.id == key), None)
            if proposal is not None:
                return LaunchRequest("", proposal.task_id, proposal.id)
        return LaunchRequest("", "")

    def _launch_choices(self) -> LaunchChoices:
        """The Launch form's pickers: launchable configured agents, open tasks and proposals,
        and every adapter (configured ones plus the built-in scripted one)."""
        config = self.console.runtime.config
        agents = tuple((a.id, a.role, a.adapter) for a in configured_agents(config) if role_for_agent(a.id) is not None)
        overview = self.console.overview
        # Blocked tasks too: relaunching an agent on one is how the operator retries it.
        tasks = tuple(
            (t.id, t.title) for t in (overview.tasks if overview else []) if t.status not in TERMINAL_TASK_STATUSES
        )
        proposals = tuple(
            (row.proposal.id, row.proposal.title)
            for row in (overview.proposals if overview else [])
            if domain.is_open(row.proposal.status)
        )
        return LaunchChoices(agents=agents, tasks=tasks, proposals=proposals, adapters=tuple(registry(config)))

    def action_launch_session(self) -> None:
        if self._supervisor() is not None:
            self._launch_flow(self._launch_initial())

    @work(group="dialog", exit_on_error=False)
    async def _launch_flow(self, initial: LaunchRequest) -> None:
        request = await self.console.push_screen_wait(LaunchScreen(initial, choices=self._launch_choices()))
        confirmed = request is not None and await self.console.push_screen_wait(
            launch_dialog(request, self.console.run_id)
        )
        self.console.dialog_closed()
        if request is None or not confirmed:
            self.notify("Launch cancelled.")
            return
        supervisor = self._supervisor()
        if supervisor is None:
            return
        ok, result = await self.console.attempt(
            supervisor.launch(
                LaunchArgs(
                    agent_id=request.agent_id,
                    task_id=request.task_id,
                    proposal_id=request.proposal_id,
                    run_id=self.console.run_id,
                    adapter=request.adapter,
                )
            ),
            title="session.launch",
        )
        if not ok:
            return
        session = result.get("session", {})
        self.notify(
            f"{session.get('id', '?')} launched: {request.agent_id} via {request.adapter} (pid {result.get('pid')})",
            title="session.launch",
        )
        self.post_message(RefreshRequested())
        if session.get("id"):
            self.console.reveal("sessions", str(session["id"]))

    # --- revoke -----------------------------------------------------------------------------

    def action_revoke_session(self) -> None:
        row = self.console.target(self._selected_session(), what="a session", pane="Sessions", refuse=_revocable)
        if row is not None and self._supervisor() is not None:
            self._revoke_flow(row)

    @work(group="dialog", exit_on_error=False)
    async def _revoke_flow(self, row: SessionRow) -> None:
        confirmed = await self.console.push_screen_wait(
            revoke_dialog(row.session, row.role, row.task_id, row.proposal_id)
        )
        self.console.dialog_closed()
        if not confirmed:
            self.notify("Revoke cancelled.")
            return
        supervisor = self._supervisor()
        if supervisor is None:
            return
        ok, result = await self.console.attempt(supervisor.revoke(row.session.id, "operator"), title="session.revoke")
        if not ok:
            return
        if result.get("revoked"):
            stopping = "; stopping its process" if result.get("running") else ""
            self.notify(f"{row.session.id} revoked{stopping}", title="session.revoke")
        else:
            self.notify(
                f"{row.session.id} had no live capability to revoke.", severity="warning", title="session.revoke"
            )
        self.post_message(RefreshRequested())

    # --- the log viewer ---------------------------------------------------------------------

    def action_session_log(self) -> None:
        """`l`: the selected session's log, or the selected agent's latest session's log."""
        row = self._session_to_show("log")
        if row is None:
            return
        self.console.push_screen(
            SessionLogScreen(self.console.runtime.root, row.session, self._session_loader(row.session.id)),
            lambda _result: self.console.dialog_closed(),
        )

    def action_session_transcript(self) -> None:
        """`w`: the live transcript of the selected session, or of the selected agent's latest."""
        row = self._session_to_show("transcript")
        if row is None:
            return
        send = None if self.console.read_only else self._send_message
        screen = TranscriptScreen(self.console.runtime.root, row.session, self._session_loader(row.session.id), send)
        self.console.push_screen(screen, lambda _result: self.console.dialog_closed())

    def _send_message(self, session: AgentSession) -> None:
        self._message_flow(session)

    @work(group="dialog", exit_on_error=False)
    async def _message_flow(self, session: AgentSession) -> None:
        """`m` in the transcript: a message to the session, as the operator (`supervisor.send`)."""
        text = await self.console.push_screen_wait(
            PromptScreen(
                f"Message {session.id}",
                "What to tell its agent (a running Claude Code session reads it now, a running Codex one when its"
                " turn ends; an ended one is resumed):",
                required=True,
            )
        )
        if not text:
            self.notify("Message cancelled.")
            return
        supervisor = self._supervisor()
        if supervisor is None:
            return
        ok, result = await self.console.attempt(supervisor.send(session.id, text, "operator"), title="session.send")
        if not ok:
            return
        self.notify(f"{result.get('note') or session.id}.", title="session.send")
        self.post_message(RefreshRequested())

    def _session_loader(self, session_id: str) -> Callable[[], Awaitable[AgentSession | None]]:
        async def reload() -> AgentSession | None:
            async with self.console.runtime.db.read() as reader:
                return await views.session(reader, session_id)

        return reload

    def _session_to_show(self, what: str) -> SessionRow | None:
        """The selected session (Sessions pane), or the selected agent's latest (Agents pane)."""
        if isinstance(self.console.focused, AgentsPane):
            agent = self.console.target(self._selected_agent(), what="an agent", pane="Agents")
            if agent is None:
                return None
            if agent.session is None:
                self.notify(f"{agent.agent_id} has no session yet: no {what} to show.", severity="warning")
                return None
            return agent.session
        return self.console.target(self._selected_session(), what="a session (or an agent)", pane="Sessions")
