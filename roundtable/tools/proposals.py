"""Proposals, votes and decisions: `proposal.*`, `vote.cast`, `vote.list`, `decision.record`.

The arguments are declared beside the services that take them (`services.governance.proposals`,
`.votes`, `.comments`); handlers pass the validated model on whole, with the caller. An agent
caller acts only as itself: `Runtime.call` fills `agent_id`/`decided_by` from the principal and
refuses values naming someone else; the author check below is a second line.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Annotated, Any

from pydantic import Field, Strict

from roundtable.domain import ProposalStatus
from roundtable.errors import ValidationError
from roundtable.services import paging
from roundtable.services.args import Args, Detail, Id, PageArgs, Positive
from roundtable.services.governance import comments as comments_service
from roundtable.services.governance import proposals as service
from roundtable.services.governance import votes as votes_service
from roundtable.services.governance.comments import CommentArgs
from roundtable.services.governance.gates import OPEN_STATUSES
from roundtable.services.governance.proposals import AttachArgs, CreateArgs, DecisionArgs
from roundtable.services.governance.votes import VoteArgs, VoteListArgs
from roundtable.services.repository.edits import revision_diff
from roundtable.services.repository.patches import ParsedPatch, read_patch
from roundtable.store.records import Proposal
from roundtable.tools import views
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec, point_handler
from roundtable.tools.schema import PAGE_RESULT, RECORD, RECORDS, result, string


async def _revision(call: Call[CreateArgs] | Call[AttachArgs], current: Proposal | None = None) -> ParsedPatch:
    """The revision a create or attach call gives: its patch, or the one built from its edits and
    files (on top of `current`'s revision for an attach), bounded, parsed and checked."""
    patch = await service.patch_text(call.runtime, call.args, current)
    return await service.prepare_revision(call.runtime, patch)


async def prepare_create(call: Call[CreateArgs]) -> None:
    """The new proposal's revision, before the write transaction opens."""
    call.notes["prepared"] = await _revision(call)


async def create(call: Call[CreateArgs]) -> dict[str, Any]:
    service.check_author(call.agent_id, call.caller.is_operator, call.args.agent_id, "proposal.create")
    revision = call.notes.get("prepared") or await _revision(call)
    created = await service.create(
        call.w,
        call.runtime,
        call.args,
        revision,
        session_id=call.session_id,
        runs=call.run_hint,
        counted_agent=call.agent_id,
    )
    out = views.proposal_result(created)
    if call.args.edits or call.args.files:  # the diff the server built, for its author to check (a block of its own)
        out["patch"] = revision.text
    return out


async def prepare_attach(call: Call[AttachArgs]) -> None:
    """For an open proposal its author may revise: the new revision, built on the current
    revision as a snapshot shows it and checked, before the write transaction opens (the handler
    uses it only if the revision is still current; anything else is refused there, as before)."""
    async with call.runtime.db.read() as r:
        p = await service.load(r, call.args.proposal_id)
    if p.status not in OPEN_STATUSES or (not call.caller.is_operator and call.agent_id != p.agent_id):
        return
    call.notes["prepared"] = (p.current_revision, await _revision(call, p))


async def attach_patch(call: Call[AttachArgs]) -> dict[str, Any]:
    p = await service.load(call.w, call.args.proposal_id)
    service.check_author(call.agent_id, call.caller.is_operator, p.agent_id, "proposal.attach_patch")
    noted = call.notes.get("prepared")
    revision = noted[1] if noted is not None and noted[0] == p.current_revision else await _revision(call, p)
    out = await service.attach(call.w, call.runtime, call.args, revision, actor=call.actor, runs=call.run_hint)
    return views.proposal_result(out)


class GetArgs(Args):
    proposal_id: Id
    since_revision: Positive | None = None
    detail: Detail = False


async def get(call: Call[GetArgs]) -> dict[str, Any]:
    """The proposal for its reader: what it is for, its resources and the current patch; with
    since_revision, only what changed since then; detail: the full records, revisions, gates and
    policy."""
    a = call.args
    out = await service.detail(call.r, call.runtime.root, call.runtime.policy, a.proposal_id)
    since = a.since_revision
    if since:
        out["since_revision"] = since
        out["revision_diff"] = await _revision_diff(call, out, since)
        out["patch"] = ""
    if a.detail:
        out["comments"] = [c.to_dict() for c in await comments_service.every(call.r, a.proposal_id)]
        return out
    brief: dict[str, Any]
    if since:
        brief = {
            "proposal": views.proposal_brief(out["proposal"], views.PROPOSAL_REVISED),
            "since_revision": since,
            "revision_diff": out["revision_diff"],
        }
    else:
        revisions = out.get("revisions") or []
        touched = {f"file:{path}" for path in _files(revisions[-1])} if revisions else set()
        brief = {"proposal": views.proposal_brief(out["proposal"])}
        # The patch names its own files: resources are listed only when they reach beyond them.
        beyond = [
            r for r in views.resources(out.get("proposal_resources") or []) if r.get("resource_id") not in touched
        ]
        if beyond:
            brief["proposal_resources"] = beyond
        brief["patch"] = out["patch"]
    current = int(out["proposal"].get("revision_number") or 0)
    shown = await comments_service.for_revision(call.r, a.proposal_id, current) if current else []
    if shown:  # the open comments (on the current revision), only when there are any
        brief["comments"] = [comments_service.summary(c) for c in shown]
    if out.get("patch_error"):
        brief["patch_error"] = out["patch_error"]
    return brief


def _files(revision: dict[str, Any]) -> list[str]:
    try:
        files = json.loads(str(revision.get("touched_files_json") or "[]"))
    except ValueError:
        return []
    return [str(f) for f in files] if isinstance(files, list) else []


async def _revision_diff(call: Call[GetArgs], out: dict[str, Any], since: int) -> str:
    """The change from revision `since` to the current one, as a diff of the files."""
    revisions = out.get("revisions", [])
    older = next((r for r in revisions if r.get("number") == since), None)
    current = revisions[-1] if revisions else None
    if older is None or current is None:
        raise ValidationError(f"proposal.get: since_revision {since}: the proposal has revisions 1 to {len(revisions)}")
    if older is current:
        return ""
    root = call.runtime.root
    older_text = read_patch(root, str(older["sha256"]))
    current_text = read_patch(root, str(current["sha256"]))
    paths = tuple(dict.fromkeys([*_files(older), *_files(current)]))
    return await revision_diff(root, older_text, current_text, paths, max_bytes=call.runtime.config.repo.max_read_bytes)


async def prepare_comment(call: Call[CommentArgs]) -> None:
    """The revision's patch read and split into numbered lines, and the place checked against it,
    before the write transaction opens (a refusal here records nothing)."""
    a = call.args
    async with call.runtime.db.read() as r:
        row = await comments_service.revision_row(r, a.proposal_id, a.revision or 0)
    found = await comments_service.anchors(call.runtime.root, row)
    comments_service.check_place(found, a.path.strip(), a.line, a.side)
    call.notes["anchors"] = found


async def comment(call: Call[CommentArgs]) -> dict[str, Any]:
    made = await comments_service.add(
        call.w,
        call.notes["anchors"],
        call.args,
        author=call.actor,
        is_operator=call.caller.is_operator,
        session_id=call.session_id,
        runs=call.run_hint,
    )
    return {
        "comment": {
            "id": made.id,
            "revision": made.revision,
            "at": comments_service.place(made.path, made.line, made.side),
        }
    }


class ListArgs(PageArgs):
    task_id: Id = Field("", description="Exact task id.")
    status: Annotated[ProposalStatus, Strict(False)] | None = None
    detail: Detail = False


async def list_(call: Call[ListArgs]) -> dict[str, Any]:
    a = call.args
    task_id, status = a.task_id, a.status or ""
    page = paging.request("proposal.list", [task_id, status], len(service.PROPOSAL_ORDER), a)
    found, more = paging.finish(
        page,
        await service.listing(call.r, task_id, status, call.scope, page),
        lambda p: (p["created_at"], p["id"]),
    )
    return {"proposals": found if a.detail else [views.proposal(p) for p in found], **more}


class ProposalArgs(Args):
    proposal_id: Id


async def request_review(call: Call[ProposalArgs]) -> dict[str, Any]:
    if call.agent_id:  # an agent asks for reviews of its own proposal only
        p = await service.load(call.w, call.args.proposal_id)
        service.check_author(call.agent_id, False, p.agent_id, "proposal.request_review")
    out = await service.request_review(
        call.w,
        call.runtime.root,
        call.runtime.policy,
        call.args.proposal_id,
        call.actor,
        call.run_hint,
    )
    # What the author acts on: where the proposal stands and who reviews it (the gates in full are
    # patch_validate's).
    return {
        "proposal": views.proposal_brief(out["proposal"], views.PROPOSAL_REVISED),
        "review_roles": out["review_roles"],
        "reviewers": [r.get("agent_id") or f"(no {r['role']})" for r in out["reviewers"]],
        "human_approval_required": out["human_approval_required"],
        "security_review_required": out["security_review_required"],
    }


async def vote_cast(call: Call[VoteArgs]) -> dict[str, Any]:
    service.check_author(call.agent_id, call.caller.is_operator, call.args.agent_id, "vote.cast")
    policy_version = getattr(call.runtime.policy, "version", "")
    vote = await votes_service.cast(
        call.w, call.args, session_id=call.session_id, policy_version=policy_version, runs=call.run_hint
    )
    return {"vote": views.cast_vote(vote.to_dict())}


def vote_list(conn: sqlite3.Connection, args: VoteListArgs) -> dict[str, Any]:
    votes = votes_service.listing_on(conn, args.proposal_id)
    return {"votes": votes if args.detail else [views.vote(v, clip=False) for v in votes]}


async def decision_record(call: Call[DecisionArgs]) -> dict[str, Any]:
    service.check_author(call.agent_id, call.caller.is_operator, call.args.decided_by, "decision.record")
    decision = await service.record_decision(call.w, call.args, runs=call.run_hint)
    return {"decision": decision.to_dict()}


TOOLS = [
    ToolSpec(
        name="proposal.create",
        description=(
            "Propose a change: a unified diff (patch), or edits/files made into one (the answer shows it). Hold write claims on every file it touches."
        ),
        args=CreateArgs,
        agent_view=views.proposal_made_for_agent,
        output_schema=result(
            {"proposal": RECORD, "proposal_resources": RECORDS, "patch": string()}, required=["proposal"]
        ),
        handler=create,
        rare_args=frozenset({"proposal_id", "status", "expected_tests", "rollback_notes"}),
        prepare=prepare_create,
        text_fields=("patch",),
    ),
    ToolSpec(
        name="proposal.attach_patch",
        description=(
            "New revision: a whole patch, or edits/files on top of the current one (older votes go stale). Review stays requested."
        ),
        args=AttachArgs,
        agent_view=views.proposal_made_for_agent,
        output_schema=result({"proposal": RECORD, "proposal_resources": RECORDS}, required=["proposal"]),
        handler=attach_patch,
        prepare=prepare_attach,
    ),
    ToolSpec(
        name="proposal.comment",
        description=("Comment on a diff line, a file (no line) or the proposal (no path); not on your own."),
        args=CommentArgs,
        rare_args=frozenset({"revision"}),  # the current one
        output_schema=result({"comment": RECORD}, required=["comment"]),
        handler=comment,
        prepare=prepare_comment,
    ),
    ToolSpec(
        name="proposal.get",
        description=(
            "A proposal and its diff; its purpose, extra resources and open comments too; since_revision N: "
            "only the change since N."
        ),
        args=GetArgs,
        output_schema=result(
            {
                "proposal": RECORD,
                "proposal_resources": RECORDS,
                "revisions": RECORDS,
                "patch": string(),
                "revision_diff": string(),
                "gates": RECORD,
                "comments": RECORDS,
            },
            required=["proposal"],
        ),
        handler=get,
        rare_args=frozenset({"detail"}),  # the full records (revisions, gates): seldom what a reader acts on
        text_fields=("patch", "revision_diff"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="proposal.list",
        description="Proposals by task_id and/or status, a page at a time.",
        args=ListArgs,
        rare_args=frozenset({"detail"}),
        output_schema=result({"proposals": RECORDS, **PAGE_RESULT}),
        handler=list_,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="proposal.request_review",
        description=("Ask reviewers (by policy role) to review your proposal; it moves to in_review."),
        args=ProposalArgs,
        output_schema={"type": "object"},
        handler=request_review,
    ),
    ToolSpec(
        name="vote.cast",
        description="Vote on a proposal's current revision; a new vote replaces yours; never on your own.",
        args=VoteArgs,
        output_schema=result({"vote": RECORD}, required=["vote"]),
        handler=vote_cast,
        rare_args=frozenset({"vote_id"}),
    ),
    ToolSpec(
        name="vote.list",
        description=("The votes on a proposal, reasons in full."),
        args=VoteListArgs,
        rare_args=frozenset({"detail"}),
        output_schema=result({"votes": RECORDS}),
        handler=point_handler(vote_list),
        point_read=vote_list,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="decision.record",
        description=("Record a decision and its rationale, optionally about a proposal or task."),
        args=DecisionArgs,
        output_schema=result({"decision": RECORD}, required=["decision"]),
        handler=decision_record,
    ),
]
