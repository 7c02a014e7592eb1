"""Autopilot operations: the operator's on/off switch and the dispatcher's own records.

- `autopilot.set_enabled` (audience `operator`): records `autopilot.enabled` / `autopilot.disabled`
  in every active run with the operator as principal; the owner's dispatcher flips its state
  after the call succeeds (`Dispatcher.set_enabled`).
- `autopilot.record` (internal): one of the dispatcher's events (`services.coordination.autopilot.EVENT_TYPES`).
- `autopilot.block_task` (internal): a task the dispatcher gave up on, blocked with the reason.

The models are declared in `services.coordination.autopilot`, which receives them whole.
"""

from __future__ import annotations

from typing import Any

from roundtable.services.coordination import autopilot
from roundtable.services.coordination.autopilot import BlockTaskArgs, RecordArgs, SetEnabledArgs
from roundtable.services.coordination.tasks import task_dict
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

_OBJECT = {"type": "object"}


async def set_enabled(call: Call[SetEnabledArgs]) -> dict[str, Any]:
    runs = await autopilot.set_enabled(call.w, call.args, actor=call.actor)
    return {"enabled": call.args.enabled, "runs": runs}


async def record(call: Call[RecordArgs]) -> dict[str, Any]:
    return {"event_id": await autopilot.record(call.w, call.args, actor=call.actor)}


async def block_task(call: Call[BlockTaskArgs]) -> dict[str, Any]:
    return {"task": task_dict(await autopilot.block_task(call.w, call.args, actor=call.actor))}


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
