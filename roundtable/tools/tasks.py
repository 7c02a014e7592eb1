"""Tasks: `task.create`, `task.get`, `task.list`, `task.update_status`. Who may change which task
(the operator any; an agent its own, or an unassigned one it takes) is decided in `services.coordination.tasks`."""

from __future__ import annotations

import sqlite3
from typing import Any

from roundtable.domain import TaskStatus
from roundtable.services import paging
from roundtable.services.args import Args, Id, PageArgs
from roundtable.services.coordination import tasks
from roundtable.services.coordination.autopilot import blocked_reason_on
from roundtable.services.coordination.tasks import CreateArgs, UpdateStatusArgs, task_dict
from roundtable.store import rows
from roundtable.store.records import Task
from roundtable.tools import views
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec, point_handler
from roundtable.tools.schema import PAGE_RESULT, RECORD, RECORDS, result


async def create(call: Call[CreateArgs]) -> dict[str, Any]:
    task = await tasks.create_task(
        call.w, call.runtime, call.args, actor=call.actor, agent=call.agent_id, runs=call.run_hint
    )
    return {"task": task_dict(task)}


class GetArgs(Args):
    task_id: Id


def get(conn: sqlite3.Connection, args: GetArgs) -> dict[str, Any]:
    task = task_dict(rows.get(conn, Task, args.task_id))
    if task["status"] == TaskStatus.BLOCKED:  # why (the autopilot gave up on it), when recorded
        task["blocked_reason"] = blocked_reason_on(conn, task["id"])
    return {"task": task}


async def list_(call: Call[PageArgs]) -> dict[str, Any]:
    a = call.args
    page = paging.request("task.list", [], len(tasks.TASK_ORDER), a)
    found, more = paging.finish(
        page, await tasks.list_tasks(call.r, call.scope, page), lambda t: (t.priority, t.created_at, t.id)
    )
    return {"tasks": [task_dict(t) for t in found], **more}


async def update_status(call: Call[UpdateStatusArgs]) -> dict[str, Any]:
    task = await tasks.update_task_status(call.w, call.args, actor=call.actor, agent=call.agent_id, runs=call.run_hint)
    return {"task": task_dict(task)}


TOOLS = [
    ToolSpec(
        name="task.create",
        description=("Create a task (readable_paths: what its agent may read in a session)."),
        args=CreateArgs,
        rare_args=frozenset({"status"}),
        output_schema=result({"task": RECORD}),
        handler=create,
    ),
    ToolSpec(
        name="task.get",
        description="A task by id.",
        args=GetArgs,
        agent_view=views.task_for_agent,
        output_schema=result({"task": RECORD}),
        handler=point_handler(get),
        point_read=get,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="task.list",
        description=("Tasks by priority then age, a page at a time."),
        args=PageArgs,
        output_schema=result({"tasks": RECORDS, **PAGE_RESULT}),
        handler=list_,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="task.update_status",
        description=(
            "Change a task's status and/or assignee (empty leaves a field). Agents: tasks assigned to them, or take an unassigned one."
        ),
        args=UpdateStatusArgs,
        output_schema=result({"task": RECORD}),
        handler=update_status,
        idempotent=True,
    ),
]
