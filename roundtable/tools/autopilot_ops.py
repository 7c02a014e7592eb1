"""Autopilot operations: the operator's on/off switch and the dispatcher's own records.

- `autopilot.set_enabled` (audience `operator`): records `autopilot.enabled` / `autopilot.disabled`
  in every active run with the operator as principal; the owner's dispatcher flips its state
  after the call succeeds (`Dispatcher.set_enabled`).
- `autopilot.record` (internal): one of the dispatcher's events (`services.coordination.autopilot.EVENT_TYPES`).
- `autopilot.block_task` (internal): a task the dispatcher gave up on, blocked with the reason.
"""

from __future__ import annotations

from typing import Any

from roundtable.domain import EventType
from roundtable.services.coordination import autopilot
from roundtable.services.coordination.tasks import task_dict
from roundtable.services.run_scope import active_runs
from roundtable.tools.args import opt_str
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import boolean, obj, string

_OBJECT = {"type": "object"}


async def set_enabled(call: Call) -> dict[str, Any]:
    on = bool(call.args["enabled"])
    runs = [opt_str(call.args, "run_id")] if opt_str(call.args, "run_id") else await active_runs(call.w)
    kind = EventType.AUTOPILOT_ENABLED if on else EventType.AUTOPILOT_DISABLED
    for run_id in runs or [""]:
        await autopilot.record(call.w, run_id, kind, {"enabled": on}, actor=call.actor)
    return {"enabled": on, "runs": runs}


async def record(call: Call) -> dict[str, Any]:
    a = call.args
    event_id = await autopilot.record(
        call.w, a["run_id"], a["type"], dict(a["payload"]), actor=call.actor, task_id=opt_str(a, "task_id")
    )
    return {"event_id": event_id}


async def block_task(call: Call) -> dict[str, Any]:
    a = call.args
    task = await autopilot.block_task(call.w, a["run_id"], a["task_id"], a["reason"], actor=call.actor)
    return {"task": task_dict(task)}


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="autopilot.set_enabled",
        description="Turn the autopilot on or off (recorded in every active run, or in run_id).",
        input_schema=obj(
            {"enabled": boolean("On (true) or off (false)."), "run_id": string("Only this run's log.")},
            ["enabled"],
        ),
        output_schema=_OBJECT,
        handler=set_enabled,
        audience="operator",
    ),
    ToolSpec(
        name="autopilot.record",
        description="Record one of the dispatcher's events.",
        input_schema=obj(
            {
                "type": string("The event type.", enum=sorted(autopilot.EVENT_TYPES)),
                "payload": _OBJECT,
                "run_id": string("The run the event belongs to."),
                "task_id": string("The task it concerns."),
            },
            ["type", "payload", "run_id"],
        ),
        output_schema=_OBJECT,
        handler=record,
        audience="internal",
        allow_blank=frozenset({"run_id"}),
    ),
    ToolSpec(
        name="autopilot.block_task",
        description="Block a task the autopilot gave up on, with the reason (task.blocked).",
        input_schema=obj(
            {
                "task_id": string("The task."),
                "reason": string("Why it is blocked."),
                "run_id": string("The run the event belongs to."),
            },
            ["task_id", "reason", "run_id"],
        ),
        output_schema=_OBJECT,
        handler=block_task,
        audience="internal",
        allow_blank=frozenset({"run_id"}),
    ),
]
