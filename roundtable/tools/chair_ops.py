"""The Chair's operations (audience `internal`: only the owner's own components can name them).

Every write the Chair makes goes through `Runtime.call` as the caller `chair` — validated,
labelled `chair.<step>` on the change bus and in the audit trail, its events stamped with the
Chair's principal — instead of opening the database itself. The Chair decides what
to do from the stored state; these handlers do it through `services.coordination.chair_steps`, which declares the
operations' arguments and receives them whole.

- `chair.assign_tasks`: a batch of open tasks to the least loaded implementers (one transaction,
  a savepoint per task);
- `chair.mark_in_review`: a proposal whose review was requested for its revision;
- `chair.sweep_claims`: claims past their TTL;
- `chair.expire_turns` / `chair.schedule_turn`: the turn queue, each in a short transaction on the
  writer's urgent lane (`ToolSpec.urgent`);
- `chair.record_error`: a failing item, once per item and message;
- `chair.end_run` / `chair.note_retry`: how the loops end a run or retry an iteration.
"""

from __future__ import annotations

from typing import Any

from roundtable.services.args import Args
from roundtable.services.coordination import chair_steps
from roundtable.services.coordination.chair_steps import (
    AssignTasksArgs,
    EndRunArgs,
    MarkInReviewArgs,
    NoteRetryArgs,
    RecordErrorArgs,
    RunArgs,
    TimedArgs,
)
from roundtable.services.governance.run_end import wind_down
from roundtable.store.db import Tx
from roundtable.tools.context import Call
from roundtable.tools.registry import Handler, ToolSpec

_OBJECT = {"type": "object"}


async def record_error(call: Call[RecordErrorArgs]) -> dict[str, Any]:
    return {"recorded": await chair_steps.record_error(call.w, call.args, actor=call.actor)}


async def assign_tasks(call: Call[AssignTasksArgs]) -> dict[str, Any]:
    done = await chair_steps.assign_tasks(call.w, call.args, actor=call.actor)
    return {"assigned": done.assigned, "failures": done.failures, "load": done.load}


async def mark_in_review(call: Call[MarkInReviewArgs]) -> dict[str, Any]:
    payload, announced = await chair_steps.mark_in_review(call.w, call.args, actor=call.actor)
    return {"review_requested": payload, "announced": announced}


async def sweep_claims(call: Call[TimedArgs]) -> dict[str, Any]:
    return {"expired": await chair_steps.sweep_claims(call.w, call.args)}


async def expire_turns(call: Call[TimedArgs]) -> dict[str, Any]:
    return {"expired": await chair_steps.expire_turns(call.w, call.args, call.runtime.config.chair)}


async def schedule_turn(call: Call[RunArgs]) -> dict[str, Any]:
    return {"scheduled": await chair_steps.schedule_turn(call.w, call.args)}


async def end_run(call: Call[EndRunArgs]) -> dict[str, Any]:
    a = call.args

    async def wind(tx: Tx) -> dict[str, Any]:
        return (await wind_down(tx, a.run_id, a.status, actor=call.actor)).to_dict()

    payload, wound = await chair_steps.end_run(call.w, a, actor=call.actor, wind_down=wind)
    return {"run_id": a.run_id, "status": a.status, **payload, **wound}


async def note_retry(call: Call[NoteRetryArgs]) -> dict[str, Any]:
    return await chair_steps.note_retry(call.w, call.args, actor=call.actor)


def _spec(name: str, description: str, args: type[Args], handler: Handler, *, urgent: bool = False) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        args=args,
        output_schema=_OBJECT,
        handler=handler,
        urgent=urgent,
        audience="internal",
    )


TOOLS: list[ToolSpec] = [
    _spec(
        "chair.assign_tasks",
        "Assign open, unassigned tasks in order to the least loaded of the given implementers.",
        AssignTasksArgs,
        assign_tasks,
    ),
    _spec(
        "chair.mark_in_review",
        "A review was requested for a proposal's revision: pending becomes in_review, announced once.",
        MarkInReviewArgs,
        mark_in_review,
    ),
    _spec(
        "chair.sweep_claims",
        "Expire every active claim past its TTL (claim.expired, actor system).",
        TimedArgs,
        sweep_claims,
    ),
    _spec(
        "chair.expire_turns",
        "Expire overdue turns and turns of agents no longer enabled (agent.turn_expired).",
        TimedArgs,
        expire_turns,
        urgent=True,
    ),
    _spec(
        "chair.schedule_turn",
        "Schedule the run's oldest waiting turn unless a turn is in flight (agent.turn_scheduled).",
        RunArgs,
        schedule_turn,
        urgent=True,
    ),
    _spec(
        "chair.record_error",
        "Record a failing item of a tick (chair.error), once per item and message.",
        RecordErrorArgs,
        record_error,
    ),
    _spec(
        "chair.end_run",
        "End a run the loop settled: converged (completed, blocked) or failed (orchestrator.<status>).",
        EndRunArgs,
        end_run,
    ),
    _spec(
        "chair.note_retry",
        "The finite loop retries after a failed iteration (orchestrator.retry).",
        NoteRetryArgs,
        note_retry,
    ),
]
