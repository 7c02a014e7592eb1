"""The database side of patch transactions: the in-flight check and the final transitions.

A transaction row is the intent (`pending` while applying, `rolling_back` while reverting) and
then the outcome: `applied` (with after-hashes; the proposal `accepted`), `failed` (the apply
did not happen or was undone; `needs_attention` in its metadata when it could not be verified),
`rolled_back`. Each transition appends its event (`patch.applied`, `patch.apply_failed`,
`patch.rolled_back`, `patch.rollback_failed`) in the same transaction.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from roundtable import clock
from roundtable.domain import (
    OPEN_PROPOSAL_STATUSES,
    TERMINAL_TASK_STATUSES,
    ClaimStatus,
    EventType,
    GateState,
    ProposalStatus,
    ProposalTransactionState,
    RecoveryOutcome,
    TaskStatus,
    TransactionStatus,
)
from roundtable.services.applying.artefacts import state_hash
from roundtable.services.coordination.tasks import UpdateStatusArgs, update_task_status
from roundtable.services.governance.approvals import settle_after_apply
from roundtable.services.governance.proposals import release_review_claims
from roundtable.services.run_scope import RunHint
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Claim, Proposal, Task, Transaction

if TYPE_CHECKING:
    from roundtable.services.project import Project


async def in_flight(q: Reader | Tx) -> Transaction | None:
    return await q.one(
        Transaction,
        "SELECT * FROM transactions WHERE status IN ('pending', 'rolling_back') ORDER BY created_at, id LIMIT 1",
    )


async def complete_apply(
    tx: Tx, tx_id: str, after: dict[str, str], *, head: str, actor: str, recovered: bool = False
) -> dict[str, Any]:
    row = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
    assert row is not None
    now = clock.now()
    meta = json.loads(row.metadata_json or "{}")
    if recovered:
        meta["recovered"] = "completed"
    await tx.update(
        "transactions",
        {"id": tx_id},
        {
            "status": TransactionStatus.APPLIED,
            "after_git_hash": state_hash(head, after),
            "applied_at": now,
            "metadata_json": json.dumps(meta, separators=(",", ":")),
        },
    )
    await tx.update(
        "proposals",
        {"id": row.proposal_id},
        {"status": ProposalStatus.ACCEPTED, "transaction_state": ProposalTransactionState.APPLIED, "updated_at": now},
    )
    proposal = await tx.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (row.proposal_id,))
    assert proposal is not None
    await tx.append_event(
        row.run_id,
        EventType.PATCH_APPLIED,
        {
            "proposal_id": row.proposal_id,
            "transaction_id": tx_id,
            "revision": row.revision,
            "files": meta.get("patch_files", []),
            "recovered": recovered,
        },
        actor_id=actor,
        task_id=proposal.task_id,
    )
    meta["human_approval_id"], implicit = await settle_after_apply(
        tx,
        proposal_id=proposal.id,
        task_id=proposal.task_id,
        title=proposal.title,
        revision=row.revision,
        revision_number=int(meta.get("revision_number") or proposal.revision_number),
        applied_by=row.applied_by or actor,
        transaction_id=tx_id,
        run_id=row.run_id,
        new_id=str(meta.get("planned_approval_id") or ""),
    )
    await tx.update("transactions", {"id": tx_id}, {"metadata_json": json.dumps(meta, separators=(",", ":"))})
    await tx.update("proposals", {"id": proposal.id}, final_states(meta.get("policy"), implicit=implicit))
    await _settle_work(tx, proposal, tx_id, list(meta.get("claim_fences") or {}), actor=actor, now=now)
    updated = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
    assert updated is not None
    return {"proposal": proposal, "transaction": updated, "metadata": meta}


def final_states(policy: Any, *, implicit: bool) -> dict[str, str]:
    """A proposal's vote, policy and approval states once applied (every gate passed at that
    moment): the votes `approved` it, or a human approval stood in for them (`overridden`);
    the operator approved it before applying (`approved`) or by applying (`implicit`)."""
    approvable = isinstance(policy, dict) and bool(policy.get("approvable"))
    return {
        "vote_state": GateState.APPROVED if approvable else GateState.OVERRIDDEN,
        "policy_state": GateState.PASSED,
        "approval_state": GateState.IMPLICIT if implicit else GateState.APPROVED,
    }


async def _settle_work(tx: Tx, proposal: Proposal, tx_id: str, claim_ids: list[str], *, actor: str, now: str) -> None:
    """After an apply: the claims that covered the patch are released (`claim.released`, reason
    `applied in TX-…`), and the task is `completed` once none of its proposals is still open —
    the work is done and its resources are free for the next task."""
    from roundtable.services.coordination import claims

    for claim_id in claim_ids:
        claim = await tx.one(Claim, "SELECT * FROM claims WHERE id = ?", (claim_id,))
        if claim is None or claim.status != ClaimStatus.ACTIVE:
            continue
        await claims.transition(
            tx,
            claim_id,
            ClaimStatus.RELEASED,
            now,
            actor_id=actor,
            reason=f"applied in {tx_id}",
            run_id=proposal.run_id,
            operator=True,
        )
    await release_review_claims(tx, proposal, f"applied in {tx_id}", actor=actor)
    task = await tx.one(Task, "SELECT * FROM tasks WHERE id = ?", (proposal.task_id,))
    if task is None or task.status in TERMINAL_TASK_STATUSES:
        return
    statuses = ", ".join("?" for _ in OPEN_PROPOSAL_STATUSES)
    still_open = await tx.scalar(
        f"SELECT 1 FROM proposals WHERE task_id = ? AND id != ? AND status IN ({statuses}) LIMIT 1",
        (task.id, proposal.id, *sorted(OPEN_PROPOSAL_STATUSES)),
    )
    if not still_open:
        done = UpdateStatusArgs(task_id=task.id, status=TaskStatus.COMPLETED.value)
        await update_task_status(tx, done, actor=actor, runs=RunHint(named=proposal.run_id))


async def finish_failed(runtime: Project, tx_id: str, proposal_id: str, reason: str, run: str, left: list[str]) -> None:
    async with runtime.db.write(tool="patch.apply") as tx:
        row = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
        if row is None or row.status != TransactionStatus.PENDING:
            return
        meta = json.loads(row.metadata_json or "{}")
        meta["error"] = reason
        meta["undone"] = not left
        if left:
            meta["needs_attention"] = f"could not restore: {', '.join(left)}"
        await tx.update(
            "transactions", {"id": tx_id}, {"status": TransactionStatus.FAILED, "metadata_json": json.dumps(meta)}
        )
        await tx.update(
            "proposals",
            {"id": proposal_id},
            {"transaction_state": ProposalTransactionState.FAILED, "updated_at": clock.now()},
        )
        payload: dict[str, Any] = {"proposal_id": proposal_id, "transaction_id": tx_id, "error": reason}
        payload["undone"] = not left
        if left:
            payload["needs_attention"] = left
        await tx.append_event(run, EventType.PATCH_APPLY_FAILED, payload)


async def complete_rollback(
    tx: Tx, tx_id: str, *, actor: str, reason: str, now: str, recovered: bool = False, was_applied: bool = True
) -> dict[str, Any]:
    row = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
    assert row is not None
    meta = json.loads(row.metadata_json or "{}")
    meta["rolled_back_at"] = clock.now()
    if recovered:
        meta["recovered"] = "rolled_back"
    await tx.update(
        "transactions", {"id": tx_id}, {"status": TransactionStatus.ROLLED_BACK, "metadata_json": json.dumps(meta)}
    )
    changes = {"transaction_state": ProposalTransactionState.ROLLED_BACK, "updated_at": clock.now()}
    if was_applied:
        changes["status"] = ProposalStatus.ROLLED_BACK
    # An apply undone by recovery never took effect: the proposal stays open and can be retried.
    await tx.update("proposals", {"id": row.proposal_id}, changes)
    proposal = await tx.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (row.proposal_id,))
    if was_applied and proposal is not None:
        # The change is gone again: a task its apply completed is open work once more.
        task = await tx.one(Task, "SELECT * FROM tasks WHERE id = ?", (proposal.task_id,))
        if task is not None and task.status == TaskStatus.COMPLETED:
            reopened = UpdateStatusArgs(task_id=task.id, status=TaskStatus.IN_PROGRESS.value)
            await update_task_status(tx, reopened, actor=actor, runs=RunHint(named=row.run_id))
    await tx.append_event(
        row.run_id,
        EventType.PATCH_ROLLED_BACK,
        {"proposal_id": row.proposal_id, "transaction_id": tx_id, "reason": reason, "recovered": recovered},
        actor_id=actor,
        task_id=proposal.task_id if proposal else "",
    )
    updated = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
    return {"transaction": updated, "proposal": proposal}


async def rollback_failed(runtime: Project, tx_id: str, left: list[str], actor: str) -> None:
    """A rollback that could not put every path back: the transaction stays `applied` (its
    change is, at least partly, still there), flagged for the operator, and no longer blocks."""
    async with runtime.db.write(tool="patch.rollback") as tx:
        row = await tx.get(Transaction, tx_id)
        meta = json.loads(row.metadata_json or "{}")
        meta["needs_attention"] = f"rollback could not restore: {', '.join(left)}"
        await tx.update(
            "transactions", {"id": tx_id}, {"status": TransactionStatus.APPLIED, "metadata_json": json.dumps(meta)}
        )
        await tx.append_event(
            row.run_id,
            EventType.PATCH_ROLLBACK_FAILED,
            {"proposal_id": row.proposal_id, "transaction_id": tx_id, "needs_attention": left},
            actor_id=actor,
        )


async def leave_unrecovered(tx: Tx, row: Transaction, status: str, outcome: str, detail: str, now: str) -> None:
    """Recovery could neither complete nor undo `row`: record `status`, why (`outcome`, `detail`;
    needing attention when the operator must look) and the proposal's transaction state."""
    meta = json.loads(row.metadata_json or "{}")
    meta["recovery"] = {"outcome": outcome, "detail": detail, "at": now}
    if outcome == RecoveryOutcome.NEEDS_ATTENTION:
        meta["needs_attention"] = detail
    await tx.update("transactions", {"id": row.id}, {"status": status, "metadata_json": json.dumps(meta)})
    state = ProposalTransactionState.FAILED if status == TransactionStatus.FAILED else ProposalTransactionState.APPLIED
    await tx.update("proposals", {"id": row.proposal_id}, {"transaction_state": state, "updated_at": now})


async def record_recovered(tx: Tx, row: Transaction, outcome: str, detail: str, status: str) -> str:
    """The `transaction.recovered` event of `row`, and the line the owner logs for it."""
    await tx.append_event(
        row.run_id,
        EventType.TRANSACTION_RECOVERED,
        {
            "transaction_id": row.id,
            "proposal_id": row.proposal_id,
            "outcome": outcome,
            "detail": detail,
            "status": status,
        },
        actor_id="recovery",
    )
    return f"transaction {row.id} (proposal {row.proposal_id}): {outcome} — {detail}"


async def list_transactions(q: Reader | Tx, status: str = "") -> list[Transaction]:
    if status:
        return await q.all(
            Transaction, "SELECT * FROM transactions WHERE status = ? ORDER BY created_at, id", (status,)
        )
    return await q.all(Transaction, "SELECT * FROM transactions ORDER BY created_at, id")
