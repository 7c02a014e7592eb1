"""The Chair's writes: what each step of its tick and each ending of its loops changes.

The Chair (`roundtable.chair`) decides *what* to do from the stored state; these functions do it,
each inside the transaction it is given (the turn steps' on the writer's urgent lane). The Chair reaches them only through its internal operations
(`tools/chair_ops.py`, `Runtime.call` as the caller `chair`), so every write is validated,
labelled and recorded like any other call. Those operations' arguments are declared here and
received whole.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from roundtable import clock
from roundtable.config import ChairConfig
from roundtable.domain import RUN_ENDINGS, EventType, RunStatus, orchestrator_event
from roundtable.errors import RoundtableError
from roundtable.services.args import Args, Count, Id, Text, Texts
from roundtable.services.coordination import claims as claims_service
from roundtable.services.coordination import runs as runs_service
from roundtable.services.coordination import turns as turns_service
from roundtable.services.coordination.tasks import assign_task
from roundtable.store.db import Reader, Tx

SYSTEM_ACTOR = "system"  # claims the sweep expires are expired by time, not by the Chair
ENDINGS = RUN_ENDINGS

_RUN = "The run the Chair is ticking (its events go there)."
_NOW = "Evaluate time-based expiry at this instant (RFC 3339 UTC; default now)."

if TYPE_CHECKING:
    Ending = str
else:
    Ending = Literal[ENDINGS]


class RunArgs(Args):
    # `chair.schedule_turn`, and the run every other operation here names.
    run_id: Id = Field(description=_RUN)


class TimedArgs(RunArgs):
    # `chair.sweep_claims`, `chair.expire_turns`.
    now: Text = Field(default="", description=_NOW)


class RecordErrorArgs(RunArgs):
    # `chair.record_error`.
    step: Text = Field(description="The tick step.")
    item: Text = Field(default="", description="The task or proposal that failed ('' for the step itself).")
    error: Text = Field(description="What went wrong.")


class AssignTasksArgs(RunArgs):
    # `chair.assign_tasks`.
    task_ids: Texts = Field(description="The tasks, in assignment order.")
    agents: Texts = Field(description="The enabled implementers, in pool order (ties go to the earliest).")
    load: dict[str, Count] = Field(default={}, description="Open tasks per agent.")


class MarkInReviewArgs(RunArgs):
    # `chair.mark_in_review`.
    proposal_id: Id = Field(description="The proposal.")
    task_id: Id = Field(default="", description="Its task.")
    revision: Id = Field(description="The revision reviewed (its sha256, or r<number> before any patch).")
    roles: Texts = Field(default=[], description="The roles the policy asks to review.")
    reviewers: Texts = Field(default=[], description="The reviewers asked (agent ids).")


class EndRunArgs(RunArgs):
    # `chair.end_run`.
    status: Ending = Field(description="How the run ended.")
    iterations: Count
    reason: Text = Field(default="", description="Why it converged.")
    error: Text = Field(default="", description="Why it failed.")


class NoteRetryArgs(RunArgs):
    # `chair.note_retry`.
    iteration: Count
    attempt: Count
    max_attempts: Count
    error: Text = Field(description="What failed.")
    next_retry_delay: Text = Field(description="The delay before the retry, e.g. 250ms.")


def error_text(exc: BaseException) -> str:
    """What the Chair records about a failure: our own errors' words, else only the type (an
    unexpected exception's text may hold anything)."""
    if isinstance(exc, RoundtableError):
        return str(exc)
    return f"internal error ({type(exc).__name__})"


async def record_error(tx: Tx, args: RecordErrorArgs, *, actor: str) -> bool:
    """Append `chair.error` for (step, item) unless the latest one for it already says the same
    (a broken item fails every tick: once in the log is enough). Returns whether it appended."""
    run_id, step, item, error = args.run_id, args.step, args.item, args.error
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


async def assign_tasks(tx: Tx, args: AssignTasksArgs, *, actor: str) -> Assignments:
    """Assign each task, in order, to the least loaded of `agents` (ties go to the earliest in
    `agents`, which makes equal loads round-robin). Each assignment runs under its own savepoint,
    so a failing one is undone alone and the batch goes on; a task no longer open and unassigned
    is skipped (`assign_task` re-checks it)."""
    run_id, task_ids, agents, load = args.run_id, args.task_ids, args.agents, args.load
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


async def mark_in_review(tx: Tx, args: MarkInReviewArgs, *, actor: str) -> tuple[dict[str, Any], bool]:
    """A review was requested for the proposal's revision: a pending proposal becomes
    `in_review`, and `proposal.review_requested` is appended unless the proposal tool already
    announced this revision. Returns the request (the event's payload) and whether the event
    was appended."""
    run_id, proposal_id, task_id = args.run_id, args.proposal_id, args.task_id
    payload = {
        "proposal_id": proposal_id,
        "reviewers": list(args.reviewers),
        "roles": list(args.roles),
        "revision": args.revision,
    }
    announced = await tx.scalar(ANNOUNCED_SQL, (proposal_id, args.revision))
    await tx.execute(
        "UPDATE proposals SET status = 'in_review', updated_at = ? WHERE id = ? AND status = 'pending'",
        (clock.now(), proposal_id),
    )
    tx.tables.add("proposals")
    if announced:
        return payload, False
    await tx.append_event(run_id, EventType.PROPOSAL_REVIEW_REQUESTED, payload, actor_id=actor, task_id=task_id)
    return payload, True


async def sweep_claims(tx: Tx, args: TimedArgs) -> list[str]:
    """Expire every claim past its TTL at `args.now` (default now: `claim.expired`, actor
    `system`); their ids."""
    now = args.now or clock.now()
    swept = await claims_service.expire_due(tx, now, run_id=args.run_id, actor_id=SYSTEM_ACTOR)
    return [c.id for c in swept]


async def expire_turns(tx: Tx, args: TimedArgs, timings: ChairConfig) -> list[dict[str, Any]]:
    """Expire the run's overdue turns at `args.now` (default now) by the `timings` (and those of
    agents no longer enabled). Its operation runs on the writer's urgent lane (`ToolSpec.urgent`):
    the hand-over after a turn must not queue behind ordinary writers."""
    return await turns_service.expire_overdue(
        tx,
        args.run_id,
        args.now or clock.now(),
        start_timeout=timings.turn_start_timeout,
        turn_timeout=timings.turn_timeout,
        enabled=await _enabled_agents(tx),
    )


async def _enabled_agents(q: Reader | Tx) -> set[str]:
    return {str(row[0]) for row in await q.fetchall("SELECT id FROM agents WHERE is_enabled = 1")}


async def turns_due(r: Reader, run_id: str, now: str, timings: ChairConfig) -> tuple[bool, bool]:
    """(whether a turn of the run is overdue at `now`, whether one can be scheduled), read in a
    snapshot: the Chair asks this on every tick and after every turn event, and opens the write
    transactions of `expire_turns` and `schedule_turn` — urgent ones, ahead of every agent's
    write — only for work there is (each re-checks inside its own transaction)."""
    turns = (await turns_service.load_open_turns(r, run_id)).values()
    if not turns:
        return False, False
    expire = turns_service.overdue(
        turns,
        now,
        start_timeout=timings.turn_start_timeout,
        turn_timeout=timings.turn_timeout,
        enabled=await _enabled_agents(r),
    )
    return bool(expire), turns_service.next_to_schedule(turns) is not None


async def schedule_turn(tx: Tx, args: RunArgs) -> dict[str, Any] | None:
    """Schedule the run's oldest waiting turn unless one is in flight (urgent, like `expire_turns`)."""
    return await turns_service.schedule_next(tx, args.run_id)


async def end_run(
    tx: Tx,
    args: EndRunArgs,
    *,
    actor: str,
    wind_down: Callable[[Tx], Awaitable[dict[str, Any]]] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """End the run with `args.status` (`run.ended`) and record the loop's `orchestrator.<status>`
    event with its payload (iterations, and the reason or the error), in `tx`; `wind_down` (what
    the end does to the run's open work) runs first in it, and what it returns goes into
    `run.ended`. Returns the payload and what the wind-down did."""
    run_id, status = args.run_id, args.status
    payload: dict[str, Any] = {"iterations": args.iterations}
    if status == RunStatus.FAILED:
        payload["error"] = args.error
    else:
        payload["reason"] = args.reason
    details = await wind_down(tx) if wind_down is not None else {}
    await runs_service.end(tx, run_id, status, details=details)
    await tx.append_event(run_id, orchestrator_event(status), payload, actor_id=actor)
    return payload, details


async def note_retry(tx: Tx, args: NoteRetryArgs, *, actor: str) -> dict[str, Any]:
    """The finite loop will retry after a failed iteration (`orchestrator.retry`); its payload."""
    payload = {
        "iteration": args.iteration,
        "attempt": args.attempt,
        "max_attempts": args.max_attempts,
        "error": args.error,
        "next_retry_delay": args.next_retry_delay,
    }
    await tx.append_event(args.run_id, EventType.ORCHESTRATOR_RETRY, payload, actor_id=actor)
    return payload
