"""`a` approves and `x` denies: on the Approvals pane, the selected request; on the Proposals pane
(or the Inspector showing a proposal), the proposal's current revision — its open request when
there is one, else a new decided record. The same `human.request_approval` call an agent
makes, decided by the operator. Approve is confirmed; deny asks for its note directly (esc
cancels)."""

from __future__ import annotations

from typing import Any

from textual import work

from roundtable import domain
from roundtable.domain import ApprovalStatus
from roundtable.services.views import entity as views
from roundtable.store.records import HumanApproval, Proposal
from roundtable.tui.base import OPERATOR_NAME
from roundtable.tui.flows.flow import Flow
from roundtable.tui.screens.confirm import decision_dialog
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.widgets.approvals_pane import ApprovalsPane


def _undecidable(approval: HumanApproval, status: str) -> str:
    """Why `approval` cannot take `status` now ("" when it can)."""
    if approval.status == ApprovalStatus.CLOSED:
        why = f" ({approval.decision_md})" if approval.decision_md else ""
        return f"{approval.id} is closed{why}: nothing left to decide."
    if approval.status == status:
        return f"{approval.id} is already {status}."
    return ""


class ApprovalFlow(Flow):
    def _approval_for(self, status: str) -> HumanApproval | Proposal | None:
        """What `a`/`x` act on: a proposal in view, else the Approvals pane's selection."""
        proposal = self.console.proposal_in_view()
        if proposal is not None:
            if not domain.is_open(proposal.status):
                self.notify(f"{proposal.title} is {proposal.status}: nothing left to decide.", severity="warning")
                return None
            return proposal
        approvals = self.console.overview.approvals if self.console.overview else []
        return self.console.target(
            self.console.selected(ApprovalsPane, approvals, lambda a: a.id),
            what="an approval (or a proposal)",
            pane="Approvals or Proposals",
            refuse=lambda a: _undecidable(a, status),
        )

    async def _open_request(self, proposal: Proposal) -> HumanApproval | None:
        async with self.console.runtime.db.read() as r:
            return await views.current_decision(r, proposal)

    def action_approve(self) -> None:
        found = self._approval_for(ApprovalStatus.APPROVED)
        if found is not None:
            self._decide_flow(found, ApprovalStatus.APPROVED)

    def action_deny(self) -> None:
        found = self._approval_for(ApprovalStatus.DENIED)
        if found is not None:
            self._decide_flow(found, ApprovalStatus.DENIED)

    @work(group="dialog", exit_on_error=False)
    async def _decide_flow(self, found: HumanApproval | Proposal, status: ApprovalStatus) -> None:
        proposal = found if isinstance(found, Proposal) else None
        approval = await self._open_request(found) if isinstance(found, Proposal) else found
        if approval is not None and approval.status == status:
            self.notify(f"{approval.id} is already {status}.", severity="warning")
            return
        if proposal is None and approval is not None and approval.proposal_id:
            proposal = next(
                (
                    row.proposal
                    for row in (self.console.overview.proposals if self.console.overview else [])
                    if row.proposal.id == approval.proposal_id
                ),
                None,
            )
        if status == ApprovalStatus.APPROVED:
            ok = await self.console.push_screen_wait(decision_dialog(approval, status, proposal))
            self.console.dialog_closed()
            if ok:
                self._decide(approval, proposal, status, "")
            return
        what = approval.id if approval is not None else f"revision {proposal.revision_number if proposal else ''}"
        title = proposal.title if proposal is not None else (approval.subject if approval else "")
        note = await self.console.push_screen_wait(
            PromptScreen(
                f"Deny {what}",
                f"{title}\nNote for the author (optional; enter denies, esc cancels):",
                placeholder="why",
            )
        )
        self.console.dialog_closed()
        if note is not None:
            self._decide(approval, proposal, status, note)

    @work(group="actions", exit_on_error=False)
    async def _decide(
        self, approval: HumanApproval | None, proposal: Proposal | None, status: ApprovalStatus, note: str
    ) -> None:
        if approval is not None:
            args: dict[str, Any] = {
                "approval_id": approval.id,
                "subject": approval.subject,
                "reason_md": approval.reason_md or approval.subject,
            }
            if approval.proposal_id:
                args["proposal_id"] = approval.proposal_id
            label = approval.id
        elif proposal is not None:
            args = {
                "subject": f"Apply {proposal.id}: {proposal.title}"[:500],
                "reason_md": "decided by the operator from the console",
                "proposal_id": proposal.id,
            }
            label = f"{proposal.title} r{proposal.revision_number}"
        else:
            return
        args.update({"status": status.value, "decided_by": OPERATOR_NAME})
        if note:
            args["decision_md"] = note
        await self.console.call_tool("human.request_approval", args, success=f"{label} {status}", title="approval")
