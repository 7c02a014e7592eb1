"""Recovery of interrupted patch transactions, run by an owner right after it takes the lock.

An apply interrupted between its intent and its final commit (`services.applying.apply`, steps 2-4)
leaves a `pending` row. `recover_interrupted`, called only by an owner right after it takes
the owner lock, first kills a `git apply` left over from the dead owner
(the one named in `git.pid`, if it is still that process), then compares each path's hash with
the recorded before/after hashes: all after → complete it; all before → mark it failed
(nothing happened); a mix of the two → restore the pre-images, verify, mark it rolled back.
A path at neither state means one of two things. If the dead owner had started `git apply`
(`git.pid` exists), it is git's own half-done work (git removes every old file before it writes
the new ones, and it dies with the owner): every path is restored, what was there kept under
`displaced/` in the artefact, and the transaction is rolled back. Otherwise someone edited the
files (or a path became a directory): they are left alone and the transaction is marked
`failed` with `needs_attention` and the reason. Recovery never raises: a transaction it
cannot resolve, or cannot even record, is reported in its lines and the owner starts anyway;
once marked, it no longer blocks later applies. A rollback runs the same way with an intent
status `rolling_back`. A committed landing's branch follows the outcome
(`landing.settle_recovered`); a `branch` or `pull-request` landing, which touches no file, is
settled by its ref or its pull request (`branch_apply.recover`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING

from roundtable import clock
from roundtable.domain import EventType, RecoveryOutcome, TransactionStatus
from roundtable.services.applying import landing
from roundtable.services.applying.artefacts import git_token, recorded_files, safe_hashes, undo
from roundtable.services.applying.transactions import (
    complete_apply,
    complete_rollback,
    leave_unrecovered,
    record_recovered,
)
from roundtable.services.repository import git
from roundtable.store.records import Transaction

if TYPE_CHECKING:
    from roundtable.services.project import Project

log = logging.getLogger(__name__)


def _classify(row: Transaction, current: dict[str, str], *, git_ran: bool) -> tuple[str, str, str, list[str]]:
    """(outcome, status, detail, paths to restore) for an interrupted transaction. `git_ran`:
    the dead owner had started `git apply` (its pid is in the artefact), so a path at neither
    state is most likely git's own half-written work, not someone's edit."""
    files = recorded_files(row)
    paths = sorted(files)
    before = {p: files[p].get("before", "") for p in paths}
    after = {p: files[p].get("after", "") for p in paths}
    foreign = [p for p in paths if current[p] not in (before[p], after[p])]
    at_after = [p for p in paths if current[p] == after[p] and after[p] != before[p]]
    at_before = [p for p in paths if current[p] == before[p] and after[p] != before[p]]
    applying = row.status == TransactionStatus.PENDING
    if foreign and git_ran:
        todo = [p for p in paths if current[p] != before[p]]
        shown = ", ".join(f"{p} ({_state_word(current[p])})" for p in foreign)
        detail = (
            f"git apply was interrupted ({shown}): restored the pre-images of {', '.join(todo)}; "
            "copies of what was there are under displaced/ in the rollback artefact"
        )
        return "rolled_back", "rolled_back", detail, todo
    if not foreign and paths and all(before[p] == after[p] for p in paths):
        # Only modes change (an allowed mode change): contents cannot tell whether it happened.
        status = TransactionStatus.FAILED if applying else TransactionStatus.APPLIED
        detail = f"the patch changes no file contents, only modes: check the modes of {', '.join(paths)}"
        return "needs_attention", status, detail, []
    if foreign:
        shown = ", ".join(f"{p} ({_state_word(current[p])})" for p in foreign)
        status = TransactionStatus.FAILED if applying else TransactionStatus.APPLIED
        return (
            "needs_attention",
            status,
            f"paths at neither their before- nor after-state, left as they are: {shown}",
            [],
        )
    if applying and not at_before:
        return "completed", "applied", "every path has its after-image", []
    if applying and not at_after:
        return "not_applied", "failed", "no path had changed", []
    if not applying and not at_after:
        return "rolled_back", "rolled_back", "every path has its pre-image", []
    if not applying and not at_before:
        return "rollback_not_started", "applied", "the rollback had not started", []
    return "rolled_back", "rolled_back", f"restored pre-images of {', '.join(at_after)}", at_after


def _state_word(digest: str) -> str:
    if not digest:
        return "missing"
    if digest.startswith("unreadable:"):
        return digest
    if ":" in digest:
        return digest.split(":", 1)[0]
    return "changed"


async def _recover_one(runtime: Project, row: Transaction) -> str:
    root = runtime.root
    if landing.landing_meta(row.metadata_json).get("mode") in ("branch", "pull-request"):
        from roundtable.services.applying import branch_apply

        return await branch_apply.recover(runtime, row)
    token = git_token(root, row)
    killed = await asyncio.to_thread(git.kill_leftover, token)
    paths = sorted(recorded_files(row))
    current = await asyncio.to_thread(safe_hashes, root, paths)
    outcome, status, detail, restore = _classify(row, current, git_ran=bool(token))
    if restore:
        left = await asyncio.to_thread(lambda: undo(root, row, paths, keep=True))
        if left:
            outcome = RecoveryOutcome.NEEDS_ATTENTION
            status = TransactionStatus.FAILED if row.status == TransactionStatus.PENDING else TransactionStatus.APPLIED
            detail = f"could not restore: {', '.join(left)}"
    if killed:
        detail = f"{detail}; {killed}"
    applying = row.status == TransactionStatus.PENDING
    final = TransactionStatus.APPLIED if outcome == RecoveryOutcome.COMPLETED else status
    await landing.settle_recovered(root, row, final)  # a committed landing's branch follows
    head_now = await git.head(root)
    async with runtime.db.write(tool="recovery") as tx:
        now = clock.now()
        if outcome == RecoveryOutcome.COMPLETED:
            await complete_apply(tx, row.id, current, head=head_now, actor="recovery", recovered=True)
        elif status == TransactionStatus.ROLLED_BACK:
            await complete_rollback(
                tx,
                row.id,
                actor="recovery",
                reason="recovered after a crash",
                now=now,
                recovered=True,
                was_applied=not applying,
            )
        else:
            await leave_unrecovered(tx, row, status, outcome, detail, now)
        return await record_recovered(tx, row, outcome, detail, status)


async def recover_interrupted(runtime: Project) -> list[str]:
    """Finish or undo every in-flight transaction. Call only as the owner, under the owner lock.

    Never raises (the owner must start whatever it finds): a transaction that cannot be
    resolved is marked `failed`/`needs_attention` with the reason; one that cannot even be
    recorded (the database refuses the write) is reported in the returned lines and logged,
    and stays in flight until a later start succeeds."""
    lines: list[str] = []
    try:
        async with runtime.db.read() as r:
            rows = await r.all(
                Transaction,
                "SELECT * FROM transactions WHERE status IN ('pending', 'rolling_back') ORDER BY created_at, id",
            )
    except Exception as exc:
        log.error("recovery could not list transactions: %s", exc)
        return [f"recovery could not list transactions: {exc}"]
    for row in rows:
        try:
            lines.append(await _recover_one(runtime, row))
        except Exception as exc:
            log.error("recovery of transaction %s failed: %s", row.id, exc)
            lines.append(await _mark_unrecoverable(runtime, row, f"{type(exc).__name__}: {exc}"))
    return lines


async def _mark_unrecoverable(runtime: Project, row: Transaction, why: str) -> str:
    """Last resort: record that recovery could not resolve the transaction, so it stops
    blocking later applies; the files are left as they are."""
    detail = f"recovery failed ({why}); files left as they are"
    status = TransactionStatus.FAILED if row.status == TransactionStatus.PENDING else TransactionStatus.APPLIED
    try:
        async with runtime.db.write(tool="recovery") as tx:
            meta = json.loads(row.metadata_json or "{}")
            meta["needs_attention"] = detail
            meta["recovery"] = {"outcome": RecoveryOutcome.NEEDS_ATTENTION, "detail": detail, "at": clock.now()}
            await tx.update("transactions", {"id": row.id}, {"status": status, "metadata_json": json.dumps(meta)})
            await tx.append_event(
                row.run_id,
                EventType.TRANSACTION_RECOVERED,
                {
                    "transaction_id": row.id,
                    "proposal_id": row.proposal_id,
                    "outcome": RecoveryOutcome.NEEDS_ATTENTION,
                    "detail": detail,
                    "status": status,
                },
                actor_id="recovery",
            )
    except Exception as exc:
        log.error("recovery could not record transaction %s: %s", row.id, exc)
        return f"transaction {row.id} (proposal {row.proposal_id}): unresolved — {detail}; not recorded: {exc}"
    return f"transaction {row.id} (proposal {row.proposal_id}): needs_attention — {detail}"
