"""What a run's end does to the work it leaves open: its open proposals are withdrawn and the
claims of its tasks released.

A proposal left `pending` or `in_review` by an ended run kept its author's write claims alive,
so the next run's agents met those claims on the same files and their tasks were blocked. The
choice is to withdraw (not to carry over): each open proposal of the run is rejected with the
reason `withdrawn: run … ended (…)` (`decision.recorded`, `patch.rejected`), and every active
claim held for one of the run's tasks is released (`claim.released`, reason `run … ended`). The
lists go into the run's `run.ended` event and back to whoever ended it, which prints them. A
task whose proposal was withdrawn stays where it was; a later run can take it up again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roundtable import clock
from roundtable.domain import OPEN_PROPOSAL_STATUSES, ClaimStatus
from roundtable.services.coordination.claims import transition
from roundtable.services.governance.proposals import RejectArgs, reject
from roundtable.services.run_scope import RunHint
from roundtable.store.db import Tx
from roundtable.store.records import Claim, Proposal


@dataclass(frozen=True)
class WoundDown:
    """The proposals withdrawn and the claims released when a run ended."""

    withdrawn_proposals: list[str] = field(default_factory=list)
    released_claims: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"withdrawn_proposals": self.withdrawn_proposals, "released_claims": self.released_claims}


async def wind_down(tx: Tx, run_id: str, status: str, *, actor: str) -> WoundDown:
    """Withdraw `run_id`'s open proposals and release its tasks' active claims, inside the
    caller's transaction (the one that ends the run)."""
    marks = ", ".join("?" for _ in OPEN_PROPOSAL_STATUSES)
    open_proposals = await tx.all(
        Proposal,
        f"SELECT * FROM proposals WHERE run_id = ? AND status IN ({marks}) ORDER BY created_at, id",
        (run_id, *sorted(OPEN_PROPOSAL_STATUSES)),
    )
    decided_by = actor or "chair"
    withdrawn = []
    for proposal in open_proposals:
        withdrawal = RejectArgs(proposal_id=proposal.id, reason_md=f"withdrawn: run {run_id} ended ({status})")
        await reject(tx, withdrawal, actor=decided_by, runs=RunHint(named=run_id))
        withdrawn.append(proposal.id)
    now = clock.now()
    held = await tx.all(
        Claim,
        "SELECT * FROM claims WHERE status = 'active' AND task_id IN (SELECT id FROM tasks WHERE run_id = ?)"
        " ORDER BY created_at, id",
        (run_id,),
    )
    released = []
    for claim in held:
        _claim, changed = await transition(
            tx,
            claim.id,
            ClaimStatus.RELEASED,
            now,
            actor_id=decided_by,
            reason=f"run {run_id} ended",
            run_id=run_id,
            operator=True,
        )
        if changed:
            released.append(claim.id)
    return WoundDown(withdrawn, released)
