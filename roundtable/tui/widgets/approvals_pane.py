"""Approvals: human approvals, the ones still requested first. When the request under the cursor
is decided or closed elsewhere (a new revision closes its predecessor's), the cursor moves on to
the request now waiting — of the same proposal first — so `a` acts on what is left to decide."""

from __future__ import annotations

from typing import Any, ClassVar

from roundtable.domain import ApprovalStatus
from roundtable.services.views.models import Overview
from roundtable.tui import commands
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

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._waiting: set[str] = set()  # the requests still waiting at the previous rebuild
        self._left: str | None = None  # the request under the cursor that stopped waiting

    def cursor_key(self, selected: str | None, overview: Overview) -> str | None:
        waiting = [a for a in overview.approvals if a.status == ApprovalStatus.REQUESTED]
        was_waiting, self._waiting = self._waiting, {a.id for a in waiting}
        if selected is not None and selected in was_waiting and selected not in self._waiting:
            self._left = selected  # decided or closed while the cursor was on it
        if selected is None or selected != self._left:
            self._left = None  # the operator moved on by themselves
            return selected
        if not waiting:
            return selected  # nothing waits yet: stay, and move on once something does
        self._left = None
        left = next((a for a in overview.approvals if a.id == selected), None)
        same = [a for a in waiting if left is not None and a.proposal_id == left.proposal_id]
        return (same or waiting)[0].id

    def build_rows(self, overview: Overview) -> list[Row]:
        now = self.clock_ns()
        return [
            (
                a.id,
                (a.subject, status_cell(a.status), a.requested_by, since(a.created_at, now), a.proposal_id or "—"),
            )
            for a in overview.approvals
        ]
