"""Transactions: applied patches (what `R` rolls back), newest first."""

from __future__ import annotations

from typing import ClassVar

from roundtable.services.views.models import Overview
from roundtable.tui import commands
from roundtable.tui.timefmt import since
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell


class TransactionsPane(TablePane):
    BINDINGS: ClassVar = commands.pane_bindings("transactions")
    kind = "transaction"
    TITLE = "Transactions"
    COLUMNS = ("proposal", "status", "by", "at", "transaction")
    ELASTIC = {"proposal": 24}
    ID_COLUMNS = ("transaction",)
    OPTIONAL = ("transaction", "by", "at")
    CLOCKED = True  # "4m" ages

    def build_rows(self, overview: Overview) -> list[Row]:
        now = self.clock_ns()
        titles = {row.proposal.id: row.proposal.title for row in overview.proposals}
        return [
            (
                t.id,
                (
                    titles.get(t.proposal_id) or t.proposal_id,
                    status_cell(t.status),
                    t.applied_by,
                    since(t.applied_at or t.created_at, now),
                    t.id,
                ),
            )
            for t in overview.transactions
        ]
