"""The Chair's writes: what each step of its tick and each ending of its loops changes.

The Chair (`roundtable.chair`) decides *what* to do from the stored state; these functions do it,
each inside the transaction it is given (the turn steps' on the writer's urgent lane). The Chair reaches them only through its internal operations
(`tools/chair_ops.py`, `Runtime.call` as the caller `chair`), so every write is validated,
labelled and recorded like any other call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from roundtable import clock
from roundtable.domain import RUN_ENDINGS, EventType, orchestrator_event
from roundtable.errors import RoundtableError
from roundtable.services.coordination import claims as claims_service
from roundtable.services.coordination import runs as runs_service
from roundtable.services.coordination import turns as turns_service
from roundtable.services.coordination.tasks import assign_task
from roundtable.store.db import Tx

SYSTEM_ACTOR = "system"  # claims the sweep expires are expired by time, not by the Chair
ENDINGS = RUN_ENDINGS


def error_text(exc: BaseException) -> str:
    """What the Chair records about a failure: our own errors' words, else only the type (an
    unexpected exception's text may hold anything)."""
    if isinstance(exc, RoundtableError):
        return str(exc)
    return f"internal error ({type(exc).__name__})"


async def record_error(tx: Tx, run_id: str, step: str, item: str, error: str, *, actor: str) -> bool:
    """Append `chair.error` for (step, item) unless the latest one for it already says the same
    (a broken item fails every tick: once in the log is enough). Returns whether it appended."""
    last = await tx.scalar(
        "SELECT payload_json FROM events WHERE run_id = ? AND type = ? AND"
        " json_extract(payload_json, '$.step') = ? AND json_extract(payload_json, '$.item') = ?"
        " ORDER BY id DESC LIMIT 1",
        (run_id, EventType.CHAIR_ERROR, step, item),
    )
    if last is not None and json.loads(last).get("error") == error:
        return False
    await tx.append_event(run_id, EventType.CHAIR_ERROR, {"step": step, "item": item, "error": error}, actor_id=actor)
    return True


@dataclass
class Assignments:
    """What one batch of assignments did: `assigned` (task, agent) pairs in order, `failures`
    (task, error), and the implementers' loads afterwards."""

    assigned: list[dict[str, str]] = field(default_factory=list)
    failures: list[dict[str, str]] = field(default_factory=list)
    load: dict[str, int] = field(default_factory=dict)


async def assign_tasks(
    tx: Tx, run_id: str, task_ids: list[str], agents: list[str], load: dict[str, int], *, actor: str
) -> Assignments:
    """Assign each task, in order, to the least loaded of `agents` (ties go to the earliest in
    `agents`, which makes equal loads round-robin). Each assignment runs under its own savepoint,
    so a failing one is undone alone and the batch goes on; a task no longer open and unassigned
    is skipped (`assign_task` re-checks it)."""
    out = Assignments(load={a: int(load.get(a, 0)) for a in agents})
    if not agents:
        return out
    rank = {a: i for i, a in enumerate(agents)}
    for task_id in task_ids:
        agent_id = min(agents, key=lambda a: (out.load[a], rank[a]))
        await tx.execute("SAVEPOINT chair_assign")
        try:
            done = await assign_task(tx, run_id, task_id, agent_id, actor)
        except Exception as exc:
            await tx.execute("ROLLBACK TO chair_assign")
            await tx.execute("RELEASE chair_assign")
            out.failures.append({"task_id": task_id, "error": error_text(exc)})
            continue
        await tx.execute("RELEASE chair_assign")
        if done:
            out.load[agent_id] += 1
            out.assigned.append({"task_id": task_id, "agent_id": agent_id})
    return out


# Whether a review of one revision was announced: the type is a literal so that SQLite uses the
# partial index `idx_events_review_requested` (a bound parameter would not match its WHERE).
ANNOUNCED_SQL = (
    f"SELECT 1 FROM events WHERE type = '{EventType.PROPOSAL_REVIEW_REQUESTED.value}'"
    " AND json_extract(payload_json, '$.proposal_id') = ? AND json_extract(payload_json, '$.revision') = ?"
    " LIMIT 1"
)


async def mark_in_review(
    tx: Tx, run_id: str, proposal_id: str, task_id: str, payload: dict[str, Any], *, actor: str
) -> bool:
    """A review was requested for the proposal's revision (`payload["revision"]`): a pending
    proposal becomes `in_review`, and `proposal.review_requested` is appended unless the proposal
    tool already announced this revision. Returns whether the event was appended."""
    announced = await tx.scalar(ANNOUNCED_SQL, (proposal_id, payload["revision"]))
    await tx.execute(
        "UPDATE proposals SET status = 'in_review', updated_at = ? WHERE id = ? AND status = 'pending'",
        (clock.now(), proposal_id),
    )
    tx.tables.add("proposals")
    if announced:
        return False
    await tx.append_event(run_id, EventType.PROPOSAL_REVIEW_REQUESTED, payload, actor_id=actor, task_id=task_id)
    return True


async def sweep_claims(tx: Tx, run_id: str, now: str) -> list[str]:
    """Expire every claim past its TTL at `now` (`claim.expired`, actor `system`); their ids."""
    swept = await claims_service.expire_due(tx, now, run_id=run_id, actor_id=SYSTEM_ACTOR)
    return [c.id for c in swept]


async def expire_turns(
    tx: Tx, run_id: str, now: str, *, start_timeout: float, turn_timeout: float
) -> list[dict[str, Any]]:
    """Expire the run's overdue turns (and those of agents no longer enabled). Its operation runs
    on the writer's urgent lane (`ToolSpec.urgent`): the hand-over after a turn must not queue
    behind ordinary writers."""
    rows = await tx.fetchall("SELECT id FROM agents WHERE is_enabled = 1")
    return await turns_service.expire_overdue(
        tx,
        run_id,
        now,
        start_timeout=start_timeout,
        turn_timeout=turn_timeout,
        enabled={str(row[0]) for row in rows},
    )


async def schedule_turn(tx: Tx, run_id: str) -> dict[str, Any] | None:
    """Schedule the run's oldest waiting turn unless one is in flight (urgent, like `expire_turns`)."""
    return await turns_service.schedule_next(tx, run_id)


async def end_run(
    tx: Tx,
    run_id: str,
    status: str,
    payload: dict[str, Any],
    *,
    actor: str,
    wind_down: Callable[[Tx], Awaitable[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """End the run with `status` (one of `ENDINGS`: `run.ended`) and record the loop's
    `orchestrator.<status>` event with `payload` (iterations, and the reason or the error), in
    `tx`; `wind_down` (what the end does to the run's open work) runs first in it, and what it
    returns goes into `run.ended` and back to the caller."""
    if status not in ENDINGS:
        raise ValueError(f"unknown run ending {status!r}")
    details = await wind_down(tx) if wind_down is not None else {}
    await runs_service.end(tx, run_id, status, details=details)
    await tx.append_event(run_id, orchestrator_event(status), payload, actor_id=actor)
    return details


async def note_retry(tx: Tx, run_id: str, payload: dict[str, Any], *, actor: str) -> None:
    """The finite loop will retry after a failed iteration (`orchestrator.retry`)."""
    await tx.append_event(run_id, EventType.ORCHESTRATOR_RETRY, payload, actor_id=actor)
