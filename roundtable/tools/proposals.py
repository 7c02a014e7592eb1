"""Proposals, votes and decisions: `proposal.*`, `vote.cast`, `vote.list`, `decision.record`.

Handlers bind arguments and the caller to `services.proposals` and `services.votes`. An agent
caller acts only as itself: `Runtime.call` fills `agent_id`/`decided_by` from the principal and
refuses values naming someone else; the author check below is a second line.
"""

from __future__ import annotations

from typing import Any

from roundtable import clock
from roundtable.domain import ProposalStatus, Risk, Vote
from roundtable.services import proposals as service
from roundtable.services import quotas
from roundtable.services import votes as votes_service
from roundtable.services.gates import OPEN_STATUSES
from roundtable.services.policy import ensure_policy
from roundtable.tools.args import identity, opt_float, opt_list, opt_str, record_id
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, number, obj, result, string, strings


async def create(call: Call) -> dict[str, Any]:
    args = call.args
    agent_id = identity(args, "agent_id", "proposal.create")
    service.check_author(call.agent_id, call.caller.is_operator, agent_id, "proposal.create")
    proposal_id = record_id(args, "proposal_id", clock.new_id("P"))
    created = await service.create(
        call.w,
        call.runtime.root,
        proposal_id=proposal_id,
        task_id=args["task_id"].strip(),
        agent_id=agent_id,
        title=args["title"],
        summary_md=args["summary_md"],
        patch=args["patch"],
        # Stored lower-case so `High` is as high as `high` (the policy compares exactly).
        risk=opt_str(args, "risk", "normal").strip().lower() or "normal",
        affected_resources=opt_list(args, "affected_resources"),
        expected_tests=opt_list(args, "expected_tests"),
        rollback_notes=opt_str(args, "rollback_notes"),
        status=opt_str(args, "status", "pending"),
        session_id=call.session_id,
        policy=call.runtime.policy,
        runs=call.run_hint,
    )
    run_id = str(await call.w.scalar("SELECT run_id FROM proposals WHERE id = ?", (proposal_id,)) or "")
    await quotas.check(call.w, call.runtime.config.limits, "proposal", run_id=run_id, agent_id=call.agent_id)
    return created


async def attach_patch(call: Call) -> dict[str, Any]:
    args = call.args
    p = await service.load(call.w, args["proposal_id"])
    service.check_author(call.agent_id, call.caller.is_operator, p.agent_id, "proposal.attach_patch")
    return await service.attach(
        call.w,
        call.runtime.root,
        proposal_id=p.id,
        patch=args["patch"],
        affected_resources=opt_list(args, "affected_resources"),
        actor=call.actor,
        policy=call.runtime.policy,
        runs=call.run_hint,
    )


async def get(call: Call) -> dict[str, Any]:
    return await service.detail(call.r, call.runtime.root, call.runtime.policy, call.args["proposal_id"])


async def list_(call: Call) -> dict[str, Any]:
    args = call.args
    return {"proposals": await service.listing(call.r, opt_str(args, "task_id"), opt_str(args, "status"), call.scope)}


async def request_review(call: Call) -> dict[str, Any]:
    if call.agent_id:  # an agent asks for reviews of its own proposal only
        p = await service.load(call.w, call.args["proposal_id"])
        service.check_author(call.agent_id, False, p.agent_id, "proposal.request_review")
    return await service.request_review(
        call.w,
        call.runtime.root,
        ensure_policy(call.runtime.policy),
        call.args["proposal_id"],
        call.actor,
        call.run_hint,
    )


async def vote_cast(call: Call) -> dict[str, Any]:
    args = call.args
    agent_id = identity(args, "agent_id", "vote.cast")
    service.check_author(call.agent_id, call.caller.is_operator, agent_id, "vote.cast")
    policy = call.runtime.policy
    vote = await votes_service.cast(
        call.w,
        proposal_id=args["proposal_id"],
        agent_id=agent_id,
        vote=args["vote"],
        reason_md=args["reason_md"],
        confidence=opt_float(args, "confidence", 0.0),
        vote_id=record_id(args, "vote_id", clock.new_id("V")),
        session_id=call.session_id,
        policy_version=getattr(policy, "version", ""),
        runs=call.run_hint,
    )
    return {"vote": vote.to_dict()}


async def vote_list(call: Call) -> dict[str, Any]:
    return {"votes": await votes_service.listing(call.r, call.args["proposal_id"])}


async def decision_record(call: Call) -> dict[str, Any]:
    args = call.args
    decided_by = identity(args, "decided_by", "decision.record")
    service.check_author(call.agent_id, call.caller.is_operator, decided_by, "decision.record")
    decision = await service.record_decision(
        call.w,
        decision_id=record_id(args, "decision_id", clock.new_id("D")),
        decision=args["decision"],
        rationale_md=args["rationale_md"],
        decided_by=decided_by,
        proposal_id=opt_str(args, "proposal_id"),
        task_id=opt_str(args, "task_id"),
        runs=call.run_hint,
    )
    return {"decision": decision.to_dict()}


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
                "agent_id": string(
                    "The author (default: the agent your credential names; agents may not name another)."
                ),
                "title": string("Short title."),
                "summary_md": string("What and why, in Markdown."),
                "affected_resources": strings("Resource ids the patch touches, e.g. file:src/app.py."),
                "risk": string("high and critical need a human's approval.", enum=list(Risk)),
                "patch": string("Unified diff (git format, a/ and b/ prefixes)."),
                "expected_tests": strings("Test commands that should pass."),
                "rollback_notes": string("How to undo the change."),
                "proposal_id": string("Explicit id (default: generated)."),
                "status": string("Initial status (default pending).", enum=list(OPEN_STATUSES)),
            },
            ["task_id", "title", "summary_md", "affected_resources", "risk", "patch"],
        ),
        output_schema=result({"proposal": RECORD, "proposal_resources": RECORDS}, required=["proposal"]),
        handler=create,
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
        output_schema=result({"proposal": RECORD, "proposal_resources": RECORDS}, required=["proposal"]),
        handler=attach_patch,
    ),
    ToolSpec(
        name="proposal.get",
        description="Fetch one proposal with its revisions, the current patch text, resources and gate summary.",
        input_schema=obj({"proposal_id": _PROPOSAL}, ["proposal_id"]),
        output_schema=result(
            {
                "proposal": RECORD,
                "proposal_resources": RECORDS,
                "revisions": RECORDS,
                "patch": string(),
                "gates": RECORD,
            },
            required=["proposal"],
        ),
        handler=get,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="proposal.list",
        description="List proposals, optionally by task_id and/or status.",
        input_schema=obj({"task_id": string("Exact task id."), "status": string(enum=list(ProposalStatus))}),
        output_schema=result({"proposals": RECORDS}),
        handler=list_,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="proposal.request_review",
        description=(
            "Ask reviewers (by policy role) to review a proposal; moves it to in_review. Agents: only "
            "for their own proposals."
        ),
        input_schema=obj({"proposal_id": _PROPOSAL}, ["proposal_id"]),
        output_schema={"type": "object"},
        handler=request_review,
    ),
    ToolSpec(
        name="vote.cast",
        description=(
            "Vote on the current revision of a proposal: approve, approve_with_notes, revise, "
            "reject, veto or abstain. A new vote replaces your earlier vote on that revision. Only "
            "registered reviewing agents (reviewer, architect, tester, security) vote; never the author."
        ),
        input_schema=obj(
            {
                "proposal_id": _PROPOSAL,
                "agent_id": string(
                    "The voter (default: the agent your credential names; agents may not name another)."
                ),
                "vote": string(enum=list(Vote)),
                "reason_md": string("Why, in Markdown."),
                "confidence": number("How sure you are.", minimum=0, maximum=1),
                "vote_id": string("Explicit id (default: generated)."),
            },
            ["proposal_id", "vote", "reason_md"],
        ),
        output_schema=result({"vote": RECORD}, required=["vote"]),
        handler=vote_cast,
    ),
    ToolSpec(
        name="vote.list",
        description="List the votes on a proposal.",
        input_schema=obj({"proposal_id": _PROPOSAL}, ["proposal_id"]),
        output_schema=result({"votes": RECORDS}),
        handler=vote_list,
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
                "decided_by": string("Who decided (default, and the only choice for agents: the caller)."),
                "proposal_id": _PROPOSAL,
                "task_id": string("Task id."),
                "decision_id": string("Explicit id (default: generated)."),
            },
            ["decision", "rationale_md"],
        ),
        output_schema=result({"decision": RECORD}, required=["decision"]),
        handler=decision_record,
    ),
]
