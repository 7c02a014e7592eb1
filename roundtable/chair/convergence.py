"""Convergence: what a run's state asks its status to be, and the one
ending both Chair loops give a converged run.

The finite loop (`roundtable run --headless`, `chair.finite`) and the continuous one
(`ChairLoop` with `converge_run_id`, the interactive `roundtable run`) both ask `settle` after
their work: it ends a run that converged (`completed` or `blocked`) with its `orchestrator.*`
event, through the Chair's `chair.end_run` operation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundtable.chair.tick import chair_call
from roundtable.domain import BLOCKED_TASK_STATUSES, OPEN_PROPOSAL_STATUSES, TERMINAL_TASK_STATUSES, RunStatus
from roundtable.services.coordination import turns as turns_service

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

CONVERGED = (RunStatus.COMPLETED, RunStatus.BLOCKED)


async def converge(runtime: Runtime, run_id: str) -> tuple[str, str]:
    """The run status convergence asks for, and why, from the run's own
    tasks and proposals and those of no run — another run's work never holds this one open."""
    async with runtime.db.read() as r:
        if await turns_service.has_outstanding(r, run_id):
            return "active", "pending_agent_turn"
        # The run's own work, and work that belongs to no run (tasks carry their run: run_scope).
        task_statuses = [
            str(row[0]) for row in await r.fetchall("SELECT status FROM tasks WHERE run_id IN (?, '')", (run_id,))
        ]
        proposal_statuses = [
            str(row[0]) for row in await r.fetchall("SELECT status FROM proposals WHERE run_id IN (?, '')", (run_id,))
        ]
    if not task_statuses and not proposal_statuses:
        return "active", "awaiting_initial_work"
    active = any(s not in BLOCKED_TASK_STATUSES and s not in TERMINAL_TASK_STATUSES for s in task_statuses) or any(
        s in OPEN_PROPOSAL_STATUSES for s in proposal_statuses
    )
    blocked = any(s in BLOCKED_TASK_STATUSES for s in task_statuses)
    if not active and not blocked:
        return "completed", "all_tasks_and_proposals_terminal"
    if not active:
        return "blocked", "all_remaining_tasks_blocked"
    return "active", "work_remains"


async def end_converged(runtime: Runtime, run_id: str, status: str, reason: str, iterations: int) -> None:
    """End a run whose work converged (`completed` or `blocked`) with its `orchestrator.<status>`
    event."""
    await chair_call(
        runtime, "chair.end_run", {"run_id": run_id, "status": status, "reason": reason, "iterations": iterations}
    )


async def settle(runtime: Runtime, run_id: str, iterations: int) -> tuple[str, str, bool]:
    """Converge the run and, when it converged, end it: (status, reason, ended)."""
    status, reason = await converge(runtime, run_id)
    if status not in CONVERGED:
        return status, reason, False
    await end_converged(runtime, run_id, status, reason, iterations)
    return status, reason, True
