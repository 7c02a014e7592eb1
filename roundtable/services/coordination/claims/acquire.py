"""Claim acquisition: the conflict check and the grant in one write transaction.

Two concurrent claimants can never both win: `acquire` runs inside the caller's write
transaction, in one hop to the writer's thread. Each grant gets a fencing number (`claims.fence`,
strictly increasing across the project). An agent's own claims never conflict with its new ones;
re-claiming the same resource in the same mode extends the existing claim (`claim.extended`).
A refused claim writes nothing; its contention rows are recorded afterwards, in a transaction of
their own (`record_contentions`), with the *requesting* agent as `claimant_id`.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass
from typing import Any

from roundtable import clock
from roundtable.domain import ClaimStatus, ContentionStatus, EventType
from roundtable.errors import NotFound, ToolError
from roundtable.services.coordination.claims.model import (
    DEFAULT_TTL_SECONDS,
    FENCE_COUNTER,
    ResourceRef,
    check_resource_id,
    expiry_after,
    modes_conflict,
)
from roundtable.services.coordination.claims.queries import overlap_query, overlapping
from roundtable.services.run_scope import RunHint, resolve_sync
from roundtable.store.db import Tx
from roundtable.store.records import Claim, ClaimContention, Resource


@dataclass(frozen=True)
class ClaimRequest:
    """A validated claim request. `resource` carries the normalised identity, the language and
    (for symbols) the span; `base_hash` is already computed when the caller sent none."""

    agent_id: str
    task_id: str
    claim_type: str
    resource: Resource
    ttl_seconds: int = DEFAULT_TTL_SECONDS
    rationale: str = ""
    run_id: str = ""
    claim_id: str = ""
    base_hash: str = ""
    renewable: bool = True
    resume_policy: str = "hold"
    raw_path: str = ""
    # When set, `run_id` is resolved from this hint and the task's run inside the grant's own
    # round trip (`run_scope`), instead of by the caller beforehand.
    run_hint: RunHint | None = None


class ClaimConflict(ToolError):
    """A refused claim: the message describes the first conflict; `contentions` are the rows
    to record (one per conflicting claim) once the refused transaction has rolled back."""

    def __init__(self, text: str, contentions: list[dict[str, Any]]) -> None:
        super().__init__(text)
        self.contentions = contentions


@dataclass(frozen=True)
class Granted:
    """A granted (or extended) claim with its resource."""

    claim: Claim
    resource: Resource
    extended: bool


def _describe(resource: Resource) -> str:
    if resource.type == "symbol" and resource.symbol:
        return f"{resource.path}#{resource.symbol}"
    return resource.path or resource.id


def _conflict_text(claim: Claim, resource: Resource) -> str:
    """A refusal that names who holds the resource, not only the claim id."""
    return (
        f"claim conflict: {claim.claim_type} claim {claim.id} already holds overlapping {resource.type} "
        f"resource {_describe(resource)} (held by agent {claim.agent_id} until {claim.expires_at})"
    )


async def acquire(tx: Tx, req: ClaimRequest, now: str) -> Granted:
    """Grant `req` inside the write transaction `tx`, or raise `ClaimConflict` (nothing written).

    Order: a caller-supplied claim id must be new (or the caller's own live claim on the same
    resource and mode, which is then extended); the caller's own live claim on the same
    resource and mode is extended; otherwise every overlapping live claim of another agent is
    checked against the matrix, then the resource is upserted and the claim inserted with the
    next fence, with a `claim.created` event.

    Every read and write runs in ONE hop to the writer's thread (`Tx.run`): a claim is on the
    hot path, and each hop costs more than the SQLite work of its statement.
    """
    check_request(req)
    granted: Granted = await tx.run(_acquire_sync, tx, req, now)
    return granted


def check_request(req: ClaimRequest) -> None:
    """Refuse a request whose resource id, path or symbol is malformed (before any write)."""
    res = req.resource
    for value, what in (
        (res.id, "resource id"),
        (res.path, "path"),
        (res.symbol, "symbol"),
        (req.raw_path, "path"),
    ):
        check_resource_id(value or "", what=what)


def acquire_sync(conn: sqlite3.Connection, tx: Tx, req: ClaimRequest, now: str) -> Granted:
    """`acquire` as one write job (`Database.write_run`): on the writer's thread, inside `tx`."""
    return _acquire_sync(conn, tx, req, now)


# Through the resource's index (the unary `+` keeps the planner off the (status, expires_at)
# one, which would scan every live claim): a claim's cost must not grow with the claims held.
_SAME_CLAIM = (
    "SELECT * FROM claims WHERE +agent_id = ? AND resource_id = ? AND +claim_type = ? "
    "AND status = 'active' AND +expires_at > ? ORDER BY created_at DESC, id DESC LIMIT 1"
)
_UPSERT_RESOURCE = (
    "INSERT INTO resources (id, type, path, symbol, language, start_line, end_line, current_hash, "
    "metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
    "type = excluded.type, path = excluded.path, symbol = excluded.symbol, "
    "language = excluded.language, start_line = excluded.start_line, end_line = excluded.end_line, "
    "current_hash = excluded.current_hash"
)
_NEXT_COUNTER = (
    "INSERT INTO counters (name, value) VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1 RETURNING value"
)


_CLAIM_COLUMNS = tuple(field.name for field in dataclasses.fields(Claim))  # `to_dict`'s order
_INSERT_CLAIM = f"INSERT INTO claims ({', '.join(_CLAIM_COLUMNS)}) VALUES ({', '.join('?' for _ in _CLAIM_COLUMNS)})"


def _acquire_sync(conn: sqlite3.Connection, tx: Tx, req: ClaimRequest, now: str) -> Granted:
    """`acquire` on the writer's thread, inside `tx`."""
    res = req.resource
    refs = conn.execute(
        "SELECT (SELECT 1 FROM tasks WHERE id = ?), (SELECT run_id FROM tasks WHERE id = ?), "
        "(SELECT 1 FROM runs WHERE id = ?), (SELECT 1 FROM claims WHERE id = ?)",
        (req.task_id, req.task_id, req.run_id, req.claim_id),
    ).fetchone()
    task_found, task_run, run_found, id_taken = refs
    if task_found is None:
        raise NotFound("task", req.task_id)
    if req.run_hint is not None:
        req = dataclasses.replace(req, run_id=resolve_sync(conn, req.run_hint, owner=str(task_run or "")))
        if req.run_id:
            run_found = conn.execute("SELECT 1 FROM runs WHERE id = ?", (req.run_id,)).fetchone()
    if req.run_id and run_found is None:
        raise NotFound("run", req.run_id)
    same_row = conn.execute(_SAME_CLAIM, (req.agent_id, res.id, req.claim_type, now)).fetchone()
    same = Claim.from_row(same_row) if same_row is not None else None
    if req.claim_id and id_taken is not None:
        if same is None or same.id != req.claim_id:
            raise ToolError(f"claim {req.claim_id} already exists; choose another claim_id or omit it")
    if same is not None:
        return _extend_sync(conn, tx, same, req, now)

    ref = ResourceRef.of(res)
    sql, params = overlap_query(ref, now)
    conflicts = [
        (claim, resource)
        for claim, resource in overlapping(ref, conn.execute(sql, params).fetchall())
        if claim.agent_id != req.agent_id and modes_conflict(req.claim_type, claim.claim_type)
    ]
    if conflicts:
        first, first_res = conflicts[0]
        text = _conflict_text(first, first_res)
        rows = []
        for claim, resource in conflicts:
            reason = _conflict_text(claim, resource)
            rows.append(
                {
                    "id": clock.new_id("contention"),
                    "resource_id": res.id,
                    "claimant_id": req.agent_id,
                    "challenged_claim_id": claim.id,
                    "status": ContentionStatus.OPEN,
                    "reason": reason,
                    "requested_resource_id": res.id,
                    "requested_agent_id": req.agent_id,
                    "requested_task_id": req.task_id,
                    "requested_mode": req.claim_type,
                    "requested_path": req.raw_path,
                    "created_at": now,
                }
            )
        raise ClaimConflict(text, rows)

    resource = Resource(
        id=res.id,
        type=res.type,
        path=res.path,
        symbol=res.symbol,
        language=res.language,
        start_line=res.start_line,
        end_line=res.end_line,
        current_hash=req.base_hash,
        metadata_json=res.metadata_json or "{}",
    )
    conn.execute(_UPSERT_RESOURCE, _resource_values(resource)).close()
    cursor = conn.execute(_NEXT_COUNTER, (FENCE_COUNTER,))
    try:
        fence = int(cursor.fetchone()[0])
    finally:
        cursor.close()
    claim = Claim(
        id=req.claim_id or clock.new_id("C"),
        resource_id=res.id,
        agent_id=req.agent_id,
        task_id=req.task_id,
        claim_type=req.claim_type,
        base_hash=req.base_hash,
        status=ClaimStatus.ACTIVE,
        expires_at=expiry_after(now, req.ttl_seconds),
        heartbeat_at="",
        renewable=req.renewable,
        resume_policy=req.resume_policy,
        rationale_md=req.rationale,
        fence=fence,
        created_at=now,
        workspace_id="",
    )
    values = claim.to_dict()
    for key in ("heartbeat_at", "workspace_id"):
        values[key] = None
    values["renewable"] = 1 if claim.renewable else 0
    conn.execute(_INSERT_CLAIM, tuple(values.values())).close()
    tx.tables.update(("resources", "counters", "claims"))
    tx.emit(
        conn,
        req.run_id,
        EventType.CLAIM_CREATED,
        {
            "claim_id": claim.id,
            "resource_id": claim.resource_id,
            "claim_type": claim.claim_type,
            "expires_at": claim.expires_at,
            "resource_type": resource.type,
            "path": resource.path,
            "fence": fence,
        },
        actor_id=req.agent_id,
        task_id=req.task_id,
    )
    return Granted(claim, resource, extended=False)


def _resource_values(resource: Resource) -> tuple[Any, ...]:
    return (
        resource.id,
        resource.type,
        resource.path,
        resource.symbol,
        resource.language,
        resource.start_line,
        resource.end_line,
        resource.current_hash,
        resource.metadata_json or "{}",
    )


def _extend_sync(conn: sqlite3.Connection, tx: Tx, claim: Claim, req: ClaimRequest, now: str) -> Granted:
    if not claim.renewable:
        raise ToolError(f"claim {claim.id} is not renewable; release it and claim again")
    expires_at = expiry_after(now, req.ttl_seconds)
    conn.execute("UPDATE claims SET expires_at = ?, heartbeat_at = ? WHERE id = ?", (expires_at, now, claim.id)).close()
    tx.tables.add("claims")
    tx.emit(
        conn,
        req.run_id,
        EventType.CLAIM_EXTENDED,
        {"claim_id": claim.id, "expires_at": expires_at},
        actor_id=req.agent_id,
        task_id=claim.task_id,
    )
    extended = dataclasses.replace(claim, expires_at=expires_at, heartbeat_at=now)
    row = conn.execute("SELECT * FROM resources WHERE id = ?", (claim.resource_id,)).fetchone()
    if row is None:
        raise NotFound("resource", claim.resource_id)
    return Granted(extended, Resource.from_row(row), extended=True)


async def record_contentions(tx: Tx, rows: list[dict[str, Any]]) -> list[ClaimContention]:
    """Insert the contention rows of a refused claim (in a transaction of their own)."""
    for row in rows:
        await tx.insert("claim_contentions", row)
    if not rows:
        return []
    ids = [row["id"] for row in rows]
    return await tx.all(
        ClaimContention, f"SELECT * FROM claim_contentions WHERE id IN ({', '.join('?' for _ in ids)})", ids
    )
