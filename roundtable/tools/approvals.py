"""Human approvals and security review: `human.request_approval`, `human.approval_status`,
`security.review`."""

from __future__ import annotations

from roundtable.tools.registry import ToolSpec, not_implemented
from roundtable.tools.schema import RECORD, boolean, obj, result, string

TOOLS = [
    ToolSpec(
        name="human.approval_status",
        description="Read one human approval's status.",
        input_schema=obj({"approval_id": string("Approval id, e.g. H-...")}, ["approval_id"]),
        output_schema=result({"approval": RECORD}, required=["approval"]),
        handler=not_implemented("human.approval_status"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="human.request_approval",
        description=(
            "Ask the human operator to approve something (usually a proposal). Agents may only "
            "request; deciding (status approved/denied, override_policy) is the operator's."
        ),
        input_schema=obj(
            {
                "subject": string("What needs approval."),
                "reason_md": string("Why, in Markdown."),
                "approval_id": string("Existing approval to update (operator) or explicit id."),
                "proposal_id": string("Proposal concerned."),
                "task_id": string("Task concerned."),
                "requested_by": string("Who asks."),
                "status": string("requested, approved or denied (operator only beyond requested)."),
                "decision_md": string("The operator's note."),
                "decided_by": string("Who decided."),
                "override_policy": boolean("Operator: approve despite failing policy gates."),
            },
            ["subject", "reason_md"],
        ),
        output_schema=result({"approval": RECORD}, required=["approval"]),
        handler=not_implemented("human.request_approval"),
    ),
    ToolSpec(
        name="security.review",
        description=(
            "Run the automatic security scan of a proposal's current revision (secrets, dangerous "
            "calls, sensitive paths), or record a manual review when status is given."
        ),
        input_schema=obj(
            {
                "proposal_id": string("Proposal to review."),
                "resource_id": string("Resource reviewed."),
                "review_id": string("Explicit id (default: generated)."),
                "task_id": string("Task concerned."),
                "reviewer_id": string("Reviewer (default security)."),
                "status": string("Manual verdict: approved, needs_changes or veto."),
                "summary_md": string("Summary, in Markdown."),
            }
        ),
        output_schema={"type": "object"},
        handler=not_implemented("security.review"),
        mode="none",
    ),
]
