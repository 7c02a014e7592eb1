"""Granting a claim in its own transactions: the grant, or — when it conflicts — the refused
grant rolled back and its contentions recorded in a second transaction, so the
evidence of contention survives the refusal."""

from __future__ import annotations

from roundtable import clock
from roundtable.errors import ToolError
from roundtable.services.coordination.claims.acquire import (
    ClaimConflict,
    ClaimRequest,
    Granted,
    acquire_sync,
    check_request,
    record_contentions,
)
from roundtable.store.db import Database


async def grant(db: Database, request: ClaimRequest, *, label: str) -> Granted:
    """Grant `request` (one write transaction labelled `label`), or record its contentions and
    raise `ToolError` with the first conflict."""
    check_request(request)
    try:  # one write job: it shares a round trip and a COMMIT with the writes queued beside it
        return await db.write_run(acquire_sync, request, clock.now(), tool=label)
    except ClaimConflict as conflict:
        async with db.write(tool=label) as tx:
            await record_contentions(tx, conflict.contentions)
        raise ToolError(str(conflict)) from None
