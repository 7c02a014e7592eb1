"""Transactions: applied patches (what `R` rolls back), newest first."""

from __future__ import annotations

from roundtable.tui.models import Overview
from roundtable.tui.timefmt import short_time
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell


class TransactionsPane(TablePane):
    kind = "transaction"
    TITLE = "Transactions"
    COLUMNS = ("status", "transaction", "proposal", "by", "at")

    def build_rows(self, overview: Overview) -> list[Row]:
        return [
            (t.id, (status_cell(t.status), t.id, t.proposal_id, t.applied_by, short_time(t.applied_at or t.created_at)))
            for t in overview.transactions
        ]
