"""The Chair's operations (audience `internal`: only the owner's own components can name them).

Every write the Chair makes goes through `Runtime.call` as the caller `chair` — validated,
labelled `chair.<step>` on the change bus and in the audit trail, its events stamped with the
Chair's principal — instead of opening the database itself. The Chair decides what
to do from the stored state; these handlers do it through `services.coordination.chair_steps`.

- `chair.assign_tasks`: a batch of open tasks to the least loaded implementers (one transaction,
  a savepoint per task);
- `chair.mark_in_review`: a proposal whose review was requested for its revision;
- `chair.sweep_claims`: claims past their TTL;
- `chair.expire_turns` / `chair.schedule_turn`: the turn queue, each in a short transaction of its
  own on the writer's urgent lane (mode `none`);
- `chair.record_error`: a failing item, once per item and message;
- `chair.end_run` / `chair.note_retry`: how the loops end a run or retry an iteration.
"""

from __future__ import annotations

from typing import Any

from roundtable import clock
from roundtable.domain import RunStatus
from roundtable.services.coordination import chair_steps
from roundtable.tools.args import opt_str
from roundtable.tools.context import Call
from roundtable.tools.registry import Handler, ToolSpec, TxMode
from roundtable.tools.schema import integer, obj, string, strings

_OBJECT = {"type": "object"}
_RUN = string("The run the Chair is ticking (its events go there).")
_NOW = string("Evaluate time-based expiry at this instant (RFC 3339 UTC; default now).")


def _now(call: Call) -> str:
    return opt_str(call.args, "now") or clock.now()


async def record_error(call: Call) -> dict[str, Any]:
    a = call.args
    recorded = await chair_steps.record_error(
        call.w, a["run_id"], a["step"], opt_str(a, "item"), a["error"], actor=call.actor
    )
    return {"recorded": recorded}


async def assign_tasks(call: Call) -> dict[str, Any]:
    a = call.args
    done = await chair_steps.assign_tasks(
        call.w, a["run_id"], list(a["task_ids"]), list(a["agents"]), dict(a.get("load") or {}), actor=call.actor
    )
    return {"assigned": done.assigned, "failures": done.failures, "load": done.load}


async def mark_in_review(call: Call) -> dict[str, Any]:
    a = call.args
    payload = {
        "proposal_id": a["proposal_id"],
        "reviewers": list(a.get("reviewers") or []),
        "roles": list(a.get("roles") or []),
        "revision": a["revision"],
    }
    announced = await chair_steps.mark_in_review(
        call.w, a["run_id"], a["proposal_id"], opt_str(a, "task_id"), payload, actor=call.actor
    )
    return {"review_requested": payload, "announced": announced}


async def sweep_claims(call: Call) -> dict[str, Any]:
    return {"expired": await chair_steps.sweep_claims(call.w, call.args["run_id"], _now(call))}


async def expire_turns(call: Call) -> dict[str, Any]:
    timings = call.runtime.config.chair
    expired = await chair_steps.expire_turns(
        call.runtime,
        call.args["run_id"],
        _now(call),
        start_timeout=timings.turn_start_timeout,
        turn_timeout=timings.turn_timeout,
        label=call.tool,
    )
    return {"expired": expired}


async def schedule_turn(call: Call) -> dict[str, Any]:
    return {"scheduled": await chair_steps.schedule_turn(call.runtime, call.args["run_id"], label=call.tool)}


async def end_run(call: Call) -> dict[str, Any]:
    a = call.args
    payload: dict[str, Any] = {"iterations": a["iterations"]}
    if a["status"] == RunStatus.FAILED:
        payload["error"] = opt_str(a, "error")
    else:
        payload["reason"] = opt_str(a, "reason")
    await chair_steps.end_run(call.runtime, a["run_id"], a["status"], payload, actor=call.actor, label=call.tool)
    return {"run_id": a["run_id"], "status": a["status"], **payload}


async def note_retry(call: Call) -> dict[str, Any]:
    a = call.args
    payload = {
        "iteration": a["iteration"],
        "attempt": a["attempt"],
        "max_attempts": a["max_attempts"],
        "error": a["error"],
        "next_retry_delay": a["next_retry_delay"],
    }
    await chair_steps.note_retry(call.w, a["run_id"], payload, actor=call.actor)
    return payload


def _spec(name: str, description: str, schema: dict[str, Any], handler: Handler, *, mode: TxMode = "write") -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        input_schema=schema,
        output_schema=_OBJECT,
        handler=handler,
        mode=mode,
        audience="internal",
    )


_COUNT = integer(minimum=0)

TOOLS: list[ToolSpec] = [
    _spec(
        "chair.assign_tasks",
        "Assign open, unassigned tasks in order to the least loaded of the given implementers.",
        obj(
            {
                "run_id": _RUN,
                "task_ids": strings("The tasks, in assignment order."),
                "agents": strings("The enabled implementers, in pool order (ties go to the earliest)."),
                "load": {"type": "object", "additionalProperties": _COUNT, "description": "Open tasks per agent."},
            },
            ["run_id", "task_ids", "agents"],
        ),
        assign_tasks,
    ),
    _spec(
        "chair.mark_in_review",
        "A review was requested for a proposal's revision: pending becomes in_review, announced once.",
        obj(
            {
                "run_id": _RUN,
                "proposal_id": string("The proposal."),
                "task_id": string("Its task."),
                "revision": string("The revision reviewed (its sha256, or r<number> before any patch)."),
                "roles": strings("The roles the policy asks to review."),
                "reviewers": strings("The reviewers asked (agent ids)."),
            },
            ["run_id", "proposal_id", "revision"],
        ),
        mark_in_review,
    ),
    _spec(
        "chair.sweep_claims",
        "Expire every active claim past its TTL (claim.expired, actor system).",
        obj({"run_id": _RUN, "now": _NOW}, ["run_id"]),
        sweep_claims,
    ),
    _spec(
        "chair.expire_turns",
        "Expire overdue turns and turns of agents no longer enabled (agent.turn_expired).",
        obj({"run_id": _RUN, "now": _NOW}, ["run_id"]),
        expire_turns,
        mode="none",
    ),
    _spec(
        "chair.schedule_turn",
        "Schedule the run's oldest waiting turn unless a turn is in flight (agent.turn_scheduled).",
        obj({"run_id": _RUN}, ["run_id"]),
        schedule_turn,
        mode="none",
    ),
    _spec(
        "chair.record_error",
        "Record a failing item of a tick (chair.error), once per item and message.",
        obj(
            {
                "run_id": _RUN,
                "step": string("The tick step."),
                "item": string("The task or proposal that failed ('' for the step itself)."),
                "error": string("What went wrong."),
            },
            ["run_id", "step", "error"],
        ),
        record_error,
    ),
    _spec(
        "chair.end_run",
        "End a run the loop settled: converged (completed, blocked) or failed (orchestrator.<status>).",
        obj(
            {
                "run_id": _RUN,
                "status": string("How the run ended.", enum=list(chair_steps.ENDINGS)),
                "iterations": _COUNT,
                "reason": string("Why it converged."),
                "error": string("Why it failed."),
            },
            ["run_id", "status", "iterations"],
        ),
        end_run,
        mode="none",
    ),
    _spec(
        "chair.note_retry",
        "The finite loop retries after a failed iteration (orchestrator.retry).",
        obj(
            {
                "run_id": _RUN,
                "iteration": _COUNT,
                "attempt": _COUNT,
                "max_attempts": _COUNT,
                "error": string("What failed."),
                "next_retry_delay": string("The delay before the retry, e.g. 250ms."),
            },
            ["run_id", "iteration", "attempt", "max_attempts", "error", "next_retry_delay"],
        ),
        note_retry,
    ),
]
