"""Human approvals and security review: `human.request_approval`, `human.approval_status`,
`security.review`. Handlers bind arguments and the caller to `services.governance.approvals` and
`services.governance.security`; the rules (who may decide, what a scan finds) live there."""

from __future__ import annotations

import sqlite3
from typing import Any

from roundtable.services.governance import approvals as approvals_service
from roundtable.services.governance import security as security_service
from roundtable.services.governance.evidence import Actor
from roundtable.store import rows
from roundtable.store.records import HumanApproval
from roundtable.tools.args import opt_str, record_id
from roundtable.tools.context import Call, Caller
from roundtable.tools.registry import ToolSpec, point_handler
from roundtable.tools.schema import RECORD, RECORDS, boolean, obj, result, string


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


def _given(args: dict[str, Any], key: str) -> str | None:
    """An optional string argument, `None` when absent or empty."""
    value = args.get(key)
    return value if isinstance(value, str) and value != "" else None


def approval_status(conn: sqlite3.Connection, args: dict[str, Any]) -> dict[str, Any]:
    return {"approval": rows.get(conn, HumanApproval, args["approval_id"]).to_dict()}


async def request_approval(call: Call) -> dict[str, Any]:
    args = call.args
    override = args.get("override_policy")
    req = approvals_service.ApprovalInput(
        subject=args["subject"],
        reason_md=args["reason_md"],
        approval_id=record_id(args, "approval_id"),
        proposal_id=opt_str(args, "proposal_id"),
        task_id=opt_str(args, "task_id"),
        status=_given(args, "status"),
        requested_by=_given(args, "requested_by"),
        decision_md=_given(args, "decision_md"),
        decided_by=_given(args, "decided_by"),
        override_policy=override if isinstance(override, bool) else None,
    )
    approval, _ = await approvals_service.record_approval(call.w, req, actor_of(call.caller))
    return {"approval": approval.to_dict()}


async def security_review(call: Call) -> dict[str, Any]:
    args = call.args
    req = security_service.ReviewInput(
        proposal_id=opt_str(args, "proposal_id"),
        resource_id=opt_str(args, "resource_id"),
        review_id=record_id(args, "review_id"),
        task_id=opt_str(args, "task_id"),
        reviewer_id=opt_str(args, "reviewer_id"),
        status=opt_str(args, "status"),
        summary_md=opt_str(args, "summary_md"),
    )
    review, findings = await security_service.review(call.runtime, req, actor_of(call.caller))
    return {"review": review.to_dict(), "findings": [f.to_dict() for f in findings]}


TOOLS = [
    ToolSpec(
        name="human.approval_status",
        description="Read one human approval's status.",
        input_schema=obj({"approval_id": string()}, ["approval_id"]),
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
        input_schema=obj(
            {
                "subject": string(),
                "reason_md": string(),
                "approval_id": string("An existing request to refresh."),
                "proposal_id": string(),
                "task_id": string(),
                "requested_by": string("Who asks (default: the caller)."),
                "status": string(
                    "requested (default); operator only: approved, denied, rejected, changes_requested, deferred.",
                    enum=list(approvals_service.STATUSES),
                ),
                "decision_md": string("Operator: the decision note."),
                "decided_by": string("Operator: who decided (default: the operator caller)."),
                "override_policy": boolean("Operator, with status approved: also override a security veto."),
            },
            ["subject", "reason_md"],
        ),
        output_schema=result({"approval": RECORD}, required=["approval"]),
        handler=request_approval,
        operator_args=frozenset({"status", "decision_md", "override_policy"}),
    ),
    ToolSpec(
        name="security.review",
        description=(
            "Without status: scan a proposal's current revision (secrets, dangerous calls, sensitive paths) and record the verdict. With status: a manual review (operator or security session)."
        ),
        input_schema=obj(
            {
                "proposal_id": string(),
                "resource_id": string("Resource reviewed (resource-only reviews: operator)."),
                "review_id": string("Explicit id (default: generated); an existing id is replaced (operator)."),
                "task_id": string(),
                "reviewer_id": string("Reviewer (default: security for scans, the caller for manual reviews)."),
                "status": string("Manual verdict.", enum=list(security_service.MANUAL_STATUSES)),
                "summary_md": string("Summary, in Markdown."),
            }
        ),
        output_schema=result({"review": RECORD, "findings": RECORDS}),
        handler=security_review,
        operator_args=frozenset({"resource_id", "review_id", "status", "summary_md"}),
        mode="none",
    ),
]
