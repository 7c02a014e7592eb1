"""The patch pipeline: `patch.validate`, `patch.apply`, `patch.reject`."""

from __future__ import annotations

from roundtable.tools.registry import ToolSpec, not_implemented
from roundtable.tools.schema import obj, string

_PROPOSAL = string("Proposal id.")

TOOLS = [
    ToolSpec(
        name="patch.validate",
        description=(
            "Check a proposal's current revision against every gate: claims, parse, resource "
            "coverage, a dry-run apply, policy, votes, human approval, security review and tests."
        ),
        input_schema=obj({"proposal_id": _PROPOSAL}, ["proposal_id"]),
        output_schema={"type": "object"},
        handler=not_implemented("patch.validate"),
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
                "transaction_id": string("Explicit transaction id (default: generated)."),
                "run_id": string("Run to record the transaction in."),
                "applied_by": string("Who applies."),
            },
            ["proposal_id"],
        ),
        output_schema={"type": "object"},
        handler=not_implemented("patch.apply"),
        mode="none",
        destructive=True,
        operator_only=True,
    ),
    ToolSpec(
        name="patch.reject",
        description="Operator only: reject an open proposal with a reason (recorded as a decision).",
        input_schema=obj(
            {
                "proposal_id": _PROPOSAL,
                "reason_md": string("Why."),
                "decision_id": string("Explicit decision id."),
                "decided_by": string("Who decides."),
            },
            ["proposal_id", "reason_md"],
        ),
        output_schema={"type": "object"},
        handler=not_implemented("patch.reject"),
        destructive=True,
        operator_only=True,
    ),
    ToolSpec(
        name="patch.rollback",
        description="Operator only: revert an applied transaction if the files still match its after-hashes.",
        input_schema=obj(
            {"transaction_id": string("Transaction to roll back."), "reason_md": string("Why.")}, ["transaction_id"]
        ),
        output_schema={"type": "object"},
        handler=not_implemented("patch.rollback"),
        mode="none",
        destructive=True,
        exposed=False,
        operator_only=True,
    ),
]
