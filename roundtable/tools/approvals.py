"""Human approvals and security review: `human.request_approval`, `human.approval_status`,
`security.review`. The arguments are declared in `services.governance.approvals` and
`services.governance.security`, which receive them whole with the caller; the rules (who may
decide, what a scan finds) live there."""

from __future__ import annotations

import sqlite3
from typing import Any

from roundtable.services.args import Args, Id
from roundtable.services.governance import approvals as approvals_service
from roundtable.services.governance import security as security_service
from roundtable.services.governance.approvals import RequestApprovalArgs
from roundtable.services.governance.evidence import Actor
from roundtable.services.governance.security import ReviewArgs
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


class ApprovalStatusArgs(Args):
    approval_id: Id


def approval_status(conn: sqlite3.Connection, args: ApprovalStatusArgs) -> dict[str, Any]:
    return {"approval": rows.get(conn, HumanApproval, args.approval_id).to_dict()}


async def request_approval(call: Call[RequestApprovalArgs]) -> dict[str, Any]:
    approval, _ = await approvals_service.record_approval(call.w, call.args, actor_of(call.caller))
    return {"approval": approval.to_dict()}


async def scan_first(call: Call[ReviewArgs]) -> None:
    """The automatic review's scan, before the write transaction opens (`ToolSpec.prepare`)."""
    call.notes["scanned"] = await security_service.scan_first(call.runtime, call.args)


async def security_review(call: Call[ReviewArgs]) -> dict[str, Any]:
    scanned = call.notes.get("scanned")
    review, findings = await security_service.review(call.w, call.args, actor_of(call.caller), scanned)
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
            "Ask the operator to approve; usually a proposal's current revision; you may refresh your own request."
        ),
        args=RequestApprovalArgs,
        rare_args=frozenset({"task_id"}),  # the proposal names its task
        output_schema=result({"approval": RECORD}, required=["approval"]),
        handler=request_approval,
        operator_args=frozenset({"status", "decision_md", "override_policy"}),
    ),
    ToolSpec(
        name="security.review",
        description=(
            "Without status: scan a proposal's current revision (secrets, dangerous calls, sensitive paths) and record the verdict. With status: a manual review (operator or security session)."
        ),
        args=ReviewArgs,
        output_schema=result({"review": RECORD, "findings": RECORDS}),
        handler=security_review,
        operator_args=frozenset({"resource_id", "review_id", "status", "summary_md"}),
        prepare=scan_first,
    ),
]
