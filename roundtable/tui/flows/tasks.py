"""Tasks: `n` creates one (title, body, readable paths, priority), `b` blocks the selected one
with a reason, `c` cancels it after a confirmation — each an audited call as the operator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import work

from roundtable.domain import BLOCKED_TASK_STATUSES, TERMINAL_TASK_STATUSES, TaskStatus
from roundtable.store.records import Task
from roundtable.tools.registry import get_registry
from roundtable.tui.flows.flow import Flow
from roundtable.tui.screens.confirm import ConfirmScreen
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.screens.task_form import TaskForm
from roundtable.tui.widgets.tasks_pane import TasksPane


def _blockable(task: Task) -> str:
    if task.status in TERMINAL_TASK_STATUSES or task.status in BLOCKED_TASK_STATUSES:
        return f"{task.id} is {task.status}: only open work can be blocked."
    return ""


def _cancellable(task: Task) -> str:
    return f"{task.id} is {task.status} already." if task.status in TERMINAL_TASK_STATUSES else ""


def known_args(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Only the arguments `tool` advertises (an optional reason is dropped where it has none)."""
    spec = get_registry().lookup(tool)
    allowed = set(spec.input_schema.get("properties", {})) if spec is not None else set(args)
    return {k: v for k, v in args.items() if k in allowed}


class TaskFlow(Flow):
    def _selected_task(self, refuse: Callable[[Task], str]) -> Task | None:
        tasks = self.console.overview.tasks if self.console.overview else []
        return self.console.target(
            self.console.selected(TasksPane, tasks, lambda t: t.id), what="a task", pane="Tasks", refuse=refuse
        )

    def action_new_task(self) -> None:
        self._new_task_flow()

    @work(group="dialog", exit_on_error=False)
    async def _new_task_flow(self) -> None:
        draft = await self.console.push_screen_wait(TaskForm(self.console.runtime.root))
        self.console.dialog_closed()
        if draft is None:
            return
        args: dict[str, Any] = {"title": draft.title, "body_md": draft.body_md, "priority": draft.priority}
        if draft.readable_paths:
            args["readable_paths"] = draft.readable_paths
        result = await self.console.call_tool("task.create", args, success=f"task created: {draft.title}", title="task")
        if result is not None:
            self.console._main.query_one(TasksPane).focus()
            self.console.reveal("tasks", str(result["task"]["id"]))

    def action_block_task(self) -> None:
        task = self._selected_task(_blockable)
        if task is not None:
            self._block_flow(task)

    @work(group="dialog", exit_on_error=False)
    async def _block_flow(self, task: Task) -> None:
        reason = await self.console.push_screen_wait(
            PromptScreen(f"Block {task.id}", f"{task.title}\nWhy (required):", required=True)
        )
        self.console.dialog_closed()
        if reason:
            args = {"task_id": task.id, "status": TaskStatus.BLOCKED.value, "reason_md": reason}
            await self.console.call_tool(
                "task.update_status", known_args("task.update_status", args), success=f"{task.id} blocked", title="task"
            )

    def action_cancel_task(self) -> None:
        task = self._selected_task(_cancellable)
        if task is not None:
            self._cancel_task_flow(task)

    @work(group="dialog", exit_on_error=False)
    async def _cancel_task_flow(self, task: Task) -> None:
        body = Text.assemble(("Task ", "dim"), (task.id, "bold"), "  ", task.title, (f"  [{task.status}]", "yellow"))
        confirmed = await self.console.push_screen_wait(
            ConfirmScreen(f"Cancel {task.id}?", body, confirm_label="Cancel task")
        )
        self.console.dialog_closed()
        if confirmed:
            args = {"task_id": task.id, "status": TaskStatus.CANCELLED.value}
            await self.console.call_tool("task.update_status", args, success=f"{task.id} cancelled", title="task")
