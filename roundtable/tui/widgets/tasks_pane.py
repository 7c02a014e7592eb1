"""Tasks: open work first (by priority), then finished; status, assignee and priority."""

from __future__ import annotations

from roundtable.tui.models import Overview
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell


class TasksPane(TablePane):
    kind = "task"
    TITLE = "Tasks"
    COLUMNS = ("status", "task", "title", "assignee", "pri")
    ELASTIC = {"title": 32}

    def build_rows(self, overview: Overview) -> list[Row]:
        return [
            (t.id, (status_cell(t.status), t.id, t.title, t.assigned_agent_id or "—", str(t.priority)))
            for t in overview.tasks
        ]
