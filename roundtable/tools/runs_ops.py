"""Run operations: `run.create`, `run.resume`, `run.end`, `run.archive` and `run.snapshot`
(audience `operator`).

The CLI (`roundtable runs create|end|archive`, `run`, `start --goal`), the console (`g`, `e`,
`E`) and an operator token over MCP create and close runs through these, so each change is
validated, audited with its principal and transport, and made in one transaction. The owner's
Chair and dispatcher pick a new run up from the commit, whichever process made it.
"""

from __future__ import annotations

from typing import Any

from roundtable import clock
from roundtable.domain import TERMINAL_RUN_STATUSES
from roundtable.errors import ValidationError
from roundtable.services.coordination import runs
from roundtable.tools.args import opt_str
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import obj, string

_OBJECT = {"type": "object"}
GOAL_MAX = 20_000


def _run_id(value: str) -> str:
    if value and not clock.is_valid_id(value):
        raise ValidationError("run_id must be 1-128 letters, digits, '.', '_' or '-'")
    return value


async def create(call: Call) -> dict[str, Any]:
    a = call.args
    goal = opt_str(a, "goal").strip()
    run = await runs.create(call.w, goal, run_id=_run_id(opt_str(a, "run_id")), actor=call.actor)
    return {"run": run.to_dict()}


async def resume(call: Call) -> dict[str, Any]:
    run = await runs.resume(call.w, _run_id(opt_str(call.args, "run_id")), actor=call.actor)
    return {"run": run.to_dict()}


async def end(call: Call) -> dict[str, Any]:
    a = call.args
    run = await runs.end(call.w, a["run_id"], opt_str(a, "status", "completed"), actor=call.actor)
    return {"run": run.to_dict()}


async def archive(call: Call) -> dict[str, Any]:
    run = await runs.archive(call.w, call.args["run_id"], actor=call.actor)
    return {"run": run.to_dict()}


async def snapshot(call: Call) -> dict[str, Any]:
    return {"snapshot_id": await runs.snapshot(call.w, call.args["run_id"])}


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="run.create",
        description="Create an active run with a goal; the owner's Chair and autopilot take it up.",
        input_schema=obj(
            {
                "goal": string("What the run is for (the planner turns it into tasks).", maxLength=GOAL_MAX),
                "run_id": string("Id of the new run (default RUN-<time>)."),
            }
        ),
        output_schema=_OBJECT,
        handler=create,
        audience="operator",
        allow_blank=frozenset({"goal"}),
    ),
    ToolSpec(
        name="run.resume",
        description="Make run_id (default: the latest active run, else the latest run) active again.",
        input_schema=obj({"run_id": string("The run to resume.")}),
        output_schema=_OBJECT,
        handler=resume,
        audience="operator",
    ),
    ToolSpec(
        name="run.end",
        description="End a run with a final status (run.ended); the Chair stops ticking it.",
        input_schema=obj(
            {
                "run_id": string("The run."),
                "status": string("Final status (default completed).", enum=sorted(TERMINAL_RUN_STATUSES)),
            },
            ["run_id"],
        ),
        output_schema=_OBJECT,
        handler=end,
        audience="operator",
    ),
    ToolSpec(
        name="run.archive",
        description="Archive an ended run: hidden from the console and from resume; nothing is deleted.",
        input_schema=obj({"run_id": string("The run.")}, ["run_id"]),
        output_schema=_OBJECT,
        handler=archive,
        audience="operator",
        idempotent=True,
    ),
    ToolSpec(
        name="run.snapshot",
        description="Store the table's state (the table.get_state lists) as a snapshot of the run.",
        input_schema=obj({"run_id": string("The run.")}, ["run_id"]),
        output_schema=_OBJECT,
        handler=snapshot,
        audience="operator",
    ),
]
