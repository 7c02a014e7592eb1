"""Runs: every run, newest first; the console's own run is marked."""

from __future__ import annotations

from typing import ClassVar

from roundtable.services.views.models import Overview
from roundtable.tui import commands
from roundtable.tui.timefmt import since
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell


class RunsPane(TablePane):
    BINDINGS: ClassVar = commands.pane_bindings("runs")
    kind = "run"
    TITLE = "Runs"
    COLUMNS = ("", "goal", "status", "started", "run")
    ELASTIC = {"goal": 24}
    ID_COLUMNS = ("run",)
    OPTIONAL = ("run", "started")
    CLOCKED = True  # "4m" ages

    def build_rows(self, overview: Overview) -> list[Row]:
        current = overview.run.id if overview.run else ""
        now = self.clock_ns()
        return [
            (r.id, ("▶" if r.id == current else "", r.goal, status_cell(r.status), since(r.started_at, now), r.id))
            for r in overview.runs
        ]
