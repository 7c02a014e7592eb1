"""Autopilot operations: the operator's on/off switch and the dispatcher's own records.

- `autopilot.set_enabled` (audience `operator`): records `autopilot.enabled` / `autopilot.disabled`
  in every active run with the operator as principal; the owner's dispatcher flips its state
  after the call succeeds (`Dispatcher.set_enabled`).
- `autopilot.record` (internal): one of the dispatcher's events (`services.coordination.autopilot.EVENT_TYPES`).
- `autopilot.block_task` (internal): a task the dispatcher gave up on, blocked with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from roundtable.domain import EventType
from roundtable.services.args import Args, Flag, Id, Object, Text
from roundtable.services.coordination import autopilot
from roundtable.services.coordination.tasks import task_dict
from roundtable.services.run_scope import active_runs
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

_OBJECT = {"type": "object"}


if TYPE_CHECKING:
    DispatcherEvent = str
else:
    DispatcherEvent = Literal[tuple(sorted(autopilot.EVENT_TYPES))]


class SetEnabledArgs(Args):
    enabled: Flag = Field(description="On (true) or off (false).")
    run_id: Id = Field("", description="Only this run's log.")


async def set_enabled(call: Call[SetEnabledArgs]) -> dict[str, Any]:
    a = call.args
    runs = [a.run_id] if a.run_id else await active_runs(call.w)
    kind = EventType.AUTOPILOT_ENABLED if a.enabled else EventType.AUTOPILOT_DISABLED
    for run_id in runs or [""]:
        await autopilot.record(call.w, run_id, kind, {"enabled": a.enabled}, actor=call.actor)
    return {"enabled": a.enabled, "runs": runs}


class RecordArgs(Args):
    allow_blank = frozenset({"run_id"})

    type: DispatcherEvent = Field(description="The event type.")
    payload: Object
    run_id: Id = Field(description="The run the event belongs to.")
    task_id: Id = Field("", description="The task it concerns.")


async def record(call: Call[RecordArgs]) -> dict[str, Any]:
    a = call.args
    event_id = await autopilot.record(call.w, a.run_id, a.type, dict(a.payload), actor=call.actor, task_id=a.task_id)
    return {"event_id": event_id}


class BlockTaskArgs(Args):
    allow_blank = frozenset({"run_id"})

    task_id: Id = Field(description="The task.")
    reason: Text = Field(description="Why it is blocked.")
    run_id: Id = Field(description="The run the event belongs to.")


async def block_task(call: Call[BlockTaskArgs]) -> dict[str, Any]:
    a = call.args
    task = await autopilot.block_task(call.w, a.run_id, a.task_id, a.reason, actor=call.actor)
    return {"task": task_dict(task)}


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="autopilot.set_enabled",
        description="Turn the autopilot on or off (recorded in every active run, or in run_id).",
        args=SetEnabledArgs,
        output_schema=_OBJECT,
        handler=set_enabled,
        audience="operator",
    ),
    ToolSpec(
        name="autopilot.record",
        description="Record one of the dispatcher's events.",
        args=RecordArgs,
        output_schema=_OBJECT,
        handler=record,
        audience="internal",
    ),
    ToolSpec(
        name="autopilot.block_task",
        description="Block a task the autopilot gave up on, with the reason (task.blocked).",
        args=BlockTaskArgs,
        output_schema=_OBJECT,
        handler=block_task,
        audience="internal",
    ),
]
