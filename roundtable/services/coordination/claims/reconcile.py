"""Stale-claim reconciliation: suspend claims whose resource changed since it was claimed.

Hashing is file I/O, so this takes the database rather than a transaction: candidates are read in
one snapshot, hashed on a worker thread with no transaction open, then suspended in one write
transaction that re-checks each claim. The operator's `claim.reconcile` is declared here
(`ReconcileArgs`), and patch validation passes the same model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pydantic import Field

from roundtable import clock
from roundtable.domain import ClaimStatus
from roundtable.errors import ToolError
from roundtable.services.args import Args, Id
from roundtable.services.coordination.claims.model import resource_from_row
from roundtable.services.coordination.claims.transitions import transition
from roundtable.services.repository.hashing import resource_hash
from roundtable.store.db import Database
from roundtable.store.records import Claim, Resource

STALE_REASON = "base hash changed"


class ReconcileArgs(Args):
    # `claim.reconcile` (the operator's); no arguments: every agent's claims, actor `system`.
    run_id: Id = Field(default="", description="Run to record the events in.")
    agent_id: Id = Field(default="", description="Only this agent's claims.")
    actor_id: Id = Field(default="", description="Actor recorded in the events (default system).")


async def reconcile(
    db: Database,
    root: Path,
    args: ReconcileArgs | None = None,
    *,
    now: str | None = None,
    claim_ids: Collection[str] | None = None,
) -> list[Claim]:
    """Suspend every active claim whose resource changed since it was claimed: active, unexpired claims (of `args.agent_id` when given) with a base hash,
    except `read`/`review` claims, whose resource hash recomputed under `root` is non-empty and
    differs from the base hash. Each becomes `suspended` with a `claim.suspended` event (actor
    `args.actor_id`, default `system`, labelled with `args.run_id`). Returns the suspended claims.

    It takes the database rather than a transaction because hashing is file I/O: the candidates
    are read in one snapshot, hashed in a worker thread with no transaction open, and suspended
    in one write transaction that re-checks each claim is still active with the same base hash
    (a claim released or re-based meanwhile is left alone). Recomputed hashes are also stored as
    the resources' `current_hash`. A resource whose hash cannot be computed (e.g. a claimed file
    that became a directory, or a path the guard refuses) counts as unknown: its claim stays.
    `claim_ids` limits the pass to those claims (patch validation looks only at the claims that
    bear on the proposal, not at everything the author holds).
    """
    args = args or ReconcileArgs()
    agent_id, actor, run_id = args.agent_id, args.actor_id or "system", args.run_id
    at = now or clock.now()
    where = "c.status = 'active' AND c.expires_at > ? AND c.base_hash != '' AND c.claim_type NOT IN ('read', 'review')"
    params: list[Any] = [at]
    if agent_id:
        where += " AND c.agent_id = ?"
        params.append(agent_id)
    if claim_ids is not None:
        if not claim_ids:
            return []
        where += f" AND c.id IN ({', '.join('?' for _ in claim_ids)})"
        params.extend(claim_ids)
    async with db.read() as r:
        rows = await r.fetchall(
            f"SELECT c.id AS claim_id, c.base_hash AS claim_base_hash, r.* FROM claims c "
            f"JOIN resources r ON r.id = c.resource_id WHERE {where} ORDER BY c.created_at, c.id",
            params,
        )
    if not rows:
        return []
    candidates = [(str(row["claim_id"]), str(row["claim_base_hash"]), resource_from_row(row)) for row in rows]
    current = await asyncio.to_thread(_current_hashes, root, [res for _, _, res in candidates])
    stale = [
        (claim_id, base, current[res.id])
        for claim_id, base, res in candidates
        if current.get(res.id) and current[res.id] != base
    ]
    stored = {res.id: res.current_hash for _, _, res in candidates}
    refreshed = {rid: h for rid, h in current.items() if h and h != stored.get(rid)}
    if not refreshed and not stale:
        return []  # nothing to record: no write transaction
    out: list[Claim] = []
    async with db.write(tool="claims.reconcile") as tx:
        for rid, digest in refreshed.items():
            await tx.execute(
                "UPDATE resources SET current_hash = ? WHERE id = ? AND current_hash != ?", (digest, rid, digest)
            )
        for claim_id, base, digest in stale:
            still = await tx.scalar(
                "SELECT 1 FROM claims WHERE id = ? AND status = 'active' AND base_hash = ?", (claim_id, base)
            )
            if still is None:
                continue
            reason = f"{STALE_REASON}: claimed {base} current {digest}"
            updated, changed = await transition(
                tx, claim_id, ClaimStatus.SUSPENDED, at, actor_id=actor, reason=reason, run_id=run_id, operator=True
            )
            if changed:
                out.append(updated)
    return out


def _current_hashes(root: Path, resources: list[Resource]) -> dict[str, str]:
    """The current hash of each distinct resource (blocking: run in a worker thread); `""` when
    it is missing or cannot be hashed."""
    out: dict[str, str] = {}
    for res in resources:
        if res.id in out:
            continue
        try:
            out[res.id] = resource_hash(root, res.type, res.path, res.symbol, (res.start_line, res.end_line))
        except (ToolError, OSError):
            out[res.id] = ""
    return out
