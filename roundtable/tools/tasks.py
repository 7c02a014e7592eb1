"""Tasks: `task.create`, `task.get`, `task.list`, `task.update_status`."""

from __future__ import annotations

from roundtable.tools.registry import ToolSpec, not_implemented
from roundtable.tools.schema import RECORD, RECORDS, integer, obj, result, string, strings

_TASK_ID = string("Task id, e.g. T-20260115T093012.123456789.")

TOOLS = [
    ToolSpec(
        name="task.create",
        description=(
            "Create a task. readable_paths lists the repository files or directories the assigned "
            "agent may read in a supervised session (credentials and config locations are refused)."
        ),
        input_schema=obj(
            {
                "title": string("Short title."),
                "body_md": string("What to do, in Markdown."),
                "priority": integer("Lower runs first; default 100."),
                "risk": string("normal (default), high or critical."),
                "assigned_agent_id": string("Agent to assign, if any."),
                "readable_paths": strings("Repository-relative paths the assignee may read."),
                "task_id": string("Explicit id (default: generated)."),
                "status": string("Initial status (default open)."),
            },
            ["title", "body_md"],
        ),
        output_schema=result({"task": RECORD}),
        handler=not_implemented("task.create"),
    ),
    ToolSpec(
        name="task.get",
        description="Fetch one task by id.",
        input_schema=obj({"task_id": _TASK_ID}, ["task_id"]),
        output_schema=result({"task": RECORD}),
        handler=not_implemented("task.get"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="task.list",
        description="List every task, ordered by priority, then creation time.",
        input_schema=obj(),
        output_schema=result({"tasks": RECORDS}),
        handler=not_implemented("task.list"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="task.update_status",
        description="Change a task's status and/or assignee (empty values leave a field unchanged).",
        input_schema=obj(
            {"task_id": _TASK_ID, "status": string("New status."), "assigned_agent_id": string("New assignee.")},
            ["task_id"],
        ),
        output_schema=result({"task": RECORD}),
        handler=not_implemented("task.update_status"),
        idempotent=True,
    ),
]
