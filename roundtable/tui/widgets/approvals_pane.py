"""Approvals: human approvals, the ones still requested first."""

from __future__ import annotations

from typing import ClassVar

from roundtable.tui import commands
from roundtable.tui.models import Overview
from roundtable.tui.timefmt import since
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell


class ApprovalsPane(TablePane):
    BINDINGS: ClassVar = commands.pane_bindings("approvals")
    kind = "approval"
    TITLE = "Approvals"
    COLUMNS = ("subject", "status", "by", "asked", "proposal")
    ELASTIC = {"subject": 24}
    ID_COLUMNS = ("proposal",)
    OPTIONAL = ("proposal", "asked", "by")
    CLOCKED = True  # "4m" ages

    def build_rows(self, overview: Overview) -> list[Row]:
        now = self.clock_ns()
        return [
            (
                a.id,
                (a.subject, status_cell(a.status), a.requested_by, since(a.created_at, now), a.proposal_id or "—"),
            )
            for a in overview.approvals
        ]
