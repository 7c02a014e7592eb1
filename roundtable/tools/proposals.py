"""Proposals, votes and decisions: `proposal.*`, `vote.cast`, `vote.list`, `decision.record`.

Handlers bind arguments and the caller to `services.governance.proposals` and `services.governance.votes`. An agent
caller acts only as itself: `Runtime.call` fills `agent_id`/`decided_by` from the principal and
refuses values naming someone else; the author check below is a second line.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from roundtable import clock
from roundtable.domain import ProposalStatus, Risk, Vote
from roundtable.errors import ValidationError
from roundtable.services import paging
from roundtable.services.coordination import quotas
from roundtable.services.governance import comments as comments_service
from roundtable.services.governance import proposals as service
from roundtable.services.governance import votes as votes_service
from roundtable.services.governance.gates import OPEN_STATUSES
from roundtable.services.policy.engine import ensure_policy
from roundtable.services.repository.edits import edits_from_args, files_from_args, revision_diff
from roundtable.services.repository.patches import read_patch
from roundtable.store.records import Proposal
from roundtable.tools import views
from roundtable.tools.args import identity, opt_float, opt_int, opt_list, opt_str, record_id
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec, point_handler
from roundtable.tools.schema import (
    PAGE_ARGS,
    PAGE_RESULT,
    RECORD,
    RECORDS,
    boolean,
    integer,
    number,
    obj,
    result,
    string,
    strings,
)
from roundtable.tools.views import DETAIL, wants_detail


async def _patch(call: Call, current: Proposal | None = None) -> str:
    args = call.args
    return await service.patch_text(
        call.runtime.root,
        patch=opt_str(args, "patch"),
        edits=edits_from_args(args.get("edits") or []),
        files=files_from_args(args.get("files") or []),
        max_bytes=call.runtime.config.repo.max_read_bytes,
        current=current,
    )


async def prepare_create(call: Call) -> None:
    """The new proposal's patch, built (from edits/files) or taken as sent, then bounded, parsed
    and checked against git and the tree — before the write transaction opens."""
    patch = await _patch(call)
    config = call.runtime.config
    call.notes["prepared"] = await service.prepare_revision(
        call.runtime.root, patch, call.runtime.policy, config.repo.max_patch_files
    )


async def create(call: Call) -> dict[str, Any]:
    args = call.args
    agent_id = identity(args, "agent_id", "proposal.create")
    service.check_author(call.agent_id, call.caller.is_operator, agent_id, "proposal.create")
    proposal_id = record_id(args, "proposal_id", clock.new_id("P"))
    prepared = call.notes.get("prepared")
    patch = prepared.text if prepared is not None else await _patch(call)
    created = await service.create(
        call.w,
        call.runtime.root,
        proposal_id=proposal_id,
        task_id=args["task_id"].strip(),
        agent_id=agent_id,
        title=args["title"],
        summary_md=args["summary_md"],
        patch=patch,
        # Stored lower-case so `High` is as high as `high` (the policy compares exactly).
        risk=opt_str(args, "risk", Risk.NORMAL).strip().lower() or Risk.NORMAL,
        affected_resources=opt_list(args, "affected_resources"),
        expected_tests=opt_list(args, "expected_tests"),
        rollback_notes=opt_str(args, "rollback_notes"),
        status=opt_str(args, "status", ProposalStatus.PENDING),
        session_id=call.session_id,
        policy=call.runtime.policy,
        runs=call.run_hint,
        max_files=call.runtime.config.repo.max_patch_files,
        prepared=prepared,
    )
    run_id = str(await call.w.scalar("SELECT run_id FROM proposals WHERE id = ?", (proposal_id,)) or "")
    await quotas.check(call.w, call.runtime.config.limits, "proposal", run_id=run_id, agent_id=call.agent_id)
    return views.proposal_result(created)


async def prepare_attach(call: Call) -> None:
    """For an open proposal its author may revise: the new revision's patch, built on the current
    revision as a snapshot shows it and checked, before the write transaction opens (the handler
    uses it only if the revision is still current; anything else is refused there, as before)."""
    async with call.runtime.db.read() as r:
        p = await service.load(r, call.args["proposal_id"])
    if p.status not in OPEN_STATUSES or (not call.caller.is_operator and call.agent_id != p.agent_id):
        return
    patch = await _patch(call, p)
    prepared = await service.prepare_revision(
        call.runtime.root, patch, call.runtime.policy, call.runtime.config.repo.max_patch_files
    )
    call.notes["prepared"] = (p.current_revision, prepared)


async def attach_patch(call: Call) -> dict[str, Any]:
    args = call.args
    p = await service.load(call.w, args["proposal_id"])
    service.check_author(call.agent_id, call.caller.is_operator, p.agent_id, "proposal.attach_patch")
    noted = call.notes.get("prepared")
    prepared = noted[1] if noted is not None and noted[0] == p.current_revision else None
    out = await service.attach(
        call.w,
        call.runtime.root,
        proposal_id=p.id,
        patch=prepared.text if prepared is not None else await _patch(call, p),
        prepared=prepared,
        affected_resources=opt_list(args, "affected_resources"),
        actor=call.actor,
        policy=call.runtime.policy,
        runs=call.run_hint,
        max_files=call.runtime.config.repo.max_patch_files,
    )
    return views.proposal_result(out)


async def get(call: Call) -> dict[str, Any]:
    """The proposal for its reader: what it is for, its resources and the current patch; with
    since_revision, only what changed since then; detail: the full records, revisions, gates and
    policy."""
    args = call.args
    out = await service.detail(call.r, call.runtime.root, call.runtime.policy, args["proposal_id"])
    since = opt_int(args, "since_revision", 0)
    if since:
        out["since_revision"] = since
        out["revision_diff"] = await _revision_diff(call, out, since)
        out["patch"] = ""
    if wants_detail(args):
        out["comments"] = [c.to_dict() for c in await comments_service.every(call.r, args["proposal_id"])]
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
        beyond = [r for r in views.resources(out.get("proposal_resources") or []) if r.get("resource_id") not in touched]
        if beyond:
            brief["proposal_resources"] = beyond
        brief["patch"] = out["patch"]
    current = int(out["proposal"].get("revision_number") or 0)
    shown = await comments_service.for_revision(call.r, args["proposal_id"], current) if current else []
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


async def _revision_diff(call: Call, out: dict[str, Any], since: int) -> str:
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


async def prepare_comment(call: Call) -> None:
    """The revision's patch read and split into numbered lines, and the place checked against it,
    before the write transaction opens (a refusal here records nothing)."""
    args = call.args
    async with call.runtime.db.read() as r:
        row = await comments_service.revision_row(r, args["proposal_id"], opt_int(args, "revision", 0))
    found = await comments_service.anchors(call.runtime.root, row)
    comments_service.check_place(found, opt_str(args, "path").strip(), opt_int(args, "line", 0), _side(args))
    call.notes["anchors"] = found


def _side(args: dict[str, Any]) -> str:
    return opt_str(args, "side", "new")


async def comment(call: Call) -> dict[str, Any]:
    args = call.args
    found = call.notes["anchors"]
    made = await comments_service.add(
        call.w,
        found=found,
        revision_given="revision" in args,
        path=opt_str(args, "path").strip(),
        line=opt_int(args, "line", 0),
        side=_side(args),
        body_md=args["body_md"],
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


async def list_(call: Call) -> dict[str, Any]:
    args = call.args
    task_id, status = opt_str(args, "task_id"), opt_str(args, "status")
    page = paging.request("proposal.list", args, [task_id, status], len(service.PROPOSAL_ORDER))
    found, more = paging.finish(
        page,
        await service.listing(call.r, task_id, status, call.scope, page),
        lambda p: (p["created_at"], p["id"]),
    )
    return {"proposals": found if wants_detail(args) else [views.proposal(p) for p in found], **more}


async def request_review(call: Call) -> dict[str, Any]:
    if call.agent_id:  # an agent asks for reviews of its own proposal only
        p = await service.load(call.w, call.args["proposal_id"])
        service.check_author(call.agent_id, False, p.agent_id, "proposal.request_review")
    out = await service.request_review(
        call.w,
        call.runtime.root,
        ensure_policy(call.runtime.policy),
        call.args["proposal_id"],
        call.actor,
        call.run_hint,
    )
    return views.proposal_result(out)


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
    return {"vote": views.cast_vote(vote.to_dict())}


def vote_list(conn: sqlite3.Connection, args: dict[str, Any]) -> dict[str, Any]:
    votes = votes_service.listing_on(conn, args["proposal_id"])
    return {"votes": votes if wants_detail(args) else [views.vote(v) for v in votes]}


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


_PROPOSAL = string()
_EDITS = {
    "type": "array",
    "description": (
        "Instead of patch: replacements the server turns into the diff. Each old_string must occur "
        "exactly once in the file (unless replace_all); edits to one file apply in order."
    ),
    "items": {
        "type": "object",
        "properties": {
            "path": string(),
            "old_string": string(),
            "new_string": string(),
            "replace_all": boolean(),
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    },
}
_FILES = {
    "type": "array",
    "description": "Instead of patch: whole new contents of new or rewritten files.",
    "items": {
        "type": "object",
        "properties": {"path": string(), "content": string()},
        "required": ["path", "content"],
        "additionalProperties": False,
    },
}

TOOLS = [
    ToolSpec(
        name="proposal.create",
        description=(
            "Propose a change as a unified diff (patch) or as edits/files the server turns into one. It must apply to the current tree and you must hold write claims on every file it touches."
        ),
        input_schema=obj(
            {
                "task_id": string(),
                "agent_id": string(
                    "The author (default: the agent your credential names; agents may not name another)."
                ),
                "title": string(),
                "summary_md": string("What and why."),
                "affected_resources": strings("Resource ids beyond the touched files, e.g. directory:src."),
                "risk": string("high and critical need a human's approval.", enum=list(Risk)),
                "patch": string("Unified diff, git format (a/ b/ prefixes)."),
                "edits": _EDITS,
                "files": _FILES,
                "expected_tests": strings(),
                "rollback_notes": string(),
                "proposal_id": string(),
                "status": string(enum=list(OPEN_STATUSES)),
            },
            ["task_id", "title", "summary_md", "affected_resources", "risk"],
        ),
        output_schema=result({"proposal": RECORD, "proposal_resources": RECORDS}, required=["proposal"]),
        handler=create,
        prepare=prepare_create,
    ),
    ToolSpec(
        name="proposal.attach_patch",
        description=(
            "New revision: a whole patch, or edits/files applied on top of the current revision. Older votes and evidence go stale."
        ),
        input_schema=obj(
            {
                "proposal_id": _PROPOSAL,
                "patch": string("The whole new diff against the tree."),
                "edits": {
                    **_EDITS,
                    "description": "Instead of patch: replacements made on top of the current revision.",
                },
                "files": _FILES,
                "affected_resources": strings(),
            },
            ["proposal_id"],
        ),
        output_schema=result({"proposal": RECORD, "proposal_resources": RECORDS}, required=["proposal"]),
        handler=attach_patch,
        prepare=prepare_attach,
    ),
    ToolSpec(
        name="proposal.comment",
        description=(
            "Comment on a line of a proposal's diff, a file (no line) or the proposal (no path); not your own."
        ),
        input_schema=obj(
            {
                "proposal_id": _PROPOSAL,
                "revision": integer(minimum=1),
                "path": string(),
                "line": integer("In the new file (side old: the old).", minimum=1),
                "side": string(enum=["new", "old"]),
                "body_md": string(maxLength=comments_service.MAX_BODY),
            },
            ["proposal_id", "body_md"],
        ),
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
        input_schema=obj(
            {
                "proposal_id": _PROPOSAL,
                "since_revision": integer(minimum=1),
                "detail": DETAIL,
            },
            ["proposal_id"],
        ),
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
        input_schema=obj(
            {
                "task_id": string("Exact task id."),
                "status": string(enum=list(ProposalStatus)),
                "detail": DETAIL,
                **PAGE_ARGS,
            }
        ),
        output_schema=result({"proposals": RECORDS, **PAGE_RESULT}),
        handler=list_,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="proposal.request_review",
        description=("Ask reviewers (by policy role) to review your proposal; it moves to in_review."),
        input_schema=obj({"proposal_id": _PROPOSAL}, ["proposal_id"]),
        output_schema={"type": "object"},
        handler=request_review,
    ),
    ToolSpec(
        name="vote.cast",
        description=(
            "Vote on a proposal's current revision; a new vote replaces yours. Reviewing agents only, never the author."
        ),
        input_schema=obj(
            {
                "proposal_id": _PROPOSAL,
                "agent_id": string(
                    "The voter (default: the agent your credential names; agents may not name another)."
                ),
                "vote": string(enum=list(Vote)),
                "reason_md": string(),
                "confidence": number("How sure you are.", minimum=0, maximum=1),
                "vote_id": string(),
            },
            ["proposal_id", "vote", "reason_md"],
        ),
        output_schema=result({"vote": RECORD}, required=["vote"]),
        handler=vote_cast,
    ),
    ToolSpec(
        name="vote.list",
        description=("The votes on a proposal (reasons cut to 300 characters unless detail)."),
        input_schema=obj({"proposal_id": _PROPOSAL, "detail": DETAIL}, ["proposal_id"]),
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
        input_schema=obj(
            {
                "decision": string(),
                "rationale_md": string(),
                "decided_by": string("Who decided (default, and the only choice for agents: the caller)."),
                "proposal_id": _PROPOSAL,
                "task_id": string(),
                "decision_id": string(),
            },
            ["decision", "rationale_md"],
        ),
        output_schema=result({"decision": RECORD}, required=["decision"]),
        handler=decision_record,
    ),
]
