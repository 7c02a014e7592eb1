"""Security reviews: the automatic scan of a proposal's current
revision, and manual reviews.

Who may do what (our decision; the reference lets any caller write `approved`):
- anyone may run the automatic scan of a proposal — its verdict is computed here, not asserted,
  so the caller's identity only goes into the event;
- a manual review (a `status` given) is recorded by the operator, or by a security-role
  capability session for the proposal it is bound to; never by the proposal's author;
- a resource-only review has no scan to run, so it is a manual review (operator only).

Every proposal review records the revision it examined. The scan (`scan_first`, the operation's
`prepare`) reads the patch and runs in a worker thread before the write transaction opens; the
row is written in the call's transaction (`review`) only if the proposal still has that
revision, so a review can never claim to cover a patch it did not see.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import anyio
from pydantic import Field

from roundtable import clock
from roundtable.domain import EventType, ReviewStatus
from roundtable.errors import PermissionDenied, ToolError, ValidationError
from roundtable.services.args import Args, Id, NewId, ResourceId, Text
from roundtable.services.governance.evidence import Actor, ProposalRef, proposal_ref, read_revision_patch
from roundtable.services.governance.security_scan import (
    Finding,
    ScanResult,
    scan_patch,
)
from roundtable.services.repository.pathguard import is_sensitive_path
from roundtable.services.run_scope import resolve, task_run
from roundtable.store.db import Reader, Tx
from roundtable.store.records import SecurityReview

if TYPE_CHECKING:
    from roundtable.services.project import Project

MANUAL_STATUSES: tuple[str, ...] = tuple(ReviewStatus)
DEFAULT_REVIEWER = "security"
RECORDED = "Security review recorded."


if TYPE_CHECKING:
    VerdictWord = str
else:
    VerdictWord = Literal[MANUAL_STATUSES]


class ReviewArgs(Args):
    # `security.review` (an empty string: not given).
    proposal_id: Id = ""
    resource_id: ResourceId = Field(default="", description="Resource reviewed (resource-only reviews: operator).")
    review_id: NewId = Field(
        default="", description="Explicit id (default: generated); an existing id is replaced (operator)."
    )
    task_id: Id = ""
    reviewer_id: Id = Field(
        default="", description="Reviewer (default: security for scans, the caller for manual reviews)."
    )
    status: VerdictWord | None = Field(default=None, description="Manual verdict.")
    summary_md: Text = Field(default="", description="Summary, in Markdown.")


async def get_review(q: Reader | Tx, review_id: str) -> SecurityReview:
    row = await q.get(SecurityReview, review_id)
    return row


def _check_manual_authority(req: ReviewArgs, actor: Actor, proposal: ProposalRef | None) -> None:
    if actor.operator:
        return
    if actor.role == "security" and proposal is not None and actor.bound_proposal_id == proposal.id:
        if proposal.agent_id and proposal.agent_id == actor.agent_id:
            raise PermissionDenied("an agent cannot review its own proposal")
        return
    if not req.proposal_id:
        raise PermissionDenied("resource-only security reviews are recorded by the operator")
    raise PermissionDenied(
        "a manual security review (status) is recorded by the operator or the proposal's security "
        "session; call security.review without status to run the automatic scan"
    )


def _reviewer(req: ReviewArgs, actor: Actor, manual: bool) -> str:
    if not actor.operator:
        if actor.agent_id and req.reviewer_id and req.reviewer_id != actor.agent_id:
            raise PermissionDenied("argument reviewer_id does not match the caller")
        if manual:
            return actor.agent_id or actor.name
        return DEFAULT_REVIEWER
    return req.reviewer_id or (actor.name if manual else DEFAULT_REVIEWER)


async def run_scan(runtime: Project, proposal: ProposalRef) -> ScanResult:
    """Scan the proposal's current revision (file read and regexes in a worker thread)."""
    root = runtime.root
    policy = runtime.policy
    commands = policy.dangerous_commands
    high_risk = policy.is_high_risk
    sensitive = is_sensitive_path

    def work() -> ScanResult:
        text = read_revision_patch(root, proposal)
        return scan_patch(text, dangerous_commands=commands, is_sensitive=sensitive, is_high_risk=high_risk)

    return await anyio.to_thread.run_sync(work)


@dataclass(frozen=True)
class Scanned:
    """What the automatic scan saw before the write: the proposal's revision and its verdict."""

    seen: ProposalRef
    scan: ScanResult


def is_manual(req: ReviewArgs) -> bool:
    """A review with a status, or of a resource only: recorded as given, no scan."""
    return bool(req.status) or not req.proposal_id


async def scan_first(project: Project, req: ReviewArgs) -> Scanned | None:
    """The automatic review's scan, before any write (None for a manual review): the proposal's
    revision as a snapshot shows it, and the scan of its patch on a worker thread."""
    if not req.proposal_id and not req.resource_id:
        raise ValidationError("proposal_id or resource_id is required")
    if is_manual(req):
        return None
    async with project.db.read() as r:
        seen = await proposal_ref(r, req.proposal_id)
    if not seen.revision:
        raise ToolError(f"proposal {seen.id} has no patch revision to scan")
    return Scanned(seen, await run_scan(project, seen))


async def review(
    tx: Tx, req: ReviewArgs, actor: Actor, scanned: Scanned | None
) -> tuple[SecurityReview, list[Finding]]:
    """Record the automatic review `scanned` (`scan_first`, which checked `req` first), or the
    manual review `req` gives, inside `tx`; returns the review and its findings. An automatic
    review is refused when the proposal got a new revision since the scan."""
    manual = is_manual(req)
    if not manual and scanned is None:
        raise ValueError("an automatic security review needs its scan (scan_first) first")
    scan = scanned.scan if scanned is not None else None
    seen = scanned.seen if scanned is not None else None
    proposal = await proposal_ref(tx, req.proposal_id) if req.proposal_id else None
    if seen is not None and proposal is not None and proposal.revision != seen.revision:
        raise ToolError(f"proposal {proposal.id} got a new patch revision during the scan; run the review again")
    if manual:
        _check_manual_authority(req, actor, proposal)
    reviewer = _reviewer(req, actor, manual)
    existing = None
    if req.review_id:
        existing = await tx.one(SecurityReview, "SELECT * FROM security_reviews WHERE id = ?", (req.review_id,))
        if existing is not None and not actor.operator:
            raise PermissionDenied(f"security review {req.review_id} already exists; agents cannot replace reviews")

    findings = list(scan.findings) if scan is not None else []
    status = req.status or (scan.status if scan is not None else ReviewStatus.APPROVED)
    summary = req.summary_md or (scan.summary if scan is not None else RECORDED)
    now = clock.now()
    values = {
        "proposal_id": req.proposal_id or None,
        "resource_id": req.resource_id or None,
        "task_id": req.task_id or (proposal.task_id if proposal else "") or None,
        "reviewer_id": reviewer,
        "status": status,
        "summary_md": summary,
        "findings_json": _findings_json(findings),
        "revision": (proposal.revision if proposal else "") or None,
        "updated_at": now,
    }
    review_id = req.review_id or clock.new_id("SR")
    if existing is None:
        await tx.insert("security_reviews", {"id": review_id, **values, "created_at": now})
    else:
        await tx.update("security_reviews", {"id": review_id}, values)
    record = await get_review(tx, review_id)
    owner = (proposal.run_id if proposal else "") or await task_run(tx, record.task_id)
    await tx.append_event(
        await resolve(tx, actor.runs, owner=owner),
        EventType.SECURITY_REVIEWED,
        {
            "review_id": record.id,
            "proposal_id": record.proposal_id,
            "resource_id": record.resource_id,
            "status": record.status,
            "revision": record.revision,
            "automatic": scan is not None,
            "findings": len(findings),
        },
        actor_id=actor.name,
        task_id=record.task_id,
    )
    return record, findings


def _findings_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.to_dict() for f in findings], separators=(",", ":"), ensure_ascii=False)
