"""The resume briefing: a short Markdown note telling a returning agent where it stands (§8.2).

Built from current rows only (task, active claims, open proposals, latest decisions) and a fixed
next-action heuristic. It never includes task bodies, votes, patches, logs or memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from roundtable.store.db import Reader, Tx
from roundtable.store.records import AgentSession, Claim, Decision, Proposal, Task


@dataclass(frozen=True)
class Briefing:
    agent_id: str
    run_id: str
    external_session_id: str
    task: Task | None
    claims: list[Claim]
    proposals: list[Proposal]
    decisions: list[Decision]

    @property
    def next_action(self) -> str:
        if self.proposals:
            first = min(self.proposals, key=lambda p: p.id)
            return (
                f"Review proposal {first.id}: address any blocking feedback before resubmitting "
                "or asking for it to be applied."
            )
        if self.task is not None:
            return f"Resume task {self.task.id} ({self.task.title})."
        if self.claims:
            first_claim = min(self.claims, key=lambda c: c.id)
            return f"Reconcile claim {first_claim.id} with the table: still needed, or release it."
        return "Query the table and memory, then wait for an assignment or claim work."

    def markdown(self) -> str:
        lines = ["# Roundtable Resume Briefing", "", f"You are resuming as {self.agent_id}.", ""]
        lines.append(f"Run: {self.run_id}")
        if self.external_session_id:
            lines.append(f"External session: {self.external_session_id}")
        lines += ["", "Current task:"]
        lines.append(f"{self.task.id} {self.task.title}" if self.task else "(no assigned task)")
        lines += ["", "Your active claims:"]
        lines += [f"- {c.resource_id}" for c in self.claims] or ["- none"]
        lines += ["", "Pending proposals:"]
        lines += [f"- {p.id} from you: {p.status}" for p in self.proposals] or ["- none"]
        lines += ["", "Latest decisions:"]
        lines += [f"- {d.id}: {d.rationale_md}" for d in self.decisions] or ["- none"]
        lines += ["", "Required next action:", self.next_action]
        return "\n".join(lines) + "\n"


async def build(reader: Reader | Tx, session: AgentSession) -> Briefing:
    agent = session.agent_id
    claims = await reader.all(
        Claim, "SELECT * FROM claims WHERE agent_id = ? AND status = 'active' ORDER BY resource_id, id", (agent,)
    )
    task = await reader.one(
        Task,
        """SELECT * FROM tasks WHERE assigned_agent_id = ?
           ORDER BY (status = 'in_progress') DESC, priority, created_at, id LIMIT 1""",
        (agent,),
    )
    if task is None:
        for claim in claims:
            task = await reader.one(Task, "SELECT * FROM tasks WHERE id = ?", (claim.task_id,))
            if task is not None:
                break
    proposals = await reader.all(
        Proposal,
        """SELECT * FROM proposals WHERE agent_id = ? AND status NOT IN ('accepted', 'rejected')
           ORDER BY created_at DESC, id DESC""",
        (agent,),
    )
    decisions = await reader.all(Decision, "SELECT * FROM decisions ORDER BY created_at DESC, id DESC LIMIT 3")
    return Briefing(
        agent_id=agent,
        run_id=session.run_id,
        external_session_id=session.external_session_id,
        task=task,
        claims=claims,
        proposals=proposals,
        decisions=decisions,
    )
