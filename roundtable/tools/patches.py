"""The patch pipeline: `patch.validate`, `patch.apply`, `patch.reject`, and the operator's
unexposed `patch.rollback`. The work lives in `services.applying.validate`, `services.applying.apply`,
`services.applying.rollback` and `services.governance.proposals`; apply and rollback manage their own transactions (mode `none`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from roundtable.services.applying import apply as apply_service
from roundtable.services.applying import rollback as rollback_service
from roundtable.services.applying.apply import ApplyArgs
from roundtable.services.applying.validate import validate as validate_proposal
from roundtable.services.args import Args, Detail, Id, Text
from roundtable.services.governance import proposals as proposals_service
from roundtable.services.governance.proposals import RejectArgs
from roundtable.store.records import HumanApproval, SecurityReview
from roundtable.tools import views
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec


class ProposalArgs(Args):
    proposal_id: Id
    detail: Detail = False


async def validate(call: Call[ProposalArgs]) -> dict[str, Any]:
    out = await validate_proposal(call.runtime, call.args.proposal_id, actor=call.actor, runs=call.run_hint)
    if call.args.detail:
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


async def apply(call: Call[ApplyArgs]) -> dict[str, Any]:
    out = await apply_service.apply_proposal(call.runtime, call.args, actor=call.actor, runs=call.run_hint)
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
        "landing": _landed(meta.get("landing") or {}),
    }


def _landed(land: dict[str, Any]) -> dict[str, Any]:
    """What the apply left in git, for the result (`summary`: one line for people)."""
    mode = str(land.get("mode") or "working-tree")
    out: dict[str, Any] = {"mode": mode}
    for key in ("ref", "commit", "pr_number", "pr_url"):
        if land.get(key):
            out[key] = land[key]
    branch = str(land.get("ref", "")).removeprefix("refs/heads/")
    if mode in ("commit", "branch"):
        out["summary"] = f"commit {str(land.get('commit', ''))[:12]} on {branch}"
    elif mode == "pull-request":
        out["summary"] = f"merged pull request #{land.get('pr_number')} ({land.get('pr_url', '')})"
    else:
        out["summary"] = "changes written to the working tree, uncommitted"
    return out


async def reject(call: Call[RejectArgs]) -> dict[str, Any]:
    return await proposals_service.reject(call.w, call.args, actor=call.actor, runs=call.run_hint)


class RollbackArgs(Args):
    transaction_id: Id = Field(description="Transaction to roll back.")
    reason_md: Text = ""
    reset: bool = Field(
        False,
        description="A committed landing with nothing built on it: move the branch back instead of adding a revert commit.",
    )


async def rollback(call: Call[RollbackArgs]) -> dict[str, Any]:
    a = call.args
    out = await rollback_service.rollback_transaction(
        call.runtime,
        a.transaction_id,
        reason=a.reason_md or "operator rollback",
        caller=call.actor,
        reset=a.reset,
    )
    return {
        "transaction": out["transaction"].to_dict() if out["transaction"] else None,
        "proposal": proposals_service.proposal_dict(out["proposal"]) if out["proposal"] else None,
    }


TOOLS = [
    ToolSpec(
        name="patch.validate",
        description=(
            "Check a proposal's current revision against every gate (claims, apply, policy, votes, approval, security, tests)."
        ),
        args=ProposalArgs,
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
        args=ApplyArgs,
        output_schema={"type": "object"},
        handler=apply,
        mode="none",
        destructive=True,
        audience="mcp-operator",
    ),
    ToolSpec(
        name="patch.reject",
        description="Operator only: reject an open proposal with a reason (recorded as a decision).",
        args=RejectArgs,
        output_schema={"type": "object"},
        handler=reject,
        destructive=True,
        audience="mcp-operator",
    ),
    ToolSpec(
        name="patch.rollback",
        description="Operator only: revert an applied transaction if the files still match its after-hashes.",
        args=RollbackArgs,
        output_schema={"type": "object"},
        handler=rollback,
        mode="none",
        destructive=True,
        audience="operator",
    ),
]
