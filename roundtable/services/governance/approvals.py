"""Human approvals: agents ask, the operator decides.

One record per request. An agent may create a request or refresh its own pending one (status
`requested`, same proposal — never retarget it, nor anyone else's); deciding — any other status, `decided_by`, `decision_md`, `override_policy` — is
the operator's alone (CLI, console, legacy socket; the Chair is an operator caller but is not a
human, so it may not decide either). The decider recorded is the operator caller, and nobody can
record a decision in the name of the proposal's author.

An approval that concerns a proposal binds to the proposal's current revision when it is
requested and again when it is decided, so a decision applies to the patch the operator saw.
Updating an existing record without a `status` keeps its status, decision and revision: only an
explicit decision re-binds it (our departure from the reference's full replacement).

The operator's decision is part of the gate report (`services.governance.gates`): the latest decision on a
revision counts, so a denial blocks `patch.apply` until a later approval. What makes a request
moot closes it (`closed`, never a decision): an apply (`settle_after_apply`, which also records
the operator's implicit approval of the applied revision when none was given), a rejection, and
a new revision (`close_moot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from roundtable import clock
from roundtable.domain import APPROVAL_DECISIONS, ApprovalStatus, EventType
from roundtable.errors import PermissionDenied, ValidationError
from roundtable.services.args import Args, Flag, Id, NewId, Text, Title
from roundtable.services.governance.evidence import Actor, ProposalRef, proposal_ref
from roundtable.services.run_scope import resolve, task_run
from roundtable.store.db import Reader, Tx
from roundtable.store.records import HumanApproval

DECISION_STATUSES: tuple[str, ...] = APPROVAL_DECISIONS
STATUSES: tuple[str, ...] = (ApprovalStatus.REQUESTED, *DECISION_STATUSES)


if TYPE_CHECKING:
    ApprovalWord = str
else:
    ApprovalWord = Literal[STATUSES]


class RequestApprovalArgs(Args):
    # `human.request_approval`; `None` means the caller left the key out.
    subject: Title
    reason_md: Text
    approval_id: NewId = Field(default="", description="An existing request to refresh.")
    proposal_id: Id = ""
    task_id: Id = ""
    requested_by: Id | None = Field(default=None, description="Who asks (default: the caller).")
    status: ApprovalWord | None = Field(
        default=None,
        description="requested (default); operator only: approved, denied, rejected, changes_requested, deferred.",
    )
    decision_md: Text | None = Field(default=None, description="Operator: the decision note.")
    decided_by: Id | None = Field(default=None, description="Operator: who decided (default: the operator caller).")
    override_policy: Flag | None = Field(
        default=None, description="Operator, with status approved: also override a security veto."
    )

    @property
    def decides(self) -> bool:
        """Whether this call carries anything only the operator may set."""
        return (
            (self.status is not None and self.status != ApprovalStatus.REQUESTED)
            or bool(self.decided_by)
            or bool(self.decision_md)
            or self.override_policy is True
        )


async def get_approval(q: Reader | Tx, approval_id: str) -> HumanApproval:
    """The approval `approval_id`, or `get human approval <id>: not found`."""
    row = await q.get(HumanApproval, approval_id)
    return row


def _check_authority(req: RequestApprovalArgs, actor: Actor, existing: HumanApproval | None) -> None:
    if req.decides and not actor.operator:
        which = (existing.id if existing is not None else req.approval_id) or "ID"
        raise PermissionDenied(
            "only the operator can decide a human approval (status, decided_by, decision_md, "
            "override_policy); agents may only request one, and the operator approves it with "
            f"`roundtable approvals approve {which}` (or in the console)"
        )
    if req.decides and (actor.internal or actor.transport == "chair"):
        who = "the Chair" if actor.transport == "chair" else f"the {actor.name}"
        raise PermissionDenied(f"human approvals are decided by the human operator, not {who}")
    if actor.operator or existing is None:
        return
    if existing.status != ApprovalStatus.REQUESTED:
        raise PermissionDenied(
            f"approval {existing.id} was already decided ({existing.status}); request a new approval instead"
        )
    if not actor.agent_id or existing.requested_by != actor.agent_id:
        raise PermissionDenied(
            f"approval {existing.id} was requested by {existing.requested_by}; agents may only refresh their own requests"
        )
    if req.proposal_id and req.proposal_id != (existing.proposal_id or ""):
        raise PermissionDenied(
            f"approval {existing.id} concerns proposal {existing.proposal_id or '(none)'}; request a new approval "
            f"for {req.proposal_id} instead of retargeting this one"
        )


def _requester(req: RequestApprovalArgs, actor: Actor, existing: HumanApproval | None) -> str:
    if not actor.operator and actor.agent_id:
        if req.requested_by and req.requested_by != actor.agent_id:
            raise PermissionDenied("argument requested_by does not match the caller")
        return actor.agent_id
    if req.requested_by:
        return req.requested_by
    if existing is not None and existing.requested_by:
        return existing.requested_by
    return actor.name


async def record_approval(tx: Tx, req: RequestApprovalArgs, actor: Actor) -> tuple[HumanApproval, str]:
    """Create or update one approval; returns it and the event type appended."""
    existing: HumanApproval | None = None
    if req.approval_id:
        existing = await tx.one(HumanApproval, "SELECT * FROM human_approvals WHERE id = ?", (req.approval_id,))
    _check_authority(req, actor, existing)
    requested_by = _requester(req, actor, existing)

    proposal_id = req.proposal_id or (existing.proposal_id if existing else "")
    proposal: ProposalRef | None = await proposal_ref(tx, proposal_id) if proposal_id else None
    task_id = (
        req.task_id
        or (existing.task_id if existing and not req.proposal_id else "")
        or (proposal.task_id if proposal else "")
    )

    # An operator edit without a status keeps the decision (and the revision it was made on).
    keep_decision = existing is not None and actor.operator and req.status is None
    if keep_decision:
        assert existing is not None
        status = existing.status
        revision = existing.revision if existing.proposal_id == proposal_id else (proposal.revision if proposal else "")
        override = existing.override_policy if req.override_policy is None else req.override_policy
        decided_by = req.decided_by or existing.decided_by
        decision_md = existing.decision_md if req.decision_md is None else req.decision_md
    else:
        status = req.status or ApprovalStatus.REQUESTED
        revision = proposal.revision if proposal else ""
        override = bool(req.override_policy)
        decided_by = req.decided_by or (actor.name if status != ApprovalStatus.REQUESTED else "")
        decision_md = req.decision_md or ""
    if override and status != ApprovalStatus.APPROVED:
        raise ValidationError("override_policy can only be set together with status approved")
    if status == ApprovalStatus.REQUESTED and (req.decided_by or req.override_policy):
        raise ValidationError("decided_by and override_policy need a decision status (approved, denied, ...)")
    if proposal is not None and decided_by and decided_by == proposal.agent_id:
        raise PermissionDenied(
            f"an agent cannot approve its own work: {decided_by} is the author of proposal {proposal.id}"
        )

    # The operator deciding an agent's request keeps the agent's words: what it asked and why
    # stay the record's, and reason text the operator gave with the decision becomes its note.
    subject, reason_md = req.subject, req.reason_md
    if existing is not None and actor.operator and req.status is not None and existing.requested_by != actor.name:
        subject, reason_md = existing.subject, existing.reason_md
        if not decision_md and req.reason_md and req.reason_md != existing.reason_md:
            decision_md = req.reason_md
    now = clock.now()
    values = {
        "proposal_id": proposal_id or None,
        "task_id": task_id or None,
        "subject": subject,
        "reason_md": reason_md,
        "status": status,
        "requested_by": requested_by,
        "decision_md": decision_md or None,
        "decided_by": decided_by or None,
        "override_policy": int(override),
        "revision": revision or None,
        "updated_at": now,
    }
    approval_id = existing.id if existing else (req.approval_id or clock.new_id("H"))
    if existing is None:
        await tx.insert("human_approvals", {"id": approval_id, **values, "created_at": now})
    else:
        await tx.update("human_approvals", {"id": approval_id}, values)
    approval = await get_approval(tx, approval_id)

    if status == ApprovalStatus.REQUESTED:
        event_type = EventType.APPROVAL_REQUESTED
    elif req.status is not None:
        event_type = EventType.APPROVAL_DECIDED
    else:
        event_type = EventType.APPROVAL_UPDATED
    owner = (proposal.run_id if proposal else "") or await task_run(tx, approval.task_id)
    await tx.append_event(
        await resolve(tx, actor.runs, owner=owner),
        event_type,
        {
            "approval_id": approval.id,
            "proposal_id": approval.proposal_id,
            "status": approval.status,
            "revision": approval.revision,
            "requested_by": approval.requested_by,
            "decided_by": approval.decided_by,
            "override_policy": approval.override_policy,
        },
        actor_id=actor.name,
        task_id=approval.task_id,
    )
    return approval, event_type


def select_approval(
    approvals: Sequence[HumanApproval],
    *,
    revision: str,
    needs_human: bool,
    blockers: int,
    vetoes: int,
) -> HumanApproval | None:
    """The approval that satisfies the human gate of a proposal revision, if any.

    Only decided approvals of `revision` that name a proposal count. Among them the most recent
    decision wins (by `updated_at`, then creation order), so a later denial withdraws an earlier
    approval; it must be `approved`, and carry `override_policy` when there are vetoes.
    `revise`/`reject` votes (blockers beyond vetoes) cannot be overridden.
    """
    if not needs_human or blockers > vetoes or not revision:
        return None
    decided = [
        a
        for a in approvals
        if a.proposal_id and a.revision == revision and a.status != ApprovalStatus.REQUESTED and a.decided_by
    ]
    if not decided:
        return None
    latest = max(decided, key=lambda a: (a.updated_at, a.created_at, a.id))
    if latest.status != ApprovalStatus.APPROVED:
        return None
    if vetoes > 0 and not latest.override_policy:
        return None
    return latest


def latest_decision(approvals: Sequence[HumanApproval], revision: str) -> HumanApproval | None:
    """The operator's latest decision on `revision` (requests and closed records are not
    decisions), or None."""
    decided = [
        a
        for a in approvals
        if a.proposal_id and a.revision == revision and a.status in DECISION_STATUSES and a.decided_by
    ]
    return max(decided, key=lambda a: (a.updated_at, a.created_at, a.id)) if decided else None


async def close_moot(tx: Tx, proposal_id: str, reason: str, *, run_id: str, keep_revision: str = "") -> list[str]:
    """Close the proposal's open requests (all of them, or those not bound to `keep_revision`):
    an apply, a rejection or a new revision answered them. One `approval.closed` event each."""
    rows = await tx.all(
        HumanApproval,
        "SELECT * FROM human_approvals WHERE proposal_id = ? AND status = ? ORDER BY created_at, id",
        (proposal_id, ApprovalStatus.REQUESTED),
    )
    now = clock.now()
    closed: list[str] = []
    for row in rows:
        if keep_revision and row.revision == keep_revision:
            continue
        await tx.update(
            "human_approvals",
            {"id": row.id},
            {"status": ApprovalStatus.CLOSED, "decision_md": reason, "updated_at": now},
        )
        await tx.append_event(
            run_id,
            EventType.APPROVAL_CLOSED,
            {"approval_id": row.id, "proposal_id": proposal_id, "revision": row.revision, "reason": reason},
            actor_id="roundtable",
            task_id=row.task_id,
        )
        closed.append(row.id)
    return closed


async def settle_after_apply(
    tx: Tx,
    *,
    proposal_id: str,
    task_id: str,
    title: str,
    revision: str,
    revision_number: int,
    applied_by: str,
    transaction_id: str,
    run_id: str,
    new_id: str = "",
) -> tuple[str, bool]:
    """After an apply of `revision`: unless the operator approved it already, record their
    implicit approval (applying it is one) — deciding the open request of that revision if there
    is one — then close every other open request of the proposal. Returns the approval id and
    whether the approval is the implicit one. `new_id`: the id a new approval gets (a landing
    commit already names it in its trailers)."""
    rows = await tx.all(
        HumanApproval,
        "SELECT * FROM human_approvals WHERE proposal_id = ? AND revision = ? ORDER BY created_at, id",
        (proposal_id, revision),
    )
    latest = latest_decision(rows, revision)
    approval_id = latest.id if latest is not None and latest.status == ApprovalStatus.APPROVED else ""
    implicit = not approval_id
    if implicit:
        now = clock.now()
        note = f"approved by applying revision {revision_number} ({transaction_id})"
        pending = next((r for r in reversed(rows) if r.status == ApprovalStatus.REQUESTED), None)
        values = {"status": ApprovalStatus.APPROVED, "decided_by": applied_by, "decision_md": note, "updated_at": now}
        if pending is not None:
            approval_id = pending.id
            await tx.update("human_approvals", {"id": approval_id}, values)
        else:
            approval_id = new_id or clock.new_id("H")
            await tx.insert(
                "human_approvals",
                {
                    "id": approval_id,
                    "proposal_id": proposal_id,
                    "task_id": task_id or None,
                    "subject": f"Apply {proposal_id}: {title}"[:500],
                    "reason_md": "applied by the operator; the policy asked for no separate approval",
                    "requested_by": applied_by,
                    "override_policy": 0,
                    "revision": revision,
                    "created_at": now,
                    **values,
                },
            )
        await tx.append_event(
            run_id,
            EventType.APPROVAL_DECIDED,
            {
                "approval_id": approval_id,
                "proposal_id": proposal_id,
                "status": ApprovalStatus.APPROVED,
                "revision": revision,
                "decided_by": applied_by,
                "implicit": True,
            },
            actor_id=applied_by,
            task_id=task_id,
        )
    await close_moot(tx, proposal_id, f"proposal applied in {transaction_id}", run_id=run_id)
    return approval_id, implicit
