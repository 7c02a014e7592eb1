"""The patch pipeline: `patch.validate`, `patch.apply`, `patch.reject`, and the operator's
unexposed `patch.rollback`. The work lives in `services.applying.validate`, `services.applying.apply`,
`services.applying.rollback` and `services.governance.proposals`; apply and rollback manage their own transactions (mode `none`)."""

from __future__ import annotations

from typing import Any

from roundtable import clock
from roundtable.services.applying import apply as apply_service
from roundtable.services.applying import rollback as rollback_service
from roundtable.services.applying.validate import validate as validate_proposal
from roundtable.services.governance import proposals as proposals_service
from roundtable.store.records import HumanApproval, SecurityReview
from roundtable.tools import views
from roundtable.tools.args import opt_str, record_id
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import obj, string
from roundtable.tools.views import DETAIL, wants_detail


async def validate(call: Call) -> dict[str, Any]:
    out = await validate_proposal(call.runtime, call.args["proposal_id"], actor=call.actor, runs=call.run_hint)
    if wants_detail(call.args):
        return out
    out = views.proposal_result(out)
    out["votes"] = [views.vote(v) for v in out.get("votes", [])]
    out["test_runs"] = [views.test_run_summary(t) for t in out.get("test_runs", [])]
    out["human_approvals"] = [views.approval(a) for a in out.get("human_approvals", [])]
    out["security_reviews"] = [views.review(r) for r in out.get("security_reviews", [])]
    for key, slim in (("human_approval", views.approval), ("security_review", views.review)):
        if isinstance(out.get(key), dict):
            out[key] = slim(out[key])
    return out


async def apply(call: Call) -> dict[str, Any]:
    args = call.args
    out = await apply_service.apply_proposal(
        call.runtime,
        args["proposal_id"],
        transaction_id=record_id(args, "transaction_id"),
        run_id=opt_str(args, "run_id"),
        applied_by=opt_str(args, "applied_by", call.actor),
        expected_revision=opt_str(args, "revision"),
        runs=call.run_hint,
    )
    meta = out["metadata"]
    async with call.runtime.db.read() as r:
        approval = await r.one(
            HumanApproval, "SELECT * FROM human_approvals WHERE id = ?", (meta.get("human_approval_id", ""),)
        )
        review = await r.one(
            SecurityReview, "SELECT * FROM security_reviews WHERE id = ?", (meta.get("security_review_id", ""),)
        )
    return {
        "proposal": proposals_service.proposal_dict(out["proposal"]),
        "transaction": out["transaction"].to_dict(),
        "policy": meta.get("policy", {"summary": meta.get("policy_summary", "")}),
        "human_approval": approval.to_dict() if approval else None,
        "security_review": review.to_dict() if review else None,
    }


async def reject(call: Call) -> dict[str, Any]:
    args = call.args
    return await proposals_service.reject(
        call.w,
        proposal_id=args["proposal_id"],
        reason_md=args["reason_md"],
        decision_id=record_id(args, "decision_id", clock.new_id("D")),
        decided_by=opt_str(args, "decided_by", call.actor),
        runs=call.run_hint,
    )


async def rollback(call: Call) -> dict[str, Any]:
    args = call.args
    out = await rollback_service.rollback_transaction(
        call.runtime,
        args["transaction_id"],
        reason=opt_str(args, "reason_md", "operator rollback"),
        caller=call.actor,
    )
    return {
        "transaction": out["transaction"].to_dict() if out["transaction"] else None,
        "proposal": proposals_service.proposal_dict(out["proposal"]) if out["proposal"] else None,
    }


_PROPOSAL = string()

TOOLS = [
    ToolSpec(
        name="patch.validate",
        description=(
            "Check a proposal's current revision against every gate (claims, parse, dry-run apply, policy, votes, approval, security, tests); votes and test runs summarised unless detail."
        ),
        input_schema=obj({"proposal_id": _PROPOSAL, "detail": DETAIL}, ["proposal_id"]),
        output_schema={"type": "object"},
        handler=validate,
        mode="none",
        read_only=True,
    ),
    ToolSpec(
        name="patch.apply",
        description=(
            "Operator only: re-check every gate and apply the proposal's current revision with a "
            "transaction record and a rollback artefact."
        ),
        input_schema=obj(
            {
                "proposal_id": _PROPOSAL,
                "transaction_id": string(),
                "run_id": string("Run to record the transaction in."),
                "applied_by": string("Who applies."),
                "revision": string("The revision (sha256) the operator reviewed; refused if it is no longer current."),
            },
            ["proposal_id"],
        ),
        output_schema={"type": "object"},
        handler=apply,
        mode="none",
        destructive=True,
        audience="mcp-operator",
    ),
    ToolSpec(
        name="patch.reject",
        description="Operator only: reject an open proposal with a reason (recorded as a decision).",
        input_schema=obj(
            {
                "proposal_id": _PROPOSAL,
                "reason_md": string(),
                "decision_id": string(),
                "decided_by": string("Who decides."),
            },
            ["proposal_id", "reason_md"],
        ),
        output_schema={"type": "object"},
        handler=reject,
        destructive=True,
        audience="mcp-operator",
    ),
    ToolSpec(
        name="patch.rollback",
        description="Operator only: revert an applied transaction if the files still match its after-hashes.",
        input_schema=obj(
            {"transaction_id": string("Transaction to roll back."), "reason_md": string()}, ["transaction_id"]
        ),
        output_schema={"type": "object"},
        handler=rollback,
        mode="none",
        destructive=True,
        audience="operator",
    ),
]
