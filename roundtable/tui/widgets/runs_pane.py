"""Runs: every run, newest first; the console's own run is marked."""

from __future__ import annotations

from roundtable.tui.models import Overview
from roundtable.tui.timefmt import short_time
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell


class RunsPane(TablePane):
    kind = "run"
    TITLE = "Runs"
    COLUMNS = ("", "run", "status", "started", "goal")  # the id first: a narrow pane cuts the goal
    ELASTIC = {"goal": 32}

    def build_rows(self, overview: Overview) -> list[Row]:
        current = overview.run.id if overview.run else ""
        return [
            (r.id, ("▶" if r.id == current else "", r.id, status_cell(r.status), short_time(r.started_at), r.goal))
            for r in overview.runs
        ]
