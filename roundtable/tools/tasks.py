"""Tasks: `task.create`, `task.get`, `task.list`, `task.update_status`. Who may change which task
(the operator any; an agent its own, or an unassigned one it takes) is decided in `services.coordination.tasks`."""

from __future__ import annotations

import sqlite3
from typing import Any

from pydantic import Field

from roundtable.domain import Risk, TaskStatus
from roundtable.services import paging
from roundtable.services.args import Args, Id, Int, NewId, PageArgs, Paths, RiskWord, Text, Title, Word
from roundtable.services.coordination import tasks
from roundtable.services.coordination.autopilot import blocked_reason_on
from roundtable.services.coordination.tasks import task_dict
from roundtable.store import rows
from roundtable.store.records import Task
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec, point_handler
from roundtable.tools.schema import PAGE_RESULT, RECORD, RECORDS, result


class CreateArgs(Args):
    title: Title
    body_md: Text = Field(description="What to do, in Markdown.")
    priority: Int = Field(tasks.DEFAULT_PRIORITY, description="Lower runs first; default 100.")
    risk: RiskWord = Field(Risk.NORMAL, description="Default normal; high and critical need a human's approval.")
    assigned_agent_id: Id = Field("", description="Agent to assign, if any.")
    readable_paths: Paths = Field([], description="Repository-relative paths the assignee may read.")
    task_id: NewId = ""
    status: Word = Field(TaskStatus.OPEN, description="Initial status (default open).")


async def create(call: Call[CreateArgs]) -> dict[str, Any]:
    a = call.args
    task = await tasks.create_task(
        call.w,
        call.runtime.config.limits,
        title=a.title,
        body_md=a.body_md,
        priority=a.priority,
        risk=a.risk,
        assigned_agent_id=a.assigned_agent_id,
        readable_paths=a.readable_paths,
        task_id=a.task_id,
        status=a.status,
        root=call.runtime.root,
        actor=call.actor,
        agent=call.agent_id,
        runs=call.run_hint,
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
    page = paging.request("task.list", [], len(tasks.TASK_ORDER), limit=a.limit, cursor=a.cursor)
    found, more = paging.finish(
        page, await tasks.list_tasks(call.r, call.scope, page), lambda t: (t.priority, t.created_at, t.id)
    )
    return {"tasks": [task_dict(t) for t in found], **more}


class UpdateStatusArgs(Args):
    task_id: Id
    status: Word = ""
    assigned_agent_id: Id = Field("", description="New assignee.")


async def update_status(call: Call[UpdateStatusArgs]) -> dict[str, Any]:
    a = call.args
    task = await tasks.update_task_status(
        call.w,
        a.task_id,
        status=a.status,
        assigned_agent_id=a.assigned_agent_id,
        actor=call.actor,
        agent=call.agent_id,
        runs=call.run_hint,
    )
    return {"task": task_dict(task)}


TOOLS = [
    ToolSpec(
        name="task.create",
        description=("Create a task; readable_paths are what its agent may read in a supervised session."),
        args=CreateArgs,
        output_schema=result({"task": RECORD}),
        handler=create,
    ),
    ToolSpec(
        name="task.get",
        description="Fetch one task by id.",
        args=GetArgs,
        output_schema=result({"task": RECORD}),
        handler=point_handler(get),
        point_read=get,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="task.list",
        description=("Tasks by priority then creation time, one page at a time (has_more: pass next_cursor)."),
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
