"""Proposals, votes and decisions: `proposal.*`, `vote.cast`, `vote.list`, `decision.record`.

Handlers bind arguments and the caller to `services.governance.proposals` and `services.governance.votes`. An agent
caller acts only as itself: `Runtime.call` fills `agent_id`/`decided_by` from the principal and
refuses values naming someone else; the author check below is a second line.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Annotated, Any, Literal

from annotated_types import MaxLen
from pydantic import Field, Strict

from roundtable import clock
from roundtable.domain import ProposalStatus, Risk
from roundtable.errors import ValidationError
from roundtable.services import paging
from roundtable.services.args import (
    ITEMS_MAX,
    Args,
    Commands,
    Detail,
    Flag,
    Fraction,
    Id,
    Item,
    NewId,
    OpenProposalStatus,
    PageArgs,
    Patch,
    Positive,
    RepoPath,
    ResourceIds,
    RiskWord,
    Text,
    Title,
    VoteWord,
    identity,
)
from roundtable.services.governance import comments as comments_service
from roundtable.services.governance import proposals as service
from roundtable.services.governance import votes as votes_service
from roundtable.services.governance.gates import OPEN_STATUSES
from roundtable.services.policy.engine import ensure_policy
from roundtable.services.repository.edits import Edit, FileWrite, revision_diff
from roundtable.services.repository.patches import read_patch
from roundtable.store.records import Proposal
from roundtable.tools import views
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec, point_handler
from roundtable.tools.schema import PAGE_RESULT, RECORD, RECORDS, result, string


class EditArg(Item):
    path: RepoPath
    old_string: Text
    new_string: Text
    replace_all: Flag = False


class FileArg(Item):
    path: RepoPath
    content: Text


_EDITS = "Instead of patch: replacements, in order; each old_string occurs once (or replace_all)."
_FILES = "Instead of patch: whole contents of new or rewritten files."
Edits = Annotated[list[EditArg], MaxLen(ITEMS_MAX)]
Files = Annotated[list[FileArg], MaxLen(ITEMS_MAX)]


class CreateArgs(Args):
    task_id: Id
    agent_id: Id = Field(
        "", description="The author (default: the agent your credential names; agents may not name another)."
    )
    title: Title
    summary_md: Text = Field(description="What and why.")
    affected_resources: ResourceIds = Field(
        [], description="Resource ids beyond the touched files, e.g. directory:src."
    )
    risk: RiskWord = Field(Risk.NORMAL, description="Default normal; high and critical need a human's approval.")
    patch: Patch = Field("", description="Unified diff, git format (a/ b/ prefixes).")
    edits: Edits = Field([], description=_EDITS)
    files: Files = Field([], description=_FILES)
    expected_tests: Commands = []
    rollback_notes: Text = ""
    proposal_id: NewId = ""
    status: OpenProposalStatus = ProposalStatus.PENDING


class AttachArgs(Args):
    proposal_id: Id
    patch: Patch = Field("", description="The whole new diff against the tree.")
    edits: Edits = Field([], description="Instead of patch: replacements made on top of the current revision.")
    files: Files = Field([], description=_FILES)
    affected_resources: ResourceIds = []


async def _patch(call: Call[CreateArgs] | Call[AttachArgs], current: Proposal | None = None) -> str:
    a = call.args
    return await service.patch_text(
        call.runtime.root,
        patch=a.patch,
        edits=[Edit(e.path, e.old_string, e.new_string, e.replace_all) for e in a.edits],
        files=[FileWrite(f.path, f.content) for f in a.files],
        max_bytes=call.runtime.config.repo.max_read_bytes,
        current=current,
    )


async def prepare_create(call: Call[CreateArgs]) -> None:
    """The new proposal's patch, built (from edits/files) or taken as sent, then bounded, parsed
    and checked against git and the tree — before the write transaction opens."""
    patch = await _patch(call)
    config = call.runtime.config
    call.notes["prepared"] = await service.prepare_revision(
        call.runtime.root, patch, call.runtime.policy, config.repo.max_patch_files
    )


async def create(call: Call[CreateArgs]) -> dict[str, Any]:
    a = call.args
    agent_id = identity(a.agent_id, "agent_id", "proposal.create")
    service.check_author(call.agent_id, call.caller.is_operator, agent_id, "proposal.create")
    proposal_id = a.proposal_id or clock.new_id("P")
    prepared = call.notes.get("prepared")
    patch = prepared.text if prepared is not None else await _patch(call)
    created = await service.create(
        call.w,
        call.runtime.root,
        proposal_id=proposal_id,
        task_id=a.task_id.strip(),
        agent_id=agent_id,
        title=a.title,
        summary_md=a.summary_md,
        patch=patch,
        risk=a.risk,  # lower-case (the model reads `High` as `high`; the policy compares exactly)
        affected_resources=a.affected_resources,
        expected_tests=a.expected_tests,
        rollback_notes=a.rollback_notes,
        status=a.status,
        session_id=call.session_id,
        policy=call.runtime.policy,
        runs=call.run_hint,
        max_files=call.runtime.config.repo.max_patch_files,
        prepared=prepared,
        limits=call.runtime.config.limits,
        counted_agent=call.agent_id,
    )
    out = views.proposal_result(created)
    if a.edits or a.files:  # the diff the server built, for its author to check (a block of its own)
        out["patch"] = patch
    return out


async def prepare_attach(call: Call[AttachArgs]) -> None:
    """For an open proposal its author may revise: the new revision's patch, built on the current
    revision as a snapshot shows it and checked, before the write transaction opens (the handler
    uses it only if the revision is still current; anything else is refused there, as before)."""
    async with call.runtime.db.read() as r:
        p = await service.load(r, call.args.proposal_id)
    if p.status not in OPEN_STATUSES or (not call.caller.is_operator and call.agent_id != p.agent_id):
        return
    patch = await _patch(call, p)
    prepared = await service.prepare_revision(
        call.runtime.root, patch, call.runtime.policy, call.runtime.config.repo.max_patch_files
    )
    call.notes["prepared"] = (p.current_revision, prepared)


async def attach_patch(call: Call[AttachArgs]) -> dict[str, Any]:
    a = call.args
    p = await service.load(call.w, a.proposal_id)
    service.check_author(call.agent_id, call.caller.is_operator, p.agent_id, "proposal.attach_patch")
    noted = call.notes.get("prepared")
    prepared = noted[1] if noted is not None and noted[0] == p.current_revision else None
    out = await service.attach(
        call.w,
        call.runtime.root,
        proposal_id=p.id,
        patch=prepared.text if prepared is not None else await _patch(call, p),
        prepared=prepared,
        affected_resources=a.affected_resources,
        actor=call.actor,
        policy=call.runtime.policy,
        runs=call.run_hint,
        max_files=call.runtime.config.repo.max_patch_files,
    )
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


class CommentArgs(Args):
    proposal_id: Id
    revision: Positive | None = None
    path: RepoPath = ""
    line: Positive = Field(0, description="In the new file (side old: the old).")
    side: Literal["new", "old"] = "new"
    body_md: Annotated[Text, MaxLen(comments_service.MAX_BODY)]


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
    a = call.args
    found = call.notes["anchors"]
    made = await comments_service.add(
        call.w,
        found=found,
        revision_given=a.revision is not None,
        path=a.path.strip(),
        line=a.line,
        side=a.side,
        body_md=a.body_md,
        author=call.actor,
        is_operator=call.caller.is_operator,
        comment_id=clock.new_id("C"),
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
    page = paging.request(
        "proposal.list", [task_id, status], len(service.PROPOSAL_ORDER), limit=a.limit, cursor=a.cursor
    )
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
        ensure_policy(call.runtime.policy),
        call.args.proposal_id,
        call.actor,
        call.run_hint,
    )
    return views.proposal_result(out)


class VoteArgs(Args):
    proposal_id: Id
    agent_id: Id = Field(
        "", description="The voter (default: the agent your credential names; agents may not name another)."
    )
    vote: VoteWord
    reason_md: Text
    confidence: Fraction = Field(0.0, description="How sure you are.")
    vote_id: NewId = ""


async def vote_cast(call: Call[VoteArgs]) -> dict[str, Any]:
    a = call.args
    agent_id = identity(a.agent_id, "agent_id", "vote.cast")
    service.check_author(call.agent_id, call.caller.is_operator, agent_id, "vote.cast")
    policy = call.runtime.policy
    vote = await votes_service.cast(
        call.w,
        proposal_id=a.proposal_id,
        agent_id=agent_id,
        vote=a.vote,
        reason_md=a.reason_md,
        confidence=a.confidence,
        vote_id=a.vote_id or clock.new_id("V"),
        session_id=call.session_id,
        policy_version=getattr(policy, "version", ""),
        runs=call.run_hint,
    )
    return {"vote": views.cast_vote(vote.to_dict())}


class VoteListArgs(Args):
    proposal_id: Id
    detail: Detail = False


def vote_list(conn: sqlite3.Connection, args: VoteListArgs) -> dict[str, Any]:
    votes = votes_service.listing_on(conn, args.proposal_id)
    return {"votes": votes if args.detail else [views.vote(v, clip=False) for v in votes]}


class DecisionArgs(Args):
    decision: Text
    rationale_md: Text
    decided_by: Id = Field("", description="Who decided (default, and the only choice for agents: the caller).")
    proposal_id: Id = ""
    task_id: Id = ""
    decision_id: NewId = ""


async def decision_record(call: Call[DecisionArgs]) -> dict[str, Any]:
    a = call.args
    decided_by = identity(a.decided_by, "decided_by", "decision.record")
    service.check_author(call.agent_id, call.caller.is_operator, decided_by, "decision.record")
    decision = await service.record_decision(
        call.w,
        decision_id=a.decision_id or clock.new_id("D"),
        decision=a.decision,
        rationale_md=a.rationale_md,
        decided_by=decided_by,
        proposal_id=a.proposal_id,
        task_id=a.task_id,
        runs=call.run_hint,
    )
    return {"decision": decision.to_dict()}


TOOLS = [
    ToolSpec(
        name="proposal.create",
        description=(
            "Propose a change: a unified diff (patch), or edits/files made into one (the answer shows it). Hold write claims on every file it touches."
        ),
        args=CreateArgs,
        output_schema=result(
            {"proposal": RECORD, "proposal_resources": RECORDS, "patch": string()}, required=["proposal"]
        ),
        handler=create,
        prepare=prepare_create,
        text_fields=("patch",),
    ),
    ToolSpec(
        name="proposal.attach_patch",
        description=(
            "New revision: a whole patch, or edits/files on top of the current one (older votes go stale). Review stays requested."
        ),
        args=AttachArgs,
        output_schema=result({"proposal": RECORD, "proposal_resources": RECORDS}, required=["proposal"]),
        handler=attach_patch,
        prepare=prepare_attach,
    ),
    ToolSpec(
        name="proposal.comment",
        description=(
            "Comment on a line of a proposal's diff, a file (no line) or the proposal (no path); not your own."
        ),
        args=CommentArgs,
        output_schema=result({"comment": RECORD}, required=["comment"]),
        handler=comment,
        prepare=prepare_comment,
    ),
    ToolSpec(
        name="proposal.get",
        description=(
            "A proposal to review: what it is for, its patch (own text block), resources beyond its files, "
            "open comments. since_revision N: the change since N. detail: revisions, gates."
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
        text_fields=("patch", "revision_diff"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="proposal.list",
        description="List proposals, optionally by task_id and/or status, one page at a time.",
        args=ListArgs,
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
        description=(
            "Vote on a proposal's current revision; a new vote replaces yours. Reviewing agents only, never the author."
        ),
        args=VoteArgs,
        output_schema=result({"vote": RECORD}, required=["vote"]),
        handler=vote_cast,
    ),
    ToolSpec(
        name="vote.list",
        description=("The votes on a proposal, with their full reasons."),
        args=VoteListArgs,
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
