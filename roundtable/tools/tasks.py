"""Tasks: `task.create`, `task.get`, `task.list`, `task.update_status`. Who may change which task
(the operator any; an agent its own, or an unassigned one it takes) is decided in `services.coordination.tasks`."""

from __future__ import annotations

import sqlite3
from typing import Any

from roundtable.domain import Risk, TaskStatus
from roundtable.services import paging
from roundtable.services.coordination import quotas, tasks
from roundtable.services.coordination.autopilot import blocked_reason_on
from roundtable.services.coordination.tasks import task_dict
from roundtable.store import rows
from roundtable.store.records import Task
from roundtable.tools.args import opt_int, opt_list, opt_str, record_id
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec, point_handler
from roundtable.tools.schema import PAGE_ARGS, PAGE_RESULT, RECORD, RECORDS, integer, obj, result, string, strings


async def create(call: Call) -> dict[str, Any]:
    a = call.args
    task = await tasks.create_task(
        call.w,
        title=a["title"],
        body_md=a["body_md"],
        priority=opt_int(a, "priority", tasks.DEFAULT_PRIORITY),
        risk=opt_str(a, "risk", Risk.NORMAL),
        assigned_agent_id=opt_str(a, "assigned_agent_id"),
        readable_paths=opt_list(a, "readable_paths"),
        task_id=record_id(a, "task_id"),
        status=opt_str(a, "status", TaskStatus.OPEN),
        root=call.runtime.root,
        actor=call.actor,
        agent=call.agent_id,
        runs=call.run_hint,
    )
    await quotas.check(call.w, call.runtime.config.limits, "task", run_id=task.run_id, agent_id=call.agent_id)
    return {"task": task_dict(task)}


def get(conn: sqlite3.Connection, args: dict[str, Any]) -> dict[str, Any]:
    task = task_dict(rows.get(conn, Task, args["task_id"]))
    if task["status"] == TaskStatus.BLOCKED:  # why (the autopilot gave up on it), when recorded
        task["blocked_reason"] = blocked_reason_on(conn, task["id"])
    return {"task": task}


async def list_(call: Call) -> dict[str, Any]:
    page = paging.request("task.list", call.args, [], len(tasks.TASK_ORDER))
    found, more = paging.finish(
        page, await tasks.list_tasks(call.r, call.scope, page), lambda t: (t.priority, t.created_at, t.id)
    )
    return {"tasks": [task_dict(t) for t in found], **more}


async def update_status(call: Call) -> dict[str, Any]:
    a = call.args
    task = await tasks.update_task_status(
        call.w,
        a["task_id"],
        status=opt_str(a, "status"),
        assigned_agent_id=opt_str(a, "assigned_agent_id"),
        actor=call.actor,
        agent=call.agent_id,
        runs=call.run_hint,
    )
    return {"task": task_dict(task)}


_TASK_ID = string()

TOOLS = [
    ToolSpec(
        name="task.create",
        description=("Create a task; readable_paths are what its agent may read in a supervised session."),
        input_schema=obj(
            {
                "title": string(),
                "body_md": string("What to do, in Markdown."),
                "priority": integer("Lower runs first; default 100."),
                "risk": string("Default normal; high and critical need a human's approval.", enum=list(Risk)),
                "assigned_agent_id": string("Agent to assign, if any."),
                "readable_paths": strings("Repository-relative paths the assignee may read."),
                "task_id": string(),
                "status": string("Initial status (default open)."),
            },
            ["title", "body_md"],
        ),
        output_schema=result({"task": RECORD}),
        handler=create,
    ),
    ToolSpec(
        name="task.get",
        description="Fetch one task by id.",
        input_schema=obj({"task_id": _TASK_ID}, ["task_id"]),
        output_schema=result({"task": RECORD}),
        handler=point_handler(get),
        point_read=get,
        inline=True,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="task.list",
        description=("Tasks by priority then creation time, one page at a time (has_more: pass next_cursor)."),
        input_schema=obj(PAGE_ARGS),
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
        input_schema=obj(
            {"task_id": _TASK_ID, "status": string(), "assigned_agent_id": string("New assignee.")},
            ["task_id"],
        ),
        output_schema=result({"task": RECORD}),
        handler=update_status,
        idempotent=True,
    ),
]
