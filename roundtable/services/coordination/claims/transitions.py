"""Claim transitions: release, revoke, suspend, expire — each with its `claim.<status>` event.

Only the claim's owner or the operator may move a claim; moving a claim that is no longer active
changes nothing. The operator's `claim.revoke` is declared here (`RevokeArgs`) and received whole
by `revoke`.
"""

from __future__ import annotations

import dataclasses

from pydantic import Field

from roundtable import clock
from roundtable.domain import ClaimStatus, claim_event
from roundtable.errors import PermissionDenied
from roundtable.services.args import Args, Id, Text
from roundtable.services.coordination.claims.model import effective
from roundtable.store.db import Tx
from roundtable.store.records import Claim

_VERBS: dict[str, str] = {
    ClaimStatus.RELEASED: "release",
    ClaimStatus.REVOKED: "revoke",
    ClaimStatus.SUSPENDED: "suspend",
    ClaimStatus.EXPIRED: "expire",
}


async def transition(
    tx: Tx,
    claim_id: str,
    status: str,
    now: str,
    *,
    actor_id: str,
    reason: str = "",
    run_id: str = "",
    operator: bool = False,
) -> tuple[Claim, bool]:
    """Move an active claim to `released`, `revoked`, `suspended` or `expired`, with its
    `claim.<status>` event. Returns (claim, changed).

    Only the owner (`actor_id` equal to the claim's agent) or the operator (`operator=True`)
    may do it; a claim that is no longer active (including one past its expiry, unless the
    transition is itself `expired`) is returned unchanged.
    """
    stored = await tx.get(Claim, claim_id)
    if not operator and actor_id != stored.agent_id:
        who = actor_id or "an anonymous caller"
        verb = _VERBS.get(status, "change")
        raise PermissionDenied(
            f"claim {claim_id} belongs to {stored.agent_id}; {who} may not {verb} it "
            "(only the claim's agent or the operator may)"
        )
    current = effective(stored, now)
    if stored.status != ClaimStatus.ACTIVE or (current.status != ClaimStatus.ACTIVE and status != ClaimStatus.EXPIRED):
        return current, False
    await tx.update("claims", {"id": claim_id}, {"status": status})
    await tx.append_event(
        run_id,
        claim_event(status),
        {"claim_id": claim_id, "resource_id": stored.resource_id, "status": status, "reason": reason},
        actor_id=actor_id,
        task_id=stored.task_id,
    )
    return dataclasses.replace(stored, status=status), True


class RevokeArgs(Args):
    # `claim.revoke` (the operator's).
    claim_id: Id = Field(description="The claim.")
    reason: Text = Field(default="", description="Why (recorded in the event).")
    actor_id: Id = Field(default="", description="Actor recorded in the event (default: the caller).")
    run_id: Id = Field(default="", description="Run to record the events in.")


async def revoke(tx: Tx, args: RevokeArgs, actor: str) -> tuple[Claim, bool]:
    """The operator revokes a claim (`actor` records who unless `args.actor_id` names someone)."""
    return await transition(
        tx,
        args.claim_id,
        ClaimStatus.REVOKED,
        clock.now(),
        actor_id=args.actor_id or actor,
        reason=args.reason,
        run_id=args.run_id,
        operator=True,
    )


async def expire_due(tx: Tx, now: str, *, run_id: str = "", actor_id: str = "system") -> list[Claim]:
    """Sweep every active claim whose expiry is at or before `now` to `expired`, one
    `claim.expired` event each (reason `ttl elapsed`). Returns the claims swept."""
    due = await tx.all(
        Claim,
        "SELECT * FROM claims WHERE status = 'active' AND expires_at <= ? ORDER BY expires_at, id",
        (now,),
    )
    out = []
    for claim in due:
        updated, changed = await transition(
            tx,
            claim.id,
            ClaimStatus.EXPIRED,
            now,
            actor_id=actor_id,
            reason="ttl elapsed",
            run_id=run_id,
            operator=True,
        )
        if changed:
            out.append(updated)
    return out
