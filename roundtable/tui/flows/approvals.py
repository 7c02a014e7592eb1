"""`a` approves and `x` denies the selected human approval (confirmed; a note on deny): the same
`human.request_approval` call an agent makes, decided by the operator."""

from __future__ import annotations

from typing import Any

from textual import work

from roundtable.domain import ApprovalStatus
from roundtable.store.records import HumanApproval
from roundtable.tui.base import OPERATOR_NAME, ConsoleBase
from roundtable.tui.screens.confirm import decision_dialog
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.widgets.approvals_pane import ApprovalsPane


class ApprovalFlows(ConsoleBase):
    def _selected_approval(self) -> HumanApproval | None:
        approvals = self.overview.approvals if self.overview else []
        return self.target(
            self.selected(ApprovalsPane, approvals, lambda a: a.id), what="an approval", pane="Approvals"
        )

    def action_approve(self) -> None:
        approval = self._selected_approval()
        if approval is not None:
            self._approve_flow(approval)

    @work(group="dialog", exit_on_error=False)
    async def _approve_flow(self, approval: HumanApproval) -> None:
        confirmed = await self.push_screen_wait(decision_dialog(approval, ApprovalStatus.APPROVED))
        self._after_modal()
        if confirmed:
            self._decide(approval, ApprovalStatus.APPROVED, "")

    def action_deny(self) -> None:
        approval = self._selected_approval()
        if approval is not None:
            self._deny_flow(approval)

    @work(group="dialog", exit_on_error=False)
    async def _deny_flow(self, approval: HumanApproval) -> None:
        confirmed = await self.push_screen_wait(decision_dialog(approval, ApprovalStatus.DENIED))
        self._after_modal()
        if not confirmed:
            return
        note = await self.push_screen_wait(
            PromptScreen(f"Deny {approval.id}", f"{approval.subject}\nNote (optional):", placeholder="why")
        )
        self._after_modal()
        if note is not None:
            self._decide(approval, ApprovalStatus.DENIED, note)

    @work(group="actions", exit_on_error=False)
    async def _decide(self, approval: HumanApproval, status: ApprovalStatus, note: str) -> None:
        args: dict[str, Any] = {
            "approval_id": approval.id,
            "subject": approval.subject,
            "reason_md": approval.reason_md or approval.subject,
            "status": status.value,
            "decided_by": OPERATOR_NAME,
        }
        if approval.proposal_id:
            args["proposal_id"] = approval.proposal_id
        if note:
            args["decision_md"] = note
        await self.call_tool("human.request_approval", args, success=f"{approval.id} {status}", title="approval")
