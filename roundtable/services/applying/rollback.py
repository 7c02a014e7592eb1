"""Rolling back an applied patch transaction (operator only).

Under the write lock: the transaction must be `applied`, nothing else in flight, and every
touched path must still have the hash the apply left; the row becomes `rolling_back` (the
intent). Then `git apply -R` of the recorded patch (tied to this process like the apply), and
every path not back at its before-hash is restored from the pre-image copies. A rollback that
cannot put every path back leaves the transaction `applied` with `needs_attention` (its change
is, at least partly, still there) and raises; it blocks nothing. A crash after the intent
leaves `rolling_back`, which the next owner's start settles (`services.applying.recovery`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from roundtable import clock
from roundtable.domain import TransactionStatus
from roundtable.errors import ToolError
from roundtable.services.applying import failpoints, landing
from roundtable.services.applying.artefacts import (
    ROLLBACK_DIR,
    forget_git,
    git_recorder,
    hashes,
    recorded_files,
    undo,
)
from roundtable.services.applying.transactions import complete_rollback, in_flight, rollback_failed
from roundtable.services.repository import git
from roundtable.store.records import Proposal, Transaction

if TYPE_CHECKING:
    from roundtable.services.project import Project

log = logging.getLogger(__name__)


async def rollback_transaction(
    runtime: Project, transaction_id: str, *, reason: str, caller: str, reset: bool = False
) -> dict[str, Any]:
    """Revert an applied transaction if every touched file still has its after-hash. A
    committed landing also gets a revert commit on its branch (or, with `reset` and nothing built
    on it, the branch goes back to its parent); a `branch` or `pull-request` landing is rolled
    back on its branch alone (`branch_apply.rollback`)."""
    root = runtime.root
    now = clock.now()
    async with runtime.db.read() as r:
        first = await r.get(Transaction, transaction_id)
    mode = landing.landing_meta(first.metadata_json).get("mode", "working-tree")
    if mode in ("branch", "pull-request"):
        from roundtable.services.applying import branch_apply

        return await branch_apply.rollback(runtime, transaction_id, reason=reason, caller=caller)
    if reset and mode != "commit":
        raise ToolError(f"transaction {transaction_id} landed in {mode} mode; reset applies to committed landings only")
    async with runtime.db.write(tool="patch.rollback") as tx:
        row = await tx.get(Transaction, transaction_id)
        if row.status != TransactionStatus.APPLIED:
            raise ToolError(
                f"transaction {transaction_id} is {row.status}; only applied transactions can be rolled back"
            )
        busy = await in_flight(tx)
        if busy is not None:
            raise ToolError(f"another apply is in progress (transaction {busy.id})")
        files = recorded_files(row)
        paths = sorted(files)
        current = await asyncio.to_thread(hashes, root, paths)
        changed = [p for p in paths if current[p] != files[p].get("after", "")]
        if changed:
            raise ToolError(f"cannot roll back {transaction_id}: files changed since the apply: {', '.join(changed)}")
        meta = json.loads(row.metadata_json or "{}")
        meta["rollback_reason"] = reason
        meta["rollback_by"] = caller
        plan: dict[str, Any] = {}
        if mode == "commit":
            proposal = await tx.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (row.proposal_id,))
            artefact = root / (row.rollback_patch_path or f"{ROLLBACK_DIR.as_posix()}/{row.id}/")
            patch = await asyncio.to_thread((artefact / "patch.diff").read_bytes)
            plan = await landing.rollback_plan(
                root, row, proposal.title if proposal else row.proposal_id, patch, reset=reset, reason=reason
            )
            meta["rollback_landing"] = plan
        await tx.update(
            "transactions",
            {"id": transaction_id},
            {"status": TransactionStatus.ROLLING_BACK, "metadata_json": json.dumps(meta)},
        )
    failpoints.reached(failpoints.ROLLBACK_INTENT)
    # If the process dies here the `rolling_back` intent stays: the next owner start finishes it.
    artefact_dir = root / (row.rollback_patch_path or f"{ROLLBACK_DIR.as_posix()}/{row.id}/")

    try:
        patch_text = await asyncio.to_thread((artefact_dir / "patch.diff").read_bytes)
        forget_git(artefact_dir)  # the apply's record, not this rollback's
        try:
            await git.apply(root, patch_text, reverse=True, on_start=git_recorder(artefact_dir))
        except ToolError:
            pass  # fall back to the byte-exact pre-images below
        finally:
            forget_git(artefact_dir)
        left = await asyncio.to_thread(undo, root, row, paths)
    except (OSError, ToolError) as exc:
        log.warning("rollback of %s failed: %s", transaction_id, exc)
        left = paths
    if left:
        await rollback_failed(runtime, transaction_id, left, caller)
        raise ToolError(
            f"rollback of {transaction_id} could not restore {', '.join(left)}; "
            "the transaction is marked needs_attention"
        )
    if plan:
        stored = await _reread(runtime, transaction_id)
        if not await landing.finish_rollback_ref(root, stored, plan):
            await rollback_failed(runtime, transaction_id, [plan["ref"]], caller)
            raise ToolError(
                f"rollback of {transaction_id} restored the files but {plan['ref']} moved meanwhile; "
                "the transaction is marked needs_attention"
            )
    async with runtime.db.write(tool="patch.rollback") as tx:
        return await complete_rollback(tx, transaction_id, actor=caller, reason=reason, now=now)


async def _reread(runtime: Project, transaction_id: str) -> Transaction:
    async with runtime.db.read() as r:
        return await r.get(Transaction, transaction_id)
