"""Human approvals and security review: `human.request_approval`, `human.approval_status`,
`security.review`. Handlers bind arguments and the caller to `services.governance.approvals` and
`services.governance.security`; the rules (who may decide, what a scan finds) live there."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from roundtable.services.args import Args, Flag, Id, NewId, ResourceId, Text, Title
from roundtable.services.governance import approvals as approvals_service
from roundtable.services.governance import security as security_service
from roundtable.services.governance.evidence import Actor
from roundtable.store import rows
from roundtable.store.records import HumanApproval
from roundtable.tools.context import Call, Caller
from roundtable.tools.registry import ToolSpec, point_handler
from roundtable.tools.schema import RECORD, RECORDS, result


def actor_of(caller: Caller) -> Actor:
    """The service-level view of a caller (the principal's agent; role and proposal from the
    capability on sessions)."""
    cap = caller.capability
    return Actor(
        operator=caller.is_operator,
        internal=caller.is_internal,
        name=caller.actor,
        agent_id=caller.agent_id,
        transport=caller.transport,
        session_id=caller.session_id or (cap.session_id if cap is not None else ""),
        role=cap.role if cap is not None else "",
        bound_proposal_id=cap.proposal_id if cap is not None else "",
        runs=caller.run_hint,
    )


if TYPE_CHECKING:
    ApprovalWord = str
    VerdictWord = str
else:
    ApprovalWord = Literal[approvals_service.STATUSES]
    VerdictWord = Literal[security_service.MANUAL_STATUSES]


class ApprovalStatusArgs(Args):
    approval_id: Id


def approval_status(conn: sqlite3.Connection, args: ApprovalStatusArgs) -> dict[str, Any]:
    return {"approval": rows.get(conn, HumanApproval, args.approval_id).to_dict()}


class RequestApprovalArgs(Args):
    subject: Title
    reason_md: Text
    approval_id: NewId = Field("", description="An existing request to refresh.")
    proposal_id: Id = ""
    task_id: Id = ""
    requested_by: Id | None = Field(None, description="Who asks (default: the caller).")
    status: ApprovalWord | None = Field(
        None,
        description="requested (default); operator only: approved, denied, rejected, changes_requested, deferred.",
    )
    decision_md: Text | None = Field(None, description="Operator: the decision note.")
    decided_by: Id | None = Field(None, description="Operator: who decided (default: the operator caller).")
    override_policy: Flag | None = Field(
        None, description="Operator, with status approved: also override a security veto."
    )


async def request_approval(call: Call[RequestApprovalArgs]) -> dict[str, Any]:
    a = call.args
    req = approvals_service.ApprovalInput(
        subject=a.subject,
        reason_md=a.reason_md,
        approval_id=a.approval_id,
        proposal_id=a.proposal_id,
        task_id=a.task_id,
        status=a.status,
        requested_by=a.requested_by,
        decision_md=a.decision_md,
        decided_by=a.decided_by,
        override_policy=a.override_policy,
    )
    approval, _ = await approvals_service.record_approval(call.w, req, actor_of(call.caller))
    return {"approval": approval.to_dict()}


class SecurityReviewArgs(Args):
    proposal_id: Id = ""
    resource_id: ResourceId = Field("", description="Resource reviewed (resource-only reviews: operator).")
    review_id: NewId = Field("", description="Explicit id (default: generated); an existing id is replaced (operator).")
    task_id: Id = ""
    reviewer_id: Id = Field("", description="Reviewer (default: security for scans, the caller for manual reviews).")
    status: VerdictWord | None = Field(None, description="Manual verdict.")
    summary_md: Text = Field("", description="Summary, in Markdown.")


async def security_review(call: Call[SecurityReviewArgs]) -> dict[str, Any]:
    a = call.args
    req = security_service.ReviewInput(
        proposal_id=a.proposal_id,
        resource_id=a.resource_id,
        review_id=a.review_id,
        task_id=a.task_id,
        reviewer_id=a.reviewer_id,
        status=a.status or "",
        summary_md=a.summary_md,
    )
    review, findings = await security_service.review(call.runtime, req, actor_of(call.caller))
    return {"review": review.to_dict(), "findings": [f.to_dict() for f in findings]}


TOOLS = [
    ToolSpec(
        name="human.approval_status",
        description="Read one human approval's status.",
        args=ApprovalStatusArgs,
        output_schema=result({"approval": RECORD}, required=["approval"]),
        handler=point_handler(approval_status),
        point_read=approval_status,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="human.request_approval",
        description=(
            "Ask the operator to approve something, usually a proposal's current revision. Agents may only request or refresh their own request; deciding is the operator's."
        ),
        args=RequestApprovalArgs,
        output_schema=result({"approval": RECORD}, required=["approval"]),
        handler=request_approval,
        operator_args=frozenset({"status", "decision_md", "override_policy"}),
    ),
    ToolSpec(
        name="security.review",
        description=(
            "Without status: scan a proposal's current revision (secrets, dangerous calls, sensitive paths) and record the verdict. With status: a manual review (operator or security session)."
        ),
        args=SecurityReviewArgs,
        output_schema=result({"review": RECORD, "findings": RECORDS}),
        handler=security_review,
        operator_args=frozenset({"resource_id", "review_id", "status", "summary_md"}),
        mode="none",
    ),
]
