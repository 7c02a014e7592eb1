"""Run operations: `run.create`, `run.resume`, `run.end`, `run.archive` and `run.snapshot`
(audience `operator`).

The CLI (`roundtable runs create|end|archive`, `run`, `start --goal`), the console (`g`, `e`,
`E`) and an operator token over MCP create and close runs through these, so each change is
validated, audited with its principal and transport, and made in one transaction. The owner's
Chair and dispatcher pick a new run up from the commit, whichever process made it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from annotated_types import MaxLen
from pydantic import Field

from roundtable.domain import TERMINAL_RUN_STATUSES, RunStatus
from roundtable.services.args import Args, Id, NewId, Text
from roundtable.services.coordination import runs
from roundtable.services.governance.run_end import wind_down
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

_OBJECT = {"type": "object"}
GOAL_MAX = 20_000


class CreateArgs(Args):
    allow_blank = frozenset({"goal"})

    goal: Annotated[Text, MaxLen(GOAL_MAX)] = Field(
        "", description="What the run is for (the planner turns it into tasks)."
    )
    run_id: NewId = Field("", description="Id of the new run (default RUN-<time>).")


async def create(call: Call[CreateArgs]) -> dict[str, Any]:
    a = call.args
    run = await runs.create(call.w, a.goal.strip(), run_id=a.run_id, actor=call.actor)
    return {"run": run.to_dict()}


class ResumeArgs(Args):
    run_id: NewId = Field("", description="The run to resume.")


async def resume(call: Call[ResumeArgs]) -> dict[str, Any]:
    run = await runs.resume(call.w, call.args.run_id, actor=call.actor)
    return {"run": run.to_dict()}


if TYPE_CHECKING:
    Ending = str
else:
    Ending = Literal[tuple(sorted(TERMINAL_RUN_STATUSES))]


class EndArgs(Args):
    run_id: Id = Field(description="The run.")
    status: Ending = Field(RunStatus.COMPLETED, description="Final status (default completed).")


async def end(call: Call[EndArgs]) -> dict[str, Any]:
    await runs.get_run(call.w, call.args.run_id)  # an unknown run is refused before anything is touched
    wound = (await wind_down(call.w, call.args.run_id, call.args.status, actor=call.actor)).to_dict()
    run = await runs.end(call.w, call.args.run_id, call.args.status, actor=call.actor, details=wound)
    return {"run": run.to_dict(), **wound}


class RunArgs(Args):
    run_id: Id = Field(description="The run.")


async def archive(call: Call[RunArgs]) -> dict[str, Any]:
    run = await runs.archive(call.w, call.args.run_id, actor=call.actor)
    return {"run": run.to_dict()}


async def snapshot(call: Call[RunArgs]) -> dict[str, Any]:
    return {"snapshot_id": await runs.snapshot(call.w, call.args.run_id)}


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="run.create",
        description="Create an active run with a goal; the owner's Chair and autopilot take it up.",
        args=CreateArgs,
        output_schema=_OBJECT,
        handler=create,
        audience="operator",
    ),
    ToolSpec(
        name="run.resume",
        description="Make run_id (default: the latest active run, else the latest run) active again.",
        args=ResumeArgs,
        output_schema=_OBJECT,
        handler=resume,
        audience="operator",
    ),
    ToolSpec(
        name="run.end",
        description=(
            "End a run with a final status (run.ended); the Chair stops ticking it. Its open proposals are "
            "withdrawn and its tasks' claims released (listed in the answer and the event)."
        ),
        args=EndArgs,
        output_schema=_OBJECT,
        handler=end,
        audience="operator",
    ),
    ToolSpec(
        name="run.archive",
        description="Archive an ended run: hidden from the console and from resume; nothing is deleted.",
        args=RunArgs,
        output_schema=_OBJECT,
        handler=archive,
        audience="operator",
        idempotent=True,
    ),
    ToolSpec(
        name="run.snapshot",
        description="Store the table's state (the table.get_state lists) as a snapshot of the run.",
        args=RunArgs,
        output_schema=_OBJECT,
        handler=snapshot,
        audience="operator",
    ),
]
