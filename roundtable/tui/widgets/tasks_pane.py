"""Tasks: open work first (by priority), then finished; status, assignee and priority, and why a
blocked task is blocked when the autopilot gave up on it."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from roundtable.services.views.models import Overview
from roundtable.tui import commands
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell


class TasksPane(TablePane):
    BINDINGS: ClassVar = commands.pane_bindings("tasks")
    kind = "task"
    TITLE = "Tasks"
    COLUMNS = ("title", "status", "assignee", "pri", "task")
    ELASTIC = {"title": 24}
    ID_COLUMNS = ("task",)
    OPTIONAL = ("task", "pri", "assignee")

    def build_rows(self, overview: Overview) -> list[Row]:
        return [
            (
                t.id,
                (
                    _title(t.title, overview.blocked_reasons.get(t.id, "")),
                    status_cell(t.status),
                    t.assigned_agent_id or "—",
                    str(t.priority),
                    t.id,
                ),
            )
            for t in overview.tasks
        ]


def _title(title: str, blocked_reason: str) -> Text | str:
    """The title, followed by why the task is blocked when the autopilot said so."""
    if not blocked_reason:
        return title
    return Text(title) + Text(f" — {blocked_reason}", style="red")
