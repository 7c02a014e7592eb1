"""Proposals, votes and decisions: `proposal.*`, `vote.cast`, `vote.list`, `decision.record`."""

from __future__ import annotations

from roundtable.tools.registry import ToolSpec, not_implemented
from roundtable.tools.schema import RECORD, RECORDS, number, obj, result, string, strings

_PROPOSAL = string("Proposal id, e.g. P-20260115T093012.123456789.")

TOOLS = [
    ToolSpec(
        name="proposal.create",
        description=(
            "Propose a change as a git-style unified diff. You must hold write or exclusive claims "
            "on every file the patch touches, and affected_resources must cover them."
        ),
        input_schema=obj(
            {
                "task_id": string("The task this change serves."),
                "agent_id": string("The author (your agent id)."),
                "title": string("Short title."),
                "summary_md": string("What and why, in Markdown."),
                "affected_resources": strings("Resource ids the patch touches, e.g. file:src/app.py."),
                "risk": string("normal, high or critical."),
                "patch": string("Unified diff (git format, a/ and b/ prefixes)."),
                "expected_tests": strings("Test commands that should pass."),
                "rollback_notes": string("How to undo the change."),
                "proposal_id": string("Explicit id (default: generated)."),
                "status": string("Initial status (default pending)."),
            },
            ["task_id", "agent_id", "title", "summary_md", "affected_resources", "risk", "patch"],
        ),
        output_schema=result({"proposal": RECORD}, required=["proposal"]),
        handler=not_implemented("proposal.create"),
    ),
    ToolSpec(
        name="proposal.attach_patch",
        description="Attach a new revision of the patch; votes and evidence for older revisions become stale.",
        input_schema=obj(
            {
                "proposal_id": _PROPOSAL,
                "patch": string("Unified diff."),
                "affected_resources": strings("Resource ids to add."),
            },
            ["proposal_id", "patch"],
        ),
        output_schema=result({"proposal": RECORD}, required=["proposal"]),
        handler=not_implemented("proposal.attach_patch"),
    ),
    ToolSpec(
        name="proposal.get",
        description="Fetch one proposal with its current revision, patch and resources.",
        input_schema=obj({"proposal_id": _PROPOSAL}, ["proposal_id"]),
        output_schema=result({"proposal": RECORD}, required=["proposal"]),
        handler=not_implemented("proposal.get"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="proposal.list",
        description="List proposals, optionally by task_id and/or status.",
        input_schema=obj({"task_id": string("Exact task id."), "status": string("Exact status.")}),
        output_schema=result({"proposals": RECORDS}),
        handler=not_implemented("proposal.list"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="proposal.request_review",
        description="Ask reviewers (by policy role) to review a proposal; moves it to in_review.",
        input_schema=obj({"proposal_id": _PROPOSAL}, ["proposal_id"]),
        output_schema={"type": "object"},
        handler=not_implemented("proposal.request_review"),
    ),
    ToolSpec(
        name="vote.cast",
        description=(
            "Vote on the current revision of a proposal: approve, approve_with_notes, revise, "
            "reject, veto or abstain. A new vote replaces your earlier vote on that revision."
        ),
        input_schema=obj(
            {
                "proposal_id": _PROPOSAL,
                "agent_id": string("The voter (your agent id)."),
                "vote": string("approve, approve_with_notes, revise, reject, veto or abstain."),
                "reason_md": string("Why, in Markdown."),
                "confidence": number("0..1."),
                "vote_id": string("Explicit id (default: generated)."),
            },
            ["proposal_id", "agent_id", "vote", "reason_md"],
        ),
        output_schema=result({"vote": RECORD}, required=["vote"]),
        handler=not_implemented("vote.cast"),
    ),
    ToolSpec(
        name="vote.list",
        description="List the votes on a proposal.",
        input_schema=obj({"proposal_id": _PROPOSAL}, ["proposal_id"]),
        output_schema=result({"votes": RECORDS}),
        handler=not_implemented("vote.list"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="decision.record",
        description="Record a decision with its rationale, optionally about a proposal or task.",
        input_schema=obj(
            {
                "decision": string("The decision."),
                "rationale_md": string("Why, in Markdown."),
                "decided_by": string("Who decided."),
                "proposal_id": _PROPOSAL,
                "task_id": string("Task id."),
                "decision_id": string("Explicit id (default: generated)."),
            },
            ["decision", "rationale_md", "decided_by"],
        ),
        output_schema=result({"decision": RECORD}, required=["decision"]),
        handler=not_implemented("decision.record"),
    ),
]
