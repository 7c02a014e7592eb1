"""Approvals: human approvals, the ones still requested first."""

from __future__ import annotations

from roundtable.tui.models import Overview
from roundtable.tui.timefmt import short_time
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell


class ApprovalsPane(TablePane):
    kind = "approval"
    TITLE = "Approvals"
    COLUMNS = ("status", "subject", "proposal", "by", "asked")
    ELASTIC = {"subject": 32}

    def build_rows(self, overview: Overview) -> list[Row]:
        return [
            (a.id, (status_cell(a.status), a.subject, a.proposal_id or "—", a.requested_by, short_time(a.created_at)))
            for a in overview.approvals
        ]
