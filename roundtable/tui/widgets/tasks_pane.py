"""Tasks: open work first (by priority), then finished; status, assignee and priority, and why a
blocked task is blocked when the autopilot gave up on it."""

from __future__ import annotations

from rich.text import Text

from roundtable.tui.models import Overview
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell


class TasksPane(TablePane):
    kind = "task"
    TITLE = "Tasks"
    COLUMNS = ("status", "task", "title", "assignee", "pri")
    ELASTIC = {"title": 32}

    def build_rows(self, overview: Overview) -> list[Row]:
        return [
            (
                t.id,
                (
                    status_cell(t.status),
                    t.id,
                    _title(t.title, overview.blocked_reasons.get(t.id, "")),
                    t.assigned_agent_id or "—",
                    str(t.priority),
                ),
            )
            for t in overview.tasks
        ]


def _title(title: str, blocked_reason: str) -> Text | str:
    """The title, followed by why the task is blocked when the autopilot said so."""
    if not blocked_reason:
        return title
    return Text(title) + Text(f" — {blocked_reason}", style="red")
